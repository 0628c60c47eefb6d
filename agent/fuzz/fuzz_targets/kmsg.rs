//! Arbitrary bytes as a /dev/kmsg record: never panics; a NIC named is one `is_nic` accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::kmsg::{Kind, classify, parse_record};

fuzz_target!(|data: &[u8]| {
    let text = match parse_record(data) {
        Ok(r) => {
            assert!(r.level <= 7);
            r.text
        }
        Err(_) => data,
    };
    if let Kind::Nic { name } = classify(text, &|w| w.starts_with(b"eth")) {
        assert!(name.starts_with(b"eth"));
    }
});

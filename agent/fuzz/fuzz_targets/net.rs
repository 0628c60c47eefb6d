//! Arbitrary bytes as /proc/net/dev, /proc/net/snmp and /proc/net/netstat: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nasprobe_agent::parse::net_dev::net_dev;
use nasprobe_agent::parse::snmp::{TcpCounters, parse_netstat, parse_snmp};

fuzz_target!(|data: &[u8]| {
    for l in net_dev(data).flatten() {
        assert!(!l.name.is_empty());
    }
    let mut t = TcpCounters::default();
    let _ = parse_snmp(data, &mut t);
    let _ = parse_netstat(data, &mut t);
});

//! 32-bit counters wrap on the 3.10 armv7 flavour.

use crate::common::*;
use nasprobe_testkit::builtins::{BuiltinOptions, builtin};
use nasprobe_testkit::*;

const TWO32: u64 = 1 << 32;

#[test]
fn forced_wrap_happens_at_wrap_at_s() {
    let scn = builtin(
        "wd-ssh",
        &BuiltinOptions {
            wrap_at_s: Some(3.0),
            ..Default::default()
        },
    )
    .unwrap();
    let mut s = HostSim::new(scn.host_named("src").unwrap(), 1, 0);
    s.advance_to(2.0);
    let (_, tx2) = net_dev_bytes(&render::net_dev(&s), "egiga0");
    let sect2 = diskstats(&render::diskstats(&s), "sda")[2];
    s.advance_to(4.0);
    let (_, tx4) = net_dev_bytes(&render::net_dev(&s), "egiga0");
    let sect4 = diskstats(&render::diskstats(&s), "sda")[2];
    assert!(
        tx4 < tx2,
        "tx bytes wrapped between t=2 and t=4: {tx2} -> {tx4}"
    );
    assert!(tx2 < TWO32 && tx4 < TWO32);
    // the modular difference is still 2 s x 22.5 MB/s
    assert_eq!((tx4 + TWO32 - tx2) % TWO32, 45_000_000);
    assert!(sect4 < sect2, "read sectors wrapped too");
    // sysfs statistics wrap the same way
    let sys = render::sys_net(&s);
    let tx_sys = sys
        .iter()
        .find_map(|e| match e {
            render::SysEntry::File(p, v) if p == "class/net/egiga0/statistics/tx_bytes" => {
                Some(v.trim().parse::<u64>().unwrap())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(tx_sys, tx4);
}

#[test]
fn natural_wrap_at_realistic_rates_without_forcing() {
    let mut scn = builtin("wd-ssh", &BuiltinOptions::default()).unwrap();
    for h in &mut scn.hosts {
        h.wrap_at_s = None;
    }
    let mut s = HostSim::new(scn.host_named("dst").unwrap(), 1, 0);
    let mut prev = net_dev_bytes(&render::net_dev(&s), "egiga0").0;
    let mut wraps = 0;
    // 22.5 MB/s wraps 2^32 every ~191 s.
    for t in (10..=400).step_by(10) {
        s.advance_to(t as f64);
        let rx = net_dev_bytes(&render::net_dev(&s), "egiga0").0;
        assert!(rx < TWO32);
        if rx < prev {
            wraps += 1;
        }
        prev = rx;
    }
    assert!(wraps >= 2, "{wraps} wraps in 400 s");
}

#[test]
fn sixty_four_bit_flavours_do_not_wrap() {
    let scn = builtin(
        "synology-replication",
        &BuiltinOptions {
            wrap_at_s: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    let mut s = HostSim::new(scn.host_named("dst").unwrap(), 1, 0);
    let a = net_dev_bytes(&render::net_dev(&s), "eth0").0;
    s.advance_to(5.0);
    let b = net_dev_bytes(&render::net_dev(&s), "eth0").0;
    assert!(a > TWO32 && b > a);
}

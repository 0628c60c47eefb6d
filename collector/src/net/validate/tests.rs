//! The plausibility checks against realistic and absurd samples, Hellos and events.

use super::*;
use crate::testing::{nas_hello, nas_sample};

#[test]
fn a_disk_busy_after_a_stall_passes_an_absurd_one_does_not() {
    let h = nas_hello(1, 0, 1000);
    let mut s = nas_sample(3);
    s.interval_us = 99_911;
    // Seen in CI: the kernel added 3 s in flight to io_ticks at once.
    s.disks[0].io_ms = 3020;
    assert_eq!(check_sample(&h, &s), Ok(()));
    s.disks[0].io_ms = 40_000;
    assert!(check_sample(&h, &s).unwrap_err().contains("busy 40000 ms"));
}

#[test]
fn a_real_sample_passes_and_absurd_ones_do_not() {
    let h = nas_hello(1, 0, 1000);
    assert_eq!(check_sample(&h, &nas_sample(3)), Ok(()));
    let mut s = nas_sample(3);
    s.nics[0].rx_bytes = 1_000_000_000_000_000_000;
    assert!(check_sample(&h, &s).unwrap_err().contains("eth0"));
    // The same with RESET: unknown by contract, kept.
    s.nics[0].flags |= flags::RESET;
    assert_eq!(check_sample(&h, &s), Ok(()));
    let mut s = nas_sample(3);
    s.disks[1].sectors_written = u64::MAX - 5; // a counter gone backwards, unflagged
    assert!(check_sample(&h, &s).unwrap_err().contains("sdb"));
    let mut s = nas_sample(3);
    s.interval_us = 0;
    assert!(check_sample(&h, &s).is_err());
    s.interval_us = 4_000_000_000;
    assert!(check_sample(&h, &s).is_err());
    let mut s = nas_sample(3);
    for _ in 0..4 {
        s.cpus.push(s.cpus[0]).unwrap();
    }
    assert!(check_sample(&h, &s).unwrap_err().contains("Hello said 4"));
    let mut s = nas_sample(3);
    s.cpus[2].user = u32::MAX - 3;
    assert!(check_sample(&h, &s).unwrap_err().contains("cpu2"));
}

#[test]
fn hello_bounds_and_the_time_window() {
    let now = 1_800_000_000_000;
    let mut h = nas_hello(1, now - 3_600_000, 1000);
    h.now_ms = now;
    assert_eq!(check_hello(&h, now), Ok(()));
    for (f, want) in [
        (
            &(|h: &mut Hello| h.cpu_count = 0) as &dyn Fn(&mut Hello),
            "cpu_count 0",
        ),
        (
            &|h: &mut Hello| h.clock_ticks_per_sec = 0,
            "clock_ticks_per_sec 0",
        ),
        (&|h: &mut Hello| h.page_size = 4097, "page_size 4097"),
        (&|h: &mut Hello| h.interval_ms = 0, "interval_ms 0"),
        (&|h: &mut Hello| h.newest_seq = u64::MAX, "seq range"),
        (&|h: &mut Hello| h.started_ms = 0, "started_ms 0"),
    ] {
        let mut b = h.clone();
        f(&mut b);
        let e = check_hello(&b, now).unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
    }
    // A clock far off the collector's is logged, not refused.
    assert_eq!(check_hello(&h, now + 86_400_000 * 400), Ok(()));
    let w = TimeWindow::new(&h);
    assert_eq!(w.check(now - 1000), Ok(()));
    assert_eq!(w.check(now - 3_600_000), Ok(()), "the agent's start");
    for bad in [
        0,
        u64::MAX,
        now + 365 * 86_400_000,
        now - 3_600_000 - 2 * 86_400_000,
    ] {
        assert!(w.check(bad).unwrap_err().contains("time_ms"), "{bad}");
    }
    // Time passes on the collector: the upper bound follows.
    let aged = w.aged(Duration::from_secs(3 * 86_400));
    assert_eq!(aged.check(now + 2 * 86_400_000), Ok(()));
    // A clock stepped back after the start: records back to the ring's span are fine.
    let mut stepped = h.clone();
    stepped.started_ms = now + 5 * 86_400_000;
    stepped.oldest_seq = 1;
    stepped.newest_seq = 7200;
    assert_eq!(check_hello(&stepped, now), Ok(()));
    assert_eq!(TimeWindow::new(&stepped).check(now - 7_000_000), Ok(()));
}

#[test]
fn a_hellos_seq_and_exit_watch_counts_are_bounded_by_the_agents_life() {
    let now = 1_800_000_000_000;
    // A minute old, claiming 2^63-21 records (issue 28: a Gone of 2^63-22 followed).
    let mut h = nas_hello(1, now - 60_000, 1000);
    h.now_ms = now;
    h.oldest_seq = (1 << 63) - 21;
    h.newest_seq = (1 << 63) - 21;
    assert!(check_hello(&h, now).unwrap_err().contains("newest_seq"));
    // A year at 100 ms with a billion records is real.
    let mut real = nas_hello(1, now - 365 * 86_400_000, 100);
    real.now_ms = now;
    real.oldest_seq = 999_000_000;
    real.newest_seq = 1_000_000_000;
    assert_eq!(check_hello(&real, now), Ok(()));
    // ExitWatch: u32::MAX connector overruns a minute after the start are not; a few are.
    let w = |dropped| {
        Event::ExitWatch(nasprobe_proto::ExitWatch {
            source: nasprobe_proto::ExitSeen::Kernel,
            dropped,
        })
    };
    let e = check_event_at(&h, now, &w(u32::MAX)).unwrap_err();
    assert!(e.contains("4294967295 connector overruns"), "{e}");
    assert_eq!(check_event_at(&h, now, &w(5)), Ok(()));
    assert_eq!(
        check_event_at(&real, now, &w(u32::MAX)),
        Ok(()),
        "a year of fork storms"
    );
}

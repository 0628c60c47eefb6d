//! Plausibility checks on samples before they are stored.
//!
//! A record that decodes is not necessarily true: a buggy or hostile agent (or a counter that
//! went backwards without the agent noticing, which turns into a delta near 2^64) can claim a
//! NIC moving 10^18 bytes a second. Such a sample would poison every rate, verdict and export
//! computed from the store, so it is rejected before it is written: the collector logs it with
//! the host's name, counts it, marks the host bad for views, and records its seq as a gap with
//! reason `rejected: ...` (so `nasprobe check` and `report` say exactly what was not kept). The
//! connection is kept: dropping it would make the agent resend the same record on reconnect.
//!
//! Entries the agent flagged `RESET` carry unknown deltas by contract and are not checked (the
//! analysis ignores them). The bounds are far above any real hardware:

use nasprobe_proto::{Hello, Sample, flags};

/// A NIC faster than 1 Tbit/s in either direction.
pub(crate) const MAX_NIC_BYTES_PER_S: u128 = 125_000_000_000;
/// A disk moving more than 100 GB/s (reads + writes).
pub(crate) const MAX_DISK_BYTES_PER_S: u128 = 100_000_000_000;
/// A sample interval over an hour (the agent samples every 100 ms .. a few s).
pub(crate) const MAX_INTERVAL_US: u32 = 3_600_000_000;

/// `Err(why)` when `s` cannot be a true sample of the agent that said `hello`.
pub fn check_sample(hello: &Hello, s: &Sample) -> Result<(), String> {
    let iv = u128::from(s.interval_us);
    if s.interval_us == 0 {
        return Err("interval_us is 0".into());
    }
    if s.interval_us > MAX_INTERVAL_US {
        return Err(format!("interval_us {} is over an hour", s.interval_us));
    }
    if hello.cpu_count > 0 && s.cpus.len() > usize::from(hello.cpu_count) {
        return Err(format!(
            "{} CPUs in the sample, the agent's Hello said {}",
            s.cpus.len(),
            hello.cpu_count
        ));
    }
    // CPU ticks: at most the interval's worth per CPU (x2 + 100 ticks of slack for clock edges).
    let hz = u128::from(hello.clock_ticks_per_sec.max(1));
    let per_cpu_max = iv * hz / 1_000_000 * 2 + 100;
    let ticks = |t: &nasprobe_proto::CpuTicks| -> u128 {
        [
            t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal,
        ]
        .iter()
        .map(|&v| u128::from(v))
        .sum()
    };
    for (i, c) in s.cpus.iter().enumerate() {
        if c.flags & flags::RESET == 0 && ticks(c) > per_cpu_max {
            return Err(format!(
                "cpu{i}: {} ticks in {} µs",
                ticks(c),
                s.interval_us
            ));
        }
    }
    let ncpu = (s.cpus.len() as u128)
        .max(u128::from(hello.cpu_count))
        .max(1);
    if s.cpu_total.flags & flags::RESET == 0 && ticks(&s.cpu_total) > per_cpu_max * ncpu {
        return Err(format!(
            "all CPUs: {} ticks in {} µs",
            ticks(&s.cpu_total),
            s.interval_us
        ));
    }
    for n in &s.nics {
        if n.flags & flags::RESET != 0 {
            continue;
        }
        let top = u128::from(n.rx_bytes.max(n.tx_bytes));
        if top * 1_000_000 > MAX_NIC_BYTES_PER_S * iv {
            let name = hello
                .nics
                .get(usize::from(n.nic))
                .map_or_else(|| format!("nic #{}", n.nic), |i| i.name.to_string());
            return Err(format!(
                "{name}: {} bytes/s (over 1 Tbit/s)",
                top * 1_000_000 / iv
            ));
        }
    }
    for d in &s.disks {
        if d.flags & flags::RESET != 0 {
            continue;
        }
        let bytes = (u128::from(d.sectors_read) + u128::from(d.sectors_written)) * 512;
        if bytes * 1_000_000 > MAX_DISK_BYTES_PER_S * iv {
            let name = hello
                .disks
                .get(usize::from(d.disk))
                .map_or_else(|| format!("disk #{}", d.disk), |i| i.name.to_string());
            return Err(format!(
                "{name}: {} bytes/s (over 100 GB/s)",
                bytes * 1_000_000 / iv
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{nas_hello, nas_sample};

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
}

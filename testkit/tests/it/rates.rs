//! Counters are the integral of the declared rates: what an agent reads over any interval
//! gives back the declared figures.

use crate::common::*;
use nasprobe_testkit::builtins::{BuiltinOptions, builtin};
use nasprobe_testkit::*;

#[test]
fn counters_at_10s_minus_0s_are_ten_times_the_rates() {
    let dir = tempdir("rates");
    let scn = builtin("synology-replication", &BuiltinOptions::default()).unwrap();
    let mut r = Runner::new(&scn, &dir, 1_700_000_000).unwrap();
    let proc = r.paths()[1].proc_root.clone();
    let snap = |p: &std::path::Path| {
        (
            read(&p.join("net/dev")),
            read(&p.join("diskstats")),
            read(&p.join("stat")),
            read(&p.join("8123/task/8131/stat")),
        )
    };
    let a = snap(&proc);
    r.step_to(10.0).unwrap();
    let b = snap(&proc);

    // NIC: 97 MB/s rx, 1.7 MB/s tx on dst eth0.
    let (rx0, tx0) = net_dev_bytes(&a.0, "eth0");
    let (rx1, tx1) = net_dev_bytes(&b.0, "eth0");
    assert!(
        ((rx1 - rx0) as f64 - 970e6).abs() <= 1.0,
        "rx {}",
        rx1 - rx0
    );
    assert!(((tx1 - tx0) as f64 - 17e6).abs() <= 1.0, "tx {}", tx1 - tx0);

    // Disks: sdd at 22% util, 32.33 MB/s written, 6 ms await.
    let d0 = diskstats(&a.1, "sdd");
    let d1 = diskstats(&b.1, "sdd");
    let io_ticks = d1[9] - d0[9];
    assert!(
        (io_ticks as f64 - 2200.0).abs() <= 1.0,
        "util 22% over 10 s = 2200 ms, got {io_ticks}"
    );
    let w_sect = (d1[6] - d0[6]) as f64;
    assert!(
        (w_sect * 512.0 - 97e6 / 3.0 * 10.0).abs() < 1024.0,
        "{w_sect}"
    );
    let w_ios = (d1[4] - d0[4]) as f64;
    let await_ms = (d1[7] - d0[7]) as f64 / w_ios;
    assert!((await_ms - 6.0).abs() < 0.1, "await {await_ms}");
    // md2 (raid5 over 4): 97 MB/s written, io_ticks stays 0
    let m0 = diskstats(&a.1, "md2");
    let m1 = diskstats(&b.1, "md2");
    assert!(((m1[6] - m0[6]) as f64 * 512.0 - 970e6).abs() < 1024.0);
    assert_eq!(m1[9], 0);

    // CPU: every core advanced by 1000 ticks (100/s x 10 s).
    let c0 = cpu_lines(&a.2);
    let c1 = cpu_lines(&b.2);
    for i in 1..c0.len() {
        let total: u64 = (0..8).map(|j| c1[i].1[j] - c0[i].1[j]).sum();
        assert!(
            (999..=1001).contains(&total),
            "{} advanced {total}",
            c0[i].0
        );
    }
    // Busy ticks over all cores = declared loads: 96+1.5+1 (synoreplicad) + 18 (btrfs)
    // + 3 + 1 + 1 (kthreads) + 4 cores x (2 user + 2 system) + 6 softirq = 143.5 per second,
    // less the background that does not fit on the core the hot thread sits on (at most 10/s).
    let busy: u64 = (1..c0.len())
        .map(|i| {
            [0, 1, 2, 5, 6, 7]
                .iter()
                .map(|&j| c1[i].1[j] - c0[i].1[j])
                .sum::<u64>()
        })
        .sum();
    assert!((1330..=1440).contains(&busy), "busy {busy}");
    // Threads alone: exactly their declared loads (121.5/s).
    let threads: f64 = r.hosts[1].0.procs.values().map(|p| p.cpu_pct()).sum();
    assert!((threads - 121.5).abs() < 1e-9);

    // The hot thread: 96% of a core = 96 ticks/s.
    let (_, f0) = stat_fields(&a.3);
    let (_, f1) = stat_fields(&b.3);
    let ticks = |f: &Vec<String>| f[13].parse::<u64>().unwrap() + f[14].parse::<u64>().unwrap();
    let t = ticks(&f1) - ticks(&f0);
    assert!((959..=961).contains(&t), "hot thread {t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tcp_and_swap_counters_follow_rates() {
    let scn = builtin("swap-storm", &BuiltinOptions::default()).unwrap();
    let h = scn.host_named("dst").unwrap();
    let mut s = HostSim::new(h, 1, 0);
    let vm0 = render::vmstat(&s);
    s.advance_to(10.0);
    let vm1 = render::vmstat(&s);
    let get = |t: &str, k: &str| -> u64 {
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(get(&vm1, "pswpin") - get(&vm0, "pswpin"), 24000);
    assert_eq!(get(&vm1, "pswpout") - get(&vm0, "pswpout"), 31000);
    assert_eq!(get(&vm1, "pgmajfault") - get(&vm0, "pgmajfault"), 19000);
    assert_eq!(get(&vm1, "allocstall") - get(&vm0, "allocstall"), 1400);

    let scn = builtin("process-restarts", &BuiltinOptions::default()).unwrap();
    let mut s = HostSim::new(&scn.hosts[0], 1, 0);
    let r0 = snmp(&render::net_snmp(&s), "Tcp", "RetransSegs");
    s.advance_to(5.0);
    let r1 = snmp(&render::net_snmp(&s), "Tcp", "RetransSegs");
    // 0.2/s base + 40/s during the last second before the death at t=5
    assert_eq!(r1 - r0, 41);
}

#[test]
fn threads_migrate_so_per_core_figures_hide_the_pegged_thread() {
    let scn = builtin("wd-ssh", &BuiltinOptions::default()).unwrap();
    let mut s = HostSim::new(scn.host_named("dst").unwrap(), 1, 0);
    let mut cores_seen = std::collections::HashSet::new();
    for i in 1..=30 {
        s.advance_to(i as f64);
        let sshd = &s.procs[&4410];
        cores_seen.insert(sshd.threads[0].core);
    }
    assert_eq!(cores_seen.len(), 2, "sshd ran on both cores over 30 s");

    // A thread's own ticks stay at its declared load whatever core it is on.
    let sshd = &s.procs[&4410];
    let base = HostSim::new(scn.host_named("dst").unwrap(), 1, 0);
    let b = &base.procs[&4410];
    let ticks = sshd.utime() + sshd.stime() - b.utime() - b.stime();
    assert!((ticks - 98.0 * 30.0).abs() < 1.0, "{ticks}");
}

#[test]
fn tick_granularity_does_not_change_the_totals() {
    let scn = builtin(
        "churn",
        &BuiltinOptions {
            churn_per_s: 50.0,
            ..Default::default()
        },
    )
    .unwrap();
    let mut fine = HostSim::new(&scn.hosts[0], 3, 0);
    let mut coarse = HostSim::new(&scn.hosts[0], 3, 0);
    for i in 1..=400 {
        fine.advance_to(i as f64 * 0.01);
    }
    coarse.advance_to(4.0);
    assert_eq!(fine.births, coarse.births);
    assert_eq!(
        fine.procs.keys().collect::<Vec<_>>(),
        coarse.procs.keys().collect::<Vec<_>>()
    );
    let ft = fine.total_ticks();
    let ct = coarse.total_ticks();
    assert!((ft.user - ct.user).abs() < 1e-6 * ft.user);
}

/// The `ctxt` line of /proc/stat at `proc`.
fn ctxt(proc: &std::path::Path) -> u64 {
    read(&proc.join("stat"))
        .lines()
        .find_map(|l| l.strip_prefix("ctxt "))
        .expect("ctxt line")
        .parse()
        .unwrap()
}

#[test]
fn ctxt_stays_continuous_when_processes_start_and_die() {
    // process-restarts: the load changes every few seconds. The counter once jumped by
    // (rate change) x (uptime / 5) at each change, 355 M/s.
    let dir = tempdir("ctxt");
    let scn = builtin("process-restarts", &BuiltinOptions::default()).unwrap();
    let mut r = Runner::new(&scn, &dir, 1_700_000_000).unwrap();
    let procs: Vec<_> = r.paths().iter().map(|p| p.proc_root.clone()).collect();
    let mut last: Vec<u64> = procs.iter().map(|p| ctxt(p)).collect();
    let mut rates = std::collections::BTreeSet::new();
    for s in 1..=60 {
        r.step_to(f64::from(s)).unwrap();
        for (k, p) in procs.iter().enumerate() {
            let now = ctxt(p);
            assert!(now >= last[k], "ctxt went back at {s} s");
            let d = now - last[k];
            // 400/core + 30 per % of load: a 64-core box at full load is under 250,000/s.
            assert!(d < 250_000, "host {k}: {d} switches in second {s}");
            rates.insert(d / 100);
            last[k] = now;
        }
    }
    assert!(rates.len() > 1, "the load changed: {rates:?}");
}

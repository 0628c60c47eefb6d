//! The stored rollup tiers (issue 17): the 1-minute steps written as chunks close are exactly
//! the merge of the raw samples, the 1-hour steps carry the same sums; a schema-4 store gets
//! its tiers when it migrates; retention per tier keeps long reports whole (a coarser tier
//! fills where a finer one is gone); a damaged rollup row is a named gap and `check` names it.

use std::path::Path;

use nasprobe::store::{Item, RetentionCutoffs, Store};
use nasprobe::testing::{nas_hello, nas_sample};
use nasprobe_analysis::HostData;
use nasprobe_proto::Sample;

const MINUTE: u64 = 60_000;
const HOUR: u64 = 3_600_000;

/// Sample `seq` with a few fields made unique, so that a merge that drops or doubles one shows.
fn sample(seq: u64) -> Sample {
    let mut s = nas_sample(seq);
    s.context_switches = 1_000 + seq;
    s.cpu_total.user += (seq % 7) as u32;
    s
}

/// Writes `n` samples at 1 s from `start_ms` (hour aligned plus `offset_ms`) in batches of
/// 500, at schema `schema`; returns the store.
fn write(path: &Path, schema: i64, start_ms: u64, n: u64) -> Store {
    let mut s = Store::open_at_schema(path, schema).unwrap();
    let reg = s
        .register("nas", "a:1", &nas_hello(3, start_ms - 1000, 1000))
        .unwrap();
    let items: Vec<Item> = (1..=n)
        .map(|seq| Item::Sample {
            instance: reg.instance,
            seq,
            time_ms: start_ms + seq * 1000,
            body: postcard::to_allocvec(&sample(seq)).unwrap(),
        })
        .collect();
    for b in items.chunks(500) {
        s.write_batch(b).unwrap();
    }
    s
}

fn start() -> u64 {
    // Hour aligned, 10 h ago, plus 7 minutes: the first hour and window are partial.
    (nasprobe_proto::time::now_ms() / HOUR - 10) * HOUR + 7 * MINUTE
}

fn steps(s: &Store, step: u64) -> HostData {
    let mut w = s.load_window_at(None, None, Some(step)).unwrap();
    assert_eq!(w.len(), 1);
    w.remove(0)
}

/// Steps stored in tier `step`.
fn rollup_rows(s: &Store, step: u64) -> i64 {
    s.conn()
        .query_row(
            "SELECT COALESCE(SUM(n), 0) FROM rollups WHERE step_ms = ?1",
            [step as i64],
            |r| r.get(0),
        )
        .unwrap()
}

/// (last seq, time, body) of each step.
fn bodies(h: &HostData) -> Vec<(u64, u64, Vec<u8>)> {
    h.samples
        .iter()
        .map(|x| (x.seq, x.time_ms, x.body.clone()))
        .collect()
}

/// The sums an hour step must carry whichever way it was merged.
fn sums(h: &HostData) -> Vec<(u64, u64, u64, u64, u64, u64)> {
    h.samples
        .iter()
        .map(|x| {
            let s = x.decode().expect("a step decodes");
            (
                x.seq,
                u64::from(s.interval_us),
                u64::from(s.cpu_total.user),
                s.context_switches,
                s.nics[0].rx_bytes,
                s.disks[0].sectors_written,
            )
        })
        .collect()
}

#[test]
fn the_tiers_hold_the_merge_of_the_raw_samples() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = start();
    let n = 4 * 3600 + 600; // 4 h 10 min: closed hours, the open hour and its open window.
    let tiered = write(&dir.path().join("t.db"), 5, t0, n);
    // Schema 4 has no tiers: its reads merge the raw samples while reading.
    let merged = write(&dir.path().join("m.db"), 4, t0, n);
    assert!(rollup_rows(&tiered, MINUTE) >= 240, "minute steps");
    assert!(rollup_rows(&tiered, HOUR) >= 4, "hour steps");

    let (a, b) = (steps(&tiered, MINUTE), steps(&merged, MINUTE));
    assert_eq!(a.samples.len(), b.samples.len());
    assert_eq!(
        a.samples.len() as u64,
        n.div_ceil(60) + 1,
        "one step a minute"
    );
    assert_eq!(
        bodies(&a),
        bodies(&b),
        "minute steps differ from the raw merge"
    );

    let (a, b) = (steps(&tiered, HOUR), steps(&merged, HOUR));
    assert_eq!(
        a.samples.len(),
        5,
        "4 h 10 min from 7 minutes past: 5 hours"
    );
    assert_eq!(sums(&a), sums(&b), "hour steps differ from the raw merge");
    // Every sample is in exactly one step: the sums over the window are the raw sums.
    let want: u64 = (1..=n).map(|q| sample(q).context_switches).sum();
    assert_eq!(sums(&a).iter().map(|x| x.3).sum::<u64>(), want);

    // A window inside: the steps whose time falls in it.
    let (from, to) = (t0 + 2 * HOUR + 30 * MINUTE, t0 + 3 * HOUR);
    let w = tiered
        .load_window_at(Some(from), Some(to), Some(MINUTE))
        .unwrap();
    assert!(
        w[0].samples
            .iter()
            .all(|x| x.time_ms >= from && x.time_ms <= to)
    );
    assert_eq!(w[0].samples.len(), 30);
}

#[test]
fn a_schema_4_store_gets_its_tiers_when_it_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = start();
    let n = 3 * 3600;
    let want = {
        let s = write(&dir.path().join("new.db"), 5, t0, n);
        (bodies(&steps(&s, MINUTE)), sums(&steps(&s, HOUR)))
    };
    let p = dir.path().join("old.db");
    drop(write(&p, 4, t0, n));
    let s = Store::open(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), nasprobe::store::SCHEMA_VERSION);
    assert!(rollup_rows(&s, MINUTE) >= 170);
    assert!(rollup_rows(&s, HOUR) >= 3);
    assert_eq!(bodies(&steps(&s, MINUTE)), want.0);
    assert_eq!(sums(&steps(&s, HOUR)), want.1);
    assert!(s.check().unwrap()[0].bad_rows.is_empty());
}

#[test]
fn retention_per_tier_keeps_long_reports_whole() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = start();
    let n = 6 * 3600;
    let mut s = write(&dir.path().join("r.db"), 5, t0, n);
    let all_minutes = steps(&s, MINUTE).samples.len();
    let total: u64 = (1..=n).map(|q| sample(q).context_switches).sum();
    // Raw samples older than 3 h go; the minutes of those hours stay.
    let raw_cut = t0 + 3 * HOUR;
    s.apply_retention(RetentionCutoffs {
        raw_ms: raw_cut,
        minute_ms: t0,
        hour_ms: t0,
    })
    .unwrap();
    let raw = s.load_window(None, None).unwrap();
    assert!(raw[0].samples.iter().all(|x| x.time_ms >= raw_cut));
    let m = steps(&s, MINUTE);
    assert_eq!(
        m.samples.len(),
        all_minutes,
        "minutes read where raw is gone"
    );
    assert_eq!(sums(&m).iter().map(|x| x.3).sum::<u64>(), total);
    // Minutes older than 2 h go as well: the hours fill that part of a minute report.
    let minute_cut = t0 + 2 * HOUR;
    s.apply_retention(RetentionCutoffs {
        raw_ms: raw_cut,
        minute_ms: minute_cut,
        hour_ms: t0,
    })
    .unwrap();
    let m = steps(&s, MINUTE);
    assert!(m.samples.len() < all_minutes);
    assert_eq!(
        sums(&m).iter().map(|x| x.3).sum::<u64>(),
        total,
        "the hours filled where the minutes are gone: nothing lost, nothing counted twice"
    );
    assert!(
        m.samples.first().unwrap().interval_us > 3_000_000_000,
        "the oldest step is an hour"
    );
    assert!(s.check().unwrap()[0].bad_rows.is_empty());
}

#[test]
fn a_damaged_rollup_row_is_a_named_gap_and_check_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(&dir.path().join("d.db"), 5, start(), 2 * 3600);
    let (id, first): (i64, i64) = s
        .conn()
        .query_row(
            "SELECT id, first_seq FROM rollups WHERE step_ms = ?1 ORDER BY first_seq LIMIT 1 OFFSET 2",
            [MINUTE as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut data: Vec<u8> = s
        .conn()
        .query_row("SELECT data FROM rollups WHERE id = ?1", [id], |r| r.get(0))
        .unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x40;
    s.conn()
        .execute(
            "UPDATE rollups SET data = ?2 WHERE id = ?1",
            rusqlite::params![id, data],
        )
        .unwrap();
    let h = steps(&s, MINUTE);
    assert!(
        h.gaps
            .iter()
            .any(|g| g.reason.contains(&format!("rollup seq {first}"))),
        "{:?}",
        h.gaps
    );
    let c = s.check().unwrap();
    assert!(
        c[0].bad_rows
            .iter()
            .any(|(seq, why)| *seq == Some(first as u64) && why.contains("1m rollup")),
        "{c:?}"
    );
}

#[test]
fn a_long_report_takes_its_peaks_from_the_raw_samples_of_the_busiest_steps() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = start() - 3 * HOUR;
    let n: u64 = 7 * 3600; // over 6 h: the report reads the minute tier
    let burst = 4 * 3600 + 20..4 * 3600 + 30; // 10 s at 60 MB/s inside one minute
    let mut s = Store::open(&dir.path().join("p.db")).unwrap();
    let reg = s
        .register("nas", "a:1", &nas_hello(4, t0 - 1000, 1000))
        .unwrap();
    let items: Vec<Item> = (1..=n)
        .map(|seq| {
            let mut smp = sample(seq);
            smp.nics[0].rx_bytes = if burst.contains(&seq) {
                60_000_000
            } else {
                2_000_000
            };
            Item::Sample {
                instance: reg.instance,
                seq,
                time_ms: t0 + seq * 1000,
                body: postcard::to_allocvec(&smp).unwrap(),
            }
        })
        .collect();
    for b in items.chunks(1000) {
        s.write_batch(b).unwrap();
    }
    // The reference: the analysis over every raw sample.
    let raw = nasprobe_analysis::build(
        &s.load_window(None, None).unwrap(),
        &nasprobe_analysis::Options::default(),
    );
    let want = raw.hosts[0].nics[0].rx_peak_mb_s;
    assert!(want > 40.0, "{want}");
    let (_, a) = nasprobe::store::window::load_between(&s, None, None, None).unwrap();
    let eth0 = a.report.hosts[0]
        .nics
        .iter()
        .find(|x| x.name == "eth0")
        .unwrap();
    assert!(
        (eth0.rx_peak_mb_s - want).abs() <= want * 0.02,
        "the best 10 s is the burst's {want} MB/s over raw samples, not a step's mean: {}",
        eth0.rx_peak_mb_s
    );
    assert!(
        eth0.rx_mb_s < 3.0,
        "the mean stays the window's: {}",
        eth0.rx_mb_s
    );
    // Raw samples gone (retention): the peak is the busiest step's mean, no more.
    let cut = t0 + n * 1000 + 1000;
    s.apply_retention(RetentionCutoffs {
        raw_ms: cut,
        minute_ms: t0,
        hour_ms: t0,
    })
    .unwrap();
    let (_, a) = nasprobe::store::window::load_between(&s, None, None, None).unwrap();
    let eth0 = a.report.hosts[0]
        .nics
        .iter()
        .find(|x| x.name == "eth0")
        .unwrap();
    assert!(
        eth0.rx_peak_mb_s < 15.0 && eth0.rx_peak_mb_s > 2.0,
        "{}",
        eth0.rx_peak_mb_s
    );
}

#[test]
fn a_long_report_takes_each_listed_death_s_minute_before_from_raw_samples() {
    use nasprobe_proto::{
        Event, ExitSeen, ExitStatus, ProcessEnd, ProcessExit, ProcessInfo, Record, RecordBody,
    };
    let dir = tempfile::tempdir().unwrap();
    let t0 = start() - 3 * HOUR;
    let n: u64 = 7 * 3600; // the minute tier
    let every = 1200; // rsyncd dies every 20 min, 37 s past a minute, and comes back
    let dies = |sec: u64| sec % every == every - 23;
    // 30 s of retransmits before each death: the raw minute before holds all of them.
    let burst = |sec: u64| (1..=30).any(|k| dies(sec + k));
    let info = |pid: u32| ProcessInfo {
        pid,
        ppid: 1,
        comm: "rsyncd".try_into().unwrap(),
        cmdline: "rsyncd --daemon".try_into().unwrap(),
        start_ticks: 1,
    };
    let mut s = Store::open(&dir.path().join("d.db")).unwrap();
    let reg = s
        .register("nas", "a:1", &nas_hello(6, t0 - 1000, 1000))
        .unwrap();
    let event = |seq: u64, time_ms: u64, e: Event| {
        let body = postcard::to_allocvec(&e).unwrap();
        let r = Record {
            seq,
            time_ms,
            body: RecordBody::Event(e),
        };
        Item::from_record(reg.instance, &r, body)
    };
    let (mut seq, mut items) = (0u64, Vec::new());
    for sec in 1..=n {
        let t = t0 + sec * 1000;
        let mut smp = sample(sec);
        smp.tcp.as_mut().unwrap().retrans_segs = if burst(sec) { 50 } else { 0 };
        seq += 1;
        items.push(Item::Sample {
            instance: reg.instance,
            seq,
            time_ms: t,
            body: postcard::to_allocvec(&smp).unwrap(),
        });
        if dies(sec) {
            let pid = 100 + (sec / every) as u32;
            let end = Event::ProcessEnd(ProcessEnd {
                exit: ProcessExit {
                    process: info(pid),
                    lifetime_ms: every * 1000,
                    cpu_ticks: 20,
                },
                status: ExitStatus {
                    seen: ExitSeen::Kernel,
                    code: Some(1),
                    signal: None,
                    core_dumped: false,
                    oom_killed: false,
                    before_ms: 0,
                },
            });
            seq += 1;
            items.push(event(seq, t, end));
            seq += 1;
            items.push(event(seq, t + 1, Event::ProcessStart(info(pid + 1))));
        }
    }
    for b in items.chunks(1000) {
        s.write_batch(b).unwrap();
    }
    // The reference: the analysis over every raw sample.
    let raw = nasprobe_analysis::build(
        &s.load_window(None, None).unwrap(),
        &nasprobe_analysis::Options::default(),
    );
    let (_, a) = nasprobe::store::window::load_between(&s, None, None, None).unwrap();
    let p = &a.report.patterns[0];
    assert_eq!(p.deaths_total, 21, "{p:?}");
    assert_eq!(p.deaths.len(), 6, "first and last 3 listed");
    let want = &raw.patterns[0].deaths;
    for d in &p.deaths {
        let w = want.iter().find(|w| w.at == d.at).expect("the same death");
        assert_eq!(
            (d.tcp_retransmits, d.window_s),
            (w.tcp_retransmits, w.window_s),
            "death at {}: the minute before from raw samples",
            d.at
        );
        assert_eq!(d.tcp_retransmits, 1500.0);
    }
}

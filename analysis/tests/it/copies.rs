//! Copies in one recording: testkit's built-in scenarios, each sampled by the agent's own
//! sampler (`golden::sample_builtin`), laid one after the other on the same two hosts with idle
//! time between them (the last sample of the copy before, its NICs, disks and processes
//! quiet). Each copy's verdict is that scenario's verdict alone; the newest leads; no window
//! that holds a copy whole changes its verdict.

use nasprobe_analysis::{HostData, Options, TimedSample, analyze_led_by, build, text};
use nasprobe_proto::Sample;

use crate::golden::sample_builtin;

/// Idle seconds between two copies: far longer than a copy's end (10 s below its floor).
const IDLE_S: u64 = 40;

/// `n` idle samples after `last` (the same instance, one a second): no traffic, no process,
/// no disk.
fn idle_after(last: &TimedSample, n: u64) -> Vec<TimedSample> {
    let mut s: Sample = last.decode().expect("a sample");
    for nic in s.nics.iter_mut() {
        nic.rx_bytes = 0;
        nic.tx_bytes = 0;
        nic.rx_packets = 0;
        nic.tx_packets = 0;
    }
    s.top.clear();
    s.disks.clear();
    (1..=n)
        .map(|k| TimedSample::new(last.time_ms + k * 1000, last.instance, last.seq + k, &s))
        .collect()
}

/// The scenarios in `names` (hosts `src` and `dst` each) recorded one after the other, each
/// agent a new instance, `IDLE_S` of idle between them; with each scenario alone.
fn recording(names: &[&str]) -> (Vec<HostData>, Vec<Vec<HostData>>) {
    let alone: Vec<Vec<HostData>> = names.iter().map(|n| sample_builtin(n)).collect();
    let mut rec: Vec<HostData> = alone[0]
        .iter()
        .map(|h| HostData {
            name: h.name.clone(),
            ..HostData::default()
        })
        .collect();
    let mut shift = 0u64;
    for part in &alone {
        let mut end = 0;
        for (r, h) in rec.iter_mut().zip(part) {
            assert_eq!(r.name, h.name);
            let base = r.instances.len();
            r.instances.extend(h.instances.iter().cloned());
            for s in &h.samples {
                let mut s = s.clone();
                s.time_ms += shift;
                s.instance += base;
                r.samples.push(s);
            }
            for e in &h.events {
                let mut e = e.clone();
                e.time_ms += shift;
                e.instance += base;
                r.events.push(e);
            }
            let idle = idle_after(r.samples.last().expect("samples"), IDLE_S);
            end = end.max(idle.last().map_or(0, |s| s.time_ms));
            r.samples.extend(idle);
        }
        // The next scenario's records start a second after this one's idle time.
        let first = part
            .iter()
            .flat_map(|h| h.events.first().map(|e| e.time_ms))
            .min()
            .unwrap_or(0);
        shift = end + 1000 - first;
    }
    (rec, alone)
}

/// The recording's records from `from_ms` on, as the store loads a window.
fn from(hosts: &[HostData], from_ms: u64) -> Vec<HostData> {
    hosts
        .iter()
        .map(|h| HostData {
            samples: h
                .samples
                .iter()
                .filter(|s| s.time_ms > from_ms)
                .cloned()
                .collect(),
            events: h
                .events
                .iter()
                .filter(|e| e.time_ms >= from_ms)
                .cloned()
                .collect(),
            ..h.clone()
        })
        .collect()
}

const WALLS: [&str; 3] = ["link-100mbit", "md-disk-bound", "wd-ssh"];

/// Three copies of three walls (the link, a disk, ssh's thread) with idle time between: each
/// copy is found, numbered by start time, with its own scenario's verdict and flow; the
/// newest leads the report, `--copy N` puts another in front; the text leads with the newest
/// and lists all three.
#[test]
fn each_copy_has_its_own_scenarios_verdict_and_the_newest_leads() {
    let (rec, alone) = recording(&WALLS);
    let r = build(&rec, &Options::default());
    assert_eq!(r.copies.len(), 3, "{:#?}", r.copies);
    for (k, (c, a)) in r.copies.iter().zip(&alone).enumerate() {
        let a = build(a, &Options::default());
        assert_eq!(c.number, k + 1);
        assert_eq!(c.bottleneck, a.bottleneck, "copy {} ({})", k + 1, WALLS[k]);
        let (cf, af) = (c.flow.as_ref().unwrap(), a.flow.as_ref().unwrap());
        assert_eq!(
            serde_json::to_value(cf).unwrap(),
            serde_json::to_value(af).unwrap(),
            "copy {}",
            k + 1
        );
        assert_eq!(c.mb_s.sustained, af.sustained_mb_s);
        assert!(!c.started_before_window);
        // One copy's bytes: its rate over its seconds, give or take its ramp.
        let expect = af.mean_mb_s * 1e6 * af.active_seconds;
        assert!(
            (c.bytes - expect).abs() <= 0.1 * expect,
            "{} vs {expect}",
            c.bytes
        );
    }
    let resources: Vec<_> = r
        .copies
        .iter()
        .map(|c| serde_json::to_value(c.bottleneck.resource).unwrap())
        .collect();
    assert_eq!(resources, ["nic", "disk", "cpu_thread"]);
    assert!(r.copies.windows(2).all(|w| w[0].end < w[1].start));
    assert_eq!(r.lead_copy, Some(3));
    assert_eq!(r.bottleneck, r.copies[2].bottleneck);
    // The hosts' figures are the newest copy's too; the sample count is the window's.
    let samples: usize = rec[0].samples.len();
    assert_eq!(r.hosts[0].samples, samples);
    let led = analyze_led_by(&rec, &Options::default(), None, Some(1)).report;
    assert_eq!(led.lead_copy, Some(1));
    assert_eq!(led.bottleneck, r.copies[0].bottleneck);

    let t = text::render(&r);
    let first = t.lines().nth(2).unwrap_or_default();
    assert!(first.starts_with("Copy 3 of 3: "), "{t}");
    assert!(first.ends_with("(the newest)"), "{t}");
    assert_eq!(
        t.lines().nth(3).unwrap_or_default(),
        text::verdict_line(&r),
        "{t}"
    );
    assert!(t.contains("\nCopies (3, newest last):\n"), "{t}");
    for c in &r.copies {
        assert!(
            t.lines().any(|l| l
                .trim_start()
                .starts_with(&format!("{}  {}", c.number, c.start))
                && l.ends_with(&c.wall)),
            "copy {}: {t}",
            c.number
        );
    }
    assert!(t.contains("3 copies: 1 walled by "), "{t}");
    let all = text::render_copies(&r);
    assert_eq!(all.matches("\nVerdict: ").count(), 3, "{all}");
}

/// Windows starting at every second of the recording (half-way between two samples, as a
/// `--since` falls): a copy the window holds whole keeps its verdict; one the window's start
/// cuts says so; the newest copy always leads.
#[test]
fn no_window_shift_changes_the_verdict_of_a_copy_it_holds_whole() {
    let (rec, _) = recording(&WALLS[..2]);
    let whole = build(&rec, &Options::default());
    assert_eq!(whole.copies.len(), 2);
    let t0 = rec
        .iter()
        .flat_map(|h| h.samples.first().map(|s| s.time_ms))
        .min()
        .unwrap();
    let t1 = rec
        .iter()
        .flat_map(|h| h.samples.last().map(|s| s.time_ms))
        .max()
        .unwrap();
    let start_ms = |c: &nasprobe_analysis::report::CopyOut| {
        nasprobe_analysis::time::parse_rfc3339(&c.start).unwrap()
    };
    let mut cut_seen = 0;
    for f in (t0 - 2500..t1 - 10_000).step_by(1000) {
        let w = from(&rec, f);
        let r = build(
            &w,
            &Options {
                from_ms: Some(f),
                ..Options::default()
            },
        );
        for c in &r.copies {
            let Some(same) = whole.copies.iter().find(|o| o.end == c.end) else {
                panic!("window from {f}: copy {} ends at {}", c.number, c.end);
            };
            if start_ms(same) >= f {
                assert!(!c.started_before_window, "window from {f}: {c:#?}");
                assert_eq!(c.bottleneck, same.bottleneck, "window from {f}");
                assert_eq!(c.start, same.start);
            } else if c.started_before_window {
                cut_seen += 1;
            }
        }
        if let Some(newest) = r.copies.last() {
            assert_eq!(r.bottleneck, newest.bottleneck, "window from {f}");
        }
    }
    assert!(cut_seen > 100, "{cut_seen}");
}

//! Golden output: the report JSON, the text report (with its events), the HTML report and the
//! agent's `sample --json` lines over every built-in scenario of testkit, byte for byte as
//! committed in `tests/golden/`.
//!
//! Each scenario is sampled deterministically, without a clock: testkit writes every host's
//! /proc and /sys tree at whole simulated seconds and the agent's own sampler reads it (the
//! measured interval and the agent's own CPU and RSS, the only figures from the real machine,
//! are set to what the simulation declares). The inputs are thus the same on every run, and a
//! change in any output is a change in the analysis: a restructuring must leave these files
//! untouched. A deliberate change of the output rewrites them with `UPDATE_GOLDEN=1 cargo test
//! -p nasprobe-analysis --test it golden::` (or `NASPROBE_BLESS=1`, as the other golden tests; then
//! review the diff).

use crate::html_scenario;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use nasprobe_agent::config::Config;
use nasprobe_agent::sample_cmd::{json_event, json_sample};
use nasprobe_agent::sampler::Sampler;
use nasprobe_analysis::{HostData, Instance, Options, TimedEvent, TimedSample, html, text};
use nasprobe_proto::{AgentStart, Event, Hello, Sample};
use nasprobe_testkit::Runner;
use nasprobe_testkit::builtins::{self, BuiltinOptions};

/// t = 0 of every scenario: 2025-11-30T00:00:00Z, in seconds since the epoch.
const WALL0_S: u64 = 1_764_460_800;
/// Samples taken of a scenario, one per simulated second after the priming read: 90 (several
/// restarts of a process that restarts every 5 or 20 s), 30 for the two that stress the sampler
/// (a thousand processes; a hundred births a second, whose events fill the outputs).
fn seconds(name: &str) -> u64 {
    match name {
        "scale" | "churn" => 30,
        _ => 90,
    }
}

/// Where the trees are written: tmpfs when there is one (a tree is rewritten every simulated
/// second; renames on ext4 cost half a millisecond each), else the target's scratch folder.
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if nasprobe_testkit::runner::on_tmpfs(shm) {
        shm.to_path_buf()
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Every host of built-in `name`, sampled once a second for [`seconds`] by the agent's sampler
/// over the trees testkit writes.
pub(crate) fn sample_builtin(name: &str) -> Vec<HostData> {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let scn = builtins::builtin(name, &BuiltinOptions::default()).expect("a built-in scenario");
    let dir = scratch().join(format!(
        "golden-{}-{name}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut run = Runner::new(&scn, &dir, WALL0_S).expect("the scenario's trees");
    run.step_to(1.0).unwrap();
    let mut hosts = Vec::new();
    let mut samplers = Vec::new();
    for (k, p) in run.paths().into_iter().enumerate() {
        let cfg = Config {
            proc_root: p.proc_root.clone(),
            sys_root: p.sys_root.clone(),
            name: Some(p.name.clone()),
            ..Config::default()
        };
        let mut s = Sampler::new(&cfg);
        let mut out = Sample::default();
        let mut primed = Vec::new();
        assert!(!s.sample(&mut out, &mut |e| primed.push(e)), "priming");
        let mut hello = Hello::default();
        s.fill_hello(&mut hello);
        let instance_id = 0x601d_0000 + k as u64;
        hello.protocol_version = 1;
        hello.agent_version = "golden".try_into().unwrap();
        hello.instance_id = instance_id;
        hello.started_ms = (WALL0_S + 1) * 1000;
        hello.now_ms = hello.started_ms;
        hello.interval_ms = 1000;
        hello.oldest_seq = 1;
        hello.newest_seq = 1;
        let start = Event::AgentStart(AgentStart {
            agent_version: hello.agent_version.clone(),
            instance_id,
            interval_ms: 1000,
        });
        let mut h = HostData {
            name: p.name.clone(),
            instances: vec![Instance {
                id: 1,
                hello,
                clock: None,
            }],
            ..HostData::default()
        };
        h.events
            .push(TimedEvent::new((WALL0_S + 1) * 1000, 0, 1, &start));
        for e in &primed {
            let seq = h.events.len() as u64 + 1;
            h.events
                .push(TimedEvent::new((WALL0_S + 1) * 1000, 0, seq, e));
        }
        hosts.push(h);
        samplers.push((s, out));
    }
    for t in 2..=seconds(name) + 1 {
        run.step_to(t as f64).unwrap();
        let time_ms = (WALL0_S + t) * 1000;
        for (h, (s, out)) in hosts.iter_mut().zip(samplers.iter_mut()) {
            let mut events = Vec::new();
            assert!(s.sample(out, &mut |e| events.push(e)), "{name}: a sample");
            // What the real machine measured: the simulation's second instead.
            out.interval_us = 1_000_000;
            out.agent.cpu_us = 0;
            out.agent.rss_kib = 0;
            for e in &events {
                let seq = (h.samples.len() + h.events.len()) as u64 + 1;
                h.events.push(TimedEvent::new(time_ms, 0, seq, e));
            }
            let seq = (h.samples.len() + h.events.len()) as u64 + 1;
            h.samples.push(TimedSample::new(time_ms, 0, seq, out));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    hosts
}

/// Samples per host in the `agent.jsonl` golden file: enough for every kind of line (the
/// priming events, processes starting and ending, a restart) without megabytes per scenario.
const AGENT_JSON_SAMPLES: usize = 5;

/// What `nasprobe-agent sample --json` prints of each host's first [`AGENT_JSON_SAMPLES`]
/// samples: the events the agent read up to a sample, then the sample (the order of
/// `sample_cmd::run`), host after host.
fn agent_jsonl(hosts: &[HostData]) -> String {
    let mut out = String::new();
    for h in hosts {
        let mut events = h.events.iter().peekable();
        for (hello, ts, sample) in h.decoded().take(AGENT_JSON_SAMPLES) {
            while let Some(e) = events.next_if(|e| e.time_ms <= ts.time_ms) {
                json_event(&mut out, &e.event());
            }
            json_sample(&mut out, hello, &sample.expect("a stored sample decodes"));
        }
    }
    out
}

/// The renderings of one window: (file suffix, text).
fn outputs(hosts: &[HostData]) -> Vec<(&'static str, String)> {
    let a = nasprobe_analysis::analyze(hosts, &Options::default());
    let r = &a.report;
    let mut txt = text::render(r);
    txt.push_str("\n--- events\n");
    txt.push_str(&text::render_events(r));
    txt.push_str("\n--- verdict line\n");
    txt.push_str(&text::verdict_line(r));
    txt.push('\n');
    // Over steps (as over rollups), each death's context read back from the raw samples.
    let detail = |k: usize, from: u64, to: u64| -> Option<HostData> {
        let mut h = hosts.get(k)?.clone();
        h.samples.retain(|s| s.time_ms >= from && s.time_ms <= to);
        Some(h)
    };
    let stepped = nasprobe_analysis::analyze_with_detail(
        hosts,
        &Options {
            step_ms: Some(1000),
            ..Options::default()
        },
        Some(&detail),
    );
    vec![
        ("json", serde_json::to_string_pretty(r).unwrap() + "\n"),
        (
            "step.json",
            serde_json::to_string_pretty(&stepped.report).unwrap() + "\n",
        ),
        ("txt", txt),
        ("html", html::render(hosts, &a)),
        ("agent.jsonl", agent_jsonl(hosts)),
    ]
}

/// Compares (or with UPDATE_GOLDEN=1 writes) `tests/golden/NAME.SUFFIX`; returns a line per
/// file that differs.
fn check(name: &str, hosts: &[HostData]) -> Vec<String> {
    let update = ["UPDATE_GOLDEN", "NASPROBE_BLESS"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| v == "1"));
    let mut bad = Vec::new();
    for (suffix, got) in outputs(hosts) {
        let path = golden_dir().join(format!("{name}.{suffix}"));
        if update {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            Ok(want) => {
                let line = want
                    .lines()
                    .zip(got.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(want.lines().count().min(got.lines().count()));
                let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.{suffix}"));
                std::fs::write(&out, &got).unwrap();
                bad.push(format!(
                    "{}: differs from line {} on (got {} bytes, want {}; the output is in {})",
                    path.display(),
                    line + 1,
                    got.len(),
                    want.len(),
                    out.display()
                ));
            }
            Err(e) => bad.push(format!(
                "{}: {e} (UPDATE_GOLDEN=1 writes it)",
                path.display()
            )),
        }
    }
    bad
}

#[test]
fn every_builtin_scenario_reports_as_committed() {
    nasprobe_testkit::big_stack(|| {
        let mut bad = Vec::new();
        for name in builtins::NAMES {
            let hosts = sample_builtin(name);
            assert!(
                hosts
                    .iter()
                    .all(|h| h.samples.len() as u64 == seconds(name)),
                "{name}"
            );
            bad.extend(check(name, &hosts));
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    });
}

/// The analysis' own replication pair over ten minutes (deaths, a gap, an agent restart).
#[test]
fn the_replication_pair_reports_as_committed() {
    nasprobe_testkit::big_stack(|| {
        let bad = check("html-scenario", &html_scenario::ten_minutes());
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    });
}

/// Two runs over the same scenario give the same bytes (the golden files mean something).
#[test]
fn sampling_a_scenario_is_deterministic() {
    nasprobe_testkit::big_stack(|| {
        let a = outputs(&sample_builtin("process-restarts"));
        let b = outputs(&sample_builtin("process-restarts"));
        assert_eq!(a, b);
    });
}

//! A process that waits for a CPU while cores sit idle: held to less than it could use (a CPU
//! quota of its cgroup, a cpuset, a real-time neighbour), so its thread's distance from a full
//! core is evidence of that hold, never headroom.

use crate::series::HostSeries;
use crate::stats::{median, pick};
use crate::vocab::pct;

/// The process waits for a CPU (schedstat run_delay, median over the active period) at least
/// this share of its time: a process with a core free for it waits a few percent (the issue's
/// smbd under a 50000/100000 cfs quota waited 52 %).
pub(crate) const STARVED_RUN_DELAY: f64 = 0.25;
/// ... while at least this much of the host's cores sat idle (all cores' idle share times their
/// count): a core's half was free for it and it could not take it.
pub(crate) const STARVED_IDLE_CORES: f64 = 0.5;
/// The words the starved sentence starts with; `decide` reads them back to keep the sentence
/// out of the ruled-out list (it is no headroom).
pub(crate) const STARVED_WORDS: &str = "yet it waited for a CPU";

/// The sentence for process `process` of host `s` over points `idx` when it is starved (see
/// [`STARVED_RUN_DELAY`], [`STARVED_IDLE_CORES`]); `busy` is all cores together.
pub(crate) fn starved_note(
    s: &HostSeries,
    idx: &[usize],
    process: &str,
    busy: f64,
) -> Option<String> {
    let p = s.procs.get(process)?;
    let wait = median(&pick(&p.run_delay_frac, idx))?;
    let cores = s.cpu_count.max(1) as f64;
    let idle = ((1.0 - busy) * cores).max(0.0);
    (wait >= STARVED_RUN_DELAY && idle >= STARVED_IDLE_CORES).then(|| {
        format!(
            "{STARVED_WORDS} {} of its time while {idle:.1} of {cores:.0} cores sat idle: something holds it to less than it could use (a CPU quota of its cgroup, a cpuset), not headroom",
            pct(wait)
        )
    })
}

/// Whether a candidate's sentence carries the starved note.
pub(crate) fn is_starved(sentence: &str) -> bool {
    sentence.contains(STARVED_WORDS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{ProcSeries, ThreadKey, ThreadSeries};

    /// smbd on a 2-core nas at half a core, waiting for a CPU `wait` of its time, the host
    /// `busy` (both cores together).
    fn nas(wait: f64, busy: f64) -> HostSeries {
        let mut s = HostSeries {
            name: "nas".into(),
            cpu_count: 2,
            cpu_busy: vec![busy; 10],
            ..Default::default()
        };
        s.procs.insert(
            "smbd".into(),
            ProcSeries {
                cores: vec![0.5; 10],
                run_delay_frac: vec![wait; 10],
                last_pid: 812,
                ..Default::default()
            },
        );
        s.threads.insert(
            ThreadKey {
                process: "smbd".into(),
                thread: "smbd".into(),
            },
            ThreadSeries {
                frac: vec![0.5; 10],
                present: 10,
                last_pid: 812,
                last_tid: 812,
            },
        );
        s
    }

    /// The smbd under a 50000/100000 quota: half a core, waiting 52 % of its time while
    /// the other core idles. Its thread is evidence, never "2.0x headroom"; the same thread
    /// with a core free for it (waiting 3 %) or with every core busy is ruled out as before.
    #[test]
    fn a_process_waiting_for_a_cpu_beside_idle_cores_is_no_headroom() {
        let idx: Vec<usize> = (0..10).collect();
        let all = crate::verdict::candidates::candidates(&nas(0.52, 0.3), &idx);
        let t = all
            .iter()
            .find(|c| c.resource == crate::vocab::Resource::CpuThread)
            .unwrap();
        assert!(!t.wall, "{}", t.sentence);
        assert!(
            t.sentence
                .contains("yet it waited for a CPU 52% of its time while 1.4 of 2 cores sat idle"),
            "{}",
            t.sentence
        );
        let b = crate::verdict::decide(&all, None);
        assert!(
            b.ruled_out.iter().all(|r| !r.contains("`smbd`")),
            "{:?}",
            b.ruled_out
        );
        assert!(
            b.evidence
                .iter()
                .any(|e| is_starved(e) && !e.contains("x headroom")),
            "{:?}",
            b.evidence
        );
        for (wait, busy) in [(0.03, 0.3), (0.52, 0.9)] {
            let all = crate::verdict::candidates::candidates(&nas(wait, busy), &idx);
            let b = crate::verdict::decide(&all, None);
            assert!(
                b.ruled_out
                    .iter()
                    .any(|r| r.contains("`smbd`") && r.contains("2.0x headroom")),
                "{wait} {busy}: {:?}",
                b.ruled_out
            );
        }
    }
}

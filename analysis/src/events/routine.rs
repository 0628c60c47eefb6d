//! Which restart patterns are routine (short-lived commands that end on their own: cron jobs,
//! shell loops, health checks) and become one line at the end of the report, and whether the
//! argument a restarting command changes looks like a resume token.

use std::collections::BTreeMap;

use crate::exits::{Cause, Death, death_cause};
use crate::input::HostData;
use crate::report::{Pattern, RoutineExits, StatusCount};
use crate::series::HostSeries;

/// A word this long (after an option's `--name=`) with a digit in it is a token, not a count.
const TOKEN_MIN_CHARS: usize = 8;
/// A number that changes by at least this much each run is an offset (bytes), not a pid or a
/// counter.
const OFFSET_MIN_STEP: u64 = 65_536;
/// A death lines up with a drop of the flow when its host's traffic in the seconds after it is
/// under this share of the seconds before.
const DROP_SHARE: f64 = 0.5;
/// The seconds before and after a death compared for a drop, ms.
const DROP_BEFORE_MS: u64 = 10_000;
const DROP_AFTER_MS: u64 = 5_000;

/// What decides whether a pattern touches the flow: when it was active, and the processes
/// (host, pid) whose connections carried it.
pub(crate) struct FlowCtx<'a> {
    pub active: Option<(u64, u64)>,
    pub carriers: &'a [(String, u32)],
}

/// One death as the routine test needs it.
pub(crate) struct Life {
    pub pid: u32,
    pub time_ms: u64,
    pub lifetime_ms: u64,
}

/// Whether the pattern of `lives` (ended as `ends`) on host `h` is routine: every death ended on
/// its own (status 0 or another status, no signal, no OOM, no network trouble, no peer that
/// ended first), most with status 0; none of its processes carried the flow or moved a file at
/// transfer rates; and its deaths did not line up with drops of the flow.
pub(crate) fn is_routine(
    h: &HostData,
    s: &HostSeries,
    lives: &[Life],
    ends: &[Death<'_>],
    flow: &FlowCtx<'_>,
) -> bool {
    let causes: Vec<Cause> = ends.iter().map(death_cause).collect();
    let clean = causes.iter().filter(|c| **c == Cause::Clean).count();
    if causes
        .iter()
        .any(|c| !matches!(c, Cause::Clean | Cause::ErrorExit))
        || clean * 3 < causes.len() * 2
    {
        return false;
    }
    let touches = lives.iter().any(|l| {
        flow.carriers
            .iter()
            .any(|(host, pid)| *host == h.name && *pid == l.pid)
            || crate::transfers::moved_fast(
                h,
                l.pid,
                l.time_ms.saturating_sub(l.lifetime_ms),
                l.time_ms,
            )
    });
    !touches && !lines_up_with_drops(s, lives, flow.active)
}

/// Whether at least half of the deaths inside the flow's active period (and at least one) were
/// followed by a drop of their host's traffic (see [`DROP_SHARE`]).
fn lines_up_with_drops(s: &HostSeries, lives: &[Life], active: Option<(u64, u64)>) -> bool {
    let Some((a, b)) = active else {
        return false;
    };
    // The host's traffic per point: every physical NIC, both ways.
    let traffic: Vec<f64> = (0..s.points.len())
        .map(|i| {
            s.nics
                .iter()
                .filter(|(n, x)| !crate::verdict::flow::is_virtual_nic(n) && !x.is_bond)
                .map(|(_, x)| {
                    let v = |v: &[f64]| v.get(i).copied().filter(|x| x.is_finite()).unwrap_or(0.0);
                    v(&x.rx_bps) + v(&x.tx_bps)
                })
                .sum()
        })
        .collect();
    let mean_in = |from: u64, to: u64| {
        let v: Vec<f64> = s
            .points
            .iter()
            .zip(&traffic)
            .filter(|(p, _)| p.time_ms > from && p.time_ms <= to)
            .map(|(_, x)| *x)
            .collect();
        crate::stats::mean(&v)
    };
    let during: Vec<&Life> = lives
        .iter()
        .filter(|l| l.time_ms >= a && l.time_ms <= b)
        .collect();
    let drops = during
        .iter()
        .filter(|l| {
            let t = l.time_ms;
            match (
                mean_in(t.saturating_sub(DROP_BEFORE_MS), t),
                mean_in(t, t + DROP_AFTER_MS),
            ) {
                (Some(before), Some(after)) => before > 0.0 && after < before * DROP_SHARE,
                _ => false,
            }
        })
        .count();
    !during.is_empty() && drops * 2 >= during.len()
}

/// Whether the arguments that change between `cmdlines` (one per death, in time order) look
/// like a resume token: a long token, or a number that grows by at least [`OFFSET_MIN_STEP`]
/// each run (an offset).
pub(crate) fn resume_token(cmdlines: &[&str]) -> bool {
    let words: Vec<Vec<&str>> = cmdlines
        .iter()
        .map(|c| c.split_whitespace().collect())
        .collect();
    let Some(first) = words.first() else {
        return false;
    };
    if words.iter().any(|w| w.len() != first.len()) {
        // A resume adds arguments (`-k TOKEN`): the words not in every command.
        return words
            .iter()
            .flatten()
            .any(|w| !words.iter().all(|ws| ws.contains(w)) && long_token(w));
    }
    (0..first.len()).any(|k| {
        let col: Vec<&str> = words.iter().map(|w| w[k]).collect();
        if col.windows(2).all(|p| p[0] == p[1]) {
            return false;
        }
        col.iter().all(|w| long_token(w)) || growing_offset(&col)
    })
}

/// A word of at least [`TOKEN_MIN_CHARS`] token characters (after `--name=`), with a digit,
/// that is not a path.
fn long_token(w: &str) -> bool {
    let v = w.rsplit_once('=').map_or(w, |(_, v)| v);
    v.len() >= TOKEN_MIN_CHARS
        && !v.starts_with('/')
        && v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_+/=.:".contains(&b))
}

/// Numbers (after `--name=`) that grow by at least [`OFFSET_MIN_STEP`] from each to the next.
fn growing_offset(col: &[&str]) -> bool {
    let nums: Option<Vec<u64>> = col
        .iter()
        .map(|w| w.rsplit_once('=').map_or(*w, |(_, v)| v).parse().ok())
        .collect();
    nums.is_some_and(|n| n.windows(2).all(|p| p[1] >= p[0] + OFFSET_MIN_STEP))
}

/// The routine patterns of one host merged per process: one [`RoutineExits`] each, with the
/// exits counted by status.
pub(crate) fn routine_lines(routine: Vec<(Pattern, Vec<Option<u8>>)>) -> Vec<RoutineExits> {
    let mut by: BTreeMap<(String, String), RoutineExits> = BTreeMap::new();
    let mut counts: BTreeMap<(String, String), BTreeMap<u8, usize>> = BTreeMap::new();
    for (p, codes) in routine {
        let key = (p.host.clone(), p.process.clone());
        let r = by.entry(key.clone()).or_insert_with(|| RoutineExits {
            host: p.host.clone(),
            process: p.process.clone(),
            commands: Vec::new(),
            clean: 0,
            other_statuses: Vec::new(),
            line: String::new(),
        });
        r.commands.push(p.command);
        let c = counts.entry(key).or_default();
        for code in codes.into_iter().flatten() {
            if code == 0 {
                r.clean += 1;
            } else {
                *c.entry(code).or_default() += 1;
            }
        }
    }
    by.into_iter()
        .map(|(key, mut r)| {
            r.other_statuses = counts
                .remove(&key)
                .unwrap_or_default()
                .into_iter()
                .map(|(status, exits)| StatusCount { status, exits })
                .collect();
            r.line = line(&r);
            r
        })
        .collect()
}

/// "nas: `bash`: 15 clean exits, 2 with status 1".
fn line(r: &RoutineExits) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut parts = vec![format!("{} clean exit{}", r.clean, plural(r.clean))];
    parts.extend(
        r.other_statuses
            .iter()
            .map(|s| format!("{} with status {}", s.exits, s.status)),
    );
    format!("{}: `{}`: {}", r.host, r.process, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_or_an_offset_is_a_resume_token_and_a_sleep_is_not() {
        assert!(resume_token(&[
            "btrfs send -k 28399387 /v",
            "btrfs send -k 28399388 /v"
        ]));
        assert!(resume_token(&[
            "rsync --token=a1b2c3d4e5",
            "rsync --token=f6a7b8c9d0"
        ]));
        assert!(resume_token(&[
            "btrfs send /v",
            "btrfs send -k 9f86d081884c /v"
        ]));
        assert!(resume_token(&[
            "dd skip=0 of=/x",
            "dd skip=1048576 of=/x",
            "dd skip=2097152 of=/x"
        ]));
        assert!(!resume_token(&["sleep 3", "sleep 5", "sleep 4"]));
        // A pid that grows by a few is not an offset; a temporary path is not a token.
        assert!(!resume_token(&["strace -p 4101", "strace -p 4190"]));
        assert!(!resume_token(&[
            "sh /tmp/tmp.Ab12Cd34",
            "sh /tmp/tmp.Ef56Gh78"
        ]));
        assert!(!resume_token(&[
            "python3 -c print(1)",
            "python3 -c print(2)"
        ]));
        assert!(!resume_token(&["same arg", "same arg"]));
    }
}

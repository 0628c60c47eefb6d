//! How each host's run went, for the exit code of `record`, `watch` and `test`: 0 only when
//! every host delivered records; else 1 with one line naming each host that was never reached,
//! never authenticated (a wrong token, a refusal, another protocol) or away for most of the run.

use std::time::Duration;

use super::conn::{HostLive, Live, Status};

/// A run shorter than this is not judged by how long a host was unreachable (connecting alone
/// takes a moment). A judged host fails when it delivered nothing, was unreachable for more than
/// three quarters of the run, or for more than half of it with refusals (frames failing
/// authentication, marked bad): an agent restarted on purpose, reconnecting after its backoff,
/// is away for half of a short run and still a success. A host whose agent refused us (wrong
/// token, another protocol) fails however short the run.
const UNREACHABLE_JUDGED_AFTER: Duration = Duration::from_secs(2);

/// How long host `h` was not streaming during a run of `ran` (a connection still streaming at
/// the stop was cancelled with the run: counted to now).
pub fn down_for(h: &HostLive, ran: Duration) -> Duration {
    let connected = h.connected_for + h.connected_since.map_or(Duration::ZERO, |t| t.elapsed());
    ran.saturating_sub(connected)
}

/// One line per host that failed a run of `ran`, naming it and why; empty when every host
/// delivered records.
pub fn failed_hosts(live: &Live, ran: Duration) -> Vec<String> {
    live.snapshot()
        .iter()
        .filter_map(|h| failure(h, ran))
        .collect()
}

/// `Err` with [`failed_hosts`]' lines, one per line, when there are any.
pub fn ensure_delivered(live: &Live, ran: Duration) -> anyhow::Result<()> {
    let failed = failed_hosts(live, ran);
    // Each line is a line of its own under main's `nasprobe: ` prefix.
    anyhow::ensure!(failed.is_empty(), "{}", failed.join("\nnasprobe: "));
    Ok(())
}

fn failure(h: &HostLive, ran: Duration) -> Option<String> {
    let down = down_for(h, ran);
    let interval = Duration::from_millis(h.hello.as_ref().map_or(1000, |x| x.interval_ms.into()));
    let judged = ran >= UNREACHABLE_JUDGED_AFTER.max(2 * interval);
    let secs = ran.as_secs_f64();
    // A short run judges only a host whose attempt already failed.
    let tried = matches!(h.status, Status::Reconnecting { .. }) || h.config_error.is_some();
    if h.received == 0 && (judged || tried) {
        // Why: the refusal (wrong token, another protocol), else the last attempt's error.
        let last = h.config_error.as_deref().or(match &h.status {
            Status::Reconnecting { error, .. } => Some(error.as_str()),
            _ => None,
        });
        let why = last.map_or(String::new(), |e| {
            format!(
                " ({})",
                e.strip_prefix(&format!("{}: ", h.name)).unwrap_or(e)
            )
        });
        let what = match (&h.hello, &h.config_error) {
            (None, Some(_)) => "never authenticated",
            (None, None) => "never reached",
            (Some(_), _) => "delivered nothing",
        };
        return Some(format!("{}: {what} in {secs:.1} s{why}", h.name));
    }
    if let Some(e) = &h.config_error {
        return Some(e.clone());
    }
    (judged && (down > ran * 3 / 4 || (down > ran / 2 && h.tampered + h.marked_bad > 0))).then(
        || {
            format!(
                "{}: unreachable for most of the run ({:.1} s of {secs:.1} s)",
                h.name,
                down.as_secs_f64()
            )
        },
    )
}

//! The report's events: `events[]` in time order ([`out`] renders one), over a long window
//! grouped ([`groups`]); restarting commands as patterns ([`restarts`]) with the context of
//! each death ([`deaths`]), routine ones apart as one line per process ([`routine`]).

use crate::input::{HostData, TimedEvent};
use crate::report::{EventGroup, EventOut};
use groups::host_groups;
use out::event_out;

pub(crate) mod deaths;
pub(crate) mod groups;
pub(crate) mod out;
pub(crate) mod restarts;
pub(crate) mod routine;

/// `events[]` in time order to the millisecond (`at` shows whole seconds), hosts in their order
/// on ties; over a long window only the first and last [`GROUP_KEEP_ENDS`] of each group, with
/// the groups. Per-sample measurements (TCP connections, open files) are not events.
pub(crate) fn events_and_groups(
    hosts: &[HostData],
    long: bool,
) -> (Vec<EventOut>, Vec<EventGroup>) {
    let mut timed: Vec<((u64, usize, usize), EventOut)> = Vec::new();
    let mut groups = Vec::new();
    for (k, h) in hosts.iter().enumerate() {
        let kept: Vec<(usize, &TimedEvent)> = if long {
            host_groups(h)
                .into_iter()
                .flat_map(|(g, kept)| {
                    groups.push(g);
                    kept
                })
                .collect()
        } else {
            h.events
                .iter()
                .filter(|e| !e.is_measurement())
                .enumerate()
                .collect()
        };
        timed.extend(kept.into_iter().map(|(i, e)| {
            let out = event_out(&h.name, e.time_ms, &e.event(), |ticks| {
                h.ticks_s(e.instance, ticks)
            });
            ((e.time_ms, k, i), out)
        }));
    }
    timed.sort_by_key(|e| e.0);
    (timed.into_iter().map(|e| e.1).collect(), groups)
}

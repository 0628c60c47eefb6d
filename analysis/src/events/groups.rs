//! Events of one host alike (same kind, process or device and, for exits, the same end), as a
//! long window summarises them in `event_groups[]`.

use std::collections::BTreeMap;

use nasprobe_proto::Event;

use super::out::event_out;
use crate::input::{HostData, TimedEvent};
use crate::report::{EventGroup, GROUP_KEEP_ENDS};
use crate::stats::median;
use crate::time::rfc3339;
use crate::vocab::round2;

/// Keeps the first and the last [`GROUP_KEEP_ENDS`] of `v`.
pub(crate) fn keep_ends<T>(v: &mut Vec<T>) {
    if v.len() > 2 * GROUP_KEEP_ENDS {
        v.drain(GROUP_KEEP_ENDS..v.len() - GROUP_KEEP_ENDS);
    }
}

/// A host's events (not the measurements) grouped, in the order of each group's first event:
/// each group with the events it keeps, its first and last [`GROUP_KEEP_ENDS`], and their
/// positions among the host's events.
pub(crate) fn host_groups(h: &HostData) -> Vec<(EventGroup, Vec<(usize, &TimedEvent)>)> {
    let mut acc: BTreeMap<GroupKey, GroupAcc> = BTreeMap::new();
    for (i, e) in h.events.iter().filter(|e| !e.is_measurement()).enumerate() {
        let ev = e.event();
        let g = acc.entry(group_key(&ev)).or_insert_with(|| GroupAcc {
            order: i,
            first_ms: e.time_ms,
            cause: ev
                .as_exit()
                .map(|(_, st)| crate::exits::cause_of(st).name()),
            ..GroupAcc::default()
        });
        g.count += 1;
        g.last_ms = e.time_ms;
        if g.head.len() < GROUP_KEEP_ENDS {
            g.head.push((i, e));
        } else {
            g.tail.push_back((i, e));
            if g.tail.len() > GROUP_KEEP_ENDS {
                g.tail.pop_front();
            }
        }
        if let Some((x, _)) = ev.as_exit() {
            g.lifetimes_s.push(x.lifetime_ms as f64 / 1000.0);
            g.cpu_s += h.ticks_s(e.instance, x.cpu_ticks);
        }
    }
    let mut acc: Vec<(GroupKey, GroupAcc)> = acc.into_iter().collect();
    acc.sort_by_key(|(_, g)| g.order);
    acc.into_iter()
        .map(|(key, g)| {
            let out = group_out(h, key, &g);
            let mut kept = g.head;
            kept.extend(g.tail);
            (out, kept)
        })
        .collect()
}

/// What makes events one group: kind, process, device and, for exits, how they ended.
pub(crate) type GroupKey = (&'static str, Option<String>, Option<String>, Option<String>);

pub(crate) fn group_key(e: &Event) -> GroupKey {
    let (process, device, ended) = match e {
        Event::ProcessStart(p) => (Some(p.comm.to_string()), None, None),
        Event::ProcessExit(_) | Event::ProcessEnd(_) => {
            let (x, st) = e.as_exit().unzip();
            (
                x.map(|x| x.process.comm.to_string()),
                None,
                st.map(crate::exits::how_it_ended),
            )
        }
        Event::LinkChange(l) => (None, Some(l.nic.to_string()), None),
        Event::KernelMessage(m) => (None, m.nic.as_deref().map(str::to_string), None),
        Event::DeviceAdded(
            nasprobe_proto::DeviceAdded::Disk(n) | nasprobe_proto::DeviceAdded::Nic(n),
        ) => (None, Some(n.to_string()), None),
        Event::AgentStart(_)
        | Event::ExitWatch(_)
        | Event::Connections(_)
        | Event::OpenFiles(_)
        | Event::Shaping(_) => (None, None, None),
    };
    (e.kind(), process, device, ended)
}

/// A group as it is gathered: the first and last few of its events, its figures.
#[derive(Default)]
pub(crate) struct GroupAcc<'a> {
    /// Position of its first event among the host's: groups are listed in that order.
    order: usize,
    /// Exits: their cause (`Cause::name`).
    cause: Option<&'static str>,
    first_ms: u64,
    last_ms: u64,
    count: usize,
    head: Vec<(usize, &'a TimedEvent)>,
    tail: std::collections::VecDeque<(usize, &'a TimedEvent)>,
    lifetimes_s: Vec<f64>,
    cpu_s: f64,
}

pub(crate) fn group_out(h: &HostData, key: GroupKey, g: &GroupAcc) -> EventGroup {
    let host = &h.name;
    let (kind, process, device, ended) = key;
    // The end's figures as its first event reports them (one `ended` text, one end).
    let first = g.head.first().map(|(_, e)| {
        event_out(host, e.time_ms, &e.event(), |ticks| {
            h.ticks_s(e.instance, ticks)
        })
    });
    let first = first.as_ref();
    let is_exit = g.cause.is_some();
    let median_lifetime_s = median(&g.lifetimes_s).map(round2);
    let cpu_s = is_exit.then(|| round2(g.cpu_s));
    let mut out = EventGroup {
        host: host.to_string(),
        kind,
        cause: g.cause,
        exit_code: first.and_then(|e| e.exit_code),
        signal: first.and_then(|e| e.signal.clone()),
        oom_killed: first.and_then(|e| e.oom_killed),
        process,
        device,
        ended,
        count: g.count,
        first: rfc3339(g.first_ms),
        last: rfc3339(g.last_ms),
        listed: g.head.len() + g.tail.len(),
        median_lifetime_s,
        cpu_s,
        summary: String::new(),
    };
    out.summary = format!(
        "{host}: {} × {}, {} .. {}{}",
        out.count,
        out.what(),
        out.first,
        out.last,
        out.figures()
    );
    out
}

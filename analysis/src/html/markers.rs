//! The event markers of the time charts: events within two pixels of each other drawn as one,
//! with each event's class and its hover text.

use std::collections::BTreeMap;

use nasprobe_proto::Event;

use super::svg::{TimeAxis, when};
use crate::input::HostData;

/// Events within two pixels of each other, drawn as one marker that lists them all (over a long
/// window: one line per group of alike events, with its count).
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    pub t: f64,
    pub class: &'static str,
    pub texts: Vec<String>,
    /// How many events it stands for.
    pub n: usize,
}

/// Over a long window a marker covers this many pixels (3 otherwise): each is drawn on every
/// time chart of its host with its hover text, and at 6 px a week of a crash loop's markers is
/// about half the page instead of most of it.
const LONG_MARKER_PX: f64 = 6.0;

/// Alike events of one marker over a long window: how many, the first one's text, the last time.
struct Alike {
    n: usize,
    first: String,
    last_ms: u64,
}

pub(crate) fn event_class(e: &Event) -> &'static str {
    match e {
        Event::ProcessStart(_) => "ev-start",
        Event::ProcessExit(_) | Event::ProcessEnd(_) => "ev-exit",
        Event::LinkChange(_) => "ev-link",
        Event::AgentStart(_) => "ev-agent",
        Event::DeviceAdded(_) => "ev-dev",
        Event::ExitWatch(_) => "ev-agent",
        Event::KernelMessage(_) => "ev-link",
        Event::Connections(_) | Event::OpenFiles(_) => "ev-conn",
        Event::Shaping(_) => "ev-link",
    }
}

/// CPU seconds an event reports (a process exit's ticks at its instance's clock rate).
pub(crate) fn event_cpu_s(h: &HostData, instance: usize, e: &Event) -> f64 {
    match e {
        Event::ProcessExit(x) => h.ticks_s(instance, x.cpu_ticks),
        _ => 0.0,
    }
}

/// One line of hover text for an event; `cpu_s` turns its instance's ticks into seconds.
pub fn describe(time_ms: u64, e: &Event, cpu_s: f64) -> String {
    let at = when(time_ms);
    match e {
        Event::ProcessStart(p) => format!(
            "{at} started {} (pid {}): {}",
            p.comm.as_str(),
            p.pid,
            p.cmdline.as_str()
        ),
        Event::ProcessExit(x) => exit_line(&at, x, None, cpu_s),
        Event::ProcessEnd(x) => exit_line(&at, &x.exit, Some(&x.status), cpu_s),
        Event::LinkChange(l) => format!(
            "{at} link {} {} {} Mb/s{} mtu {}",
            l.nic.as_str(),
            if l.up { "up" } else { "down" },
            l.speed_mbit,
            match l.full_duplex {
                Some(true) => " full duplex",
                Some(false) => " half duplex",
                None => "",
            },
            l.mtu
        ),
        Event::AgentStart(a) => format!(
            "{at} agent started (version {}, interval {} ms)",
            a.agent_version.as_str(),
            a.interval_ms
        ),
        Event::DeviceAdded(d) => match d {
            nasprobe_proto::DeviceAdded::Disk(n) => format!("{at} disk {} added", n.as_str()),
            nasprobe_proto::DeviceAdded::Nic(n) => format!("{at} NIC {} added", n.as_str()),
        },
        Event::KernelMessage(m) => format!("{at} kernel: {}", m.text.as_str()),
        Event::Connections(c) => format!("{at} TCP connections of {} processes", c.procs.len()),
        Event::OpenFiles(o) => format!("{at} open files of {} processes", o.procs.len()),
        Event::Shaping(s) => format!("{at} traffic control caps {} NICs", s.nics.len()),
        Event::ExitWatch(w) => format!(
            "{at} agent finds exits by {}{}",
            match w.source {
                nasprobe_proto::ExitSeen::Kernel => "the kernel's process connector",
                nasprobe_proto::ExitSeen::Scan => "scanning /proc (no exit status)",
            },
            if w.dropped > 0 {
                format!(", {} connector overruns", w.dropped)
            } else {
                String::new()
            }
        ),
    }
}

fn exit_line(
    at: &str,
    x: &nasprobe_proto::ProcessExit,
    st: Option<&nasprobe_proto::ExitStatus>,
    cpu_s: f64,
) -> String {
    format!(
        "{at} {} (pid {}) {}, {:.0} s of CPU: {}",
        x.process.comm.as_str(),
        x.process.pid,
        crate::exits::end_text(st, x.lifetime_ms),
        cpu_s,
        x.process.cmdline.as_str()
    )
}

/// Groups a host's events into markers: never drops one, merges those that share a pixel.
/// `long`: the window is summarised (`Options::step_ms`), a marker's text gives one line per
/// group of alike events in its pixels ([`crate::report::host_groups`]) with the count, so a
/// crash loop's thousand exits cost a line, not a thousand.
pub(crate) fn markers(data: &HostData, ax: &TimeAxis, long: bool) -> Vec<Marker> {
    // Within a column the strongest kind gives the marker its colour.
    let rank = |c: &str| match c {
        "ev-exit" => 0,
        "ev-link" => 1,
        "ev-agent" => 2,
        "ev-dev" => 3,
        _ => 4,
    };
    let mut groups: BTreeMap<i64, Marker> = BTreeMap::new();
    let mut alike: BTreeMap<(i64, crate::events::groups::GroupKey), Alike> = BTreeMap::new();
    for e in data.events.iter().filter(|e| !e.is_measurement()) {
        let ev = e.event();
        let class = event_class(&ev);
        let width = if long { LONG_MARKER_PX } else { 3.0 } * ax.px;
        let col = (ax.x(e.time_ms as f64) / width).round() as i64;
        let m = groups.entry(col).or_insert_with(|| Marker {
            t: e.time_ms as f64,
            class,
            texts: Vec::new(),
            n: 0,
        });
        if rank(class) < rank(m.class) {
            m.class = class;
            m.t = e.time_ms as f64;
        }
        m.n += 1;
        let text = || describe(e.time_ms, &ev, event_cpu_s(data, e.instance, &ev));
        if !long {
            m.texts.push(text());
            continue;
        }
        alike
            .entry((col, crate::events::groups::group_key(&ev)))
            .and_modify(|a| {
                a.n += 1;
                a.last_ms = e.time_ms;
            })
            .or_insert_with(|| Alike {
                n: 1,
                first: text(),
                last_ms: e.time_ms,
            });
    }
    for ((col, _), a) in alike {
        let Some(m) = groups.get_mut(&col) else {
            continue;
        };
        m.texts.push(if a.n == 1 {
            a.first
        } else {
            format!(
                "{} alike events up to {}; the first: {}",
                a.n,
                when(a.last_ms),
                a.first
            )
        });
    }
    groups.into_values().collect()
}

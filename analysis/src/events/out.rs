//! One event as `events[]` lists it: its kind, process or device and a detail in words.

use nasprobe_proto::{Event, ExitSeen};

use crate::report::EventOut;
use crate::time::rfc3339;
use crate::vocab::round2;

pub(crate) fn event_out(
    host: &str,
    time_ms: u64,
    e: &Event,
    cpu_s: impl Fn(u64) -> f64,
) -> EventOut {
    let mut o = EventOut {
        host: host.to_string(),
        at: rfc3339(time_ms),
        kind: e.kind(),
        pid: None,
        process: None,
        cmdline: None,
        lifetime_s: None,
        cpu_s: None,
        device: None,
        detail: None,
        exit_code: None,
        signal: None,
        core_dumped: None,
        oom_killed: None,
        exit_seen: None,
    };
    if let Some((x, st)) = e.as_exit() {
        o.pid = Some(x.process.pid);
        o.process = Some(x.process.comm.as_str().into());
        o.cmdline = Some(x.process.cmdline.as_str().into());
        o.lifetime_s = Some(round2(x.lifetime_ms as f64 / 1000.0));
        o.cpu_s = Some(round2(cpu_s(x.cpu_ticks)));
        o.detail = Some(crate::exits::end_text(st, x.lifetime_ms));
        o.exit_code = st.and_then(|s| s.code);
        o.signal = st.and_then(|s| s.signal).map(crate::exits::signal_text);
        o.core_dumped = Some(st.is_some_and(|s| s.core_dumped));
        o.oom_killed = Some(st.is_some_and(|s| s.oom_killed));
        o.exit_seen = Some(st.map_or(ExitSeen::Scan, |s| s.seen).name());
        return o;
    }
    match e {
        Event::ProcessStart(p) => {
            o.pid = Some(p.pid);
            o.process = Some(p.comm.as_str().into());
            o.cmdline = Some(p.cmdline.as_str().into());
        }
        Event::ProcessExit(_)
        | Event::ProcessEnd(_)
        | Event::Connections(_)
        | Event::OpenFiles(_)
        | Event::Shaping(_) => {}
        Event::KernelMessage(m) => {
            o.pid = m.pid;
            o.device = m.nic.as_deref().map(str::to_string);
            o.detail = Some(if m.suppressed > 0 {
                format!(
                    "{} ({} similar kernel lines left out before)",
                    m.text, m.suppressed
                )
            } else {
                m.text.to_string()
            });
        }
        Event::ExitWatch(w) => {
            o.detail = Some(format!(
                "exits seen by {}{}",
                match w.source {
                    ExitSeen::Kernel => "the kernel's process connector (with status)",
                    ExitSeen::Scan => "scanning /proc (without status)",
                },
                if w.dropped > 0 {
                    format!(
                        "; {} connector overruns (exits in them seen by the scan)",
                        w.dropped
                    )
                } else {
                    String::new()
                }
            ));
        }
        Event::LinkChange(l) => {
            o.device = Some(l.nic.as_str().into());
            o.detail = Some(format!(
                "{} {} Mb/s {} mtu {}",
                if l.up { "up" } else { "down" },
                l.speed_mbit,
                match l.full_duplex {
                    Some(true) => "full duplex",
                    Some(false) => "half duplex",
                    None => "duplex unknown",
                },
                l.mtu
            ));
        }
        Event::AgentStart(a) => {
            o.detail = Some(format!(
                "agent {} instance {:016x}, interval {} ms",
                a.agent_version, a.instance_id, a.interval_ms
            ));
        }
        Event::DeviceAdded(d) => {
            o.device = Some(match d {
                nasprobe_proto::DeviceAdded::Disk(n) | nasprobe_proto::DeviceAdded::Nic(n) => {
                    n.as_str().into()
                }
            });
        }
    }
    o
}

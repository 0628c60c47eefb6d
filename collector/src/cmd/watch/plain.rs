//! The plain output of `watch` (no terminal, or `--plain`): one line per host per second and
//! the verdict every 10 s; and what the TUI shares: the texts (banner, status, item, hot
//! thread) and when a view stops.

use std::time::{Duration, Instant};

use nasprobe_analysis::verdict::Resource;

use crate::live_verdict::{Banner, LiveVerdict};
use crate::model;
use crate::net::conn::{HostLive, Live, Status};

/// How often the plain output repeats the verdict.
const PLAIN_VERDICT_EVERY: u64 = 10;

pub(super) fn plain_loop(
    live: &Live,
    verdict: &LiveVerdict,
    duration: Option<Duration>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let start = Instant::now();
    let mut tick: u64 = 0;
    while !stop_requested(start, duration) {
        tick += 1;
        let next = start + Duration::from_secs(tick);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut out = std::io::stdout().lock();
        let mut lines: Vec<String> = live.snapshot().iter().map(plain_line).collect();
        if let Some(e) = live.store_error.lock().ok().and_then(|e| e.clone()) {
            lines.push(format!("store: {e}"));
        }
        if tick.is_multiple_of(PLAIN_VERDICT_EVERY) {
            lines.extend(banner_lines(verdict.latest()).into_iter().map(|(l, _)| l));
        }
        for l in lines {
            if writeln!(out, "{l}").is_err() {
                return Ok(()); // stdout closed (a pipe into head): stop quietly
            }
        }
        out.flush().ok();
    }
    Ok(())
}

/// The banner as text lines, each with whether it names a wall (shown in red).
pub(super) fn banner_lines(b: Option<Result<Banner, String>>) -> Vec<(String, bool)> {
    match b {
        None => vec![("verdict: gathering data (nothing stored yet)".into(), false)],
        Some(Err(e)) => vec![(format!("verdict: cannot analyse the store: {e}"), false)],
        Some(Ok(b)) => {
            let mut v = Vec::new();
            let gathering = b
                .gathering_s
                .map(|s| {
                    format!(
                        " (gathering data: {s} s of {} s)",
                        crate::live_verdict::WINDOW.as_secs()
                    )
                })
                .unwrap_or_default();
            v.push((
                format!("{}{gathering}", b.verdict),
                b.resource != Resource::None,
            ));
            if let Some(f) = &b.flow {
                v.push((format!("flow: {f}"), false));
            }
            for a in &b.alerts {
                v.push((format!("alert firing: {a}"), true));
            }
            if b.resource == Resource::None {
                if let Some(r) = b.ruled_out.first() {
                    let more = b.ruled_out.len() - 1;
                    let more = if more > 0 {
                        format!(" (+{more} more: v)")
                    } else {
                        String::new()
                    };
                    v.push((format!("ruled out: {r}{more}"), false));
                }
            } else if let Some(e) = b
                .evidence
                .iter()
                .find(|e| !e.starts_with("flow "))
                .or(b.evidence.first())
            {
                // The flow has its line above; the first sentence about the wall itself.
                v.push((format!("because: {e}"), false));
            }
            v
        }
    }
}

pub(super) fn status_text(h: &HostLive) -> String {
    let mut s = status_text_conn(h);
    let d = h.dropped;
    if d.samples + d.events + d.devices > 0 {
        // A flood is one line, however many records it had.
        s = format!(
            "flood: {} samples, {} events, {} device announcements dropped (over the \
             collector's caps); {s}",
            d.samples, d.events, d.devices
        );
    }
    match &h.bad {
        Some(b) if h.rejected > 0 => format!("BAD: {} rejected, last: {b}; {s}", h.rejected),
        Some(b) => format!("BAD: {b}; {s}"),
        None => s,
    }
}

fn status_text_conn(h: &HostLive) -> String {
    match &h.status {
        Status::Connecting => "connecting".into(),
        Status::Connected => match &h.gap {
            Some(g) => format!("connected, gap: {g}"),
            None => "connected".into(),
        },
        Status::Reconnecting { error, retry_in } => {
            format!("reconnecting in {:.0}s ({error})", retry_in.as_secs_f64())
        }
    }
}

/// One line for one host: status, CPU, hottest thread, busiest disk and NIC, memory. (Every
/// wire string in it was made safe on arrival; the line is passed through the sanitizer once
/// more so that nothing else can reach the terminal either.)
pub(super) fn plain_line(h: &HostLive) -> String {
    nasprobe_proto::sanitize::text(&plain_line_raw(h))
}

fn plain_line_raw(h: &HostLive) -> String {
    let mut s = format!("{} [{}]", h.name, status_text(h));
    let (Some(hello), Some((seq, _, smp))) = (&h.hello, &h.last) else {
        return s + " no sample yet";
    };
    let cores: Vec<String> = smp
        .cpus
        .iter()
        .map(|c| model::cpu_busy(c).map_or("-".into(), |b| format!("{:.0}", b * 100.0)))
        .collect();
    s += &format!(
        " seq {seq} cpu {}% cores [{}]",
        model::cpu_busy(&smp.cpu_total).map_or("-".into(), |b| format!("{:.0}", b * 100.0)),
        cores.join(" ")
    );
    if let Some(t) = model::hottest_thread(hello, smp) {
        s += &format!(" hot {}", hot_text(&t));
    }
    if let Some(d) = smp
        .disks
        .iter()
        .filter_map(|d| model::disk_rate(hello, smp, d))
        .max_by(|a, b| a.figures.util.total_cmp(&b.figures.util))
    {
        s += &format!(
            " | disk {} {:.0}% {:.1}ms {:.1}MB/s",
            d.name,
            d.figures.util * 100.0,
            d.figures.await_ms.unwrap_or(0.0),
            (d.figures.read_bps + d.figures.write_bps) / 1e6
        );
    }
    if let Some(n) = smp
        .nics
        .iter()
        .filter_map(|n| model::nic_rate(hello, smp, n))
        .max_by(|a, b| {
            (a.figures.rx_bps.max(a.figures.tx_bps))
                .total_cmp(&b.figures.rx_bps.max(b.figures.tx_bps))
        })
    {
        s += &format!(
            " | nic {} rx {:.1} tx {:.1} MB/s{}",
            n.name,
            n.figures.rx_bps / 1e6,
            n.figures.tx_bps / 1e6,
            n.figures.util.map_or(String::new(), |u| format!(
                " {:.0}% of {} Mbit/s",
                u * 100.0,
                n.speed_mbit
            ))
        );
        if let Some(cap) = super::figures::cap_text(hello, h.shaping.as_ref(), &n.name) {
            s += &format!(" {cap}");
        }
    }
    if let Some(m) = model::mem_rate(smp) {
        s += &format!(
            " | mem {:.0}/{:.0}MiB swap {:.0}MiB",
            m.used_mib, m.total_mib, m.swap_used_mib
        );
    }
    if let Some(i) = item_text(h) {
        s += &format!(" | item {i}");
    }
    s
}

/// An item older than this (against the newest sample) is gone: the agent resends an
/// unchanged list every 10 s while the file stays open.
const ITEM_STALE_MS: u64 = 15_000;

/// The file the host's transfer is on now: `dd [4242] writing /mnt/a.img 1.20/5.00 GB` (the
/// first file of the first process that is no server's database: the agent sends the busiest
/// process first and, within a process, the files that moved first). Sanitized again for the terminal.
pub(super) fn item_text(h: &HostLive) -> Option<String> {
    let (at, files) = h.files.as_ref()?;
    if h.last.as_ref().is_some_and(|l| l.1 > at + ITEM_STALE_MS) {
        return None;
    }
    // A server's own database (Samba's `locking.tdb` beside the file smbd writes) is never
    // the item: the analysis's rule, by name (one record has no progress to judge).
    let (p, f) = files.procs.iter().find_map(|p| {
        p.files
            .iter()
            .find(|f| !nasprobe_analysis::transfers::is_server_database(f.path.as_str()))
            .map(|f| (p, f))
    })?;
    let verb = match f.mode {
        nasprobe_proto::FileMode::Read => "reading",
        nasprobe_proto::FileMode::Write => "writing",
        nasprobe_proto::FileMode::ReadWrite => "on",
    };
    Some(nasprobe_proto::sanitize::text(&format!(
        "{} [{}] {verb} {} {:.2}/{:.2} GB",
        p.comm,
        p.pid,
        f.path,
        f.pos as f64 / 1e9,
        f.size as f64 / 1e9
    )))
}

/// `process/thread [tid] 97% of a core`; the thread's name only when it differs from the
/// process's (`btrfs [812] 97% of a core`).
pub(super) fn hot_text(t: &model::HotThread) -> String {
    let who = if t.thread == t.process || t.thread.is_empty() {
        t.process.clone()
    } else {
        format!("{}/{}", t.process, t.thread)
    };
    format!(
        "{who} [{}] {:.0}% of a core",
        t.tid,
        t.core_fraction * 100.0
    )
}

/// A view's loop ends: on SIGINT/SIGTERM, or once `duration` has passed since `start`.
pub(super) fn stop_requested(start: Instant, duration: Option<Duration>) -> bool {
    crate::signals::stop_requested() || duration.is_some_and(|d| start.elapsed() >= d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_item_is_shown_escaped_and_dropped_when_stale() {
        let live = crate::net::conn::Live::new(&[crate::hosts::HostSpec {
            name: "nas".into(),
            addr: "127.0.0.1:1".into(),
            token_file: None,
        }]);
        let mut h = live.snapshot().remove(0);
        assert_eq!(item_text(&h), None);
        let nasprobe_proto::Event::OpenFiles(mut f) = crate::testing::open_files_event(42) else {
            unreachable!()
        };
        f.procs[0].files[0].path = "/v/\u{1b}]0;pwned\u{7}.mkv".try_into().unwrap();
        h.files = Some((1_000_000, f));
        let t = item_text(&h).unwrap();
        assert_eq!(t, "cp [42] reading /v/␛]0;pwned␇.mkv 2.00/5.00 GB");
        h.hello = Some(nasprobe_proto::Hello::default());
        h.last = Some((8, 1_000_500, Box::default()));
        assert!(
            plain_line(&h).contains("| item cp [42] reading /v/␛"),
            "{}",
            plain_line(&h)
        );
        h.last = Some((9, 1_000_000 + ITEM_STALE_MS + 1, Box::default()));
        assert_eq!(item_text(&h), None, "a stale item is gone");
    }

    /// smbd's `locking.tdb` listed before the file it writes: the file is the item.
    #[test]
    fn a_server_database_listed_first_is_not_the_item() {
        let live = crate::net::conn::Live::new(&[crate::hosts::HostSpec {
            name: "nas".into(),
            addr: "127.0.0.1:1".into(),
            token_file: None,
        }]);
        let mut h = live.snapshot().remove(0);
        let nasprobe_proto::Event::OpenFiles(mut f) = crate::testing::open_files_event(42) else {
            unreachable!()
        };
        let mut db = f.procs[0].files[0].clone();
        db.path = "/run/samba/locking.tdb".try_into().unwrap();
        f.procs[0].files.insert(0, db).unwrap();
        f.procs[0].files[1].path = "/share/a.mkv".try_into().unwrap();
        h.files = Some((1_000_000, f));
        assert_eq!(
            item_text(&h).unwrap(),
            "cp [42] reading /share/a.mkv 2.00/5.00 GB"
        );
    }
}

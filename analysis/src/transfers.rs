//! The item a copy is on, from the agents' `OpenFiles` records: per host, the files the
//! transfer's processes had open in the last minute of the window with their progress
//! (`transfers[]`), and the periods where a process's own progress through a file fell under
//! [`STALL_MB_S`] for at least [`STALL_MIN_MS`] (`stalls[]`, with that file).
//!
//! A file counts as a transfer's only when its position moved at some point of the window (a
//! log or database held open and idle is not a stalled copy). Its progress between two records
//! is the position's difference over their time; a position that went back (a rewind, a new
//! file under the same descriptor and name) starts over. A file written with `pwrite` (Samba,
//! which writes at the offsets of the client's requests) keeps its position: when only its size
//! moves, the size is its progress.
//!
//! nasprobe's own files ([`is_own_file`]: its store and WAL, the agent's log) are never a
//! transfer's. The rest is `is_item`, the one rule of what a copy's item is: the copied file,
//! whose own progress carries a real share ([`ITEM_MIN_SHARE`]) of the bytes its host moved
//! meanwhile, read or written front to back. A database the server updates a few bytes at a
//! time (Samba's `*.tdb`, Netatalk's CNID database, an indexer's) is none, whichever process
//! holds it, even the one carrying the flow. A crawl needs an item that is also a transfer's: a
//! file whose progress reached [`TRANSFER_MIN_MB_S`] between two records at some point of the
//! window, or one of a process whose connection carried the flow.

use std::collections::BTreeMap;

use nasprobe_proto::{Event, FileMode};
use serde::Serialize;

use crate::input::HostData;
use crate::series::HostSeries;
use crate::time::rfc3339;
use crate::vocab::{MB, round2};

/// Under this, a copy crawls (the seed's "when a copy falls under 5 MB/s").
pub const STALL_MB_S: f64 = 5.0;
/// A crawl shorter than this is not reported.
pub const STALL_MIN_MS: u64 = 5_000;
/// `transfers[]` covers this much before the window's end.
pub const LAST_MS: u64 = 60_000;

#[derive(Debug, Clone, Serialize)]
pub struct Transfer {
    pub host: String,
    pub pid: u32,
    pub process: String,
    pub path: String,
    /// `read`, `write` or `read_write`.
    pub mode: &'static str,
    pub position_bytes: u64,
    pub size_bytes: u64,
    /// The position's progress over the last minute (null with a single record).
    pub mb_s: Option<f64>,
    /// When it was last seen open.
    pub seen: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stall {
    pub host: String,
    pub from: String,
    pub to: String,
    pub seconds: f64,
    /// The process's progress through the file over the period.
    pub mb_s: f64,
    /// The file it was on.
    pub item: String,
    pub pid: u32,
    pub process: String,
    pub position_bytes: u64,
    pub size_bytes: u64,
    /// `read`, `write` or `read_write`.
    pub mode: &'static str,
}

impl Transfer {
    /// "cp \[4242\] writing /share/a.mkv: 1.20 GB of 5.00 GB, 38.2 MB/s" (paths as sanitized
    /// at decoding; the HTML escapes it again).
    pub fn line(&self) -> String {
        let verb = match self.mode {
            "read" => "reading",
            "write" => "writing",
            _ => "on",
        };
        format!(
            "{} [{}] {verb} {}: {:.2} GB of {:.2} GB{}",
            self.process,
            self.pid,
            self.path,
            self.position_bytes as f64 / 1e9,
            self.size_bytes as f64 / 1e9,
            self.mb_s
                .map(|r| format!(", {r:.1} MB/s"))
                .unwrap_or_default()
        )
    }
}

impl Stall {
    /// "2026-12-01 12:00:05 .. 12:00:31 (26 s): 2.1 MB/s on /share/a.mkv (dd \[4242\])".
    pub fn line(&self) -> String {
        format!(
            "{} .. {} ({}): {:.1} MB/s on {} ({} [{}])",
            self.from.replace('T', " ").replace('Z', ""),
            self.to.get(11..19).unwrap_or(&self.to),
            crate::time::dur(self.seconds),
            self.mb_s,
            self.item,
            self.process,
            self.pid
        )
    }
}

/// nasprobe's own processes: the collector and the agent.
pub const OWN_PROCESSES: [&str; 2] = ["nasprobe", "nasprobe-agent"];
/// The collector's store under its default name, with SQLite's WAL and shared-memory files.
pub const OWN_FILES: [&str; 3] = ["nasprobe.db", "nasprobe.db-wal", "nasprobe.db-shm"];

/// Whether the file `path` open in process `comm` is nasprobe's own (the collector's store and
/// its WAL, the agent's log, anything nasprobe itself has open): never the item of a transfer.
pub fn is_own_file(comm: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    OWN_PROCESSES.contains(&comm) || OWN_FILES.contains(&name)
}

/// (time_ms, pos, size) of one record of a file.
type Point = (u64, u64, u64);

/// One file of one process over the window, its points in time order.
struct Track {
    process: String,
    mode: FileMode,
    points: Vec<Point>,
    /// The position never moved but the size did: progress is the size.
    by_size: bool,
}

impl Track {
    /// The progress of a point: its position, or its size (see `by_size`).
    fn at(&self, p: &Point) -> u64 {
        if self.by_size { p.2 } else { p.1 }
    }
}

fn tracks(h: &HostData, from: u64, to: u64) -> BTreeMap<(u32, String), Track> {
    let mut out: BTreeMap<(u32, String), Track> = BTreeMap::new();
    for e in h.events_between(from, to) {
        if !e.is_open_files() {
            continue;
        }
        let Event::OpenFiles(o) = e.event() else {
            continue;
        };
        for p in &o.procs {
            for f in p
                .files
                .iter()
                .filter(|f| !is_own_file(p.comm.as_str(), f.path.as_str()))
            {
                let t = out
                    .entry((p.pid, f.path.to_string()))
                    .or_insert_with(|| Track {
                        process: p.comm.to_string(),
                        mode: f.mode,
                        points: Vec::new(),
                        by_size: false,
                    });
                t.mode = f.mode;
                t.points.push((e.time_ms, f.pos, f.size));
            }
        }
    }
    for t in out.values_mut() {
        t.points.sort_by_key(|p| p.0);
        let changed = |f: fn(&Point) -> u64| t.points.windows(2).any(|w| f(&w[1]) != f(&w[0]));
        t.by_size = !changed(|p| p.1) && changed(|p| p.2);
    }
    out
}

fn moved(t: &Track) -> bool {
    t.points.windows(2).any(|w| t.at(&w[1]) != t.at(&w[0]))
}

/// A file moving this fast between two records is a transfer's (a copy crawling at 3 MB/s
/// through a throttled disk is one); a logger or a database's WAL writes KB/s.
pub const TRANSFER_MIN_MB_S: f64 = 1.0;

/// The file moved at transfer rates ([`TRANSFER_MIN_MB_S`] or more) between two of its records.
fn fast(t: &Track) -> bool {
    t.points.windows(2).any(|w| {
        let (a, b) = (t.at(&w[0]), t.at(&w[1]));
        b > a && mb_s(b - a, w[1].0.saturating_sub(w[0].0)) >= TRANSFER_MIN_MB_S
    })
}

/// Whether a file of process `pid` on host `h` moved at transfer rates in `[from, to]`.
pub(crate) fn moved_fast(h: &HostData, pid: u32, from: u64, to: u64) -> bool {
    tracks(h, from, to)
        .iter()
        .any(|((p, _), t)| *p == pid && fast(t))
}

/// A file is a copy's item only when its progress is at least this share of the bytes its host
/// moved through its busiest NIC while it was seen: one of eight files copied side by side
/// (robocopy's /MT:8) is one; a log the server appends to during the copy is not.
pub const ITEM_MIN_SHARE: f64 = 0.1;
/// A host moving fewer bytes than this per second through its NICs has no network copy to take
/// a share of (a local `cp`, a disk test): the file's own progress is the evidence.
const ITEM_NET_MIN_BPS: f64 = crate::verdict::walls::FLOW_MIN_BPS;
/// A file whose progress went back in more than this share of the steps between its records is
/// read or written at random places (a database's pages), not copied front to back: never an
/// item. A copy that starts a file over (a rewind, a new file under the same name) goes back
/// once.
pub const ITEM_MAX_BACK_SHARE: f64 = 0.25;
/// A file that progresses by its size (its position still: pwrite) and grew in fewer than this
/// share of the steps between its records, while its host moved a network copy, is a database
/// that allocates ahead in jumps (Samba's `locking.tdb` grows by a quarter at a time: 0.5 to
/// 1.4 MB in 6 of 40 steps during 3,000 small files over smbclient), not a file being written
/// by a copy: that one grows at every step it is seen.
pub const ITEM_MIN_GROWING_SHARE: f64 = 0.5;
/// ... judged only over this many steps or more.
const ITEM_GROWING_MIN_STEPS: usize = 4;
/// The name endings of servers' own databases, written a few bytes at a time beside the copy
/// and never its item, whichever process holds them: Samba's trivial and LDAP databases
/// (`locking.tdb`, `smbXsrv_open_global.tdb`, `sam.ldb`), Netatalk's CNID database
/// (`.AppleDB/cnid2.db` and its logs), SQLite's journals of indexers and media servers
/// (`wdmcserverd`'s, Plex's, Synology's `@eaDir` databases).
pub const SERVER_DATABASES: [&str; 6] = [
    ".tdb",
    ".ldb",
    "/cnid2.db",
    ".db-wal",
    ".db-journal",
    ".db-shm",
];
/// The folders whose files are servers' own databases (Netatalk's CNID folder).
pub const SERVER_DATABASE_DIRS: [&str; 1] = ["/.AppleDB/"];

/// Whether `path` is a server's own database ([`SERVER_DATABASES`], [`SERVER_DATABASE_DIRS`]).
pub fn is_server_database(path: &str) -> bool {
    SERVER_DATABASES.iter().any(|e| path.ends_with(e))
        || SERVER_DATABASE_DIRS.iter().any(|d| path.contains(d))
}

/// Whether `t`, the file `path` of host `s`, is a copy's item: the one rule. Not a server's
/// database ([`is_server_database`]); it moved, front to back ([`ITEM_MAX_BACK_SHARE`]); and
/// while its host moved a network copy (over [`ITEM_NET_MIN_BPS`]), its progress is at least
/// [`ITEM_MIN_SHARE`] of those bytes and, when that progress is its size, it grew at most steps
/// ([`ITEM_MIN_GROWING_SHARE`]).
fn is_item(path: &str, t: &Track, s: Option<&HostSeries>) -> bool {
    if is_server_database(path) || !moved(t) {
        return false;
    }
    let steps = t.points.len().saturating_sub(1);
    let count = |f: fn(u64, u64) -> bool| {
        t.points
            .windows(2)
            .filter(|w| f(t.at(&w[0]), t.at(&w[1])))
            .count() as f64
    };
    if count(|a, b| b < a) > steps as f64 * ITEM_MAX_BACK_SHARE {
        return false;
    }
    let (Some(first), Some(last)) = (t.points.first(), t.points.last()) else {
        return false;
    };
    let net = s.map_or(0.0, |s| net_bytes(s, first.0, last.0));
    let secs = last.0.saturating_sub(first.0) as f64 / 1000.0;
    if net <= ITEM_NET_MIN_BPS * secs {
        return true;
    }
    if t.by_size
        && steps >= ITEM_GROWING_MIN_STEPS
        && count(|a, b| b > a) < steps as f64 * ITEM_MIN_GROWING_SHARE
    {
        return false;
    }
    let progress: u64 = t
        .points
        .windows(2)
        .map(|w| t.at(&w[1]).saturating_sub(t.at(&w[0])))
        .sum();
    progress as f64 >= ITEM_MIN_SHARE * net
}

/// The bytes host `s` moved through its busiest physical NIC (the larger way) over
/// `(from, to]`.
fn net_bytes(s: &HostSeries, from: u64, to: u64) -> f64 {
    s.nics
        .iter()
        .filter(|(name, n)| !crate::verdict::flow::is_virtual_nic(name) && !n.is_bond)
        .map(|(_, n)| {
            let way = |v: &[f64]| -> f64 {
                s.points
                    .iter()
                    .zip(v)
                    .filter(|(p, _)| p.time_ms > from && p.time_ms <= to)
                    .map(|(p, b)| {
                        if b.is_finite() {
                            b * p.interval_ms / 1000.0
                        } else {
                            0.0
                        }
                    })
                    .sum()
            };
            way(&n.rx_bps).max(way(&n.tx_bps))
        })
        .fold(0.0, f64::max)
}

fn mb_s(bytes: u64, ms: u64) -> f64 {
    if ms == 0 {
        return 0.0;
    }
    round2(bytes as f64 / MB / (ms as f64 / 1000.0))
}

/// `transfers[]` and `stalls[]` of `hosts` over `[from, to]`; `series` are the hosts' series
/// (their network bytes, for `is_item`), `carriers` the processes (host, pid) whose
/// connections carried the flow.
pub fn build(
    hosts: &[HostData],
    series: &[HostSeries],
    from: u64,
    to: u64,
    carriers: &[(String, u32)],
) -> (Vec<Transfer>, Vec<Stall>) {
    let mut transfers = Vec::new();
    let mut stalls = Vec::new();
    for h in hosts {
        let all = tracks(h, from, to);
        let s = series.iter().find(|s| s.name == h.name);
        for ((pid, path), t) in &all {
            let item = is_item(path, t, s);
            let recent: Vec<_> = t
                .points
                .iter()
                .filter(|p| p.0 + LAST_MS >= to)
                .copied()
                .collect();
            if let (Some(first), Some(last)) = (recent.first(), recent.last())
                && (item || (t.points.len() == 1 && last.1 > 0))
            {
                let (p0, p1) = (t.at(first), t.at(last));
                let rate = (recent.len() > 1 && p1 >= p0).then(|| mb_s(p1 - p0, last.0 - first.0));
                transfers.push(Transfer {
                    host: h.name.clone(),
                    pid: *pid,
                    process: t.process.to_string(),
                    path: path.to_string(),
                    mode: t.mode.name(),
                    position_bytes: last.1,
                    size_bytes: last.2,
                    mb_s: rate,
                    seen: rfc3339(last.0),
                });
            }
            let carrier = carriers.iter().any(|(n, p)| *n == h.name && p == pid);
            if item && (fast(t) || carrier) {
                stalls.extend(crawls(&h.name, *pid, path, t));
            }
        }
    }
    transfers.sort_by(|a, b| {
        (b.mb_s.unwrap_or(0.0), b.position_bytes)
            .partial_cmp(&(a.mb_s.unwrap_or(0.0), a.position_bytes))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    (transfers, dedupe(stalls))
}

/// The periods of `t` under STALL_MB_S lasting STALL_MIN_MS or more.
fn crawls(host: &str, pid: u32, path: &str, t: &Track) -> Vec<Stall> {
    let mut out = Vec::new();
    // The run being built: its first and last point.
    let mut run: Option<(Point, Point)> = None;
    let close = |run: Option<(Point, Point)>, out: &mut Vec<Stall>| {
        if let Some((a, b)) = run
            && b.0 - a.0 >= STALL_MIN_MS
        {
            out.push(Stall {
                host: host.to_string(),
                from: rfc3339(a.0),
                to: rfc3339(b.0),
                seconds: round2((b.0 - a.0) as f64 / 1000.0),
                mb_s: mb_s(t.at(&b) - t.at(&a), b.0 - a.0),
                item: path.to_string(),
                pid,
                process: t.process.to_string(),
                position_bytes: b.1,
                size_bytes: b.2,
                mode: t.mode.name(),
            });
        }
    };
    for w in t.points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (pa, pb) = (t.at(&a), t.at(&b));
        let slow = pb >= pa && b.0 > a.0 && mb_s(pb - pa, b.0 - a.0) < STALL_MB_S;
        if slow {
            run = Some((run.map_or(a, |r| r.0), b));
        } else {
            close(run.take(), &mut out);
        }
    }
    close(run, &mut out);
    out
}

/// One stall per host, process and period: a `cp` crawls through the file it reads and the
/// one it writes at once; the written one is kept (then the longer).
fn dedupe(mut stalls: Vec<Stall>) -> Vec<Stall> {
    stalls.sort_by(|a, b| {
        (&a.host, a.pid, &a.from, std::cmp::Reverse(&a.to)).cmp(&(
            &b.host,
            b.pid,
            &b.from,
            std::cmp::Reverse(&b.to),
        ))
    });
    let mut out: Vec<Stall> = Vec::new();
    for s in stalls {
        if let Some(k) = out
            .iter()
            .position(|o| o.host == s.host && o.pid == s.pid && o.from <= s.to && s.from <= o.to)
        {
            let rank = |s: &Stall| (s.mode == "write", s.seconds);
            if rank(&s) > rank(&out[k]) {
                out[k] = s;
            }
            continue;
        }
        out.push(s);
    }
    out.sort_by(|a, b| (&a.from, &a.host).cmp(&(&b.from, &b.host)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::TimedEvent;
    use nasprobe_proto::{OpenFile, OpenFiles, ProcFiles};

    const T0: u64 = 1_764_590_400_000;

    fn ev(t_s: u64, pid: u32, comm: &str, files: &[(&str, u64, FileMode)]) -> TimedEvent {
        let files = files
            .iter()
            .enumerate()
            .map(|(k, (path, pos, mode))| OpenFile {
                fd: 3 + k as u32,
                path: (*path).try_into().unwrap(),
                pos: *pos,
                size: (*pos).max(1_000),
                mode: *mode,
            })
            .collect::<Vec<_>>();
        let mut procs = heapless::Vec::new();
        procs
            .push(ProcFiles {
                pid,
                comm: comm.try_into().unwrap(),
                files: heapless::Vec::from_slice(&files).unwrap(),
                more: 0,
            })
            .unwrap();
        TimedEvent::new(
            T0 + t_s * 1000,
            0,
            t_s,
            &Event::OpenFiles(OpenFiles { procs }),
        )
    }

    /// dd at 20 MB/s for 20 s, then 1 MB/s for 20 s; a log held open and idle by syslogd.
    fn host() -> HostData {
        let mut h = HostData {
            name: "nas".into(),
            ..Default::default()
        };
        let mut pos = 0u64;
        for t in (0..=40).step_by(2) {
            h.events
                .push(ev(t, 42, "dd", &[("/mnt/<big>.img", pos, FileMode::Write)]));
            h.events.push(ev(
                t,
                7,
                "syslogd",
                &[("/var/log/messages", 5_000, FileMode::Write)],
            ));
            pos += if t < 20 { 40_000_000 } else { 2_000_000 };
        }
        h
    }

    #[test]
    fn a_crawl_is_found_with_its_item_and_the_idle_log_is_not() {
        let (tr, st) = build(&[host()], &[], T0, T0 + 40_000, &[]);
        assert_eq!(tr.len(), 1, "{tr:?}");
        let t = &tr[0];
        assert_eq!(
            (t.pid, t.path.as_str(), t.mode),
            (42, "/mnt/<big>.img", "write")
        );
        // The last minute is the whole window: 402 MB... in 40 s.
        assert_eq!(t.position_bytes, 400_000_000 + 20_000_000);
        assert!((t.mb_s.unwrap() - 10.5).abs() < 0.01, "{t:?}");
        assert_eq!(st.len(), 1, "{st:?}");
        let s = &st[0];
        assert_eq!(
            (s.item.as_str(), s.pid, s.process.as_str()),
            ("/mnt/<big>.img", 42, "dd")
        );
        assert_eq!((s.from.as_str(), s.seconds), ("2025-12-01T12:00:20Z", 20.0));
        assert!((s.mb_s - 1.0).abs() < 0.01, "{s:?}");
        assert!(
            s.line().contains("1.0 MB/s on /mnt/<big>.img (dd [42])"),
            "{}",
            s.line()
        );
    }

    #[test]
    fn a_short_dip_is_no_crawl_and_a_cp_crawls_once_on_what_it_writes() {
        let mut h = HostData {
            name: "nas".into(),
            ..Default::default()
        };
        // 4 s slow in the middle: under STALL_MIN_MS.
        let mut pos = 0u64;
        for t in (0..=20).step_by(2) {
            h.events.push(ev(
                t,
                9,
                "cp",
                &[("/a", pos, FileMode::Read), ("/b", pos, FileMode::Write)],
            ));
            pos += if (8..12).contains(&t) {
                1_000_000
            } else {
                50_000_000
            };
        }
        let (_, st) = build(&[h.clone()], &[], T0, T0 + 20_000, &[]);
        assert!(st.is_empty(), "{st:?}");
        // Then slow for good: one crawl, on the written file.
        for t in (22..=40).step_by(2) {
            h.events.push(ev(
                t,
                9,
                "cp",
                &[("/a", pos, FileMode::Read), ("/b", pos, FileMode::Write)],
            ));
            pos += 1_000_000;
        }
        let (tr, st) = build(&[h], &[], T0, T0 + 40_000, &[]);
        assert_eq!(tr.len(), 2);
        assert_eq!(st.len(), 1, "{st:?}");
        assert_eq!((st[0].item.as_str(), st[0].mode), ("/b", "write"));
    }

    /// Samba writes with pwrite: the position stays 0, the size grows (2 MB/s): that is the
    /// progress.
    #[test]
    fn a_pwrite_writer_progresses_by_its_size() {
        let mut h = HostData {
            name: "nas".into(),
            ..Default::default()
        };
        for t in (0..=20).step_by(2) {
            let mut e = ev(
                t,
                5,
                "smbd",
                &[("/share/x.iso", t * 2_000_000, FileMode::Write)],
            );
            let mut ev = e.event();
            if let Event::OpenFiles(o) = &mut ev {
                o.procs[0].files[0].pos = 0;
            }
            e = TimedEvent::new(e.time_ms, e.instance, e.seq, &ev);
            h.events.push(e);
        }
        let (tr, st) = build(&[h], &[], T0, T0 + 20_000, &[]);
        assert_eq!(tr.len(), 1, "{tr:?}");
        assert_eq!((tr[0].position_bytes, tr[0].size_bytes), (0, 40_000_000));
        assert_eq!(tr[0].mb_s, Some(2.0));
        assert_eq!(st.len(), 1, "{st:?}");
        assert_eq!((st[0].item.as_str(), st[0].mb_s), ("/share/x.iso", 2.0));
    }

    /// The collector's store and the agent's log are nasprobe's own: no transfer, no crawl.
    #[test]
    fn nasprobe_own_files_are_not_the_item() {
        let mut h = HostData {
            name: "desk".into(),
            ..Default::default()
        };
        for t in (0..=20).step_by(2) {
            h.events.push(ev(
                t,
                90,
                "nasprobe",
                &[(
                    "/home/u/.local/share/nasprobe/nasprobe.db-wal",
                    30_000_000 * t,
                    FileMode::Write,
                )],
            ));
            h.events.push(ev(
                t,
                91,
                "nasprobe-agent",
                &[("/tmp/nasprobe-local-1/agent.log", 100 * t, FileMode::Write)],
            ));
            h.events.push(ev(
                t,
                92,
                "sqlite3",
                &[("/srv/nasprobe.db", 30_000_000 * t, FileMode::ReadWrite)],
            ));
        }
        let (tr, st) = build(&[h], &[], T0, T0 + 20_000, &[]);
        assert!(tr.is_empty() && st.is_empty(), "{tr:?} {st:?}");
        assert!(is_own_file("nasprobe", "/x/y"));
        assert!(!is_own_file("cp", "/share/nasprobe.dbx"));
    }

    /// The collector's own database and its WAL, a few KB a second: no crawl.
    #[test]
    fn a_wal_written_a_few_bytes_at_a_time_is_no_crawl() {
        let mut h = HostData {
            name: "desk".into(),
            ..Default::default()
        };
        for t in (0..=60).step_by(2) {
            h.events.push(ev(
                t,
                77,
                "postgres",
                &[
                    ("/var/lib/db/wal", 4_000 * t, FileMode::Write),
                    ("/var/lib/db/base", 100 + t, FileMode::ReadWrite),
                ],
            ));
        }
        let (tr, st) = build(&[h.clone()], &[], T0, T0 + 60_000, &[]);
        assert!(st.is_empty(), "{st:?}");
        assert_eq!(tr.len(), 2, "still listed among the open files: {tr:?}");
        // The same slow writer carrying the flow (its connection sent the most): a crawl.
        let (_, st) = build(&[h], &[], T0, T0 + 60_000, &[("desk".into(), 77)]);
        assert_eq!(st.len(), 1, "{st:?}");
        assert_eq!(st[0].item, "/var/lib/db/wal");
    }

    /// A host's series: `n` points 2 s apart from T0, eth0 receiving `rx_mb_s`.
    fn net(name: &str, n: u64, rx_mb_s: f64) -> HostSeries {
        let mut s = HostSeries {
            name: name.into(),
            ..Default::default()
        };
        let mut nic = crate::series::NicSeries::default();
        for t in 0..n {
            s.points.push(crate::series::Point {
                time_ms: T0 + t * 2_000,
                interval_ms: 2_000.0,
            });
            nic.rx_bps.push(rx_mb_s * MB);
            nic.tx_bps.push(0.0);
        }
        s.nics.insert("eth0".into(), nic);
        s
    }

    /// smbd receiving a copy: the file it writes (by its size, pwrite), and beside it Samba's
    /// databases (`locking.tdb` grown at 0.25 MB/s, `names.tdb` at random places), a database
    /// of another name at random places, one that allocates ahead in jumps (by its size, its
    /// position still) and a log appended at 0.1 MB/s. Only the copied file is an item, whether
    /// the copy runs at 6 MB/s or crawls at 2 MB/s; the rest is never a transfer or a crawl,
    /// though smbd carries the flow.
    #[test]
    fn server_databases_are_never_the_item_whoever_holds_them() {
        for (copy_mb_s, crawl) in [(6.0, false), (2.0, true)] {
            let mut h = HostData {
                name: "nas".into(),
                ..Default::default()
            };
            for t in (0..=40).step_by(2) {
                let random = if (t / 2) % 2 == 0 {
                    9_000_000
                } else {
                    1_000_000
                };
                let jumps = 4_000_000 * (1 + t / 10);
                let mut e = ev(
                    t,
                    5,
                    "smbd",
                    &[
                        ("/share/x.iso", (copy_mb_s * MB) as u64 * t, FileMode::Write),
                        ("/run/samba/locking.tdb", 250_000 * t, FileMode::ReadWrite),
                        ("/var/lib/samba/names.tdb", random, FileMode::ReadWrite),
                        (
                            "/var/lib/idx/pages.dat",
                            random / 2 + t,
                            FileMode::ReadWrite,
                        ),
                        ("/var/lib/app/store.dat", jumps, FileMode::ReadWrite),
                        ("/var/log/samba/log.smbd", 100_000 * t, FileMode::Write),
                    ],
                );
                let mut ev = e.event();
                if let Event::OpenFiles(o) = &mut ev {
                    o.procs[0].files[0].pos = 0;
                    o.procs[0].files[4].pos = 168;
                }
                e = TimedEvent::new(e.time_ms, e.instance, e.seq, &ev);
                h.events.push(e);
            }
            let s = net("nas", 21, copy_mb_s);
            let (tr, st) = build(&[h], &[s], T0, T0 + 40_000, &[("nas".into(), 5)]);
            let paths: Vec<_> = tr.iter().map(|t| t.path.as_str()).collect();
            assert_eq!(paths, ["/share/x.iso"], "at {copy_mb_s} MB/s: {tr:?}");
            let items: Vec<_> = st.iter().map(|s| s.item.as_str()).collect();
            let want: &[&str] = if crawl { &["/share/x.iso"] } else { &[] };
            assert_eq!(items, want, "at {copy_mb_s} MB/s: {st:?}");
        }
        assert!(is_server_database("/x/.AppleDB/log.0000000001"));
        assert!(is_server_database(
            "/var/lib/plexmediaserver/library.db-wal"
        ));
        assert!(!is_server_database("/share/notes/travel-journal"));
    }

    /// One of eight files copied side by side (robocopy /MT:8) is an item; the rule's share
    /// decides, and a host with no network copy judges a file by its own progress.
    #[test]
    fn one_of_eight_parallel_files_is_an_item() {
        let mut h = HostData {
            name: "nas".into(),
            ..Default::default()
        };
        for t in (0..=20).step_by(2) {
            h.events.push(ev(
                t,
                8,
                "rsync",
                &[("/share/a", 4_000_000 * t, FileMode::Write)],
            ));
        }
        // 4 MB/s of a 32 MB/s flow: 1/8.
        let (tr, _) = build(&[h.clone()], &[net("nas", 11, 32.0)], T0, T0 + 20_000, &[]);
        assert_eq!(tr.len(), 1, "{tr:?}");
        // ... of a 60 MB/s one: 1/15, under ITEM_MIN_SHARE.
        let (tr, _) = build(&[h.clone()], &[net("nas", 11, 60.0)], T0, T0 + 20_000, &[]);
        assert!(tr.is_empty(), "{tr:?}");
        let (tr, _) = build(&[h], &[net("nas", 11, 0.1)], T0, T0 + 20_000, &[]);
        assert_eq!(tr.len(), 1, "{tr:?}");
    }

    #[test]
    fn html_and_text_show_them_with_paths_escaped() {
        let hosts = [host()];
        let a = crate::analyze::analyze(&hosts, &crate::analyze::Options::default());
        let html = crate::html::render(&hosts, &a);
        assert!(html.contains("/mnt/&lt;big&gt;.img"), "escaped in HTML");
        assert!(!html.contains("<big>"));
        let text = crate::text::render(&a.report);
        assert!(text.contains("Crawl on nas: "), "{text}");
        assert!(
            text.contains("Transfer on nas: dd [42] writing /mnt/<big>.img"),
            "{text}"
        );
        let json = serde_json::to_value(&a.report).unwrap();
        assert_eq!(json["stalls"][0]["item"], "/mnt/<big>.img");
        assert_eq!(json["transfers"][0]["size_bytes"], 420_000_000);
    }
}

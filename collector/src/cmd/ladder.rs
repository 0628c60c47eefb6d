//! `nasprobe ladder DIR`: the field's file-copy ladder through a mounted share (SMB, NFS, sshfs:
//! any path) — one big file written then read back, then a series of files from 2 MB to 2 GB
//! written then read — past the page cache, graded like `flow.grade`, and with agents named, the
//! wall on the NAS side during each step (recorded like `record`, so `report --since` covers it).

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::Serialize;

use crate::context::Context;
use crate::net::conn::Collector;
use crate::sys::fs::{AlignedBuf, drop_cache, free_bytes, set_nocache};

/// The block every write and read moves: the size the field measured with (`dd bs=1M`).
pub(crate) const BLOCK: usize = 1 << 20;
/// O_DIRECT wants buffers aligned to the device's logical block; 4 KiB covers every disk.
const ALIGN: usize = 4096;
/// The part of the free space a ladder may use at most.
const MAX_FREE_SHARE: f64 = 0.5;

/// What `nasprobe ladder` was asked for.
#[derive(Debug, Clone)]
pub struct LadderArgs {
    pub dir: PathBuf,
    pub agents: Vec<String>,
    pub big: u64,
    pub series_from: u64,
    pub series_to: u64,
    pub link_mbit: Option<u32>,
    pub json: bool,
}

/// How the page cache was kept out of the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheBypass {
    /// O_DIRECT on every file (Linux).
    ODirect,
    /// F_NOCACHE (macOS).
    FNocache,
    /// fsync after writing, then posix_fadvise(DONTNEED) before reading (the filesystem refused
    /// O_DIRECT).
    FsyncFadvise,
    /// Nothing this platform offers: reads may come from the cache.
    None,
}

impl CacheBypass {
    fn describe(self) -> &'static str {
        match self {
            CacheBypass::ODirect => "O_DIRECT",
            CacheBypass::FNocache => "F_NOCACHE",
            CacheBypass::FsyncFadvise => {
                "fsync + posix_fadvise(DONTNEED) (the filesystem refused O_DIRECT)"
            }
            CacheBypass::None => "none available here: reads may come from the page cache",
        }
    }
}

/// One step of the ladder as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// `single_write`, `single_read`, `series_write`, `series_read`.
    pub name: &'static str,
    pub bytes: u64,
    pub files: usize,
    pub seconds: f64,
    pub mb_s: f64,
    /// `excellent`, `good`, `fair`, `misconfigured`, `seriously_wrong`, against the link.
    pub grade: &'static str,
    /// The `bottleneck` of `report --json` over the step, when agents were named.
    pub wall: Option<serde_json::Value>,
    #[serde(skip)]
    from_ms: u64,
    #[serde(skip)]
    to_ms: u64,
}

/// The whole result (`ladder --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    pub path: String,
    pub cache_bypass: CacheBypass,
    pub link_mbit: u32,
    pub steps: Vec<Step>,
    pub verdict: String,
}

/// The sizes of the series: `from` doubling while at most `to`, then `to` itself; each rounded up
/// to whole blocks.
pub fn series_sizes(from: u64, to: u64) -> Vec<u64> {
    let round = |b: u64| b.div_ceil(BLOCK as u64).max(1) * BLOCK as u64;
    let mut out = Vec::new();
    let mut s = from.max(1);
    while s <= to {
        out.push(round(s));
        s = s.saturating_mul(2);
    }
    if out.last().is_none_or(|&l| l < round(to)) {
        out.push(round(to));
    }
    out.dedup();
    out
}

/// A buffer of one block at [`ALIGN`], filled with bytes that do not compress (a share or a
/// filesystem that compresses would otherwise measure its compressor).
struct Block(AlignedBuf);

impl Block {
    fn new() -> Block {
        let mut b = Block(AlignedBuf::zeroed(BLOCK, ALIGN));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id());
        for c in b.bytes_mut().chunks_exact_mut(8) {
            // xorshift64: cheap, incompressible enough for a share.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes());
        }
        b
    }
    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.0.bytes_mut()
    }
}

/// Opens `path` past the page cache where the platform and filesystem allow; says how.
fn open_uncached(path: &Path, write: bool, want: CacheBypass) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    if write {
        o.write(true).create(true).truncate(true);
    } else {
        o.read(true);
    }
    #[cfg(target_os = "linux")]
    if want == CacheBypass::ODirect {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_DIRECT);
    }
    let f = o.open(path)?;
    if want == CacheBypass::FNocache {
        set_nocache(&f)?;
    }
    Ok(f)
}

/// Which bypass works in `dir`: tries O_DIRECT (or F_NOCACHE) on a probe file.
fn probe_bypass(dir: &Path, block: &Block) -> CacheBypass {
    let first = if cfg!(target_os = "linux") {
        CacheBypass::ODirect
    } else if cfg!(target_os = "macos") {
        CacheBypass::FNocache
    } else {
        return CacheBypass::None;
    };
    let probe = dir.join("probe.bin");
    let ok = open_uncached(&probe, true, first)
        .and_then(|mut f| f.write_all(&block.bytes()[..ALIGN]))
        .is_ok();
    std::fs::remove_file(&probe).ok();
    if ok {
        first
    } else if cfg!(target_os = "linux") {
        CacheBypass::FsyncFadvise
    } else {
        CacheBypass::None
    }
}

/// Progress of the whole ladder on stderr (a terminal only): the step, its share, the rate and
/// the time left for everything.
struct Progress {
    show: bool,
    total: u64,
    done: u64,
    start: Instant,
    last: Instant,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let now = Instant::now();
        Progress {
            show: std::io::stderr().is_terminal(),
            total,
            done: 0,
            start: now,
            last: now,
        }
    }
    fn add(&mut self, step: &str, bytes: u64) {
        self.done += bytes;
        if !self.show || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        let left = (self.total.saturating_sub(self.done)) as f64 / rate.max(1.0);
        let frac = self.done as f64 / self.total.max(1) as f64;
        let width = 30;
        let full = (frac * width as f64).round() as usize;
        crate::output::err_text(format_args!(
            "\r{step:<13} [{}{}] {:>3.0}% {:>7.1} MB/s  {} left   ",
            "#".repeat(full.min(width)),
            " ".repeat(width - full.min(width)),
            frac * 100.0,
            rate / 1e6,
            nasprobe_analysis::time::dur(left)
        ));
    }
    fn end(&self) {
        if self.show {
            crate::errln!();
        }
    }
}

/// The folder the test files go in, removed at the end and on Ctrl-C.
struct Workdir(PathBuf);

impl Drop for Workdir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn interrupted() -> bool {
    crate::signals::stop_requested()
}

fn write_file(
    path: &Path,
    bytes: u64,
    block: &Block,
    bypass: CacheBypass,
    step: &str,
    p: &mut Progress,
) -> anyhow::Result<()> {
    let mut f = open_uncached(path, true, bypass)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let mut left = bytes;
    while left > 0 {
        if interrupted() {
            bail!("interrupted");
        }
        let n = left.min(BLOCK as u64) as usize;
        f.write_all(&block.bytes()[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
        p.add(step, n as u64);
    }
    // The write is done when it is on the NAS's disk, not in a cache on the way.
    f.sync_all()
        .with_context(|| format!("syncing {}", path.display()))?;
    if bypass == CacheBypass::FsyncFadvise {
        drop_cache(&f);
    }
    Ok(())
}

fn read_file(
    path: &Path,
    block: &mut Block,
    bypass: CacheBypass,
    step: &str,
    p: &mut Progress,
) -> anyhow::Result<u64> {
    let mut f = open_uncached(path, false, bypass)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if bypass == CacheBypass::FsyncFadvise {
        drop_cache(&f);
    }
    let mut total = 0u64;
    loop {
        if interrupted() {
            bail!("interrupted");
        }
        let n = f
            .read(block.bytes_mut())
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        p.add(step, n as u64);
    }
    Ok(total)
}

/// Runs the ladder (and records the named agents meanwhile).
pub fn run(c: &Context, a: &LadderArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.dir.is_dir(),
        "{} is not a folder (mount the share and name a folder on it)",
        a.dir.display()
    );
    anyhow::ensure!(a.big > 0, "--big must be more than 0");
    anyhow::ensure!(
        a.series_from > 0 && a.series_from <= a.series_to,
        "--series wants FROM..TO with 0 < FROM <= TO"
    );
    let series = series_sizes(a.series_from, a.series_to);
    let big = series_sizes(a.big, a.big)[0];
    let need = big.max(series.iter().sum());
    if let Some(free) = free_bytes(&a.dir) {
        anyhow::ensure!(
            (need as f64) <= free as f64 * MAX_FREE_SHARE,
            "the ladder needs {} MB in {} and only {} MB are free (it uses at most half): \
             choose a smaller --big/--series",
            need / 1_000_000,
            a.dir.display(),
            free / 1_000_000
        );
    }
    let work = Workdir(
        a.dir
            .join(format!("nasprobe-ladder-{}", std::process::id())),
    );
    std::fs::create_dir(&work.0).with_context(|| format!("cannot create {}", work.0.display()))?;
    crate::signals::install();

    let collector = if a.agents.is_empty() {
        None
    } else {
        let targets = c.targets(&a.agents, false)?;
        let store = c.open_store()?;
        Some(Collector::start(store, targets, Some(c.retention)))
    };

    let mut block = Block::new();
    let bypass = probe_bypass(&work.0, &block);
    let total = 2 * (big + series.iter().sum::<u64>());
    let mut p = Progress::new(total);
    let mut steps = Vec::new();
    let single = work.0.join("single.bin");
    let files: Vec<(PathBuf, u64)> = series
        .iter()
        .enumerate()
        .map(|(i, &s)| (work.0.join(format!("series-{i:02}-{s}.bin")), s))
        .collect();

    let mut timed = |name: &'static str,
                     nfiles: usize,
                     f: &mut dyn FnMut(&mut Progress) -> anyhow::Result<u64>|
     -> anyhow::Result<Step> {
        let from_ms = nasprobe_proto::time::now_ms();
        let t0 = Instant::now();
        let bytes = f(&mut p)?;
        let seconds = t0.elapsed().as_secs_f64().max(1e-6);
        let mb_s = bytes as f64 / 1e6 / seconds;
        Ok(Step {
            name,
            bytes,
            files: nfiles,
            seconds: nasprobe_analysis::verdict::round2(seconds),
            mb_s: nasprobe_analysis::verdict::round2(mb_s),
            grade: "",
            wall: None,
            from_ms,
            to_ms: nasprobe_proto::time::now_ms(),
        })
    };
    let outcome = (|| -> anyhow::Result<()> {
        steps.push(timed("single_write", 1, &mut |p| {
            write_file(&single, big, &block, bypass, "single write", p).map(|()| big)
        })?);
        steps.push(timed("single_read", 1, &mut |p| {
            read_file(&single, &mut block, bypass, "single read", p)
        })?);
        std::fs::remove_file(&single).ok();
        steps.push(timed("series_write", files.len(), &mut |p| {
            for (f, s) in &files {
                write_file(f, *s, &block, bypass, "series write", p)?;
            }
            Ok(files.iter().map(|(_, s)| s).sum())
        })?);
        steps.push(timed("series_read", files.len(), &mut |p| {
            let mut n = 0;
            for (f, _) in &files {
                n += read_file(f, &mut block, bypass, "series read", p)?;
            }
            Ok(n)
        })?);
        Ok(())
    })();
    p.end();
    drop(work);
    if let Err(e) = outcome {
        if let Some(col) = collector {
            col.finish().ok();
        }
        return Err(e.context("the ladder stopped; its test files were removed"));
    }

    // The walls: the store's report over each step (the agents' last samples land first).
    let mut link = a.link_mbit;
    if let Some(col) = collector {
        std::thread::sleep(Duration::from_millis(2500));
        let store = col.finish()?;
        for s in &mut steps {
            let r =
                crate::store::window::load_between(&store, Some(s.from_ms), Some(s.to_ms), None)?
                    .1
                    .report;
            if link.is_none() {
                link = r.flow.as_ref().map(|f| f.link_mbit).filter(|&l| l > 0);
            }
            s.wall = Some(serde_json::to_value(&r.bottleneck)?);
        }
    }
    for s in &mut steps {
        s.grade = nasprobe_analysis::verdict::grade_for_link(s.mb_s, link);
    }
    let ladder = Ladder {
        path: a.dir.display().to_string(),
        cache_bypass: bypass,
        link_mbit: link.unwrap_or(1000),
        verdict: verdict(&steps, link.unwrap_or(1000)),
        steps,
    };
    let mut out = crate::output::stdout();
    if a.json {
        out.line(&serde_json::to_string_pretty(&ladder)?)?;
    } else {
        out.text(&render(&ladder))?;
    }
    out.finish()?;
    Ok(())
}

/// The step names as a person reads them.
fn step_title(name: &str) -> &'static str {
    match name {
        "single_write" => "single file, write",
        "single_read" => "single file, read",
        "series_write" => "series, write",
        "series_read" => "series, read",
        _ => "step",
    }
}

fn wall_text(w: &Option<serde_json::Value>) -> Option<String> {
    crate::output::wall_sentence(w.as_ref()?)
}

/// One sentence: the slowest step, its grade and its wall.
fn verdict(steps: &[Step], link_mbit: u32) -> String {
    let Some(worst) = steps.iter().min_by(|a, b| a.mb_s.total_cmp(&b.mb_s)) else {
        return "no step ran".into();
    };
    let all: Vec<String> = steps
        .iter()
        .map(|s| format!("{} {:.0} MB/s", step_title(s.name), s.mb_s))
        .collect();
    let wall = wall_text(&worst.wall)
        .map(|w| format!("; {w}"))
        .unwrap_or_default();
    format!(
        "slowest: {} at {:.0} MB/s, {} for {} Mbit/s{wall} ({})",
        step_title(worst.name),
        worst.mb_s,
        worst.grade.replace('_', " "),
        link_mbit,
        all.join(", ")
    )
}

fn render(l: &Ladder) -> String {
    let mut o = format!(
        "Ladder in {} (page cache: {}; grades for {} Mbit/s)\n",
        l.path,
        l.cache_bypass.describe(),
        l.link_mbit
    );
    for s in &l.steps {
        o += &format!(
            "  {:<20} {:>8.1} MB/s  {:<16} {:>6} MB in {:>3} file(s), {:.1} s",
            step_title(s.name),
            s.mb_s,
            s.grade,
            s.bytes / 1_000_000,
            s.files,
            s.seconds
        );
        if let Some(w) = wall_text(&s.wall) {
            o += &format!("  — {w}");
        }
        o.push('\n');
    }
    o += &format!("Verdict: {}\n", l.verdict);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_doubles_then_ends_at_its_top() {
        let m = BLOCK as u64;
        assert_eq!(
            series_sizes(2 * m, 16 * m),
            vec![2 * m, 4 * m, 8 * m, 16 * m]
        );
        // Decimal sizes round up to whole blocks; the top comes last even off the doubling.
        let s = series_sizes(2_000_000, 10_000_000);
        assert_eq!(s, vec![2 * m, 4 * m, 8 * m, 10 * m]);
        assert_eq!(series_sizes(5, 5), vec![m]);
    }

    #[test]
    fn grades_scale_to_the_link() {
        use nasprobe_analysis::verdict::grade_for_link;
        assert_eq!(grade_for_link(95.0, None), "excellent");
        assert_eq!(grade_for_link(20.0, Some(200)), "excellent");
        assert_eq!(grade_for_link(20.0, Some(1000)), "seriously_wrong");
        assert_eq!(grade_for_link(800.0, Some(10_000)), "good");
    }
}

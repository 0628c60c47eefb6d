//! The tests an owner lets collectors run with `--allow-tests` (`nasprobe test disk`, `nasprobe
//! test net`, the latter in `net.rs`): each in a thread of its own, so the poll loop keeps sampling while it runs; bounded in time (60 s),
//! size (25% of the free space), number (one at a time) and frequency (one a minute), and
//! stopped with its file deleted when the collector goes away.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nasprobe_proto::{DevName, DiskResult, DiskTest, Short, TestRequest, TestResult};

mod net;

/// A test's whole budget: the "at most 60 s".
pub(crate) const MAX_TEST_TIME: Duration = Duration::from_secs(60);
/// Time between the end of one test and the start of the next.
pub(crate) const TEST_EVERY: Duration = Duration::from_secs(60);
/// The write phase's share of the budget; the read phase gets what remains up to 55 s, the
/// big-block pass the rest.
const WRITE_PHASE: Duration = Duration::from_secs(35);
const READ_PHASE_END: Duration = Duration::from_secs(50);
/// The block of the main pass: what the field measured with (`dd bs=1M`).
const BLOCK: usize = 1 << 20;
/// The big block of the second pass: the field's trap (`dd bs=1G`), at most a quarter of the
/// memory available and of the bytes written.
const BIG_BLOCK_MAX: u64 = 1 << 30;
/// Below this the big-block pass says nothing a 1 MiB pass does not.
const BIG_BLOCK_MIN: u64 = 16 << 20;
/// The share of the free space a test file may take.
const MAX_FREE_SHARE: u64 = 4;

/// statfs magic numbers of filesystems that hold no disk (they would measure memory).
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// A test running in its thread.
pub(crate) struct Running {
    /// The client slot that asked for it (its `TestResult` goes there).
    pub(crate) slot: usize,
    cancel: Arc<AtomicBool>,
    /// The test's file: unlinked at once on cancel (the thread may sit in a long fdatasync).
    file: Option<PathBuf>,
    result: Arc<Mutex<Option<TestResult>>>,
    /// Becomes readable when the thread is done (the poll loop watches it).
    done: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl Running {
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.done.as_fd()
    }

    /// Asks the thread to stop (the collector went away) and removes its file now: a thread
    /// waiting in fdatasync cannot, and the file must not outlive the collector by long.
    pub(crate) fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
        if let Some(f) = &self.file {
            std::fs::remove_file(f).ok();
        }
    }

    /// Waits for the thread (it is done or cancelled) and takes its result.
    pub(crate) fn finish(mut self) -> TestResult {
        if let Some(t) = self.thread.take() {
            t.join().ok();
        }
        self.result
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_else(|| failed("the test thread ended without a result"))
    }
}

/// A test's outcome in words, for the log (never the debug text of the protocol's types).
pub(crate) fn describe(r: &TestResult) -> String {
    match r {
        TestResult::Disk(d) => format!(
            "disk: {} MB written in {} ms, {} MB read in {} ms",
            d.bytes / 1_000_000,
            d.write_us / 1000,
            d.read_bytes / 1_000_000,
            d.read_us / 1000
        ),
        TestResult::Failed(why) => format!("failed: {why}"),
        TestResult::Net(runs) => {
            let runs: Vec<String> = runs
                .iter()
                .map(|r| {
                    format!(
                        "{} stream(s) {} bytes in {} ms",
                        r.streams,
                        r.bytes,
                        r.micros / 1000
                    )
                })
                .collect();
            format!("net: {}", runs.join("; "))
        }
    }
}

fn failed(why: &str) -> TestResult {
    TestResult::Failed(bounded(why))
}

fn bounded<const N: usize>(s: &str) -> heapless::String<N> {
    let mut out = heapless::String::new();
    for c in s.chars() {
        if out.push(c).is_err() {
            break;
        }
    }
    out
}

/// The refusal of the `test net` requests of older collectors: their stream header was a
/// nonce of the collector's choice, so a sender could be aimed at any port with it.
pub(crate) const OLD_NET_TEST: &str = "this collector is too old for test net on this agent \
     (its streams are not bound to the run): upgrade the collector";

/// Why a request cannot start now (said to the collector as `Refused`), or None.
pub(crate) fn refusal(
    allowed: bool,
    running: bool,
    last_end: Option<Instant>,
    now: Instant,
) -> Option<String> {
    if !allowed {
        return Some("tests are off on this agent: start nasprobe-agent with --allow-tests".into());
    }
    if running {
        return Some("a test is already running on this agent: one at a time".into());
    }
    if let Some(end) = last_end {
        let since = now.saturating_duration_since(end);
        if since < TEST_EVERY {
            return Some(format!(
                "one test a minute: the next can start in {} s",
                (TEST_EVERY - since).as_secs().max(1)
            ));
        }
    }
    None
}

/// Starts `req` in its thread for the client in `slot`; a `NetReceiveRun` gets the listener
/// the server bound on its test port; both sides of a net test get the run key
/// ([`nasprobe_proto::test_stream`]).
pub(crate) fn start(
    req: TestRequest,
    slot: usize,
    sys_root: PathBuf,
    listener: Option<std::net::TcpListener>,
    run_key: Option<[u8; 32]>,
) -> std::io::Result<Running> {
    let (rx, tx) = nix::unistd::pipe()?;
    let cancel = Arc::new(AtomicBool::new(false));
    let result = Arc::new(Mutex::new(None));
    let (c2, r2) = (cancel.clone(), result.clone());
    let file = match &req {
        TestRequest::Disk(d) => Some(test_file_in(Path::new(d.path.as_str()))),
        _ => None,
    };
    let thread = std::thread::Builder::new()
        .name("test".into())
        .spawn(move || {
            let r = match (req, listener, run_key) {
                (TestRequest::Disk(d), _, _) => disk(&d, &c2, &sys_root),
                (TestRequest::NetReceiveRun(n), Some(l), Some(k)) => net::receive(&n, &k, l, &c2),
                (TestRequest::NetSendRun(n), _, Some(k)) => net::send(&n, &k, &c2),
                _ => failed("the test has no port or key (an agent bug)"),
            };
            if let Ok(mut slot) = r2.lock() {
                *slot = Some(r);
            }
            // Wake the poll loop; the pipe closes with `tx`.
            let mut f = File::from(tx);
            f.write_all(b"!").ok();
        })?;
    Ok(Running {
        slot,
        cancel,
        file,
        result,
        done: rx,
        thread: Some(thread),
    })
}

/// The test file of a disk test in `dir` (one per agent process: one test at a time).
fn test_file_in(dir: &Path) -> PathBuf {
    dir.join(format!(".nasprobe-test-{}", std::process::id()))
}

/// The file the test writes; deleted when dropped, whatever happened.
struct TestFile(PathBuf);

impl Drop for TestFile {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// The name of a statfs magic number, as `mount` would print it.
fn fs_name(magic: i64) -> String {
    match magic {
        0xEF53 => "ext2/3/4".into(),
        0x9123_683E => "btrfs".into(),
        0x5846_5342 => "xfs".into(),
        TMPFS_MAGIC => "tmpfs".into(),
        RAMFS_MAGIC => "ramfs".into(),
        0x6969 => "nfs".into(),
        0xFE53_4D42 | 0xFF53_4D42 => "cifs/smb".into(),
        0x6573_5546 => "fuse".into(),
        0x4d44 => "vfat".into(),
        0x5346_544e => "ntfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0x7366_746E => "f2fs".into(),
        other => format!("0x{other:x}"),
    }
}

/// The block device holding `dev` (st_dev), by /sys/dev/block/MAJ:MIN.
fn device_name(sys_root: &Path, dev: u64) -> String {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    std::fs::read_link(sys_root.join(format!("dev/block/{major}:{minor}")))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// MemAvailable (or MemFree on 3.10) in bytes; None when unreadable.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    field("MemAvailable:")
        .or_else(|| field("MemFree:"))
        .map(|k| k * 1024)
}

fn drop_cache(f: &File) -> bool {
    crate::sys::fd::drop_cache(f.as_fd())
}

/// `nasprobe test disk`: see [`DiskResult`].
fn disk(t: &DiskTest, cancel: &AtomicBool, sys_root: &Path) -> TestResult {
    match disk_inner(t, cancel, sys_root) {
        Ok(r) => TestResult::Disk(r),
        Err(e) => failed(&e),
    }
}

/// What makes a request impossible before it starts (said as `Refused`, and not counted as a
/// test): a folder that does not exist, on tmpfs, or a size over 25% of its free space.
pub(crate) fn precheck(req: &TestRequest) -> Result<(), String> {
    match req {
        TestRequest::Disk(t) => disk_precheck(t).map(|_| ()),
        TestRequest::NetReceiveRun(n) => net::precheck_receive(n),
        TestRequest::NetSendRun(n) => net::precheck_send(n),
        TestRequest::NetReceive(_) | TestRequest::NetSend(_) => Err(OLD_NET_TEST.into()),
    }
}

/// The statfs magic of the test folder, after the checks of [`precheck`].
fn disk_precheck(t: &DiskTest) -> Result<i64, String> {
    let dir = Path::new(t.path.as_str());
    let st = nix::sys::statfs::statfs(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let magic = st.filesystem_type().0 as i64;
    if (magic == TMPFS_MAGIC || magic == RAMFS_MAGIC) && !t.allow_tmpfs {
        return Err(format!(
            "{} is on {}, which measures memory, not a disk (ask with --allow-tmpfs)",
            dir.display(),
            fs_name(magic)
        ));
    }
    #[allow(clippy::unnecessary_cast)] // field widths differ between targets
    let free = st.blocks_available() as u64 * st.block_size() as u64;
    if t.bytes == 0 || t.bytes > free / MAX_FREE_SHARE {
        return Err(format!(
            "{} MB asked, {} MB free in {}: a test may use at most 25% of the free space",
            t.bytes / 1_000_000,
            free / 1_000_000,
            dir.display()
        ));
    }
    Ok(magic)
}

fn disk_inner(t: &DiskTest, cancel: &AtomicBool, sys_root: &Path) -> Result<DiskResult, String> {
    let t0 = Instant::now();
    let started_ms = wall_ms();
    let dir = Path::new(t.path.as_str());
    let magic = disk_precheck(t)?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    use std::os::unix::fs::MetadataExt;
    let device = device_name(sys_root, meta.dev());
    let file = TestFile(test_file_in(dir));
    let open_new = || {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file.0)
            .map_err(|e| format!("cannot create {}: {e}", file.0.display()))
    };
    let stop = || cancel.load(Ordering::SeqCst);
    let mut buf = vec![0u8; BLOCK];
    // Bytes that do not compress (btrfs/zfs compression would measure the compressor).
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for c in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }

    // Pass 1: 1 MiB blocks, synced.
    let mut f = open_new()?;
    let w0 = Instant::now();
    let mut written = 0u64;
    while written < t.bytes && t0.elapsed() < WRITE_PHASE {
        if stop() {
            return Err("cancelled: the collector went away".into());
        }
        let n = (t.bytes - written).min(BLOCK as u64) as usize;
        f.write_all(&buf[..n])
            .map_err(|e| format!("writing {}: {e}", file.0.display()))?;
        written += n as u64;
    }
    f.sync_data()
        .map_err(|e| format!("syncing {}: {e}", file.0.display()))?;
    let write_us = us(w0.elapsed());
    let cache_dropped = drop_cache(&f);
    drop(f);

    // Read it back from the disk.
    let mut f = File::open(&file.0).map_err(|e| format!("{}: {e}", file.0.display()))?;
    drop_cache(&f);
    let r0 = Instant::now();
    let mut read = 0u64;
    loop {
        if stop() {
            return Err("cancelled: the collector went away".into());
        }
        if t0.elapsed() >= READ_PHASE_END {
            break;
        }
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("reading {}: {e}", file.0.display()))?;
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    let read_us = us(r0.elapsed());
    drop(f);
    std::fs::remove_file(&file.0).ok();

    // Pass 2: one big block, as `dd bs=1G count=1` writes it.
    let big = written
        .min(BIG_BLOCK_MAX)
        .min(mem_available().unwrap_or(0) / 4)
        / BLOCK as u64
        * BLOCK as u64;
    let (mut big_block_bytes, mut big_write_us) = (0, 0);
    if big >= BIG_BLOCK_MIN && t0.elapsed() < MAX_TEST_TIME - Duration::from_secs(5) {
        let mut blob: Vec<u8> = Vec::new();
        if blob.try_reserve_exact(big as usize).is_ok() {
            for _ in 0..big as usize / BLOCK {
                blob.extend_from_slice(&buf);
            }
            let mut f = open_new()?;
            let b0 = Instant::now();
            f.write_all(&blob)
                .map_err(|e| format!("writing {}: {e}", file.0.display()))?;
            f.sync_data()
                .map_err(|e| format!("syncing {}: {e}", file.0.display()))?;
            big_write_us = us(b0.elapsed());
            big_block_bytes = big;
        }
    }
    drop(file);
    Ok(DiskResult {
        device: bounded::<{ nasprobe_proto::DEV_NAME_LEN }>(&device) as DevName,
        fs_type: bounded::<{ nasprobe_proto::SHORT_LEN }>(&fs_name(magic)) as Short,
        block_bytes: BLOCK as u32,
        bytes: written,
        write_us,
        read_bytes: read,
        read_us,
        cache_dropped,
        big_block_bytes,
        big_write_us,
        started_ms,
        ended_ms: wall_ms(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_flag_the_running_test_and_the_wait() {
        let now = Instant::now();
        assert!(
            refusal(false, false, None, now)
                .unwrap()
                .contains("--allow-tests")
        );
        assert!(
            refusal(true, true, None, now)
                .unwrap()
                .contains("already running")
        );
        let r = refusal(true, false, Some(now - Duration::from_secs(20)), now).unwrap();
        assert!(r.contains("one test a minute") && r.contains("40 s"), "{r}");
        assert!(refusal(true, false, Some(now - TEST_EVERY), now).is_none());
        assert!(refusal(true, false, None, now).is_none());
    }

    #[test]
    fn a_disk_test_writes_reads_and_deletes_its_file() {
        let dir = std::env::temp_dir().join(format!("nasprobe-selftest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = DiskTest {
            path: bounded(dir.to_str().unwrap()),
            bytes: 8 << 20,
            allow_tmpfs: true,
        };
        let r = disk(&t, &AtomicBool::new(false), Path::new("/sys"));
        let TestResult::Disk(d) = r else {
            panic!("{r:?}")
        };
        assert_eq!(d.bytes, 8 << 20);
        assert_eq!(d.read_bytes, 8 << 20);
        assert!(d.write_us > 0 && d.read_us > 0);
        assert_eq!(d.block_bytes, 1 << 20);
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "file left"
        );
        // Cancelled before it starts: an error, and still no file.
        let r = disk(&t, &AtomicBool::new(true), Path::new("/sys"));
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("cancelled")),
            "{r:?}"
        );
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "file left"
        );
        // Too big for the free space.
        let huge = DiskTest {
            bytes: u64::MAX / 2,
            ..t.clone()
        };
        let r = disk(&huge, &AtomicBool::new(false), Path::new("/sys"));
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("25%")),
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

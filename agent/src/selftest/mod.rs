//! The tests an owner lets collectors run with `--allow-tests` (`nasprobe test disk`, `nasprobe
//! test net`, the latter in `net.rs`): each in a thread of its own, so the poll loop keeps sampling while it runs; bounded in time (60 s),
//! size (25% of the free space), number (one at a time) and frequency (one a minute), and
//! stopped with its file deleted when the collector goes away.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nasprobe_proto::{TestRequest, TestResult};

use crate::config::{DiskScope, TestScope};

mod base;
mod disk;
mod net;

pub(crate) use base::MAX_TEST_TIME;
use base::failed;

/// Time between the end of one test and the start of the next (one that wrote nothing, refused
/// or failed before its first byte, does not count).
pub(crate) const TEST_EVERY: Duration = Duration::from_secs(60);

/// A test running in its thread.
pub(crate) struct Running {
    /// The client slot that asked for it (its `TestResult` goes there).
    pub(crate) slot: usize,
    cancel: Arc<AtomicBool>,
    /// Set once the test wrote its first byte (a disk block, a stream opened to the receiver).
    began: Arc<AtomicBool>,
    /// A disk test's file: unlinked at once on cancel (the thread may sit in a long fdatasync).
    file: Option<Arc<disk::TestFile>>,
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
            f.remove();
        }
    }

    /// True once the test wrote something: then it counts for the one test a minute.
    pub(crate) fn began(&self) -> bool {
        self.began.load(Ordering::SeqCst)
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

/// The refusal of the `test net` requests of older collectors: their stream header was a
/// nonce of the collector's choice, so a sender could be aimed at any port with it.
pub(crate) const OLD_NET_TEST: &str = "this collector is too old for test net on this agent \
     (its streams are not bound to the run): upgrade the collector";

/// Why a request cannot start now (said to the collector as `Refused`), or None: the owner's
/// scope first, then one test at a time and one a minute.
pub(crate) fn refusal(
    scope: &TestScope,
    req: &TestRequest,
    running: bool,
    last_end: Option<Instant>,
    now: Instant,
) -> Option<String> {
    if !scope.any() {
        return Some("tests are off on this agent: start nasprobe-agent with --allow-tests".into());
    }
    let allowed = match req {
        TestRequest::Disk(_) => scope.disk != DiskScope::Off,
        _ => scope.net,
    };
    if !allowed {
        let what = if matches!(req, TestRequest::Disk(_)) {
            "disk tests are off on this agent (its owner allows them with \
             --allow-tests=disk:DIR)"
        } else {
            "net tests are off on this agent (its owner allows them with --allow-tests=net)"
        };
        return Some(what.into());
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

/// Starts `req` in its thread for the client in `slot`; a disk test gets its folder (from
/// [`precheck`]), a `NetReceiveRun` the listener the server bound on its test port, both sides
/// of a net test the run key ([`nasprobe_proto::test_stream`]).
pub(crate) fn start(
    req: TestRequest,
    slot: usize,
    sys_root: PathBuf,
    listener: Option<std::net::TcpListener>,
    run_key: Option<[u8; 32]>,
    folder: Option<OwnedFd>,
) -> std::io::Result<Running> {
    let (rx, tx) = nix::unistd::pipe()?;
    let cancel = Arc::new(AtomicBool::new(false));
    let began = Arc::new(AtomicBool::new(false));
    let result = Arc::new(Mutex::new(None));
    let (r2, b2) = (result.clone(), began.clone());
    let file = folder.map(|dir| Arc::new(disk::TestFile::new(dir, cancel.clone())));
    let (f2, c2) = (file.clone(), cancel.clone());
    let thread = std::thread::Builder::new()
        .name("test".into())
        .spawn(move || {
            let r = match (req, listener, run_key, f2) {
                (TestRequest::Disk(d), _, _, Some(f)) => disk::disk(&d, &f, &b2, &sys_root, &|| {}),
                (TestRequest::NetReceiveRun(n), Some(l), Some(k), _) => {
                    b2.store(true, Ordering::SeqCst);
                    net::receive(&n, &k, l, &c2)
                }
                (TestRequest::NetSendRun(n), _, Some(k), _) => net::send(&n, &k, &c2, &b2),
                _ => failed("the test has no folder, port or key (an agent bug)"),
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
        began,
        file,
        result,
        done: rx,
        thread: Some(thread),
    })
}

/// What makes a request impossible before it starts (said as `Refused`, and not counted as a
/// test): a disk folder out of the owner's scope (or reached through a symlink), that does not
/// exist, on tmpfs, or a size over 25% of its free space; a net request out of bounds or of an
/// older collector. A disk test's folder, opened.
pub(crate) fn precheck(req: &TestRequest, scope: &TestScope) -> Result<Option<OwnedFd>, String> {
    match req {
        TestRequest::Disk(t) => {
            let dir = disk::open_folder(&scope.disk, Path::new(t.path.as_str()))?;
            disk::precheck(t, &dir)?;
            Ok(Some(dir))
        }
        TestRequest::NetReceiveRun(n) => net::precheck_receive(n).map(|_| None),
        TestRequest::NetSendRun(n) => net::precheck_send(n).map(|_| None),
        TestRequest::NetReceive(_) | TestRequest::NetSend(_) => Err(OLD_NET_TEST.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::bounded;
    use nasprobe_proto::DiskTest;

    fn disk_req(dir: &Path, bytes: u64) -> DiskTest {
        DiskTest {
            path: bounded(dir.to_str().unwrap()),
            bytes,
            allow_tmpfs: true,
        }
    }

    #[test]
    fn refusals_name_the_flag_the_scope_the_running_test_and_the_wait() {
        let now = Instant::now();
        let req = TestRequest::Disk(disk_req(Path::new("/x"), 1));
        let all = TestScope::everything();
        let off = TestScope::default();
        assert!(
            refusal(&off, &req, false, None, now)
                .unwrap()
                .contains("start nasprobe-agent with --allow-tests")
        );
        let net_only = TestScope::parse("net").unwrap();
        assert!(
            refusal(&net_only, &req, false, None, now)
                .unwrap()
                .contains("--allow-tests=disk:DIR")
        );
        assert!(
            refusal(&all, &req, true, None, now)
                .unwrap()
                .contains("already running")
        );
        let r = refusal(&all, &req, false, Some(now - Duration::from_secs(20)), now).unwrap();
        assert!(r.contains("one test a minute") && r.contains("40 s"), "{r}");
        assert!(refusal(&all, &req, false, Some(now - TEST_EVERY), now).is_none());
        assert!(refusal(&all, &req, false, None, now).is_none());
    }

    fn run_disk(
        t: &DiskTest,
        scope: &TestScope,
        cancel: bool,
        between: &dyn Fn(&AtomicBool),
    ) -> (TestResult, bool) {
        let dir = match precheck(&TestRequest::Disk(t.clone()), scope) {
            Ok(d) => d.unwrap(),
            Err(e) => return (failed(&e), false),
        };
        let flag = Arc::new(AtomicBool::new(cancel));
        let file = disk::TestFile::new(dir, flag.clone());
        let began = AtomicBool::new(false);
        let r = disk::disk(t, &file, &began, Path::new("/sys"), &|| between(&flag));
        (r, began.load(Ordering::SeqCst))
    }

    fn empty(dir: &Path) -> bool {
        std::fs::read_dir(dir).unwrap().next().is_none()
    }

    #[test]
    fn a_disk_test_writes_reads_and_deletes_its_file() {
        let dir = std::env::temp_dir().join(format!("nasprobe-selftest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let all = TestScope::everything();
        let t = disk_req(&dir, 32 << 20);
        let (r, began) = run_disk(&t, &all, false, &|_| {});
        let TestResult::Disk(d) = r else {
            panic!("{}", describe(&r))
        };
        assert!(began);
        assert_eq!(d.bytes, 32 << 20);
        assert_eq!(d.read_bytes, 32 << 20);
        assert!(d.write_us > 0 && d.read_us > 0);
        assert_eq!(d.block_bytes, 1 << 20);
        assert_eq!(
            d.big_block_bytes,
            32 << 20,
            "the big block is one writev of it all"
        );
        assert!(empty(&dir), "file left");
        // Cancelled before it starts: an error, nothing written, and still no file.
        let (r, began) = run_disk(&t, &all, true, &|_| {});
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("cancelled")),
            "{}",
            describe(&r)
        );
        assert!(!began && empty(&dir), "file left");
        // Cancelled between the passes: no big-block file is created after it.
        let created_after = Arc::new(AtomicBool::new(false));
        let (d2, c2) = (dir.clone(), created_after.clone());
        let (r, _) = run_disk(&t, &all, false, &move |flag| {
            flag.store(true, Ordering::SeqCst);
            let d3 = d2.clone();
            let c3 = c2.clone();
            // Watch the folder for a while after the cancel.
            std::thread::spawn(move || {
                for _ in 0..200 {
                    if !empty(&d3) {
                        c3.store(true, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        });
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("cancelled")),
            "{}",
            describe(&r)
        );
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !created_after.load(Ordering::SeqCst),
            "a file was written after the cancel"
        );
        assert!(empty(&dir), "file left");
        // Too big for the free space.
        let huge = disk_req(&dir, u64::MAX / 2);
        let (r, began) = run_disk(&huge, &all, false, &|_| {});
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("25%")),
            "{}",
            describe(&r)
        );
        assert!(!began);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_disk_test_stays_in_its_scope_and_unlinks_only_its_file() {
        let root = std::env::temp_dir().join(format!("nasprobe-scope-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let allowed = root.join("share");
        let outside = root.join("etc");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, allowed.join("link")).unwrap();
        let scope = TestScope::parse(&format!("disk:{}", allowed.display())).unwrap();
        let t = |p: &Path| disk_req(p, 8 << 20);
        let refused = |p: &Path| {
            precheck(&TestRequest::Disk(t(p)), &scope)
                .err()
                .unwrap_or_default()
        };
        assert!(
            refused(&outside).contains("not in a folder this agent allows"),
            "{}",
            refused(&outside)
        );
        assert!(
            refused(&allowed.join("link")).contains("symlink"),
            "{}",
            refused(&allowed.join("link"))
        );
        assert!(refused(&allowed.join("sub/../../etc")).contains(".."));
        // Plain --allow-tests: any folder, but no symlink on the way either.
        let all = TestScope::everything();
        assert!(precheck(&TestRequest::Disk(t(&allowed.join("link"))), &all).is_err());
        assert!(precheck(&TestRequest::Disk(t(&allowed.join("sub"))), &scope).is_ok());
        // A planted file of the test's name: the test does not take it over, nor unlink it.
        let planted = allowed.join(format!(".nasprobe-test-{}", std::process::id()));
        std::fs::write(&planted, b"mine").unwrap();
        let (r, began) = run_disk(&t(&allowed), &scope, false, &|_| {});
        assert!(
            matches!(r, TestResult::Failed(ref m) if m.contains("cannot create")),
            "{}",
            describe(&r)
        );
        assert!(!began, "refused before writing: the minute is not used");
        assert_eq!(std::fs::read(&planted).unwrap(), b"mine");
        assert!(empty(&outside));
        std::fs::remove_dir_all(&root).ok();
    }
}

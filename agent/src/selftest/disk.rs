//! `nasprobe test disk` on the agent: the folder resolved under the owner's scope with
//! `openat(O_NOFOLLOW)` component by component (no symlink leads out of it), one file created
//! there with `O_EXCL` and unlinked only if it is still that file, 1 MiB blocks written, synced,
//! dropped from the cache and read back, then the big-block pass as one `writev` of the same
//! 1 MiB block repeated (the kernel sees one write of up to 1 GiB, as from `dd bs=1G`; the agent
//! holds 1 MiB). A cancel is honoured between blocks and between passes.

use std::ffi::CString;
use std::fs::File;
use std::io::{IoSlice, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nasprobe_proto::{DevName, DiskResult, DiskTest, Short, TestResult};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{FileStat, Mode, fstat, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::base::{MAX_TEST_TIME, bounded, failed, us, wall_ms};
use crate::config::DiskScope;

/// The write phase's share of the budget; the read phase gets what remains up to 50 s, the
/// big-block pass the rest.
const WRITE_PHASE: Duration = Duration::from_secs(35);
const READ_PHASE_END: Duration = Duration::from_secs(50);
/// The block of the main pass: what the field measured with (`dd bs=1M`).
pub(super) const BLOCK: usize = 1 << 20;
/// The big block of the second pass: the field's trap (`dd bs=1G`), at most the bytes written.
const BIG_BLOCK_MAX: u64 = 1 << 30;
/// Below this the big-block pass says nothing a 1 MiB pass does not.
const BIG_BLOCK_MIN: u64 = 16 << 20;
/// iovecs of one `writev` (IOV_MAX is 1024 on Linux): 1024 x 1 MiB is the 1 GiB block.
const IOV_MAX: usize = 1024;
/// The share of the free space a test file may take.
const MAX_FREE_SHARE: u64 = 4;

/// statfs magic numbers of filesystems that hold no disk (they would measure memory).
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

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

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_CLOEXEC)
    .union(OFlag::O_NOFOLLOW);

/// Opens `path` under the owner's scope: from the allowed folder that holds it (opened as the
/// owner named it), or from `/` when any folder is allowed, each further component with
/// `O_NOFOLLOW`, so that no symlink (nor `..`) leads the test out.
pub(super) fn open_folder(scope: &DiskScope, path: &Path) -> Result<OwnedFd, String> {
    if !path.is_absolute() {
        return Err(format!(
            "{}: the folder must be an absolute path",
            path.display()
        ));
    }
    let (base, rest) = match scope {
        DiskScope::Off => {
            return Err(
                "disk tests are off on this agent: start nasprobe-agent with \
                        --allow-tests=disk:DIR"
                    .into(),
            );
        }
        DiskScope::Anywhere => (Path::new("/"), path),
        DiskScope::Folders(allowed) => {
            let Some(base) = allowed.iter().find(|a| path.starts_with(a)) else {
                return Err(format!(
                    "not in a folder this agent allows disk tests in (--allow-tests=disk:DIR): \
                     {}",
                    path.display()
                ));
            };
            (
                base.as_path(),
                path.strip_prefix(base).unwrap_or(Path::new("")),
            )
        }
    };
    let mut dir = nix::fcntl::open(base, DIR_FLAGS.difference(OFlag::O_NOFOLLOW), Mode::empty())
        .map_err(|e| format!("{}: {}", base.display(), e.desc()))?;
    for c in rest.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name) => {
                dir = openat(&dir, name, DIR_FLAGS, Mode::empty()).map_err(|e| match e {
                    nix::errno::Errno::ELOOP | nix::errno::Errno::ENOTDIR => format!(
                        "a symlink or a file on the way ({}) is refused: name the real folder \
                         ({})",
                        Path::new(name).display(),
                        path.display()
                    ),
                    e => format!("{}: {}", path.display(), e.desc()),
                })?;
            }
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!(
                    "{}: '..' is refused in a test folder",
                    path.display()
                ));
            }
        }
    }
    Ok(dir)
}

/// The checks before a test starts (said as `Refused`, not counted as a test): the folder in
/// scope, not on tmpfs (unless asked), the size at most 25% of its free space. Its statfs magic.
pub(super) fn precheck(t: &DiskTest, dir: &OwnedFd) -> Result<i64, String> {
    let shown = Path::new(t.path.as_str()).display();
    let st = nix::sys::statfs::fstatfs(dir).map_err(|e| format!("{shown}: {}", e.desc()))?;
    let magic = st.filesystem_type().0 as i64;
    if (magic == TMPFS_MAGIC || magic == RAMFS_MAGIC) && !t.allow_tmpfs {
        return Err(format!(
            "{shown} is on {}, which measures memory, not a disk (ask with --allow-tmpfs)",
            fs_name(magic)
        ));
    }
    #[allow(clippy::unnecessary_cast)] // field widths differ between targets
    let free = st.blocks_available() as u64 * st.block_size() as u64;
    if t.bytes == 0 || t.bytes > free / MAX_FREE_SHARE {
        return Err(format!(
            "{} MB asked, {} MB free in {shown}: a test may use at most 25% of the free space",
            t.bytes / 1_000_000,
            free / 1_000_000,
        ));
    }
    Ok(magic)
}

/// The file a test created: its folder, name and identity. Unlinked (by the thread at the end
/// of a pass, or at once by a cancel) only while that name is still this very file.
pub(crate) struct TestFile {
    dir: OwnedFd,
    name: CString,
    /// (st_dev, st_ino) of the file created, while it exists.
    id: Mutex<Option<(u64, u64)>>,
    cancel: Arc<AtomicBool>,
}

fn id_of(st: &FileStat) -> (u64, u64) {
    #[allow(clippy::unnecessary_cast)] // field widths differ between targets
    (st.st_dev as u64, st.st_ino as u64)
}

impl TestFile {
    pub(super) fn new(dir: OwnedFd, cancel: Arc<AtomicBool>) -> TestFile {
        let name = format!(".nasprobe-test-{}", std::process::id());
        TestFile {
            dir,
            name: CString::new(name).unwrap_or_default(),
            id: Mutex::new(None),
            cancel,
        }
    }

    /// Creates the file (it must not exist: `O_EXCL`, no symlink followed), unless the test
    /// was cancelled: checked under the same lock as [`TestFile::remove`], so a cancel either
    /// comes first or finds the file to unlink.
    fn create(&self) -> Result<File, String> {
        let mut id = self
            .id
            .lock()
            .map_err(|_| "test file lock poisoned".to_string())?;
        if self.cancel.load(Ordering::SeqCst) {
            return Err(CANCELLED.into());
        }
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(
            &self.dir,
            self.name.as_c_str(),
            flags,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| format!("cannot create the test file: {}", e.desc()))?;
        *id = fstat(&fd).ok().map(|st| id_of(&st));
        Ok(File::from(fd))
    }

    /// Opens the file for reading, if it is still the one created.
    fn open_read(&self) -> Result<File, String> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&self.dir, self.name.as_c_str(), flags, Mode::empty())
            .map_err(|e| format!("cannot reopen the test file: {}", e.desc()))?;
        let same = fstat(&fd).ok().map(|st| id_of(&st)) == *self.id.lock().map_err(|_| "lock")?;
        if !same {
            return Err("the test file was replaced meanwhile".into());
        }
        Ok(File::from(fd))
    }

    /// Unlinks the file if the name is still the file this test created.
    pub(crate) fn remove(&self) {
        let Ok(mut id) = self.id.lock() else { return };
        let Some(want) = id.take() else { return };
        let now = fstatat(
            &self.dir,
            self.name.as_c_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        );
        if now.ok().map(|st| id_of(&st)) == Some(want) {
            unlinkat(&self.dir, self.name.as_c_str(), UnlinkatFlags::NoRemoveDir).ok();
        }
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        self.remove();
    }
}

const CANCELLED: &str = "cancelled: the collector went away";

/// `nasprobe test disk`: see [`DiskResult`]. `began` is set once the first block is written
/// (a test that fails before it does not use up the minute); `between` runs between the
/// passes (tests cancel there).
pub(super) fn disk(
    t: &DiskTest,
    file: &TestFile,
    began: &AtomicBool,
    sys_root: &Path,
    between: &dyn Fn(),
) -> TestResult {
    match disk_inner(t, file, began, sys_root, between) {
        Ok(r) => TestResult::Disk(r),
        Err(e) => failed(&e),
    }
}

/// The 1 MiB block: bytes that do not compress (btrfs/zfs compression would measure the
/// compressor).
fn block() -> Vec<u8> {
    let mut buf = vec![0u8; BLOCK];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for c in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    buf
}

/// Writes `total` bytes of `block` repeated with as few `writev` calls as the kernel takes
/// (one, up to IOV_MAX blocks).
fn write_repeated(f: &mut File, block: &[u8], total: u64) -> std::io::Result<()> {
    let mut done = 0u64;
    while done < total {
        let off = (done % block.len() as u64) as usize;
        let mut iov: Vec<IoSlice<'_>> = Vec::with_capacity(IOV_MAX);
        let mut left = total - done;
        let first = (block.len() - off).min(left as usize);
        iov.push(IoSlice::new(&block[off..off + first]));
        left -= first as u64;
        while left > 0 && iov.len() < IOV_MAX {
            let n = (left as usize).min(block.len());
            iov.push(IoSlice::new(&block[..n]));
            left -= n as u64;
        }
        match f.write_vectored(&iov) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn disk_inner(
    t: &DiskTest,
    file: &TestFile,
    began: &AtomicBool,
    sys_root: &Path,
    between: &dyn Fn(),
) -> Result<DiskResult, String> {
    let t0 = Instant::now();
    let started_ms = wall_ms();
    let magic = precheck(t, &file.dir)?;
    let st = fstat(&file.dir).map_err(|e| e.desc().to_string())?;
    #[allow(clippy::unnecessary_cast)] // field widths differ between targets
    let device = device_name(sys_root, st.st_dev as u64);
    let stop = || file.cancel.load(Ordering::SeqCst);
    let buf = block();
    let mut rbuf = vec![0u8; BLOCK];

    // Pass 1: 1 MiB blocks, synced.
    let mut f = file.create()?;
    let w0 = Instant::now();
    let mut written = 0u64;
    while written < t.bytes && t0.elapsed() < WRITE_PHASE {
        if stop() {
            return Err(CANCELLED.into());
        }
        let n = (t.bytes - written).min(BLOCK as u64) as usize;
        f.write_all(&buf[..n])
            .map_err(|e| format!("writing the test file: {e}"))?;
        began.store(true, Ordering::SeqCst);
        written += n as u64;
    }
    f.sync_data()
        .map_err(|e| format!("syncing the test file: {e}"))?;
    let write_us = us(w0.elapsed());
    let cache_dropped = crate::sys::fd::drop_cache(f.as_fd());
    drop(f);

    // Read it back from the disk.
    let mut f = file.open_read()?;
    crate::sys::fd::drop_cache(f.as_fd());
    let r0 = Instant::now();
    let mut read = 0u64;
    loop {
        if stop() {
            return Err(CANCELLED.into());
        }
        if t0.elapsed() >= READ_PHASE_END {
            break;
        }
        let n = f
            .read(&mut rbuf)
            .map_err(|e| format!("reading the test file: {e}"))?;
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    let read_us = us(r0.elapsed());
    drop(f);
    file.remove();
    between();

    // Pass 2: one big block, as `dd bs=1G count=1` writes it.
    let big = written.min(BIG_BLOCK_MAX) / BLOCK as u64 * BLOCK as u64;
    let (mut big_block_bytes, mut big_write_us) = (0, 0);
    if big >= BIG_BLOCK_MIN && t0.elapsed() < MAX_TEST_TIME - Duration::from_secs(5) {
        // Creating checks the cancel under the file's lock: none is written after one.
        let mut f = file.create()?;
        let b0 = Instant::now();
        write_repeated(&mut f, &buf, big).map_err(|e| format!("writing the test file: {e}"))?;
        f.sync_data()
            .map_err(|e| format!("syncing the test file: {e}"))?;
        big_write_us = us(b0.elapsed());
        big_block_bytes = big;
        drop(f);
        file.remove();
    }
    if stop() {
        return Err(CANCELLED.into());
    }
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

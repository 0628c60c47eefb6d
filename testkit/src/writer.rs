//! Materialises one host's tree on disk, atomically:
//! - a file is written to `.NAME.tmp` in its own directory, then renamed over NAME;
//! - a process directory is built complete as `proc/.new-PID-SERIAL`, then renamed to `proc/PID`;
//! - a dead process directory is renamed to `proc/.dead-PID-SERIAL`, then deleted.
//!
//! A reader therefore sees, for any path, either the old or the new content, never a mix, and a
//! PID directory either complete or absent. Unchanged files are not rewritten (a hash of the last
//! content is kept per path). Temporary names start with a dot, so they are never numeric.
//!
//! Caveat for readers that keep a file descriptor open and `pread` it again: a rename replaces
//! the inode, so such a descriptor keeps showing the old content. Against a generated tree, a
//! reader must reopen (or check the inode) each sample.

use crate::render::{SysEntry, pid_files, proc_system_files, sys_entries};
use crate::sim::HostSim;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

struct PidState {
    serial: u64,
    files: HashMap<String, u64>,
}

pub struct TreeWriter {
    pub root: PathBuf,
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    files: HashMap<PathBuf, u64>,
    links: HashSet<PathBuf>,
    pids: HashMap<u32, PidState>,
    /// Files written (not skipped as unchanged) since creation.
    pub writes: u64,
}

fn digest(b: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

/// Writes `data` to `path` through a temporary file in the same directory and a rename.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("no parent"))?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    match std::fs::write(&tmp, data) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            std::fs::write(&tmp, data)?;
        }
        Err(e) => return Err(e),
    }
    std::fs::rename(&tmp, path)
}

fn symlink_atomic(path: &Path, target: &str) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| io::Error::other("no parent"))?;
    std::fs::create_dir_all(dir)?;
    if let Ok(cur) = std::fs::read_link(path)
        && cur == Path::new(target)
    {
        return Ok(());
    }
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(path.file_name().unwrap_or_default());
    tmp_name.push(".lnk");
    let tmp = dir.join(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(&tmp, path)
}

impl TreeWriter {
    /// Prepares `root/proc` and `root/sys`, removing what a previous run left there.
    pub fn create(root: &Path) -> io::Result<TreeWriter> {
        std::fs::create_dir_all(root)?;
        let root = std::fs::canonicalize(root)?;
        let proc_root = root.join("proc");
        let sys_root = root.join("sys");
        for d in [&proc_root, &sys_root] {
            if d.exists() {
                std::fs::remove_dir_all(d)?;
            }
            std::fs::create_dir_all(d)?;
        }
        Ok(TreeWriter {
            root,
            proc_root,
            sys_root,
            files: HashMap::new(),
            links: HashSet::new(),
            pids: HashMap::new(),
            writes: 0,
        })
    }

    fn put(&mut self, path: PathBuf, data: &[u8]) -> io::Result<()> {
        let d = digest(data);
        if self.files.get(&path) == Some(&d) {
            return Ok(());
        }
        write_atomic(&path, data)?;
        self.writes += 1;
        self.files.insert(path, d);
        Ok(())
    }

    /// Brings the tree on disk to the state of `sim`.
    pub fn write(&mut self, sim: &HostSim) -> io::Result<()> {
        let mut seen: HashSet<PathBuf> = HashSet::new();
        for (rel, text) in proc_system_files(sim) {
            let p = self.proc_root.join(rel);
            self.put(p.clone(), text.as_bytes())?;
            seen.insert(p);
        }
        for e in sys_entries(sim) {
            match e {
                SysEntry::File(rel, text) => {
                    let p = self.sys_root.join(rel);
                    self.put(p.clone(), text.as_bytes())?;
                    seen.insert(p);
                }
                SysEntry::Symlink(rel, target) => {
                    let p = self.sys_root.join(rel);
                    if !self.links.contains(&p) {
                        symlink_atomic(&p, &target)?;
                        self.links.insert(p);
                    }
                }
            }
        }
        // Files that are no longer part of the tree.
        let stale: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| !seen.contains(*p))
            .cloned()
            .collect();
        for p in stale {
            let _ = std::fs::remove_file(&p);
            self.files.remove(&p);
        }
        self.write_pids(sim)
    }

    fn write_pids(&mut self, sim: &HostSim) -> io::Result<()> {
        // Deaths (and pids reused by a new process) first.
        let gone: Vec<(u32, u64)> = self
            .pids
            .iter()
            .filter(|(pid, st)| sim.procs.get(pid).is_none_or(|p| p.serial != st.serial))
            .map(|(pid, st)| (*pid, st.serial))
            .collect();
        for (pid, serial) in gone {
            let dir = self.proc_root.join(pid.to_string());
            let grave = self.proc_root.join(format!(".dead-{pid}-{serial}"));
            match std::fs::rename(&dir, &grave) {
                Ok(()) => std::fs::remove_dir_all(&grave)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            self.pids.remove(&pid);
        }
        for (pid, p) in &sim.procs {
            let files = pid_files(sim, p);
            match self.pids.get_mut(pid) {
                None => {
                    let tmp = self.proc_root.join(format!(".new-{pid}-{}", p.serial));
                    if tmp.exists() {
                        std::fs::remove_dir_all(&tmp)?;
                    }
                    let mut hashes = HashMap::with_capacity(files.len());
                    for (rel, data) in &files {
                        let path = tmp.join(rel);
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent)?;
                        }
                        std::fs::write(&path, data)?;
                        hashes.insert(rel.clone(), digest(data));
                    }
                    std::fs::rename(&tmp, self.proc_root.join(pid.to_string()))?;
                    self.writes += files.len() as u64;
                    self.pids.insert(
                        *pid,
                        PidState {
                            serial: p.serial,
                            files: hashes,
                        },
                    );
                }
                Some(st) => {
                    let dir = self.proc_root.join(pid.to_string());
                    for (rel, data) in &files {
                        let d = digest(data);
                        if st.files.get(rel) != Some(&d) {
                            write_atomic(&dir.join(rel), data)?;
                            self.writes += 1;
                            st.files.insert(rel.clone(), d);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

//! nasprobe's own processes and files on the machine of a local agent (`watch --local`): the
//! collector's process is not among the busiest and nasprobe's files (the store with its WAL and
//! shared memory, the agent's log) are not the item a transfer is on, unless `--show-self`.
//! The views' copy of each record is filtered; the store keeps what the agent sent.

use std::path::Path;

use nasprobe_proto::{OpenFiles, Sample};

/// What is nasprobe's own on one host.
#[derive(Debug, Clone, Default)]
pub struct Own {
    /// The collector's pid.
    pub pids: Vec<u32>,
    /// The store and its `-wal`, `-shm`; the agent's log.
    pub paths: Vec<String>,
}

impl Own {
    /// This collector (its pid, the store at `db`) and the local agent's log `agent_log`.
    pub fn local(db: &Path, agent_log: &Path) -> Own {
        // As the agent reads them from /proc/PID/fd: absolute, links resolved.
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let (db, agent_log) = (real(db), real(agent_log));
        let db = db.to_string_lossy();
        Own {
            pids: vec![std::process::id()],
            paths: vec![
                db.to_string(),
                format!("{db}-wal"),
                format!("{db}-shm"),
                agent_log.to_string_lossy().into_owned(),
            ],
        }
    }

    fn is_own_file(&self, pid: u32, comm: &str, path: &str) -> bool {
        self.pids.contains(&pid)
            || self.paths.iter().any(|p| p == path)
            || nasprobe_analysis::transfers::is_own_file(comm, path)
    }

    /// The busiest processes without the collector's.
    pub fn filter_sample(&self, s: &mut Sample) {
        s.top.retain(|p| !self.pids.contains(&p.pid));
    }

    /// The open files without nasprobe's own; a process left with none goes.
    pub fn filter_files(&self, f: &mut OpenFiles) {
        for p in f.procs.iter_mut() {
            let (pid, comm) = (p.pid, p.comm.to_string());
            p.files
                .retain(|x| !self.is_own_file(pid, &comm, x.path.as_str()));
        }
        f.procs.retain(|p| !p.files.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::Event;

    #[test]
    fn the_store_its_wal_and_the_collector_are_filtered_out() {
        let own = Own::local(Path::new("/d/my.db"), Path::new("/t/agent.log"));
        let Event::OpenFiles(mut f) = crate::testing::open_files_event(42) else {
            unreachable!()
        };
        let mut mine = f.procs[0].clone();
        mine.pid = std::process::id();
        mine.files[0].path = "/d/my.db-wal".try_into().unwrap();
        let mut other = f.procs[0].clone();
        other.pid = 43;
        other.files[0].path = "/d/my.db-wal".try_into().unwrap();
        other.files.truncate(1);
        f.procs.push(mine).unwrap();
        f.procs.push(other).unwrap();
        own.filter_files(&mut f);
        let left: Vec<u32> = f.procs.iter().map(|p| p.pid).collect();
        assert_eq!(left, [42], "the cp stays, the collector and the WAL go");
        assert_eq!(f.procs[0].files.len(), 2);
    }
}

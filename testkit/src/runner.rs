//! Drives every host of a scenario: `DIR/<host>/proc` and `DIR/<host>/sys`, in real time or at
//! chosen instants (tests).

use crate::model::{Kernel, Scenario};
use crate::sim::HostSim;
use crate::writer::TreeWriter;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where one host's tree lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPaths {
    pub name: String,
    pub kernel: Kernel,
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
}

impl HostPaths {
    /// The machine-readable line printed on start:
    /// `host=NAME kernel=k4_4 proc=/abs/DIR/NAME/proc sys=/abs/DIR/NAME/sys`.
    pub fn line(&self) -> String {
        format!(
            "host={} kernel={} proc={} sys={}",
            self.name,
            self.kernel.name(),
            self.proc_root.display(),
            self.sys_root.display()
        )
    }
}

pub struct Runner {
    pub hosts: Vec<(HostSim, TreeWriter)>,
}

/// True when `dir` is on tmpfs (where per-tick renames are cheap; on ext4 each rename over an
/// existing file costs about half a millisecond).
pub fn on_tmpfs(dir: &Path) -> bool {
    use nix::sys::statfs::{TMPFS_MAGIC, statfs};
    statfs(dir).is_ok_and(|st| st.filesystem_type() == TMPFS_MAGIC)
}

pub fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Runner {
    /// Validates the scenario, creates `out/<host>/{proc,sys}` and writes the state at t=0.
    /// `wall_start` is the epoch second t=0 stands for (btime = wall_start - uptime).
    pub fn new(scn: &Scenario, out: &Path, wall_start: u64) -> Result<Runner, String> {
        scn.validate()?;
        let mut hosts = Vec::new();
        for h in &scn.hosts {
            let sim = HostSim::new(h, scn.seed, wall_start);
            let mut w = TreeWriter::create(&out.join(&h.name))
                .map_err(|e| format!("{}: {e}", out.display()))?;
            w.write(&sim)
                .map_err(|e| format!("writing {}: {e}", h.name))?;
            hosts.push((sim, w));
        }
        Ok(Runner { hosts })
    }

    pub fn paths(&self) -> Vec<HostPaths> {
        self.hosts
            .iter()
            .map(|(s, w)| HostPaths {
                name: s.host.name.clone(),
                kernel: s.host.kernel,
                proc_root: w.proc_root.clone(),
                sys_root: w.sys_root.clone(),
            })
            .collect()
    }

    /// Advances every host to `t` seconds and rewrites what changed.
    pub fn step_to(&mut self, t: f64) -> io::Result<()> {
        for (sim, w) in &mut self.hosts {
            sim.advance_to(t);
            w.write(sim)?;
        }
        Ok(())
    }

    pub fn t(&self) -> f64 {
        self.hosts.first().map(|(s, _)| s.t).unwrap_or(0.0)
    }

    /// Updates the trees every `tick` in real time (t = seconds since this call) until `stop`
    /// is set or `duration` has passed (then writes the state at exactly `duration`).
    /// Returns the number of ticks written.
    pub fn run_realtime(
        &mut self,
        tick: Duration,
        duration: Option<Duration>,
        stop: &AtomicBool,
    ) -> io::Result<u64> {
        let start = Instant::now();
        let t0 = self.t();
        let mut n: u64 = 0;
        loop {
            n += 1;
            let due = start + tick * n as u32;
            if let Some(d) = duration
                && due >= start + d
            {
                // Sleep to the end, then write the last state.
                while Instant::now() < start + d {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(n - 1);
                    }
                    std::thread::sleep((start + d - Instant::now()).min(Duration::from_millis(50)));
                }
                self.step_to(t0 + d.as_secs_f64())?;
                return Ok(n);
            }
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(n - 1);
                }
                let now = Instant::now();
                if now >= due {
                    break;
                }
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
            }
            let t = t0 + start.elapsed().as_secs_f64();
            self.step_to(t)?;
            // Behind schedule (a slow disk, a huge tree): skip the missed ticks, never queue them.
            let behind = (start.elapsed().as_nanos() / tick.as_nanos().max(1)) as u64;
            n = n.max(behind);
        }
    }
}

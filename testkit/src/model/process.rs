//! A host's processes: threads, restarts and churn of short-lived ones.

use serde::{Deserialize, Serialize};

/// A process. `threads[0]` is the main thread (tid = pid, comm = the process comm unless given);
/// with no threads declared the process has one idle main thread.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    /// Truncated to 15 bytes when written, as the kernel does (TASK_COMM_LEN).
    pub comm: String,
    /// argv; `{token}` is replaced by this instance's token, `{instance}` by its number.
    pub cmdline: Vec<String>,
    pub threads: Vec<Thread>,
    pub uid: u32,
    pub nice: i32,
    pub rss_mib: f64,
    pub vsize_mib: f64,
    /// Birth time (s since t=0; negative = before the scenario started). Default: 30 s after
    /// boot for an idle process, 600 s before t=0 for one with CPU load.
    pub born_s: Option<f64>,
    /// Death time of the (last) instance.
    pub dies_s: Option<f64>,
    pub restart: Option<Restart>,
    /// Base of `{token}`; instance i gets token + i x 104729.
    pub token: u64,
    /// Kernel thread: empty cmdline, ppid 2, no memory.
    pub kernel_thread: bool,
    pub minor_faults_s: f64,
    pub major_faults_s: f64,
    /// Fraction of wall time blocked on I/O (delayacct_blkio_ticks).
    pub blkio_pct: f64,
}

impl Default for Process {
    fn default() -> Self {
        Process {
            pid: 1000,
            ppid: 1,
            comm: "proc".into(),
            cmdline: Vec::new(),
            threads: Vec::new(),
            uid: 0,
            nice: 0,
            rss_mib: 6.0,
            vsize_mib: 48.0,
            born_s: None,
            dies_s: None,
            restart: None,
            token: 0,
            kernel_thread: false,
            minor_faults_s: 0.0,
            major_faults_s: 0.0,
            blkio_pct: 0.0,
        }
    }
}

impl Process {
    /// A process with an idle main thread and cmdline = `[comm]`.
    pub fn new(pid: u32, comm: &str) -> Process {
        Process {
            pid,
            comm: comm.into(),
            cmdline: vec![comm.into()],
            ..Default::default()
        }
    }
    /// A kernel thread (e.g. kswapd0) at `cpu_pct`.
    pub fn kthread(pid: u32, comm: &str, cpu_pct: f64) -> Process {
        Process {
            pid,
            ppid: 2,
            comm: comm.into(),
            cmdline: Vec::new(),
            kernel_thread: true,
            rss_mib: 0.0,
            vsize_mib: 0.0,
            threads: vec![Thread::new(cpu_pct).sys(1.0)],
            ..Default::default()
        }
    }
    pub fn cmdline(mut self, args: &[&str]) -> Self {
        self.cmdline = args.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn ppid(mut self, ppid: u32) -> Self {
        self.ppid = ppid;
        self
    }
    pub fn uid(mut self, uid: u32) -> Self {
        self.uid = uid;
        self
    }
    pub fn nice(mut self, n: i32) -> Self {
        self.nice = n;
        self
    }
    /// Adds a thread; the first one added is the main thread.
    pub fn thread(mut self, t: Thread) -> Self {
        self.threads.push(t);
        self
    }
    /// Single-threaded process at `cpu_pct` (replaces the thread list).
    pub fn cpu(mut self, cpu_pct: f64) -> Self {
        self.threads = vec![Thread::new(cpu_pct)];
        self
    }
    pub fn mem(mut self, rss_mib: f64, vsize_mib: f64) -> Self {
        self.rss_mib = rss_mib;
        self.vsize_mib = vsize_mib;
        self
    }
    pub fn born(mut self, s: f64) -> Self {
        self.born_s = Some(s);
        self
    }
    pub fn dies(mut self, s: f64) -> Self {
        self.dies_s = Some(s);
        self
    }
    pub fn restart(mut self, every_s: f64, gap_s: f64) -> Self {
        self.restart = Some(Restart { every_s, gap_s });
        self
    }
    pub fn token(mut self, t: u64) -> Self {
        self.token = t;
        self
    }
    pub fn faults(mut self, minor_s: f64, major_s: f64) -> Self {
        self.minor_faults_s = minor_s;
        self.major_faults_s = major_s;
        self
    }
    pub(crate) fn blkio(mut self, pct: f64) -> Self {
        self.blkio_pct = pct;
        self
    }
    /// Total declared CPU of the process, % of a core.
    pub fn cpu_pct(&self) -> f64 {
        self.threads.iter().map(|t| t.cpu_pct).sum()
    }
}

/// Each instance lives `every_s` seconds, then dies; the next one is born `gap_s` later with a
/// new pid and a new token.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Restart {
    pub every_s: f64,
    pub gap_s: f64,
}

/// A thread and its load: `cpu_pct` of one core, `sys_frac` of it in system time.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thread {
    pub tid: Option<u32>,
    pub comm: Option<String>,
    pub cpu_pct: f64,
    pub sys_frac: f64,
    /// Time spent runnable but waiting for a CPU (schedstat run_delay), % of wall time.
    pub delay_pct: f64,
}

impl Default for Thread {
    fn default() -> Self {
        Thread {
            tid: None,
            comm: None,
            cpu_pct: 0.0,
            sys_frac: 0.2,
            delay_pct: 0.5,
        }
    }
}

impl Thread {
    pub fn new(cpu_pct: f64) -> Thread {
        Thread {
            cpu_pct,
            ..Default::default()
        }
    }
    pub fn comm(mut self, c: &str) -> Self {
        self.comm = Some(c.into());
        self
    }
    pub fn tid(mut self, tid: u32) -> Self {
        self.tid = Some(tid);
        self
    }
    pub fn sys(mut self, frac: f64) -> Self {
        self.sys_frac = frac;
        self
    }
    pub fn delay(mut self, pct: f64) -> Self {
        self.delay_pct = pct;
        self
    }
}

/// Short-lived processes: one born every 1/per_s seconds from t=0, each living `lifetime_s`,
/// with comms cycling through `comms` (default includes names with spaces and parentheses).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Churn {
    pub per_s: f64,
    pub lifetime_s: f64,
    pub comms: Vec<String>,
    pub cpu_pct: f64,
    pub threads: u32,
}

impl Default for Churn {
    fn default() -> Self {
        Churn {
            per_s: 100.0,
            lifetime_s: 0.5,
            comms: [
                "sh",
                "cat",
                "Web Content",
                "(sd-pam)",
                "find",
                "du -s",
                "a) b (c",
                "sleep",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            cpu_pct: 2.0,
            threads: 1,
        }
    }
}

impl Churn {
    pub fn new(per_s: f64, lifetime_s: f64) -> Churn {
        Churn {
            per_s,
            lifetime_s,
            ..Default::default()
        }
    }
    pub fn threads(mut self, n: u32) -> Self {
        self.threads = n;
        self
    }
    pub fn cpu(mut self, pct: f64) -> Self {
        self.cpu_pct = pct;
        self
    }
}

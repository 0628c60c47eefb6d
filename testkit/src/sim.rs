//! The state of one host over time: CPU ticks per core and per thread, the live process table
//! (births, deaths, restarts, churn, pid allocation). Time only moves forward: [`HostSim::advance_to`].
//! Counters that are linear in time (disks, NICs, vmstat, TCP) are computed on demand from the
//! declared rates by [`HostSim::counter`] and friends; CPU needs state because threads migrate.

use crate::model::{Host, Kernel};
use std::collections::{BTreeMap, HashSet};

/// USER_HZ: clock ticks per second in /proc.
pub const HZ: f64 = 100.0;
const TWO32: f64 = 4_294_967_296.0;

/// Ticks accumulated by one core since boot (f64; written floored).
#[derive(Clone, Debug, Default)]
pub struct CoreTicks {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub idle: f64,
    pub iowait: f64,
    pub irq: f64,
    pub softirq: f64,
    pub steal: f64,
}

impl CoreTicks {
    pub fn busy(&self) -> f64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }
    pub fn total(&self) -> f64 {
        self.busy() + self.idle + self.iowait
    }
}

#[derive(Clone, Debug)]
pub struct LiveThread {
    pub tid: u32,
    pub comm: String,
    pub cpu_pct: f64,
    pub sys_frac: f64,
    pub delay_pct: f64,
    /// The core it runs on now (field 39 of stat).
    pub core: u32,
    /// Ticks.
    pub utime: f64,
    pub stime: f64,
    /// Seconds spent waiting for a CPU.
    pub delay_s: f64,
}

/// Where a live process comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Index into `Host::processes`.
    Declared(usize),
    /// The n-th churn birth.
    Churn(u64),
}

#[derive(Clone, Debug)]
pub struct LiveProc {
    pub pid: u32,
    /// Unique per birth on this host (a reused pid gets a new serial).
    pub serial: u64,
    pub source: Source,
    pub instance: u32,
    pub comm: String,
    pub cmdline: Vec<String>,
    /// Seconds since t=0 (negative: before the scenario started).
    pub born_t: f64,
    pub dies_t: Option<f64>,
    pub threads: Vec<LiveThread>,
    pub ppid: u32,
    pub uid: u32,
    pub nice: i32,
    pub rss_mib: f64,
    pub vsize_mib: f64,
    pub kernel_thread: bool,
    pub minor_faults_s: f64,
    pub major_faults_s: f64,
    pub blkio_pct: f64,
    pub token: Option<u64>,
}

impl LiveProc {
    pub fn utime(&self) -> f64 {
        self.threads.iter().map(|t| t.utime).sum()
    }
    pub fn stime(&self) -> f64 {
        self.threads.iter().map(|t| t.stime).sum()
    }
    pub fn cpu_pct(&self) -> f64 {
        self.threads.iter().map(|t| t.cpu_pct).sum()
    }
}

/// Kernel-like pid allocation: increasing, wrapping at pid_max back to 300, skipping used ids.
#[derive(Clone, Debug)]
struct PidAlloc {
    next: u32,
    max: u32,
    used: HashSet<u32>,
    last: u32,
}

impl PidAlloc {
    fn alloc(&mut self) -> u32 {
        for _ in 0..self.max {
            let p = self.next;
            self.next = if self.next + 1 >= self.max {
                300
            } else {
                self.next + 1
            };
            if !self.used.contains(&p) {
                self.used.insert(p);
                self.last = p;
                return p;
            }
        }
        panic!("pid space exhausted (pid_max {})", self.max);
    }
    fn take(&mut self, p: u32) -> bool {
        self.used.insert(p)
    }
}

#[derive(Clone, Debug)]
struct DeclaredSched {
    next_instance: u32,
    next_birth: Option<f64>,
}

/// One host's simulated state at time `t` (seconds since the scenario start).
#[derive(Clone, Debug)]
pub struct HostSim {
    pub host: Host,
    pub seed: u64,
    pub t: f64,
    /// Boot time, seconds since the epoch (`btime`).
    pub btime: u64,
    pub cores: Vec<CoreTicks>,
    pub procs: BTreeMap<u32, LiveProc>,
    /// Processes created since boot (the `processes` line of /proc/stat).
    pub forks: u64,
    /// Context switches since boot (the `ctxt` line), integrated from [`Self::ctxt_rate`] so it
    /// stays continuous when the load changes.
    pub ctxt: f64,
    pub births: u64,
    pub deaths: u64,
    alloc: PidAlloc,
    declared: Vec<DeclaredSched>,
    churn_next: u64,
    epoch: i64,
    next_serial: u64,
    reserved: HashSet<u32>,
}

/// Declared birth, or: an idle process started 30 s after boot, a busy one 10 minutes before t=0
/// (so its CPU total stays well under its share of the per-core totals).
fn default_birth(p: &crate::model::Process, uptime: f64) -> f64 {
    match p.born_s {
        Some(b) => b,
        None if p.cpu_pct() > 0.0 => -(600.0f64.min(uptime * 0.5)),
        None => -(uptime - 30.0).max(uptime * 0.5),
    }
}

/// splitmix64: a small deterministic hash.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub(crate) fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

pub use crate::model::split_partition;

/// Name of partition `n` of disk `disk` (sda -> sda3, nvme0n1 -> nvme0n1p3).
pub(crate) fn partition_name(disk: &str, n: u32) -> String {
    if disk.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{disk}p{n}")
    } else {
        format!("{disk}{n}")
    }
}

impl HostSim {
    /// The state at t=0. `wall_start` is the epoch second that t=0 maps to (for btime).
    pub fn new(host: &Host, seed: u64, wall_start: u64) -> HostSim {
        let host = host.clone();
        let uptime = host.uptime_s.max(60.0);
        let u = uptime * HZ;
        let cores = (0..host.cores)
            .map(|_| CoreTicks {
                user: 0.04 * u,
                system: 0.02 * u,
                iowait: 0.01 * u,
                softirq: 0.003 * u,
                idle: 0.927 * u,
                ..Default::default()
            })
            .collect();
        let max_declared = host
            .processes
            .iter()
            .flat_map(|p| std::iter::once(p.pid).chain(p.threads.iter().filter_map(|t| t.tid)))
            .max()
            .unwrap_or(1000);
        let first_dyn = host
            .first_dynamic_pid
            .unwrap_or(max_declared + 100)
            .clamp(300, host.pid_max - 1);
        let mut reserved = HashSet::new();
        for p in &host.processes {
            reserved.insert(p.pid);
            for t in &p.threads {
                if let Some(tid) = t.tid {
                    reserved.insert(tid);
                }
            }
        }
        let alloc = PidAlloc {
            next: first_dyn,
            max: host.pid_max,
            used: reserved.clone(),
            last: first_dyn,
        };
        let declared = host
            .processes
            .iter()
            .map(|p| {
                let b0 = default_birth(p, uptime);
                // Skip instances that ended before t=0.
                let mut k = 0u32;
                if let Some(r) = &p.restart {
                    let period = r.every_s + r.gap_s.max(0.0);
                    if b0 < 0.0 && period > 0.0 {
                        k = ((-b0) / period).floor() as u32;
                    }
                }
                let next = Self::instance_birth(p, b0, k);
                DeclaredSched {
                    next_instance: k,
                    next_birth: next,
                }
            })
            .collect();
        let mut sim = HostSim {
            seed,
            t: 0.0,
            btime: wall_start.saturating_sub(uptime as u64),
            cores,
            procs: BTreeMap::new(),
            forks: max_declared as u64 + 2000,
            // Started like the other counters: the idle rate over a fifth of the uptime.
            ctxt: 400.0 * f64::from(host.cores) * uptime / 5.0,
            births: 0,
            deaths: 0,
            alloc,
            declared,
            churn_next: 0,
            epoch: 0,
            next_serial: 1,
            reserved,
            host,
        };
        sim.apply_events(0.0);
        sim.reassign();
        sim
    }

    fn instance_birth(p: &crate::model::Process, b0: f64, k: u32) -> Option<f64> {
        let bt = match &p.restart {
            Some(r) => b0 + k as f64 * (r.every_s + r.gap_s.max(0.0)),
            None if k == 0 => b0,
            None => return None,
        };
        match p.dies_s {
            Some(d) if bt >= d => None,
            _ => Some(bt),
        }
    }

    fn base_birth(&self, idx: usize) -> f64 {
        default_birth(&self.host.processes[idx], self.host.uptime_s.max(60.0))
    }

    fn churn_birth_time(&self, n: u64) -> Option<f64> {
        let c = self.host.churn.as_ref()?;
        if c.per_s <= 0.0 {
            return None;
        }
        Some(n as f64 / c.per_s)
    }

    fn next_event(&self) -> f64 {
        let mut next = (self.epoch + 1) as f64 * self.host.migrate_every_s;
        for d in &self.declared {
            if let Some(b) = d.next_birth {
                next = next.min(b);
            }
        }
        if let Some(b) = self.churn_birth_time(self.churn_next) {
            next = next.min(b);
        }
        for p in self.procs.values() {
            if let Some(d) = p.dies_t {
                next = next.min(d);
            }
        }
        next
    }

    /// Moves time forward to `t` (no-op if `t` is not later), integrating CPU and applying
    /// births and deaths in time order. Events at exactly `t` are applied.
    pub fn advance_to(&mut self, t: f64) {
        loop {
            let ev = self.next_event();
            if ev > t {
                break;
            }
            let ev = ev.max(self.t);
            self.integrate(ev - self.t);
            self.t = ev;
            self.apply_events(ev);
        }
        if t > self.t {
            self.integrate(t - self.t);
            self.t = t;
        }
    }

    fn apply_events(&mut self, t: f64) {
        // Deaths first, so that a restart gap of 0 still shows two distinct processes.
        let dead: Vec<u32> = self
            .procs
            .values()
            .filter(|p| p.dies_t.is_some_and(|d| d <= t))
            .map(|p| p.pid)
            .collect();
        for pid in dead {
            if let Some(p) = self.procs.remove(&pid) {
                self.deaths += 1;
                for th in &p.threads {
                    if !self.reserved.contains(&th.tid) {
                        self.alloc.used.remove(&th.tid);
                    }
                }
            }
        }
        for idx in 0..self.declared.len() {
            while let Some(bt) = self.declared[idx].next_birth {
                if bt > t {
                    break;
                }
                let k = self.declared[idx].next_instance;
                let p = &self.host.processes[idx];
                let die = match &p.restart {
                    Some(r) => Some(match p.dies_s {
                        Some(d) => d.min(bt + r.every_s),
                        None => bt + r.every_s,
                    }),
                    None => p.dies_s,
                };
                if die.is_none_or(|d| d > t) {
                    self.spawn_declared(idx, k, bt, die, t);
                }
                let b0 = self.base_birth(idx);
                self.declared[idx].next_instance = k + 1;
                self.declared[idx].next_birth =
                    Self::instance_birth(&self.host.processes[idx], b0, k + 1);
            }
        }
        while let Some(bt) = self.churn_birth_time(self.churn_next) {
            if bt > t {
                break;
            }
            let n = self.churn_next;
            self.churn_next += 1;
            self.spawn_churn(n, bt, t);
        }
        let mig = self.host.migrate_every_s;
        if t >= (self.epoch + 1) as f64 * mig {
            self.epoch = (t / mig).floor() as i64;
            self.reassign();
        }
    }

    fn new_serial(&mut self) -> u64 {
        let s = self.next_serial;
        self.next_serial += 1;
        s
    }

    fn spawn_declared(&mut self, idx: usize, k: u32, born: f64, dies: Option<f64>, now: f64) {
        let p = self.host.processes[idx].clone();
        let pid = if k == 0 {
            p.pid
        } else {
            let pid = self.alloc.alloc();
            self.forks += 1;
            pid
        };
        if self.procs.contains_key(&pid) {
            // A declared pid still held by a previous instance (gap 0): take a fresh one.
            return self.spawn_declared(idx, k.max(1), born, dies, now);
        }
        let token = if p.token != 0 || p.cmdline.iter().any(|a| a.contains("{token}")) {
            Some(p.token + k as u64 * 104_729)
        } else {
            None
        };
        let cmdline = p
            .cmdline
            .iter()
            .map(|a| {
                let a = a.replace("{instance}", &k.to_string());
                match token {
                    Some(tk) => a.replace("{token}", &tk.to_string()),
                    None => a,
                }
            })
            .collect();
        let decl_threads = if p.threads.is_empty() {
            vec![crate::model::Thread::default()]
        } else {
            p.threads.clone()
        };
        let mut threads = Vec::with_capacity(decl_threads.len());
        for (i, th) in decl_threads.iter().enumerate() {
            let tid = if i == 0 {
                pid
            } else if let (0, Some(tid)) = (k, th.tid) {
                tid
            } else if k == 0 && self.alloc.take(pid + i as u32) {
                pid + i as u32
            } else {
                self.alloc.alloc()
            };
            threads.push(self.new_thread(
                tid,
                th.comm.clone().unwrap_or_else(|| p.comm.clone()),
                th,
                born,
                now,
            ));
        }
        let serial = self.new_serial();
        self.births += 1;
        let lp = LiveProc {
            pid,
            serial,
            source: Source::Declared(idx),
            instance: k,
            comm: p.comm.clone(),
            cmdline,
            born_t: born,
            dies_t: dies,
            threads,
            ppid: p.ppid,
            uid: p.uid,
            nice: p.nice,
            rss_mib: p.rss_mib,
            vsize_mib: p.vsize_mib,
            kernel_thread: p.kernel_thread,
            minor_faults_s: p.minor_faults_s,
            major_faults_s: p.major_faults_s,
            blkio_pct: p.blkio_pct,
            token,
        };
        self.procs.insert(pid, lp);
    }

    fn new_thread(
        &mut self,
        tid: u32,
        comm: String,
        th: &crate::model::Thread,
        born: f64,
        now: f64,
    ) -> LiveThread {
        let age = (now - born).max(0.0);
        let core = self.least_loaded_core(tid);
        LiveThread {
            tid,
            comm,
            cpu_pct: th.cpu_pct,
            sys_frac: th.sys_frac.clamp(0.0, 1.0),
            delay_pct: th.delay_pct.max(0.0),
            core,
            utime: th.cpu_pct * (1.0 - th.sys_frac.clamp(0.0, 1.0)) * age,
            stime: th.cpu_pct * th.sys_frac.clamp(0.0, 1.0) * age,
            delay_s: if th.cpu_pct > 0.0 {
                th.delay_pct / 100.0 * age
            } else {
                0.0
            },
        }
    }

    fn spawn_churn(&mut self, n: u64, born: f64, now: f64) {
        let c = self.host.churn.clone().expect("churn");
        let comm = if c.comms.is_empty() {
            "sh".to_string()
        } else {
            c.comms[(n as usize) % c.comms.len()].clone()
        };
        let pid = self.alloc.alloc();
        self.forks += 1;
        let th_decl = crate::model::Thread::new(c.cpu_pct);
        let mut threads = vec![self.new_thread(pid, comm.clone(), &th_decl, born, now)];
        for _ in 1..c.threads.max(1) {
            let tid = self.alloc.alloc();
            threads.push(self.new_thread(
                tid,
                comm.clone(),
                &crate::model::Thread::new(0.0),
                born,
                now,
            ));
        }
        let serial = self.new_serial();
        self.births += 1;
        let cmdline = vec![comm.clone(), format!("--job={n}")];
        let lp = LiveProc {
            pid,
            serial,
            source: Source::Churn(n),
            instance: 0,
            comm,
            cmdline,
            born_t: born,
            dies_t: Some(born + c.lifetime_s),
            threads,
            ppid: 1,
            uid: 1000,
            nice: 0,
            rss_mib: 2.0,
            vsize_mib: 12.0,
            kernel_thread: false,
            minor_faults_s: 200.0,
            major_faults_s: 0.0,
            blkio_pct: 0.0,
            token: None,
        };
        self.procs.insert(pid, lp);
    }

    fn core_loads(&self) -> Vec<f64> {
        let mut load = vec![0.0; self.host.cores as usize];
        for p in self.procs.values() {
            for th in &p.threads {
                load[th.core as usize] += th.cpu_pct;
            }
        }
        load
    }

    fn least_loaded_core(&self, tid: u32) -> u32 {
        let n = self.host.cores as u64;
        let load = self.core_loads();
        let rot = mix(self.seed ^ tid as u64 ^ (self.epoch as u64).wrapping_mul(31)) % n;
        (0..n)
            .min_by(|&a, &b| {
                let ka = (load[a as usize], (a + n - rot) % n);
                let kb = (load[b as usize], (b + n - rot) % n);
                ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal)
            })
            .unwrap_or(0) as u32
    }

    /// Re-places every thread for the current epoch: busiest first, each on the least loaded
    /// core, ties broken by a rotation that changes every epoch (so threads migrate).
    fn reassign(&mut self) {
        let n = self.host.cores as u64;
        let epoch_key = mix(self.seed
            ^ hash_str(&self.host.name)
            ^ (self.epoch as u64).wrapping_mul(0x1000_0001));
        let mut order: Vec<(f64, u32, u32)> = Vec::new(); // (load, pid, tid)
        for p in self.procs.values() {
            for th in &p.threads {
                order.push((th.cpu_pct, p.pid, th.tid));
            }
        }
        order.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.2.cmp(&b.2))
        });
        let mut load = vec![0.0; n as usize];
        let mut placed: Vec<(u32, u32, u32)> = Vec::with_capacity(order.len());
        for (i, (l, pid, tid)) in order.iter().enumerate() {
            let core = if *l > 0.0 {
                let rot = mix(epoch_key ^ i as u64) % n;
                let c = (0..n)
                    .min_by(|&a, &b| {
                        let ka = (load[a as usize], (a + n - rot) % n);
                        let kb = (load[b as usize], (b + n - rot) % n);
                        ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .unwrap_or(0);
                load[c as usize] += l;
                c as u32
            } else {
                (mix(epoch_key ^ *tid as u64) % n) as u32
            };
            placed.push((*pid, *tid, core));
        }
        for (pid, tid, core) in placed {
            if let Some(p) = self.procs.get_mut(&pid)
                && let Some(th) = p.threads.iter_mut().find(|t| t.tid == tid)
            {
                th.core = core;
            }
        }
    }

    /// Context switches per second now: 400 per core plus 30 per percent of CPU load.
    pub fn ctxt_rate(&self) -> f64 {
        let load: f64 = self.procs.values().map(|p| p.cpu_pct()).sum();
        400.0 * f64::from(self.host.cores) + load * 30.0
    }

    fn integrate(&mut self, dt: f64) {
        if dt <= 0.0 {
            return;
        }
        self.ctxt += self.ctxt_rate() * dt;
        let load = self.core_loads();
        let scale: Vec<f64> = load
            .iter()
            .map(|&l| if l > 100.0 { 100.0 / l } else { 1.0 })
            .collect();
        for p in self.procs.values_mut() {
            let niced = p.nice > 0;
            for th in &mut p.threads {
                if th.cpu_pct <= 0.0 {
                    // An idle thread is not runnable: no run delay.
                    continue;
                }
                let c = th.core as usize;
                let eff = th.cpu_pct * scale[c];
                let u = eff * (1.0 - th.sys_frac) * dt;
                let s = eff * th.sys_frac * dt;
                th.utime += u;
                th.stime += s;
                th.delay_s += (th.delay_pct / 100.0 + (th.cpu_pct - eff) / 100.0) * dt;
                let core = &mut self.cores[c];
                if niced {
                    core.nice += u;
                } else {
                    core.user += u;
                }
                core.system += s;
            }
        }
        let bg = &self.host.cpu;
        for (c, core) in self.cores.iter_mut().enumerate() {
            let mut rem = 100.0 - load[c].min(100.0);
            let mut take = |want: f64| {
                let x = want.max(0.0).min(rem);
                rem -= x;
                x * dt
            };
            if c as u32 == bg.irq_core % self.host.cores {
                core.irq += take(bg.irq_pct);
                core.softirq += take(bg.softirq_pct);
            }
            core.steal += take(bg.steal_pct);
            core.system += take(bg.system_pct);
            core.user += take(bg.user_pct);
            core.iowait += take(bg.iowait_pct);
            core.idle += rem * dt;
        }
    }

    // ----- linear counters -------------------------------------------------------------------

    pub(crate) fn is32(&self) -> bool {
        self.host.kernel.counters_32bit()
    }

    /// Value of a counter growing at `rate`/s during `active_s` seconds of the scenario, started
    /// at "rate x uptime/5", wrapped to the flavour's `unsigned long` width when `wrappable`.
    pub fn counter(&self, rate: f64, active_s: f64, wrappable: bool) -> u64 {
        let v = rate * (self.host.uptime_s / 5.0 + active_s);
        let v = if v.is_finite() && v > 0.0 {
            v.floor() as u64
        } else {
            0
        };
        if wrappable && self.is32() {
            v & 0xffff_ffff
        } else {
            v
        }
    }

    /// A fast byte or sector counter (net/dev bytes, diskstats sectors): like
    /// [`counter`](Self::counter) with wrapping, but with `wrap_at_s` on a 32-bit flavour its
    /// start value is placed so it crosses 2^32 exactly `wrap_at_s` active seconds after t=0.
    pub(crate) fn counter_fast(&self, rate: f64, active_s: f64) -> u64 {
        match self.host.wrap_at_s {
            Some(w) if self.is32() && rate > 0.0 => {
                let base = TWO32 - (rate * w).rem_euclid(TWO32);
                let v = base + rate * active_s;
                (if v.is_finite() && v > 0.0 {
                    v.floor() as u64
                } else {
                    0
                }) & 0xffff_ffff
            }
            _ => self.counter(rate, active_s, true),
        }
    }

    /// Like [`counter`](Self::counter) for a field the kernel keeps in 32 bits on every flavour.
    pub(crate) fn counter_u32(&self, rate: f64, active_s: f64) -> u64 {
        let v = rate * (self.host.uptime_s / 5.0 + active_s);
        (if v.is_finite() && v > 0.0 {
            v.floor() as u64
        } else {
            0
        }) & 0xffff_ffff
    }

    pub fn kernel(&self) -> Kernel {
        self.host.kernel
    }

    pub fn last_pid(&self) -> u32 {
        self.alloc.last
    }

    pub fn uptime(&self) -> f64 {
        self.host.uptime_s.max(60.0) + self.t
    }

    /// Per-core ticks summed (the `cpu` line).
    pub fn total_ticks(&self) -> CoreTicks {
        let mut s = CoreTicks::default();
        for c in &self.cores {
            s.user += c.user;
            s.nice += c.nice;
            s.system += c.system;
            s.idle += c.idle;
            s.iowait += c.iowait;
            s.irq += c.irq;
            s.softirq += c.softirq;
            s.steal += c.steal;
        }
        s
    }

    pub(crate) fn thread_count(&self) -> usize {
        self.procs.values().map(|p| p.threads.len()).sum()
    }

    /// Seconds in [0, t) during which NIC `name` carried traffic (not admin down, no flap).
    pub(crate) fn nic_active_s(&self, nic: &crate::model::Nic) -> f64 {
        if nic.is_admin_down() {
            return 0.0;
        }
        let down: f64 = nic.down.iter().map(|w| w.overlap(self.t)).sum();
        (self.t - down).max(0.0)
    }

    pub(crate) fn nic_is_up(&self, nic: &crate::model::Nic) -> bool {
        !nic.is_admin_down() && !nic.down.iter().any(|w| w.contains(self.t))
    }
}

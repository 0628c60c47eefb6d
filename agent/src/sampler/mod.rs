//! Samplers: read /proc and /sys through the configured roots, keep previous raw counters and
//! turn them into the per-interval deltas of a [`nasprobe_proto::Sample`].
//!
//! API contract used by the server (keep it stable):
//! - [`Sampler::new`] never fails: a missing or unreadable source logs once and yields `None`.
//!   It already discovers disks and NICs, so [`Sampler::fill_hello`] works right after it.
//! - [`Sampler::fill_hello`] writes the host description and the inventory into a `Hello`
//!   (host name, kernel, arch, cpu_count, clock ticks, page size, boot id, interval_ms,
//!   disks, md_arrays, nics, mounts). The server fills the protocol/instance/sequence fields.
//! - [`Sampler::sample`] takes one sample; the first call only primes the counters and returns
//!   `false`. Events (process start/exit, link changes, devices added) go to `emit` in the order
//!   they happened, before the sample they belong to is returned. `out.agent.clients` is left
//!   as the caller set it.
//!
//! Cost: no allocation after `new` on the sampling path (buffers and tables are reserved
//! once); on a real procfs/sysfs the system files stay open and are re-read with pread.

mod conns;
mod delta;
mod devices;
mod files;
pub mod io;
mod procs;
mod tc;

pub use delta::step;

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use nasprobe_proto::{
    AgentSelf, CpuTicks, Event, HOST_NAME_LEN, Hello, KERNEL_LEN, MAX_CPUS, MAX_MOUNTS, Memory,
    MountSample, PATH_LEN, SHORT_LEN, Sample, TcpActivity, VmActivity, flags,
};

use crate::config::Config;
use crate::parse::meminfo::{estimate_available, parse_meminfo};
use crate::parse::proc_stat::{self, CPU_FIELDS, CpuRaw, ProcStat, parse_stat};
use crate::parse::snmp::{TcpCounters, parse_netstat, parse_snmp};
use crate::parse::vmstat::{VmStat, parse_vmstat};
use crate::parse::{sysfs, to_label};
use crate::sys::process::sysconf;
use delta::{opt_step, u32s};
use io::{Once, Root, Src};

/// The one read buffer shared by every file. /proc/stat is the largest file read: ~100 bytes
/// per CPU plus the `intr` line (one number per IRQ: a few KiB on a NAS, tens of KiB on big
/// servers). 64 KiB holds it for MAX_CPUS=256; a bigger file is `ReadError::Full`, logged.
pub(crate) const READ_BUF: usize = 64 * 1024;

/// What the agent tells about its host (fixed at start).
#[derive(Debug, Clone, Default)]
struct Host {
    name: heapless::String<HOST_NAME_LEN>,
    kernel: heapless::String<KERNEL_LEN>,
    arch: heapless::String<SHORT_LEN>,
    boot_id: heapless::String<SHORT_LEN>,
    cpu_count: u16,
    hz: u32,
    page_size: u32,
}

pub struct Sampler {
    proc: Root,
    sys: Root,
    buf: Box<[u8]>,
    primed: bool,
    host: Host,
    interval_ms: u32,
    // /proc/stat
    stat_src: Src,
    stat: Box<ProcStat>,
    prev_total: Option<CpuRaw>,
    prev_cpus: Box<[Option<CpuRaw>]>,
    prev_ctxt: Option<u64>,
    prev_forks: Option<u64>,
    log_stat: Once,
    // memory, vm, tcp
    meminfo_src: Src,
    vmstat_src: Src,
    snmp_src: Src,
    netstat_src: Src,
    min_free_kib: Option<u64>,
    prev_vm: Option<VmStat>,
    prev_tcp: Option<TcpCounters>,
    log_mem: Once,
    // devices, processes
    procs: procs::Procs,
    conns: conns::Conns,
    disks: devices::Disks,
    nics: devices::Nics,
    shapers: tc::Shapers,
    mounts: Vec<PathBuf>,
    log_mount: Once,
    // self
    last_mono_us: u64,
    /// Wall clock (ms since the epoch) read together with `last_mono_us`: the end of the
    /// interval of the last sample, which is the time its record carries.
    last_wall_ms: u64,
    last_cpu_us: u64,
    statm: Option<OwnedFd>,
}

impl Sampler {
    pub fn new(cfg: &Config) -> Sampler {
        let proc = Root::open(&cfg.proc_root, io::PROC_SUPER_MAGIC);
        let sys = Root::open(&cfg.sys_root, io::SYSFS_MAGIC);
        let hz = sysconf(libc::_SC_CLK_TCK).max(1) as u64;
        let page_size = sysconf(libc::_SC_PAGESIZE).max(1) as u32;
        let statm = c"/proc/self/statm";
        let mut s = Sampler {
            host: Host {
                hz: hz as u32,
                page_size,
                ..Host::default()
            },
            interval_ms: cfg.interval_ms,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            primed: false,
            stat_src: Src::new("stat"),
            stat: Box::default(),
            prev_total: None,
            prev_cpus: vec![None; MAX_CPUS].into_boxed_slice(),
            prev_ctxt: None,
            prev_forks: None,
            log_stat: Once::default(),
            meminfo_src: Src::new("meminfo"),
            vmstat_src: Src::new("vmstat"),
            snmp_src: Src::new("net/snmp"),
            netstat_src: Src::new("net/netstat"),
            min_free_kib: io::read_small(&proc, "sys/vm/min_free_kbytes")
                .and_then(|b| sysfs::parse_num(&b).ok()),
            prev_vm: None,
            prev_tcp: None,
            log_mem: Once::default(),
            procs: procs::Procs::new(cfg, hz),
            conns: conns::Conns::new(cfg.open_files),
            disks: devices::Disks::new(cfg.partitions),
            nics: devices::Nics::new(&cfg.link_speeds),
            shapers: tc::Shapers::new(cfg.shaping && proc.real && sys.real),
            mounts: cfg.mounts.iter().take(MAX_MOUNTS).cloned().collect(),
            log_mount: Once::default(),
            last_mono_us: 0,
            last_wall_ms: 0,
            last_cpu_us: 0,
            statm: io::open_path(statm, libc::O_RDONLY).ok(),
            proc,
            sys,
        };
        if cfg.mounts.len() > MAX_MOUNTS {
            log::warn!(
                "more than MAX_MOUNTS={MAX_MOUNTS} --mount paths: only the first {MAX_MOUNTS} are sampled"
            );
        }
        s.host_info(cfg);
        // Discover the inventory now so that a Hello sent before the first sample is complete.
        let mut none = |_e: Event| {};
        s.disks
            .sample(&s.proc, &s.sys, &mut s.buf, false, None, &mut none);
        s.nics
            .sample(&s.proc, &s.sys, &mut s.buf, false, None, &mut none);
        s
    }

    fn host_info(&mut self, cfg: &Config) {
        let uts = nix::sys::utsname::uname().ok();
        let word = |root: &Root, rel: &str| -> Option<Vec<u8>> {
            io::read_small(root, rel).and_then(|b| sysfs::parse_word(&b).ok().map(|w| w.to_vec()))
        };
        let uts_field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| -> Vec<u8> {
            use std::os::unix::ffi::OsStrExt;
            uts.as_ref()
                .map(|u| f(u).as_bytes().to_vec())
                .unwrap_or_default()
        };
        let name = match &cfg.name {
            Some(n) => n.as_bytes().to_vec(),
            None => word(&self.proc, "sys/kernel/hostname")
                .unwrap_or_else(|| uts_field(|u| u.nodename())),
        };
        to_label(&name, HOST_NAME_LEN, &mut self.host.name);
        let kernel =
            word(&self.proc, "sys/kernel/osrelease").unwrap_or_else(|| uts_field(|u| u.release()));
        to_label(&kernel, KERNEL_LEN, &mut self.host.kernel);
        let arch =
            word(&self.proc, "sys/kernel/arch").unwrap_or_else(|| uts_field(|u| u.machine()));
        to_label(&arch, SHORT_LEN, &mut self.host.arch);
        if let Some(b) = word(&self.proc, "sys/kernel/random/boot_id") {
            to_label(&b, SHORT_LEN, &mut self.host.boot_id);
        }
        let mut cpus = 0u16;
        if let Ok(b) = self.stat_src.read(&self.proc, &mut self.buf)
            && parse_stat(b, &mut self.stat).is_ok()
        {
            cpus = self.stat.cpus.iter().map(|c| c.0 + 1).max().unwrap_or(0);
        }
        if cpus == 0 {
            // c_long is 32 bits on armv7: clamp in its own type.
            cpus = sysconf(libc::_SC_NPROCESSORS_CONF).clamp(1, MAX_CPUS as libc::c_long) as u16;
        }
        self.host.cpu_count = cpus;
    }

    pub fn fill_hello(&self, hello: &mut Hello) {
        hello.host_name = self.host.name.clone();
        hello.kernel_release = self.host.kernel.clone();
        hello.arch = self.host.arch.clone();
        hello.cpu_count = self.host.cpu_count;
        hello.clock_ticks_per_sec = self.host.hz;
        hello.page_size = self.host.page_size;
        hello.boot_id = self.host.boot_id.clone();
        hello.interval_ms = self.interval_ms;
        hello.disks = self.disks.info.clone();
        hello.md_arrays = self.disks.md.clone();
        hello.nics = self.nics.info.clone();
        hello.mounts.clear();
        for m in &self.mounts {
            let mut s = heapless::String::<PATH_LEN>::new();
            to_label(m.as_os_str().as_encoded_bytes(), PATH_LEN, &mut s);
            let _ = hello.mounts.push(s);
        }
    }

    /// Wall clock at the end of the last sample's interval, ms since the epoch: read at the
    /// same moment as the monotonic clock that measured the interval, so that a host too busy
    /// to run the agent promptly does not shift record times against their intervals.
    pub(crate) fn sample_wall_ms(&self) -> u64 {
        self.last_wall_ms
    }

    /// True when `--proc-root` is the kernel's own procfs (pids there are the kernel's).
    pub fn proc_is_real(&self) -> bool {
        self.proc.real
    }

    /// Exits come from the kernel's process connector (true) or from /proc scans only.
    pub fn set_kernel_exits(&mut self, on: bool) {
        self.procs.set_kernel_exits(on);
    }

    /// One message of the process connector: exits get their status, new processes (fork of
    /// a process, exec) are read at the next sample.
    pub fn proc_event(&mut self, ev: crate::parse::cn_proc::ProcEvent) {
        use crate::parse::cn_proc::ProcEvent;
        match ev {
            ProcEvent::Exit {
                pid,
                tgid,
                exit_code,
                timestamp_ns,
            } => self.procs.kernel_exit(pid, tgid, exit_code, timestamp_ns),
            ProcEvent::Fork {
                child_pid,
                child_tgid,
                ..
            } if child_pid == child_tgid => self.procs.kernel_new(child_pid),
            ProcEvent::Exec { pid, tgid } if pid == tgid => self.procs.kernel_new(pid),
            _ => {}
        }
    }

    /// The OOM killer killed `pid`: its exit will say so. False when it is not tracked.
    pub fn oom_kill(&mut self, pid: u32) -> bool {
        self.procs.oom_kill(pid)
    }

    pub fn is_tracked(&self, pid: u32) -> bool {
        self.procs.is_tracked(pid)
    }

    /// True when `name` is a NIC of the inventory.
    pub fn is_nic(&self, name: &[u8]) -> bool {
        self.nics.info.iter().any(|n| n.name.as_bytes() == name)
    }

    /// A kernel log line redacted like a command line.
    pub fn redact_line(&self, line: &[u8], out: &mut nasprobe_proto::Cmdline) {
        self.procs.redact_line(line, out);
    }

    /// Processes tracked now, and times the table was full (for `sample` and the bench).
    pub fn process_stats(&self) -> (usize, u32) {
        (self.procs.tracked(), self.procs.table_full)
    }

    /// Full scans of /proc so far, and those of them `--scan adaptive` ran because the host's
    /// busy CPU was not accounted for by the processes read.
    pub fn scan_counts(&self) -> (u32, u32) {
        (self.procs.full_scans, self.procs.triggered_scans)
    }

    pub fn sample(&mut self, out: &mut Sample, emit: &mut dyn FnMut(Event)) -> bool {
        let priming = !self.primed;
        clear(out);
        let now_us = mono_us();
        out.interval_us = u32s(now_us.saturating_sub(self.last_mono_us));
        self.last_mono_us = now_us;
        self.last_wall_ms = wall_ms();

        self.cpu(out, priming);
        let target = if priming { None } else { Some(&mut *out) };
        self.disks
            .sample(&self.proc, &self.sys, &mut self.buf, !priming, target, emit);
        let target = if priming { None } else { Some(&mut *out) };
        self.nics
            .sample(&self.proc, &self.sys, &mut self.buf, !priming, target, emit);
        if !priming && let Some(sh) = self.shapers.poll(&self.sys, &self.nics.info) {
            emit(Event::Shaping(sh.into()));
        }
        self.procs
            .sample(&self.proc, &mut self.buf, priming, out, emit);
        if !priming && self.conns.due(&self.proc) {
            let top = self.procs.top_procs(nasprobe_proto::MAX_CONN_PROCS);
            let candidates = if self.conns.open_files() {
                self.procs.io_candidates(files::IO_CANDIDATES)
            } else {
                Vec::new()
            };
            let procs = &self.procs;
            self.conns.sample(
                &self.proc,
                &top,
                &candidates,
                &|raw, out| procs.redact_path(raw, out),
                emit,
            );
        }
        self.memory(out);
        self.vm_tcp(out);
        self.mounts(out);
        self.agent_self(&mut out.agent);
        self.primed = true;
        !priming
    }

    fn cpu(&mut self, out: &mut Sample, priming: bool) {
        let content = match self.stat_src.read(&self.proc, &mut self.buf) {
            Ok(b) => b,
            Err(_) => return,
        };
        if let Err(e) = parse_stat(content, &mut self.stat) {
            self.log_stat.warn(format_args!(
                "{}/stat: {e}; CPU reported as unknown",
                self.proc.path.display()
            ));
            self.prev_total = None;
            return;
        }
        let st = &*self.stat;
        if let (Some(prev), Some(cur)) = (self.prev_total, st.total) {
            out.cpu_total = cpu_delta(&prev, &cur);
        }
        self.prev_total = st.total;
        let n = st.cpus.iter().map(|c| c.0 as usize + 1).max().unwrap_or(0);
        if !priming {
            for _ in 0..n {
                let _ = out.cpus.push(CpuTicks {
                    flags: flags::RESET,
                    ..Default::default()
                });
            }
        }
        for &(i, cur) in &st.cpus {
            let i = i as usize;
            if let Some(prev) = self.prev_cpus[i]
                && let Some(slot) = out.cpus.get_mut(i)
            {
                *slot = cpu_delta(&prev, &cur);
            }
            self.prev_cpus[i] = Some(cur);
        }
        out.procs_running = st
            .procs_running
            .map_or(0, |v| v.min(u16::MAX as u64) as u16);
        out.procs_blocked = st
            .procs_blocked
            .map_or(0, |v| v.min(u16::MAX as u64) as u16);
        out.forks = opt_step(self.prev_forks, st.processes).unwrap_or(0);
        out.context_switches = self
            .prev_ctxt
            .zip(st.ctxt)
            .and_then(|(p, c)| step(p, c))
            .unwrap_or(0);
        self.prev_forks = st.processes;
        self.prev_ctxt = st.ctxt;
    }

    fn memory(&mut self, out: &mut Sample) {
        let Ok(b) = self.meminfo_src.read(&self.proc, &mut self.buf) else {
            return;
        };
        let m = match parse_meminfo(b) {
            Ok(m) => m,
            Err(e) => {
                self.log_mem
                    .warn(format_args!("{}/meminfo: {e}", self.proc.path.display()));
                return;
            }
        };
        let (available, estimated) = match m.available {
            Some(a) => (a, false),
            None => (estimate_available(&m, self.min_free_kib).unwrap_or(0), true),
        };
        out.memory = Some(Memory {
            total_kib: m.total.unwrap_or(0),
            free_kib: m.free.unwrap_or(0),
            available_kib: available,
            available_estimated: estimated,
            buffers_kib: m.buffers.unwrap_or(0),
            cached_kib: m.cached.unwrap_or(0),
            dirty_kib: m.dirty.unwrap_or(0),
            writeback_kib: m.writeback.unwrap_or(0),
            swap_total_kib: m.swap_total.unwrap_or(0),
            swap_free_kib: m.swap_free.unwrap_or(0),
        });
    }

    fn vm_tcp(&mut self, out: &mut Sample) {
        let vm = match self.vmstat_src.read(&self.proc, &mut self.buf) {
            Ok(b) => match parse_vmstat(b) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.vmstat_src.complain(&self.proc, &e);
                    None
                }
            },
            Err(_) => None,
        };
        if let (Some(p), Some(c)) = (self.prev_vm, vm) {
            out.vm = Some(VmActivity {
                swap_in_pages: opt_step(p.pswpin, c.pswpin).unwrap_or(0),
                swap_out_pages: opt_step(p.pswpout, c.pswpout).unwrap_or(0),
                major_faults: opt_step(p.pgmajfault, c.pgmajfault).unwrap_or(0),
                alloc_stalls: opt_step(p.allocstall, c.allocstall),
                direct_scanned: opt_step(p.pgscan_direct, c.pgscan_direct),
            });
        }
        self.prev_vm = vm;

        let mut t = TcpCounters::default();
        let mut ok = false;
        if let Ok(b) = self.snmp_src.read(&self.proc, &mut self.buf) {
            match parse_snmp(b, &mut t) {
                Ok(()) => ok = true,
                Err(e) => self.snmp_src.complain(&self.proc, &e),
            }
        }
        if ok
            && let Ok(b) = self.netstat_src.read(&self.proc, &mut self.buf)
            && let Err(e) = parse_netstat(b, &mut t)
        {
            self.netstat_src.complain(&self.proc, &e);
        }
        let cur = ok.then_some(t);
        if let (Some(p), Some(c)) = (self.prev_tcp, cur) {
            out.tcp = Some(TcpActivity {
                retrans_segs: opt_step(p.retrans_segs, c.retrans_segs).unwrap_or(0),
                out_rsts: opt_step(p.out_rsts, c.out_rsts).unwrap_or(0),
                in_errs: opt_step(p.in_errs, c.in_errs).unwrap_or(0),
                estab_resets: opt_step(p.estab_resets, c.estab_resets).unwrap_or(0),
                attempt_fails: opt_step(p.attempt_fails, c.attempt_fails).unwrap_or(0),
                timeouts: opt_step(p.timeouts, c.timeouts),
                // Linux has no keepalive-abort counter: they are inside TCPAbortOnTimeout.
                keepalive_aborts: None,
                timeout_aborts: opt_step(p.timeout_aborts, c.timeout_aborts),
                listen_drops: opt_step(p.listen_drops, c.listen_drops),
            });
        }
        self.prev_tcp = cur;
    }

    // fsblkcnt_t and f_frsize differ in width between targets: the casts are for portability.
    #[allow(clippy::unnecessary_cast)]
    fn mounts(&mut self, out: &mut Sample) {
        for (i, m) in self.mounts.iter().enumerate() {
            match nix::sys::statvfs::statvfs(m.as_path()) {
                Ok(v) => {
                    let frag = v.fragment_size() as u64;
                    let used = (v.blocks() as u64).saturating_sub(v.blocks_free() as u64) * frag;
                    let free = v.blocks_available() as u64 * frag;
                    let _ = out.mounts.push(MountSample {
                        mount: i as u16,
                        used_bytes: used,
                        free_bytes: free,
                    });
                }
                Err(e) => self
                    .log_mount
                    .warn(format_args!("statvfs {}: {e}", m.display())),
            }
        }
    }

    fn agent_self(&mut self, a: &mut AgentSelf) {
        if let Ok(r) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
            let us =
                |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
            let cpu = us(r.user_time()) + us(r.system_time());
            a.cpu_us = u32s(cpu.saturating_sub(self.last_cpu_us));
            self.last_cpu_us = cpu;
        }
        if let Some(fd) = &self.statm {
            let mut b = [0u8; 128];
            if let Ok(c) = io::read_at(fd.as_fd(), &mut b)
                && let Ok(pages) = sysfs::parse_statm_resident(c)
            {
                a.rss_kib = u32s(pages * self.host.page_size as u64 / 1024);
            }
        }
    }
}

/// Per-CPU deltas. iowait may go backwards on a real kernel (Documentation/filesystems/
/// proc.rst: "the value of iowait field in /proc/stat will decrease in certain conditions"):
/// that field alone counts 0 instead of marking the CPU reset.
fn cpu_delta(prev: &CpuRaw, cur: &CpuRaw) -> CpuTicks {
    let mut d = [0u32; CPU_FIELDS];
    for i in 0..CPU_FIELDS {
        match step(prev[i], cur[i]) {
            Some(v) => d[i] = u32s(v),
            None if i == proc_stat::IOWAIT => d[i] = 0,
            None => {
                return CpuTicks {
                    flags: flags::RESET,
                    ..Default::default()
                };
            }
        }
    }
    CpuTicks {
        flags: 0,
        user: d[proc_stat::USER],
        nice: d[proc_stat::NICE],
        system: d[proc_stat::SYSTEM],
        idle: d[proc_stat::IDLE],
        iowait: d[proc_stat::IOWAIT],
        irq: d[proc_stat::IRQ],
        softirq: d[proc_stat::SOFTIRQ],
        steal: d[proc_stat::STEAL],
    }
}

fn mono_us() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000)
        .unwrap_or(0)
}

/// Resets everything the sampler writes (keeps `agent.clients`, the server's).
fn clear(out: &mut Sample) {
    out.interval_us = 0;
    out.cpu_total = CpuTicks::default();
    out.cpus.clear();
    out.procs_running = 0;
    out.procs_blocked = 0;
    out.forks = 0;
    out.context_switches = 0;
    out.short_lived = 0;
    out.top.clear();
    out.disks.clear();
    out.nics.clear();
    out.memory = None;
    out.vm = None;
    out.tcp = None;
    out.mounts.clear();
    out.agent.cpu_us = 0;
    out.agent.rss_kib = 0;
}

pub(crate) use nasprobe_proto::time::now_ms as wall_ms;

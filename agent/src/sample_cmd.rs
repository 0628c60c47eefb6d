//! `nasprobe-agent sample [--count N] [--json]`: primes the sampler, then prints N samples one
//! interval apart, so someone logged into a NAS can check by hand what the agent sees.
//! Human-readable by default; `--json` prints one JSON object per line (samples and events),
//! written by hand to keep the static binary small.

use std::fmt::Write as _;
use std::io::Write as _;

use nasprobe_formulas as f;
use nasprobe_proto::{Event, Hello, Sample, flags};

use crate::config::Config;
use crate::sampler::Sampler;

/// Runs the command; returns the process exit code.
pub fn run(cfg: &Config, count: u32, json: bool) -> i32 {
    let mut sampler = Sampler::new(cfg);
    let mut hello = Hello::default();
    sampler.fill_hello(&mut hello);
    let mut sample = Sample::default();
    let mut events: Vec<Event> = Vec::new();
    sampler.sample(&mut sample, &mut |e| events.push(e));
    events.clear();
    let stdout = std::io::stdout();
    let mut line = String::with_capacity(8192);
    if !json {
        let _ = writeln!(
            stdout.lock(),
            "{} · Linux {} · {} · {} CPUs · {} Hz · interval {} ms",
            hello.host_name,
            hello.kernel_release,
            hello.arch,
            hello.cpu_count,
            hello.clock_ticks_per_sec,
            cfg.interval_ms
        );
    }
    for _ in 0..count.max(1) {
        std::thread::sleep(std::time::Duration::from_millis(cfg.interval_ms as u64));
        sampler.sample(&mut sample, &mut |e| events.push(e));
        sampler.fill_hello(&mut hello);
        line.clear();
        for e in events.drain(..) {
            if json {
                json_event(&mut line, &e);
            } else {
                // Its JSON (escaped), never the debug text of the protocol's types.
                line.push_str("event: ");
                json_event(&mut line, &e);
            }
        }
        if json {
            json_sample(&mut line, &hello, &sample);
        } else {
            human(&mut line, &hello, &sample);
        }
        let mut out = stdout.lock();
        if out
            .write_all(line.as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            return 1;
        }
    }
    0
}

/// A fraction as a percentage, for people.
fn pct(x: f64) -> f64 {
    x * 100.0
}

/// One sample for people: every figure comes from [`nasprobe_formulas`], as the collector's.
pub fn human(o: &mut String, h: &Hello, s: &Sample) {
    human_cpu(o, s);
    human_procs(o, h, s);
    human_disks(o, h, s);
    human_nics(o, h, s);
    human_memory(o, s);
    for m in &s.mounts {
        let name = h.mounts.get(m.mount as usize).map_or("?", |p| p.as_str());
        let _ = writeln!(
            o,
            "fs   {name} used {} MiB free {} MiB",
            m.used_bytes >> 20,
            m.free_bytes >> 20
        );
    }
    let _ = writeln!(
        o,
        "self cpu {} µs · rss {} KiB",
        s.agent.cpu_us, s.agent.rss_kib
    );
}

fn human_cpu(o: &mut String, s: &Sample) {
    let secs = f::interval_s(s);
    let _ = write!(o, "\ninterval {secs:.3} s\ncpu ");
    match f::cpu_modes(&s.cpu_total) {
        Some(m) => {
            let _ = writeln!(
                o,
                "  usr {:5.1}%  sys {:5.1}%  iowait {:5.1}%  irq+soft {:4.1}%  steal {:4.1}%  idle {:5.1}%",
                pct(m.user),
                pct(m.system),
                pct(m.iowait),
                pct(m.irq),
                pct(m.steal),
                pct(m.idle)
            );
        }
        None => {
            let _ = writeln!(o, "  unknown this interval");
        }
    }
    let _ = write!(o, "cores");
    for (i, c) in s.cpus.iter().enumerate() {
        match f::cpu_busy(c) {
            Some(b) => {
                let _ = write!(o, "  cpu{i} {:3.0}%", pct(b));
            }
            None => {
                let _ = write!(o, "  cpu{i} --");
            }
        }
    }
    let _ = writeln!(
        o,
        "\ntasks running {} blocked {} · forks {} · ctxt {:.0}/s · short-lived exits {}",
        s.procs_running,
        s.procs_blocked,
        s.forks,
        f::per_s(s, s.context_switches as f64),
        s.short_lived
    );
}

fn human_procs(o: &mut String, h: &Hello, s: &Sample) {
    let hz = h.clock_ticks_per_sec;
    if !s.top.is_empty() {
        let _ = writeln!(
            o,
            "  {:>7} {:<15} S {:>4} {:>6} {:>6} {:>9}  hottest thread",
            "PID", "COMM", "THR", "CPU%", "SYS%", "WAIT ms"
        );
    }
    for p in &s.top {
        let wait = p
            .run_delay_us
            .map_or("-".to_string(), |us| format!("{:.1}", us as f64 / 1000.0));
        let _ = write!(
            o,
            "  {:>7} {:<15} {} {:>4} {:>6.1} {:>6.1} {:>9}",
            p.pid,
            p.comm,
            p.state as char,
            p.threads,
            pct(f::proc_cores(hz, s, p)),
            pct(f::core_fraction(hz, s, u64::from(p.stime))),
            wait
        );
        if let Some(t) = &p.hottest_thread {
            let _ = write!(
                o,
                "  {} {} {:.1}%",
                t.tid,
                t.comm.as_ref().map_or(p.comm.as_str(), |c| c.as_str()),
                pct(f::core_fraction(hz, s, u64::from(t.ticks)))
            );
        }
        let _ = writeln!(o);
        if let Some(c) = &p.cmdline {
            let _ = writeln!(o, "          cmd: {c}");
        }
    }
}

fn human_disks(o: &mut String, h: &Hello, s: &Sample) {
    for d in &s.disks {
        let name = h
            .disks
            .get(d.disk as usize)
            .map_or("?", |i| i.name.as_str());
        let Some(r) = f::disk(s, d) else {
            let _ = writeln!(o, "disk {name:<8} counters reset");
            continue;
        };
        let _ = writeln!(
            o,
            "disk {name:<8} util {:5.1}%  read {:7.2} MB/s  write {:7.2} MB/s  await {:6.2} ms  queue {:.2}  in flight {}",
            pct(r.util),
            r.read_bps / 1e6,
            r.write_bps / 1e6,
            r.await_ms.unwrap_or(0.0),
            r.queue,
            d.in_flight
        );
    }
    for m in &h.md_arrays {
        let _ = writeln!(
            o,
            "md   {:<8} {} over {:?}",
            m.name,
            m.level,
            m.members.iter().map(|x| x.as_str()).collect::<Vec<_>>()
        );
    }
}

fn human_nics(o: &mut String, h: &Hello, s: &Sample) {
    for n in &s.nics {
        let name = h.nics.get(n.nic as usize).map_or("?", |i| i.name.as_str());
        let Some(r) = f::nic(s, n) else {
            let _ = writeln!(o, "nic  {name:<8} counters reset");
            continue;
        };
        let link = match r.util {
            _ if !r.up => "down".to_string(),
            None => "up, speed unknown".to_string(),
            Some(u) => format!(
                "{} Mbit/s {} ({:.1}% of link)",
                n.speed_mbit,
                if n.flags & flags::FULL_DUPLEX != 0 {
                    "full"
                } else if n.flags & flags::DUPLEX_UNKNOWN != 0 {
                    "duplex unknown, judged full"
                } else {
                    "half"
                },
                pct(u)
            ),
        };
        let _ = writeln!(
            o,
            "nic  {name:<8} rx {:7.2} MB/s  tx {:7.2} MB/s  errs {}/{} drops {}/{}  {link}",
            r.rx_bps / 1e6,
            r.tx_bps / 1e6,
            n.rx_errors,
            n.tx_errors,
            n.rx_dropped,
            n.tx_dropped
        );
    }
}

fn human_memory(o: &mut String, s: &Sample) {
    if let Some(m) = &s.memory {
        let _ = writeln!(
            o,
            "mem  total {} MiB  available {} MiB{}  free {} MiB  cached {} MiB  dirty {} KiB  writeback {} KiB  swap used {} MiB",
            m.total_kib / 1024,
            m.available_kib / 1024,
            if m.available_estimated {
                " (estimated)"
            } else {
                ""
            },
            m.free_kib / 1024,
            m.cached_kib / 1024,
            m.dirty_kib,
            m.writeback_kib,
            m.swap_total_kib.saturating_sub(m.swap_free_kib) / 1024
        );
    }
    if let Some(v) = &s.vm {
        let _ = writeln!(
            o,
            "vm   swap in {} out {} pages · major faults {} · alloc stalls {} · direct scan {}",
            v.swap_in_pages,
            v.swap_out_pages,
            v.major_faults,
            Opt(v.alloc_stalls),
            Opt(v.direct_scanned)
        );
    }
    if let Some(t) = &s.tcp {
        let _ = writeln!(
            o,
            "tcp  retrans {} · rst out {} · estab resets {} · attempt fails {} · in errs {} · timeouts {} · timeout aborts {} · listen drops {}",
            t.retrans_segs,
            t.out_rsts,
            t.estab_resets,
            t.attempt_fails,
            t.in_errs,
            Opt(t.timeouts),
            Opt(t.timeout_aborts),
            Opt(t.listen_drops)
        );
    }
}

/// Minimal JSON writer: appends to a String, handles commas, escapes strings.
struct J<'a> {
    o: &'a mut String,
    first: bool,
}

impl<'a> J<'a> {
    fn obj(o: &'a mut String) -> J<'a> {
        o.push('{');
        J { o, first: true }
    }
    fn key(&mut self, k: &str) -> &mut String {
        if !self.first {
            self.o.push(',');
        }
        self.first = false;
        str_lit(self.o, k);
        self.o.push(':');
        self.o
    }
    fn num(&mut self, k: &str, v: impl std::fmt::Display) -> &mut Self {
        let _ = write!(self.key(k), "{v}");
        self
    }
    fn opt(&mut self, k: &str, v: Option<impl std::fmt::Display>) -> &mut Self {
        match v {
            Some(v) => self.num(k, v),
            None => {
                self.key(k).push_str("null");
                self
            }
        }
    }
    fn s(&mut self, k: &str, v: &str) -> &mut Self {
        let o = self.key(k);
        str_lit(o, v);
        self
    }
    fn b(&mut self, k: &str, v: bool) -> &mut Self {
        self.key(k).push_str(if v { "true" } else { "false" });
        self
    }
    fn end(&mut self) {
        self.o.push('}');
    }
}

fn str_lit(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
}

fn list<T>(o: &mut String, items: impl IntoIterator<Item = T>, mut f: impl FnMut(&mut String, T)) {
    o.push('[');
    for (i, it) in items.into_iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        f(o, it);
    }
    o.push(']');
}

fn cpu_json(o: &mut String, c: &nasprobe_proto::CpuTicks) {
    J::obj(o)
        .b("reset", c.flags & flags::RESET != 0)
        .num("user", c.user)
        .num("nice", c.nice)
        .num("system", c.system)
        .num("idle", c.idle)
        .num("iowait", c.iowait)
        .num("irq", c.irq)
        .num("softirq", c.softirq)
        .num("steal", c.steal)
        .end();
}

/// One sample as one JSON line. Device indices are resolved to names.
pub fn json_sample(o: &mut String, h: &Hello, s: &Sample) {
    let mut j = J::obj(o);
    j.s("host", &h.host_name).num("interval_us", s.interval_us);
    cpu_json(j.key("cpu_total"), &s.cpu_total);
    list(j.key("cpus"), &s.cpus, cpu_json);
    j.num("procs_running", s.procs_running)
        .num("procs_blocked", s.procs_blocked)
        .num("forks", s.forks)
        .num("context_switches", s.context_switches)
        .num("short_lived", s.short_lived);
    list(j.key("top"), &s.top, |o, p| {
        let mut k = J::obj(o);
        k.num("pid", p.pid)
            .s("comm", &p.comm)
            .s("state", &(p.state as char).to_string())
            .num("threads", p.threads)
            .num("utime", p.utime)
            .num("stime", p.stime)
            .opt("run_delay_us", p.run_delay_us);
        match &p.hottest_thread {
            Some(t) => {
                let mut tj = J::obj(k.key("hottest_thread"));
                tj.num("tid", t.tid).num("ticks", t.ticks);
                match &t.comm {
                    Some(c) => tj.s("comm", c),
                    None => tj.s("comm", &p.comm),
                };
                tj.end();
            }
            None => k.key("hottest_thread").push_str("null"),
        }
        match &p.cmdline {
            Some(c) => k.s("cmdline", c),
            None => k.opt("cmdline", None::<u8>),
        };
        k.end();
    });
    list(j.key("disks"), &s.disks, |o, d| {
        J::obj(o)
            .s(
                "name",
                h.disks.get(d.disk as usize).map_or("", |i| i.name.as_str()),
            )
            .num("index", d.disk)
            .b("reset", d.flags & flags::RESET != 0)
            .num("reads", d.reads)
            .num("reads_merged", d.reads_merged)
            .num("sectors_read", d.sectors_read)
            .num("read_ms", d.read_ms)
            .num("writes", d.writes)
            .num("writes_merged", d.writes_merged)
            .num("sectors_written", d.sectors_written)
            .num("write_ms", d.write_ms)
            .num("in_flight", d.in_flight)
            .num("io_ms", d.io_ms)
            .num("weighted_ms", d.weighted_ms)
            .end();
    });
    list(j.key("nics"), &s.nics, |o, n| {
        J::obj(o)
            .s(
                "name",
                h.nics.get(n.nic as usize).map_or("", |i| i.name.as_str()),
            )
            .num("index", n.nic)
            .b("reset", n.flags & flags::RESET != 0)
            .b("up", n.flags & flags::LINK_UP != 0)
            .b("full_duplex", n.flags & flags::FULL_DUPLEX != 0)
            .num("speed_mbit", n.speed_mbit)
            .num("rx_bytes", n.rx_bytes)
            .num("tx_bytes", n.tx_bytes)
            .num("rx_packets", n.rx_packets)
            .num("tx_packets", n.tx_packets)
            .num("rx_errors", n.rx_errors)
            .num("tx_errors", n.tx_errors)
            .num("rx_dropped", n.rx_dropped)
            .num("tx_dropped", n.tx_dropped)
            .end();
    });
    match &s.memory {
        Some(m) => J::obj(j.key("memory"))
            .num("total_kib", m.total_kib)
            .num("free_kib", m.free_kib)
            .num("available_kib", m.available_kib)
            .b("available_estimated", m.available_estimated)
            .num("buffers_kib", m.buffers_kib)
            .num("cached_kib", m.cached_kib)
            .num("dirty_kib", m.dirty_kib)
            .num("writeback_kib", m.writeback_kib)
            .num("swap_total_kib", m.swap_total_kib)
            .num("swap_free_kib", m.swap_free_kib)
            .end(),
        None => j.key("memory").push_str("null"),
    }
    match &s.vm {
        Some(v) => J::obj(j.key("vm"))
            .num("swap_in_pages", v.swap_in_pages)
            .num("swap_out_pages", v.swap_out_pages)
            .num("major_faults", v.major_faults)
            .opt("alloc_stalls", v.alloc_stalls)
            .opt("direct_scanned", v.direct_scanned)
            .end(),
        None => j.key("vm").push_str("null"),
    }
    match &s.tcp {
        Some(t) => J::obj(j.key("tcp"))
            .num("retrans_segs", t.retrans_segs)
            .num("out_rsts", t.out_rsts)
            .num("in_errs", t.in_errs)
            .num("estab_resets", t.estab_resets)
            .num("attempt_fails", t.attempt_fails)
            .opt("timeouts", t.timeouts)
            .opt("keepalive_aborts", t.keepalive_aborts)
            .opt("timeout_aborts", t.timeout_aborts)
            .opt("listen_drops", t.listen_drops)
            .end(),
        None => j.key("tcp").push_str("null"),
    }
    list(j.key("mounts"), &s.mounts, |o, m| {
        J::obj(o)
            .s(
                "path",
                h.mounts.get(m.mount as usize).map_or("", |p| p.as_str()),
            )
            .num("used_bytes", m.used_bytes)
            .num("free_bytes", m.free_bytes)
            .end();
    });
    J::obj(j.key("agent"))
        .num("cpu_us", s.agent.cpu_us)
        .num("rss_kib", s.agent.rss_kib)
        .end();
    j.end();
    o.push('\n');
}

fn proc_json(o: &mut String, p: &nasprobe_proto::ProcessInfo) {
    J::obj(o)
        .num("pid", p.pid)
        .num("ppid", p.ppid)
        .s("comm", &p.comm)
        .s("cmdline", &p.cmdline)
        .num("start_ticks", p.start_ticks)
        .end();
}

/// One event as one JSON line: {"event":"process_exit", ...}.
pub fn json_event(o: &mut String, e: &Event) {
    let mut j = J::obj(o);
    match e {
        Event::ProcessStart(p) => {
            j.s("event", "process_start");
            proc_json(j.key("process"), p);
        }
        Event::ProcessExit(x) => {
            j.s("event", "process_exit")
                .num("lifetime_ms", x.lifetime_ms)
                .num("cpu_ticks", x.cpu_ticks);
            proc_json(j.key("process"), &x.process);
        }
        Event::ProcessEnd(e) => {
            let (x, st) = (&e.exit, &e.status);
            j.s("event", "process_exit")
                .num("lifetime_ms", x.lifetime_ms)
                .num("cpu_ticks", x.cpu_ticks)
                .s("exit_seen", st.seen.name());
            j.opt("exit_code", st.code);
            match st.signal.and_then(nasprobe_proto::signal_name) {
                Some(n) => j.s("signal", n),
                None => j.opt("signal", st.signal),
            };
            j.b("core_dumped", st.core_dumped)
                .b("oom_killed", st.oom_killed);
            proc_json(j.key("process"), &x.process);
        }
        Event::ExitWatch(w) => {
            j.s("event", "exit_watch")
                .s("source", w.source.name())
                .num("dropped", w.dropped);
        }
        Event::Connections(c) => {
            j.s("event", "tcp_connections")
                .num("processes", c.procs.len())
                .num(
                    "connections",
                    c.procs.iter().map(|p| p.conns.len()).sum::<usize>(),
                );
        }
        Event::OpenFiles(f) => {
            j.s("event", "open_files")
                .num("processes", f.procs.len())
                .num(
                    "files",
                    f.procs.iter().map(|p| p.files.len()).sum::<usize>(),
                );
        }
        Event::Shaping(sh) => {
            let mut caps = String::new();
            for n in &sh.nics {
                for c in &n.classes {
                    caps += &format!(
                        "{}nic {} {} {} {} bit/s",
                        if caps.is_empty() { "" } else { ", " },
                        n.nic,
                        n.kind.name(),
                        nasprobe_proto::ClassName(c.class),
                        c.cap_bit_s
                    );
                }
            }
            j.s("event", "shaping")
                .num("nics", sh.nics.len())
                .s("caps", &caps);
        }
        Event::KernelMessage(m) => {
            j.s("event", "kernel_message").num("level", m.level);
            j.opt("pid", m.pid);
            match &m.nic {
                Some(n) => j.s("nic", n),
                None => j.opt("nic", None::<u8>),
            };
            j.s("text", &m.text).num("suppressed", m.suppressed);
        }
        Event::LinkChange(l) => {
            j.s("event", "link_change")
                .s("nic", &l.nic)
                .b("up", l.up)
                .num("speed_mbit", l.speed_mbit)
                .num("mtu", l.mtu);
            j.opt("full_duplex", l.full_duplex);
        }
        Event::AgentStart(a) => {
            j.s("event", "agent_start")
                .num("instance_id", a.instance_id);
        }
        Event::DeviceAdded(d) => {
            let (kind, name) = match d {
                nasprobe_proto::DeviceAdded::Disk(n) => ("disk", n),
                nasprobe_proto::DeviceAdded::Nic(n) => ("nic", n),
            };
            j.s("event", "device_added").s("kind", kind).s("name", name);
        }
    }
    j.end();
    o.push('\n');
}

/// An optional counter for people: the value, or "n/a" when the kernel lacks it.
struct Opt(Option<u32>);

impl std::fmt::Display for Opt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("n/a"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        let mut o = String::new();
        J::obj(&mut o)
            .s("a", "q\"b\\\n")
            .num("n", 3)
            .opt("x", None::<u8>)
            .end();
        assert_eq!(o, r#"{"a":"q\"b\\\u000a","n":3,"x":null}"#);
    }
}

//! The metrics nasprobe exports: names, help, node_exporter counterparts, and the one function
//! that turns a stored sample (or event) into points. Every format (Prometheus text for
//! VictoriaMetrics and the scrape endpoint, InfluxDB line protocol, CSV, JSON lines) writes
//! what [`emit_sample`] and `emit_event` hand to its [`Sink`], so the figures are the same
//! everywhere, and the same as the views' and the report's (rates come from [`nasprobe_formulas`]).
//!
//! Conventions: rates are gauges with the unit in the name (`_bytes_per_second`,
//! `_per_second`, `_ratio` for 0..1 fractions, `_seconds`, `_bytes`); every series has a `host`
//! label (the collector's name for the agent); devices are `device`, CPUs `cpu`, processes
//! `process` (the kernel's comm), threads `thread`, filesystems `mountpoint`.

use nasprobe_proto::{DeviceAdded, Event, Hello, Sample, flags};

use nasprobe_formulas as f;

/// Metric type in the Prometheus exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// One exported metric.
#[derive(Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    /// Labels besides `host`, in the order they are written.
    pub labels: &'static [&'static str],
    pub help: &'static str,
    /// The node_exporter metric measuring the same thing ("" when there is none).
    pub node: &'static str,
}

macro_rules! metrics {
    ($($id:ident = $name:literal, $kind:ident, [$($l:literal),*], $help:literal, $node:literal;)*) => {
        $(pub const $id: &Metric = &Metric {
            name: $name,
            kind: Kind::$kind,
            labels: &[$($l),*],
            help: $help,
            node: $node,
        };)*
        /// Every metric, in the order of the exposition and of docs/metrics.md.
        pub const ALL: &[&Metric] = &[$($id),*];
    };
}

metrics! {
    CPU_BUSY = "nasprobe_cpu_busy_ratio", Gauge, ["cpu"],
        "Busy fraction of one CPU (everything but idle and iowait), 0..1",
        "1 - rate(node_cpu_seconds_total{mode=~\"idle|iowait\"})";
    CPU_ALL_BUSY = "nasprobe_cpu_all_busy_ratio", Gauge, [],
        "Busy fraction of all CPUs together, 0..1",
        "avg without(cpu) of the above";
    CPU_ALL_IOWAIT = "nasprobe_cpu_all_iowait_ratio", Gauge, [],
        "iowait fraction of all CPUs together, 0..1",
        "avg without(cpu) (rate(node_cpu_seconds_total{mode=\"iowait\"}))";
    PROCS_RUNNING = "nasprobe_procs_running", Gauge, [],
        "Runnable tasks at the end of the interval", "node_procs_running";
    PROCS_BLOCKED = "nasprobe_procs_blocked", Gauge, [],
        "Tasks blocked on I/O at the end of the interval", "node_procs_blocked";
    CONTEXT_SWITCHES = "nasprobe_context_switches_per_second", Gauge, [],
        "Context switches per second", "rate(node_context_switches_total)";
    FORKS = "nasprobe_forks_per_second", Gauge, [],
        "Processes and threads created per second", "rate(node_forks_total)";
    SHORT_LIVED = "nasprobe_short_lived_processes_per_second", Gauge, [],
        "Processes that started and ended between two scans, per second", "";
    PROCESS_CPU = "nasprobe_process_cpu_ratio", Gauge, ["process"],
        "CPU of a top process in cores (1 = one full core; may exceed 1 when threaded); same-named processes add up",
        "rate(namedprocess_namegroup_cpu_seconds_total) (process-exporter)";
    PROCESS_RUN_DELAY = "nasprobe_process_run_delay_ratio", Gauge, ["process"],
        "Time a top process's threads waited for a CPU per second of the interval (schedstat)",
        "";
    THREAD_CPU = "nasprobe_thread_cpu_ratio", Gauge, ["process", "thread"],
        "CPU of the hottest thread of a top process, fraction of one core: 1 is a pegged core, the wall of a single-threaded copy",
        "rate(namedprocess_namegroup_thread_cpu_seconds_total) (process-exporter)";
    DISK_IO_TIME = "nasprobe_disk_io_time_ratio", Gauge, ["device"],
        "Fraction of the interval the disk was busy (iostat %util / 100); md arrays read 0, see their members",
        "rate(node_disk_io_time_seconds_total)";
    DISK_AWAIT = "nasprobe_disk_await_seconds", Gauge, ["device"],
        "Average time per completed request (iostat await), absent without requests",
        "rate(node_disk_read_time_seconds_total + node_disk_write_time_seconds_total) / rate(node_disk_reads_completed_total + node_disk_writes_completed_total)";
    DISK_QUEUE = "nasprobe_disk_queue_length", Gauge, ["device"],
        "Average requests in flight (iostat aqu-sz)",
        "rate(node_disk_io_time_weighted_seconds_total)";
    DISK_READ_BYTES = "nasprobe_disk_read_bytes_per_second", Gauge, ["device"],
        "Bytes read per second", "rate(node_disk_read_bytes_total)";
    DISK_WRITTEN_BYTES = "nasprobe_disk_written_bytes_per_second", Gauge, ["device"],
        "Bytes written per second", "rate(node_disk_written_bytes_total)";
    DISK_READS = "nasprobe_disk_reads_completed_per_second", Gauge, ["device"],
        "Reads completed per second", "rate(node_disk_reads_completed_total)";
    DISK_WRITES = "nasprobe_disk_writes_completed_per_second", Gauge, ["device"],
        "Writes completed per second", "rate(node_disk_writes_completed_total)";
    DISK_IO_NOW = "nasprobe_disk_io_now", Gauge, ["device"],
        "Requests in flight at the end of the interval", "node_disk_io_now";
    NET_RX_BYTES = "nasprobe_network_receive_bytes_per_second", Gauge, ["device"],
        "Bytes received per second", "rate(node_network_receive_bytes_total)";
    NET_TX_BYTES = "nasprobe_network_transmit_bytes_per_second", Gauge, ["device"],
        "Bytes sent per second", "rate(node_network_transmit_bytes_total)";
    NET_RX_PACKETS = "nasprobe_network_receive_packets_per_second", Gauge, ["device"],
        "Packets received per second", "rate(node_network_receive_packets_total)";
    NET_TX_PACKETS = "nasprobe_network_transmit_packets_per_second", Gauge, ["device"],
        "Packets sent per second", "rate(node_network_transmit_packets_total)";
    NET_RX_ERRS = "nasprobe_network_receive_errs_per_second", Gauge, ["device"],
        "Receive errors per second", "rate(node_network_receive_errs_total)";
    NET_TX_ERRS = "nasprobe_network_transmit_errs_per_second", Gauge, ["device"],
        "Transmit errors per second", "rate(node_network_transmit_errs_total)";
    NET_RX_DROP = "nasprobe_network_receive_drop_per_second", Gauge, ["device"],
        "Received packets dropped per second", "rate(node_network_receive_drop_total)";
    NET_TX_DROP = "nasprobe_network_transmit_drop_per_second", Gauge, ["device"],
        "Outgoing packets dropped per second", "rate(node_network_transmit_drop_total)";
    NET_SPEED = "nasprobe_network_speed_bytes", Gauge, ["device"],
        "Link speed in bytes per second (absent while unknown, e.g. link down)",
        "node_network_speed_bytes";
    NET_UP = "nasprobe_network_up", Gauge, ["device"],
        "1 when the link is up", "node_network_up";
    NET_UTIL = "nasprobe_network_utilization_ratio", Gauge, ["device"],
        "Use of the link: full duplex max(rx, tx) / speed, half duplex (rx + tx) / speed, unknown duplex as full",
        "";
    MEM_TOTAL = "nasprobe_memory_total_bytes", Gauge, [],
        "Memory the kernel manages", "node_memory_MemTotal_bytes";
    MEM_AVAILABLE = "nasprobe_memory_available_bytes", Gauge, [],
        "Memory available for new work without swapping (estimated by the agent on kernels without MemAvailable)",
        "node_memory_MemAvailable_bytes";
    MEM_FREE = "nasprobe_memory_free_bytes", Gauge, [],
        "Unused memory", "node_memory_MemFree_bytes";
    MEM_BUFFERS = "nasprobe_memory_buffers_bytes", Gauge, [],
        "Block device buffers", "node_memory_Buffers_bytes";
    MEM_CACHED = "nasprobe_memory_cached_bytes", Gauge, [],
        "Page cache", "node_memory_Cached_bytes";
    MEM_DIRTY = "nasprobe_memory_dirty_bytes", Gauge, [],
        "Dirty page cache waiting to be written", "node_memory_Dirty_bytes";
    MEM_WRITEBACK = "nasprobe_memory_writeback_bytes", Gauge, [],
        "Page cache being written now", "node_memory_Writeback_bytes";
    SWAP_TOTAL = "nasprobe_memory_swap_total_bytes", Gauge, [],
        "Swap space", "node_memory_SwapTotal_bytes";
    SWAP_FREE = "nasprobe_memory_swap_free_bytes", Gauge, [],
        "Unused swap space", "node_memory_SwapFree_bytes";
    SWAP_IN = "nasprobe_swap_in_pages_per_second", Gauge, [],
        "Pages swapped in per second", "rate(node_vmstat_pswpin)";
    SWAP_OUT = "nasprobe_swap_out_pages_per_second", Gauge, [],
        "Pages swapped out per second", "rate(node_vmstat_pswpout)";
    MAJOR_FAULTS = "nasprobe_major_faults_per_second", Gauge, [],
        "Major page faults (a read from disk) per second", "rate(node_vmstat_pgmajfault)";
    ALLOC_STALLS = "nasprobe_alloc_stalls_per_second", Gauge, [],
        "Allocations that stalled for direct reclaim per second (absent on kernels without the counter)",
        "rate(node_vmstat_allocstall*)";
    DIRECT_SCAN = "nasprobe_direct_scan_pages_per_second", Gauge, [],
        "Pages scanned by direct reclaim per second (absent on kernels without the counter)",
        "rate(node_vmstat_pgscan_direct)";
    TCP_RETRANS = "nasprobe_tcp_retransmitted_segments_per_second", Gauge, [],
        "TCP segments retransmitted per second", "rate(node_netstat_Tcp_RetransSegs)";
    TCP_OUT_RSTS = "nasprobe_tcp_out_resets_per_second", Gauge, [],
        "TCP resets sent per second", "rate(node_netstat_Tcp_OutRsts)";
    TCP_IN_ERRS = "nasprobe_tcp_in_errors_per_second", Gauge, [],
        "TCP segments received in error per second", "rate(node_netstat_Tcp_InErrs)";
    TCP_ESTAB_RESETS = "nasprobe_tcp_established_resets_per_second", Gauge, [],
        "Established TCP connections reset per second", "rate(node_netstat_Tcp_EstabResets)";
    TCP_ATTEMPT_FAILS = "nasprobe_tcp_attempt_fails_per_second", Gauge, [],
        "Failed TCP connection attempts per second", "rate(node_netstat_Tcp_AttemptFails)";
    TCP_TIMEOUTS = "nasprobe_tcp_timeouts_per_second", Gauge, [],
        "TCP retransmission timeouts per second", "rate(node_netstat_TcpExt_TCPTimeouts)";
    TCP_KEEPALIVE_ABORTS = "nasprobe_tcp_keepalive_aborts_per_second", Gauge, [],
        "TCP connections aborted after keepalive probes per second",
        "rate(node_netstat_TcpExt_TCPAbortOnTimeout)";
    FS_USED = "nasprobe_filesystem_used_bytes", Gauge, ["mountpoint"],
        "Used bytes of a filesystem named with the agent's --mount",
        "node_filesystem_size_bytes - node_filesystem_free_bytes";
    FS_AVAIL = "nasprobe_filesystem_avail_bytes", Gauge, ["mountpoint"],
        "Bytes available to unprivileged users", "node_filesystem_avail_bytes";
    AGENT_CPU = "nasprobe_agent_cpu_ratio", Gauge, [],
        "CPU of the nasprobe agent itself, fraction of one core",
        "rate(process_cpu_seconds_total)";
    AGENT_RSS = "nasprobe_agent_resident_memory_bytes", Gauge, [],
        "Resident memory of the nasprobe agent", "process_resident_memory_bytes";
    AGENT_CLIENTS = "nasprobe_agent_clients", Gauge, [],
        "Collectors connected to the agent", "";
    INTERVAL = "nasprobe_sample_interval_seconds", Gauge, [],
        "Length of the sampling interval the rates are over", "";
    LAST_SAMPLE = "nasprobe_last_sample_timestamp_seconds", Gauge, [],
        "Time of the newest stored sample (scrape endpoint only)", "";
    EVENT = "nasprobe_event", Gauge, ["kind", "process", "device"],
        "1 at the time of an event (process_start, process_exit, link_change, agent_start, device_added, exit_watch, kernel_message); pushed and exported only",
        "";
    PROCESS_LIFETIME = "nasprobe_process_exit_lifetime_seconds", Gauge, ["process"],
        "How long a process lived, at the time of its exit event; pushed and exported only", "";
    VERDICT = "nasprobe_verdict_utilization_ratio", Gauge, ["resource", "device", "process", "thread"],
        "The wall the verdict names over the last 5 minutes (resource cpu_thread, cpu_all, disk, nic, memory, or none without host), 0..1 of its ceiling",
        "";
    EVENTS_TOTAL = "nasprobe_events_total", Counter, ["kind"],
        "Events stored per kind (scrape endpoint only; retention removes old ones, which reads as a counter reset)",
        "";
}

/// Receives the points of samples and events. `labels` starts with `("host", ..)`; values are
/// finite (non-finite ones are never emitted).
pub trait Sink {
    fn point(
        &mut self,
        m: &'static Metric,
        labels: &[(&'static str, &str)],
        value: f64,
        ts_ms: u64,
    );

    /// True once the sink cannot take more (its output failed): the caller may stop early.
    fn failed(&self) -> bool {
        false
    }
}

/// Adds the `collector` label (last) to every point before handing it on: the exporters wrap
/// their sink in it, so the label is set in one place.
pub struct WithCollector<'a> {
    pub inner: &'a mut dyn Sink,
    pub name: &'a str,
}

impl Sink for WithCollector<'_> {
    fn point(&mut self, m: &'static Metric, labels: &[(&'static str, &str)], value: f64, ts: u64) {
        let mut l = [("", ""); 8];
        let n = labels.len().min(l.len() - 1);
        l[..n].copy_from_slice(&labels[..n]);
        l[n] = ("collector", self.name);
        self.inner.point(m, &l[..=n], value, ts);
    }

    fn failed(&self) -> bool {
        self.inner.failed()
    }
}

/// Collects points (tests, the scrape endpoint).
#[derive(Debug, Default, Clone)]
pub struct Points(pub Vec<OwnedPoint>);

#[derive(Debug, Clone, PartialEq)]
pub struct OwnedPoint {
    pub metric: &'static Metric,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
    pub ts_ms: u64,
}

impl OwnedPoint {
    /// The value of label `k`, if set.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.as_str())
    }
}

impl Sink for Points {
    fn point(
        &mut self,
        m: &'static Metric,
        labels: &[(&'static str, &str)],
        value: f64,
        ts_ms: u64,
    ) {
        self.0.push(OwnedPoint {
            metric: m,
            labels: labels.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            value,
            ts_ms,
        });
    }
}

/// Makes the timestamps of an agent instance's samples (and, apart, of its events) strictly
/// increasing: an agent woken late can stamp two samples with the same millisecond, and two
/// points of one series at one timestamp are a conflict for Prometheus and a duplicate for
/// VictoriaMetrics. A record stamped at or before the previous one goes 1 ms after it.
#[derive(Debug, Default)]
pub(crate) struct Stamper {
    last: std::collections::HashMap<(i64, bool), u64>,
}

impl Stamper {
    /// True when `key` (instance, is_event) was seen or seeded.
    pub fn knows(&self, key: (i64, bool)) -> bool {
        self.last.contains_key(&key)
    }

    /// Replays the raw times of the records just before (oldest first).
    pub fn seed(&mut self, key: (i64, bool), times: &[u64]) {
        for t in times {
            self.stamp(key, *t);
        }
        self.last.entry(key).or_insert(0);
    }

    /// The timestamp to write for a record of `key` stamped `t` by the agent.
    pub(crate) fn stamp(&mut self, key: (i64, bool), t: u64) -> u64 {
        let l = self.last.entry(key).or_insert(0);
        let out = if t <= *l && *l > 0 { *l + 1 } else { t };
        *l = out;
        out
    }
}

/// Writes one point when the value is finite.
#[inline]
fn put(
    sink: &mut dyn Sink,
    m: &'static Metric,
    labels: &[(&'static str, &str)],
    value: f64,
    ts: u64,
) {
    if value.is_finite() {
        sink.point(m, labels, value, ts);
    }
}

/// The points of one stored sample of `host` taken at `ts_ms` (end of its interval).
///
/// Disks and NICs of the inventory that the sample leaves out (idle: zero deltas) read zero,
/// as in the report's series. Entries flagged RESET (unknown delta) are left out, never zero.
/// Every figure comes from [`nasprobe_formulas`], as the report's and the agent's do.
pub fn emit_sample(sink: &mut dyn Sink, host: &str, hello: &Hello, s: &Sample, ts: u64) {
    let h = [("host", host)];
    put(sink, INTERVAL, &h, f::interval_s(s), ts);
    emit_cpu(sink, host, s, ts);
    emit_procs(sink, host, hello, s, ts);
    emit_disks(sink, host, hello, s, ts);
    emit_nics(sink, host, hello, s, ts);
    emit_memory(sink, host, s, ts);
    emit_tcp(sink, host, s, ts);
    for m in &s.mounts {
        if let Some(path) = hello.mounts.get(usize::from(m.mount)) {
            let l = [("host", host), ("mountpoint", path.as_str())];
            put(sink, FS_USED, &l, m.used_bytes as f64, ts);
            put(sink, FS_AVAIL, &l, m.free_bytes as f64, ts);
        }
    }
    // The agent's own cost.
    put(sink, AGENT_CPU, &h, f::us_fraction(s, s.agent.cpu_us), ts);
    put(sink, AGENT_RSS, &h, f64::from(s.agent.rss_kib) * 1024.0, ts);
    put(sink, AGENT_CLIENTS, &h, f64::from(s.agent.clients), ts);
}

/// CPU per core and together, run queue, context switches and forks.
fn emit_cpu(sink: &mut dyn Sink, host: &str, s: &Sample, ts: u64) {
    let h = [("host", host)];
    let per_s = |x: f64| f::per_s(s, x);
    let mut cpu_label = String::new();
    for (i, c) in s.cpus.iter().enumerate() {
        if let Some(b) = f::cpu_busy(c) {
            cpu_label.clear();
            use std::fmt::Write as _;
            let _ = write!(cpu_label, "{i}");
            put(
                sink,
                CPU_BUSY,
                &[("host", host), ("cpu", &cpu_label)],
                b,
                ts,
            );
        }
    }
    if let Some(b) = f::cpu_busy(&s.cpu_total) {
        put(sink, CPU_ALL_BUSY, &h, b, ts);
    }
    if let Some(w) = f::cpu_iowait(&s.cpu_total) {
        put(sink, CPU_ALL_IOWAIT, &h, w, ts);
    }
    put(sink, PROCS_RUNNING, &h, f64::from(s.procs_running), ts);
    put(sink, PROCS_BLOCKED, &h, f64::from(s.procs_blocked), ts);
    put(
        sink,
        CONTEXT_SWITCHES,
        &h,
        per_s(s.context_switches as f64),
        ts,
    );
    put(sink, FORKS, &h, per_s(f64::from(s.forks)), ts);
    put(sink, SHORT_LIVED, &h, per_s(f64::from(s.short_lived)), ts);
}

/// Processes (same name adds up) and their hottest threads (same process and thread name: the
/// busiest), grouped as the report's series group them.
fn emit_procs(sink: &mut dyn Sink, host: &str, hello: &Hello, s: &Sample, ts: u64) {
    let hz = hello.clock_ticks_per_sec;
    for g in f::proc_groups(hz, s) {
        let l = [("host", host), ("process", g.name)];
        put(sink, PROCESS_CPU, &l, g.cores, ts);
        if let Some(d) = g.run_delay {
            put(sink, PROCESS_RUN_DELAY, &l, d, ts);
        }
    }
    for t in f::thread_figures(hz, s) {
        let l = [("host", host), ("process", t.process), ("thread", t.thread)];
        put(sink, THREAD_CPU, &l, t.cores, ts);
    }
}

/// Every disk of the inventory.
fn emit_disks(sink: &mut dyn Sink, host: &str, hello: &Hello, s: &Sample, ts: u64) {
    for (idx, info) in hello.disks.iter().enumerate() {
        let l = [("host", host), ("device", info.name.as_str())];
        match s.disks.iter().find(|d| usize::from(d.disk) == idx) {
            None => {
                for m in [
                    DISK_IO_TIME,
                    DISK_QUEUE,
                    DISK_READ_BYTES,
                    DISK_WRITTEN_BYTES,
                    DISK_READS,
                    DISK_WRITES,
                ] {
                    put(sink, m, &l, 0.0, ts);
                }
            }
            Some(d) => {
                let Some(r) = f::disk(s, d) else {
                    continue; // RESET: unknown
                };
                put(sink, DISK_IO_TIME, &l, r.util, ts);
                if let Some(a) = r.await_ms {
                    put(sink, DISK_AWAIT, &l, a / 1000.0, ts);
                }
                put(sink, DISK_QUEUE, &l, r.queue, ts);
                put(sink, DISK_READ_BYTES, &l, r.read_bps, ts);
                put(sink, DISK_WRITTEN_BYTES, &l, r.write_bps, ts);
                put(sink, DISK_READS, &l, r.reads_s, ts);
                put(sink, DISK_WRITES, &l, r.writes_s, ts);
                put(sink, DISK_IO_NOW, &l, f64::from(d.in_flight), ts);
            }
        }
    }
}

/// Every NIC of the inventory (absent from the sample: no traffic).
fn emit_nics(sink: &mut dyn Sink, host: &str, hello: &Hello, s: &Sample, ts: u64) {
    let per_s = |x: u32| f::per_s(s, f64::from(x));
    for (idx, info) in hello.nics.iter().enumerate() {
        let l = [("host", host), ("device", info.name.as_str())];
        let Some(n) = s.nics.iter().find(|n| usize::from(n.nic) == idx) else {
            for m in [NET_RX_BYTES, NET_TX_BYTES, NET_RX_PACKETS, NET_TX_PACKETS] {
                put(sink, m, &l, 0.0, ts);
            }
            continue;
        };
        put(
            sink,
            NET_UP,
            &l,
            f64::from(n.flags & flags::LINK_UP != 0),
            ts,
        );
        if n.speed_mbit > 0 {
            put(sink, NET_SPEED, &l, f::link_bytes_s(n.speed_mbit), ts);
        }
        let Some(r) = f::nic(s, n) else {
            continue; // RESET: unknown
        };
        put(sink, NET_RX_BYTES, &l, r.rx_bps, ts);
        put(sink, NET_TX_BYTES, &l, r.tx_bps, ts);
        put(sink, NET_RX_PACKETS, &l, per_s(n.rx_packets), ts);
        put(sink, NET_TX_PACKETS, &l, per_s(n.tx_packets), ts);
        put(sink, NET_RX_ERRS, &l, per_s(n.rx_errors), ts);
        put(sink, NET_TX_ERRS, &l, per_s(n.tx_errors), ts);
        put(sink, NET_RX_DROP, &l, per_s(n.rx_dropped), ts);
        put(sink, NET_TX_DROP, &l, per_s(n.tx_dropped), ts);
        if let Some(u) = r.util {
            put(sink, NET_UTIL, &l, u, ts);
        }
    }
}

/// Memory gauges, swap and reclaim rates.
fn emit_memory(sink: &mut dyn Sink, host: &str, s: &Sample, ts: u64) {
    let h = [("host", host)];
    let per_s = |x: u32| f::per_s(s, f64::from(x));
    if let Some(m) = &s.memory {
        let b = |kib: u64| kib as f64 * 1024.0;
        put(sink, MEM_TOTAL, &h, b(m.total_kib), ts);
        put(sink, MEM_AVAILABLE, &h, b(m.available_kib), ts);
        put(sink, MEM_FREE, &h, b(m.free_kib), ts);
        put(sink, MEM_BUFFERS, &h, b(m.buffers_kib), ts);
        put(sink, MEM_CACHED, &h, b(m.cached_kib), ts);
        put(sink, MEM_DIRTY, &h, b(m.dirty_kib), ts);
        put(sink, MEM_WRITEBACK, &h, b(m.writeback_kib), ts);
        put(sink, SWAP_TOTAL, &h, b(m.swap_total_kib), ts);
        put(sink, SWAP_FREE, &h, b(m.swap_free_kib), ts);
    }
    if let Some(v) = &s.vm {
        put(sink, SWAP_IN, &h, per_s(v.swap_in_pages), ts);
        put(sink, SWAP_OUT, &h, per_s(v.swap_out_pages), ts);
        put(sink, MAJOR_FAULTS, &h, per_s(v.major_faults), ts);
        if let Some(x) = v.alloc_stalls {
            put(sink, ALLOC_STALLS, &h, per_s(x), ts);
        }
        if let Some(x) = v.direct_scanned {
            put(sink, DIRECT_SCAN, &h, per_s(x), ts);
        }
    }
}

/// TCP trouble rates.
fn emit_tcp(sink: &mut dyn Sink, host: &str, s: &Sample, ts: u64) {
    let h = [("host", host)];
    let per_s = |x: u32| f::per_s(s, f64::from(x));
    let Some(t) = &s.tcp else {
        return;
    };
    put(sink, TCP_RETRANS, &h, per_s(t.retrans_segs), ts);
    put(sink, TCP_OUT_RSTS, &h, per_s(t.out_rsts), ts);
    put(sink, TCP_IN_ERRS, &h, per_s(t.in_errs), ts);
    put(sink, TCP_ESTAB_RESETS, &h, per_s(t.estab_resets), ts);
    put(sink, TCP_ATTEMPT_FAILS, &h, per_s(t.attempt_fails), ts);
    if let Some(x) = t.timeouts {
        put(sink, TCP_TIMEOUTS, &h, per_s(x), ts);
    }
    if let Some(x) = t.keepalive_aborts {
        put(sink, TCP_KEEPALIVE_ABORTS, &h, per_s(x), ts);
    }
}

/// The points of one event: `nasprobe_event{kind, process | device} 1` at its time, plus the
/// lifetime of an exited process.
pub(crate) fn emit_event(sink: &mut dyn Sink, host: &str, e: &Event, ts: u64) {
    let kind = e.kind();
    if let Some((x, _)) = e.as_exit() {
        let comm = x.process.comm.as_str();
        put(
            sink,
            EVENT,
            &[("host", host), ("kind", kind), ("process", comm)],
            1.0,
            ts,
        );
        put(
            sink,
            PROCESS_LIFETIME,
            &[("host", host), ("process", comm)],
            x.lifetime_ms as f64 / 1000.0,
            ts,
        );
        return;
    }
    match e {
        Event::ProcessStart(p) => {
            let l = [("host", host), ("kind", kind), ("process", p.comm.as_str())];
            put(sink, EVENT, &l, 1.0, ts);
        }
        // Measurements kept in the store for the report, not events.
        Event::ProcessExit(_)
        | Event::ProcessEnd(_)
        | Event::Connections(_)
        | Event::OpenFiles(_)
        | Event::Shaping(_) => {}
        Event::LinkChange(l) => {
            let l = [("host", host), ("kind", kind), ("device", l.nic.as_str())];
            put(sink, EVENT, &l, 1.0, ts);
        }
        Event::AgentStart(_) | Event::ExitWatch(_) | Event::KernelMessage(_) => {
            put(sink, EVENT, &[("host", host), ("kind", kind)], 1.0, ts)
        }
        Event::DeviceAdded(DeviceAdded::Disk(d)) | Event::DeviceAdded(DeviceAdded::Nic(d)) => {
            let l = [("host", host), ("kind", kind), ("device", d.as_str())];
            put(sink, EVENT, &l, 1.0, ts);
        }
    }
}

/// The `collector` label when `--collector-name` is not given: this machine's host name
/// (`collector` when it has none).
pub fn default_collector_name() -> String {
    match crate::sys::host_name() {
        Some(n) if !n.trim().is_empty() => nasprobe_proto::sanitize::text(n.trim()),
        _ => "collector".to_string(),
    }
}

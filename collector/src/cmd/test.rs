//! `nasprobe test disk` and `nasprobe test net`: the tests people run by hand on a NAS (dd,
//! hdparm, iperf), run by its agents (started with `--allow-tests`) while the collector records
//! them, so each result comes with the wall that set it.

use std::time::Duration;

use anyhow::bail;
use nasprobe_proto::{
    ADDR_LEN, DiskResult, DiskTest, MAX_NET_RUNS, NetReceiveRun, NetRun, NetSendRun, PATH_LEN,
    TestRequest, TestResult,
};
use serde::Serialize;

use crate::context::Context;
use crate::net::client::{ClientError, Session, TestReply};
use crate::net::conn::Collector;

/// How long the collector waits for a result: the agent's own budget (60 s) and some slack.
const RESULT_WAIT: Duration = Duration::from_secs(75);
/// After a test, the agent's last samples of it still have to arrive and be stored.
const SETTLE: Duration = Duration::from_millis(2500);

/// `test disk --json`.
#[derive(Debug, Clone, Serialize)]
pub struct DiskOut {
    pub host: String,
    pub path: String,
    /// The block device holding the folder, as the agent found it.
    pub device: String,
    pub fs_type: String,
    pub bytes: u64,
    pub write_mb_s: f64,
    pub read_mb_s: f64,
    pub block_bytes: u32,
    /// False when the agent could not drop the file from the page cache before reading.
    pub cache_dropped: bool,
    /// The big-block pass (the `dd bs=1G` trap): its block size and rate; null when not run.
    pub big_block_bytes: Option<u64>,
    pub big_block_write_mb_s: Option<f64>,
    /// The `bottleneck` of `report --json` over the test.
    pub wall: serde_json::Value,
}

/// A test's own time bound on the agent (60 s) with room for its last `fdatasync`: no phase of
/// a test lasts longer.
const MAX_TEST_US: u64 = 10 * 60 * 1_000_000;
/// A disk moving more than 100 GB/s, a network more than 1 Tbit/s: out of range, as for samples.
const MAX_DISK_BYTES_PER_S: u128 = 100_000_000_000;
const MAX_NET_BYTES_PER_S: u128 = 125_000_000_000;

/// `bytes` in `us` µs is at most `max_per_s` a second and `us` within a test's time.
fn rate_ok(bytes: u64, us: u64, max_per_s: u128) -> bool {
    us <= MAX_TEST_US && u128::from(bytes) * 1_000_000 <= max_per_s * u128::from(us.max(1))
}

/// Range checks of a disk test's result against what was asked, like samples' (an agent could
/// claim `write 18446744073709551616.0 MB/s`): `Err` says what is out of range.
fn check_disk(d: &DiskResult, asked: u64) -> Result<(), String> {
    let phases = [
        ("write", d.bytes, d.write_us),
        ("read", d.read_bytes, d.read_us),
        ("big-block write", d.big_block_bytes, d.big_write_us),
    ];
    for (what, bytes, us) in phases {
        if !rate_ok(bytes, us, MAX_DISK_BYTES_PER_S) {
            return Err(format!("{what}: {bytes} bytes in {us} µs"));
        }
    }
    if d.bytes > asked || d.read_bytes > d.bytes || d.big_block_bytes > d.bytes {
        return Err(format!(
            "{} bytes written, {} read, {} in the big block: {asked} were asked",
            d.bytes, d.read_bytes, d.big_block_bytes
        ));
    }
    if d.block_bytes == 0 || d.block_bytes > 1 << 30 {
        return Err(format!("a block of {} bytes", d.block_bytes));
    }
    if d.ended_ms < d.started_ms || d.ended_ms - d.started_ms > MAX_TEST_US / 1000 {
        return Err(format!("from {} to {} ms", d.started_ms, d.ended_ms));
    }
    Ok(())
}

/// Range checks of one side's net runs against the runs asked.
fn check_net(runs: &[NetRun], asked: &[u8]) -> Result<(), String> {
    if runs.len() > asked.len() {
        return Err(format!("{} runs, {} asked", runs.len(), asked.len()));
    }
    for (i, (r, &k)) in runs.iter().zip(asked).enumerate() {
        if r.streams > k {
            return Err(format!("run {}: {} streams, {k} asked", i + 1, r.streams));
        }
        if !rate_ok(r.bytes, r.micros, MAX_NET_BYTES_PER_S) {
            return Err(format!(
                "run {}: {} bytes in {} µs",
                i + 1,
                r.bytes,
                r.micros
            ));
        }
        if u64::from(r.retransmits) > r.bytes {
            return Err(format!(
                "run {}: {} retransmits of {} bytes",
                i + 1,
                r.retransmits,
                r.bytes
            ));
        }
        if r.ended_ms < r.started_ms || r.ended_ms - r.started_ms > MAX_TEST_US / 1000 {
            return Err(format!(
                "run {}: from {} to {} ms",
                i + 1,
                r.started_ms,
                r.ended_ms
            ));
        }
    }
    Ok(())
}

fn mb_s(bytes: u64, us: u64) -> f64 {
    nasprobe_analysis::verdict::round2(bytes as f64 / (us.max(1) as f64 / 1e6) / 1e6)
}

/// Whether the recording beside a test got records of every host ([`crate::net::outcome`]):
/// its error is returned after the result is shown.
type Delivered = anyhow::Result<()>;

/// Runs one test on `host`'s agent while recording it; returns the result and the wall.
fn run_recorded(
    c: &Context,
    host: &str,
    req: TestRequest,
) -> anyhow::Result<(String, TestResult, serde_json::Value, Delivered)> {
    let mut targets = c.targets(&[host.to_string()], false)?;
    anyhow::ensure!(targets.len() == 1, "name one host");
    let target = targets.remove(0);
    let name = target.spec.name.clone();
    let addr = target.spec.addr.clone();
    let token = target.token.clone();
    let collector = Collector::start(c.open_store()?, vec![target], Some(c.retention));
    let started = std::time::Instant::now();
    crate::signals::install();
    let outcome = smol::block_on(async {
        let mut s = Session::connect(&name, &addr, &token).await?;
        s.test(req, RESULT_WAIT).await
    });
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            collector.finish().ok();
            return Err(match e {
                ClientError::Refused { host, reason } => {
                    anyhow::anyhow!("{host}: the agent refused the test: {reason}")
                }
                e => e.into(),
            });
        }
    };
    let (from, to) = match &result {
        TestResult::Disk(d) => (d.started_ms, d.ended_ms),
        TestResult::Failed(_) | TestResult::Net(_) => (0, 0),
    };
    std::thread::sleep(SETTLE);
    let live = collector.live.clone();
    let store = collector.finish()?;
    let delivered = crate::net::outcome::ensure_delivered(&live, started.elapsed());
    let wall = if to > from {
        let r = crate::store::window::load_between(&store, Some(from), Some(to), None)?
            .1
            .report;
        serde_json::to_value(&r.bottleneck)?
    } else {
        serde_json::Value::Null
    };
    Ok((name, result, wall, delivered))
}

/// `nasprobe test disk HOST --path DIR [--size 1G] [--allow-tmpfs] [--json]`.
pub fn disk(
    c: &Context,
    host: &str,
    path: &str,
    bytes: u64,
    allow_tmpfs: bool,
    json: bool,
) -> anyhow::Result<()> {
    let Ok(p) = heapless::String::<PATH_LEN>::try_from(path) else {
        bail!("--path is longer than {PATH_LEN} bytes");
    };
    let req = TestRequest::Disk(DiskTest {
        path: p,
        bytes,
        allow_tmpfs,
    });
    let (name, result, wall, delivered) = run_recorded(c, host, req)?;
    let d: DiskResult = match result {
        TestResult::Disk(d) => d,
        TestResult::Failed(why) => bail!("{name}: the disk test failed: {why}"),
        TestResult::Net(_) => bail!("{name}: the agent answered a disk test with a net result"),
    };
    if let Err(why) = check_disk(&d, bytes) {
        bail!("{name}: the agent's disk result is out of range ({why}): not shown");
    }
    let big = (d.big_block_bytes > 0).then(|| mb_s(d.big_block_bytes, d.big_write_us));
    let out = DiskOut {
        host: name,
        path: path.to_string(),
        device: d.device.to_string(),
        fs_type: d.fs_type.to_string(),
        bytes: d.bytes,
        write_mb_s: mb_s(d.bytes, d.write_us),
        read_mb_s: mb_s(d.read_bytes, d.read_us),
        block_bytes: d.block_bytes,
        cache_dropped: d.cache_dropped,
        big_block_bytes: (d.big_block_bytes > 0).then_some(d.big_block_bytes),
        big_block_write_mb_s: big,
        wall,
    };
    let mut o = crate::output::stdout();
    if json {
        o.line(&serde_json::to_string_pretty(&out)?)?;
    } else {
        o.text(&disk_text(&out))?;
    }
    o.finish()?;
    delivered
}

fn disk_text(d: &DiskOut) -> String {
    let mut o = format!(
        "{}: {} on {} ({}), {} MB in {} KiB blocks, synced\n",
        d.host,
        d.path,
        if d.device.is_empty() { "?" } else { &d.device },
        d.fs_type,
        d.bytes / 1_000_000,
        d.block_bytes / 1024
    );
    o += &format!("  write {:>8.1} MB/s\n", d.write_mb_s);
    o += &format!(
        "  read  {:>8.1} MB/s{}\n",
        d.read_mb_s,
        if d.cache_dropped {
            ""
        } else {
            " (the page cache could not be dropped: this may be the cache)"
        }
    );
    if let (Some(b), Some(r)) = (d.big_block_bytes, d.big_block_write_mb_s) {
        o += &format!(
            "  with {} MiB blocks: {:.1} MB/s{}\n",
            b >> 20,
            r,
            if r < 0.7 * d.write_mb_s {
                format!(
                    " — slower than with 1 MiB blocks ({:.1}): measure with 1 MiB blocks \
                     (dd bs=1M), not one huge one",
                    d.write_mb_s
                )
            } else {
                String::new()
            }
        );
    }
    if let Some(w) = crate::output::wall_sentence(&d.wall) {
        o += &format!("  {w}\n");
    }
    o
}

/// `test net --json`: one entry per run.
#[derive(Debug, Clone, Serialize)]
pub struct NetOut {
    pub from: String,
    pub to: String,
    pub results: Vec<NetRunOut>,
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct NetRunOut {
    pub streams: u8,
    /// What arrived at the receiver, over the receiver's first to last byte.
    pub mbit_s: f64,
    pub bytes: u64,
    pub seconds: f64,
    /// The sender's sockets' total retransmissions.
    pub retransmits: u32,
    /// The `bottleneck` of `report --json` over the run.
    pub wall: serde_json::Value,
    /// Both hosts during the run: the busiest thread and NIC.
    pub hosts: Vec<serde_json::Value>,
}

fn refused(e: ClientError) -> anyhow::Error {
    match e {
        // An agent older than the run-bound net test cannot decode its request.
        ClientError::Refused { host, reason } if reason.starts_with("bad frame") => {
            anyhow::anyhow!(
                "{host}: the agent refused the test: {reason} (an agent older than this \
                 collector: upgrade it to run test net)"
            )
        }
        ClientError::Refused { host, reason } => {
            anyhow::anyhow!("{host}: the agent refused the test: {reason}")
        }
        e => e.into(),
    }
}

/// The receiver's run key, sealed for the sender's session (`nasprobe_proto::test_stream`).
fn sealed_run_key(rx: &Session, tx: &Session) -> anyhow::Result<[u8; 32]> {
    let (Some(rk), Some(tk)) = (rx.session_key(), tx.session_key()) else {
        anyhow::bail!("a session without its key (the agents' proofs were not checked)");
    };
    let key = nasprobe_proto::test_stream::run_key(&rk);
    Ok(nasprobe_proto::test_stream::seal_run_key(&tk, &key))
}

/// The receiver's address for the sender: its agent's address as this collector reaches it,
/// with the test port.
fn test_addr(agent_addr: &str, port: u16) -> anyhow::Result<String> {
    use std::net::ToSocketAddrs;
    let a = agent_addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{agent_addr} resolves to nothing"))?;
    let s = std::net::SocketAddr::new(a.ip(), port).to_string();
    anyhow::ensure!(s.len() <= ADDR_LEN, "address {s} too long");
    Ok(s)
}

/// The wall of one run of `test net` over `[from, to]` and each host's busiest thread and NIC
/// meanwhile (nothing when the run has no times).
fn run_wall(
    store: &crate::store::Store,
    from: u64,
    to: u64,
) -> anyhow::Result<(serde_json::Value, Vec<serde_json::Value>)> {
    if to <= from {
        return Ok((serde_json::Value::Null, Vec::new()));
    }
    let r = crate::store::window::load_between(store, Some(from), Some(to), None)?
        .1
        .report;
    let hosts = r
        .hosts
        .iter()
        .map(|h| {
            let nic = h.nics.iter().filter(|n| !n.is_bond).max_by(|a, b| {
                a.util
                    .unwrap_or(0.0)
                    .total_cmp(&b.util.unwrap_or(0.0))
            });
            serde_json::json!({
                "host": h.name,
                "busiest_thread": h.cpu.hottest_thread.as_ref().map(|t| format!("{}/{}", t.process, t.thread)),
                "thread_core_fraction": h.cpu.hottest_thread.as_ref().map(|t| t.core_fraction),
                "nic": nic.map(|n| n.name.clone()),
                "nic_util": nic.and_then(|n| n.util),
            })
        })
        .collect();
    Ok((serde_json::to_value(&r.bottleneck)?, hosts))
}

/// `nasprobe test net SRC DST [--seconds 10] [--streams 1,4] [--json]`.
pub fn net(
    c: &Context,
    src: &str,
    dst: &str,
    seconds: u16,
    streams: &[u8],
    max_bytes: u64,
    json: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !streams.is_empty() && streams.len() <= MAX_NET_RUNS,
        "--streams: 1..{MAX_NET_RUNS} counts"
    );
    anyhow::ensure!(
        seconds > 0 && u64::from(seconds) * streams.len() as u64 <= 60,
        "--seconds x runs must be at most 60 s (the agents' bound)"
    );
    let targets = c.targets(&[src.to_string(), dst.to_string()], false)?;
    anyhow::ensure!(targets.len() == 2, "name two hosts: SRC DST");
    let (s_name, s_addr, s_tok) = (
        targets[0].spec.name.clone(),
        targets[0].spec.addr.clone(),
        targets[0].token.clone(),
    );
    let (d_name, d_addr, d_tok) = (
        targets[1].spec.name.clone(),
        targets[1].spec.addr.clone(),
        targets[1].token.clone(),
    );
    let collector = Collector::start(c.open_store()?, targets, Some(c.retention));
    let started = std::time::Instant::now();
    crate::signals::install();
    let total_s = u16::try_from(u64::from(seconds) * streams.len() as u64).unwrap_or(60);
    let outcome = smol::block_on(async {
        let mut rx = Session::connect(&d_name, &d_addr, &d_tok)
            .await
            .map_err(refused)?;
        let mut runs = heapless::Vec::new();
        for &k in streams {
            runs.push(k).expect("bounded above");
        }
        rx.send_test(TestRequest::NetReceiveRun(NetReceiveRun {
            seconds: total_s,
            streams: runs.clone(),
            max_bytes,
        }))
        .await?;
        let port = match rx
            .test_reply(Duration::from_secs(10))
            .await
            .map_err(refused)?
        {
            TestReply::Ready(r) => r.port,
            TestReply::Result(TestResult::Failed(why)) => {
                anyhow::bail!("{d_name}: no test port: {why}")
            }
            TestReply::Result(_) => anyhow::bail!("{d_name}: no test port: a result came first"),
        };
        let to = test_addr(&d_addr, port)?;
        let mut tx = Session::connect(&s_name, &s_addr, &s_tok)
            .await
            .map_err(refused)?;
        let send = TestRequest::NetSendRun(NetSendRun {
            to: to.as_str().try_into().expect("checked length"),
            seconds,
            streams: runs,
            max_bytes,
            sealed_key: sealed_run_key(&rx, &tx)?,
        });
        let sent = tx.test(send, RESULT_WAIT);
        let got = async {
            loop {
                if let TestReply::Result(r) = rx.test_reply(RESULT_WAIT).await? {
                    return Ok::<_, ClientError>(r);
                }
            }
        };
        let (sent, got) = smol::future::zip(sent, got).await;
        Ok::<_, anyhow::Error>((sent.map_err(refused)?, got.map_err(refused)?))
    });
    let (sent, got) = match outcome {
        Ok(x) => x,
        Err(e) => {
            collector.finish().ok();
            return Err(e);
        }
    };
    let runs_of = |who: &str, r: TestResult| -> anyhow::Result<Vec<NetRun>> {
        match r {
            TestResult::Net(v) => {
                if let Err(why) = check_net(&v, streams) {
                    anyhow::bail!(
                        "{who}: the agent's net result is out of range ({why}): not shown"
                    );
                }
                Ok(v.into_iter().collect())
            }
            TestResult::Failed(why) => anyhow::bail!("{who}: the network test failed: {why}"),
            TestResult::Disk(_) => anyhow::bail!("{who}: answered a net test with a disk result"),
        }
    };
    let sent = runs_of(&s_name, sent);
    let got = runs_of(&d_name, got);
    std::thread::sleep(SETTLE);
    let live = collector.live.clone();
    let store = collector.finish()?;
    let delivered = crate::net::outcome::ensure_delivered(&live, started.elapsed());
    let (sent, got) = (sent?, got?);
    let mut results = Vec::new();
    for (i, &k) in streams.iter().enumerate() {
        let rcv = got.get(i);
        let snd = sent.get(i);
        let (bytes, micros) = rcv.map_or((0, 0), |r| (r.bytes, r.micros));
        let (from, to) = rcv
            .filter(|r| r.ended_ms > r.started_ms)
            .map_or((0, 0), |r| (r.started_ms, r.ended_ms));
        let (wall, hosts) = run_wall(&store, from, to)?;
        let secs = micros as f64 / 1e6;
        results.push(NetRunOut {
            streams: k,
            mbit_s: nasprobe_analysis::verdict::round2(if secs > 0.0 {
                bytes as f64 * 8.0 / 1e6 / secs
            } else {
                0.0
            }),
            bytes,
            seconds: nasprobe_analysis::verdict::round2(secs),
            retransmits: snd.map_or(0, |r| r.retransmits),
            wall,
            hosts,
        });
    }
    let out = NetOut {
        verdict: net_verdict(&results),
        from: s_name,
        to: d_name,
        results,
    };
    let mut o = crate::output::stdout();
    if json {
        o.line(&serde_json::to_string_pretty(&out)?)?;
    } else {
        o.text(&net_text(&out))?;
    }
    o.finish()?;
    delivered
}

fn net_verdict(results: &[NetRunOut]) -> String {
    let Some(one) = results.first() else {
        return "no run".into();
    };
    let best = results
        .iter()
        .max_by(|a, b| a.mbit_s.total_cmp(&b.mbit_s))
        .expect("not empty");
    let mut v = format!("{} stream(s): {:.0} Mbit/s", one.streams, one.mbit_s);
    if best.streams != one.streams && best.mbit_s > one.mbit_s * 1.3 {
        v += &format!(
            "; {} streams reach {:.0} Mbit/s: one stream is held back (window, loss or one \
             core), not the link",
            best.streams, best.mbit_s
        );
    }
    if let Some(w) = crate::output::wall_sentence(&one.wall) {
        v += &format!("; {w}");
    }
    v
}

fn net_text(n: &NetOut) -> String {
    let mut o = format!("{} → {} (plain TCP, agents' test streams)\n", n.from, n.to);
    for r in &n.results {
        o += &format!(
            "  {:>2} stream(s) {:>8.1} Mbit/s  {:>6} retransmits  {:.1} s",
            r.streams, r.mbit_s, r.retransmits, r.seconds
        );
        if let Some(w) = crate::output::wall_sentence(&r.wall) {
            o += &format!("  — {w}");
        }
        o.push('\n');
    }
    o += &format!("Verdict: {}\n", n.verdict);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_result() -> DiskResult {
        DiskResult {
            device: "sda1".try_into().unwrap(),
            fs_type: "ext4".try_into().unwrap(),
            block_bytes: 1 << 20,
            bytes: 100_000_000,
            write_us: 5_000_000,
            read_bytes: 100_000_000,
            read_us: 1_000_000,
            cache_dropped: true,
            big_block_bytes: 100_000_000,
            big_write_us: 6_000_000,
            started_ms: 1_000,
            ended_ms: 20_000,
        }
    }

    #[test]
    fn test_results_out_of_range_are_refused() {
        assert_eq!(check_disk(&disk_result(), 100_000_000), Ok(()));
        // The issue's `write 18446744073709551616.0 MB/s`.
        let mut d = disk_result();
        (d.bytes, d.write_us) = (u64::MAX, 1);
        assert!(check_disk(&d, u64::MAX).is_err());
        let mut d = disk_result();
        d.write_us = 0;
        assert!(
            check_disk(&d, 100_000_000)
                .unwrap_err()
                .starts_with("write")
        );
        assert!(
            check_disk(&disk_result(), 1_000).is_err(),
            "more than asked"
        );
        let mut d = disk_result();
        d.ended_ms = 0;
        assert!(check_disk(&d, 100_000_000).is_err());
        let run = NetRun {
            streams: 1,
            bytes: 1_000_000_000,
            micros: 10_000_000,
            retransmits: 3,
            started_ms: 5,
            ended_ms: 10_005,
        };
        assert_eq!(check_net(std::slice::from_ref(&run), &[1]), Ok(()));
        let many = NetRun {
            streams: 255,
            ..run.clone()
        };
        assert!(
            check_net(&[many], &[1])
                .unwrap_err()
                .contains("255 streams")
        );
        let fast = NetRun {
            micros: 1,
            ..run.clone()
        };
        assert!(check_net(&[fast], &[1]).is_err());
        assert!(
            check_net(&[run.clone(), run], &[1]).is_err(),
            "more runs than asked"
        );
    }
}

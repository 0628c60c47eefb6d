//! `nasprobe serve --metrics ADDR:PORT`: a Prometheus scrape endpoint with the newest rates of
//! every host in the store (text exposition format 0.0.4), optionally while recording hosts.
//!
//! A small HTTP/1.1 server: one thread awaits connections and the stop request (smol, no
//! polling); each connection gets a thread (at most [`MAX_CONNECTIONS`] at once; more are
//! answered 503), a request head of at most `MAX_REQUEST` bytes, read and write timeouts,
//! `Connection: close`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nasprobe_proto::Sample;

use super::format::exposition;
use super::metrics::{EVENTS_TOTAL, LAST_SAMPLE, Points, Sink, WithCollector, emit_sample};
use crate::store::{Store, StoreReader, decode_stored};

/// Largest request head accepted (request line and headers).
pub(crate) const MAX_REQUEST: usize = 16 * 1024;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// Read and write timeout of a connection.
pub(crate) const IO_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The scrape body: the newest sample of every host whose newest sample is at most `max_age`
/// old (None: any age), plus per host its newest sample time and events stored per kind.
pub fn scrape(
    store: &StoreReader,
    max_age: Option<Duration>,
    now_ms: u64,
    collector: &str,
) -> anyhow::Result<Vec<u8>> {
    let mut all = Points::default();
    let mut pts = WithCollector {
        inner: &mut all,
        name: collector,
    };
    let instances = store.export_instances()?;
    for (host, rec) in store.latest_samples()? {
        let (row, seq, time_ms, body) = (rec.instance, rec.seq, rec.time_ms, rec.body);
        let h = [("host", host.as_str())];
        pts.point(LAST_SAMPLE, &h, time_ms as f64 / 1000.0, time_ms);
        if max_age.is_some_and(|a| now_ms.saturating_sub(time_ms) > a.as_millis() as u64) {
            continue; // stale: say when it was, not what it was
        }
        let Some(inst) = instances.iter().find(|i| i.row == row) else {
            continue;
        };
        let Some(s) = decode_stored::<Sample>(&body) else {
            log::warn!(
                "serve: the newest stored sample of {host} (seq {seq}) does not decode (corrupt row?); left out of the scrape"
            );
            continue;
        };
        emit_sample(&mut pts, &host, &inst.hello, &s, time_ms);
    }
    // The verdict over the 5 minutes before the newest sample.
    let newest = all
        .0
        .iter()
        .filter(|p| p.metric.name == LAST_SAMPLE.name)
        .map(|p| p.ts_ms)
        .max();
    let mut pts = WithCollector {
        inner: &mut all,
        name: collector,
    };
    if let Some(newest) = newest
        && max_age.is_none_or(|a| now_ms.saturating_sub(newest) <= a.as_millis() as u64)
    {
        super::verdict::emit_verdict(&mut pts, store, newest)?;
    }
    for (host, kind, n) in store.event_counts()? {
        pts.point(
            EVENTS_TOTAL,
            &[("host", &host), ("kind", &kind)],
            n as f64,
            now_ms,
        );
    }
    Ok(exposition(&all.0))
}

/// A running scrape endpoint.
pub struct Server {
    pub addr: std::net::SocketAddr,
    /// Closed to stop accepting (the accept loop races it).
    stop: smol::channel::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves the store at `db` on a background thread.
    pub fn start(
        addr: &str,
        db: &Path,
        max_age: Option<Duration>,
        collector: &str,
    ) -> anyhow::Result<Server> {
        let listener =
            TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        let listener = smol::Async::new(listener)?;
        let store = Arc::new(Mutex::new(Store::open(db)?.into_reader()));
        let (stop, stop_rx) = smol::channel::bounded::<()>(1);
        let db = db.to_path_buf();
        let collector: Arc<str> = collector.into();
        let thread = std::thread::Builder::new()
            .name("serve-metrics".into())
            .spawn(move || {
                smol::block_on(accept_loop(
                    listener, store, db, max_age, collector, stop_rx,
                ))
            })?;
        Ok(Server {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }

    pub fn stop(mut self) {
        self.stop.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What woke the accept loop.
enum Woken {
    Conn(std::io::Result<(smol::Async<TcpStream>, std::net::SocketAddr)>),
    Stop,
}

async fn accept_loop(
    listener: smol::Async<TcpListener>,
    store: Arc<Mutex<StoreReader>>,
    db: PathBuf,
    max_age: Option<Duration>,
    collector: Arc<str>,
    stop: smol::channel::Receiver<()>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    // Connections over the cap are answered 503 by one thread (each takes at most ~1 s), so a
    // flood costs one thread; past its queue they are just closed.
    let (busy_tx, busy_rx) = std::sync::mpsc::sync_channel::<TcpStream>(64);
    let _ = std::thread::Builder::new()
        .name("serve-busy".into())
        .spawn(move || {
            for mut c in busy_rx {
                let _ = refuse(&mut c, 503, b"too many connections\n");
            }
        });
    loop {
        let woken = smol::future::or(async { Woken::Conn(listener.accept().await) }, async {
            let _ = stop.recv().await;
            Woken::Stop
        })
        .await;
        let accepted = match woken {
            Woken::Stop => return,
            Woken::Conn(c) => c.and_then(|(c, peer)| Ok((c.into_inner()?, peer))),
        };
        match accepted {
            Ok((mut conn, peer)) => {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
                let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
                if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::SeqCst);
                    let _ = busy_tx.try_send(conn);
                    continue;
                }
                let (store, active, db) = (store.clone(), active.clone(), db.clone());
                let collector = collector.clone();
                let spawned = std::thread::Builder::new()
                    .name("serve-conn".into())
                    .stack_size(8 << 20)
                    .spawn(move || {
                        if let Err(e) = handle(&mut conn, &store, &db, max_age, &collector) {
                            log::debug!("serve: {peer}: {e}");
                        }
                        active.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    log::warn!("serve: cannot spawn a thread for {peer}");
                }
            }
            Err(e) => {
                // Out of descriptors or the like: wait a little before the next accept.
                log::warn!("serve: accept: {e}");
                smol::Timer::after(Duration::from_millis(200)).await;
            }
        }
    }
}

enum Head {
    Request { method: String, path: String },
    TooLarge,
    Bad,
}

/// Reads the request head (at most [`MAX_REQUEST`] bytes, within [`IO_TIMEOUT`]).
fn read_head(conn: &mut TcpStream) -> std::io::Result<Head> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            break;
        }
        if buf.len() > MAX_REQUEST {
            return Ok(Head::TooLarge);
        }
        if Instant::now() > deadline {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            if buf.is_empty() {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(Head::Bad);
    };
    if !version.starts_with("HTTP/1.") {
        return Ok(Head::Bad);
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    Ok(Head::Request {
        method: method.to_string(),
        path,
    })
}

/// Answers an error and reads (a bounded amount of) what the client still sends, so that
/// closing does not reset the connection before the client read the answer.
fn refuse(conn: &mut TcpStream, status: u16, msg: &[u8]) -> std::io::Result<()> {
    respond(conn, status, "text/plain", msg, false)?;
    conn.shutdown(std::net::Shutdown::Write)?;
    conn.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut sink = [0u8; 4096];
    let mut left = 1usize << 20;
    while left > 0 {
        match conn.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

fn respond(
    conn: &mut TcpStream,
    status: u16,
    ctype: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\n{}\r\n",
        body.len(),
        if status == 405 {
            "Allow: GET, HEAD\r\n"
        } else {
            ""
        }
    );
    conn.write_all(head.as_bytes())?;
    if !head_only {
        conn.write_all(body)?;
    }
    conn.flush()
}

fn handle(
    conn: &mut TcpStream,
    store: &Mutex<StoreReader>,
    db: &Path,
    max_age: Option<Duration>,
    collector: &str,
) -> std::io::Result<()> {
    let (method, path) = match read_head(conn)? {
        Head::Request { method, path } => (method, path),
        Head::TooLarge => return refuse(conn, 431, b"request head too large\n"),
        Head::Bad => return refuse(conn, 400, b"bad request\n"),
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return refuse(conn, 405, b"method not allowed\n");
    }
    match path.as_str() {
        "/metrics" => {
            let body = {
                let s = store.lock().unwrap_or_else(|p| p.into_inner());
                scrape(&s, max_age, nasprobe_proto::time::now_ms(), collector)
            };
            match body {
                Ok(b) => respond(conn, 200, CONTENT_TYPE, &b, head_only),
                Err(e) => {
                    log::warn!("serve: {}: {e}", db.display());
                    respond(
                        conn,
                        500,
                        "text/plain",
                        format!("{e}\n").as_bytes(),
                        head_only,
                    )
                }
            }
        }
        "/" => respond(
            conn,
            200,
            "text/html; charset=utf-8",
            b"<html><head><title>nasprobe</title></head><body><h1>nasprobe</h1>\
              <p><a href=\"/metrics\">metrics</a></p></body></html>\n",
            head_only,
        ),
        _ => respond(
            conn,
            404,
            "text/plain",
            b"not found (try /metrics)\n",
            head_only,
        ),
    }
}

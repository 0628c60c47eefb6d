//! Delivery: the outbox of the store to each `--notify` receiver, in order per receiver, each
//! notification retried with backoff until it is delivered or [`MAX_ATTEMPTS`] have failed
//! (then it is given up and `nasprobe alerts` lists it). HTTP through ureq in the blocking
//! pool (`smol::unblock`), so a slow receiver never holds the evaluation.

use std::io::Write as _;
use std::time::{Duration, Instant};

use super::config::Receiver;
use super::payload;
use super::state;

/// One request's time limit: a receiver slower than this is retried later.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);
/// The first retry's wait; it doubles up to [`BACKOFF_CAP`].
pub(crate) const BACKOFF_FIRST: Duration = Duration::from_secs(2);
/// The longest wait between two attempts: a receiver back after an outage hears within it.
pub(crate) const BACKOFF_CAP: Duration = Duration::from_secs(300);
/// Attempts before a notification is given up: with the waits above about 1 h 15 min of
/// trying, past which a late alert is worth less than the list `nasprobe alerts` shows.
pub(crate) const MAX_ATTEMPTS: u32 = 20;
/// Of an answer, this much is kept for the error text.
const BODY_LIMIT: u64 = 4096;

/// The wait after `attempts` failed attempts.
pub(crate) fn backoff(attempts: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1u32 << attempts.saturating_sub(1).min(16))
        .min(BACKOFF_CAP)
}

/// The HTTP client of the receivers: one agent (its connections kept), https checked against
/// `--ca-file` or the built-in roots.
#[derive(Clone)]
pub(crate) struct Client {
    agent: ureq::Agent,
    trust: crate::http::Trust,
}

impl Client {
    pub(crate) fn new(trust: &crate::http::Trust) -> Client {
        Client {
            agent: trust.agent(TIMEOUT),
            trust: trust.clone(),
        }
    }

    fn answer(
        &self,
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(), String> {
        // The error is printed and kept in the outbox: the URL's secrets redacted.
        let url = &crate::http::redact(url);
        answer(url, r.map_err(|e| self.trust.describe(url, &e)))
    }
}

fn answer(url: &str, r: Result<ureq::http::Response<ureq::Body>, String>) -> Result<(), String> {
    let mut resp = r?;
    let status = resp.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(());
    }
    if let Some(words) = crate::http::redirect_words(&resp) {
        return Err(format!("{url}: HTTP {status} {words}"));
    }
    let body = resp
        .body_mut()
        .with_config()
        .limit(BODY_LIMIT)
        .read_to_string()
        .unwrap_or_default();
    let body = crate::http::answer_text(&body, crate::http::ANSWER_CHARS);
    Err(format!("{url}: HTTP {status} {body}"))
}

/// Alertmanager's alerts endpoint under the URL given.
fn am_url(base: &str) -> String {
    let b = base.trim_end_matches('/');
    if b.ends_with("/api/v2/alerts") {
        b.to_string()
    } else {
        format!("{b}/api/v2/alerts")
    }
}

/// Sends one notification (blocking). `hold_s`: how long Alertmanager keeps a firing alert
/// without hearing of it again.
pub(crate) fn send(c: &Client, r: &Receiver, body: &str, hold_s: u64) -> Result<(), String> {
    match r {
        Receiver::Webhook(url) => c.answer(
            url,
            c.agent
                .post(url)
                .header("Content-Type", "application/json")
                .send(body),
        ),
        Receiver::Ntfy(url) => {
            let (text, headers) = payload::ntfy(body);
            let mut req = c.agent.post(url);
            for (k, v) in headers {
                req = req.header(k, v);
            }
            c.answer(url, req.send(text))
        }
        Receiver::Alertmanager(base) => {
            let url = am_url(base);
            c.answer(
                &url,
                c.agent
                    .post(&url)
                    .header("Content-Type", "application/json")
                    .send(payload::alertmanager(body, hold_s)),
            )
        }
        Receiver::Exec(cmd) => exec(cmd, body),
    }
}

/// `sh -c CMD` with the JSON on stdin; its exit status 0 is delivered.
fn exec(cmd: &str, body: &str) -> Result<(), String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("exec {cmd}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input still gets to run.
        stdin.write_all(body.as_bytes()).ok();
    }
    let until = Instant::now() + TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return Ok(()),
            Ok(Some(st)) => return Err(format!("exec {cmd}: {st}")),
            Ok(None) if Instant::now() >= until => {
                child.kill().ok();
                child.wait().ok();
                return Err(format!(
                    "exec {cmd}: still running after {} s: killed",
                    TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("exec {cmd}: {e}")),
        }
    }
}

/// Delivers what is due of the outbox to each receiver, oldest first, stopping for a receiver
/// at its first notification that fails or waits. Returns when nothing more is due.
pub(crate) async fn deliver_due(
    db: &crate::store::StoreReader,
    receivers: &[Receiver],
    hold_s: u64,
    client: &Client,
) {
    for r in receivers {
        let spec = r.spec();
        loop {
            let next = match state::next_outgoing(db.conn(), &spec) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => {
                    log::warn!("alerts: outbox: {e}");
                    break;
                }
            };
            let now = nasprobe_proto::time::now_ms();
            if next.next_ms > now {
                break;
            }
            let (rc, body, c) = (r.clone(), next.payload.clone(), client.clone());
            let res = smol::unblock(move || send(&c, &rc, &body, hold_s)).await;
            let now = nasprobe_proto::time::now_ms();
            let w = match res {
                Ok(()) => {
                    log::info!("alerts: delivered #{} to {spec}", next.id);
                    state::mark_delivered(db.conn(), next.id, now)
                }
                Err(e) => {
                    let attempts = next.attempts + 1;
                    let give_up = attempts >= MAX_ATTEMPTS;
                    let wait = backoff(attempts);
                    log::warn!(
                        "alerts: {e} (attempt {attempts}); {}",
                        if give_up {
                            "given up: nasprobe alerts lists it".to_string()
                        } else {
                            format!("retrying in {} s", wait.as_secs())
                        }
                    );
                    let w = state::mark_failed(
                        db.conn(),
                        next.id,
                        &e,
                        now + wait.as_millis() as u64,
                        give_up,
                    );
                    if w.is_ok() && !give_up {
                        break;
                    }
                    w
                }
            };
            if let Err(e) = w {
                log::warn!("alerts: outbox: {e}");
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap() {
        assert_eq!(backoff(1), Duration::from_secs(2));
        assert_eq!(backoff(2), Duration::from_secs(4));
        assert_eq!(backoff(5), Duration::from_secs(32));
        assert_eq!(backoff(12), BACKOFF_CAP);
        let total: u64 = (1..MAX_ATTEMPTS).map(|a| backoff(a).as_secs()).sum();
        assert!((3600..7200).contains(&total), "{total}");
    }

    #[test]
    fn exec_gets_the_json_and_its_status_counts() {
        let dir = std::env::temp_dir().join(format!("np-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("got.json");
        let c = Client::new(&Default::default());
        send(
            &c,
            &Receiver::Exec(format!("cat > '{}'", out.display())),
            "{\"rule\":\"stall\"}",
            0,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"rule\":\"stall\"}"
        );
        assert!(send(&c, &Receiver::Exec("exit 3".into()), "{}", 0).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_receiver_that_is_down_is_an_error() {
        // A port nothing listens on (bound then dropped).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = send(
            &Client::new(&Default::default()),
            &Receiver::Webhook(format!("http://127.0.0.1:{port}/x")),
            "{}",
            0,
        )
        .unwrap_err();
        assert!(e.contains("127.0.0.1"), "{e}");
        assert_eq!(am_url("http://a:9093/"), "http://a:9093/api/v2/alerts");
    }

    #[test]
    fn an_error_body_with_escapes_is_made_safe_by_the_one_sanitizer() {
        use std::io::{BufRead as _, Write as _};
        // A receiver answering 500 with a clear screen, OSC 0, BEL, a C1 CSI and U+202E.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let body = "no \u{1b}[2J\u{1b}]0;t\u{7} \u{9b}1m \u{202e}gpj.exe";
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            // The request's head (its body "{}" is not waited for).
            let mut r = std::io::BufReader::new(c.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let resp = format!(
                "HTTP/1.1 500 X\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            c.write_all(resp.as_bytes()).ok();
        });
        let e = send(
            &Client::new(&Default::default()),
            &Receiver::Webhook(format!("http://{addr}/x")),
            "{}",
            0,
        )
        .unwrap_err();
        assert!(e.contains("HTTP 500 no ␛[2J␛]0;t␇ �1m �gpj.exe"), "{e}");
        assert!(
            !e.chars()
                .any(|c| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\u{202e}')),
            "{e:?}"
        );
    }
}

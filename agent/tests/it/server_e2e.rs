//! End-to-end tests of the agent's server: the built binary on loopback, real sockets, bounded
//! timeouts everywhere. Issue 4's "Done when".

use std::io::Write;
use std::time::{Duration, Instant};

use crate::server_common::*;
use nasprobe_proto::{Event, Message, RecordBody};

fn is_agent_start(r: &nasprobe_proto::Record) -> bool {
    matches!(r.body, RecordBody::Event(Event::AgentStart(_)))
}

#[test]
fn client_authenticates_and_receives_live_samples() {
    big_stack(|| {
        let agent = Agent::start("live", &["--interval", "100"]);
        let (mut c, hello) = agent.connect();
        assert_eq!(hello.protocol_version, nasprobe_proto::PROTOCOL_VERSION);
        assert_ne!(hello.instance_id, 0);
        assert_eq!(hello.interval_ms, 100);
        assert_eq!(hello.oldest_seq, 1);
        assert!(hello.newest_seq >= 1);
        c.resume(0, 0);
        // A fresh agent's history starts at 1 with AgentStart: no Gone.
        let first = c.record();
        assert_eq!(first.seq, 1);
        assert!(
            is_agent_start(&first),
            "first record is AgentStart: {first:?}"
        );
        match &first.body {
            RecordBody::Event(Event::AgentStart(s)) => {
                assert_eq!(s.instance_id, hello.instance_id);
                assert_eq!(s.interval_ms, 100);
            }
            _ => unreachable!(),
        }
        // Then samples (and the sampler's events), live, contiguous, about 10 samples a second.
        let t0 = Instant::now();
        let mut recs = Vec::new();
        let mut samples = 0;
        let mut expect = 2;
        while samples < 10 {
            assert!(t0.elapsed() < Duration::from_secs(10), "too slow: {recs:?}");
            let r = c.record();
            assert_eq!(r.seq, expect, "records are contiguous");
            expect += 1;
            if matches!(r.body, RecordBody::Sample(_)) {
                samples += 1;
            }
            recs.push(r);
        }
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "10 samples at 100 ms took {took:?}"
        );
        for r in &recs {
            if let RecordBody::Sample(s) = &r.body {
                assert!(s.interval_us > 0, "interval travels with the sample");
            }
        }
        // Samples replayed from the ring may predate the connection (slow start under
        // emulation); the newest one was taken while this client was connected.
        let newest = recs
            .iter()
            .rev()
            .find_map(|r| match &r.body {
                RecordBody::Sample(s) => Some(s),
                _ => None,
            })
            .unwrap();
        assert!(newest.agent.clients >= 1, "the agent counts its client");
        // Wall clock times are sane.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        assert!(recs.last().unwrap().time_ms.abs_diff(now_ms) < 60_000);
    });
}

#[test]
fn bad_clients_are_refused_while_a_good_client_gets_every_sample() {
    big_stack(|| {
        let agent = Agent::start(
            "bad",
            &[
                "--interval",
                "100",
                "--max-clients",
                "8",
                "--handshake-timeout",
                "1500",
                "--stall-timeout",
                "1500",
                "--client-sndbuf",
                "4096",
            ],
        );
        let (mut good, hello) = agent.connect();
        good.resume(hello.instance_id, hello.newest_seq);
        let mut next = hello.newest_seq + 1;
        let mut read_some = |good: &mut Conn, n: u64| {
            for _ in 0..n {
                let r = good.record();
                assert_eq!(r.seq, next, "the good client misses nothing");
                next += 1;
            }
        };
        read_some(&mut good, 3);

        // 1. Wrong token: Refused, then closed.
        let mut bad = Conn::connect(agent.addr);
        let err = bad
            .handshake(b"not the token at all, not at all")
            .unwrap_err();
        assert!(err.contains("Refused"), "{err}");
        assert!(err.contains("authentication failed"), "{err}");
        read_some(&mut good, 2);

        // 2. Garbage bytes (a length prefix then junk that is no message).
        let mut g = Conn::connect(agent.addr);
        assert!(matches!(g.recv(), Ok(Message::Challenge(_))));
        g.stream
            .write_all(&[
                5,
                0,
                0,
                0,
                nasprobe_proto::PROTOCOL_VERSION,
                0xff,
                0xff,
                0xff,
                0xff,
            ])
            .unwrap();
        let (closed, _) = g.closed_within(STEP);
        assert!(closed, "garbage closes the connection");
        read_some(&mut good, 2);

        // 3. Oversize length: refused as soon as the prefix is there.
        let mut o = Conn::connect(agent.addr);
        assert!(matches!(o.recv(), Ok(Message::Challenge(_))));
        o.stream.write_all(&0x7fff_ffffu32.to_le_bytes()).unwrap();
        let (closed, _) = o.closed_within(STEP);
        assert!(closed, "an oversize length closes the connection");
        read_some(&mut good, 2);

        // 4. A length that lies (announces 100, sends 10) and then nothing: handshake deadline.
        let mut l = Conn::connect(agent.addr);
        assert!(matches!(l.recv(), Ok(Message::Challenge(_))));
        let mut lie = 100u32.to_le_bytes().to_vec();
        lie.extend_from_slice(&[1; 10]);
        l.stream.write_all(&lie).unwrap();
        let (closed, _) = l.closed_within(STEP);
        assert!(closed, "a stalled handshake is closed at the deadline");
        read_some(&mut good, 2);

        // 5. A stalled reader: authenticates, asks for all history, never reads again.
        let mut s = connect_from(None, Some(1024), agent.addr);
        s.handshake(&agent.token).unwrap();
        s.resume(0, 0);
        // Keep the good client reading while the agent finds out.
        let end = Instant::now() + Duration::from_secs(60);
        while !agent.log().contains("not reading") {
            assert!(
                Instant::now() < end,
                "stalled reader never dropped; log:\n{}",
                agent.log()
            );
            read_some(&mut good, 1);
        }
        read_some(&mut good, 5);

        let log = agent.log();
        for reason in [
            "authentication failed",
            "bad frame: frame body is not a valid message",
            "bad frame: frame of 2147483647 bytes exceeds the cap of 256",
            "handshake not completed within 1500 ms",
            "not reading: nothing could be sent for 1500 ms",
        ] {
            assert!(log.contains(reason), "log lacks '{reason}':\n{log}");
        }
        // No gap was ever seen by the good client (checked record by record above).
        assert!(next > hello.newest_seq + 15);
    });
}

#[test]
fn extra_clients_are_refused() {
    big_stack(|| {
        let agent = Agent::start("max", &["--interval", "100", "--max-clients", "1"]);
        let (mut first, hello) = agent.connect();
        first.resume(hello.instance_id, hello.newest_seq);
        first.record();
        let mut second = Conn::connect(agent.addr);
        match second.recv() {
            Ok(Message::Refused(r)) => assert!(r.reason.contains("too many clients"), "{r:?}"),
            other => panic!("expected Refused, got {other:?}"),
        }
        let (closed, _) = second.closed_within(STEP);
        assert!(closed);
        // The first one is unaffected, and its slot frees when it leaves.
        first.record();
        drop(first);
        assert!(agent.wait_log("connection closed by the collector", STEP));
        let (mut again, hello) = agent.connect();
        again.resume(hello.instance_id, hello.newest_seq);
        again.record();
    });
}

#[test]
fn wrong_tokens_are_rate_limited_per_address() {
    big_stack(|| {
        let agent = Agent::start("ratelimit", &["--interval", "100"]);
        for _ in 0..3 {
            let mut bad = connect_from(Some("127.0.0.2"), None, agent.addr);
            let e = bad
                .handshake(b"wrong wrong wrong wrong wrong!!")
                .unwrap_err();
            assert!(e.contains("authentication failed"), "{e}");
        }
        // The fourth wrong proof from that address is refused only after a delay: no refusal
        // within 150 ms of sending it (a lower bound: the agent waits 250 ms after receiving
        // it, so load cannot make this fail), but it does come.
        let mut slow = connect_from(Some("127.0.0.2"), None, agent.addr);
        let Ok(Message::Challenge(ch)) = slow.recv() else {
            panic!("no challenge")
        };
        let cn = [4u8; 32];
        slow.send(&Message::Auth(nasprobe_proto::Auth {
            client_nonce: cn,
            mac: nasprobe_proto::auth::client_proof(
                b"wrong wrong wrong wrong wrong!!",
                &ch.agent_nonce,
                &cn,
            ),
        }));
        assert_eq!(
            slow.recv_within(Duration::from_millis(150)).unwrap_err(),
            "timeout",
            "refused at once"
        );
        match slow.recv_within(Duration::from_secs(3)) {
            Ok(Message::Refused(r)) => assert!(r.reason.contains("authentication failed"), "{r:?}"),
            other => panic!("expected Refused, got {other:?}"),
        }
        assert!(agent.log().contains("127.0.0.2: 3 failed authentications"));
        // The right token from the same address is accepted at once (no lockout of the real
        // collector behind a guesser's address), and it streams.
        let mut right = connect_from(Some("127.0.0.2"), None, agent.addr);
        let hello = right.handshake(&agent.token).unwrap();
        right.resume(hello.instance_id, hello.newest_seq);
        right.record();
        // Another address is not affected.
        let (mut good, hello) = agent.connect();
        good.resume(hello.instance_id, hello.newest_seq);
        good.record();
    });
}

/// An authenticated client that floods the agent with `KeepAlive`s is dropped after
/// `CLIENT_FRAMES_PER_S` of them in a second (issue 19, finding 12); the others keep streaming.
#[test]
fn a_keepalive_flood_after_resume_is_cut_off() {
    big_stack(|| {
        let agent = Agent::start("kaflood", &["--interval", "100"]);
        let (mut good, hello) = agent.connect();
        good.resume(hello.instance_id, hello.newest_seq);
        let (mut flood, hello) = agent.connect();
        flood.resume(hello.instance_id, hello.newest_seq);
        let mut sent = 0usize;
        flood
            .stream
            .set_write_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        for _ in 0..20 {
            // Each KeepAlive sealed with the session's MAC: the frame cap is what cuts it off.
            let mut burst = Vec::new();
            let mac = flood.tx_mac.as_mut().unwrap();
            for _ in 0..10_000 {
                let mut one = [0u8; 64];
                let n = nasprobe_proto::frame::encode_sealed_frame(
                    &Message::KeepAlive(nasprobe_proto::KeepAlive { time_ms: 1 }),
                    &mut one,
                    mac,
                )
                .unwrap();
                burst.extend_from_slice(&one[..n]);
            }
            match std::io::Write::write_all(&mut flood.stream, &burst) {
                Ok(()) => sent += 10_000,
                Err(_) => break,
            }
        }
        assert!(
            agent.wait_log("sends too much: more than 20 messages in a second", STEP),
            "{}",
            agent.log()
        );
        eprintln!("flood: {sent} KeepAlives written before the agent closed");
        let first = good.record().seq;
        read_contiguous(&mut good, first + 1, first + 5);
    });
}

#[test]
fn resume_after_ten_seconds_gets_every_record_in_between() {
    big_stack(|| {
        let agent = Agent::start("resume", &["--interval", "100"]);
        let (mut c, hello) = agent.connect();
        let instance = hello.instance_id;
        c.resume(instance, 0);
        let recs = read_contiguous(&mut c, 1, 10);
        let last = recs.last().unwrap().seq;
        drop(c);
        std::thread::sleep(Duration::from_secs(10));
        let (mut c, hello) = agent.connect();
        assert_eq!(hello.instance_id, instance);
        assert!(
            hello.newest_seq >= last + 80,
            "about 100 samples were taken meanwhile: newest {}",
            hello.newest_seq
        );
        c.resume(instance, last);
        // Every record after `last`, up to past what the Hello said was newest: no gap, no dup.
        let target = hello.newest_seq + 5;
        let got = read_contiguous(&mut c, last + 1, target);
        assert_eq!(got.len() as u64, target - last);
        assert!(
            got.iter().all(|r| !is_agent_start(r)),
            "no AgentStart: same instance"
        );
    });
}

#[test]
fn resume_older_than_the_ring_gets_the_exact_gone_range() {
    big_stack(|| {
        // 4096 bytes hold about a hundred empty samples: the ring wraps in seconds.
        let agent = Agent::start("gone", &["--interval", "100", "--history-bytes", "4096"]);
        let (mut c, hello) = agent.connect();
        let instance = hello.instance_id;
        c.resume(instance, 0);
        let recs = read_contiguous(&mut c, 1, 3);
        let last = recs.last().unwrap().seq;
        drop(c);
        // Wait until the ring no longer holds last + 1.
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            let (mut c, hello) = agent.connect();
            if hello.oldest_seq > last + 1 {
                c.resume(instance, last);
                let gone = match c.recv() {
                    Ok(Message::Gone(g)) => g,
                    other => panic!("expected Gone, got {other:?}"),
                };
                assert_eq!(gone.instance_id, instance);
                assert_eq!(gone.from_seq, last + 1);
                assert!(gone.to_seq >= hello.oldest_seq - 1);
                // The very next record is the oldest still held: nothing between is lost silently.
                let r = c.record();
                assert_eq!(r.seq, gone.to_seq + 1);
                read_contiguous(&mut c, r.seq + 1, r.seq + 5);
                break;
            }
            assert!(Instant::now() < end, "ring never wrapped");
            drop(c);
            std::thread::sleep(Duration::from_millis(500));
        }
        // A collector of another instance (or none) is told what is gone from 1.
        let (mut c, _) = agent.connect();
        c.resume(0, 12345);
        let gone = match c.recv() {
            Ok(Message::Gone(g)) => g,
            other => panic!("expected Gone, got {other:?}"),
        };
        assert_eq!(gone.from_seq, 1);
        let r = c.record();
        assert_eq!(r.seq, gone.to_seq + 1);
    });
}

#[test]
fn keepalive_and_unexpected_messages() {
    big_stack(|| {
        let agent = Agent::start("proto", &["--interval", "100"]);
        // A Resume before Auth is a protocol error.
        let mut c = Conn::connect(agent.addr);
        assert!(matches!(c.recv(), Ok(Message::Challenge(_))));
        c.resume(0, 0);
        match c.recv() {
            Ok(Message::Refused(r)) => assert!(r.reason.contains("unexpected Resume"), "{r:?}"),
            other => panic!("expected Refused, got {other:?}"),
        }
        // KeepAlive from the collector is ignored once authenticated.
        let (mut c, hello) = agent.connect();
        c.resume(hello.instance_id, hello.newest_seq);
        c.send(&Message::KeepAlive(nasprobe_proto::KeepAlive {
            time_ms: 1,
        }));
        let a = c.record();
        let b = c.record();
        assert_eq!(b.seq, a.seq + 1);
    });
}

#[test]
fn sigterm_exits_cleanly_and_removes_the_pidfile() {
    big_stack(|| {
        let dir = std::env::temp_dir().join(format!("nasprobe-pid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("agent.pid");
        let mut agent = Agent::start(
            "sigterm",
            &["--interval", "100", "--pidfile", pidfile.to_str().unwrap()],
        );
        let pid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(pid, agent.child.id());
        let (mut c, hello) = agent.connect();
        c.resume(hello.instance_id, hello.newest_seq);
        c.record();
        agent.signal(libc::SIGTERM);
        assert_eq!(agent.wait_exit(STEP), Some(0));
        assert!(!pidfile.exists(), "pidfile removed on exit");
        // The client is told why, then closed.
        let (closed, got) = c.closed_within(STEP);
        assert!(closed);
        assert!(
            got.iter()
                .any(|m| matches!(m, Message::Refused(r) if r.reason.contains("stopping"))),
            "{got:?}"
        );
        assert!(agent.wait_log("exiting", STEP));
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn log_file_gets_the_log() {
    big_stack(|| {
        let dir = std::env::temp_dir().join(format!("nasprobe-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let logfile = dir.join("agent.log");
        let mut child = agent_command()
            .args([
                "--listen",
                "127.0.0.1:0",
                "--nice",
                "0",
                "--interval",
                "100",
                "--token-file",
            ])
            .arg(dir.join("token"))
            .arg("--log-file")
            .arg(&logfile)
            .spawn()
            .unwrap();
        let end = Instant::now() + STEP;
        while !std::fs::read_to_string(&logfile)
            .unwrap_or_default()
            .contains("listening on")
        {
            assert!(Instant::now() < end, "no log in the log file");
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        assert_eq!(child.wait().unwrap().code(), Some(0));
        let log = std::fs::read_to_string(&logfile).unwrap();
        assert!(log.contains("created token file"), "{log}");
        assert!(log.contains("exiting"), "{log}");
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn group_readable_token_is_refused_with_the_fix() {
    big_stack(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("nasprobe-perm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = agent_command()
            .args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("chmod 600 {}", token.display())),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The Hello's host facts are the sampler's, and `--name` arrives sanitized: control
/// characters (a terminal escape, a bell) become spaces instead of reaching the collector.
#[test]
fn hello_carries_the_sampler_facts_and_a_sanitized_name() {
    big_stack(|| {
        let agent = Agent::start(
            "name",
            &["--interval", "100", "--name", "nas\u{1b}[31m\u{7}1"],
        );
        let (_c, hello) = agent.connect();
        assert_eq!(hello.host_name.as_str(), "nas [31m 1");
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(hello.kernel_release.as_str(), release.trim());
        assert!(hello.cpu_count > 0 && hello.clock_ticks_per_sec > 0);
        assert_eq!(hello.interval_ms, 100);
    });
}

/// After the handshake every frame from the collector carries its MAC: a bit flipped in a
/// sealed `Resume` closes the connection with "authentication failed" before the frame is
/// acted on; a collector of another protocol version is told which side to upgrade.
#[test]
fn a_tampered_sealed_frame_and_an_old_collector_are_refused() {
    big_stack(|| {
        let agent = Agent::start("sealed", &["--interval", "100"]);
        let (mut c, hello) = agent.connect();
        let mut out = [0u8; 128];
        let n = nasprobe_proto::frame::encode_sealed_frame(
            &Message::Resume(nasprobe_proto::Resume {
                instance_id: hello.instance_id,
                after_seq: 0,
            }),
            &mut out,
            c.tx_mac.as_mut().unwrap(),
        )
        .unwrap();
        out[n - 20] ^= 0x01; // in the body, before the MAC
        c.stream.write_all(&out[..n]).unwrap();
        let (closed, got) = c.closed_within(STEP);
        assert!(closed, "a tampered frame closes the connection");
        assert!(
            !got.iter().any(|m| matches!(m, Message::Record(_))),
            "nothing is streamed on a tampered Resume: {got:?}"
        );
        assert!(
            agent.wait_log("authentication failed: frame 0 after the handshake", STEP),
            "{}",
            agent.log()
        );

        let mut old = Conn::connect(agent.addr);
        assert!(matches!(old.recv(), Ok(Message::Challenge(_))));
        // An Auth frame of protocol 1 (its body is not looked at).
        let mut f = 66u32.to_le_bytes().to_vec();
        f.push(1);
        f.extend_from_slice(&[1u8; 65]);
        old.stream.write_all(&f).unwrap();
        let (closed, _) = old.closed_within(STEP);
        assert!(closed);
        assert!(
            agent.wait_log(
                &format!(
                    "the collector speaks protocol 1, this agent {}: upgrade the collector",
                    nasprobe_proto::PROTOCOL_VERSION
                ),
                STEP
            ),
            "{}",
            agent.log()
        );
    });
}

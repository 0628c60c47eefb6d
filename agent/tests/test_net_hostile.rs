//! `test net` against a peer holding the token (issue 28, items 4 and 7), through the real
//! agents on loopback: a sender aimed at a plain TCP service (silent, or one that speaks first)
//! or at a closed port writes it no byte and says one same sentence after the same deadline;
//! the old, unbound requests are refused without using up the minute; 64 slow connections
//! without the run key, more arriving meanwhile and a forged header neither keep the real
//! sender out nor add to what the receiver counts.

mod server_common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use heapless::Vec as HVec;
use nasprobe_proto::test_stream::{run_key, seal_run_key};
use nasprobe_proto::{
    Message, NetReceiveRun, NetSend, NetSendRun, TestRequest, TestResult, test_stream,
};
use server_common::*;

/// The sender's sentence for a peer that is not this run's receiver (the agent's
/// `NOT_THE_RECEIVER`).
const NOT_THE_RECEIVER: &str =
    "no nasprobe receiver of this run answered at the test address within 3 s";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn test_agent(name: &str) -> Agent {
    let port = free_port().to_string();
    Agent::start(
        name,
        &["--interval", "200", "--allow-tests", "--test-port", &port],
    )
}

/// The agent's next word on a test: `TestReady`'s port, its result or its refusal.
enum Reply {
    Ready(u16),
    Result(TestResult),
    Refused(String),
}

fn reply(c: &mut Conn, within: Duration) -> Reply {
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match c.recv_within(left) {
            Ok(Message::TestReady(r)) => return Reply::Ready(r.port),
            Ok(Message::TestResult(r)) => return Reply::Result(r),
            Ok(Message::Refused(r)) => return Reply::Refused(r.reason.to_string()),
            Ok(Message::KeepAlive(_)) => {}
            other => panic!("expected a test reply, got {other:?}"),
        }
    }
}

fn ask(agent: &Agent, req: TestRequest) -> (Conn, Reply) {
    let (mut c, _hello) = agent.connect();
    c.send(&Message::TestRequest(req));
    let r = reply(&mut c, Duration::from_secs(30));
    (c, r)
}

fn runs(r: &[u8]) -> HVec<u8, { nasprobe_proto::MAX_NET_RUNS }> {
    HVec::from_slice(r).unwrap()
}

/// A local TCP service: counts the connections it accepted and the bytes it received; sends
/// `banner` first when given (as SSH, SMTP or FTP do).
struct Service {
    addr: SocketAddr,
    conns: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

fn service(banner: Option<&'static [u8]>) -> Service {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let (c2, b2) = (conns.clone(), bytes.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            c2.fetch_add(1, Ordering::SeqCst);
            let b3 = b2.clone();
            std::thread::spawn(move || {
                if let Some(b) = banner {
                    s.write_all(b).ok();
                }
                let mut buf = [0u8; 65536];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    b3.fetch_add(n as u64, Ordering::SeqCst);
                }
            });
        }
    });
    Service { addr, conns, bytes }
}

fn send_to(to: SocketAddr) -> TestRequest {
    TestRequest::NetSendRun(NetSendRun {
        to: to.to_string().as_str().try_into().unwrap(),
        seconds: 2,
        streams: runs(&[1]),
        max_bytes: 50_000_000,
        // The hostile collector's own choice: it knows no receiver's session key.
        sealed_key: [0x42; 32],
    })
}

#[test]
fn net_send_to_a_plain_tcp_service_delivers_nothing_and_says_the_same_whatever_the_port() {
    big_stack(|| {
        let silent = service(None);
        let talker = service(Some(b"+OK ready for FLUSHALL and QUIT please\r\n"));
        let closed: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let cases = [
            ("silent", silent.addr),
            ("talker", talker.addr),
            ("closed", closed),
        ];
        let handles: Vec<_> = cases
            .iter()
            .map(|&(name, to)| {
                std::thread::Builder::new()
                    .stack_size(32 << 20)
                    .spawn(move || {
                        let agent = test_agent(&format!("netsend-{name}"));
                        // The old request, whose header was the collector's nonce: refused,
                        // and the refusal does not use up the minute.
                        let (_c, r) = ask(
                            &agent,
                            TestRequest::NetSend(NetSend {
                                to: to.to_string().as_str().try_into().unwrap(),
                                seconds: 2,
                                streams: runs(&[1]),
                                nonce: *b"FLUSHALL\r\nQUIT\r\n",
                                max_bytes: 50_000_000,
                            }),
                        );
                        let Reply::Refused(why) = r else {
                            panic!("{name}: the old NetSend was not refused")
                        };
                        assert!(why.contains("upgrade the collector"), "{name}: {why}");
                        let t0 = Instant::now();
                        let (_c, r) = ask(&agent, send_to(to));
                        let took = t0.elapsed();
                        let Reply::Result(TestResult::Failed(why)) = r else {
                            panic!("{name}: the send did not fail")
                        };
                        (name, why.to_string(), took)
                    })
                    .unwrap()
            })
            .collect();
        for h in handles {
            let (name, why, took) = h.join().unwrap();
            eprintln!("FIGURES {name}: {why:?} after {took:?}");
            assert_eq!(
                why, NOT_THE_RECEIVER,
                "{name}: the same sentence for every port"
            );
            // A refused port answers no sooner than a silent one (loose: the 3 s deadline).
            assert!(
                took >= Duration::from_millis(2900),
                "{name}: failed after {took:?}"
            );
        }
        assert!(
            silent.conns.load(Ordering::SeqCst) >= 1 && talker.conns.load(Ordering::SeqCst) >= 1,
            "the sender did connect"
        );
        assert_eq!(
            silent.bytes.load(Ordering::SeqCst),
            0,
            "bytes reached the silent service"
        );
        assert_eq!(
            talker.bytes.load(Ordering::SeqCst),
            0,
            "bytes reached the talking service"
        );
    });
}

#[test]
fn slow_connections_and_a_forged_header_neither_keep_the_sender_out_nor_count() {
    big_stack(|| {
        let receiver = test_agent("netrx-slow");
        let sender = test_agent("nettx-slow");
        let (mut rx, _) = receiver.connect();
        rx.send(&Message::TestRequest(TestRequest::NetReceiveRun(
            NetReceiveRun {
                seconds: 20,
                streams: runs(&[2]),
                max_bytes: 1 << 40,
            },
        )));
        let Reply::Ready(port) = reply(&mut rx, STEP) else {
            panic!("no TestReady:\n{}", receiver.log())
        };
        let to: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        // 64 connections without the run key that send nothing, and more all along.
        let mut slow: Vec<TcpStream> = (0..64).map(|_| TcpStream::connect(to).unwrap()).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(s) = TcpStream::connect(to) {
                        held.push(s);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                held.len()
            })
        };
        // A forger: reads the receiver's proof, answers with a header it cannot MAC and sends.
        let forger = std::thread::spawn(move || {
            let mut s = TcpStream::connect(to).unwrap();
            let mut hello = [0u8; test_stream::RECEIVER_HELLO_LEN];
            s.read_exact(&mut hello).unwrap();
            let mut head = [0u8; test_stream::STREAM_HEADER_LEN];
            head[2..].copy_from_slice(&hello[..16]);
            let mut sent = 0u64;
            if s.write_all(&head).is_ok() {
                let chunk = vec![7u8; 1 << 16];
                s.set_write_timeout(Some(Duration::from_secs(1))).ok();
                for _ in 0..160 {
                    match s.write(&chunk) {
                        Ok(n) => sent += n as u64,
                        Err(_) => break,
                    }
                }
            }
            sent
        });
        std::thread::sleep(Duration::from_millis(500));
        let (mut tx, _) = sender.connect();
        let key = run_key(&rx.session_key.unwrap());
        tx.send(&Message::TestRequest(TestRequest::NetSendRun(NetSendRun {
            to: to.to_string().as_str().try_into().unwrap(),
            seconds: 2,
            streams: runs(&[2]),
            max_bytes: 1 << 40,
            sealed_key: seal_run_key(&tx.session_key.unwrap(), &key),
        })));
        let Reply::Result(sent) = reply(&mut tx, Duration::from_secs(30)) else {
            panic!("no sender result:\n{}", sender.log())
        };
        let Reply::Result(got) = reply(&mut rx, Duration::from_secs(30)) else {
            panic!("no receiver result:\n{}", receiver.log())
        };
        stop.store(true, Ordering::SeqCst);
        let churned = churn.join().unwrap();
        let forged = forger.join().unwrap();
        slow.clear();
        let (TestResult::Net(sent), TestResult::Net(got)) = (&sent, &got) else {
            panic!("sender {sent:?}, receiver {got:?}")
        };
        eprintln!(
            "FIGURES sent {} B, received {} B in {} streams; {churned} more slow connections, \
             the forger wrote {forged} B",
            sent[0].bytes, got[0].bytes, got[0].streams
        );
        assert_eq!(sent[0].streams, 2);
        assert_eq!(
            got[0].streams, 2,
            "both announced streams admitted, no other"
        );
        assert!(got[0].bytes > 0, "the real sender got through");
        assert!(
            got[0].bytes <= sent[0].bytes,
            "the receiver counted {} B, the sender sent {} B: the forger's were counted",
            got[0].bytes,
            sent[0].bytes
        );
    });
}

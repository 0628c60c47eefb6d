//! Client and supervisor against the in-process fake agent: wrong token, `Gone` becomes a gap,
//! a reconnect resumes after the committed high-water mark.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nasprobe::hosts::HostSpec;
use nasprobe::net::client::{ClientError, Incoming, Session};
use nasprobe::net::conn::{Collector, Target};
use nasprobe::store::{REASON_RING, Store};
use nasprobe::testing::{FakeAgent, FakeHistory};
use nasprobe_testkit::big_stack;

const TOKEN: &[u8] = b"0123456789abcdef0123456789abcdef";

#[test]
fn wrong_token_is_a_typed_error_naming_the_host() {
    big_stack(wrong_token);
}

fn wrong_token() {
    let agent = FakeAgent::start(TOKEN.to_vec(), FakeHistory::new(1, 0, 1000));
    let r = smol::block_on(Session::connect(
        "nas7",
        &agent.addr,
        b"not the token at all",
    ));
    match r {
        Err(e @ ClientError::Refused { .. }) => {
            assert!(e.to_string().starts_with("nas7: "), "{e}");
            assert!(e.is_configuration());
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected with a wrong token"),
    }
}

#[test]
fn gone_then_records() {
    big_stack(gone_records);
}

fn gone_records() {
    let mut h = FakeHistory::new(9, 1_000_000, 1000);
    for _ in 0..500 {
        h.push(100);
    }
    let agent = FakeAgent::start(TOKEN.to_vec(), h);
    smol::block_on(async {
        let mut s = Session::connect("n", &agent.addr, TOKEN).await.unwrap();
        assert_eq!(s.hello.instance_id, 9);
        s.resume(0, 0).await.unwrap();
        match s.next().await.unwrap() {
            Incoming::Gone(g) => assert_eq!((g.from_seq, g.to_seq), (1, 400)),
            other => panic!("{other:?}"),
        }
        match s.next().await.unwrap() {
            Incoming::Record(r, _) => assert_eq!(r.seq, 401),
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn supervisor_records_gone_and_resumes_after_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let mut h = FakeHistory::new(5, 1_000_000, 1000);
    for _ in 0..300 {
        h.push(200);
    }
    let agent = FakeAgent::start(TOKEN.to_vec(), h);
    let target = || Target {
        spec: HostSpec {
            name: "fake".into(),
            addr: agent.addr.clone(),
            token_file: None,
        },
        token: Arc::new(TOKEN.to_vec()),
    };
    let wait = |col: &Collector, n: u64| {
        let t0 = Instant::now();
        while col.live.committed.load(Ordering::SeqCst) < n {
            assert!(t0.elapsed() < Duration::from_secs(20), "timeout");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let col = Collector::start(Store::open(&db).unwrap(), vec![target()], None);
    wait(&col, 201); // Gone + 200 records
    let store = col.finish().unwrap();
    assert_eq!(store.resume_point("fake", 5).unwrap(), Some(300));
    drop(store);
    // The agent goes on; a new run resumes after 300 and stores 301..=350 only.
    {
        let mut g = agent.history.lock().unwrap();
        for _ in 0..50 {
            g.push(200);
        }
    }
    let col = Collector::start(Store::open(&db).unwrap(), vec![target()], None);
    wait(&col, 50);
    let store = col.finish().unwrap();
    let c = &store.check().unwrap()[0];
    assert_eq!((c.first_seq, c.last_seq, c.gone), (1, 350, 100), "{c:?}");
    assert_eq!(c.stored, 250);
    assert!(c.holes.is_empty());
    let sum = store.summary(None, None).unwrap();
    assert_eq!(sum[0].gaps.len(), 1);
    assert_eq!(sum[0].gaps[0].reason, REASON_RING);
    assert_eq!(sum[0].gaps[0].samples, 100);
    assert_eq!(agent.connections.load(Ordering::SeqCst), 2);
}

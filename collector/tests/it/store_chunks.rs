//! The compact store (issue 17): random runs with gaps, restarts and duplicates round-trip
//! through the chunks exactly; a crash that cuts the WAL or the database anywhere never yields
//! a wrong sample, only a gap that the agent's resend fills; a damaged chunk is a named gap;
//! a store written at schema 3 (one row per sample, as before chunks) migrates in place.

use std::collections::BTreeMap;
use std::path::Path;

use nasprobe::store::{Item, SCHEMA_VERSION, Store};
use nasprobe::testing::{exit_event, nas_hello, nas_sample};

/// xorshift64*: deterministic randomness without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The body of sample `seq`: unique per seq (its context switches), so a sample stored under
/// the wrong seq is seen.
fn body(seq: u64) -> Vec<u8> {
    let mut s = nas_sample(seq);
    s.context_switches = 1_000_000 + seq;
    postcard::to_allocvec(&s).unwrap()
}

/// What one agent instance sent: its records in order (`Some(is_event)`), or lost (`None`).
#[derive(Clone)]
struct Rec {
    seq: u64,
    time_ms: u64,
    kind: Option<bool>,
}

fn item(instance: i64, r: &Rec) -> Item {
    match r.kind {
        Some(false) => Item::Sample {
            instance,
            seq: r.seq,
            time_ms: r.time_ms,
            body: body(r.seq),
        },
        Some(true) => {
            let e = exit_event(r.seq as u32);
            let rec = nasprobe_proto::Record {
                seq: r.seq,
                time_ms: r.time_ms,
                body: nasprobe_proto::RecordBody::Event(e.clone()),
            };
            Item::from_record(instance, &rec, postcard::to_allocvec(&e).unwrap())
        }
        None => unreachable!("lost records are sent as Gone"),
    }
}

/// A random run of one instance: `n` records at `interval_ms` (some slower, one in 40 an
/// event, runs lost to the ring), starting at `start_ms`.
fn run(rng: &mut Rng, n: u64, start_ms: u64, interval_ms: u64) -> Vec<Rec> {
    let mut t = start_ms;
    let mut out = Vec::new();
    let mut lost = 0;
    for seq in 1..=n {
        t += interval_ms + if rng.below(50) == 0 { 40_000 } else { 0 };
        if lost == 0 && rng.below(300) == 0 {
            lost = 1 + rng.below(200);
        }
        let kind = if lost > 0 {
            lost -= 1;
            None
        } else {
            Some(rng.below(40) == 0)
        };
        out.push(Rec {
            seq,
            time_ms: t,
            kind,
        });
    }
    out
}

/// Sends `recs` in random batches, with `Gone` for lost runs and random resends of earlier
/// batches (duplicates); `from` = first index to send.
fn send(s: &mut Store, rng: &mut Rng, instance: i64, recs: &[Rec], from: usize) {
    let mut i = from;
    let mut sent: Vec<Vec<Item>> = Vec::new();
    while i < recs.len() {
        let n = 1 + rng.below(400) as usize;
        let mut batch = Vec::new();
        for r in &recs[i..(i + n).min(recs.len())] {
            match r.kind {
                Some(_) => batch.push(item(instance, r)),
                None => match batch.last_mut() {
                    Some(Item::Gone { to_seq, .. }) => *to_seq = r.seq,
                    _ => batch.push(Item::Gone {
                        instance,
                        from_seq: r.seq,
                        to_seq: r.seq,
                    }),
                },
            }
        }
        s.write_batch(&batch).unwrap();
        sent.push(batch);
        if rng.below(8) == 0 {
            // A duplicate: an earlier batch (samples only: a Gone is announced once).
            let k = rng.below(sent.len() as u64) as usize;
            let again: Vec<Item> = sent[k]
                .iter()
                .filter(|it| matches!(it, Item::Sample { .. }))
                .cloned()
                .collect();
            s.write_batch(&again).unwrap();
        }
        i += n;
    }
}

/// Asserts that the store holds exactly the samples of `want` (seq → time) for host `host`,
/// each with its own body, and that `check` finds nothing missing, doubled or bad.
fn assert_exact(s: &Store, host: &str, want: &BTreeMap<(u64, u64), u64>) {
    let w = s.load_window(None, None).unwrap();
    let h = w.iter().find(|h| h.name == host).expect("host stored");
    let mut got: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for smp in &h.samples {
        let inst = h.instances[smp.instance].id;
        assert_eq!(smp.body, body(smp.seq), "seq {} has another body", smp.seq);
        assert!(
            got.insert((inst, smp.seq), smp.time_ms).is_none(),
            "seq {} twice",
            smp.seq
        );
    }
    assert_eq!(&got, want);
    for c in s.check().unwrap() {
        assert!(c.holes.is_empty(), "{c:?}");
        assert_eq!(c.duplicates, 0, "{c:?}");
        assert!(c.bad_rows.is_empty(), "{c:?}");
    }
}

fn chunk_rows(s: &Store) -> (i64, i64) {
    s.conn()
        .query_row(
            "SELECT (SELECT COUNT(*) FROM sample_chunks), (SELECT COUNT(*) FROM samples)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

#[test]
fn random_runs_round_trip_exactly() {
    let now = nasprobe_proto::time::now_ms();
    for seed in 1..=4u64 {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        let mut s = Store::open(&p).unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut want = BTreeMap::new();
        // Three instances of one host (two restarts), each a few hours at 1 Hz.
        let mut start = now - 30 * 3_600_000;
        for k in 0..3u64 {
            let id = 0x1000 * seed + k;
            let n = 3000 + rng.below(6000);
            let recs = run(&mut rng, n, start, 1000);
            let reg = s
                .register("nas", "a:1", &nas_hello(id, start, 1000))
                .unwrap();
            // A collector restart in the middle: a new Store resumes after the mark.
            let cut = rng.below(recs.len() as u64) as usize;
            send(&mut s, &mut rng, reg.instance, &recs[..cut], 0);
            drop(s);
            s = Store::open(&p).unwrap();
            let reg = s
                .register("nas", "a:1", &nas_hello(id, start, 1000))
                .unwrap();
            let resume = recs
                .iter()
                .position(|r| r.seq > reg.after_seq)
                .unwrap_or(recs.len());
            assert!(resume <= cut, "resume point past what was written");
            send(&mut s, &mut rng, reg.instance, &recs, resume);
            for r in recs.iter().filter(|r| r.kind == Some(false)) {
                want.insert((id, r.seq), r.time_ms);
            }
            start = recs.last().unwrap().time_ms + 60_000;
        }
        let (chunks, raw) = chunk_rows(&s);
        assert!(chunks > 20, "seed {seed}: only {chunks} chunks");
        assert!(raw < 3 * 1000, "seed {seed}: {raw} raw rows left");
        assert_exact(&s, "nas", &want);
        // Resending everything once more changes nothing.
        drop(s);
        let mut s = Store::open(&p).unwrap();
        let inst: Vec<i64> = s
            .conn()
            .prepare("SELECT id FROM instances ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let again: Vec<Item> = want
            .iter()
            .map(|(&(id, seq), &t)| {
                let row = inst[(id - 0x1000 * seed) as usize];
                Item::Sample {
                    instance: row,
                    seq,
                    time_ms: t,
                    body: body(seq),
                }
            })
            .collect();
        for c in again.chunks(700) {
            s.write_batch(c).unwrap();
        }
        assert_exact(&s, "nas", &want);
        // A window inside: exactly the samples with their time in it.
        let (lo, hi) = (now - 29 * 3_600_000, now - 27 * 3_600_000);
        let w = s.load_window(Some(lo), Some(hi)).unwrap();
        let n = w.first().map_or(0, |h| h.samples.len());
        assert_eq!(
            n,
            want.values().filter(|&&t| t >= lo && t <= hi).count(),
            "seed {seed}"
        );
        let sum = s.summary(Some(lo), Some(hi)).unwrap();
        assert_eq!(sum[0].samples as usize, n, "summary over the window");
    }
}

/// Writes `recs` of one instance in batches of 300 and returns the instance row.
fn write_all(s: &mut Store, recs: &[Rec], id: u64) -> i64 {
    let reg = s
        .register("nas", "a:1", &nas_hello(id, recs[0].time_ms - 1000, 1000))
        .unwrap();
    for c in recs.chunks(300) {
        let items: Vec<Item> = c
            .iter()
            .filter(|r| r.kind.is_some())
            .map(|r| item(reg.instance, r))
            .collect();
        s.write_batch(&items).unwrap();
    }
    reg.instance
}

/// Opening a copy whose WAL (or database file) a crash cut at `cut` bytes: every sample read
/// is the one sent under its seq; resuming after the resume point fills everything.
fn crash_case(src: &Path, dir: &Path, cut_wal: Option<u64>, cut_db: Option<u64>, recs: &[Rec]) {
    let p = dir.join("c.db");
    let _ = std::fs::remove_file(dir.join("c.db-shm"));
    std::fs::copy(src, &p).unwrap();
    let wal = src.with_extension("db-wal");
    if wal.exists() {
        std::fs::copy(&wal, dir.join("c.db-wal")).unwrap();
    } else {
        let _ = std::fs::remove_file(dir.join("c.db-wal"));
    }
    if let Some(c) = cut_wal {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("c.db-wal"))
            .unwrap();
        f.set_len(c).unwrap();
    }
    if let Some(c) = cut_db {
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(c).unwrap();
    }
    // A cut database file may not open or read at all: an error, never a panic or a wrong row.
    let mut s = match Store::open(&p) {
        Ok(s) => s,
        Err(e) => {
            assert!(cut_db.is_some(), "a cut WAL must open: {e}");
            return;
        }
    };
    let w = match s.load_window(None, None) {
        Ok(w) => w,
        Err(e) => {
            assert!(cut_db.is_some(), "a cut WAL must read: {e}");
            return;
        }
    };
    let times: BTreeMap<u64, u64> = recs.iter().map(|r| (r.seq, r.time_ms)).collect();
    let mut stored = 0;
    for h in &w {
        for smp in &h.samples {
            assert_eq!(smp.body, body(smp.seq), "seq {}: wrong body", smp.seq);
            assert_eq!(Some(&smp.time_ms), times.get(&smp.seq), "seq {}", smp.seq);
            stored += 1;
        }
    }
    if cut_db.is_some() {
        return;
    }
    // Only a prefix of the transactions survives: the resume point covers what is stored and
    // the agent's resend of everything after it fills the rest.
    let after = s.resume_point("nas", 77).unwrap().unwrap_or(0);
    let upto = recs
        .iter()
        .filter(|r| r.kind == Some(false) && r.seq <= after)
        .count();
    assert_eq!(stored, upto, "stored samples vs resume point {after}");
    let reg = s
        .register("nas", "a:1", &nas_hello(77, recs[0].time_ms - 1000, 1000))
        .unwrap();
    assert_eq!(reg.after_seq, after);
    let rest: Vec<Item> = recs
        .iter()
        .filter(|r| r.seq > after && r.kind.is_some())
        .map(|r| item(reg.instance, r))
        .collect();
    for c in rest.chunks(250) {
        s.write_batch(c).unwrap();
    }
    let want: BTreeMap<(u64, u64), u64> = recs
        .iter()
        .filter(|r| r.kind == Some(false))
        .map(|r| ((77, r.seq), r.time_ms))
        .collect();
    assert_exact(&s, "nas", &want);
}

#[test]
fn a_crash_cut_anywhere_loses_only_what_the_resend_fills() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.db");
    let now = nasprobe_proto::time::now_ms();
    let mut rng = Rng(0xc0ffee);
    // No lost runs: every seq of the source is a sample or an event.
    let recs: Vec<Rec> = run(&mut rng, 6000, now - 5 * 3_600_000, 1000)
        .into_iter()
        .map(|mut r| {
            r.kind.get_or_insert(false);
            r
        })
        .collect();
    {
        let mut s = Store::open(&src).unwrap();
        // Keep every transaction in the WAL (a recorder killed before any checkpoint).
        s.conn()
            .execute_batch("PRAGMA wal_autocheckpoint=0;")
            .unwrap();
        write_all(&mut s, &recs, 77);
        let (chunks, _) = chunk_rows(&s);
        assert!(chunks >= 5, "{chunks} chunks");
        // Copy while the writer is open (a crash leaves the WAL as it is).
        std::fs::copy(&src, dir.path().join("snap.db")).unwrap();
        std::fs::copy(src.with_extension("db-wal"), dir.path().join("snap.db-wal")).unwrap();
    }
    let snap = dir.path().join("snap.db");
    let wal_len = std::fs::metadata(snap.with_extension("db-wal"))
        .unwrap()
        .len();
    assert!(wal_len > 100_000, "WAL of {wal_len} bytes");
    let work = tempfile::tempdir().unwrap();
    for _ in 0..40 {
        let cut = rng.below(wal_len);
        crash_case(&snap, work.path(), Some(cut), None, &recs);
    }
    // The database file itself cut (after a checkpoint folded the WAL into it).
    {
        let s = Store::open(&snap).unwrap();
        s.conn()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
    }
    let db_len = std::fs::metadata(&snap).unwrap().len();
    for _ in 0..40 {
        let cut = rng.below(db_len);
        crash_case(&snap, work.path(), None, Some(cut), &recs);
    }
}

#[test]
fn a_damaged_chunk_is_a_named_gap_and_check_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.db");
    let now = nasprobe_proto::time::now_ms();
    let mut rng = Rng(7);
    let recs = run(&mut rng, 4000, now - 3 * 3_600_000, 1000)
        .into_iter()
        .map(|mut r| {
            r.kind = Some(false);
            r
        })
        .collect::<Vec<_>>();
    let mut s = Store::open(&p).unwrap();
    write_all(&mut s, &recs, 5);
    let before = s.load_window(None, None).unwrap()[0].samples.len();
    let (id, n, first): (i64, i64, i64) = s
        .conn()
        .query_row(
            "SELECT id, n, first_seq FROM sample_chunks ORDER BY first_seq LIMIT 1 OFFSET 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let mut data: Vec<u8> = s
        .conn()
        .query_row("SELECT data FROM sample_chunks WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x40;
    s.conn()
        .execute(
            "UPDATE sample_chunks SET data = ?2 WHERE id = ?1",
            rusqlite::params![id, data],
        )
        .unwrap();
    let w = s.load_window(None, None).unwrap();
    assert_eq!(w[0].samples.len() as i64, before as i64 - n);
    for smp in &w[0].samples {
        assert_eq!(smp.body, body(smp.seq));
    }
    assert!(
        w[0].gaps.iter().any(
            |g| g.samples == Some(n as u64) && g.reason.contains(&format!("chunk seq {first}"))
        ),
        "{:?}",
        w[0].gaps
    );
    let c = s.check().unwrap();
    assert!(
        c[0].bad_rows
            .iter()
            .any(|(seq, why)| *seq == Some(first as u64) && why.contains("chunk")),
        "{c:?}"
    );
}

#[test]
fn a_schema_3_store_migrates_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.db");
    let now = nasprobe_proto::time::now_ms();
    let mut rng = Rng(3);
    let recs = run(&mut rng, 7000, now - 4 * 3_600_000, 1000);
    let (before, check_before, resume) = {
        // Schema 3: one row per sample, written as the collector did before chunks.
        let mut s = Store::open_at_schema(&p, 3).unwrap();
        assert_eq!(s.schema_version().unwrap(), 3);
        let reg = s
            .register("nas", "a:1", &nas_hello(9, recs[0].time_ms - 1000, 1000))
            .unwrap();
        send(&mut s, &mut rng, reg.instance, &recs, 0);
        let n: i64 = s
            .conn()
            .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
            .unwrap();
        let kept = recs.iter().filter(|r| r.kind == Some(false)).count();
        assert_eq!(n as usize, kept);
        let w = s.load_window(None, None).unwrap();
        (
            w[0].samples
                .iter()
                .map(|x| (x.seq, x.time_ms, x.body.clone()))
                .collect::<Vec<_>>(),
            s.check().unwrap(),
            s.resume_point("nas", 9).unwrap(),
        )
    };
    let s = Store::open(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let (chunks, raw) = chunk_rows(&s);
    assert!(chunks >= 10, "{chunks} chunks after the migration");
    assert!(
        raw <= 900,
        "{raw} raw rows left (more than one open window)"
    );
    let w = s.load_window(None, None).unwrap();
    let after: Vec<_> = w[0]
        .samples
        .iter()
        .map(|x| (x.seq, x.time_ms, x.body.clone()))
        .collect();
    assert_eq!(after, before);
    assert_eq!(s.check().unwrap(), check_before);
    assert_eq!(s.resume_point("nas", 9).unwrap(), resume);
    assert_eq!(s.integrity_check().unwrap(), "ok");
}

//! Writing: an agent's registration, write batches (one function per item kind, in one
//! transaction), the folding of closed windows into chunks and rollups, clock offsets.

use std::collections::HashMap;

use nasprobe_proto::Hello;
use nasprobe_proto::time::now_ms;
use rusqlite::{CachedStatement, OptionalExtension, params};

use super::base::{
    REASON_FLOOD, REASON_REJECTED, REASON_RESTART, REASON_RING, Store, StoreError, classify,
};
use super::chunk::{self, Row};
use super::tiers;
use crate::model;

/// Per agent instance, its clock against the collector's as the best handshake measured it
/// (`analysis::ClockOffset`). Kept apart from the migrations of `schema` (created when first
/// written, read when present) so that it needs no schema version of its own: a store without
/// it reports the offsets as unknown.
pub(super) const CLOCK_TABLE: &str = "CREATE TABLE IF NOT EXISTS clock_offsets(
        instance INTEGER PRIMARY KEY,
        offset_ms INTEGER NOT NULL,
        precision_ms INTEGER NOT NULL,
        measured_ms INTEGER NOT NULL
     )";
/// A measurement older than this is replaced by a newer one even when less precise (clocks
/// drift).
pub(super) const CLOCK_STALE_MS: i64 = 3_600_000;

/// What the store answers when a connection brings an agent's `Hello`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// Row id of the instance: records of this connection are written under it.
    pub instance: i64,
    /// Resume after this sequence number (0: send everything held).
    pub after_seq: u64,
    /// True when this instance was not known before.
    pub new_instance: bool,
}

/// One item of a write batch.
#[derive(Debug, Clone)]
pub enum Item {
    Sample {
        instance: i64,
        seq: u64,
        time_ms: u64,
        body: Vec<u8>,
    },
    Event {
        instance: i64,
        seq: u64,
        time_ms: u64,
        kind: &'static str,
        pid: Option<u32>,
        name: String,
        body: Vec<u8>,
    },
    /// The agent's `Gone`: `from_seq..=to_seq` of that instance are lost.
    Gone {
        instance: i64,
        from_seq: u64,
        to_seq: u64,
    },
    /// Records over the collector's caps, `from_seq..=to_seq` (records in between that were
    /// under the caps are stored): a gap with reason `REASON_FLOOD` and the counts, merged
    /// into the instance's previous flood gap when that ended less than a minute before.
    Flood {
        instance: i64,
        from_seq: u64,
        to_seq: u64,
        from_ms: u64,
        to_ms: u64,
        dropped: FloodCounts,
    },
    /// Something the collector refused on a connection that is not a record (frames that failed
    /// authentication, a host marked bad, a KeepAlive flood): a gap row with no seq range and
    /// reason [`nasprobe_analysis::REFUSED_PREFIX`] `WHAT`, `samples` counting the refusals
    /// (merged with the same refusal of the last minute). `time_ms` is the collector's clock.
    /// Without an `instance` (the connection failed before its `Hello` was registered) it is
    /// filed under the newest instance of `host`; a host never registered has nothing to file
    /// it under (the log and `record`'s summary say it).
    Refused {
        instance: Option<i64>,
        host: String,
        time_ms: u64,
        what: String,
    },
    /// A record that decoded but failed the plausibility checks (`validate`): not stored,
    /// recorded as a one-record gap with reason `rejected: WHY`.
    Rejected {
        instance: i64,
        seq: u64,
        time_ms: u64,
        why: String,
    },
}

impl Item {
    /// Builds the item for one record of the stream (`body` = bytes as received).
    pub fn from_record(instance: i64, r: &nasprobe_proto::Record, body: Vec<u8>) -> Item {
        match &r.body {
            nasprobe_proto::RecordBody::Sample(_) => Item::Sample {
                instance,
                seq: r.seq,
                time_ms: r.time_ms,
                body,
            },
            nasprobe_proto::RecordBody::Event(e) => {
                let (pid, name) = model::event_subject(e);
                Item::Event {
                    instance,
                    seq: r.seq,
                    time_ms: r.time_ms,
                    kind: e.kind(),
                    pid,
                    name,
                    body,
                }
            }
        }
    }
}

impl Store {
    /// Records a connection's `Hello` for host `name` at `address` and answers where to resume.
    ///
    /// A new instance of a host that had another one before gets a gap "agent restarted" from
    /// the old instance's last record to the new instance's start.
    pub fn register(
        &mut self,
        name: &str,
        address: &str,
        hello: &Hello,
    ) -> Result<Registration, StoreError> {
        let path = self.reader.path.clone();
        let e = |e| classify(&path, e);
        let now = now_ms();
        let blob = postcard::to_allocvec(hello).expect("Hello encodes");
        let tx = self.reader.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO hosts(name, address, first_seen_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET address = excluded.address",
            params![name, address, now as i64],
        )
        .map_err(e)?;
        let host: i64 = tx
            .query_row("SELECT id FROM hosts WHERE name = ?1", [name], |r| r.get(0))
            .map_err(e)?;
        let known: Option<(i64, i64)> = tx
            .query_row(
                "SELECT id, last_seq FROM instances WHERE host = ?1 AND instance_id = ?2",
                params![host, hello.instance_id as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(e)?;
        let reg = if let Some((row, last_seq)) = known {
            // The inventory may have grown (new devices get new indices at the end).
            tx.execute(
                "UPDATE instances SET hello = ?1 WHERE id = ?2",
                params![blob, row],
            )
            .map_err(e)?;
            Registration {
                instance: row,
                after_seq: last_seq as u64,
                new_instance: false,
            }
        } else {
            let prev: Option<(i64, i64, i64, i64, i64)> = tx
                .query_row(
                    "SELECT id, last_seq, last_ms, started_ms, interval_ms FROM instances
                     WHERE host = ?1 ORDER BY first_seen_ms DESC, id DESC LIMIT 1",
                    [host],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
                )
                .optional()
                .map_err(e)?;
            tx.execute(
                "INSERT INTO instances(host, instance_id, started_ms, first_seen_ms, host_name,
                                       interval_ms, hello, last_seq, last_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 0)",
                params![
                    host,
                    hello.instance_id as i64,
                    hello.started_ms as i64,
                    now as i64,
                    hello.host_name.as_str(),
                    hello.interval_ms,
                    blob
                ],
            )
            .map_err(e)?;
            let row = tx.last_insert_rowid();
            if let Some((_, _, last_ms, started_ms, _)) = prev {
                let from_ms = if last_ms > 0 { last_ms } else { started_ms } as u64;
                let to_ms = hello.started_ms.max(from_ms);
                let interval = u64::from(hello.interval_ms.max(1));
                let missing = ((to_ms - from_ms) / interval).saturating_sub(1);
                tx.execute(
                    "INSERT INTO gaps(host, instance, from_seq, to_seq, from_ms, to_ms, samples, reason)
                     VALUES (?1, ?2, NULL, NULL, ?3, ?4, ?5, ?6)",
                    params![host, row, from_ms as i64, to_ms as i64, missing as i64, REASON_RESTART],
                )
                .map_err(e)?;
            }
            Registration {
                instance: row,
                after_seq: 0,
                new_instance: true,
            }
        };
        tx.commit().map_err(e)?;
        Ok(reg)
    }

    /// Writes a batch in one transaction. Records already stored are skipped (never stored
    /// twice). On error nothing of the batch is kept: retry the same batch.
    pub fn write_batch(&mut self, items: &[Item]) -> Result<(), StoreError> {
        let path = self.reader.path.clone();
        let e = |e| classify(&path, e);
        let mut open_gaps = self.open_gaps.clone();
        let mut chunk_hw = self.chunk_hw.clone();
        let (chunks, with_tiers) = (self.reader.chunks, self.reader.tiers);
        let tx = self.reader.conn.transaction().map_err(e)?;
        {
            let mut b = Batch::new(&tx, chunks, &mut open_gaps, &mut chunk_hw).map_err(e)?;
            for it in items {
                b.item(it).map_err(e)?;
            }
            b.finish(with_tiers).map_err(e)?;
        }
        tx.commit().map_err(e)?;
        self.open_gaps = open_gaps;
        self.chunk_hw = chunk_hw;
        Ok(())
    }

    /// Keeps the clock offset of `instance` measured now if it is more precise than the one
    /// stored, or that one is stale (`CLOCK_STALE_MS`).
    pub fn note_clock(
        &mut self,
        instance: i64,
        c: nasprobe_analysis::ClockOffset,
    ) -> Result<(), StoreError> {
        let e = |e| classify(&self.reader.path, e);
        self.reader.conn.execute_batch(CLOCK_TABLE).map_err(e)?;
        self.reader
            .conn
            .execute(
                "INSERT INTO clock_offsets(instance, offset_ms, precision_ms, measured_ms)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(instance) DO UPDATE SET offset_ms = excluded.offset_ms,
                    precision_ms = excluded.precision_ms, measured_ms = excluded.measured_ms
                 WHERE excluded.precision_ms <= clock_offsets.precision_ms
                    OR excluded.measured_ms - clock_offsets.measured_ms > ?5",
                params![
                    instance,
                    c.offset_ms,
                    c.precision_ms.min(i64::MAX as u64) as i64,
                    now_ms() as i64,
                    CLOCK_STALE_MS
                ],
            )
            .map_err(e)?;
        Ok(())
    }
}

/// One write batch inside its transaction: the statements it repeats, what it learns of the
/// chunks, and each instance's newest (seq, time) so far.
struct Batch<'t, 'a> {
    tx: &'t rusqlite::Transaction<'t>,
    chunks: bool,
    open_gaps: &'a mut HashMap<i64, u64>,
    chunk_hw: &'a mut HashMap<i64, u64>,
    ins_sample: CachedStatement<'t>,
    ins_event: CachedStatement<'t>,
    fix_gap: CachedStatement<'t>,
    marks: HashMap<i64, (u64, u64)>,
}

impl<'t, 'a> Batch<'t, 'a> {
    fn new(
        tx: &'t rusqlite::Transaction<'t>,
        chunks: bool,
        open_gaps: &'a mut HashMap<i64, u64>,
        chunk_hw: &'a mut HashMap<i64, u64>,
    ) -> rusqlite::Result<Self> {
        Ok(Batch {
            ins_sample: tx.prepare_cached(
                "INSERT OR IGNORE INTO samples(instance, seq, time_ms, body) VALUES (?1, ?2, ?3, ?4)",
            )?,
            ins_event: tx.prepare_cached(
                "INSERT OR IGNORE INTO events(instance, seq, time_ms, kind, pid, name, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            fix_gap: tx.prepare_cached(
                "UPDATE gaps SET to_ms = ?3 WHERE instance = ?1 AND to_seq = ?2 AND reason = ?4",
            )?,
            tx,
            chunks,
            open_gaps,
            chunk_hw,
            marks: HashMap::new(),
        })
    }

    /// Writes one item, then notes its (instance, seq, time): the end of a `Gone` gap waiting
    /// for it, and the instance's high-water mark.
    fn item(&mut self, it: &Item) -> rusqlite::Result<()> {
        let (instance, seq, time_ms) = match it {
            Item::Sample {
                instance,
                seq,
                time_ms,
                body,
            } => self.sample(*instance, *seq, *time_ms, body)?,
            Item::Event {
                instance,
                seq,
                time_ms,
                kind,
                pid,
                name,
                body,
            } => {
                self.ins_event.execute(params![
                    instance,
                    *seq as i64,
                    *time_ms as i64,
                    kind,
                    pid,
                    name,
                    body
                ])?;
                (*instance, *seq, *time_ms)
            }
            Item::Gone {
                instance,
                from_seq,
                to_seq,
            } => return self.gone(*instance, *from_seq, *to_seq),
            Item::Flood {
                instance,
                from_seq,
                to_seq,
                from_ms,
                to_ms,
                dropped,
            } => {
                insert_flood_gap(
                    self.tx,
                    *instance,
                    (*from_seq, *to_seq),
                    (*from_ms, *to_ms),
                    *dropped,
                )?;
                (*instance, *to_seq, *to_ms)
            }
            Item::Refused {
                instance,
                host,
                time_ms,
                what,
            } => {
                return insert_refusal(self.tx, (*instance, host), *time_ms, what);
            }
            Item::Rejected {
                instance,
                seq,
                time_ms,
                why,
            } => {
                insert_gap(
                    self.tx,
                    *instance,
                    (*seq, *seq),
                    (*time_ms, *time_ms),
                    1,
                    &format!("{REASON_REJECTED}: {why}"),
                )?;
                (*instance, *seq, *time_ms)
            }
        };
        if let Some(to_seq) = self.open_gaps.get(&instance).copied()
            && seq > to_seq
        {
            self.fix_gap.execute(params![
                instance,
                to_seq as i64,
                time_ms as i64,
                REASON_RING
            ])?;
            self.open_gaps.remove(&instance);
        }
        let m = self.marks.entry(instance).or_insert((0, 0));
        m.0 = m.0.max(seq);
        m.1 = m.1.max(time_ms);
        Ok(())
    }

    /// A sample: stored unless a chunk already holds its seq.
    fn sample(
        &mut self,
        instance: i64,
        seq: u64,
        time_ms: u64,
        body: &[u8],
    ) -> rusqlite::Result<(i64, u64, u64)> {
        let hw = match self.chunk_hw.get(&instance) {
            Some(hw) => *hw,
            None if !self.chunks => 0,
            None => {
                let hw = chunk_high_water(self.tx, instance)?;
                self.chunk_hw.insert(instance, hw);
                hw
            }
        };
        if seq > hw || !in_a_chunk(self.tx, instance, seq)? {
            self.ins_sample
                .execute(params![instance, seq as i64, time_ms as i64, body])?;
        }
        Ok((instance, seq, time_ms))
    }

    /// The agent's `Gone`: a gap whose end time waits for the instance's next record.
    fn gone(&mut self, instance: i64, from_seq: u64, to_seq: u64) -> rusqlite::Result<()> {
        let mark_ms = self.marks.get(&instance).map(|m| m.1).unwrap_or(0);
        insert_ring_gap(self.tx, instance, (from_seq, to_seq), mark_ms)?;
        self.open_gaps.insert(instance, to_seq);
        let m = self.marks.entry(instance).or_insert((0, 0));
        m.0 = m.0.max(to_seq);
        Ok(())
    }

    /// Marks each instance's high-water and folds the windows the batch closed into chunks.
    fn finish(self, with_tiers: bool) -> rusqlite::Result<()> {
        mark_instances(self.tx, &self.marks)?;
        if self.chunks {
            for (inst, (_, newest_ms)) in &self.marks {
                if let Some(hw) = fold_instance(self.tx, *inst, Some(*newest_ms), with_tiers)? {
                    let v = self.chunk_hw.entry(*inst).or_insert(0);
                    *v = (*v).max(hw);
                }
            }
        }
        Ok(())
    }
}

/// One gap of `instance`: seqs, times, records missing, reason (kept if already there).
fn insert_gap(
    tx: &rusqlite::Transaction<'_>,
    instance: i64,
    (from_seq, to_seq): (u64, u64),
    (from_ms, to_ms): (u64, u64),
    n: u64,
    reason: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO gaps(host, instance, from_seq, to_seq, from_ms, to_ms, samples, reason)
         SELECT host, id, ?2, ?3, ?4, ?5, ?6, ?7 FROM instances WHERE id = ?1",
    )?
    .execute(params![
        instance,
        from_seq as i64,
        to_seq as i64,
        from_ms as i64,
        to_ms as i64,
        n as i64,
        reason
    ])
    .map(drop)
}

/// The gap of a `Gone`: it starts at the last record before it (`mark_ms`: the newest time of
/// this batch), or the instance's start.
fn insert_ring_gap(
    tx: &rusqlite::Transaction<'_>,
    instance: i64,
    (from_seq, to_seq): (u64, u64),
    mark_ms: u64,
) -> rusqlite::Result<()> {
    let (last_ms, started_ms, interval): (i64, i64, i64) = tx.query_row(
        "SELECT last_ms, started_ms, interval_ms FROM instances WHERE id = ?1",
        [instance],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let from_ms = (last_ms as u64).max(mark_ms);
    let from_ms = if from_ms == 0 {
        started_ms as u64
    } else {
        from_ms
    };
    let n = to_seq - from_seq + 1;
    insert_gap(
        tx,
        instance,
        (from_seq, to_seq),
        (from_ms, from_ms + (n + 1) * interval.max(1) as u64),
        n,
        REASON_RING,
    )
}

/// A flood's dropped records: merged into the flood gap of the last minute (its counts added),
/// else a new one. Gaps of older collectors (reason `flood: events over the cap per interval dropped`, events
/// only) are
/// merged too: their `samples` column is their event count.
fn insert_flood_gap(
    tx: &rusqlite::Transaction<'_>,
    instance: i64,
    (from_seq, to_seq): (u64, u64),
    (from_ms, to_ms): (u64, u64),
    dropped: FloodCounts,
) -> rusqlite::Result<()> {
    let n = to_seq - from_seq + 1;
    let prev: Option<(i64, i64, String)> = tx
        .prepare_cached(
            "SELECT id, samples, reason FROM gaps WHERE instance = ?1 AND reason LIKE 'flood:%'
             AND to_seq < ?2 AND to_ms >= ?3 ORDER BY to_seq DESC LIMIT 1",
        )?
        .query_row(
            params![
                instance,
                from_seq as i64,
                from_ms.saturating_sub(60_000) as i64
            ],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    match prev {
        Some((id, samples, reason)) => {
            let before = FloodCounts::parse(&reason).unwrap_or(FloodCounts {
                events: samples as u64,
                ..FloodCounts::default()
            });
            tx.execute(
                "UPDATE gaps SET to_seq = ?2, to_ms = MAX(to_ms, ?3), samples = samples + ?4,
                 reason = ?5 WHERE id = ?1",
                params![
                    id,
                    to_seq as i64,
                    to_ms as i64,
                    n as i64,
                    before.add(dropped).reason()
                ],
            )?;
        }
        None => insert_gap(
            tx,
            instance,
            (from_seq, to_seq),
            (from_ms, to_ms),
            n,
            &dropped.reason(),
        )?,
    }
    Ok(())
}

/// A refusal of the collector (see [`Item::Refused`]): counted into the same refusal of the
/// last minute, else a new row.
fn insert_refusal(
    tx: &rusqlite::Transaction<'_>,
    (instance, host): (Option<i64>, &str),
    time_ms: u64,
    what: &str,
) -> rusqlite::Result<()> {
    let instance = match instance {
        Some(i) => i,
        None => {
            let newest: Option<i64> = tx
                .prepare_cached(
                    "SELECT i.id FROM instances i JOIN hosts h ON h.id = i.host WHERE h.name = ?1
                     ORDER BY i.first_seen_ms DESC, i.id DESC LIMIT 1",
                )?
                .query_row([host], |r| r.get(0))
                .optional()?;
            match newest {
                Some(i) => i,
                None => return Ok(()),
            }
        }
    };
    let reason = format!("{} {what}", nasprobe_analysis::REFUSED_PREFIX);
    let merged = tx.execute(
        "UPDATE gaps SET to_ms = MAX(to_ms, ?3), samples = samples + 1
         WHERE id = (SELECT id FROM gaps WHERE instance = ?1 AND reason = ?2
                     AND from_seq IS NULL AND to_ms >= ?4 ORDER BY to_ms DESC LIMIT 1)",
        params![
            instance,
            reason,
            time_ms as i64,
            time_ms.saturating_sub(60_000) as i64
        ],
    )?;
    if merged == 0 {
        tx.prepare_cached(
            "INSERT INTO gaps(host, instance, from_seq, to_seq, from_ms, to_ms, samples, reason)
             SELECT host, id, NULL, NULL, ?2, ?2, 1, ?3 FROM instances WHERE id = ?1",
        )?
        .execute(params![instance, time_ms as i64, reason])?;
    }
    Ok(())
}

/// What a flood dropped, by kind (the `flood` gap's reason names them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloodCounts {
    pub samples: u64,
    pub events: u64,
    /// `DeviceAdded` events (counted apart from `events`).
    pub devices: u64,
}

impl FloodCounts {
    /// Both counts added.
    pub(crate) fn add(self, o: FloodCounts) -> FloodCounts {
        FloodCounts {
            samples: self.samples.saturating_add(o.samples),
            events: self.events.saturating_add(o.events),
            devices: self.devices.saturating_add(o.devices),
        }
    }

    /// The gap's reason: [`REASON_FLOOD`] then the counts.
    pub(crate) fn reason(&self) -> String {
        format!(
            "{REASON_FLOOD}: {} samples, {} events, {} device announcements",
            self.samples, self.events, self.devices
        )
    }

    /// The counts of a reason made by [`FloodCounts::reason`] (None for other reasons).
    pub(crate) fn parse(reason: &str) -> Option<FloodCounts> {
        let rest = reason.strip_prefix(REASON_FLOOD)?.strip_prefix(": ")?;
        let mut n = rest
            .split(", ")
            .map(|part| part.split(' ').next().and_then(|v| v.parse::<u64>().ok()));
        Some(FloodCounts {
            samples: n.next()??,
            events: n.next()??,
            devices: n.next()??,
        })
    }
}

/// Each instance's high-water mark after a batch: its newest seq and time.
fn mark_instances(
    tx: &rusqlite::Transaction<'_>,
    marks: &HashMap<i64, (u64, u64)>,
) -> rusqlite::Result<()> {
    let mut upd = tx.prepare_cached(
        "UPDATE instances SET last_seq = MAX(last_seq, ?2), last_ms = MAX(last_ms, ?3)
         WHERE id = ?1",
    )?;
    for (inst, (seq, ms)) in marks {
        upd.execute(params![inst, *seq as i64, *ms as i64])?;
    }
    Ok(())
}

/// Highest seq held by a chunk of `instance` (0: none).
fn chunk_high_water(tx: &rusqlite::Transaction<'_>, instance: i64) -> rusqlite::Result<u64> {
    tx.prepare_cached("SELECT COALESCE(MAX(last_seq), 0) FROM sample_chunks WHERE instance = ?1")?
        .query_row([instance], |r| r.get::<_, i64>(0))
        .map(|v| v as u64)
}

/// True when `seq` lies within the seq range of a chunk of `instance` (a chunk's range holds
/// its samples and the events and gaps between them: a sample there is already stored).
fn in_a_chunk(tx: &rusqlite::Transaction<'_>, instance: i64, seq: u64) -> rusqlite::Result<bool> {
    let last: Option<i64> = tx
        .prepare_cached(
            "SELECT last_seq FROM sample_chunks WHERE instance = ?1 AND first_seq <= ?2
             ORDER BY first_seq DESC LIMIT 1",
        )?
        .query_row(params![instance, seq as i64], |r| r.get(0))
        .optional()?;
    Ok(last.is_some_and(|l| l as u64 >= seq))
}

/// Folds the closed windows of `instance`'s raw rows into chunks: the rows, in seq order, up to
/// the first one in the window of `newest_ms` (None: every window before the newest row's).
/// With `with_tiers`, each chunk's minute rollups are written with it and the hours it closes
/// are rolled up. Returns the highest seq folded, if any.
pub(super) fn fold_instance(
    tx: &rusqlite::Transaction<'_>,
    instance: i64,
    newest_ms: Option<u64>,
    with_tiers: bool,
) -> rusqlite::Result<Option<u64>> {
    let oldest: Option<(i64, i64)> = tx
        .prepare_cached(
            "SELECT time_ms, (SELECT MAX(time_ms) FROM samples WHERE instance = ?1 AND ?2 IS NULL)
             FROM samples WHERE instance = ?1 ORDER BY seq LIMIT 1",
        )?
        .query_row(params![instance, newest_ms.map(|v| v as i64)], |r| {
            Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0)))
        })
        .optional()?;
    let Some((oldest_ms, max_ms)) = oldest else {
        return Ok(None);
    };
    let newest = newest_ms.unwrap_or(max_ms as u64);
    let boundary = chunk::window(newest) * chunk::SPAN_MS;
    if oldest_ms as u64 >= boundary {
        return Ok(None);
    }
    let mut ins = tx.prepare_cached(
        "INSERT INTO sample_chunks(instance, first_seq, last_seq, first_ms, last_ms, n, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut put = |rows: &[Row]| -> rusqlite::Result<()> {
        let (lo, hi) = rows.iter().fold((u64::MAX, 0), |(lo, hi), r| {
            (lo.min(r.time_ms), hi.max(r.time_ms))
        });
        ins.execute(params![
            instance,
            rows[0].seq as i64,
            rows[rows.len() - 1].seq as i64,
            lo as i64,
            hi as i64,
            rows.len() as i64,
            chunk::encode(rows)
        ])?;
        if with_tiers {
            tiers::put_minutes(tx, instance, rows)?;
        }
        Ok(())
    };
    let mut stmt = tx.prepare_cached(
        "SELECT seq, time_ms, body FROM samples WHERE instance = ?1 ORDER BY seq",
    )?;
    let mut rows = stmt.query([instance])?;
    let mut group: Vec<Row> = Vec::new();
    let mut last = None;
    while let Some(r) = rows.next()? {
        let row = Row {
            seq: r.get::<_, i64>(0)? as u64,
            time_ms: r.get::<_, i64>(1)? as u64,
            body: r.get(2)?,
        };
        if row.time_ms >= boundary {
            break;
        }
        if group.len() >= chunk::MAX_ROWS
            || group
                .last()
                .is_some_and(|g| chunk::window(g.time_ms) != chunk::window(row.time_ms))
        {
            put(&group)?;
            group.clear();
        }
        last = Some(row.seq);
        group.push(row);
    }
    drop(rows);
    if !group.is_empty() {
        put(&group)?;
    }
    if with_tiers {
        tiers::close_hours(tx, instance, boundary)?;
    }
    if let Some(last) = last {
        tx.prepare_cached("DELETE FROM samples WHERE instance = ?1 AND seq <= ?2")?
            .execute(params![instance, last as i64])?;
    }
    Ok(last)
}

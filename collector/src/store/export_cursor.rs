//! The exporters' side of the store (`record --export-vm`, `serve --metrics`): agent instances
//! with their `Hello`, records after a cursor, the newest sample of each host, and the
//! per-target cursors.

use std::collections::HashMap;

use nasprobe_proto::Hello;
use nasprobe_proto::time::now_ms;
use rusqlite::{OptionalExtension, params};

use super::base::{ChunkMeta, Store, StoreError, StoreReader, classify, decode_stored};

/// The newest raw sample of an instance (the primary key, from its end).
pub(super) const NEWEST_RAW_SAMPLE: &str =
    "SELECT seq, time_ms, body FROM samples WHERE instance = ?1 ORDER BY seq DESC LIMIT 1";
/// The chunks of an instance from the newest back (`UNIQUE(instance, first_seq)`), read only
/// until one decodes.
pub(super) const NEWEST_CHUNKS: &str =
    "SELECT id, first_seq, last_seq, first_ms, last_ms, n FROM sample_chunks
     WHERE instance = ?1 ORDER BY first_seq DESC";
/// Events stored per host and kind, from `event_counts` (schema 8): one row per instance and
/// kind, whatever the number of events.
pub(super) const EVENT_COUNTS: &str = "SELECT h.name, c.kind, SUM(c.n) FROM event_counts c
     JOIN instances i ON i.id = c.instance JOIN hosts h ON h.id = i.host
     WHERE c.n > 0 GROUP BY h.name, c.kind ORDER BY h.name, c.kind";

/// A stored record on its way to an export target: a sample or an event, body as received.
#[derive(Debug, Clone)]
pub struct ExportRecord {
    /// Row id of the agent instance (see [`ExportInstance::row`]).
    pub instance: i64,
    pub seq: u64,
    pub time_ms: u64,
    pub is_event: bool,
    pub body: Vec<u8>,
}

/// An agent instance as the exporters see it: its host label and newest `Hello`.
#[derive(Debug, Clone)]
pub struct ExportInstance {
    pub row: i64,
    pub host: String,
    pub instance_id: u64,
    pub hello: Hello,
}

/// The export cursor of one agent instance for one target.
///
/// `seq`: the last sequence number (samples and events share the sequence) the target holds for
/// sure (acknowledged, and the engine did not restart for a while after). `acked`: the last one
/// it acknowledged. Records in `seq+1..=acked` may or may not have survived an engine crash:
/// they are checked against the engine before they are sent again, so nothing is sent twice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCursor {
    pub seq: u64,
    pub acked: u64,
}

/// What an export target refused for good of one host (a remote write answered 4xx: the batch
/// is not sent again), with the receiver's last message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportUnsent {
    pub target: String,
    pub host: String,
    pub samples: u64,
    pub events: u64,
    pub points: u64,
    pub last_error: String,
}

/// Export cursors and reads for the exporters (`record --export-vm`, `serve --metrics`).
/// Cursors are written only after the target answered 2xx, so an unreachable target makes
/// records wait here.
impl StoreReader {
    /// Every agent instance with its host name and decoded `Hello`, oldest first.
    pub fn export_instances(&self) -> Result<Vec<ExportInstance>, StoreError> {
        let e = |e| self.err(e);
        let mut out = Vec::new();
        for (name, _addr, _host, raw) in self.instances().map_err(e)? {
            let hello = decode_stored::<Hello>(&raw.hello).ok_or_else(|| StoreError::Decode {
                path: self.path.clone(),
                what: "hello",
            })?;
            out.push(ExportInstance {
                row: raw.row,
                host: name,
                instance_id: raw.instance_id,
                hello,
            });
        }
        Ok(out)
    }

    /// The cursors of export target `target`: instance row → cursor.
    pub fn export_cursor(&self, target: &str) -> Result<HashMap<i64, ExportCursor>, StoreError> {
        let e = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT instance, seq, acked FROM export_cursors WHERE target = ?1")
            .map_err(e)?;
        let rows = stmt
            .query_map([target], |r| {
                let seq = r.get::<_, i64>(1)? as u64;
                let acked = (r.get::<_, i64>(2)? as u64).max(seq);
                Ok((r.get::<_, i64>(0)?, ExportCursor { seq, acked }))
            })
            .map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }

    /// Every target's refusals per host, by target then host.
    pub fn export_unsent(&self) -> Result<Vec<ExportUnsent>, StoreError> {
        let e = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT target, host, samples, events, points, last_error FROM export_unsent
                 ORDER BY target, host",
            )
            .map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ExportUnsent {
                    target: r.get(0)?,
                    host: r.get(1)?,
                    samples: r.get::<_, i64>(2)? as u64,
                    events: r.get::<_, i64>(3)? as u64,
                    points: r.get::<_, i64>(4)? as u64,
                    last_error: r.get(5)?,
                })
            })
            .map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }

    /// The targets with cursors, and per target and host the records (samples and events)
    /// stored after its cursors: what still waits to be sent, by target then host.
    pub fn export_behind(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let e = |e| self.err(e);
        let targets: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT DISTINCT target FROM export_cursors ORDER BY target")
                .map_err(e)?;
            let rows = stmt.query_map([], |r| r.get(0)).map_err(e)?;
            rows.collect::<Result<_, _>>().map_err(e)?
        };
        let mut out: Vec<(String, String, u64)> = Vec::new();
        for t in targets {
            let cursors = self.export_cursor(&t)?;
            for (name, _addr, _host, raw) in self.instances().map_err(e)? {
                let after = cursors.get(&raw.row).map_or(0, |c| c.acked) as i64;
                let mut n: u64 = 0;
                for table in ["samples", "events"] {
                    let sql =
                        format!("SELECT COUNT(*) FROM {table} WHERE instance = ?1 AND seq > ?2");
                    n += self
                        .conn
                        .query_row(&sql, params![raw.row, after], |r| r.get::<_, i64>(0))
                        .map_err(e)? as u64;
                }
                for m in self.chunk_metas(raw.row, None, None).map_err(e)? {
                    if m.last_seq > after as u64 {
                        // Seqs are shared with events: an estimate within the chunk.
                        n += m.n.min(m.last_seq - (after as u64).max(m.first_seq - 1));
                    }
                }
                match out.iter_mut().find(|o| o.0 == t && o.1 == name) {
                    Some(o) => o.2 += n,
                    None => out.push((t.clone(), name, n)),
                }
            }
        }
        Ok(out)
    }

    /// Up to `limit` records (samples and events) after `after` (instance row → seq; missing:
    /// from the start), per instance in sequence order, instances oldest first.
    pub fn records_after(
        &self,
        after: &HashMap<i64, u64>,
        limit: usize,
    ) -> Result<Vec<ExportRecord>, StoreError> {
        let e = |e| self.err(e);
        let mut out: Vec<ExportRecord> = Vec::new();
        let mut samples = self
            .conn
            .prepare_cached(
                "SELECT seq, time_ms, body FROM samples WHERE instance = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )
            .map_err(e)?;
        let mut events = self
            .conn
            .prepare_cached(
                "SELECT seq, time_ms, body FROM events WHERE instance = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )
            .map_err(e)?;
        for (_name, _addr, _host, raw) in self.instances().map_err(e)? {
            let room = limit.saturating_sub(out.len());
            if room == 0 {
                break;
            }
            let after = after.get(&raw.row).copied().unwrap_or(0) as i64;
            let mut got: Vec<ExportRecord> = Vec::new();
            for (stmt, is_event) in [(&mut samples, false), (&mut events, true)] {
                let rows = stmt
                    .query_map(params![raw.row, after, room as i64], |r| {
                        Ok(ExportRecord {
                            instance: raw.row,
                            seq: r.get::<_, i64>(0)? as u64,
                            time_ms: r.get::<_, i64>(1)? as u64,
                            is_event,
                            body: r.get(2)?,
                        })
                    })
                    .map_err(e)?;
                for r in rows {
                    got.push(r.map_err(e)?);
                }
            }
            // Chunked samples after `after`, chunk by chunk until `room` of them.
            let mut from_chunks = 0;
            for m in self.chunk_metas(raw.row, None, None).map_err(e)? {
                if from_chunks >= room {
                    break;
                }
                if m.last_seq <= after as u64 {
                    continue;
                }
                let Ok(rows) = self.chunk_rows(&m).map_err(e)? else {
                    log::warn!(
                        "stored chunk seq {}..{} does not decode: not exported",
                        m.first_seq,
                        m.last_seq
                    );
                    continue;
                };
                for r in rows.into_iter().filter(|r| r.seq > after as u64) {
                    from_chunks += 1;
                    got.push(ExportRecord {
                        instance: raw.row,
                        seq: r.seq,
                        time_ms: r.time_ms,
                        is_event: false,
                        body: r.body,
                    });
                }
            }
            // Both lists are the first `room` of their kind: the first `room` of the merge are
            // exactly the next records of the instance.
            got.sort_by_key(|r| r.seq);
            got.truncate(room);
            out.extend(got);
        }
        Ok(out)
    }

    /// Raw times of up to `n` records (samples, or events) of `instance` just before `seq`,
    /// oldest first.
    pub(crate) fn record_times_before(
        &self,
        instance: i64,
        seq: u64,
        is_event: bool,
        n: usize,
    ) -> Result<Vec<u64>, StoreError> {
        let e = |e| self.err(e);
        let sql = if is_event {
            "SELECT time_ms FROM events WHERE instance = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
        } else {
            "SELECT time_ms FROM samples WHERE instance = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(e)?;
        let rows = stmt
            .query_map(params![instance, seq as i64, n as i64], |r| {
                r.get::<_, i64>(0).map(|v| v as u64)
            })
            .map_err(e)?;
        let mut v: Vec<u64> = rows.collect::<Result<_, _>>().map_err(e)?;
        if !is_event && v.len() < n {
            // Older ones from the chunks, newest chunk first.
            let mut older: Vec<(u64, u64)> = Vec::new();
            for m in self
                .chunk_metas(instance, None, None)
                .map_err(e)?
                .iter()
                .rev()
            {
                if v.len() + older.len() >= n {
                    break;
                }
                if m.first_seq >= seq {
                    continue;
                }
                if let Ok(rows) = self.chunk_rows(m).map_err(e)? {
                    older.extend(
                        rows.iter()
                            .filter(|r| r.seq < seq)
                            .map(|r| (r.seq, r.time_ms)),
                    );
                }
            }
            older.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
            v.extend(older.into_iter().map(|o| o.1));
            v.truncate(n);
        }
        v.reverse();
        Ok(v)
    }

    /// The newest sample of every host (from its newest instance with samples), with the host.
    pub(crate) fn latest_samples(&self) -> Result<Vec<(String, ExportRecord)>, StoreError> {
        let e = |e| self.err(e);
        let mut stmt = self.conn.prepare_cached(NEWEST_RAW_SAMPLE).map_err(e)?;
        let mut out: Vec<(String, ExportRecord)> = Vec::new();
        for (name, _addr, _host, raw) in self.instances().map_err(e)? {
            let row: Option<(i64, i64, Vec<u8>)> = stmt
                .query_row([raw.row], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
                .map_err(e)?;
            let row = match row {
                Some(r) => Some(r),
                // Nothing raw: the last sample of the newest chunk that decodes.
                None => self.newest_chunked(raw.row).map_err(e)?,
            };
            let Some((seq, time_ms, body)) = row else {
                continue;
            };
            let rec = ExportRecord {
                instance: raw.row,
                seq: seq as u64,
                time_ms: time_ms as u64,
                is_event: false,
                body,
            };
            let item = (name.clone(), rec);
            match out.last_mut() {
                Some(last) if last.0 == name => {
                    if item.1.time_ms >= last.1.time_ms {
                        *last = item;
                    }
                }
                _ => out.push(item),
            }
        }
        Ok(out)
    }

    /// The last sample of the newest chunk of `instance` that decodes, reading chunks from the
    /// newest back only as far as that one.
    fn newest_chunked(&self, instance: i64) -> rusqlite::Result<Option<(i64, i64, Vec<u8>)>> {
        if !self.chunks {
            return Ok(None);
        }
        let mut stmt = self.conn.prepare_cached(NEWEST_CHUNKS)?;
        let mut metas = stmt.query([instance])?;
        while let Some(r) = metas.next()? {
            let m = ChunkMeta::from_row(r)?;
            if let Some(last) = self
                .chunk_rows(&m)?
                .ok()
                .and_then(|v| v.into_iter().next_back())
            {
                return Ok(Some((last.seq as i64, last.time_ms as i64, last.body)));
            }
        }
        Ok(None)
    }

    /// Events stored per host and kind (for the `nasprobe_events_total` counter).
    pub(crate) fn event_counts(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let e = |e| self.err(e);
        let counted: bool = self
            .conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_counts')",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        // (A store `record` has not migrated to schema 8 yet: every event counted.)
        let sql = if counted {
            EVENT_COUNTS
        } else {
            "SELECT h.name, v.kind, COUNT(*) FROM events v
             JOIN instances i ON i.id = v.instance JOIN hosts h ON h.id = i.host
             GROUP BY h.name, v.kind ORDER BY h.name, v.kind"
        };
        let mut stmt = self.conn.prepare_cached(sql).map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
            })
            .map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }
}

impl Store {
    /// Moves cursors of `target` forward (never back) in one transaction.
    /// Adds to what `target` refused for good of `host` (see [`ExportUnsent`]).
    pub(crate) fn add_export_unsent(
        &mut self,
        target: &str,
        u: &ExportUnsent,
    ) -> Result<(), StoreError> {
        self.reader
            .conn
            .execute(
                "INSERT INTO export_unsent(target, host, samples, events, points, last_error, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(target, host) DO UPDATE
                 SET samples = samples + excluded.samples, events = events + excluded.events,
                     points = points + excluded.points, last_error = excluded.last_error,
                     updated_ms = excluded.updated_ms",
                params![
                    target,
                    u.host,
                    u.samples as i64,
                    u.events as i64,
                    u.points as i64,
                    u.last_error,
                    now_ms() as i64
                ],
            )
            .map(|_| ())
            .map_err(|e| classify(&self.reader.path, e))
    }

    pub(crate) fn set_export_cursor(
        &mut self,
        target: &str,
        cursors: &[(i64, ExportCursor)],
    ) -> Result<(), StoreError> {
        let path = self.reader.path.clone();
        let e = |e| classify(&path, e);
        let now = now_ms() as i64;
        let tx = self.reader.conn.transaction().map_err(e)?;
        {
            let mut up = tx
                .prepare_cached(
                    "INSERT INTO export_cursors(target, instance, seq, acked, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT(target, instance) DO UPDATE
                     SET seq = MAX(seq, excluded.seq), acked = MAX(acked, excluded.acked),
                         updated_ms = excluded.updated_ms",
                )
                .map_err(e)?;
            for (inst, c) in cursors {
                up.execute(params![
                    target,
                    inst,
                    c.seq as i64,
                    c.acked.max(c.seq) as i64,
                    now
                ])
                .map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

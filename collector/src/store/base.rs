//! What every part of the store shares: the errors, the two handles, the row helpers of the
//! readers and `decode_stored`, the one decoder of a stored body.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nasprobe_proto::{Event, Hello, Sample};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::chunk::{self, ChunkError, Row};

/// Reason of a gap left by an agent restart (the old instance's tail and the downtime).
pub const REASON_RESTART: &str = "agent restarted";
/// Reason of a gap announced by the agent with `Gone` (its ring overwrote the range).
pub const REASON_RING: &str = "ring overwrote";
/// Reason prefix of a record the collector refused to store (implausible values, see `validate`).
pub(crate) const REASON_REJECTED: &str = "rejected";
/// Reason of records dropped over the collector's caps (`validate::EVENTS_PER_INTERVAL`,
/// `validate::DEVICES_PER_INTERVAL`, samples by the collector's clock), followed by the counts
/// per kind; one gap per flood (merged within a minute), its `samples` the records dropped.
pub(crate) const REASON_FLOOD: &str = "flood: records over the collector's caps dropped";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error(
        "database {path}: disk full (SQLITE_FULL); writes are paused and retried until space returns"
    )]
    Full { path: PathBuf },
    #[error(
        "database {path} is locked by another process (SQLITE_BUSY); writes are paused and retried"
    )]
    Locked { path: PathBuf },
    #[error(
        "database {path} was written by a newer nasprobe (schema {found}, this one knows up to {known})"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "database {path} has schema {found}, this nasprobe reads {known}: run 'nasprobe record' on it once (it migrates)"
    )]
    Old {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("database {path}: cannot create its directory: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("database {path}: stored {what} does not decode (corrupt row?)")]
    Decode { path: PathBuf, what: &'static str },
}

/// The first raw sample of an instance at or after a seq (the primary key).
pub(super) const SAMPLE_AT_OR_AFTER_SEQ: &str =
    "SELECT seq, time_ms FROM samples WHERE instance = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1";
/// The seq range of an instance's raw samples (the primary key's two ends).
pub(super) const SAMPLE_SEQ_BOUNDS: &str =
    "SELECT MIN(seq), MAX(seq) FROM samples WHERE instance = ?1";
/// The raw samples of an instance in a seq range (the primary key).
pub(super) const SAMPLES_IN_SEQS: &str = "SELECT seq, time_ms, CAST(body AS BLOB) FROM samples
     WHERE instance = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq";
/// The gaps meeting a time window, with their host (`gaps_time`).
pub(super) const GAPS_IN_WINDOW: &str =
    "SELECT h.name, i.instance_id, g.from_seq, g.to_seq, g.from_ms, g.to_ms, g.samples, g.reason
     FROM gaps g JOIN hosts h ON h.id = g.host JOIN instances i ON i.id = g.instance
     WHERE g.to_ms >= ?1 AND g.from_ms <= ?2
     ORDER BY h.name, g.from_ms, g.id";
/// The chunks of an instance meeting `[?2, ?3]`, through `sample_chunks_by_time`: a chunk lies
/// in one `chunk::SPAN_MS` window, so one that starts by ?3 ends before ?4 = ?3 + SPAN_MS, and
/// the index range is bounded on both sides.
pub(super) const CHUNKS_IN_WINDOW: &str =
    "SELECT id, first_seq, last_seq, first_ms, last_ms, n FROM sample_chunks
     WHERE instance = ?1 AND last_ms BETWEEN ?2 AND ?4 AND first_ms <= ?3 ORDER BY first_seq";

/// A known-missing range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub host: String,
    /// Agent instance id the missing records belong to (for a restart: the new instance).
    pub instance_id: u64,
    pub from_seq: Option<u64>,
    pub to_seq: Option<u64>,
    pub from_ms: u64,
    pub to_ms: u64,
    /// Samples missing (exact for `Gone`, estimated from the interval for restarts).
    pub samples: u64,
    pub reason: String,
}

/// The reading side of the store: one SQLite connection and what its schema holds. `report`,
/// `check`, `export`, `serve` and the live verdict read through one
/// ([`StoreReader::open_read_only`]); the writer [`Store`] is one too (it derefs to it).
pub struct StoreReader {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// The schema has `sample_chunks` (false only for files kept at an old schema by tests).
    pub(super) chunks: bool,
    /// Schema 5 or later: rollup tiers are written as chunks close.
    pub(super) tiers: bool,
}

/// The writer, owned by the store task (or a command that records): registrations, batches,
/// retention, clock offsets, export cursors, with what its writes remember between batches.
/// It reads as the [`StoreReader`] it derefs to.
pub struct Store {
    pub(super) reader: StoreReader,
    /// Gone gaps whose end time waits for the next record of their instance: instance → to_seq.
    pub(super) open_gaps: HashMap<i64, u64>,
    /// Highest seq folded into a chunk per instance (loaded on first write): a sample at or
    /// below it is looked up in the chunks before it is stored.
    pub(super) chunk_hw: HashMap<i64, u64>,
}

impl std::ops::Deref for Store {
    type Target = StoreReader;
    fn deref(&self) -> &StoreReader {
        &self.reader
    }
}

impl Store {
    /// The reading side alone (for a reader that opened the file as a writer, e.g. to create
    /// or migrate it).
    pub fn into_reader(self) -> StoreReader {
        self.reader
    }
}

impl StoreReader {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw connection, for tests and tools (`PRAGMA integrity_check`, ad-hoc queries).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(super) fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    /// Runs `f`, a group of queries, in one read transaction: one snapshot of the file for all
    /// of them (a commit between two cannot make them disagree) and one lock taken, not one
    /// per query. Inside a transaction already open, `f` just runs in it.
    pub(crate) fn in_read_tx<T>(
        &self,
        f: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if !self.conn.is_autocommit() {
            return f();
        }
        self.conn
            .execute_batch("BEGIN DEFERRED")
            .map_err(|e| self.err(e))?;
        let out = f();
        // Nothing was written: ending it either way loses nothing.
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        out
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Smallest sample seq of `instance` whose time is at or after `t` (time grows with seq
    /// within an instance): a binary search over the primary key, no time index needed.
    pub(super) fn seq_at_or_after(
        &self,
        instance: i64,
        lo: u64,
        hi: u64,
        t: u64,
    ) -> rusqlite::Result<u64> {
        let mut stmt = self.conn.prepare_cached(SAMPLE_AT_OR_AFTER_SEQ)?;
        let (mut lo, mut hi) = (lo, hi + 1); // answer in [lo, hi]; hi = "none"
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let row: Option<(i64, i64)> = stmt
                .query_row(params![instance, mid as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            match row {
                Some((seq, time)) if (time as u64) < t => lo = seq as u64 + 1,
                Some(_) => hi = mid,
                None => hi = mid,
            }
        }
        Ok(lo)
    }

    /// Sample seq range `[lo, hi]` of an instance within `[from, to]` ms, or None.
    pub(super) fn seq_range(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
    ) -> rusqlite::Result<Option<(u64, u64)>> {
        let (min, max): (Option<i64>, Option<i64>) =
            self.conn
                .prepare_cached(SAMPLE_SEQ_BOUNDS)?
                .query_row([instance], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let (Some(min), Some(max)) = (min, max) else {
            return Ok(None);
        };
        let (min, max) = (min as u64, max as u64);
        let lo = match from {
            Some(f) => self.seq_at_or_after(instance, min, max, f)?,
            None => min,
        };
        let hi = match to {
            Some(t) => match self.seq_at_or_after(instance, min, max, t.saturating_add(1))? {
                0 => return Ok(None),
                s => s - 1,
            },
            None => max,
        };
        Ok((lo <= hi).then_some((lo, hi)))
    }

    pub(super) fn instances(&self) -> rusqlite::Result<Vec<(String, String, i64, InstanceRaw)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT h.name, h.address, h.id, i.id, i.instance_id, i.last_seq, i.hello
             FROM instances i JOIN hosts h ON h.id = i.host
             ORDER BY h.name, i.first_seen_ms, i.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                InstanceRaw {
                    row: r.get(3)?,
                    instance_id: r.get::<_, i64>(4)? as u64,
                    last_seq: r.get::<_, i64>(5)? as u64,
                    hello: r.get(6)?,
                },
            ))
        })?;
        rows.collect()
    }

    pub(super) fn gaps(&self, from: Option<u64>, to: Option<u64>) -> rusqlite::Result<Vec<Gap>> {
        let mut stmt = self.conn.prepare_cached(GAPS_IN_WINDOW)?;
        let rows = stmt.query_map(
            params![from.unwrap_or(0) as i64, to.map_or(i64::MAX, |t| t as i64)],
            |r| {
                Ok(Gap {
                    host: r.get(0)?,
                    instance_id: r.get::<_, i64>(1)? as u64,
                    from_seq: r.get::<_, Option<i64>>(2)?.map(|v| v as u64),
                    to_seq: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                    from_ms: r.get::<_, i64>(4)? as u64,
                    to_ms: r.get::<_, i64>(5)? as u64,
                    samples: r.get::<_, i64>(6)? as u64,
                    reason: r.get(7)?,
                })
            },
        )?;
        rows.collect()
    }

    /// Chunks of `instance` whose time range meets `[from, to]`, in seq order, without data.
    pub(super) fn chunk_metas(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
    ) -> rusqlite::Result<Vec<ChunkMeta>> {
        if !self.chunks {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(CHUNKS_IN_WINDOW)?;
        let to = to.map_or(i64::MAX, |t| t as i64);
        let rows = stmt.query_map(
            params![
                instance,
                from.unwrap_or(0) as i64,
                to,
                to.saturating_add(chunk::SPAN_MS as i64)
            ],
            ChunkMeta::from_row,
        )?;
        rows.collect()
    }

    /// The samples of one chunk, decoded (the outer error: SQLite; the inner: a damaged chunk).
    pub(super) fn chunk_rows(
        &self,
        m: &ChunkMeta,
    ) -> rusqlite::Result<Result<Vec<Row>, ChunkError>> {
        let data: Vec<u8> = self
            .conn
            .prepare_cached("SELECT data FROM sample_chunks WHERE id = ?1")?
            .query_row([m.id], |r| r.get(0))?;
        Ok(chunk::decode(&data).and_then(|rows| {
            // The row's columns must agree with its content, else it is damaged too.
            let ok = rows.len() as u64 == m.n
                && rows.first().is_some_and(|r| r.seq == m.first_seq)
                && rows.last().is_some_and(|r| r.seq == m.last_seq);
            if ok {
                Ok(rows)
            } else {
                Err(ChunkError::Malformed(0))
            }
        }))
    }

    /// Every stored sample of `instance` with its time in `[from, to]` and its seq after
    /// `after_seq`, chunk by chunk (seq order within each) then the open chunk's raw rows in seq
    /// order; a damaged chunk is handed over as an error with its row, once, instead of its
    /// samples.
    pub(super) fn each_sample(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
        after_seq: u64,
        f: &mut dyn FnMut(StoredSample<'_>),
    ) -> Result<(), StoreError> {
        self.each_sample_while(instance, from, to, after_seq, &mut |s| {
            f(s);
            true
        })
    }

    /// [`StoreReader::each_sample`] until `f` returns false.
    pub(super) fn each_sample_while(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
        after_seq: u64,
        f: &mut dyn FnMut(StoredSample<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let e = |e| self.err(e);
        let inside = |t: u64| !(from.is_some_and(|f| t < f) || to.is_some_and(|x| t > x));
        for m in self.chunk_metas(instance, from, to).map_err(e)? {
            if m.last_seq <= after_seq {
                continue;
            }
            let go_on = match self.chunk_rows(&m).map_err(e)? {
                Ok(rows) => rows
                    .into_iter()
                    .filter(|r| r.seq > after_seq && inside(r.time_ms))
                    .all(|r| f(Ok(r))),
                Err(why) => f(Err((&m, why))),
            };
            if !go_on {
                return Ok(());
            }
        }
        let Some((lo, hi)) = self.seq_range(instance, from, to).map_err(e)? else {
            return Ok(());
        };
        let lo = lo.max(after_seq.saturating_add(1));
        if lo > hi {
            return Ok(());
        }
        let mut stmt = self.conn.prepare_cached(SAMPLES_IN_SEQS).map_err(e)?;
        let rows = stmt
            .query_map(params![instance, lo as i64, hi as i64], |r| {
                Ok(Row {
                    seq: r.get::<_, i64>(0)? as u64,
                    time_ms: r.get::<_, i64>(1)? as u64,
                    body: r.get(2)?,
                })
            })
            .map_err(e)?;
        for r in rows {
            let r = r.map_err(e)?;
            // (A time outside: a clock step inside the instance.)
            if inside(r.time_ms) && !f(Ok(r)) {
                break;
            }
        }
        Ok(())
    }
}

/// A body kept in the store: a `Hello`, a sample or an event, with the sanitizer of its
/// strings (`proto::sanitize`).
pub(crate) trait Stored: serde::de::DeserializeOwned {
    /// Makes the decoded value's strings safe (a row stored by an older collector).
    fn sanitize(&mut self);
}

impl Stored for Hello {
    fn sanitize(&mut self) {
        nasprobe_proto::sanitize::hello(self);
    }
}

impl Stored for Sample {
    fn sanitize(&mut self) {
        nasprobe_proto::sanitize::sample(self);
    }
}

impl Stored for Event {
    fn sanitize(&mut self) {
        nasprobe_proto::sanitize::event(self);
    }
}

/// The one decoder of a stored body, used by every reader: decoded exactly (every byte used: a
/// row with bytes appended is corrupt too), then sanitized. None: the row is corrupt (each
/// caller says what it does with it).
pub(crate) fn decode_stored<T: Stored>(body: &[u8]) -> Option<T> {
    let (mut v, rest) = postcard::take_from_bytes::<T>(body).ok()?;
    if !rest.is_empty() {
        return None;
    }
    v.sanitize();
    Some(v)
}

/// What [`StoreReader::each_sample`] hands over: a sample, or a damaged chunk with why.
pub(super) type StoredSample<'a> = Result<Row, (&'a ChunkMeta, ChunkError)>;

/// A `sample_chunks` row without its data.
#[derive(Debug, Clone)]
pub(super) struct ChunkMeta {
    pub(super) id: i64,
    pub(super) first_seq: u64,
    pub(super) last_seq: u64,
    /// Smallest and largest sample time inside (a clock step may reorder times).
    pub(super) first_ms: u64,
    pub(super) last_ms: u64,
    pub(super) n: u64,
}

impl ChunkMeta {
    /// A row of `id, first_seq, last_seq, first_ms, last_ms, n` from `sample_chunks`.
    pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(ChunkMeta {
            id: r.get(0)?,
            first_seq: r.get::<_, i64>(1)? as u64,
            last_seq: r.get::<_, i64>(2)? as u64,
            first_ms: r.get::<_, i64>(3)? as u64,
            last_ms: r.get::<_, i64>(4)? as u64,
            n: r.get::<_, i64>(5)? as u64,
        })
    }
}

/// An `instances` row as the readers need it: its `Hello` still encoded.
pub(super) struct InstanceRaw {
    pub(super) row: i64,
    pub(super) instance_id: u64,
    pub(super) last_seq: u64,
    pub(super) hello: Vec<u8>,
}

/// The error of a SQLite call on the file at `path`: disk full and locked apart.
pub(super) fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        match f.code {
            ErrorCode::DiskFull => return StoreError::Full { path },
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                return StoreError::Locked { path };
            }
            ErrorCode::SystemIoFailure
                if f.extended_code == rusqlite::ffi::SQLITE_IOERR_WRITE
                    || f.extended_code == rusqlite::ffi::SQLITE_IOERR_FSYNC =>
            {
                // ENOSPC can surface as a write I/O error on some file systems.
                return StoreError::Sqlite { path, source: e };
            }
            _ => {}
        }
    }
    StoreError::Sqlite { path, source: e }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_body_decodes_exactly_then_sanitized() {
        let mut h = crate::testing::nas_hello(7, 1_000, 1_000);
        h.host_name = heapless::String::try_from("nas\u{1b}[2J").unwrap();
        let body = postcard::to_allocvec(&h).unwrap();
        let got = decode_stored::<Hello>(&body).expect("decodes");
        assert!(nasprobe_proto::sanitize::is_safe(&got.host_name));
        let mut longer = body.clone();
        longer.push(0);
        assert!(
            decode_stored::<Hello>(&longer).is_none(),
            "bytes appended: corrupt"
        );
        assert!(decode_stored::<Hello>(&body[..body.len() - 1]).is_none());
    }
}

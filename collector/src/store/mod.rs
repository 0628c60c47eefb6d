//! The SQLite store: one file, WAL mode, a schema version with migrations.
//!
//! Tables: `hosts` (the collector's labels), `instances` (one row per agent instance with its
//! `Hello` kept as postcard so disk/NIC indices resolve), `samples` and `events` (the postcard
//! bodies as received, keyed by `(instance, seq)`, WITHOUT ROWID so nothing is stored twice and
//! a row costs little more than its body), `gaps` (every known-missing range with its reason).
//!
//! Samples are kept compactly (issue 17): the newest ones of each instance as raw rows of
//! `samples` (the open chunk, durable per batch like any row), and once a sample of a later
//! `chunk::SPAN_MS` window arrives the closed windows are folded, in the same transaction,
//! into `sample_chunks` rows (zstd, see `chunk`). Every read goes through both.
//!
//! `instances.last_seq` is the committed high-water mark of an instance (records and `Gone`
//! ranges): a reconnecting collector resumes after it.
//!
//! The parts: this file opens the store and holds the row helpers every reader shares, with
//! `decode_stored`, the one decoder of a stored body; `schema` (migrations), `write`
//! (registration and batches), `read` (`load_window`, `walk`, `summary`), `check`,
//! `retention`, `export_cursor` (the exporters' reads and cursors); `chunk`, `rollup`
//! and `tiers` (the compact forms of samples); [`window`], the bridge to the analysis (a
//! window loaded and analyzed once, as every command reads it).
//!
//! Two handles: [`StoreReader`] (every read: report, check, export, serve, the live verdict)
//! and [`Store`], the writer owned by the store task, which derefs to its reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nasprobe_proto::{Event, Hello, Sample};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use chunk::{ChunkError, Row};

mod check;
pub(crate) mod chunk;
mod export_cursor;
mod read;
mod retention;
pub(crate) mod rollup;
mod schema;
pub(crate) mod tiers;
pub mod window;
mod write;

pub use check::InstanceCheck;
pub use export_cursor::{ExportCursor, ExportInstance, ExportRecord, ExportUnsent};
pub use read::{HostSummary, Walked};
pub use retention::{Retention, RetentionCutoffs};
pub use schema::SCHEMA_VERSION;
pub use write::{FloodCounts, Item, Registration};

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

/// Where the database goes when `--db` is not given: `$XDG_DATA_HOME/nasprobe/nasprobe.db`.
pub(crate) fn default_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("nasprobe.db")
}

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
    conn: Connection,
    path: PathBuf,
    /// The schema has `sample_chunks` (false only for files kept at an old schema by tests).
    chunks: bool,
    /// Schema 5 or later: rollup tiers are written as chunks close.
    tiers: bool,
}

/// The writer, owned by the store task (or a command that records): registrations, batches,
/// retention, clock offsets, export cursors, with what its writes remember between batches.
/// It reads as the [`StoreReader`] it derefs to.
pub struct Store {
    reader: StoreReader,
    /// Gone gaps whose end time waits for the next record of their instance: instance → to_seq.
    open_gaps: HashMap<i64, u64>,
    /// Highest seq folded into a chunk per instance (loaded on first write): a sample at or
    /// below it is looked up in the chunks before it is stored.
    chunk_hw: HashMap<i64, u64>,
}

impl std::ops::Deref for Store {
    type Target = StoreReader;
    fn deref(&self) -> &StoreReader {
        &self.reader
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_to(path, SCHEMA_VERSION)
    }

    /// The reading side alone (for a reader that opened the file as a writer, e.g. to create
    /// or migrate it).
    pub fn into_reader(self) -> StoreReader {
        self.reader
    }
}

impl StoreReader {
    /// Opens an existing database for reading only (report, events, check, export): nothing is
    /// created, migrated or written. A file on a read-only file system (where SQLite cannot
    /// make its `-shm` file) is opened as immutable, and the returned note says so (a recorder
    /// writing to it meanwhile is then not seen).
    pub fn open_read_only(path: &Path) -> Result<(StoreReader, Option<String>), StoreError> {
        use rusqlite::OpenFlags;
        let probe = |conn: Connection| -> Result<StoreReader, StoreError> {
            let s = StoreReader {
                conn,
                path: path.to_path_buf(),
                chunks: true,
                tiers: true,
            };
            s.conn
                .busy_timeout(std::time::Duration::from_secs(5))
                .map_err(|e| s.err(e))?;
            let found = s.schema_version()?;
            if found > SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    path: path.to_path_buf(),
                    found,
                    known: SCHEMA_VERSION,
                });
            }
            if found < SCHEMA_VERSION {
                return Err(StoreError::Old {
                    path: path.to_path_buf(),
                    found,
                    known: SCHEMA_VERSION,
                });
            }
            Ok(s)
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let first = Connection::open_with_flags(path, flags)
            .map_err(|e| classify(path, e))
            .and_then(probe);
        match first {
            Ok(s) => Ok((s, None)),
            Err(e @ (StoreError::TooNew { .. } | StoreError::Old { .. })) => Err(e),
            Err(first_err) => {
                let uri = format!(
                    "file:{}?immutable=1",
                    path.display()
                        .to_string()
                        .replace('%', "%25")
                        .replace('?', "%3f")
                        .replace('#', "%23")
                );
                let conn = Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(|_| first_err)?;
                let s = probe(conn)?;
                Ok((
                    s,
                    Some(format!(
                        "database {} cannot be opened for shared reading (read-only file system?): \
                         read as an immutable snapshot",
                        path.display()
                    )),
                ))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw connection, for tests and tools (`PRAGMA integrity_check`, ad-hoc queries).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Smallest sample seq of `instance` whose time is at or after `t` (time grows with seq
    /// within an instance): a binary search over the primary key, no time index needed.
    fn seq_at_or_after(&self, instance: i64, lo: u64, hi: u64, t: u64) -> rusqlite::Result<u64> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, time_ms FROM samples WHERE instance = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1",
        )?;
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
    fn seq_range(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
    ) -> rusqlite::Result<Option<(u64, u64)>> {
        let (min, max): (Option<i64>, Option<i64>) = self.conn.query_row(
            "SELECT MIN(seq), MAX(seq) FROM samples WHERE instance = ?1",
            [instance],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
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

    fn instances(&self) -> rusqlite::Result<Vec<(String, String, i64, InstanceRaw)>> {
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

    fn gaps(&self, from: Option<u64>, to: Option<u64>) -> rusqlite::Result<Vec<Gap>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT h.name, i.instance_id, g.from_seq, g.to_seq, g.from_ms, g.to_ms, g.samples, g.reason
             FROM gaps g JOIN hosts h ON h.id = g.host JOIN instances i ON i.id = g.instance
             WHERE g.to_ms >= ?1 AND g.from_ms <= ?2
             ORDER BY h.name, g.from_ms, g.id",
        )?;
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
    fn chunk_metas(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
    ) -> rusqlite::Result<Vec<ChunkMeta>> {
        if !self.chunks {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, first_seq, last_seq, first_ms, last_ms, n FROM sample_chunks
             WHERE instance = ?1 AND last_ms >= ?2 AND first_ms <= ?3 ORDER BY first_seq",
        )?;
        let rows = stmt.query_map(
            params![
                instance,
                from.unwrap_or(0) as i64,
                to.map_or(i64::MAX, |t| t as i64)
            ],
            |r| {
                Ok(ChunkMeta {
                    id: r.get(0)?,
                    first_seq: r.get::<_, i64>(1)? as u64,
                    last_seq: r.get::<_, i64>(2)? as u64,
                    first_ms: r.get::<_, i64>(3)? as u64,
                    last_ms: r.get::<_, i64>(4)? as u64,
                    n: r.get::<_, i64>(5)? as u64,
                })
            },
        )?;
        rows.collect()
    }

    /// The samples of one chunk, decoded (the outer error: SQLite; the inner: a damaged chunk).
    fn chunk_rows(&self, m: &ChunkMeta) -> rusqlite::Result<Result<Vec<Row>, ChunkError>> {
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
    fn each_sample(
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
    fn each_sample_while(
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
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, time_ms, CAST(body AS BLOB) FROM samples
                 WHERE instance = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
            )
            .map_err(e)?;
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
type StoredSample<'a> = Result<Row, (&'a ChunkMeta, ChunkError)>;

/// A `sample_chunks` row without its data.
#[derive(Debug, Clone)]
struct ChunkMeta {
    id: i64,
    first_seq: u64,
    last_seq: u64,
    /// Smallest and largest sample time inside (a clock step may reorder times).
    first_ms: u64,
    last_ms: u64,
    n: u64,
}

/// An `instances` row as the readers need it: its `Hello` still encoded.
struct InstanceRaw {
    row: i64,
    instance_id: u64,
    last_seq: u64,
    hello: Vec<u8>,
}

/// The error of a SQLite call on the file at `path`: disk full and locked apart.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
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

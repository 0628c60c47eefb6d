//! The SQLite store: one file, WAL mode, a schema version with migrations.
//!
//! Tables: `hosts` (the collector's labels), `instances` (one row per agent instance with its
//! `Hello` kept as postcard so disk/NIC indices resolve), `samples` and `events` (the postcard
//! bodies as received, keyed by `(instance, seq)`, WITHOUT ROWID so nothing is stored twice and
//! a row costs little more than its body), `gaps` (every known-missing range with its reason).
//!
//! Samples are kept compactly (issue 17): the newest ones of each instance as raw rows of
//! `samples` (the open chunk, durable per batch like any row), and once a sample of a later
//! [`chunk::SPAN_MS`] window arrives the closed windows are folded, in the same transaction,
//! into `sample_chunks` rows (zstd, see [`crate::chunk`]). Every read goes through both.
//!
//! `instances.last_seq` is the committed high-water mark of an instance (records and `Gone`
//! ranges): a reconnecting collector resumes after it.
//!
//! The analysis reads through [`Store::load_window`] (decoded samples, events and gaps per host
//! over a time window) and [`Store::summary`] (counts only).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use nasprobe_analysis::{GapInfo, HostData, Instance, TimedEvent, TimedSample};
use nasprobe_proto::{Event, Hello, Sample};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use crate::chunk::{self, ChunkError, Row};
use crate::model;
use crate::rollup::{self, Merged, Merger};
use crate::tiers;

/// Reason of a gap left by an agent restart (the old instance's tail and the downtime).
pub const REASON_RESTART: &str = "agent restarted";
/// Reason of a gap announced by the agent with `Gone` (its ring overwrote the range).
pub const REASON_RING: &str = "ring overwrote";
/// Reason prefix of a record the collector refused to store (implausible values, see `validate`).
pub(crate) const REASON_REJECTED: &str = "rejected";
/// Reason of events dropped over the collector's cap per interval (`conn::EVENTS_PER_INTERVAL`);
/// one gap per flood, its `samples` the number of events dropped.
pub(crate) const REASON_FLOOD: &str = "flood: events over the cap per interval dropped";

#[derive(Debug, thiserror::Error)]
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

/// Schema migrations; version N is reached by applying the first N entries.
const MIGRATIONS: &[&str] = &[
    // 1: the tables.
    "CREATE TABLE hosts(
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        address TEXT NOT NULL,
        first_seen_ms INTEGER NOT NULL
     );
     CREATE TABLE instances(
        id INTEGER PRIMARY KEY,
        host INTEGER NOT NULL REFERENCES hosts(id),
        instance_id INTEGER NOT NULL,
        started_ms INTEGER NOT NULL,
        first_seen_ms INTEGER NOT NULL,
        host_name TEXT NOT NULL,
        interval_ms INTEGER NOT NULL,
        hello BLOB NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        last_ms INTEGER NOT NULL DEFAULT 0,
        UNIQUE(host, instance_id)
     );
     CREATE TABLE samples(
        instance INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY(instance, seq)
     ) WITHOUT ROWID;
     CREATE TABLE events(
        instance INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        time_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        pid INTEGER,
        name TEXT,
        body BLOB NOT NULL,
        PRIMARY KEY(instance, seq)
     ) WITHOUT ROWID;
     CREATE TABLE gaps(
        id INTEGER PRIMARY KEY,
        host INTEGER NOT NULL REFERENCES hosts(id),
        instance INTEGER NOT NULL,
        from_seq INTEGER,
        to_seq INTEGER,
        from_ms INTEGER NOT NULL,
        to_ms INTEGER NOT NULL,
        samples INTEGER NOT NULL,
        reason TEXT NOT NULL,
        UNIQUE(instance, from_seq)
     );",
    // 2: queries by time and kind over events and gaps.
    "CREATE INDEX events_time ON events(time_ms);
     CREATE INDEX events_kind ON events(kind, time_ms);
     CREATE INDEX gaps_time ON gaps(to_ms);",
    // 3: export cursors: per export target (e.g. a VictoriaMetrics URL) and agent instance, the
    // last sequence number (sample or event) the target surely holds and the last it acknowledged.
    "CREATE TABLE IF NOT EXISTS export_cursors(
        target TEXT NOT NULL,
        instance INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        acked INTEGER NOT NULL DEFAULT 0,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY(target, instance)
     ) WITHOUT ROWID;",
    // 4: compressed chunks of samples (one window of one instance per row; see `chunk`). The
    // migration then folds the closed windows of every instance's raw rows (`fold_instance`).
    "CREATE TABLE IF NOT EXISTS sample_chunks(
        id INTEGER PRIMARY KEY,
        instance INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        first_ms INTEGER NOT NULL,
        last_ms INTEGER NOT NULL,
        n INTEGER NOT NULL,
        data BLOB NOT NULL,
        UNIQUE(instance, first_seq)
     );",
    // 5: the 1-minute and 1-hour rollup tiers (`tiers`); the migration builds them from the
    // chunks.
    tiers::TABLE,
];

/// Per agent instance, its clock against the collector's as the best handshake measured it
/// (`analysis::ClockOffset`). Kept apart from [`MIGRATIONS`] (created when first written, read
/// when present) so that it needs no schema version of its own: a store without it reports the
/// offsets as unknown.
const CLOCK_TABLE: &str = "CREATE TABLE IF NOT EXISTS clock_offsets(
        instance INTEGER PRIMARY KEY,
        offset_ms INTEGER NOT NULL,
        precision_ms INTEGER NOT NULL,
        measured_ms INTEGER NOT NULL
     )";
/// A measurement older than this is replaced by a newer one even when less precise (clocks
/// drift).
const CLOCK_STALE_MS: i64 = 3_600_000;
/// The first schema with `sample_chunks`: below it, samples stay raw rows.
const CHUNKS_SINCE: i64 = 4;
/// The first schema with the rollup tiers: below it, reports merge raw samples while reading.
const TIERS_SINCE: i64 = 5;

/// How long each tier of the store is kept (`--retention`): raw samples (with the periodic
/// connection and open-file snapshots), the 1-minute rollups (with every other event), the
/// 1-hour rollups (with the gaps). A coarser tier is kept at least as long as a finer one, so
/// a report over an old window finds its coarser steps where the finer ones are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub raw: std::time::Duration,
    pub minute: std::time::Duration,
    pub hour: std::time::Duration,
}

/// The event kinds kept as long as raw samples: snapshots sent every few seconds while a
/// transfer runs (the rest: starts, exits, link changes, kernel messages, stay with the
/// minutes).
const RAW_EVENT_KINDS: [&str; 2] = [Event::KIND_CONNECTIONS, Event::KIND_OPEN_FILES];

impl Retention {
    /// The defaults (README): raw 14 days, 1-minute rollups 180 days, 1-hour rollups 5 years.
    pub const DEFAULT: Retention = Retention {
        raw: std::time::Duration::from_secs(14 * 86_400),
        minute: std::time::Duration::from_secs(180 * 86_400),
        hour: std::time::Duration::from_secs(5 * 365 * 86_400),
    };

    /// The cutoffs (ms since the epoch) at `now_ms`.
    pub fn cutoffs(&self, now_ms: u64) -> RetentionCutoffs {
        let cut = |d: std::time::Duration| now_ms.saturating_sub(d.as_millis() as u64);
        RetentionCutoffs {
            raw_ms: cut(self.raw),
            minute_ms: cut(self.minute),
            hour_ms: cut(self.hour),
        }
    }
}

/// What [`Store::apply_retention`] deletes: each tier's records older than its cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionCutoffs {
    pub raw_ms: u64,
    pub minute_ms: u64,
    pub hour_ms: u64,
}

impl RetentionCutoffs {
    /// Every tier cut at the same time.
    pub fn all(cutoff_ms: u64) -> RetentionCutoffs {
        RetentionCutoffs {
            raw_ms: cutoff_ms,
            minute_ms: cutoff_ms,
            hour_ms: cutoff_ms,
        }
    }
}

/// The newest schema this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Where the database goes when `--db` is not given: `$XDG_DATA_HOME/nasprobe/nasprobe.db`.
pub(crate) fn default_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("nasprobe.db")
}

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
    /// Events over the cap per interval, `from_seq..=to_seq` (samples in between are stored):
    /// a gap with reason [`REASON_FLOOD`], merged into the instance's previous flood gap when
    /// that ended less than a minute before.
    Flood {
        instance: i64,
        from_seq: u64,
        to_seq: u64,
        from_ms: u64,
        to_ms: u64,
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

/// Counts for one host over a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSummary {
    pub host: String,
    pub address: String,
    pub instances: u64,
    pub samples: u64,
    pub events: u64,
    pub first_ms: Option<u64>,
    pub last_ms: Option<u64>,
    pub gaps: Vec<Gap>,
}

/// Result of [`Store::check`] for one agent instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceCheck {
    pub host: String,
    pub instance_id: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    /// Rows stored (samples + events).
    pub stored: u64,
    pub duplicates: u64,
    /// Seqs recorded as gone (agent's `Gone`).
    pub gone: u64,
    /// Ranges missing without a recorded gap: must be empty.
    pub holes: Vec<(u64, u64)>,
    /// Stored rows that do not decode or fail the collector's checks (`validate`), or a
    /// `Hello` that fails them (seq None): must be empty.
    pub bad_rows: Vec<(Option<u64>, String)>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Gone gaps whose end time waits for the next record of their instance: instance → to_seq.
    open_gaps: HashMap<i64, u64>,
    /// Highest seq folded into a chunk per instance (loaded on first write): a sample at or
    /// below it is looked up in the chunks before it is stored.
    chunk_hw: HashMap<i64, u64>,
    /// The schema has `sample_chunks` (false only for files kept at an old schema by tests).
    chunks: bool,
    /// Schema 5 or later: rollup tiers are written as chunks close.
    tiers: bool,
}

use crate::conn::now_ms;

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_to(path, SCHEMA_VERSION)
    }

    /// [`Store::open`] bringing the schema only up to `version`.
    fn open_to(path: &Path, version: i64) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| classify(path, e))?;
        let mut s = Store {
            conn,
            path: path.to_path_buf(),
            open_gaps: HashMap::new(),
            chunk_hw: HashMap::new(),
            chunks: false,
            tiers: false,
        };
        s.setup().map_err(|e| s.err(e))?;
        s.migrate_to(version)?;
        Ok(s)
    }

    /// Opens an existing database for reading only (report, events, check, export): nothing is
    /// created, migrated or written. A file on a read-only file system (where SQLite cannot
    /// make its `-shm` file) is opened as immutable, and the returned note says so (a recorder
    /// writing to it meanwhile is then not seen).
    pub fn open_read_only(path: &Path) -> Result<(Store, Option<String>), StoreError> {
        use rusqlite::OpenFlags;
        let probe = |conn: Connection| -> Result<Store, StoreError> {
            let s = Store {
                conn,
                path: path.to_path_buf(),
                open_gaps: HashMap::new(),
                chunk_hw: HashMap::new(),
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

    fn setup(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(5))?;
        self.conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
        self.conn.execute_batch(
            "PRAGMA synchronous=NORMAL;
             CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);",
        )?;
        Ok(())
    }

    /// The schema version stored in the file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map(|v| v.unwrap_or(0))
            .map_err(|e| self.err(e))
    }

    /// Applies migrations up to `target` (tests use it to build old files).
    pub fn migrate_to(&mut self, target: i64) -> Result<(), StoreError> {
        let found = self.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        for v in found + 1..=target {
            let tx = self
                .conn
                .transaction()
                .map_err(|e| classify(&self.path, e))?;
            tx.execute_batch(MIGRATIONS[(v - 1) as usize])
                .and_then(|_| match v {
                    CHUNKS_SINCE => fold_all(&tx),
                    TIERS_SINCE => {
                        log::info!(
                            "database {}: building its rollup tiers from its chunks (once; a month of ten hosts takes minutes)",
                            self.path.display()
                        );
                        tiers::build_all(&tx)
                    }
                    _ => Ok(()),
                })
                .and_then(|_| {
                    tx.execute("DELETE FROM schema_version", [])?;
                    tx.execute("INSERT INTO schema_version(version) VALUES (?1)", [v])
                })
                .map_err(|e| classify(&self.path, e))?;
            tx.commit().map_err(|e| classify(&self.path, e))?;
        }
        let version = self.schema_version()?;
        self.chunks = version >= CHUNKS_SINCE;
        self.tiers = version >= TIERS_SINCE;
        Ok(())
    }

    /// Opens (creating if needed) a file and brings it only to schema `version`: tests write
    /// stores of an older nasprobe with it (below schema 4 samples stay raw rows, as then).
    #[cfg(any(test, feature = "testing"))]
    pub fn open_at_schema(path: &Path, version: i64) -> Result<Store, StoreError> {
        Store::open_to(path, version)
    }

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
        let path = self.path.clone();
        let e = |e| classify(&path, e);
        let now = now_ms();
        let blob = postcard::to_allocvec(hello).expect("Hello encodes");
        let tx = self.conn.transaction().map_err(e)?;
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
        let path = self.path.clone();
        let e = |e| classify(&path, e);
        let mut open_gaps = self.open_gaps.clone();
        let mut chunk_hw = self.chunk_hw.clone();
        let chunks = self.chunks;
        let with_tiers = self.tiers;
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut ins_sample = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO samples(instance, seq, time_ms, body) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(e)?;
            let mut ins_event = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO events(instance, seq, time_ms, kind, pid, name, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(e)?;
            let mut fix_gap = tx
                .prepare_cached(
                    "UPDATE gaps SET to_ms = ?3 WHERE instance = ?1 AND to_seq = ?2 AND reason = ?4",
                )
                .map_err(e)?;
            let mut marks: HashMap<i64, (u64, u64)> = HashMap::new();
            for it in items {
                let (instance, seq, time_ms) = match it {
                    Item::Sample {
                        instance,
                        seq,
                        time_ms,
                        body,
                    } => {
                        let hw = match chunk_hw.get(instance) {
                            Some(hw) => *hw,
                            None if !chunks => 0,
                            None => {
                                let hw = chunk_high_water(&tx, *instance).map_err(e)?;
                                chunk_hw.insert(*instance, hw);
                                hw
                            }
                        };
                        if *seq > hw || !in_a_chunk(&tx, *instance, *seq).map_err(e)? {
                            ins_sample
                                .execute(params![instance, *seq as i64, *time_ms as i64, body])
                                .map_err(e)?;
                        }
                        (*instance, *seq, *time_ms)
                    }
                    Item::Event {
                        instance,
                        seq,
                        time_ms,
                        kind,
                        pid,
                        name,
                        body,
                    } => {
                        ins_event
                            .execute(params![
                                instance,
                                *seq as i64,
                                *time_ms as i64,
                                kind,
                                pid,
                                name,
                                body
                            ])
                            .map_err(e)?;
                        (*instance, *seq, *time_ms)
                    }
                    Item::Gone {
                        instance,
                        from_seq,
                        to_seq,
                    } => {
                        let mark_ms = marks.get(instance).map(|m| m.1).unwrap_or(0);
                        insert_ring_gap(&tx, *instance, (*from_seq, *to_seq), mark_ms)
                            .map_err(e)?;
                        open_gaps.insert(*instance, *to_seq);
                        let m = marks.entry(*instance).or_insert((0, 0));
                        m.0 = m.0.max(*to_seq);
                        continue;
                    }
                    Item::Flood {
                        instance,
                        from_seq,
                        to_seq,
                        from_ms,
                        to_ms,
                    } => {
                        insert_flood_gap(&tx, *instance, (*from_seq, *to_seq), (*from_ms, *to_ms))
                            .map_err(e)?;
                        (*instance, *to_seq, *to_ms)
                    }
                    Item::Rejected {
                        instance,
                        seq,
                        time_ms,
                        why,
                    } => {
                        insert_gap(
                            &tx,
                            *instance,
                            (*seq, *seq),
                            (*time_ms, *time_ms),
                            1,
                            &format!("{REASON_REJECTED}: {why}"),
                        )
                        .map_err(e)?;
                        (*instance, *seq, *time_ms)
                    }
                };
                if let Some(to_seq) = open_gaps.get(&instance).copied()
                    && seq > to_seq
                {
                    fix_gap
                        .execute(params![
                            instance,
                            to_seq as i64,
                            time_ms as i64,
                            REASON_RING
                        ])
                        .map_err(e)?;
                    open_gaps.remove(&instance);
                }
                let m = marks.entry(instance).or_insert((0, 0));
                m.0 = m.0.max(seq);
                m.1 = m.1.max(time_ms);
            }
            mark_instances(&tx, &marks).map_err(e)?;
            if chunks {
                for (inst, (_, newest_ms)) in &marks {
                    if let Some(hw) =
                        fold_instance(&tx, *inst, Some(*newest_ms), with_tiers).map_err(e)?
                    {
                        let v = chunk_hw.entry(*inst).or_insert(0);
                        *v = (*v).max(hw);
                    }
                }
            }
        }
        tx.commit().map_err(e)?;
        self.open_gaps = open_gaps;
        self.chunk_hw = chunk_hw;
        Ok(())
    }

    /// The committed high-water mark of an agent instance of a host, if known.
    pub fn resume_point(&self, host: &str, instance_id: u64) -> Result<Option<u64>, StoreError> {
        self.conn
            .query_row(
                "SELECT i.last_seq FROM instances i JOIN hosts h ON h.id = i.host
                 WHERE h.name = ?1 AND i.instance_id = ?2",
                params![host, instance_id as i64],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|o| o.map(|v| v as u64))
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

    /// [`Store::each_sample`] until `f` returns false.
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

    /// Every stored sample and event of `[from, to]`, without holding them: host by host (of
    /// `hosts`, or all), agent instance by instance, in seq order, samples decoded one at a
    /// time out of their chunks (a damaged chunk is skipped with a warning; a sample that does
    /// not decode is handed over as None). Stops when `f` returns false.
    pub fn walk(
        &self,
        from: Option<u64>,
        to: Option<u64>,
        hosts: &[String],
        f: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let e = |e| self.err(e);
        let mut events = self
            .conn
            .prepare(
                "SELECT seq, time_ms, CAST(body AS BLOB) FROM events WHERE instance = ?1
                 AND time_ms BETWEEN ?2 AND ?3 ORDER BY seq",
            )
            .map_err(e)?;
        for (name, _address, _host, raw) in self.instances().map_err(e)? {
            if !hosts.is_empty() && !hosts.contains(&name) {
                continue;
            }
            let Some(mut hello) = decode_exact::<Hello>(&raw.hello) else {
                log::warn!(
                    "the stored Hello of {name} instance {:x} does not decode; its records are skipped",
                    raw.instance_id
                );
                continue;
            };
            nasprobe_proto::sanitize::hello(&mut hello);
            let mut evs = events
                .query(params![
                    raw.row,
                    from.unwrap_or(0) as i64,
                    to.map_or(i64::MAX, |t| t as i64)
                ])
                .map_err(e)?;
            let mut next_event = || -> Result<Option<(u64, u64, Event)>, StoreError> {
                while let Some(r) = evs.next().map_err(e)? {
                    let (seq, time_ms, body): (i64, i64, Vec<u8>) = (
                        r.get(0).map_err(e)?,
                        r.get(1).map_err(e)?,
                        r.get(2).map_err(e)?,
                    );
                    match decode_exact::<Event>(&body) {
                        Some(mut ev) => {
                            nasprobe_proto::sanitize::event(&mut ev);
                            return Ok(Some((seq as u64, time_ms as u64, ev)));
                        }
                        None => {
                            log::warn!("stored event seq {seq} of {name} does not decode; skipped")
                        }
                    }
                }
                Ok(None)
            };
            let mut pending = next_event()?;
            let mut failed: Option<StoreError> = None;
            let mut go_on = true;
            self.each_sample_while(raw.row, from, to, 0, &mut |got| {
                let r = match got {
                    Ok(r) => r,
                    Err((m, why)) => {
                        log::warn!(
                            "stored chunk seq {}..{} of {name} does not decode ({why}); skipped",
                            m.first_seq,
                            m.last_seq
                        );
                        return true;
                    }
                };
                while let Some((seq, time_ms, ev)) = pending.take_if(|p| p.0 < r.seq) {
                    go_on = f(Walked::Event {
                        host: &name,
                        instance: raw.row,
                        seq,
                        time_ms,
                        event: &ev,
                    });
                    match next_event() {
                        Ok(n) => pending = n,
                        Err(x) => {
                            failed = Some(x);
                            return false;
                        }
                    }
                    if !go_on {
                        return false;
                    }
                }
                let sample = decode_exact::<Sample>(&r.body).map(|mut s| {
                    nasprobe_proto::sanitize::sample(&mut s);
                    s
                });
                go_on = f(Walked::Sample {
                    host: &name,
                    instance: raw.row,
                    hello: &hello,
                    seq: r.seq,
                    time_ms: r.time_ms,
                    sample: sample.as_ref(),
                });
                go_on
            })?;
            if let Some(x) = failed {
                return Err(x);
            }
            while go_on && let Some((seq, time_ms, ev)) = pending.take() {
                go_on = f(Walked::Event {
                    host: &name,
                    instance: raw.row,
                    seq,
                    time_ms,
                    event: &ev,
                });
                pending = next_event()?;
            }
            if !go_on {
                break;
            }
        }
        Ok(())
    }

    /// The samples of `instance` in `[from, to]` merged into steps of `step_ms`, in seq order:
    /// read from the stored tier of the largest step not above it, the coarser tier where
    /// that one's retention deleted it, then the finer tiers and raw samples that are not
    /// rolled up yet (the open chunk, the open hour), all merged again into `step_ms` steps.
    fn each_step(
        &self,
        instance: i64,
        from: Option<u64>,
        to: Option<u64>,
        step_ms: u64,
        f: &mut dyn FnMut(Step),
    ) -> Result<(), StoreError> {
        let e = |e| self.err(e);
        let inside = |t: u64| !(from.is_some_and(|f| t < f) || to.is_some_and(|x| t > x));
        let mut merger = Merger::new(step_ms);
        let mut hi = 0u64;
        let tier = if self.tiers {
            rollup::TIERS.iter().rev().copied().find(|t| *t <= step_ms)
        } else {
            None
        };
        if let Some(tier) = tier {
            let own = tiers::metas(&self.conn, instance, tier, from, to).map_err(e)?;
            let lo = own.first().map_or(u64::MAX, |m| m.first_seq);
            let coarser = rollup::TIERS.iter().copied().filter(|t| *t > tier);
            let finer = rollup::TIERS.iter().rev().copied().filter(|t| *t < tier);
            let mut sources: Vec<tiers::TierMeta> = Vec::new();
            for c in coarser {
                sources.extend(
                    tiers::metas(&self.conn, instance, c, from, to)
                        .map_err(e)?
                        .into_iter()
                        .filter(|m| m.last_seq < lo),
                );
            }
            sources.sort_by_key(|m| m.first_seq);
            sources.extend(own);
            let mut read = |sources: Vec<tiers::TierMeta>, hi: &mut u64| {
                for m in sources {
                    match tiers::rows(&self.conn, &m).map_err(e)? {
                        Ok(rows) => {
                            for r in rows.into_iter().filter(|r| inside(r.time_ms)) {
                                match decode_exact::<Sample>(&r.body) {
                                    Some(smp) => {
                                        if let Some(done) = merger.push(r.seq, r.time_ms, &smp) {
                                            f(Step::Merged(Box::new(done)));
                                        }
                                    }
                                    None => f(Step::Corrupt(r.seq, r.time_ms)),
                                }
                            }
                        }
                        Err(_) => f(Step::Damaged(
                            "rollup",
                            (m.first_seq, m.last_seq, m.first_ms, m.last_ms, m.n),
                        )),
                    }
                    *hi = (*hi).max(m.last_seq);
                }
                Ok::<_, StoreError>(())
            };
            read(sources, &mut hi)?;
            for t in finer {
                let newer: Vec<_> = tiers::metas(&self.conn, instance, t, from, to)
                    .map_err(e)?
                    .into_iter()
                    .filter(|m| m.first_seq > hi)
                    .collect();
                read(newer, &mut hi)?;
            }
        }
        self.each_sample(instance, from, to, hi, &mut |got| match got {
            Ok(r) => match decode_exact::<Sample>(&r.body) {
                Some(smp) => {
                    if let Some(done) = merger.push(r.seq, r.time_ms, &smp) {
                        f(Step::Merged(Box::new(done)));
                    }
                }
                None => f(Step::Corrupt(r.seq, r.time_ms)),
            },
            Err((m, _)) => f(Step::Damaged(
                "chunk",
                (m.first_seq, m.last_seq, m.first_ms, m.last_ms, m.n),
            )),
        })?;
        if let Some(done) = merger.finish() {
            f(Step::Merged(Box::new(done)));
        }
        Ok(())
    }

    /// Everything stored per host over `[from_ms, to_ms]` (None: unbounded), as the analysis
    /// reads it: instances with their `Hello`, samples still encoded (the analysis decodes
    /// each once), events, gaps; in time order. Hosts without data in the window are left out.
    pub fn load_window(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
    ) -> Result<Vec<HostData>, StoreError> {
        self.load_window_at(from_ms, to_ms, None)
    }

    /// [`Store::load_window`] with the samples of each instance merged into one per
    /// `resolution_ms` step of their times ([`crate::rollup`]; None: raw samples). Only the
    /// merged samples are kept: memory follows the steps, not the samples.
    pub fn load_window_at(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        resolution_ms: Option<u64>,
    ) -> Result<Vec<HostData>, StoreError> {
        let e = |e| self.err(e);
        let mut out: Vec<HostData> = Vec::new();
        let gaps = self.gaps(from_ms, to_ms).map_err(e)?;
        let mut event_stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, time_ms, CAST(body AS BLOB) FROM events WHERE instance = ?1 AND time_ms BETWEEN ?2 AND ?3 ORDER BY seq",
            )
            .map_err(e)?;
        let mut host_gaps: Vec<Gap> = Vec::new();
        let clocks = self.clock_offsets().map_err(e)?;
        for (name, _address, _host, raw) in self.instances().map_err(e)? {
            if out.last().is_none_or(|w| w.name != name) {
                host_gaps = gaps.iter().filter(|g| g.host == name).cloned().collect();
                out.push(HostData {
                    name: name.clone(),
                    gaps: host_gaps
                        .iter()
                        .map(|g| GapInfo {
                            from_ms: g.from_ms,
                            to_ms: g.to_ms,
                            samples: Some(g.samples),
                            reason: g.reason.clone(),
                        })
                        .collect(),
                    ..HostData::default()
                });
            }
            let w = out.last_mut().expect("pushed above");
            let idx = w.instances.len();
            let mut any = false;
            let push = |m: Merged, w: &mut HostData| {
                w.samples.push(TimedSample {
                    time_ms: m.last_ms,
                    instance: idx,
                    seq: m.last_seq,
                    interval_us: m.sample.interval_us,
                    body: postcard::to_allocvec(&m.sample).expect("a Sample encodes"),
                });
            };
            let undecodable = |what: &str, m: (u64, u64, u64, u64, u64), w: &mut HostData| {
                let (first_seq, last_seq, first_ms, last_ms, n) = m;
                log::warn!(
                    "stored {what} seq {first_seq}..{last_seq} of {name} does not decode; skipped"
                );
                w.gaps.push(GapInfo {
                    from_ms: first_ms,
                    to_ms: last_ms,
                    samples: Some(n),
                    reason: nasprobe_analysis::report::undecodable_reason(what, first_seq),
                });
            };
            if let Some(res) = resolution_ms {
                self.each_step(raw.row, from_ms, to_ms, res, &mut |got| match got {
                    Step::Merged(m) => {
                        any = true;
                        push(*m, w);
                    }
                    Step::Damaged(what, m) => undecodable(what, m, w),
                    Step::Corrupt(seq, time_ms) => {
                        w.gaps.push(corrupt_gap(&name, seq, time_ms, "sample", 1))
                    }
                })?;
            } else {
                self.each_sample(raw.row, from_ms, to_ms, 0, &mut |got| {
                    let Row { seq, time_ms, body } = match got {
                        Ok(row) => row,
                        Err((m, _why)) => {
                            let m = (m.first_seq, m.last_seq, m.first_ms, m.last_ms, m.n);
                            return undecodable("chunk", m, w);
                        }
                    };
                    // A body whose interval does not even decode is skipped here with a gap
                    // naming it (a fuller corruption is found by the analysis' decode).
                    let Ok(interval_us) = nasprobe_proto::frame::sample_interval_us(&body) else {
                        w.gaps.push(corrupt_gap(&name, seq, time_ms, "sample", 1));
                        return;
                    };
                    w.samples.push(TimedSample {
                        time_ms,
                        instance: idx,
                        seq,
                        interval_us,
                        body,
                    });
                    any = true;
                })?;
            }
            let rows = event_stmt
                .query_map(
                    params![
                        raw.row,
                        from_ms.unwrap_or(0) as i64,
                        to_ms.map_or(i64::MAX, |t| t as i64)
                    ],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, Vec<u8>>(2)?,
                        ))
                    },
                )
                .map_err(e)?;
            for row in rows {
                let (seq, time_ms, body) = row.map_err(e)?;
                let Some(event) = TimedEvent::from_body(time_ms as u64, idx, seq as u64, body)
                else {
                    w.gaps
                        .push(corrupt_gap(&name, seq as u64, time_ms as u64, "event", 0));
                    continue;
                };
                w.events.push(event);
                any = true;
            }
            if any || host_gaps.iter().any(|g| g.instance_id == raw.instance_id) {
                let Some(mut hello) = decode_exact::<Hello>(&raw.hello) else {
                    // Without its Hello nothing of the instance can be read: one gap says so.
                    w.samples.retain(|s| s.instance != idx);
                    w.events.retain(|s| s.instance != idx);
                    log::warn!(
                        "the stored Hello of {name} instance {:x} does not decode",
                        raw.instance_id
                    );
                    let from = from_ms.unwrap_or(0);
                    w.gaps.push(GapInfo {
                        from_ms: from,
                        to_ms: to_ms.unwrap_or(from).max(from),
                        samples: None,
                        reason: format!(
                            "{}: the stored Hello of {name} instance {:x} does not decode; its records are skipped",
                            nasprobe_analysis::report::UNDECODABLE_PREFIX,
                            raw.instance_id
                        ),
                    });
                    continue;
                };
                nasprobe_proto::sanitize::hello(&mut hello);
                w.instances.push(Instance {
                    id: raw.instance_id,
                    hello,
                    clock: clocks.get(&raw.row).copied(),
                });
            }
        }
        for w in &mut out {
            w.samples.sort_by_key(|s| s.time_ms);
            w.events.sort_by_key(|s| s.time_ms);
            w.gaps.sort_by_key(|g| g.from_ms);
        }
        out.retain(|w| !w.instances.is_empty());
        Ok(out)
    }

    /// Counts per host over `[from_ms, to_ms]` without decoding anything.
    pub fn summary(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
    ) -> Result<Vec<HostSummary>, StoreError> {
        let e = |e| self.err(e);
        let gaps = self.gaps(from_ms, to_ms).map_err(e)?;
        let mut out: Vec<HostSummary> = Vec::new();
        for (name, address, _host, raw) in self.instances().map_err(e)? {
            if out.last().is_none_or(|w| w.host != name) {
                out.push(HostSummary {
                    host: name.clone(),
                    address,
                    instances: 0,
                    samples: 0,
                    events: 0,
                    first_ms: None,
                    last_ms: None,
                    gaps: gaps.iter().filter(|g| g.host == name).cloned().collect(),
                });
            }
            let s = out.last_mut().expect("pushed above");
            // (count, first, last) of the instance: whole chunks from their columns, the rest
            // (chunks cut by the window, the open chunk) row by row.
            let mut acc: Option<(u64, u64, u64)> = None;
            let mut add = |n: u64, first: u64, last: u64| {
                let a = acc.get_or_insert((0, first, last));
                *a = (a.0 + n, a.1.min(first), a.2.max(last));
            };
            let inside = |t: u64| !(from_ms.is_some_and(|f| t < f) || to_ms.is_some_and(|x| t > x));
            let mut cut = Vec::new();
            for m in self.chunk_metas(raw.row, from_ms, to_ms).map_err(e)? {
                if inside(m.first_ms) && inside(m.last_ms) {
                    add(m.n, m.first_ms, m.last_ms);
                } else {
                    cut.push(m);
                }
            }
            for m in cut {
                if let Ok(rows) = self.chunk_rows(&m).map_err(e)? {
                    rows.iter()
                        .filter(|r| inside(r.time_ms))
                        .for_each(|r| add(1, r.time_ms, r.time_ms));
                }
            }
            if let Some((lo, hi)) = self.seq_range(raw.row, from_ms, to_ms).map_err(e)? {
                let (n, first, last): (i64, i64, i64) = self
                    .conn
                    .query_row(
                        "SELECT COUNT(*), MIN(time_ms), MAX(time_ms) FROM samples
                         WHERE instance = ?1 AND seq BETWEEN ?2 AND ?3",
                        params![raw.row, lo as i64, hi as i64],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .map_err(e)?;
                add(n as u64, first as u64, last as u64);
            }
            // Where retention deleted the raw samples, the rollups still say what is stored.
            let mut span = acc.map(|(_, first, last)| (first, last));
            if self.tiers {
                for step in rollup::TIERS {
                    for m in tiers::metas(&self.conn, raw.row, step, from_ms, to_ms).map_err(e)? {
                        let first = m.first_ms.max(from_ms.unwrap_or(0));
                        let last = m.last_ms.min(to_ms.unwrap_or(u64::MAX));
                        let (a, b) = span.get_or_insert((first, last));
                        (*a, *b) = ((*a).min(first), (*b).max(last));
                    }
                }
            }
            if let Some((first, last)) = span {
                s.instances += 1;
                s.samples += acc.map_or(0, |a| a.0);
                s.first_ms = Some(s.first_ms.map_or(first, |f| f.min(first)));
                s.last_ms = Some(s.last_ms.map_or(last, |l| l.max(last)));
            }
            let ev: i64 = self
                .conn
                .query_row(
                    "SELECT COUNT(*) FROM events WHERE instance = ?1 AND time_ms BETWEEN ?2 AND ?3",
                    params![
                        raw.row,
                        from_ms.unwrap_or(0) as i64,
                        to_ms.map_or(i64::MAX, |t| t as i64)
                    ],
                    |r| r.get(0),
                )
                .map_err(e)?;
            s.events += ev as u64;
        }
        Ok(out)
    }

    /// Every seq stored for a host's instance (samples and events), ascending: for tests.
    pub fn seqs(&self, instance_row: i64) -> Result<Vec<u64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT seq FROM samples WHERE instance = ?1 UNION ALL
                 SELECT seq FROM events WHERE instance = ?1 ORDER BY 1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([instance_row], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?;
        let mut out: Vec<u64> = rows
            .map(|r| r.map(|v| v as u64).map_err(|e| self.err(e)))
            .collect::<Result<_, _>>()?;
        for m in self
            .chunk_metas(instance_row, None, None)
            .map_err(|e| self.err(e))?
        {
            if let Ok(rows) = self.chunk_rows(&m).map_err(|e| self.err(e))? {
                out.extend(rows.iter().map(|r| r.seq));
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Checks every instance: stored sequence numbers (samples and events) must cover
    /// `first..=last_seq` except for ranges recorded as gaps; `first` is 1, or the first seq kept
    /// after retention. Returns one line per instance and whether all are complete.
    pub fn check(&self) -> Result<Vec<InstanceCheck>, StoreError> {
        let e = |e| self.err(e);
        let mut out = Vec::new();
        let gaps = self.gaps(None, None).map_err(e)?;
        for (name, _addr, _host, raw) in self.instances().map_err(e)? {
            let seqs = self.seqs(raw.row)?;
            let dupes = seqs.windows(2).filter(|w| w[0] == w[1]).count() as u64;
            let gone: Vec<(u64, u64)> = gaps
                .iter()
                .filter(|g| g.host == name && g.instance_id == raw.instance_id)
                .filter_map(|g| Some((g.from_seq?, g.to_seq?)))
                .collect();
            let first = seqs
                .first()
                .copied()
                .unwrap_or(1)
                .min(gone.iter().map(|g| g.0).min().unwrap_or(u64::MAX));
            // Covered ranges (runs of stored seqs and recorded gaps), then the complement within
            // first..=last_seq: linear in rows and gaps, whatever the seq values.
            let mut covered: Vec<(u64, u64)> = gone.clone();
            let n_gone = covered.len();
            for &x in &seqs {
                let in_run = covered.len() > n_gone;
                match covered.last_mut() {
                    Some((_, b)) if in_run && x <= b.saturating_add(1) => *b = (*b).max(x),
                    _ => covered.push((x, x)),
                }
            }
            covered.sort_unstable();
            let mut holes = Vec::new();
            let mut next = first;
            for (a, b) in covered {
                if next > raw.last_seq {
                    break;
                }
                if a > next {
                    holes.push((next, (a - 1).min(raw.last_seq)));
                }
                next = next.max(b.saturating_add(1));
            }
            if next <= raw.last_seq {
                holes.push((next, raw.last_seq));
            }
            let bad_rows = self.check_rows(&raw)?;
            out.push(InstanceCheck {
                host: name,
                instance_id: raw.instance_id,
                first_seq: first,
                last_seq: raw.last_seq,
                stored: seqs.len() as u64,
                duplicates: dupes,
                gone: gone.iter().map(|g| g.1 - g.0 + 1).sum(),
                holes,
                bad_rows,
            });
        }
        Ok(out)
    }

    /// Decodes every stored row of an instance and re-runs the checks the collector runs before
    /// storing (`validate`): the `Hello`, each sample and event, sequence numbers and times.
    fn check_rows(&self, raw: &InstanceRaw) -> Result<Vec<(Option<u64>, String)>, StoreError> {
        use crate::validate;
        let e = |e| self.err(e);
        let mut bad = Vec::new();
        let Some(hello) = decode_exact::<Hello>(&raw.hello) else {
            bad.push((None, "the stored Hello does not decode".to_string()));
            return Ok(bad);
        };
        // The collector's clock at the time is not stored: the Hello's own is the reference.
        if let Err(why) = validate::check_hello(&hello, hello.now_ms) {
            bad.push((None, format!("Hello: {why}")));
        }
        let lower = validate::TimeWindow::new(&hello).lower_ms();
        let upper = now_ms()
            .max(hello.now_ms)
            .saturating_add(validate::CLOCK_SLACK_MS);
        let mut added = validate::Added::default();
        let mut events = self
            .conn
            .prepare_cached("SELECT seq, time_ms, CAST(body AS BLOB) FROM events WHERE instance = ?1 ORDER BY seq")
            .map_err(e)?;
        let row = |r: &rusqlite::Row| -> rusqlite::Result<(i64, i64, Vec<u8>)> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        };
        let common = |seq: i64, time_ms: i64| -> Option<String> {
            if seq < 1 {
                return Some(format!("seq {seq} is not positive"));
            }
            let t = time_ms as u64;
            (time_ms < 0 || t < lower || t > upper)
                .then(|| format!("time_ms {time_ms} outside {lower}..{upper}"))
        };
        for r in events.query_map([raw.row], row).map_err(e)? {
            let (seq, time_ms, body) = r.map_err(e)?;
            let why = match decode_exact::<Event>(&body) {
                None => Some("stored event does not decode (corrupt row)".to_string()),
                Some(ev) => {
                    added.count(&ev);
                    common(seq, time_ms).or_else(|| validate::check_event(&hello, &ev).err())
                }
            };
            if let Some(w) = why {
                bad.push((Some(seq as u64), w));
            }
        }
        self.each_sample(raw.row, None, None, 0, &mut |got| {
            let r = match got {
                Ok(r) => r,
                Err((m, why)) => {
                    bad.push((
                        Some(m.first_seq),
                        format!(
                            "stored chunk of seq {}..{} ({} samples) does not decode: {why}",
                            m.first_seq, m.last_seq, m.n
                        ),
                    ));
                    return;
                }
            };
            let why = match decode_exact::<Sample>(&r.body) {
                None => Some("stored sample does not decode (corrupt row)".to_string()),
                Some(smp) => common(r.seq as i64, r.time_ms as i64)
                    .or_else(|| validate::check_sample_with(&hello, added, &smp).err()),
            };
            if let Some(w) = why {
                bad.push((Some(r.seq), w));
            }
        })?;
        if self.tiers {
            // The rollups are derived data, but a report over a long window reads only them.
            for step in rollup::TIERS {
                for m in tiers::metas(&self.conn, raw.row, step, None, None).map_err(e)? {
                    let ok = tiers::rows(&self.conn, &m).map_err(e)?.is_ok_and(|rows| {
                        rows.iter()
                            .all(|r| decode_exact::<Sample>(&r.body).is_some())
                    });
                    if !ok {
                        bad.push((
                            Some(m.first_seq),
                            format!(
                                "stored {} rollup of seq {}..{} does not decode",
                                rollup::tier_name(step),
                                m.first_seq,
                                m.last_seq
                            ),
                        ));
                    }
                }
            }
        }
        bad.sort_by_key(|b| b.0);
        Ok(bad)
    }

    /// Deletes each tier's records older than its cutoff; returns the number of samples, steps
    /// and rows deleted.
    pub fn apply_retention(&mut self, cuts: RetentionCutoffs) -> Result<usize, StoreError> {
        let cutoff_ms = cuts.raw_ms;
        let path = self.path.clone();
        let e = |e| classify(&path, e);
        let rows: Vec<(i64, u64)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id, last_ms FROM instances")
                .map_err(e)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
                .map_err(e)?
                .collect::<Result<_, _>>()
                .map_err(e)?
        };
        let mut bounds = Vec::new();
        for (inst, _) in &rows {
            // First sample seq at/after the cutoff: everything before it goes.
            if let Some((min, max)) = self.seq_range(*inst, None, None).map_err(e)? {
                let keep_from = self
                    .seq_at_or_after(*inst, min, max, cutoff_ms)
                    .map_err(e)?;
                bounds.push((*inst, keep_from));
            }
        }
        // Chunks cut by the cutoff are rewritten with their rows from the cutoff on.
        let mut cut: Vec<(ChunkMeta, Vec<Row>)> = Vec::new();
        for (inst, _) in &rows {
            for m in self
                .chunk_metas(*inst, Some(cutoff_ms), Some(cutoff_ms))
                .map_err(e)?
            {
                if m.first_ms < cutoff_ms
                    && let Ok(rows) = self.chunk_rows(&m).map_err(e)?
                {
                    let keep = rows.iter().position(|r| r.time_ms >= cutoff_ms);
                    if let Some(keep) = keep {
                        cut.push((m, rows[keep..].to_vec()));
                    }
                }
            }
        }
        let tx = self.conn.transaction().map_err(e)?;
        let mut n = 0;
        for (m, keep) in cut {
            n += (m.n as usize).saturating_sub(keep.len());
            tx.execute(
                "UPDATE sample_chunks SET first_seq = ?2, first_ms = ?3, n = ?4, data = ?5
                 WHERE id = ?1",
                params![
                    m.id,
                    keep[0].seq as i64,
                    keep.iter().map(|r| r.time_ms).min().unwrap_or(m.first_ms) as i64,
                    keep.len() as i64,
                    chunk::encode(&keep)
                ],
            )
            .map_err(e)?;
        }
        for (inst, keep_from) in bounds {
            n += tx
                .execute(
                    "DELETE FROM samples WHERE instance = ?1 AND seq < ?2",
                    params![inst, keep_from as i64],
                )
                .map_err(e)?;
        }
        if self.chunks {
            let gone: i64 = tx
                .query_row(
                    "SELECT COALESCE(SUM(n), 0) FROM sample_chunks WHERE last_ms < ?1",
                    [cutoff_ms as i64],
                    |r| r.get(0),
                )
                .map_err(e)?;
            tx.execute(
                "DELETE FROM sample_chunks WHERE last_ms < ?1",
                [cutoff_ms as i64],
            )
            .map_err(e)?;
            n += gone as usize;
        }
        if self.tiers {
            n += tiers::apply_retention(&tx, rollup::MINUTE_MS, cuts.minute_ms).map_err(e)?;
            n += tiers::apply_retention(&tx, rollup::HOUR_MS, cuts.hour_ms).map_err(e)?;
        }
        n += tx
            .execute(
                "DELETE FROM events WHERE time_ms < ?1 AND kind IN (?2, ?3)",
                params![cutoff_ms as i64, RAW_EVENT_KINDS[0], RAW_EVENT_KINDS[1]],
            )
            .map_err(e)?;
        n += tx
            .execute(
                "DELETE FROM events WHERE time_ms < ?1",
                [cuts.minute_ms as i64],
            )
            .map_err(e)?;
        n += tx
            .execute("DELETE FROM gaps WHERE to_ms < ?1", [cuts.hour_ms as i64])
            .map_err(e)?;
        // Instances with nothing left and older than the cutoff; keep the newest of each host
        // (it is the resume point).
        let with_rollups = if self.tiers {
            " AND NOT EXISTS (SELECT 1 FROM rollups r WHERE r.instance = instances.id)"
        } else {
            ""
        };
        n += tx
            .execute(
                &format!(
                    "DELETE FROM instances WHERE last_ms < ?1
                   AND id NOT IN (SELECT MAX(id) FROM instances GROUP BY host)
                   AND NOT EXISTS (SELECT 1 FROM samples s WHERE s.instance = instances.id)
                   AND NOT EXISTS (SELECT 1 FROM sample_chunks c WHERE c.instance = instances.id)
                   AND NOT EXISTS (SELECT 1 FROM events v WHERE v.instance = instances.id)
                   AND NOT EXISTS (SELECT 1 FROM gaps g WHERE g.instance = instances.id){with_rollups}"
                ),
                [cutoff_ms.min(cuts.minute_ms) as i64],
            )
            .map_err(e)?;
        // The clock offsets of the instances gone with them.
        tx.execute_batch(CLOCK_TABLE).map_err(e)?;
        tx.execute(
            "DELETE FROM clock_offsets WHERE instance NOT IN (SELECT id FROM instances)",
            [],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(n)
    }

    /// Keeps the clock offset of `instance` measured now if it is more precise than the one
    /// stored, or that one is stale ([`CLOCK_STALE_MS`]).
    pub fn note_clock(
        &mut self,
        instance: i64,
        c: nasprobe_analysis::ClockOffset,
    ) -> Result<(), StoreError> {
        let e = |e| classify(&self.path, e);
        self.conn.execute_batch(CLOCK_TABLE).map_err(e)?;
        self.conn
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

    /// The stored clock offsets by instance row (none when no collector wrote one yet).
    fn clock_offsets(&self) -> rusqlite::Result<HashMap<i64, nasprobe_analysis::ClockOffset>> {
        let exists: bool = self.conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'clock_offsets')",
            [],
            |r| r.get(0),
        )?;
        if !exists {
            return Ok(HashMap::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT instance, offset_ms, precision_ms FROM clock_offsets")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                nasprobe_analysis::ClockOffset {
                    offset_ms: r.get(1)?,
                    precision_ms: r.get::<_, i64>(2)?.max(0) as u64,
                },
            ))
        })?;
        rows.collect()
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }
}

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

/// Export cursors and reads for the exporters (`record --export-vm`, `serve --metrics`).
/// Cursors are written only after the target answered 2xx, so an unreachable target makes
/// records wait here.
impl Store {
    /// Every agent instance with its host name and decoded `Hello`, oldest first.
    pub fn export_instances(&self) -> Result<Vec<ExportInstance>, StoreError> {
        let e = |e| self.err(e);
        let mut out = Vec::new();
        for (name, _addr, _host, raw) in self.instances().map_err(e)? {
            let mut hello: Hello =
                postcard::from_bytes(&raw.hello).map_err(|_| StoreError::Decode {
                    path: self.path.clone(),
                    what: "hello",
                })?;
            nasprobe_proto::sanitize::hello(&mut hello);
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

    /// Moves cursors of `target` forward (never back) in one transaction.
    pub(crate) fn set_export_cursor(
        &mut self,
        target: &str,
        cursors: &[(i64, ExportCursor)],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |e| classify(&path, e);
        let now = now_ms() as i64;
        let tx = self.conn.transaction().map_err(e)?;
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
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, time_ms, body FROM samples WHERE instance = ?1
                 ORDER BY seq DESC LIMIT 1",
            )
            .map_err(e)?;
        let mut out: Vec<(String, ExportRecord)> = Vec::new();
        for (name, _addr, _host, raw) in self.instances().map_err(e)? {
            let row: Option<(i64, i64, Vec<u8>)> = stmt
                .query_row([raw.row], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
                .map_err(e)?;
            let row = match row {
                Some(r) => Some(r),
                // Nothing raw: the last sample of the newest chunk that decodes.
                None => self
                    .chunk_metas(raw.row, None, None)
                    .map_err(e)?
                    .iter()
                    .rev()
                    .find_map(|m| {
                        let rows = self.chunk_rows(m).ok()?.ok()?;
                        let r = rows.into_iter().next_back()?;
                        Some((r.seq as i64, r.time_ms as i64, r.body))
                    }),
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

    /// Events stored per host and kind (for the `nasprobe_events_total` counter).
    pub(crate) fn event_counts(&self) -> Result<Vec<(String, String, u64)>, StoreError> {
        let e = |e| self.err(e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT h.name, v.kind, COUNT(*) FROM events v
                 JOIN instances i ON i.id = v.instance JOIN hosts h ON h.id = i.host
                 GROUP BY h.name, v.kind ORDER BY h.name, v.kind",
            )
            .map_err(e)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
            })
            .map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }
}

/// A stored body decoded exactly: every byte used (a row with bytes appended is corrupt too).
pub(crate) fn decode_exact<T: serde::de::DeserializeOwned>(b: &[u8]) -> Option<T> {
    postcard::take_from_bytes::<T>(b)
        .ok()
        .filter(|(_, rest)| rest.is_empty())
        .map(|(v, _)| v)
}

/// The gap that stands for a stored row that does not decode (skipped by reads).
fn corrupt_gap(host: &str, seq: u64, time_ms: u64, what: &str, samples: u64) -> GapInfo {
    log::warn!("stored {what} seq {seq} of {host} does not decode (corrupt row); skipped");
    GapInfo {
        from_ms: time_ms,
        to_ms: time_ms,
        samples: Some(samples),
        reason: nasprobe_analysis::report::undecodable_reason(what, seq),
    }
}

/// One record of [`Store::walk`].
pub enum Walked<'a> {
    Sample {
        host: &'a str,
        /// The agent instance's row.
        instance: i64,
        /// Its instance's `Hello` (disk and NIC names).
        hello: &'a Hello,
        seq: u64,
        time_ms: u64,
        /// None: the stored body does not decode.
        sample: Option<&'a Sample>,
    },
    Event {
        host: &'a str,
        instance: i64,
        seq: u64,
        time_ms: u64,
        event: &'a Event,
    },
}

/// What [`Store::each_sample`] hands over: a sample, or a damaged chunk with why.
type StoredSample<'a> = Result<Row, (&'a ChunkMeta, ChunkError)>;

/// What [`Store::each_step`] hands over: a merged step, a damaged chunk or rollup row (what,
/// and its first seq, last seq, first ms, last ms, samples or steps), or one stored body that
/// does not decode (seq, time).
enum Step {
    Merged(Box<Merged>),
    Damaged(&'static str, (u64, u64, u64, u64, u64)),
    Corrupt(u64, u64),
}

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

struct InstanceRaw {
    row: i64,
    instance_id: u64,
    last_seq: u64,
    hello: Vec<u8>,
}

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

/// A flood's dropped events: merged into the flood gap of the last minute, else a new one.
fn insert_flood_gap(
    tx: &rusqlite::Transaction<'_>,
    instance: i64,
    (from_seq, to_seq): (u64, u64),
    (from_ms, to_ms): (u64, u64),
) -> rusqlite::Result<()> {
    let n = to_seq - from_seq + 1;
    let merged = tx.execute(
        "UPDATE gaps SET to_seq = ?2, to_ms = MAX(to_ms, ?3), samples = samples + ?4
         WHERE id = (SELECT id FROM gaps WHERE instance = ?1 AND reason = ?5
                     AND to_seq < ?6 AND to_ms >= ?7
                     ORDER BY to_seq DESC LIMIT 1)",
        params![
            instance,
            to_seq as i64,
            to_ms as i64,
            n as i64,
            REASON_FLOOD,
            from_seq as i64,
            from_ms.saturating_sub(60_000) as i64
        ],
    )?;
    if merged == 0 {
        insert_gap(
            tx,
            instance,
            (from_seq, to_seq),
            (from_ms, to_ms),
            n,
            REASON_FLOOD,
        )?;
    }
    Ok(())
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
fn fold_instance(
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

/// The migration to chunks: folds the closed windows of every instance.
fn fold_all(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let ids: Vec<i64> = tx
        .prepare("SELECT id FROM instances")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in ids {
        fold_instance(tx, id, None, false)?;
    }
    Ok(())
}

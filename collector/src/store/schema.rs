//! The schema: its migrations (version N is reached by applying the first N) and opening a file
//! at a given version. (The clock offsets' table is kept apart from them: see `write`.)

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;

use super::base::{Store, StoreError, StoreReader, classify};
use super::tiers;
use super::write::fold_instance;

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
    // 6: alerts and their notifications still to deliver (`crate::alerts`).
    crate::alerts::base::SCHEMA,
    // 7: per export target and host, what a receiver refused for good (a 4xx answer to a remote
    // write: not retried) and its last message (`export::vm`, shown by `nasprobe hosts list`).
    "CREATE TABLE IF NOT EXISTS export_unsent(
        target TEXT NOT NULL,
        host TEXT NOT NULL,
        samples INTEGER NOT NULL DEFAULT 0,
        events INTEGER NOT NULL DEFAULT 0,
        points INTEGER NOT NULL DEFAULT 0,
        last_error TEXT NOT NULL DEFAULT '',
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY(target, host)
     ) WITHOUT ROWID;",
    // 8: the readers' indexes by time within an instance (issue 38). Without them a window's
    // events were found by filtering every event the instance ever stored (the primary key's
    // `instance` prefix), its chunks and rollups likewise: `record`'s alert task cost grew with
    // the store's age. `event_counts` (kept by the two triggers, so every insert and delete of
    // an event counts, whoever makes it) answers the scrape's events per kind without counting
    // every stored event. A reader of schema 7 reads the same tables, slower.
    "CREATE INDEX IF NOT EXISTS events_by_time ON events(instance, time_ms);
     CREATE INDEX IF NOT EXISTS events_by_kind ON events(instance, kind, time_ms);
     CREATE INDEX IF NOT EXISTS sample_chunks_by_time ON sample_chunks(instance, last_ms);
     CREATE INDEX IF NOT EXISTS rollups_by_last ON rollups(instance, step_ms, last_ms);
     CREATE TABLE IF NOT EXISTS event_counts(
        instance INTEGER NOT NULL,
        kind TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY(instance, kind)
     ) WITHOUT ROWID;
     INSERT INTO event_counts(instance, kind, n)
        SELECT instance, kind, COUNT(*) FROM events GROUP BY instance, kind;
     CREATE TRIGGER IF NOT EXISTS events_counted AFTER INSERT ON events BEGIN
        INSERT INTO event_counts(instance, kind, n) VALUES (NEW.instance, NEW.kind, 1)
        ON CONFLICT(instance, kind) DO UPDATE SET n = n + 1;
     END;
     CREATE TRIGGER IF NOT EXISTS events_uncounted AFTER DELETE ON events BEGIN
        UPDATE event_counts SET n = n - 1 WHERE instance = OLD.instance AND kind = OLD.kind;
     END;",
];

/// The first schema with `sample_chunks`: below it, samples stay raw rows.
pub(super) const CHUNKS_SINCE: i64 = 4;
/// The first schema with the rollup tiers: below it, reports merge raw samples while reading.
pub(super) const TIERS_SINCE: i64 = 5;
/// The oldest schema a read-only reader takes as it is: schema 8 adds indexes and the
/// `event_counts` table only, so a store `record` has not migrated yet is still read (its
/// queries are slower; `event_counts` falls back to counting).
pub(super) const READABLE_SINCE: i64 = 7;
/// The newest schema this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

impl Store {
    /// [`Store::open`] bringing the schema only up to `version`.
    pub(super) fn open_to(path: &Path, version: i64) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private::create_dirs(dir).map_err(|source| StoreError::Dir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        // Created 0600 before SQLite opens it (its -wal and -shm files follow its mode).
        crate::private::touch(path).map_err(|source| StoreError::Dir {
            path: path.to_path_buf(),
            source,
        })?;
        let conn = Connection::open(path).map_err(|e| classify(path, e))?;
        let mut s = Store {
            reader: StoreReader {
                conn,
                path: path.to_path_buf(),
                chunks: false,
                tiers: false,
            },
            open_gaps: HashMap::new(),
            chunk_hw: HashMap::new(),
        };
        s.setup().map_err(|e| s.err(e))?;
        s.migrate_to(version)?;
        Ok(s)
    }

    /// Applies migrations up to `target` (tests use it to build old files).
    pub fn migrate_to(&mut self, target: i64) -> Result<(), StoreError> {
        let found = self.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.reader.path.clone(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        for v in found + 1..=target {
            let tx = self
                .reader
                .conn
                .transaction()
                .map_err(|e| classify(&self.reader.path, e))?;
            tx.execute_batch(MIGRATIONS[(v - 1) as usize])
                .and_then(|_| match v {
                    CHUNKS_SINCE => fold_all(&tx),
                    TIERS_SINCE => {
                        log::info!(
                            "database {}: building its rollup tiers from its chunks (once; a month of ten hosts takes minutes)",
                            self.reader.path.display()
                        );
                        tiers::build_all(&tx)
                    }
                    _ => Ok(()),
                })
                .and_then(|_| {
                    tx.execute("DELETE FROM schema_version", [])?;
                    tx.execute("INSERT INTO schema_version(version) VALUES (?1)", [v])
                })
                .map_err(|e| classify(&self.reader.path, e))?;
            tx.commit().map_err(|e| classify(&self.reader.path, e))?;
        }
        let version = self.schema_version()?;
        self.reader.chunks = version >= CHUNKS_SINCE;
        self.reader.tiers = version >= TIERS_SINCE;
        Ok(())
    }

    /// Opens (creating if needed) a file and brings it only to schema `version`: tests write
    /// stores of an older nasprobe with it (below schema 4 samples stay raw rows, as then).
    #[cfg(any(test, feature = "testing"))]
    pub fn open_at_schema(path: &Path, version: i64) -> Result<Store, StoreError> {
        Store::open_to(path, version)
    }
}

impl StoreReader {
    /// WAL, a busy timeout, and the schema version's table.
    pub(super) fn setup(&self) -> rusqlite::Result<()> {
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

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
//! The parts: this file opens the store; `base` holds the errors, the handles and the row
//! helpers every reader shares, with `decode_stored`, the one decoder of a stored body; `schema` (migrations), `write`
//! (registration and batches), `read` (`load_window`, `walk`, `summary`), `check`,
//! `retention`, `export_cursor` (the exporters' reads and cursors); `chunk`, `rollup`
//! and `tiers` (the compact forms of samples); [`window`], the bridge to the analysis (a
//! window loaded and analyzed once, as every command reads it).
//!
//! Two handles: [`StoreReader`] (every read: report, check, export, serve, the live verdict)
//! and [`Store`], the writer owned by the store task, which derefs to its reader.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

mod base;
mod check;
pub(crate) mod chunk;
mod export_cursor;
#[cfg(test)]
mod plans;
mod read;
mod retention;
pub(crate) mod rollup;
mod schema;
pub(crate) mod tiers;
pub mod window;
mod write;

use base::classify;
pub(crate) use base::decode_stored;
pub use base::{Gap, REASON_RESTART, REASON_RING, Store, StoreError, StoreReader};
pub use check::InstanceCheck;
pub use export_cursor::{ExportCursor, ExportInstance, ExportRecord, ExportUnsent};
pub use read::{HostSummary, Walked};
pub use retention::{Retention, RetentionCutoffs};
pub use schema::SCHEMA_VERSION;
pub use write::{FloodCounts, Item, Registration};

/// Where the database goes when `--db` is not given: `$XDG_DATA_HOME/nasprobe/nasprobe.db`.
pub(crate) fn default_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("nasprobe")
        .join("nasprobe.db")
}

impl Store {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_to(path, SCHEMA_VERSION)
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
            if found < schema::READABLE_SINCE {
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
}

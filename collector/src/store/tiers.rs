//! The stored rollup tiers: per agent instance, 1-minute steps written as each 15-minute chunk
//! closes and 1-hour steps as each hour closes ([`super::rollup`] merges them), kept in
//! `rollups` rows encoded as chunks are ([`super::chunk`]), read by reports over long windows
//! and deleted by their own retention.
//!
//! A row covers the raw seqs `first_seq..=last_seq` of one instance; each of its entries is one
//! merged step: the seq and agent time of the step's last sample and the merged sample's
//! postcard body. Minute rows never straddle a chunk window, hour rows never straddle a day.

use nasprobe_proto::Sample;
use rusqlite::{Connection, params};

use super::base::decode_stored;
use super::chunk::{self, ChunkError, Row};
use super::rollup::{self, HOUR_MS, MINUTE_MS, Merger};

/// The table (schema 5, see `store::MIGRATIONS`).
pub(crate) const TABLE: &str = "CREATE TABLE IF NOT EXISTS rollups(
        id INTEGER PRIMARY KEY,
        instance INTEGER NOT NULL,
        step_ms INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        first_ms INTEGER NOT NULL,
        last_ms INTEGER NOT NULL,
        n INTEGER NOT NULL,
        data BLOB NOT NULL
     );
     CREATE INDEX IF NOT EXISTS rollups_by_seq ON rollups(instance, step_ms, first_seq);
     CREATE INDEX IF NOT EXISTS rollups_by_time ON rollups(step_ms, last_ms);";

/// The rows of one tier of an instance meeting `[?3, ?4]`, through `rollups_by_last`: a row
/// lies in one window of its span (a chunk's for minutes, a day for hours), so one that starts
/// by ?4 ends before ?5 = ?4 + that span, and the index range is bounded on both sides.
pub(super) const ROWS_IN_WINDOW: &str =
    "SELECT id, first_seq, last_seq, first_ms, last_ms, n FROM rollups
     WHERE instance = ?1 AND step_ms = ?2 AND last_ms BETWEEN ?3 AND ?5 AND first_ms <= ?4
     ORDER BY first_seq";
/// Hour rows hold at most a day of steps.
const DAY_MS: u64 = 24 * HOUR_MS;

/// A `rollups` row without its data.
#[derive(Debug, Clone)]
pub(crate) struct TierMeta {
    pub id: i64,
    /// Raw seqs covered.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Times of the first and last step.
    pub first_ms: u64,
    pub last_ms: u64,
    /// Steps inside.
    pub n: u64,
}

/// Merges `samples` (seq, time, sample; in seq order) into steps of `step_ms` and writes them
/// as rows of that tier, a new row whenever `span_ms` (the row's time span) changes.
fn put(
    tx: &Connection,
    instance: i64,
    step_ms: u64,
    span_ms: u64,
    samples: impl Iterator<Item = (u64, u64, Sample)>,
    covered: (u64, u64),
) -> rusqlite::Result<()> {
    let mut ins = tx.prepare_cached(
        "INSERT INTO rollups(instance, step_ms, first_seq, last_seq, first_ms, last_ms, n, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut rows: Vec<Row> = Vec::new();
    let mut first_seq = covered.0;
    let mut flush = |rows: &mut Vec<Row>, first_seq: u64, last_seq: u64| -> rusqlite::Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let (lo, hi) = rows.iter().fold((u64::MAX, 0), |(lo, hi), r| {
            (lo.min(r.time_ms), hi.max(r.time_ms))
        });
        ins.execute(params![
            instance,
            step_ms as i64,
            first_seq as i64,
            last_seq as i64,
            lo as i64,
            hi as i64,
            rows.len() as i64,
            chunk::encode(rows)
        ])?;
        rows.clear();
        Ok(())
    };
    let mut merger = Merger::new(step_ms);
    let mut to_row = |m: rollup::Merged, rows: &mut Vec<Row>, first_seq: &mut u64| {
        if rows
            .last()
            .is_some_and(|r| r.time_ms / span_ms != m.last_ms / span_ms)
        {
            let last = rows.last().map_or(*first_seq, |r| r.seq);
            flush(rows, *first_seq, last)?;
            *first_seq = last + 1;
        }
        rows.push(Row {
            seq: m.last_seq,
            time_ms: m.last_ms,
            body: postcard::to_allocvec(&m.sample).expect("a Sample encodes"),
        });
        Ok::<_, rusqlite::Error>(())
    };
    for (seq, time_ms, s) in samples {
        if let Some(m) = merger.push(seq, time_ms, &s) {
            to_row(m, &mut rows, &mut first_seq)?;
        }
    }
    if let Some(m) = merger.finish() {
        to_row(m, &mut rows, &mut first_seq)?;
    }
    flush(&mut rows, first_seq, covered.1.max(first_seq))
}

/// Writes the minute steps of one closed chunk's rows (a body that does not decode is left
/// out: the raw chunk still holds it, and `check` names it).
pub(crate) fn put_minutes(tx: &Connection, instance: i64, rows: &[Row]) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(());
    };
    let samples = rows
        .iter()
        .filter_map(|r| Some((r.seq, r.time_ms, decode_stored::<Sample>(&r.body)?)));
    put(
        tx,
        instance,
        MINUTE_MS,
        chunk::SPAN_MS,
        samples,
        (first.seq, last.seq),
    )
}

/// Highest raw seq a row of tier `step_ms` of `instance` covers (0: none).
fn high_water(tx: &Connection, instance: i64, step_ms: u64) -> rusqlite::Result<u64> {
    tx.prepare_cached(
        "SELECT COALESCE(MAX(last_seq), 0) FROM rollups WHERE instance = ?1 AND step_ms = ?2",
    )?
    .query_row(params![instance, step_ms as i64], |r| r.get::<_, i64>(0))
    .map(|v| v as u64)
}

/// Writes the hour steps of every hour of `instance` that ends at or before `closed_ms` and has
/// minute rows no hour row covers yet.
pub(crate) fn close_hours(tx: &Connection, instance: i64, closed_ms: u64) -> rusqlite::Result<()> {
    let end = closed_ms / HOUR_MS * HOUR_MS;
    let after = high_water(tx, instance, HOUR_MS)?;
    let minutes = metas_after(tx, instance, MINUTE_MS, after, end)?;
    let (Some(first), Some(last)) = (minutes.first(), minutes.last()) else {
        return Ok(());
    };
    let covered = (first.first_seq, last.last_seq);
    let mut steps = Vec::new();
    for m in &minutes {
        // A damaged minute row is left out of its hour.
        if let Ok(rows) = rows(tx, m)? {
            steps.extend(
                rows.into_iter()
                    .filter_map(|r| Some((r.seq, r.time_ms, decode_stored::<Sample>(&r.body)?))),
            );
        }
    }
    put(tx, instance, HOUR_MS, DAY_MS, steps.into_iter(), covered)
}

/// Builds both tiers of every instance from its chunks (the migration to schema 5).
pub(crate) fn build_all(tx: &Connection) -> rusqlite::Result<()> {
    let ids: Vec<i64> = tx
        .prepare("SELECT id FROM instances")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in ids {
        let chunks: Vec<(Vec<u8>, u64)> = tx
            .prepare(
                "SELECT data, last_ms FROM sample_chunks WHERE instance = ?1 ORDER BY first_seq",
            )?
            .query_map([id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
            .collect::<Result<_, _>>()?;
        let mut closed = 0;
        for (data, last_ms) in chunks {
            // A damaged chunk gets no rollups; reading it names it as before.
            if let Ok(rows) = chunk::decode(&data) {
                put_minutes(tx, id, &rows)?;
            }
            closed = closed.max((chunk::window(last_ms) + 1) * chunk::SPAN_MS);
        }
        // The hours whose every window is folded: up to the oldest raw row's window.
        let open: Option<i64> = tx
            .prepare("SELECT MIN(time_ms) FROM samples WHERE instance = ?1")?
            .query_row([id], |r| r.get(0))?;
        let closed = open.map_or(closed, |t| chunk::window(t as u64) * chunk::SPAN_MS);
        close_hours(tx, id, closed)?;
    }
    Ok(())
}

/// Rows of tier `step_ms` of `instance` whose steps meet `[from, to]`, in seq order.
pub(crate) fn metas(
    c: &Connection,
    instance: i64,
    step_ms: u64,
    from: Option<u64>,
    to: Option<u64>,
) -> rusqlite::Result<Vec<TierMeta>> {
    let mut stmt = c.prepare_cached(ROWS_IN_WINDOW)?;
    let to = to.map_or(i64::MAX, |t| t as i64);
    let row_span = if step_ms == MINUTE_MS {
        chunk::SPAN_MS
    } else {
        DAY_MS
    };
    let rows = stmt.query_map(
        params![
            instance,
            step_ms as i64,
            from.unwrap_or(0) as i64,
            to,
            to.saturating_add(row_span as i64)
        ],
        meta,
    )?;
    rows.collect()
}

/// Rows of tier `step_ms` of `instance` covering seqs after `after_seq`, with their steps
/// before `before_ms`, in seq order.
fn metas_after(
    c: &Connection,
    instance: i64,
    step_ms: u64,
    after_seq: u64,
    before_ms: u64,
) -> rusqlite::Result<Vec<TierMeta>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, first_seq, last_seq, first_ms, last_ms, n FROM rollups
         WHERE instance = ?1 AND step_ms = ?2 AND first_seq > ?3 AND last_ms < ?4
         ORDER BY first_seq",
    )?;
    let rows = stmt.query_map(
        params![instance, step_ms as i64, after_seq as i64, before_ms as i64],
        meta,
    )?;
    rows.collect()
}

fn meta(r: &rusqlite::Row<'_>) -> rusqlite::Result<TierMeta> {
    Ok(TierMeta {
        id: r.get(0)?,
        first_seq: r.get::<_, i64>(1)? as u64,
        last_seq: r.get::<_, i64>(2)? as u64,
        first_ms: r.get::<_, i64>(3)? as u64,
        last_ms: r.get::<_, i64>(4)? as u64,
        n: r.get::<_, i64>(5)? as u64,
    })
}

/// The steps of one row, decoded (the outer error: SQLite; the inner: a damaged row).
pub(crate) fn rows(c: &Connection, m: &TierMeta) -> rusqlite::Result<Result<Vec<Row>, ChunkError>> {
    let data: Vec<u8> = c
        .prepare_cached("SELECT data FROM rollups WHERE id = ?1")?
        .query_row([m.id], |r| r.get(0))?;
    Ok(chunk::decode(&data).and_then(|rows| {
        if rows.len() as u64 == m.n
            && rows.first().is_some_and(|r| r.seq >= m.first_seq)
            && rows.last().is_some_and(|r| r.seq <= m.last_seq)
        {
            Ok(rows)
        } else {
            Err(ChunkError::Malformed(0))
        }
    }))
}

/// Deletes the rows of tier `step_ms` whose newest step is older than `cutoff_ms`; returns how
/// many steps went.
pub(crate) fn apply_retention(
    tx: &Connection,
    step_ms: u64,
    cutoff_ms: u64,
) -> rusqlite::Result<usize> {
    let gone: i64 = tx.query_row(
        "SELECT COALESCE(SUM(n), 0) FROM rollups WHERE step_ms = ?1 AND last_ms < ?2",
        params![step_ms as i64, cutoff_ms as i64],
        |r| r.get(0),
    )?;
    tx.execute(
        "DELETE FROM rollups WHERE step_ms = ?1 AND last_ms < ?2",
        params![step_ms as i64, cutoff_ms as i64],
    )?;
    Ok(gone as usize)
}

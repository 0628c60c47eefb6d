//! Retention: how long each tier is kept (`--retention`) and the deletion of what is older.

use nasprobe_proto::Event;
use rusqlite::params;

use super::base::{ChunkMeta, Store, StoreError, classify};
use super::chunk::{self, Row};
use super::rollup;
use super::tiers;
use super::write::CLOCK_TABLE;

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

impl Store {
    /// Deletes each tier's records older than its cutoff; returns the number of samples, steps
    /// and rows deleted.
    pub fn apply_retention(&mut self, cuts: RetentionCutoffs) -> Result<usize, StoreError> {
        let cutoff_ms = cuts.raw_ms;
        let path = self.reader.path.clone();
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
        let tx = self.reader.conn.transaction().map_err(e)?;
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
        if self.reader.chunks {
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
        if self.reader.tiers {
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
        let with_rollups = if self.reader.tiers {
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
}

//! `nasprobe check`: every instance's stored sequence numbers against its recorded gaps, and
//! every stored row decoded and re-checked as the collector checks what it receives.

use nasprobe_proto::time::now_ms;
use nasprobe_proto::{Event, Hello, Sample};

use super::base::{InstanceRaw, StoreError, StoreReader, decode_stored};
use super::rollup;
use super::tiers;
use crate::net::validate;

/// Result of [`StoreReader::check`] for one agent instance.
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

impl StoreReader {
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
        let e = |e| self.err(e);
        let mut bad = Vec::new();
        let Some(hello) = decode_stored::<Hello>(&raw.hello) else {
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
            let why = match decode_stored::<Event>(&body) {
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
            let why = match decode_stored::<Sample>(&r.body) {
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
                            .all(|r| decode_stored::<Sample>(&r.body).is_some())
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
}

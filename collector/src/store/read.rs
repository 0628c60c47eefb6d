//! Reading: every reader's way through the chunks, rollups and raw rows — the analysis' window
//! ([`StoreReader::load_window_at`], raw or merged into steps), the streaming [`StoreReader::walk`] of the
//! exporters, and [`StoreReader::summary`] (counts only).

use std::collections::HashMap;

use nasprobe_analysis::{GapInfo, HostData, Instance, TimedEvent, TimedSample};
use nasprobe_proto::{Event, Hello, Sample};
use rusqlite::{OptionalExtension, params};

use super::base::{Gap, InstanceRaw, StoreError, StoreReader, decode_stored};
use super::chunk::Row;
use super::rollup::{self, Merged, Merger};
use super::tiers;

/// The events of one instance in a time window (`walk`, the analysis' window): found through
/// `events_by_time`, bounded by the window whatever the store's age.
pub(super) const EVENTS_IN_WINDOW: &str = "SELECT seq, time_ms, CAST(body AS BLOB) FROM events
     WHERE instance = ?1 AND time_ms BETWEEN ?2 AND ?3 ORDER BY seq";
/// The newest event of one kind of one instance before a time (`events_by_kind`).
pub(super) const LAST_OF_KIND_BEFORE: &str = "SELECT seq, time_ms, CAST(body AS BLOB) FROM events
     WHERE instance = ?1 AND kind = ?2 AND time_ms < ?3 ORDER BY time_ms DESC LIMIT 1";
/// Events of one instance in a time window, counted in `events_by_time` alone.
pub(super) const EVENTS_COUNT_IN_WINDOW: &str =
    "SELECT COUNT(*) FROM events WHERE instance = ?1 AND time_ms BETWEEN ?2 AND ?3";
/// The raw samples of one instance in a seq range, counted (the primary key).
pub(super) const SAMPLES_COUNT_IN_SEQS: &str =
    "SELECT COUNT(*), MIN(time_ms), MAX(time_ms) FROM samples
     WHERE instance = ?1 AND seq BETWEEN ?2 AND ?3";

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

impl StoreReader {
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
        let mut events = self.conn.prepare(EVENTS_IN_WINDOW).map_err(e)?;
        for (name, _address, _host, raw) in self.instances().map_err(e)? {
            if !hosts.is_empty() && !hosts.contains(&name) {
                continue;
            }
            let Some(hello) = decode_stored::<Hello>(&raw.hello) else {
                log::warn!(
                    "the stored Hello of {name} instance {:x} does not decode; its records are skipped",
                    raw.instance_id
                );
                continue;
            };
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
                    match decode_stored::<Event>(&body) {
                        Some(ev) => return Ok(Some((seq as u64, time_ms as u64, ev))),
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
                let sample = decode_stored::<Sample>(&r.body);
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
                                match decode_stored::<Sample>(&r.body) {
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
            Ok(r) => match decode_stored::<Sample>(&r.body) {
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

    /// [`StoreReader::load_window`] with the samples of each instance merged into one per
    /// `resolution_ms` step of their times (`rollup`; None: raw samples). Only the
    /// merged samples are kept: memory follows the steps, not the samples.
    pub fn load_window_at(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        resolution_ms: Option<u64>,
    ) -> Result<Vec<HostData>, StoreError> {
        self.in_read_tx(|| self.load_window_in(from_ms, to_ms, resolution_ms))
    }

    /// [`StoreReader::load_window_at`]'s queries (in its read transaction).
    fn load_window_in(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        resolution_ms: Option<u64>,
    ) -> Result<Vec<HostData>, StoreError> {
        let e = |e| self.err(e);
        let mut out: Vec<HostData> = Vec::new();
        let gaps = self.gaps(from_ms, to_ms).map_err(e)?;
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
            let at = Among {
                name: &name,
                row: raw.row,
                idx: w.instances.len(),
                from_ms,
                to_ms,
            };
            let mut any = self.window_samples(&at, resolution_ms, w)?;
            any |= self.window_events(&at, w)?;
            if any {
                w.events.extend(self.shaping_before(&at)?);
            }
            if any || host_gaps.iter().any(|g| g.instance_id == raw.instance_id) {
                window_instance(&at, &raw, clocks.get(&raw.row).copied(), w);
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

    /// The samples of one instance in the window into `w`: raw (still encoded, the analysis
    /// decodes each once) or merged into `resolution_ms` steps; what does not decode becomes a
    /// gap naming it. Returns whether any sample was kept.
    fn window_samples(
        &self,
        at: &Among<'_>,
        resolution_ms: Option<u64>,
        w: &mut HostData,
    ) -> Result<bool, StoreError> {
        let (name, idx) = (at.name, at.idx);
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
        let (from_ms, to_ms) = (at.from_ms, at.to_ms);
        if let Some(res) = resolution_ms {
            self.each_step(at.row, from_ms, to_ms, res, &mut |got| match got {
                Step::Merged(m) => {
                    any = true;
                    push(*m, w);
                }
                Step::Damaged(what, m) => undecodable(what, m, w),
                Step::Corrupt(seq, time_ms) => {
                    w.gaps.push(corrupt_gap(name, seq, time_ms, "sample", 1))
                }
            })?;
        } else {
            self.each_sample(at.row, from_ms, to_ms, 0, &mut |got| {
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
                    w.gaps.push(corrupt_gap(name, seq, time_ms, "sample", 1));
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
        Ok(any)
    }

    /// The last traffic-control caps the instance sent before the window: they hold until its
    /// next `Shaping`, which may be an hour later.
    fn shaping_before(&self, at: &Among<'_>) -> Result<Option<TimedEvent>, StoreError> {
        let e = |e| self.err(e);
        let Some(from) = at.from_ms.filter(|&f| f > 0) else {
            return Ok(None);
        };
        let row = self
            .conn
            .prepare_cached(LAST_OF_KIND_BEFORE)
            .map_err(e)?
            .query_row(params![at.row, Event::KIND_SHAPING, from as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .optional()
            .map_err(e)?;
        Ok(row.and_then(|(seq, time_ms, body)| {
            TimedEvent::from_body(time_ms as u64, at.idx, seq as u64, body)
        }))
    }

    /// The events of one instance in the window into `w` (a body that does not decode: a gap
    /// naming it). Returns whether any event was kept.
    fn window_events(&self, at: &Among<'_>, w: &mut HostData) -> Result<bool, StoreError> {
        let e = |e| self.err(e);
        let mut stmt = self.conn.prepare_cached(EVENTS_IN_WINDOW).map_err(e)?;
        let rows = stmt
            .query_map(
                params![
                    at.row,
                    at.from_ms.unwrap_or(0) as i64,
                    at.to_ms.map_or(i64::MAX, |t| t as i64)
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
        let mut any = false;
        for row in rows {
            let (seq, time_ms, body) = row.map_err(e)?;
            let Some(event) = TimedEvent::from_body(time_ms as u64, at.idx, seq as u64, body)
            else {
                w.gaps
                    .push(corrupt_gap(at.name, seq as u64, time_ms as u64, "event", 0));
                continue;
            };
            w.events.push(event);
            any = true;
        }
        Ok(any)
    }

    /// Counts per host over `[from_ms, to_ms]` without decoding anything, in one read
    /// transaction.
    pub fn summary(
        &self,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
    ) -> Result<Vec<HostSummary>, StoreError> {
        self.in_read_tx(|| self.summary_in(from_ms, to_ms))
    }

    fn summary_in(
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
                    .prepare_cached(SAMPLES_COUNT_IN_SEQS)
                    .and_then(|mut q| {
                        q.query_row(params![raw.row, lo as i64, hi as i64], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                        })
                    })
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
                .prepare_cached(EVENTS_COUNT_IN_WINDOW)
                .and_then(|mut q| {
                    q.query_row(
                        params![
                            raw.row,
                            from_ms.unwrap_or(0) as i64,
                            to_ms.map_or(i64::MAX, |t| t as i64)
                        ],
                        |r| r.get(0),
                    )
                })
                .map_err(e)?;
            s.events += ev as u64;
        }
        Ok(out)
    }

    /// The stored clock offsets by instance row (none when no collector wrote one yet).
    pub(super) fn clock_offsets(
        &self,
    ) -> rusqlite::Result<HashMap<i64, nasprobe_analysis::ClockOffset>> {
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
}

/// One agent instance of a host in the window [`StoreReader::load_window_at`] reads.
struct Among<'a> {
    /// The host's name.
    name: &'a str,
    /// The instance's row.
    row: i64,
    /// Its index among the host's instances (`HostData::instances`).
    idx: usize,
    from_ms: Option<u64>,
    to_ms: Option<u64>,
}

/// Adds the instance that has records (or gaps) in the window to `w` with its `Hello`; without
/// its `Hello` nothing of the instance can be read: its records are taken out and one gap says
/// so.
fn window_instance(
    at: &Among<'_>,
    raw: &InstanceRaw,
    clock: Option<nasprobe_analysis::ClockOffset>,
    w: &mut HostData,
) {
    let (name, idx) = (at.name, at.idx);
    let Some(hello) = decode_stored::<Hello>(&raw.hello) else {
        w.samples.retain(|s| s.instance != idx);
        w.events.retain(|s| s.instance != idx);
        log::warn!(
            "the stored Hello of {name} instance {:x} does not decode",
            raw.instance_id
        );
        let from = at.from_ms.unwrap_or(0);
        w.gaps.push(GapInfo {
            from_ms: from,
            to_ms: at.to_ms.unwrap_or(from).max(from),
            samples: None,
            reason: format!(
                "{}: the stored Hello of {name} instance {:x} does not decode; its records are skipped",
                nasprobe_analysis::report::UNDECODABLE_PREFIX,
                raw.instance_id
            ),
        });
        return;
    };
    w.instances.push(Instance {
        id: raw.instance_id,
        hello,
        clock,
    });
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

/// One record of [`StoreReader::walk`].
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

/// What [`StoreReader::each_step`] hands over: a merged step, a damaged chunk or rollup row (what,
/// and its first seq, last seq, first ms, last ms, samples or steps), or one stored body that
/// does not decode (seq, time).
enum Step {
    Merged(Box<Merged>),
    Damaged(&'static str, (u64, u64, u64, u64, u64)),
    Corrupt(u64, u64),
}

//! What the alert engine keeps of the recent records (issue 38): the samples and events of the
//! last [`OBS_WINDOW`], the exits of the last [`EXIT_WINDOW`] and each instance's newest
//! traffic-control caps, fed by the store task's notes ([`super::feed::Note`]) with the bodies
//! it already holds. The store is read at the start and once after the feed overflowed
//! ([`Recent::resync`]), never per evaluation: an evaluation costs what the last seconds hold,
//! whatever the store's age.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use nasprobe_analysis::{HostData, Instance, TimedEvent, TimedSample};
use nasprobe_proto::{ExitStatus, Hello};

use super::feed::Note;
use crate::store::{Item, StoreReader, window};

/// The flow is judged over the last this many seconds (the report's flow over them): short
/// enough that a stall shows within seconds (the report's flow is the median of its active
/// part, so a drop shows once most of the window is after it), long enough for a median of
/// several samples at the agent's default 1 s interval.
pub(crate) const OBS_WINDOW: Duration = Duration::from_secs(5);
/// Exits are looked for over this long (an evaluation late under load, or a death's record
/// arriving a little after its sample, is still seen; each is counted once by its time).
pub(crate) const EXIT_WINDOW: Duration = Duration::from_secs(30);
/// A process exit of the last [`EXIT_WINDOW`], decoded once when it arrived.
#[derive(Debug, Clone)]
pub(crate) struct ExitRec {
    pub host: String,
    /// The record's time (the agent's clock).
    pub time_ms: u64,
    pub pid: u32,
    pub comm: String,
    pub cmdline: String,
    pub lifetime_ms: u64,
    pub status: Option<ExitStatus>,
}

/// One host's recent records.
#[derive(Debug, Default)]
struct HostMem {
    name: String,
    instances: Vec<Instance>,
    samples: VecDeque<TimedSample>,
    events: VecDeque<TimedEvent>,
    /// Per instance index, the newest `Shaping` older than the window (its caps hold until the
    /// next one, as the store's `shaping_before` reads them).
    shaping: HashMap<usize, TimedEvent>,
}

/// The recent records of every host.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    hosts: Vec<HostMem>,
    /// Instance row (as write items carry it) → (host, instance) indices.
    rows: HashMap<i64, (usize, usize)>,
    /// Per instance row, the newest seq taken: a record both read at a resync and fed after it
    /// is taken once.
    seen: HashMap<i64, u64>,
    exits: VecDeque<ExitRec>,
    /// A record of an instance not registered here came: the next turn reads the store.
    pub(crate) stale: bool,
}

impl Recent {
    /// Reads what the store holds of the last [`EXIT_WINDOW`] before `now_ms` (the start, or
    /// after the feed overflowed): everything kept before is dropped.
    pub(crate) fn resync(&mut self, store: &StoreReader, now_ms: u64) -> anyhow::Result<()> {
        *self = Recent::default();
        for k in window::known_instances(store)? {
            self.register(k.row, &k.host, k.instance);
        }
        let from = now_ms.saturating_sub(EXIT_WINDOW.as_millis() as u64);
        for h in store.load_window_at(Some(from), None, None)? {
            // The loaded instances are those with records in the window, by their index there.
            let rows: Vec<Option<i64>> = h
                .instances
                .iter()
                .map(|i| self.row_of(&h.name, i.id))
                .collect();
            let row = |idx: usize| rows.get(idx).copied().flatten();
            for s in h.samples {
                if let Some(r) = row(s.instance) {
                    self.add_sample(r, s.seq, s.time_ms, s.interval_us, s.body);
                }
            }
            for e in h.events {
                if let Some(r) = row(e.instance) {
                    self.add_event(r, e);
                }
            }
        }
        self.prune(now_ms);
        Ok(())
    }

    fn row_of(&self, host: &str, instance_id: u64) -> Option<i64> {
        self.rows.iter().find_map(|(row, &(h, i))| {
            let hm = &self.hosts[h];
            (hm.name == host && hm.instances[i].id == instance_id).then_some(*row)
        })
    }

    fn register(&mut self, row: i64, host: &str, instance: Instance) {
        let h = match self.hosts.iter().position(|m| m.name == host) {
            Some(h) => h,
            None => {
                self.hosts.push(HostMem {
                    name: host.to_string(),
                    ..Default::default()
                });
                self.hosts.len() - 1
            }
        };
        let m = &mut self.hosts[h];
        let i = match m.instances.iter().position(|x| x.id == instance.id) {
            Some(i) => {
                m.instances[i] = instance;
                i
            }
            None => {
                m.instances.push(instance);
                m.instances.len() - 1
            }
        };
        self.rows.insert(row, (h, i));
    }

    /// Whether `seq` of `row` is new (and now taken).
    fn take(&mut self, row: i64, seq: u64) -> bool {
        let last = self.seen.entry(row).or_insert(0);
        if seq <= *last && *last > 0 {
            return false;
        }
        *last = seq;
        true
    }

    fn add_sample(&mut self, row: i64, seq: u64, time_ms: u64, interval_us: u32, body: Vec<u8>) {
        let Some(&(h, i)) = self.rows.get(&row) else {
            self.stale = true;
            return;
        };
        if !self.take(row, seq) {
            return;
        }
        self.hosts[h].samples.push_back(TimedSample {
            time_ms,
            instance: i,
            seq,
            interval_us,
            body,
        });
    }

    /// `e` with the instance index of `row`'s host.
    fn add_event(&mut self, row: i64, mut e: TimedEvent) {
        let Some(&(h, i)) = self.rows.get(&row) else {
            self.stale = true;
            return;
        };
        if !self.take(row, e.seq) {
            return;
        }
        e.instance = i;
        if !e.is_measurement() {
            let ev = e.event();
            if let Some((x, st)) = ev.as_exit() {
                self.exits.push_back(ExitRec {
                    host: self.hosts[h].name.clone(),
                    time_ms: e.time_ms,
                    pid: x.process.pid,
                    comm: x.process.comm.as_str().to_string(),
                    cmdline: x.process.cmdline.as_str().to_string(),
                    lifetime_ms: x.lifetime_ms,
                    status: st.copied(),
                });
            }
        }
        self.hosts[h].events.push_back(e);
    }

    /// Takes one note of the store task.
    pub(crate) fn note(&mut self, n: Note) {
        match n {
            Note::Registered {
                instance,
                host,
                hello,
                clock,
            } => self.register(
                instance,
                &host,
                Instance {
                    id: hello.instance_id,
                    hello: *hello,
                    clock,
                },
            ),
            Note::Committed(items) => {
                for it in items.iter() {
                    match it {
                        Item::Sample {
                            instance,
                            seq,
                            time_ms,
                            body,
                        } => {
                            let Ok(iv) = nasprobe_proto::frame::sample_interval_us(body) else {
                                continue;
                            };
                            self.add_sample(*instance, *seq, *time_ms, iv, body.clone());
                        }
                        Item::Event {
                            instance,
                            seq,
                            time_ms,
                            body,
                            ..
                        } => {
                            if let Some(e) = TimedEvent::from_body(*time_ms, 0, *seq, body.clone())
                            {
                                self.add_event(*instance, e);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Drops what is older than the windows (the newest `Shaping` of each instance is kept).
    pub(crate) fn prune(&mut self, now_ms: u64) {
        let obs_from = now_ms.saturating_sub(OBS_WINDOW.as_millis() as u64);
        let exit_from = now_ms.saturating_sub(EXIT_WINDOW.as_millis() as u64);
        for m in &mut self.hosts {
            m.samples.retain(|s| s.time_ms >= obs_from);
            let mut kept = VecDeque::with_capacity(m.events.len());
            for e in m.events.drain(..) {
                if e.time_ms >= obs_from {
                    kept.push_back(e);
                } else if e.is_shaping()
                    && m.shaping
                        .get(&e.instance)
                        .is_none_or(|s| s.time_ms <= e.time_ms)
                {
                    m.shaping.insert(e.instance, e);
                }
            }
            m.events = kept;
        }
        self.exits.retain(|x| x.time_ms >= exit_from);
    }

    /// How far `host`'s newest instance's clock is ahead of the collector's (ms), when measured.
    pub(crate) fn clock_offset_ms(&self, host: &str) -> Option<i64> {
        let m = self.hosts.iter().find(|m| m.name == host)?;
        m.instances
            .iter()
            .rev()
            .find_map(|i| i.clock)
            .map(|c| c.offset_ms)
    }

    /// The exits of the last [`EXIT_WINDOW`].
    pub(crate) fn exits(&self) -> impl Iterator<Item = &ExitRec> {
        self.exits.iter()
    }

    /// The analysis' input over `[from_ms, to_ms]`, as `store::window` would load it: per host
    /// the instances with records in it, samples and events in time order, each instance's
    /// caps from before the window.
    pub(crate) fn view(&self, from_ms: u64, to_ms: u64) -> Vec<HostData> {
        let mut out = Vec::new();
        for m in &self.hosts {
            let inside = |t: u64| (from_ms..=to_ms).contains(&t);
            let mut map: Vec<Option<usize>> = vec![None; m.instances.len()];
            let mut h = HostData {
                name: m.name.clone(),
                ..Default::default()
            };
            let mut idx = |i: usize, h: &mut HostData| -> usize {
                *map[i].get_or_insert_with(|| {
                    h.instances.push(m.instances[i].clone());
                    h.instances.len() - 1
                })
            };
            for s in m.samples.iter().filter(|s| inside(s.time_ms)) {
                let mut s = s.clone();
                s.instance = idx(s.instance, &mut h);
                h.samples.push(s);
            }
            for e in m.events.iter().filter(|e| inside(e.time_ms)) {
                let mut e = e.clone();
                e.instance = idx(e.instance, &mut h);
                h.events.push(e);
            }
            for (i, e) in &m.shaping {
                if let Some(j) = map.get(*i).copied().flatten() {
                    let mut e = e.clone();
                    e.instance = j;
                    h.events.push(e);
                }
            }
            if h.instances.is_empty() {
                continue;
            }
            h.samples.sort_by_key(|s| s.time_ms);
            h.events.sort_by_key(|e| e.time_ms);
            out.push(h);
        }
        out
    }

    /// Each host's newest sample in `[from_ms, to_ms]` with its instance's `Hello`.
    pub(crate) fn newest(
        &self,
        from_ms: u64,
        to_ms: u64,
    ) -> impl Iterator<Item = (&str, &Hello, &TimedSample)> {
        self.hosts.iter().filter_map(move |m| {
            let s = m
                .samples
                .iter()
                .filter(|s| (from_ms..=to_ms).contains(&s.time_ms))
                .max_by_key(|s| s.time_ms)?;
            Some((m.name.as_str(), &m.instances.get(s.instance)?.hello, s))
        })
    }
}

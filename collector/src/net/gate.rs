//! The checks between one connection's stream and the store: record times, plausibility of
//! samples and events, and the caps on what one host may have stored, counted by the
//! collector's own clock (a hostile agent chooses its record times, so they bound nothing).
//!
//! What the ring held at the `Hello` (seq up to its `newest_seq`, at most
//! [`MAX_BACKLOG_RECORDS`]) was produced in the past and arrives as fast as the network allows;
//! everything after it is live: at most one sample per announced interval elapsed on the
//! collector's clock (+[`SAMPLE_SLACK`]), [`EVENTS_PER_INTERVAL`] events and
//! [`DEVICES_PER_INTERVAL`] `DeviceAdded` per interval (+ slack). The rest is dropped and
//! counted into one `flood` gap with the counts per kind. Every refusal goes through
//! [`note_refusal`], the one place where a refusal is counted, logged and shown.

use std::time::{Duration, Instant};

use nasprobe_proto::{Event, Hello, RecordBody};

use super::client::Incoming;
use super::live::{Live, RECENT_EVENTS, StoreMsg};
use super::validate::{EVENTS_PER_INTERVAL, TimeWindow};
use crate::store::{FloodCounts, Item};

/// Records of the ring's backlog (seq up to the `Hello`'s `newest_seq`) taken at network speed:
/// a 1 GiB ring (256 times the agent's default) of 256-byte records. A longer backlog is taken
/// under the live caps.
pub(crate) const MAX_BACKLOG_RECORDS: u64 = 1 << 22;
/// Live samples allowed beyond one per interval elapsed: the burst after a network or store
/// stall is covered by the time elapsed; this covers the agent sampling a little ahead of the
/// collector's clock (its first samples before our `Hello` time, timer jitter).
pub(crate) const SAMPLE_SLACK: u64 = 20;
/// Live samples may run this many per mille faster than the interval (clock rate differences
/// between the NAS and the desktop are parts per million; NTP slews by at most 0.05 %).
pub(crate) const SAMPLE_RATE_SLACK_PER_MILLE: u64 = 50;
/// Intervals of events allowed ahead of the collector's clock (a burst at connect).
pub(crate) const EVENT_SLACK_INTERVALS: u64 = 4;
/// `DeviceAdded` per interval at most: a hot-plugged enclosure announces its disks over a few
/// intervals; a real host never adds devices faster for long.
pub(crate) const DEVICES_PER_INTERVAL: u64 = 2;
/// `DeviceAdded` allowed at once: two full inventories (every disk and NIC the wire can list).
pub(crate) const DEVICE_SLACK: u64 =
    2 * (nasprobe_proto::MAX_DISKS + nasprobe_proto::MAX_NICS) as u64;
/// A pending flood gap is handed to the store at least this often (so a run stopped or killed
/// during a flood still has it, and `report` shows it while the flood lasts).
pub(crate) const FLOOD_FLUSH: Duration = Duration::from_secs(1);

/// Rejected records logged one by one on a connection's host; after them every thousandth.
pub(crate) const REJECTED_LOGGED: u64 = 20;

/// What the collector refused: each goes through [`note_refusal`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refusal<'a> {
    /// A record over a cap (dropped into the flood gap): its kind.
    Flood(FloodKind),
    /// A record that failed the plausibility checks (a `rejected` gap).
    Rejected { seq: u64, why: &'a str },
    /// Frames that failed authentication (a relay altered, dropped, replayed them).
    Tampered,
    /// The agent sent something invalid: the host is marked bad.
    BadHost { error: &'a str },
}

/// The kinds of records a flood drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloodKind {
    Sample,
    Event,
    Device,
}

/// The one place where a refusal is counted (for views and `record`'s summary) and logged.
/// Returns the item to store for it, if any (floods and rejected records make their own);
/// `instance` is the connection's registered instance, None before its `Hello` was registered
/// (the store then files it under the host's newest instance, if it has one).
pub(crate) fn note_refusal(
    live: &Live,
    idx: usize,
    host: &str,
    instance: Option<i64>,
    r: Refusal<'_>,
) -> Option<Item> {
    let first = live.with(idx, |h| {
        let counter = match r {
            Refusal::Flood(FloodKind::Sample) => &mut h.dropped.samples,
            Refusal::Flood(FloodKind::Event) => &mut h.dropped.events,
            Refusal::Flood(FloodKind::Device) => &mut h.dropped.devices,
            Refusal::Rejected { seq, why } => {
                h.bad = Some(format!("record {seq} rejected: {why}"));
                &mut h.rejected
            }
            Refusal::Tampered => &mut h.tampered,
            Refusal::BadHost { error } => {
                h.bad = Some(error.to_string());
                &mut h.marked_bad
            }
        };
        *counter += 1;
        *counter
    });
    match r {
        Refusal::Flood(kind) => {
            if first == 1 {
                log::warn!(
                    "{host}: more {} than the collector's cap allows (counted on its own clock): \
                     the rest are dropped and counted (a gap 'flood')",
                    match kind {
                        FloodKind::Sample => "samples",
                        FloodKind::Event => "events",
                        FloodKind::Device => "device announcements",
                    }
                );
            }
            None
        }
        Refusal::Rejected { seq, why } => {
            // Each one is a gap row (under the caps); the log says the first ones and then
            // every thousandth, so a stream of them cannot flood it.
            if first <= REJECTED_LOGGED || first.is_multiple_of(1000) {
                log::error!(
                    "{host}: record {seq} rejected, not stored ({why}); {first} rejected so far, \
                     host marked bad"
                );
            }
            None
        }
        // (The connection's task logs the error itself, once.)
        Refusal::Tampered => Some(Item::Refused {
            instance,
            host: host.to_string(),
            time_ms: nasprobe_proto::time::now_ms(),
            what: "frames that failed authentication (altered, dropped, replayed or injected \
                   between the agent and the collector); reconnected"
                .into(),
        }),
        Refusal::BadHost { error } => {
            log::error!("{error}: host marked bad; nothing invalid is stored");
            Some(Item::Refused {
                instance,
                host: host.to_string(),
                time_ms: nasprobe_proto::time::now_ms(),
                what: format!("host marked bad: {error}"),
            })
        }
    }
}

/// A run of records over the caps, not yet handed to the store.
#[derive(Debug, Clone, Copy)]
struct Flood {
    from_seq: u64,
    to_seq: u64,
    from_ms: u64,
    to_ms: u64,
    dropped: FloodCounts,
    since: Instant,
}

/// Records taken on this connection, against the caps.
#[derive(Debug, Clone, Copy, Default)]
struct Taken {
    samples: u64,
    events: u64,
    devices: u64,
}

/// One connection's gate (see the module's text). Turns each incoming item into what to store.
pub(crate) struct Gate {
    hello: Hello,
    added: super::validate::Added,
    /// Interval number (time_ms / interval_ms) and events kept in it (the backlog's cap).
    bucket: (u64, usize),
    flood: Option<Flood>,
    /// When the live stream began (the `Hello`), on the collector's clock.
    since: Instant,
    /// Records up to this seq are the ring's backlog.
    backlog_to: u64,
    taken: Taken,
    /// Where a flood still pending when the gate is dropped goes (a run that stops cancels the
    /// connection's task at its next await), and its instance.
    store: Option<(smol::channel::Sender<StoreMsg>, i64)>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some((tx, instance)) = self.store.take() {
            let mut out = Vec::new();
            self.flush(instance, &mut out);
            for item in out {
                // The store task drains the channel after the agent tasks are gone.
                if tx.try_send(StoreMsg::Item(item)).is_err() {
                    log::warn!("a flood gap could not be handed to the store at the stop");
                }
            }
        }
    }
}

impl Gate {
    /// The gate of a connection whose `Hello` is `hello`, resumed after seq `after`.
    pub(crate) fn new(hello: &Hello, after: u64) -> Gate {
        Gate {
            hello: hello.clone(),
            added: Default::default(),
            bucket: (u64::MAX, 0),
            flood: None,
            since: Instant::now(),
            // The backlog starts after what the collector holds, or at the ring's oldest (the
            // records before it come as a `Gone`).
            backlog_to: hello.newest_seq.min(
                after
                    .max(hello.oldest_seq.saturating_sub(1))
                    .saturating_add(MAX_BACKLOG_RECORDS),
            ),
            taken: Taken::default(),
            store: None,
        }
    }

    /// Hands a flood still pending when the gate is dropped to `tx` (as of `instance`).
    pub(crate) fn flushing_into(
        mut self,
        tx: smol::channel::Sender<StoreMsg>,
        instance: i64,
    ) -> Gate {
        self.store = Some((tx, instance));
        self
    }

    /// A gate whose live stream began `d` ago (for tests).
    #[cfg(test)]
    pub(crate) fn aged(mut self, d: Duration) -> Gate {
        self.since = self.since.checked_sub(d).unwrap_or(self.since);
        self
    }

    /// The pending flood, if any, into `out`.
    pub(crate) fn flush(&mut self, instance: i64, out: &mut Vec<Item>) {
        if let Some(f) = self.flood.take() {
            out.push(Item::Flood {
                instance,
                from_seq: f.from_seq,
                to_seq: f.to_seq,
                from_ms: f.from_ms,
                to_ms: f.to_ms,
                dropped: f.dropped,
            });
        }
    }

    /// Intervals elapsed on the collector's clock since the live stream began.
    fn intervals(&self) -> u64 {
        let ms = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        ms / u64::from(self.hello.interval_ms.max(1))
    }

    /// The kind of cap `body` is over, if any (the backlog is under the caps but for devices).
    fn over_cap(&self, seq: u64, body: &RecordBody) -> Option<FloodKind> {
        let n = self.intervals();
        let backlog = seq <= self.backlog_to;
        match body {
            RecordBody::Sample(_) => {
                let allowed = n
                    .saturating_mul(1000 + SAMPLE_RATE_SLACK_PER_MILLE)
                    .saturating_div(1000)
                    .saturating_add(SAMPLE_SLACK);
                (!backlog && self.taken.samples >= allowed).then_some(FloodKind::Sample)
            }
            RecordBody::Event(Event::DeviceAdded(_)) => {
                let allowed = n
                    .saturating_mul(DEVICES_PER_INTERVAL)
                    .saturating_add(DEVICE_SLACK);
                (self.taken.devices >= allowed).then_some(FloodKind::Device)
            }
            RecordBody::Event(_) => {
                let allowed = n
                    .saturating_add(EVENT_SLACK_INTERVALS)
                    .saturating_mul(EVENTS_PER_INTERVAL as u64);
                let live_over = !backlog && self.taken.events >= allowed;
                let bucket_over = self.bucket.1 >= EVENTS_PER_INTERVAL;
                (live_over || bucket_over).then_some(FloodKind::Event)
            }
        }
    }

    /// Counts `body` as taken.
    fn take(&mut self, seq: u64, body: &RecordBody) {
        let backlog = seq <= self.backlog_to;
        match body {
            RecordBody::Sample(_) => self.taken.samples += u64::from(!backlog),
            RecordBody::Event(ev) => {
                self.bucket.1 += 1;
                if matches!(ev, Event::DeviceAdded(_)) {
                    self.taken.devices += 1;
                } else {
                    self.taken.events += u64::from(!backlog);
                }
            }
        }
    }

    /// Adds a dropped record to the pending flood.
    fn drop_record(&mut self, seq: u64, time_ms: u64, kind: FloodKind) {
        let f = self.flood.get_or_insert(Flood {
            from_seq: seq,
            to_seq: seq,
            from_ms: time_ms,
            to_ms: time_ms,
            dropped: FloodCounts::default(),
            since: Instant::now(),
        });
        f.to_seq = seq;
        f.from_ms = f.from_ms.min(time_ms);
        f.to_ms = f.to_ms.max(time_ms);
        match kind {
            FloodKind::Sample => f.dropped.samples += 1,
            FloodKind::Event => f.dropped.events += 1,
            FloodKind::Device => f.dropped.devices += 1,
        }
    }

    /// What to store for `inc` (nothing, or a flood range then the item).
    pub(crate) fn admit(
        &mut self,
        inc: Incoming,
        window: &TimeWindow,
        (idx, host): (usize, &str),
        instance: i64,
        live: &Live,
    ) -> Vec<Item> {
        let mut out = Vec::new();
        let (r, body) = match inc {
            Incoming::KeepAlive(_) => {
                self.flush(instance, &mut out);
                return out;
            }
            Incoming::Gone(g) => {
                self.flush(instance, &mut out);
                live.with(idx, |h| {
                    h.gap = Some(format!(
                        "ring overwrote seq {}..{} ({} records)",
                        g.from_seq,
                        g.to_seq,
                        g.to_seq - g.from_seq + 1
                    ))
                });
                out.push(Item::Gone {
                    instance,
                    from_seq: g.from_seq,
                    to_seq: g.to_seq,
                });
                return out;
            }
            Incoming::Record(r, body) => (r, body),
        };
        if let RecordBody::Event(_) = &r.body {
            let b = r.time_ms / u64::from(self.hello.interval_ms.max(1));
            if self.bucket.0 != b {
                self.bucket = (b, 0);
            }
        }
        // The caps first: a rejected record is a stored row too (its gap), so it takes a slot.
        if let Some(kind) = self.over_cap(r.seq, &r.body) {
            self.drop_record(r.seq, r.time_ms, kind);
            note_refusal(live, idx, host, Some(instance), Refusal::Flood(kind));
            if self.flood.is_some_and(|f| f.since.elapsed() >= FLOOD_FLUSH) {
                self.flush(instance, &mut out);
            }
            return out;
        }
        self.take(r.seq, &r.body);
        let verdict = window.check(r.time_ms).and_then(|()| match &r.body {
            RecordBody::Sample(smp) => {
                super::validate::check_sample_with(&self.hello, self.added, smp)
            }
            RecordBody::Event(ev) => super::validate::check_event_at(&self.hello, r.time_ms, ev),
        });
        if let Err(why) = verdict {
            self.flush(instance, &mut out);
            let refusal = Refusal::Rejected {
                seq: r.seq,
                why: &why,
            };
            note_refusal(live, idx, host, Some(instance), refusal);
            out.push(Item::Rejected {
                instance,
                seq: r.seq,
                time_ms: r.time_ms,
                why,
            });
            return out;
        }
        if let RecordBody::Event(ev) = &r.body {
            self.added.count(ev);
        }
        self.flush(instance, &mut out);
        out.push(Item::from_record(instance, &r, body));
        show(live, idx, *r);
        out
    }
}

/// A stored record into the views' state of host `idx`.
fn show(live: &Live, idx: usize, r: nasprobe_proto::Record) {
    let own = live.own.get().filter(|o| o.0 == idx).map(|o| &o.1);
    live.with(idx, |h| {
        h.received += 1;
        match r.body {
            RecordBody::Sample(mut smp) => {
                if let Some(o) = own {
                    o.filter_sample(&mut smp);
                }
                if h.last.as_ref().is_none_or(|l| l.0 < r.seq) {
                    h.last = Some((r.seq, r.time_ms, Box::new(smp)));
                }
            }
            // Per-sample TCP connections are measurements, not recent events.
            RecordBody::Event(Event::Connections(_)) => {}
            RecordBody::Event(Event::Shaping(sh)) => h.shaping = Some(*sh),
            RecordBody::Event(Event::OpenFiles(mut f)) => {
                if let Some(o) = own {
                    o.filter_files(&mut f);
                }
                if h.files.as_ref().is_none_or(|l| l.0 <= r.time_ms) {
                    h.files = Some((r.time_ms, f));
                }
            }
            RecordBody::Event(ev) => {
                h.events.push_back((r.time_ms, ev));
                while h.events.len() > RECENT_EVENTS {
                    h.events.pop_front();
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::HostSpec;
    use crate::testing::{exit_event, nas_hello, nas_sample};

    fn live() -> std::sync::Arc<Live> {
        Live::new(&[HostSpec {
            name: "h".into(),
            addr: "127.0.0.1:1".into(),
            token_file: None,
        }])
    }

    fn rec(seq: u64, time_ms: u64, body: RecordBody) -> Incoming {
        let raw = match &body {
            RecordBody::Sample(s) => postcard::to_allocvec(s).unwrap(),
            RecordBody::Event(e) => postcard::to_allocvec(e).unwrap(),
        };
        Incoming::Record(Box::new(nasprobe_proto::Record { seq, time_ms, body }), raw)
    }

    /// Feeds `n` records made by `body(seq)` to a gate whose stream began `age` ago; the items.
    fn feed(
        hello: &Hello,
        after: u64,
        age: Duration,
        n: u64,
        body: impl Fn(u64) -> RecordBody,
    ) -> Vec<Item> {
        let live = live();
        let window = TimeWindow::new(hello);
        let mut g = Gate::new(hello, after).aged(age);
        let mut out = Vec::new();
        for seq in after + 1..=after + n {
            let t = hello.now_ms - 1000 + (seq % 2) * 1000;
            out.extend(g.admit(rec(seq, t, body(seq)), &window, (0, "h"), 1, &live));
        }
        g.flush(1, &mut out);
        out
    }

    fn counts(items: &[Item]) -> (u64, u64, FloodCounts) {
        let mut dropped = FloodCounts::default();
        let (mut samples, mut events) = (0, 0);
        for it in items {
            match it {
                Item::Sample { .. } => samples += 1,
                Item::Event { .. } => events += 1,
                Item::Flood { dropped: d, .. } => dropped = dropped.add(*d),
                _ => {}
            }
        }
        (samples, events, dropped)
    }

    fn hello() -> Hello {
        let mut h = nas_hello(1, 1_800_000_000_000 - 60_000, 1000);
        h.now_ms = 1_800_000_000_000;
        h
    }

    #[test]
    fn live_samples_follow_the_collectors_clock_the_backlog_does_not() {
        let h = hello();
        let items = feed(&h, 0, Duration::from_secs(10), 1000, |s| {
            RecordBody::Sample(nas_sample(s))
        });
        let (samples, _, dropped) = counts(&items);
        assert_eq!(samples, 10 * 1050 / 1000 + SAMPLE_SLACK, "{dropped:?}");
        assert_eq!(dropped.samples, 1000 - samples);
        // The same 1000 as the ring's backlog: all taken.
        let mut ring = h.clone();
        ring.oldest_seq = 1;
        ring.newest_seq = 1000;
        let items = feed(&ring, 0, Duration::ZERO, 1000, |s| {
            RecordBody::Sample(nas_sample(s))
        });
        assert_eq!(counts(&items).0, 1000);
        // A long-lived agent's ring far past seq 2^22, met by a new collector (after 0).
        let mut old = h.clone();
        old.oldest_seq = 1_000_000_001;
        old.newest_seq = 1_000_001_000;
        let live = live();
        let window = TimeWindow::new(&old);
        let mut g = Gate::new(&old, 0);
        let mut taken = 0;
        for seq in old.oldest_seq..=old.newest_seq {
            let inc = rec(seq, old.now_ms, RecordBody::Sample(nas_sample(seq)));
            let items = g.admit(inc, &window, (0, "h"), 1, &live);
            taken += counts(&items).0;
        }
        assert_eq!(taken, 1000);
    }

    #[test]
    fn events_alternating_between_two_intervals_stay_under_the_cap() {
        let h = hello();
        let fed_at = std::time::Instant::now();
        let items = feed(&h, 0, Duration::from_secs(2), 20_000, |s| {
            let RecordBody::Event(Event::ProcessExit(mut x)) =
                RecordBody::Event(exit_event(s as u32))
            else {
                unreachable!()
            };
            x.lifetime_ms = 2000;
            x.cpu_ticks = 10;
            RecordBody::Event(Event::ProcessExit(x))
        });
        let (_, events, dropped) = counts(&items);
        // The collector's clock runs on while the 20,000 are fed (slowly on a loaded machine):
        // each interval begun meanwhile may add its share, however the agent stamps them.
        let begun = fed_at.elapsed().as_millis() as u64 / u64::from(h.interval_ms) + 1;
        let least = (2 + EVENT_SLACK_INTERVALS) * EVENTS_PER_INTERVAL as u64;
        assert!(
            (least..=least + begun * EVENTS_PER_INTERVAL as u64).contains(&events),
            "{events} events taken, {least} + {begun} intervals' worth at most"
        );
        assert_eq!(dropped.events, 20_000 - events);
        let devices = feed(&h, 0, Duration::from_secs(2), 5_000, |s| {
            RecordBody::Event(Event::DeviceAdded(nasprobe_proto::DeviceAdded::Disk(
                crate::testing::s(&format!("sd{s}")),
            )))
        });
        let (_, taken, dropped) = counts(&devices);
        assert_eq!(taken, DEVICE_SLACK + 2 * DEVICES_PER_INTERVAL);
        assert_eq!(dropped.devices, 5_000 - taken);
    }

    #[test]
    fn flood_counts_round_trip_through_the_gaps_reason() {
        let c = FloodCounts {
            samples: 3,
            events: 40_000,
            devices: 7,
        };
        assert_eq!(FloodCounts::parse(&c.reason()), Some(c));
        assert_eq!(
            FloodCounts::parse("flood: events over the cap per interval dropped"),
            None
        );
    }
}

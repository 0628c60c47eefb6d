//! What the analysis reads: per host, the agent instances seen, the samples, events and gaps of
//! the window, as the collector's store holds them.

use nasprobe_proto::{Event, Hello, Sample};

/// One agent instance of a host: its `Hello` resolves the disk and NIC indices of its samples.
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: u64,
    pub hello: Hello,
    /// How far the agent's clock is from the collector's, when the collector measured it.
    pub clock: Option<ClockOffset>,
}

/// The agent's clock minus the collector's, from the handshake: the collector sends its last
/// `Auth` at c1 and reads the `Hello` (stamped `now_ms` by the agent in between) at c2, so the
/// offset is `now_ms - (c1 + c2) / 2` to within half the round trip, `(c2 - c1) / 2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    pub offset_ms: i64,
    pub precision_ms: u64,
}

impl ClockOffset {
    /// From the collector's send and receive times and the agent's stamp (all ms since the
    /// epoch); None when the receive time is before the send time (the collector's clock moved).
    pub fn measure(sent_ms: u64, received_ms: u64, agent_ms: u64) -> Option<ClockOffset> {
        let rt = received_ms.checked_sub(sent_ms)?;
        let mid = sent_ms + rt / 2;
        Some(ClockOffset {
            offset_ms: agent_ms as i64 - mid as i64,
            precision_ms: rt.div_ceil(2),
        })
    }
}

/// One stored sample, kept encoded: a decoded `Sample` is ~20 KB of fixed-capacity lists, so
/// a day of samples is only ever decoded one at a time.
#[derive(Debug, Clone)]
pub struct TimedSample {
    /// Agent wall clock at the end of the interval, ms since the Unix epoch.
    pub time_ms: u64,
    /// Index into `HostData::instances`.
    pub instance: usize,
    pub seq: u64,
    /// Interval length, µs (outside the body so that windows need no decoding).
    pub interval_us: u32,
    /// The postcard encoding of the `Sample`, as the agent sent it.
    pub body: Vec<u8>,
}

impl TimedSample {
    /// Encodes `sample` (tests and tools that build samples in memory).
    pub fn new(time_ms: u64, instance: usize, seq: u64, sample: &Sample) -> TimedSample {
        TimedSample {
            time_ms,
            instance,
            seq,
            interval_us: sample.interval_us,
            body: postcard::to_allocvec(sample).unwrap_or_default(),
        }
    }

    /// The decoded sample, its strings made safe to show (`proto::sanitize`: a row stored by an
    /// older collector may hold terminal escapes); None when the body is not exactly a valid
    /// sample (bytes left over count as corrupt).
    pub fn decode(&self) -> Option<Sample> {
        let (mut s, rest) = postcard::take_from_bytes::<Sample>(&self.body).ok()?;
        if !rest.is_empty() {
            return None;
        }
        nasprobe_proto::sanitize::sample(&mut s);
        Some(s)
    }
}

/// One stored event, kept encoded: a decoded `Event` is ~9 KB (the `Connections` and
/// `OpenFiles` variants are fixed-capacity lists), its postcard body a few dozen bytes, so a
/// month of events stays small and each is decoded where it is read ([`TimedEvent::event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedEvent {
    /// Agent wall clock, ms since the Unix epoch.
    pub time_ms: u64,
    /// Index into `HostData::instances`.
    pub instance: usize,
    pub seq: u64,
    /// Which measurement it is, if one (`Event::is_measurement`), known without decoding: a
    /// week of a transfer holds hundreds of thousands of `Connections`.
    measurement: Option<Measurement>,
    /// The postcard encoding of the `Event`, checked to decode exactly by both constructors.
    body: Box<[u8]>,
}

/// The per-sample measurements carried as events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measurement {
    Connections,
    OpenFiles,
    Shaping,
}

fn measurement(e: &Event) -> Option<Measurement> {
    match e {
        Event::Connections(_) => Some(Measurement::Connections),
        Event::OpenFiles(_) => Some(Measurement::OpenFiles),
        Event::Shaping(_) => Some(Measurement::Shaping),
        _ => None,
    }
}

impl TimedEvent {
    /// Encodes `event` (tests and tools that build events in memory).
    pub fn new(time_ms: u64, instance: usize, seq: u64, event: &Event) -> TimedEvent {
        TimedEvent {
            time_ms,
            instance,
            seq,
            measurement: measurement(event),
            body: postcard::to_allocvec(event)
                .unwrap_or_default()
                .into_boxed_slice(),
        }
    }

    /// A stored body as it is; None when it is not exactly one valid event (bytes left over
    /// count as corrupt), so that [`TimedEvent::event`] always decodes.
    pub fn from_body(time_ms: u64, instance: usize, seq: u64, body: Vec<u8>) -> Option<TimedEvent> {
        let event = decode_exact(&body)?;
        Some(TimedEvent {
            time_ms,
            instance,
            seq,
            measurement: measurement(&event),
            body: body.into_boxed_slice(),
        })
    }

    /// The decoded event, its strings made safe to show (`proto::sanitize`: a row stored by an
    /// older collector may hold terminal escapes).
    pub fn event(&self) -> Event {
        let mut e = decode_exact(&self.body).unwrap_or_else(undecodable);
        nasprobe_proto::sanitize::event(&mut e);
        e
    }

    /// A measurement carried as an event (TCP connections, open files, traffic-control caps),
    /// not an event of the report.
    pub fn is_measurement(&self) -> bool {
        self.measurement.is_some()
    }

    /// An `Event::Connections`, known without decoding.
    pub fn is_connections(&self) -> bool {
        self.measurement == Some(Measurement::Connections)
    }

    /// An `Event::Shaping`, known without decoding.
    pub fn is_shaping(&self) -> bool {
        self.measurement == Some(Measurement::Shaping)
    }

    /// An `Event::OpenFiles`, known without decoding.
    pub fn is_open_files(&self) -> bool {
        self.measurement == Some(Measurement::OpenFiles)
    }

    /// The postcard encoding, as the agent sent it.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

fn decode_exact(body: &[u8]) -> Option<Event> {
    match postcard::take_from_bytes::<Event>(body) {
        Ok((e, [])) => Some(e),
        _ => None,
    }
}

/// What [`TimedEvent::event`] gives for a body that does not decode, which both constructors
/// rule out (a failed encoding in [`TimedEvent::new`] is the only way): said, not hidden.
#[cold]
fn undecodable() -> Event {
    Event::KernelMessage(nasprobe_proto::KernelMessage {
        level: 3,
        pid: None,
        nic: None,
        text: nasprobe_proto::Cmdline::try_from("nasprobe: an event that does not decode")
            .unwrap_or_default(),
        suppressed: 0,
    })
}

/// A range of records known to be missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapInfo {
    pub from_ms: u64,
    pub to_ms: u64,
    /// How many records are missing, when known.
    pub samples: Option<u64>,
    pub reason: String,
}

/// Everything of one host in the window, samples and events in time order.
#[derive(Debug, Clone, Default)]
pub struct HostData {
    pub name: String,
    pub instances: Vec<Instance>,
    pub samples: Vec<TimedSample>,
    pub events: Vec<TimedEvent>,
    pub gaps: Vec<GapInfo>,
}

impl HostData {
    /// The clock offset of the newest instance the collector measured.
    pub fn clock(&self) -> Option<ClockOffset> {
        self.instances.iter().rev().find_map(|i| i.clock)
    }

    /// Samples with the `Hello` of their instance, decoded one at a time, in time order (None
    /// for a body that is not a valid sample).
    pub fn decoded(&self) -> impl Iterator<Item = (&Hello, &TimedSample, Option<Sample>)> + '_ {
        self.samples.iter().filter_map(|s| {
            let inst = self.instances.get(s.instance)?;
            Some((&inst.hello, s, s.decode()))
        })
    }

    /// The events in `[from, to]` (ms), found by bisection: `events` are in time order (the
    /// analysis sorts a copy of a host whose events are not, see `report::analyze`).
    pub fn events_between(&self, from: u64, to: u64) -> &[TimedEvent] {
        let a = self.events.partition_point(|e| e.time_ms < from);
        let b = self.events.partition_point(|e| e.time_ms <= to);
        self.events.get(a..b.max(a)).unwrap_or_default()
    }

    /// CPU seconds of `ticks` counted by instance `instance`, at the clock rate its `Hello`
    /// gives (USER_HZ; 100 when the instance is unknown).
    pub(crate) fn ticks_s(&self, instance: usize, ticks: u64) -> f64 {
        let hz = self
            .instances
            .get(instance)
            .map_or(100, |i| i.hello.clock_ticks_per_sec.max(1));
        ticks as f64 / f64::from(hz)
    }
}

/// Raw samples of host `hosts[k]` over `[from_ms, to_ms]`, for a report over rollups that needs
/// the detail somewhere (None: not stored any more, or not to be read).
pub type Detail<'a> = dyn Fn(usize, u64, u64) -> Option<HostData> + 'a;

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::{AgentStart, Connections, LinkChange};

    fn link(up: bool) -> Event {
        Event::LinkChange(LinkChange {
            nic: "eth\u{1b}[2J0".try_into().unwrap(),
            up,
            speed_mbit: 1000,
            full_duplex: Some(true),
            mtu: 1500,
        })
    }

    /// Kept as its postcard body (a few dozen bytes next to the 9 KB of a decoded `Event`),
    /// decoded and made safe to show on each read.
    #[test]
    fn an_event_is_kept_encoded_and_decoded_sanitized() {
        assert!(std::mem::size_of::<TimedEvent>() <= 48);
        let e = TimedEvent::new(5, 1, 7, &link(true));
        assert!(e.body().len() < 32, "{}", e.body().len());
        assert!(!e.is_measurement());
        let Event::LinkChange(l) = e.event() else {
            panic!("{:?}", e.event());
        };
        assert!(l.up);
        assert!(!l.nic.contains('\u{1b}'), "{:?}", l.nic);
        let c = TimedEvent::new(
            5,
            0,
            8,
            &Event::Connections(Connections {
                procs: Default::default(),
            }),
        );
        assert!(c.is_measurement() && c.is_connections() && !c.is_open_files());
        assert!(!e.is_connections() && !e.is_open_files());
        // From a stored body: exactly one event, or nothing.
        let body = postcard::to_allocvec(&link(false)).unwrap();
        let s = TimedEvent::from_body(9, 0, 3, body.clone()).unwrap();
        assert_eq!(s.body(), &body[..]);
        assert!(matches!(s.event(), Event::LinkChange(l) if !l.up));
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(TimedEvent::from_body(9, 0, 3, longer), None);
        assert_eq!(TimedEvent::from_body(9, 0, 3, vec![0xff, 0xff]), None);
        assert_eq!(TimedEvent::from_body(9, 0, 3, Vec::new()), None);
    }

    #[test]
    fn events_between_bisects_the_time_ordered_events() {
        let start = |t| {
            TimedEvent::new(
                t,
                0,
                t,
                &Event::AgentStart(AgentStart {
                    agent_version: "0.1".try_into().unwrap(),
                    instance_id: 1,
                    interval_ms: 1000,
                }),
            )
        };
        let h = HostData {
            events: [10, 20, 20, 30, 40].into_iter().map(start).collect(),
            ..HostData::default()
        };
        let seqs = |a, b| {
            h.events_between(a, b)
                .iter()
                .map(|e| e.seq)
                .collect::<Vec<_>>()
        };
        assert_eq!(seqs(20, 30), [20, 20, 30]);
        assert_eq!(seqs(0, 9), [0u64; 0]);
        assert_eq!(seqs(41, 99), [0u64; 0]);
        assert_eq!(seqs(30, 20), [0u64; 0]);
        assert_eq!(seqs(0, u64::MAX).len(), 5);
    }
}

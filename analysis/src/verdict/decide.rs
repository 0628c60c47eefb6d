//! The decision: the one wall among every host's candidates, the evidence for it, what was ruled
//! out with its headroom, and what would not help.

use super::walls::{MEMORY_STORM_SCORE, NIC_FULL, TIE_MARGIN};
use crate::report::Bottleneck;
use crate::vocab::{Candidate, Flow, LimitedBy, Resource, pct, round2};

/// "2.5x headroom" of a resource at `util` of its ceiling, or "idle".
fn headroom(util: f64) -> String {
    if util <= 0.01 {
        "idle".into()
    } else {
        format!("{:.1}x headroom", 1.0 / util)
    }
}

/// Names the wall among all hosts' candidates.
pub fn decide(all: &[Candidate], flow: Option<&Flow>) -> Bottleneck {
    let field = Field::new(all);
    let chosen = field.choose(flow);
    let Sentences {
        mut evidence,
        ruled_out,
        also,
    } = field.sentences(chosen.as_ref(), flow);
    let Some(w) = chosen else {
        return no_wall(all, flow, evidence, ruled_out);
    };
    let mut at = usize::from(flow.is_some()) + 1;
    // The connections' own sentences follow an `app` or `network` verdict.
    if let Some(f) = flow.filter(|_| is_limit(&w)) {
        for (k, e) in f.limit_evidence.iter().enumerate() {
            evidence.insert(at + k, e.clone());
        }
        at += f.limit_evidence.len();
    }
    for (k, a) in also.into_iter().enumerate() {
        evidence.insert(at + k, a);
    }
    // Keep the ruled-out sentences in the evidence too: they carry the headroom numbers.
    evidence.extend(ruled_out.iter().cloned());
    let would_not_help = would_not_help(&w, all, flow);
    Bottleneck {
        host: Some(w.host.clone()),
        resource: w.resource,
        device: w.device.clone(),
        process: w.process.clone(),
        thread: w.thread.clone(),
        utilization: w.utilization,
        evidence,
        ruled_out,
        would_not_help,
    }
}

/// The `app` and `network` candidates (`crate::verdict::limit`) name the limit only when no
/// host resource is at its ceiling.
fn is_limit(c: &Candidate) -> bool {
    matches!(c.resource, Resource::App | Resource::Network)
}

/// The candidates as the decision weighs them: which walls compete, and what sets some apart.
struct Field<'a> {
    all: &'a [Candidate],
    /// A swap storm: it stalls everything, its disk and CPU load are symptoms.
    memory_wall: Option<&'a Candidate>,
    /// An application holding the flow back that rarely waits for a CPU (`lone` of an `app`
    /// candidate): busy cores are other work's, more would not move the flow.
    unstarved_app: Option<&'a Candidate>,
    /// The host resources at their ceiling that compete.
    walls: Vec<&'a Candidate>,
}

impl<'a> Field<'a> {
    fn new(all: &'a [Candidate]) -> Self {
        // A swap storm stalls everything; its disk and CPU load are symptoms. Lighter swapping
        // competes with the other walls on its score.
        let memory_wall = all
            .iter()
            .filter(|c| c.resource == Resource::Memory && c.wall && c.score >= MEMORY_STORM_SCORE)
            .max_by(|a, b| a.score.total_cmp(&b.score));
        let unstarved_app = all
            .iter()
            .find(|c| c.resource == Resource::App && c.wall && c.lone);
        let mut f = Field {
            all,
            memory_wall,
            unstarved_app,
            walls: Vec::new(),
        };
        f.walls = all
            .iter()
            .filter(|c| c.wall && !is_limit(c) && !f.other_work(c))
            .filter(|c| {
                // With every core busy, one busy thread of parallel work is not the single wall.
                !(c.resource == Resource::CpuThread
                    && !c.lone
                    && all
                        .iter()
                        .any(|o| o.host == c.host && o.resource == Resource::CpuAll && o.wall))
            })
            .collect();
        f
    }

    /// All cores busy beside an unstarved application: other work's, not the flow's.
    fn other_work(&self, c: &Candidate) -> bool {
        c.resource == Resource::CpuAll && self.unstarved_app.is_some()
    }

    /// The rank of a competing wall: its score, moved for what binds the flow regardless.
    fn rank(&self, c: &Candidate) -> f64 {
        // A pegged thread that is its process's whole work binds the flow at that thread's
        // speed: cores busy with other work (on its host or the other) rank after it.
        let lone_thread = self
            .walls
            .iter()
            .any(|c| c.resource == Resource::CpuThread && c.lone);
        // A link carrying the flow at its full payload rate binds it whatever else is busy:
        // the flow cannot go faster than the link (cores or disks busy meanwhile are not what
        // stops it).
        if c.resource == Resource::CpuAll && lone_thread {
            c.score - 1.0
        } else if c.resource == Resource::Nic && c.utilization >= NIC_FULL {
            c.score + 1.0
        } else {
            c.score
        }
    }

    /// The wall: a swap storm, else the top-ranked host resource, else an `app` or `network`
    /// limit; None when nothing is at its ceiling.
    fn choose(&self, flow: Option<&Flow>) -> Option<Candidate> {
        let chosen = self.memory_wall.cloned().or_else(|| {
            let top = self
                .walls
                .iter()
                .max_by(|a, b| self.rank(a).total_cmp(&self.rank(b)))?;
            // Both ends of a flow at the same ceiling (ssh encrypting on one side, sshd
            // decrypting on the other): name the receiving end, where the data lands, unless
            // the sender's figure is clearly higher. The other end is reported as also at its
            // ceiling.
            let receiver = flow.and_then(|f| f.to.as_deref());
            let on_receiver = self
                .walls
                .iter()
                .filter(|c| Some(c.host.as_str()) == receiver && c.resource == top.resource)
                .filter(|c| c.score >= top.score - TIE_MARGIN)
                .max_by(|a, b| a.score.total_cmp(&b.score));
            Some((*on_receiver.unwrap_or(top)).clone())
        });
        chosen.or_else(|| {
            self.all
                .iter()
                .filter(|c| c.wall && is_limit(c))
                .max_by(|a, b| a.score.total_cmp(&b.score))
                .cloned()
        })
    }

    /// Every candidate's sentence where it belongs: the wall's in the evidence (after the
    /// flow's), the other walls as also at their ceiling, the rest ruled out with headroom.
    fn sentences(&self, chosen: Option<&Candidate>, flow: Option<&Flow>) -> Sentences {
        let mut out = Sentences {
            evidence: flow.map(flow_sentence).into_iter().collect(),
            ruled_out: Vec::new(),
            also: Vec::new(),
        };
        for c in self.all.iter().filter(|c| !is_limit(c) || c.wall) {
            let same = chosen.is_some_and(|w| w.host == c.host && w.resource == c.resource);
            if same {
                out.evidence
                    .insert(usize::from(flow.is_some()), c.sentence.clone());
            } else if let Some(w) =
                chosen.filter(|_| c.wall && self.walls.iter().any(|w| std::ptr::eq(*w, c)))
            {
                if is_limit(c) {
                    continue;
                }
                if w.resource == Resource::Memory && w.host == c.host {
                    out.also
                        .push(format!("{} — likely a symptom of the swapping", c.sentence));
                } else {
                    out.also.push(format!(
                        "also at its ceiling: {} — relieving the wall alone would move it here",
                        c.sentence
                    ));
                }
            } else if let Some(app) = self.unstarved_app.filter(|_| c.wall && self.other_work(c)) {
                out.ruled_out.push(format!(
                    "{} — other work: `{}` on {}, which holds the flow back, rarely waits for a CPU; more cores would not move the flow",
                    c.sentence,
                    app.process.as_deref().unwrap_or("?"),
                    app.host
                ));
            } else if super::starved::is_starved(&c.sentence) {
                // Evidence of a hold on the process, never headroom.
                out.evidence.push(c.sentence.clone());
            } else if c.resource != Resource::CpuThread || c.utilization > 0.05 {
                let hr = headroom(c.utilization);
                out.ruled_out.push(format!("{} — {hr}", c.sentence));
            }
        }
        out
    }
}

/// The sentences of the verdict before they are ordered.
struct Sentences {
    evidence: Vec<String>,
    ruled_out: Vec<String>,
    /// Other walls at their ceiling (or symptoms of the swapping).
    also: Vec<String>,
}

/// The bottleneck when nothing is at its ceiling: the limit is outside the hosts, or they idle.
fn no_wall(
    all: &[Candidate],
    flow: Option<&Flow>,
    mut evidence: Vec<String>,
    ruled_out: Vec<String>,
) -> Bottleneck {
    let outside = match flow {
        Some(_) => {
            "nothing on the observed hosts is near a ceiling: the limit is outside them (the other end, the protocol or the application's own pacing)"
        }
        None => "no transfer and nothing near a ceiling: the hosts are idle",
    };
    evidence.insert(0, outside.to_string());
    // What the flow's connections say of it (a `limited_by` that could not be named
    // `app` or `network`: the application busy on a core, a disk or a link in use).
    if let Some(f) = flow.filter(|f| f.limited_by != LimitedBy::Unknown) {
        for (k, e) in f.limit_evidence.iter().enumerate() {
            evidence.insert(1 + k, e.clone());
        }
    }
    evidence.extend(ruled_out.iter().cloned());
    Bottleneck {
        host: None,
        resource: Resource::None,
        device: None,
        process: None,
        thread: None,
        utilization: round2(all.iter().map(|c| c.score.min(1.0)).fold(0.0, f64::max)),
        evidence,
        ruled_out,
        would_not_help: Vec::new(),
    }
}

fn flow_sentence(f: &Flow) -> String {
    let ends = match (&f.from, &f.to) {
        (Some(a), Some(b)) if a != b => format!("{a} → {b}"),
        (_, Some(b)) => format!("into {b}"),
        (Some(a), None) => format!("out of {a}"),
        _ => "transfer".into(),
    };
    let grade = f
        .grade
        .as_ref()
        .map(|g| format!("; on 1 GbE that is {}", g.replace('_', " ")))
        .unwrap_or_default();
    format!(
        "flow {ends}: {:.0} MB/s sustained (median over {:.0} s), {:.0} MB/s mean, {:.0} MB/s peak (best 10 s){grade}",
        f.sustained_mb_s, f.active_seconds, f.mean_mb_s, f.peak_mb_s
    )
}

fn would_not_help(w: &Candidate, all: &[Candidate], flow: Option<&Flow>) -> Vec<String> {
    let on = |r: Resource| all.iter().find(|c| c.host == w.host && c.resource == r);
    let mut v = Vec::new();
    match w.resource {
        Resource::CpuThread => {
            v.push("link aggregation or a faster network: one TCP flow rides one link and the thread cannot go faster".to_string());
            if let Some(d) = on(Resource::Disk) {
                v.push(format!(
                    "faster disks: they are at {} util",
                    pct(d.utilization)
                ));
            }
            v.push("more cores: the work sits on one thread".to_string());
            let p = w.process.as_deref().unwrap_or("");
            if ["ssh", "sshd", "scp", "sftp-server", "dropbear"]
                .iter()
                .any(|x| p.starts_with(x))
            {
                v.push("what would: the transfer is CPU-bound on ssh encryption: rsync daemon mode (rsync://, no ssh) or a cheaper cipher (aes128-gcm@openssh.com where the CPU has AES instructions, else chacha20-poly1305@openssh.com) moves it; encryption pins one core on these CPUs (a WD MyCloud went from 20-25 MB/s over ssh to 55 MB/s with rsync daemon mode)".to_string());
            } else if p.starts_with("rsync") {
                v.push("what would: rsync --whole-file (-W) on a LAN copy (no delta checksums), and daemon mode (rsync://) so no ssh encrypts it".to_string());
            } else {
                v.push("what would: splitting the transfer into parallel streams, or a lighter mode of the tool".to_string());
            }
        }
        Resource::CpuAll => {
            v.push("a faster network or disks: every core is busy".to_string());
            v.push("what would: fewer or lighter jobs at once (compression level, parallel tasks), or a faster CPU".to_string());
        }
        Resource::Disk => {
            v.push(
                "a faster network, link aggregation or more CPU: the disks are the wall"
                    .to_string(),
            );
        }
        Resource::Nic => {
            v.push("faster disks or CPU: the link is full".to_string());
            v.push("link aggregation for a single flow: one TCP flow rides one link".to_string());
        }
        Resource::Memory => {
            v.push("a faster network: the host is swapping; free memory (stop memory hogs, add RAM) first".to_string());
        }
        Resource::App => {
            v.push(
                "a faster network, disks or more CPU: the application itself paces the flow"
                    .to_string(),
            );
            let receiver = flow.is_some_and(|f| f.limited_by == LimitedBy::Receiver);
            v.push(if receiver {
                "what would: the receiving application reading sooner and in larger blocks: it pauses between reads (a slow write to its own disk, a synchronous protocol answering each block, small reads)".to_string()
            } else {
                "what would: the sending application writing sooner and in larger blocks: its own rate limit (e.g. rsync --bwlimit), a synchronous protocol waiting for each reply, or small reads of its source".to_string()
            });
        }
        Resource::Network => {
            v.push("faster disks or CPU: the flow is held between the hosts".to_string());
            v.push("what would: finding the loss (cable, switch port, duplex, a shaper on the way), or on a long round trip larger TCP buffers (tcp_rmem/tcp_wmem) or parallel streams".to_string());
        }
        Resource::None => {}
    }
    v
}

//! The terminal view of `watch` (ratatui): one panel per host under the verdict banner; keys
//! `q` quit, `?` help, `v` verdict details, `e` events, `p` pause, `1`..`9` one host full width.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use nasprobe_proto::Hello;
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::figures::{HostHistory, cap_text, disk_rows, figures, nic_rows};
use super::plain::stop_requested;
use super::plain::{banner_lines, hot_text, item_text, status_text};
use crate::live_verdict::{Banner, LiveVerdict};
use crate::model;
use crate::net::conn::{HostLive, Live, Status};

/// What is drawn over the panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overlay {
    None,
    Help,
    Verdict,
    Events,
}

/// Everything one frame shows.
struct View {
    hosts: Vec<HostLive>,
    store_err: Option<String>,
    banner: Option<Result<Banner, String>>,
    overlay: Overlay,
    paused: bool,
    /// Index into `hosts` of the host shown alone (keys 1..9).
    focus: Option<usize>,
}

/// `NO_COLOR`: every cell in the terminal's own colours; a cell that had a background (the
/// alert banner) is drawn reversed instead, so it still stands out. Bold stays.
fn uncolor(buf: &mut ratatui::buffer::Buffer) {
    for c in buf.content.iter_mut() {
        if c.bg != Color::Reset {
            c.modifier.insert(Modifier::REVERSED);
        }
        c.fg = Color::Reset;
        c.bg = Color::Reset;
    }
}

pub(super) fn tui_loop(
    live: &Live,
    verdict: &LiveVerdict,
    duration: Option<Duration>,
) -> anyhow::Result<()> {
    let color = crate::output::color_wanted();
    let mut term = ratatui::init();
    let start = Instant::now();
    let mut history: HashMap<String, HostHistory> = HashMap::new();
    let mut view = View {
        hosts: Vec::new(),
        store_err: None,
        banner: None,
        overlay: Overlay::None,
        paused: false,
        focus: None,
    };
    let res = (|| -> anyhow::Result<()> {
        while !stop_requested(start, duration) {
            let hosts = live.snapshot();
            for h in &hosts {
                if let (Some(hello), Some((seq, _, smp))) = (&h.hello, &h.last) {
                    let hist = history.entry(h.name.clone()).or_default();
                    if hist.seq != Some(*seq) {
                        hist.seq = Some(*seq);
                        hist.push(&figures(hello, smp));
                    }
                }
            }
            if !view.paused {
                view.hosts = hosts;
                view.store_err = live.store_error.lock().ok().and_then(|e| e.clone());
                view.banner = verdict.latest();
            }
            term.draw(|f| {
                draw(f, &view, &history);
                if !color {
                    uncolor(f.buffer_mut());
                }
            })?;
            if event::poll(Duration::from_millis(250))?
                && let TermEvent::Key(k) = event::read()?
                && k.kind == KeyEventKind::Press
            {
                let toggle = |o: Overlay, cur: Overlay| if cur == o { Overlay::None } else { o };
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => break,
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => break,
                    KeyCode::Char('?') | KeyCode::Char('h') => {
                        view.overlay = toggle(Overlay::Help, view.overlay)
                    }
                    KeyCode::Char('v') => view.overlay = toggle(Overlay::Verdict, view.overlay),
                    KeyCode::Char('e') => view.overlay = toggle(Overlay::Events, view.overlay),
                    KeyCode::Char('p') => view.paused = !view.paused,
                    KeyCode::Char(d @ '0'..='9') => {
                        let i = (d as usize).wrapping_sub('1' as usize);
                        view.focus = if d == '0' || view.focus == Some(i) || i >= view.hosts.len() {
                            None
                        } else {
                            Some(i)
                        };
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    })();
    ratatui::restore();
    res
}

/// Rows `text` takes when wrapped at `width` columns.
fn wrapped_rows(text: &str, width: u16) -> u16 {
    let w = usize::from(width.max(1));
    let n = text.chars().count().max(1);
    n.div_ceil(w).min(usize::from(u16::MAX)) as u16
}

/// Panels side by side only when each gets at least this many columns; else they stack.
const MIN_PANEL_WIDTH: u16 = 56;

fn draw(f: &mut Frame, v: &View, history: &HashMap<String, HostHistory>) {
    let area = f.area();
    let banner = banner_lines(v.banner.clone());
    let inner_w = area.width.saturating_sub(2);
    let banner_h = banner
        .iter()
        .map(|(l, _)| wrapped_rows(l, inner_w))
        .sum::<u16>()
        + 2;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(banner_h.min(area.height.saturating_sub(2))),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .split(area);
    let banner_text: Vec<Line> = banner
        .into_iter()
        .map(|(l, wall)| {
            if wall {
                Line::from(Span::styled(
                    l,
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
                ))
            } else {
                Line::from(l)
            }
        })
        .collect();
    f.render_widget(
        Paragraph::new(banner_text)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" verdict, last 60 s "),
            )
            .wrap(Wrap { trim: true }),
        rows[0],
    );

    let shown: Vec<&HostLive> = match v.focus.and_then(|i| v.hosts.get(i)) {
        Some(h) => vec![h],
        None => v.hosts.iter().collect(),
    };
    let n = shown.len().max(1) as u32;
    let side_by_side = rows[1].width / n as u16 >= MIN_PANEL_WIDTH || n == 1;
    let panels = Layout::default()
        .direction(if side_by_side {
            Direction::Horizontal
        } else {
            Direction::Vertical
        })
        .constraints((0..n).map(|_| Constraint::Ratio(1, n)).collect::<Vec<_>>())
        .split(rows[1]);
    let wall = v
        .banner
        .as_ref()
        .and_then(|b| b.as_ref().ok())
        .and_then(|b| b.wall_host.clone());
    for (h, r) in shown.iter().zip(panels.iter()) {
        let compact = !side_by_side || r.height < 30;
        draw_host(
            f,
            h,
            history.get(&h.name),
            wall.as_deref() == Some(h.name.as_str()),
            compact,
            *r,
        );
    }
    let foot = match (&v.store_err, v.paused) {
        (Some(e), _) => Line::from(Span::styled(
            format!(" STORE PAUSED: {e}"),
            Style::default().fg(Color::White).bg(Color::Red),
        )),
        (None, true) => Line::from(" PAUSED (p resumes)  q quit  ? help"),
        (None, false) => Line::from(" q quit  ? help  v verdict  e events  p pause  1-9 one host")
            .style(Style::default().fg(Color::DarkGray)),
    };
    f.render_widget(Paragraph::new(foot), rows[2]);
    match v.overlay {
        Overlay::None => {}
        Overlay::Help => overlay(f, " help ", help_lines()),
        Overlay::Verdict => overlay(f, " verdict: the evidence ", verdict_lines(&v.banner)),
        Overlay::Events => overlay(f, " events, newest first ", event_lines(&v.hosts)),
    }
}

fn overlay(f: &mut Frame, title: &str, lines: Vec<Line<'static>>) {
    let area = f.area();
    let w = area.width.saturating_sub(4).min(100);
    let h = (lines.len() as u16 + 2).min(area.height.saturating_sub(2));
    let r = Rect::new(area.x + (area.width - w) / 2, area.y + 1, w, h);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(title.to_string()),
            )
            .wrap(Wrap { trim: true }),
        r,
    );
}

fn help_lines() -> Vec<Line<'static>> {
    [
        "nasprobe watch: one panel per host, live; the banner is the report's verdict",
        "over the last 60 s (what `nasprobe report --since 1m` would say).",
        "",
        "cpu     per core busy %; hot = busiest thread, % of ONE core",
        "disks   util % (busy time), await ms, MB/s (md: see members)",
        "nics    MB/s and % of link speed (full duplex: max(rx,tx));",
        "        a bond lists its slaves: one flow rides one slave",
        "lines   flow MB/s, hot thread, busiest disk, busiest link: last 3 min",
        "status  connected / reconnecting / gap (never hidden)",
        "Everything shown is also stored (--db).",
        "",
        "q quit   ? close this help   v verdict  e events  p pause  1-9 one host",
    ]
    .into_iter()
    .map(Line::from)
    .collect()
}

fn verdict_lines(b: &Option<Result<Banner, String>>) -> Vec<Line<'static>> {
    let Some(Ok(b)) = b else {
        return banner_lines(b.clone())
            .into_iter()
            .map(|(l, _)| Line::from(l))
            .collect();
    };
    let mut v = vec![Line::from(b.verdict.clone())];
    let mut section = |title: &str, items: &[String]| {
        if !items.is_empty() {
            v.push(Line::from(""));
            v.push(head(title));
            v.extend(items.iter().map(|e| Line::from(format!("- {e}"))));
        }
    };
    section("evidence", &b.evidence);
    section("would not help", &b.would_not_help);
    section("ruled out, with headroom", &b.ruled_out);
    v
}

fn event_lines(hosts: &[HostLive]) -> Vec<Line<'static>> {
    let mut all: Vec<(u64, String)> = hosts
        .iter()
        .flat_map(|h| {
            h.events
                .iter()
                .map(move |(t, e)| (*t, format!("{} {}", h.name, model::event_text(e))))
        })
        .collect();
    all.sort_by_key(|e| std::cmp::Reverse(e.0));
    if all.is_empty() {
        return vec![Line::from("no events on this run yet")];
    }
    all.into_iter()
        .take(30)
        .map(|(t, s)| {
            let time = nasprobe_analysis::time::rfc3339(t);
            Line::from(format!("{} {s}", &time[11..19]))
        })
        .collect()
}

fn bar(frac: f64, width: usize) -> String {
    let eighths = (frac.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    const PART: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    s.push_str(PART[eighths % 8]);
    let used = eighths / 8 + usize::from(!eighths.is_multiple_of(8));
    s + &" ".repeat(width.saturating_sub(used))
}

/// The newest `width` values as a sparkline of block characters, scaled to `max` (or to the
/// largest value when `max` is None).
fn spark(values: &VecDeque<f64>, max: Option<f64>, width: usize) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let skip = values.len().saturating_sub(width);
    let top = max
        .unwrap_or_else(|| values.iter().skip(skip).copied().fold(0.0, f64::max))
        .max(f64::MIN_POSITIVE);
    let s: String = values
        .iter()
        .skip(skip)
        .map(|v| {
            let i = ((v / top).clamp(0.0, 1.0) * 7.0).round() as usize;
            LEVELS[i]
        })
        .collect();
    format!("{s:<width$}")
}

fn level(frac: f64) -> Style {
    Style::default().fg(if frac >= 0.9 {
        Color::Red
    } else if frac >= 0.6 {
        Color::Yellow
    } else {
        Color::Green
    })
}

fn head(t: &str) -> Line<'static> {
    Line::from(Span::styled(
        t.to_string(),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

fn draw_host(
    f: &mut Frame,
    h: &HostLive,
    hist: Option<&HostHistory>,
    is_wall: bool,
    compact: bool,
    r: Rect,
) {
    let title = match &h.hello {
        Some(hello) => format!(
            " {} — {} {} {} {}",
            h.name,
            hello.host_name,
            hello.arch,
            hello.kernel_release,
            if is_wall { "— THE WALL " } else { "" }
        ),
        None => format!(" {} — {} ", h.name, h.addr),
    };
    let status_style = match h.status {
        Status::Connected if h.gap.is_none() => Style::default().fg(Color::Green),
        Status::Connected => Style::default().fg(Color::Yellow),
        _ => Style::default().fg(Color::Red),
    };
    let mut lines = vec![Line::from(Span::styled(status_text(h), status_style))];
    let width = r.width.saturating_sub(2) as usize;
    if let (Some(hello), Some((_, _, smp))) = (&h.hello, &h.last) {
        if let Some(hist) = hist {
            spark_lines(&mut lines, hist, width);
        }
        body_lines(&mut lines, hello, smp, h.shaping.as_ref(), width, compact);
    } else {
        lines.push(Line::from("waiting for the first sample..."));
    }
    if let Some(i) = item_text(h) {
        lines.push(head("item"));
        lines.push(Line::from(i));
    }
    if !h.events.is_empty() {
        lines.push(head("events"));
        for (t, e) in h.events.iter().rev().take(if compact { 2 } else { 5 }) {
            let time = nasprobe_analysis::time::rfc3339(*t);
            lines.push(Line::from(format!(
                "{} {}",
                &time[11..19],
                model::event_text(e)
            )));
        }
    }
    let block = Block::default().borders(Borders::ALL).title(title);
    let block = if is_wall {
        block.border_style(Style::default().fg(Color::Red))
    } else {
        block
    };
    f.render_widget(
        Paragraph::new(lines).block(block).wrap(Wrap { trim: true }),
        r,
    );
}

fn spark_lines(lines: &mut Vec<Line<'static>>, hist: &HostHistory, width: usize) {
    let w = width.saturating_sub(18).clamp(8, 90);
    let last = |q: &VecDeque<f64>| q.back().copied().unwrap_or(0.0);
    for (label, q, max, value) in [
        (
            "flow",
            &hist.flow_mb_s,
            None,
            format!("{:.1} MB/s", last(&hist.flow_mb_s)),
        ),
        (
            "hot ",
            &hist.hot,
            Some(1.0),
            format!("{:.0}% core", last(&hist.hot) * 100.0),
        ),
        (
            "disk",
            &hist.disk,
            Some(1.0),
            format!("{:.0}% util", last(&hist.disk) * 100.0),
        ),
        (
            "link",
            &hist.nic,
            Some(1.0),
            format!("{:.0}% link", last(&hist.nic) * 100.0),
        ),
    ] {
        lines.push(Line::from(format!("{label} {} {value}", spark(q, max, w))));
    }
}

fn body_lines(
    lines: &mut Vec<Line<'static>>,
    hello: &Hello,
    smp: &nasprobe_proto::Sample,
    shaping: Option<&nasprobe_proto::Shaping>,
    width: usize,
    compact: bool,
) {
    let bw = width.saturating_sub(16).clamp(4, 30);
    let total = model::cpu_busy(&smp.cpu_total).unwrap_or(0.0);
    lines.push(head(&format!(
        "cpu {:>3.0}%  run {} blocked {}",
        total * 100.0,
        smp.procs_running,
        smp.procs_blocked
    )));
    if compact {
        let cores: Vec<String> = smp
            .cpus
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let b = model::cpu_busy(c).unwrap_or(0.0);
                format!("cpu{i} {:.0}%", b * 100.0)
            })
            .collect();
        lines.push(Line::from(cores.join("  ")));
    } else {
        for (i, c) in smp.cpus.iter().enumerate() {
            let b = model::cpu_busy(c).unwrap_or(0.0);
            lines.push(Line::from(vec![
                Span::raw(format!("cpu{i:<3}")),
                Span::styled(bar(b, bw), level(b)),
                Span::raw(format!(" {:>3.0}%", b * 100.0)),
            ]));
        }
    }
    if let Some(t) = model::hottest_thread(hello, smp) {
        lines.push(Line::from(vec![
            Span::raw("hot "),
            Span::styled(hot_text(&t), level(t.core_fraction)),
        ]));
    }
    if !compact {
        lines.push(head("top processes"));
        for p in smp.top.iter().take(5) {
            let c = model::proc_cpu(hello, smp, p);
            lines.push(Line::from(format!(
                "{:>6} {:<15} {:>4.0}% {}",
                p.pid,
                p.comm.as_str(),
                c * 100.0,
                p.state as char
            )));
        }
    }
    lines.push(head("disks   util  await   MB/s"));
    let disks = disk_rows(hello, smp);
    if disks.is_empty() {
        lines.push(Line::from("(no disks)"));
    }
    for d in disks.iter().take(if compact { 3 } else { 6 }) {
        lines.push(Line::from(vec![
            Span::raw(format!("{:<7}", d.name)),
            Span::styled(
                format!("{:>4.0}%", d.figures.util * 100.0),
                level(d.figures.util),
            ),
            Span::raw(format!(
                " {:>6} {:>6.1}{}",
                d.figures
                    .await_ms
                    .map_or("-".into(), |a| format!("{a:.1}ms")),
                (d.figures.read_bps + d.figures.write_bps) / 1e6,
                if d.is_md { " (md: see members)" } else { "" }
            )),
        ]));
    }
    lines.push(head("nics    rx/tx MB/s   link"));
    for n in nic_rows(hello, smp) {
        let u = n.util.unwrap_or(0.0);
        let name = if n.slave {
            format!("↳ {}", n.name)
        } else {
            n.name.clone()
        };
        let link = match (&n.bond, n.util) {
            (Some((k, Some(c))), Some(u)) => {
                format!(
                    "{k} slaves; the flow rides {c}: {:.0}% of its link",
                    u * 100.0
                )
            }
            (Some((k, _)), _) => format!("{k} slaves, no flow"),
            (None, Some(u)) => format!(
                "{:>3.0}% of {} Mbit/s{}",
                u * 100.0,
                n.speed_mbit,
                if n.carries_flow { " ← the flow" } else { "" }
            ),
            (None, None) if !n.seen => "idle".into(),
            (None, None) if n.up => "speed ?".into(),
            (None, None) => "down".into(),
        };
        let link = match cap_text(hello, shaping, &n.name) {
            Some(cap) => format!("{link} · {cap}"),
            None => link,
        };
        lines.push(Line::from(vec![
            Span::raw(format!("{name:<7} {:>5.1}/{:<5.1} ", n.rx, n.tx)),
            Span::styled(link, level(u)),
        ]));
    }
    if let Some(m) = model::mem_rate(smp) {
        let f = m.used_mib / m.total_mib.max(1.0);
        lines.push(Line::from(vec![
            Span::styled("mem ", Style::default().add_modifier(Modifier::BOLD)),
            Span::styled(
                format!("{:.0}/{:.0} MiB", m.used_mib, m.total_mib),
                level(f),
            ),
            Span::raw(format!(
                "  swap {:.0}/{:.0} MiB {:.0} pg/s",
                m.swap_used_mib, m.swap_total_mib, m.swap_pages_s
            )),
        ]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_keeps_bold_and_reverses_what_had_a_background() {
        let mut buf = ratatui::buffer::Buffer::empty(Rect::new(0, 0, 2, 1));
        buf.content[0].set_style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD));
        buf.content[1].set_style(Style::default().fg(Color::White).bg(Color::Red));
        uncolor(&mut buf);
        for c in &buf.content {
            assert_eq!((c.fg, c.bg), (Color::Reset, Color::Reset));
        }
        assert!(buf.content[0].modifier.contains(Modifier::BOLD));
        assert!(!buf.content[0].modifier.contains(Modifier::REVERSED));
        assert!(buf.content[1].modifier.contains(Modifier::REVERSED));
    }
}

//! `nasprobe watch`: record + a live side-by-side view, one panel per host.
//!
//! On a terminal: ratatui, keys `q` quit, `?` help. Otherwise (or with `--plain`): one plain
//! line per host per second.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nasprobe_proto::Hello;
use ratatui::Frame;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::conn::{Collector, HostLive, Live, Status, Target};
use crate::context::Context;
use crate::hosts::HostSpec;
use crate::model;

pub fn run(
    c: &Context,
    local: bool,
    duration: Option<Duration>,
    plain: bool,
    hosts: &[String],
) -> anyhow::Result<()> {
    let mut targets = c.targets(hosts, local)?;
    let _agent = if local {
        let a = crate::local::start()?;
        let token = crate::client::read_token(&a.token_file)?;
        targets.insert(
            0,
            Target {
                spec: HostSpec {
                    name: "local".into(),
                    addr: a.addr.clone(),
                    token_file: Some(a.token_file.clone()),
                },
                token: Arc::new(token),
            },
        );
        Some(a)
    } else {
        None
    };
    let store = c.open_store()?;
    crate::signals::install();
    let col = Collector::start(store, targets, Some(c.retention));
    let res = if plain || !std::io::stdout().is_terminal() {
        plain_loop(&col.live, duration)
    } else {
        tui_loop(&col.live, duration)
    };
    col.finish()?;
    res
}

fn stop_requested(start: Instant, duration: Option<Duration>) -> bool {
    crate::signals::stop_requested() || duration.is_some_and(|d| start.elapsed() >= d)
}

fn plain_loop(live: &Live, duration: Option<Duration>) -> anyhow::Result<()> {
    use std::io::Write;
    let start = Instant::now();
    let mut next = start + Duration::from_secs(1);
    while !stop_requested(start, duration) {
        if Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        next += Duration::from_secs(1);
        let mut out = std::io::stdout().lock();
        for h in live.snapshot() {
            if writeln!(out, "{}", plain_line(&h)).is_err() {
                return Ok(()); // stdout closed (a pipe into head): stop quietly
            }
        }
        if let Some(e) = live.store_error.lock().ok().and_then(|e| e.clone()) {
            writeln!(out, "store: {e}").ok();
        }
        out.flush().ok();
    }
    Ok(())
}

fn status_text(h: &HostLive) -> String {
    let s = status_text_conn(h);
    match &h.bad {
        Some(b) if h.rejected > 0 => format!("BAD: {} rejected, last: {b}; {s}", h.rejected),
        Some(b) => format!("BAD: {b}; {s}"),
        None => s,
    }
}

fn status_text_conn(h: &HostLive) -> String {
    match &h.status {
        Status::Connecting => "connecting".into(),
        Status::Connected => match &h.gap {
            Some(g) => format!("connected, gap: {g}"),
            None => "connected".into(),
        },
        Status::Reconnecting { error, retry_in } => {
            format!("reconnecting in {:.0}s ({error})", retry_in.as_secs_f64())
        }
    }
}

/// One line for one host: status, CPU, hottest thread, busiest disk and NIC, memory.
pub(crate) fn plain_line(h: &HostLive) -> String {
    let mut s = format!("{} [{}]", h.name, status_text(h));
    let (Some(hello), Some((seq, _, smp))) = (&h.hello, &h.last) else {
        return s + " no sample yet";
    };
    let cores: Vec<String> = smp
        .cpus
        .iter()
        .map(|c| model::cpu_busy(c).map_or("-".into(), |b| format!("{:.0}", b * 100.0)))
        .collect();
    s += &format!(
        " seq {seq} cpu {}% cores [{}]",
        model::cpu_busy(&smp.cpu_total).map_or("-".into(), |b| format!("{:.0}", b * 100.0)),
        cores.join(" ")
    );
    if let Some(t) = model::hottest_thread(hello, smp) {
        s += &format!(
            " hot {}/{} {:.0}%",
            t.process,
            t.thread,
            t.core_fraction * 100.0
        );
    }
    if let Some(d) = smp
        .disks
        .iter()
        .filter_map(|d| model::disk_rate(hello, smp, d))
        .max_by(|a, b| a.figures.util.total_cmp(&b.figures.util))
    {
        s += &format!(
            " | disk {} {:.0}% {:.1}ms {:.1}MB/s",
            d.name,
            d.figures.util * 100.0,
            d.figures.await_ms.unwrap_or(0.0),
            (d.figures.read_bps + d.figures.write_bps) / 1e6
        );
    }
    if let Some(n) = smp
        .nics
        .iter()
        .filter_map(|n| model::nic_rate(hello, smp, n))
        .max_by(|a, b| {
            (a.figures.rx_bps.max(a.figures.tx_bps))
                .total_cmp(&b.figures.rx_bps.max(b.figures.tx_bps))
        })
    {
        s += &format!(
            " | nic {} rx {:.1} tx {:.1} MB/s{}",
            n.name,
            n.figures.rx_bps / 1e6,
            n.figures.tx_bps / 1e6,
            n.figures.util.map_or(String::new(), |u| format!(
                " {:.0}% of {} Mbit/s",
                u * 100.0,
                n.speed_mbit
            ))
        );
    }
    if let Some(m) = model::mem_rate(smp) {
        s += &format!(
            " | mem {:.0}/{:.0}MiB swap {:.0}MiB",
            m.used_mib, m.total_mib, m.swap_used_mib
        );
    }
    s
}

fn tui_loop(live: &Live, duration: Option<Duration>) -> anyhow::Result<()> {
    let mut term = ratatui::init();
    let start = Instant::now();
    let mut help = false;
    let res = (|| -> anyhow::Result<()> {
        while !stop_requested(start, duration) {
            let hosts = live.snapshot();
            let store_err = live.store_error.lock().ok().and_then(|e| e.clone());
            term.draw(|f| draw(f, &hosts, store_err.as_deref(), help))?;
            if event::poll(Duration::from_millis(250))?
                && let TermEvent::Key(k) = event::read()?
                && k.kind == KeyEventKind::Press
            {
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => break,
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => break,
                    KeyCode::Char('?') | KeyCode::Char('h') => help = !help,
                    _ => {}
                }
            }
        }
        Ok(())
    })();
    ratatui::restore();
    res
}

fn draw(f: &mut Frame, hosts: &[HostLive], store_err: Option<&str>, help: bool) {
    let area = f.area();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(3), Constraint::Length(1)])
        .split(area);
    let n = hosts.len().max(1) as u32;
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints((0..n).map(|_| Constraint::Ratio(1, n)).collect::<Vec<_>>())
        .split(rows[0]);
    for (h, r) in hosts.iter().zip(cols.iter()) {
        draw_host(f, h, *r);
    }
    let foot = match store_err {
        Some(e) => Line::from(Span::styled(
            format!(" STORE PAUSED: {e}"),
            Style::default().fg(Color::White).bg(Color::Red),
        )),
        None => Line::from(" q quit  ? help").style(Style::default().fg(Color::DarkGray)),
    };
    f.render_widget(Paragraph::new(foot), rows[1]);
    if help {
        let w = area.width.min(64);
        let r = Rect::new(
            area.x + (area.width - w) / 2,
            area.y + 2,
            w,
            area.height.min(12),
        );
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(vec![
                Line::from("nasprobe watch: one panel per host, live."),
                Line::from(""),
                Line::from("cpu     per core busy %; hot = busiest thread, % of ONE core"),
                Line::from("disks   util % (busy time), await ms, MB/s (md: see members)"),
                Line::from("nics    MB/s and % of link speed (full duplex: max(rx,tx))"),
                Line::from("status  connected / reconnecting / gap (never hidden)"),
                Line::from("Everything shown is also stored (--db)."),
                Line::from(""),
                Line::from("q quit   ? close this help"),
            ])
            .block(Block::default().borders(Borders::ALL).title(" help ")),
            r,
        );
    }
}

fn bar(frac: f64, width: usize) -> String {
    let eighths = (frac.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    const PART: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];
    s.push_str(PART[eighths % 8]);
    let used = eighths / 8 + usize::from(!eighths.is_multiple_of(8));
    s + &" ".repeat(width.saturating_sub(used))
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

fn draw_host(f: &mut Frame, h: &HostLive, r: Rect) {
    let title = match &h.hello {
        Some(hello) => format!(
            " {} — {} {} {} ",
            h.name, hello.host_name, hello.arch, hello.kernel_release
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
        body_lines(&mut lines, hello, smp, width);
    } else {
        lines.push(Line::from("waiting for the first sample..."));
    }
    if !h.events.is_empty() {
        lines.push(head("events"));
        for (t, e) in h.events.iter().rev().take(5) {
            let time = nasprobe_analysis::time::rfc3339(*t);
            lines.push(Line::from(format!(
                "{} {}",
                &time[11..19],
                model::event_text(e)
            )));
        }
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(title))
            .wrap(Wrap { trim: true }),
        r,
    );
}

fn body_lines(
    lines: &mut Vec<Line<'static>>,
    hello: &Hello,
    smp: &nasprobe_proto::Sample,
    width: usize,
) {
    let bw = width.saturating_sub(16).clamp(4, 30);
    let total = model::cpu_busy(&smp.cpu_total).unwrap_or(0.0);
    lines.push(head(&format!(
        "cpu {:>3.0}%  run {} blocked {}",
        total * 100.0,
        smp.procs_running,
        smp.procs_blocked
    )));
    for (i, c) in smp.cpus.iter().enumerate() {
        let b = model::cpu_busy(c).unwrap_or(0.0);
        lines.push(Line::from(vec![
            Span::raw(format!("cpu{i:<3}")),
            Span::styled(bar(b, bw), level(b)),
            Span::raw(format!(" {:>3.0}%", b * 100.0)),
        ]));
    }
    if let Some(t) = model::hottest_thread(hello, smp) {
        lines.push(Line::from(vec![
            Span::raw("hot "),
            Span::styled(
                format!(
                    "{}/{} [{}] {:.0}% of a core",
                    t.process,
                    t.thread,
                    t.tid,
                    t.core_fraction * 100.0
                ),
                level(t.core_fraction),
            ),
        ]));
    }
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
    let mut disks: Vec<_> = smp
        .disks
        .iter()
        .filter_map(|d| model::disk_rate(hello, smp, d))
        .collect();
    disks.sort_by(|a, b| b.figures.util.total_cmp(&a.figures.util));
    lines.push(head("disks   util  await   MB/s"));
    if disks.is_empty() {
        lines.push(Line::from("(all idle)"));
    }
    for d in disks.iter().take(6) {
        lines.push(Line::from(vec![
            Span::raw(format!("{:<7}", d.name)),
            Span::styled(
                format!("{:>4.0}%", d.figures.util * 100.0),
                level(d.figures.util),
            ),
            Span::raw(format!(
                " {:>6} {:>6.1}",
                d.figures
                    .await_ms
                    .map_or("-".into(), |a| format!("{a:.1}ms")),
                (d.figures.read_bps + d.figures.write_bps) / 1e6
            )),
        ]));
    }
    lines.push(head("nics    rx/tx MB/s   link"));
    for n in smp
        .nics
        .iter()
        .filter_map(|n| model::nic_rate(hello, smp, n))
        .take(4)
    {
        let u = n.figures.util.unwrap_or(0.0);
        lines.push(Line::from(vec![
            Span::raw(format!(
                "{:<7} {:>5.1}/{:<5.1} ",
                n.name,
                n.figures.rx_bps / 1e6,
                n.figures.tx_bps / 1e6
            )),
            Span::styled(
                match n.figures.util {
                    Some(u) => format!("{:>3.0}% of {} Mbit/s", u * 100.0, n.speed_mbit),
                    None if n.figures.up => "speed ?".into(),
                    None => "down".into(),
                },
                level(u),
            ),
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

//! The HTML report: one chart per resource per host, the verdict text, self-contained,
//! well-formed (checked as XML by a tiny parser below), bounded in size for seven days of data
//! with every event kept, and a golden test on the structure of the document (element names,
//! ids, classes and data attributes; no coordinates).
//!
//! Regenerate the golden file with `NASPROBE_BLESS=1 cargo test -p nasprobe-analysis --test it html::`.

use crate::html_scenario;

use std::collections::BTreeMap;

use nasprobe_analysis::{HostData, Options, analyze, html};

// --- a tiny XML parser: enough to prove well-formedness and to walk the document ------------

#[derive(Debug, Clone)]
enum Node {
    El(El),
    Text(String),
}

#[derive(Debug, Clone, Default)]
struct El {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
}

impl El {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    fn has_class(&self, c: &str) -> bool {
        self.attr("class")
            .is_some_and(|v| v.split_whitespace().any(|x| x == c))
    }

    fn walk<'a>(&'a self, out: &mut Vec<&'a El>) {
        out.push(self);
        for c in &self.children {
            if let Node::El(e) = c {
                e.walk(out);
            }
        }
    }

    fn all(&self) -> Vec<&El> {
        let mut v = Vec::new();
        self.walk(&mut v);
        v
    }

    fn text(&self) -> String {
        let mut s = String::new();
        for c in &self.children {
            match c {
                Node::Text(t) => s.push_str(t),
                Node::El(e) => s.push_str(&e.text()),
            }
        }
        s
    }
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find(';')
            .ok_or_else(|| format!("bare & in {:?}", &rest[i..rest.len().min(i + 30)]))?;
        let ent = &rest[i + 1..i + end];
        let ch = match ent {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or(format!("bad entity &{e};"))?,
            e if e.starts_with('#') => e[1..]
                .parse::<u32>()
                .ok()
                .and_then(char::from_u32)
                .ok_or(format!("bad entity &{e};"))?,
            e => return Err(format!("unknown entity &{e};")),
        };
        out.push(ch);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == ':')
}

/// Parses the document as XML (after its doctype); `<script>` and `<style>` hold raw text.
fn parse(doc: &str) -> Result<El, String> {
    let mut s = doc.trim_start();
    if s.starts_with("<!DOCTYPE") {
        s = &s[s.find('>').ok_or("unterminated doctype")? + 1..];
    }
    let mut stack: Vec<El> = vec![El {
        name: "#root".into(),
        ..Default::default()
    }];
    while !s.is_empty() {
        let Some(lt) = s.find('<') else {
            if !s.trim().is_empty() {
                stack
                    .last_mut()
                    .unwrap()
                    .children
                    .push(Node::Text(unescape(s)?));
            }
            break;
        };
        if lt > 0 {
            let t = &s[..lt];
            if t.contains('>') {
                return Err(format!("stray > in text {t:?}"));
            }
            stack
                .last_mut()
                .unwrap()
                .children
                .push(Node::Text(unescape(t)?));
        }
        s = &s[lt..];
        if let Some(rest) = s.strip_prefix("</") {
            let gt = rest.find('>').ok_or("unterminated end tag")?;
            let name = rest[..gt].trim();
            let el = stack.pop().ok_or("end tag without start")?;
            if el.name != name {
                return Err(format!("</{name}> closes <{}>", el.name));
            }
            stack
                .last_mut()
                .ok_or("extra end tag")?
                .children
                .push(Node::El(el));
            s = &rest[gt + 1..];
            continue;
        }
        if s.starts_with("<!--") {
            s = &s[s.find("-->").ok_or("unterminated comment")? + 3..];
            continue;
        }
        // Start tag: scan to its '>' outside quotes.
        let bytes = s.as_bytes();
        let mut i = 1;
        let mut quote = 0u8;
        while i < bytes.len() {
            let b = bytes[i];
            if quote != 0 {
                if b == quote {
                    quote = 0;
                }
            } else if b == b'"' || b == b'\'' {
                quote = b;
            } else if b == b'>' {
                break;
            } else if b == b'<' {
                return Err(format!("< inside a tag: {:?}", &s[..i.min(80)]));
            }
            i += 1;
        }
        if i >= bytes.len() {
            return Err("unterminated start tag".into());
        }
        let mut inner = &s[1..i];
        let self_closing = inner.ends_with('/');
        if self_closing {
            inner = &inner[..inner.len() - 1];
        }
        s = &s[i + 1..];
        let name_end = inner
            .find(|c: char| c.is_whitespace())
            .unwrap_or(inner.len());
        let name = &inner[..name_end];
        if !is_name(name) {
            return Err(format!("bad element name {name:?}"));
        }
        let mut el = El {
            name: name.to_string(),
            ..Default::default()
        };
        let mut a = inner[name_end..].trim_start();
        while !a.is_empty() {
            let eq = a
                .find('=')
                .ok_or(format!("attribute without value in <{name} {a}"))?;
            let k = a[..eq].trim();
            if !is_name(k) {
                return Err(format!("bad attribute name {k:?} in <{name}>"));
            }
            let v = &a[eq + 1..];
            let q = v.chars().next().ok_or("attribute value missing")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted attribute {k} in <{name}>"));
            }
            let close = v[1..].find(q).ok_or("unterminated attribute value")?;
            let val = &v[1..1 + close];
            if val.contains('<') {
                return Err(format!("< in attribute {k}"));
            }
            if el.attr(k).is_some() {
                return Err(format!("duplicate attribute {k} in <{name}>"));
            }
            el.attrs.push((k.to_string(), unescape(val)?));
            a = v[close + 2..].trim_start();
        }
        if self_closing {
            stack.last_mut().unwrap().children.push(Node::El(el));
        } else if name == "script" || name == "style" {
            let end = format!("</{name}>");
            let j = s.find(&end).ok_or(format!("unterminated <{name}>"))?;
            el.children.push(Node::Text(s[..j].to_string()));
            s = &s[j + end.len()..];
            stack.last_mut().unwrap().children.push(Node::El(el));
        } else {
            stack.push(el);
        }
    }
    if stack.len() != 1 {
        return Err(format!("unclosed <{}>", stack.last().unwrap().name));
    }
    let root = stack.pop().unwrap();
    let els: Vec<&El> = root
        .children
        .iter()
        .filter_map(|c| match c {
            Node::El(e) => Some(e),
            Node::Text(_) => None,
        })
        .collect();
    if els.len() != 1 {
        return Err(format!("{} root elements", els.len()));
    }
    Ok(els[0].clone())
}

// --- helpers ---------------------------------------------------------------------------------

const RESOURCES: [&str; 5] = ["throughput", "cpu", "disk", "memory", "bottleneck"];

fn render(hosts: &[HostData]) -> (String, nasprobe_analysis::Report) {
    let a = analyze(hosts, &Options::default());
    (html::render(hosts, &a), a.report)
}

fn charts(doc: &El) -> Vec<&El> {
    doc.all()
        .into_iter()
        .filter(|e| e.name == "svg" && e.has_class("chart"))
        .collect()
}

fn by_id<'a>(doc: &'a El, id: &str) -> Option<&'a El> {
    doc.all().into_iter().find(|e| e.attr("id") == Some(id))
}

/// One chart per resource per host, and nothing else.
fn assert_charts(doc: &El, hosts: &[HostData]) {
    let mut count: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in charts(doc) {
        let h = c.attr("data-host").expect("data-host").to_string();
        let r = c.attr("data-resource").expect("data-resource").to_string();
        *count.entry((h, r)).or_default() += 1;
    }
    for h in hosts {
        for r in RESOURCES {
            assert_eq!(
                count.get(&(h.name.clone(), r.to_string())),
                Some(&1),
                "{}/{r}: {count:?}",
                h.name
            );
        }
    }
    assert_eq!(count.len(), hosts.len() * RESOURCES.len(), "{count:?}");
}

/// Every event of a host appears on each of its time charts (markers may group several); every
/// gap is a shaded band on each.
fn assert_events_kept(doc: &El, hosts: &[HostData]) {
    for (c, host) in time_charts(doc, hosts) {
        let els = c.all();
        assert_eq!(
            marked(c),
            host.events.len(),
            "{:?} {:?}",
            c.attr("data-host"),
            c.attr("data-resource")
        );
        // Each marker's hover text lists one line per event.
        let lines: usize = els
            .iter()
            .filter(|e| e.name == "g" && e.has_class("ev"))
            .map(|e| {
                let t = e
                    .children
                    .iter()
                    .find_map(|n| match n {
                        Node::El(x) if x.name == "title" => Some(x.text()),
                        _ => None,
                    })
                    .expect("marker title");
                t.lines().count()
            })
            .sum();
        assert_eq!(lines, host.events.len());
        let bands = els
            .iter()
            .filter(|e| e.name == "rect" && e.has_class("gap"))
            .count();
        assert_eq!(bands, host.gaps.len());
    }
}

/// The charts on the time axis (all but the bottleneck bars), each with its host.
fn time_charts<'a>(doc: &'a El, hosts: &'a [HostData]) -> Vec<(&'a El, &'a HostData)> {
    charts(doc)
        .into_iter()
        .filter(|c| c.attr("data-resource") != Some("bottleneck"))
        .map(|c| {
            let host = hosts
                .iter()
                .find(|h| Some(h.name.as_str()) == c.attr("data-host"))
                .unwrap();
            (c, host)
        })
        .collect()
}

/// How many events the markers of chart `c` stand for (their `data-n`).
fn marked(c: &El) -> usize {
    c.all()
        .iter()
        .filter(|e| e.name == "g" && e.has_class("ev"))
        .map(|e| e.attr("data-n").unwrap().parse::<usize>().unwrap())
        .sum()
}

fn assert_self_contained(page: &str) {
    for bad in [
        "http://",
        "https://",
        "src=",
        "<link",
        "url(",
        "@import",
        "@font-face",
    ] {
        assert!(!page.contains(bad), "page holds {bad:?}");
    }
}

/// The structure: element names with id, class and data attributes (not coordinates), one
/// line per element, indented by depth; runs of identical siblings folded into "×N".
fn structure(e: &El, depth: usize, out: &mut Vec<String>) {
    let mut line = format!("{}{}", "  ".repeat(depth), e.name);
    for (k, v) in &e.attrs {
        let geometry = ["data-t0", "data-t1", "data-x0", "data-x1"].contains(&k.as_str());
        if (k == "id" || k == "class" || k.starts_with("data-")) && !geometry {
            line.push_str(&format!(" {k}={v:?}"));
        }
    }
    out.push(line);
    let mut kids: Vec<Vec<String>> = Vec::new();
    for c in &e.children {
        if let Node::El(x) = c {
            let mut v = Vec::new();
            structure(x, depth + 1, &mut v);
            kids.push(v);
        }
    }
    let mut i = 0;
    while i < kids.len() {
        let mut j = i + 1;
        while j < kids.len() && kids[j] == kids[i] {
            j += 1;
        }
        if j - i > 1 {
            let mut first = kids[i].clone();
            first[0].push_str(&format!(" ×{}", j - i));
            out.extend(first);
        } else {
            out.extend(kids[i].iter().cloned());
        }
        i = j;
    }
}

// --- tests -----------------------------------------------------------------------------------

#[test]
fn ten_minutes_two_hosts() {
    let hosts = html_scenario::ten_minutes();
    let (page, report) = render(&hosts);
    if let Some(p) = std::env::var_os("NASPROBE_HTML_OUT") {
        std::fs::write(p, &page).unwrap();
    }
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_eq!(doc.name, "html");
    assert_charts(&doc, &hosts);
    assert_events_kept(&doc, &hosts);
    assert_self_contained(&page);
    assert!(page.contains("prefers-color-scheme: dark"));

    // The verdict paragraph: the headline, the evidence, what would not help, the restarts
    // and the gap, as the report has them.
    assert_eq!(report.bottleneck.resource, "cpu_thread");
    let v = by_id(&doc, "verdict").expect("#verdict").text();
    assert!(
        v.contains("The wall is on dst: one thread of synoreplicad at 9"),
        "{v}"
    );
    assert!(v.contains("MB/s sustained"), "{v}");
    let plain = |s: &str| s.replace('`', "");
    for e in report
        .bottleneck
        .evidence
        .iter()
        .filter(|e| !e.starts_with("flow "))
    {
        assert!(v.contains(&plain(e)), "missing evidence {e:?}");
    }
    for w in &report.bottleneck.would_not_help {
        let w = w.trim_start_matches("what would:").trim();
        assert!(v.contains(&plain(w)), "missing {w:?}");
    }
    assert_eq!(report.patterns.len(), 1);
    assert!(v.contains(&plain(&report.patterns[0].summary)), "{v}");
    assert!(v.contains("agent restarted"), "{v}");

    // The wall is the red bar on dst.
    let walls: Vec<(Option<&str>, Option<&str>)> = charts(&doc)
        .into_iter()
        .flat_map(|c| {
            c.all()
                .into_iter()
                .filter(|e| e.has_class("wall") && e.name == "g")
                .map(move |e| (c.attr("data-host"), e.attr("data-kind")))
        })
        .collect();
    assert_eq!(walls, vec![(Some("dst"), Some("cpu_thread"))]);
}

#[test]
fn seven_days_stays_bounded_and_keeps_every_event() {
    let hosts = html_scenario::seven_days();
    let events: usize = hosts.iter().map(|h| h.events.len()).sum();
    assert!(events > 150, "{events}");
    let (page, _) = render(&hosts);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &hosts);
    assert_events_kept(&doc, &hosts);
    assert_self_contained(&page);
    // The events table lists them all too.
    let rows = doc
        .all()
        .into_iter()
        .filter(|e| e.name == "tr" && e.attr("class").is_some_and(|c| c.starts_with("ev-")))
        .count();
    assert_eq!(rows, events);
    // Downsampled: no line has more points than the plot has pixels (plus segment starts).
    for c in charts(&doc) {
        for p in c
            .all()
            .into_iter()
            .filter(|e| e.name == "path" && e.has_class("line"))
        {
            let pts = p.attr("d").unwrap().matches(['M', 'L']).count();
            assert!(pts <= 600, "{pts} points in {:?}", p.attr("class"));
        }
    }
}

#[test]
fn empty_and_single_host_render() {
    let empty = vec![HostData {
        name: "lonely".into(),
        ..Default::default()
    }];
    let (page, _) = render(&empty);
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &empty);
    assert!(
        by_id(&doc, "verdict")
            .unwrap()
            .text()
            .contains("No wall found")
    );

    let one = vec![html_scenario::ten_minutes().remove(1)];
    let (page, _) = render(&one);
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &one);
    assert_events_kept(&doc, &one);
}

#[test]
fn names_are_escaped() {
    let mut hosts = html_scenario::ten_minutes();
    hosts[0].name = "a<b>&\"c'".into();
    let (page, _) = render(&hosts);
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &hosts);
}

#[test]
fn golden_structure() {
    let hosts = html_scenario::ten_minutes();
    let (page, _) = render(&hosts);
    let doc = parse(&page).unwrap();
    let mut lines = Vec::new();
    structure(&doc, 0, &mut lines);
    let got = lines.join("\n") + "\n";
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/html/structure_10min.txt"
    );
    if std::env::var_os("NASPROBE_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(path).parent().unwrap()).unwrap();
        std::fs::write(path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}; run with NASPROBE_BLESS=1 to create it"));
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "structure differs from {path} at line {}:\n got: {:?}\nwant: {:?}\n(NASPROBE_BLESS=1 regenerates it)",
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}

/// Over a long window (rollups, `step_ms`) a week with a crash loop of 20,000 exits stays under
/// 2 MB: the events table lists the groups with their counts and each group's first and last
/// events, the lone OOM kill among them; each marker says how many events it stands for, and
/// together they stand for every event.
#[test]
fn long_window_with_20000_events_stays_small_and_names_the_counts() {
    let mut hosts = html_scenario::seven_days_crash_loop(20_000);
    // A hostile name, in a group and a marker of its own: escaped like every other.
    let t = hosts[0].events[100].time_ms + 1;
    hosts[0].events.insert(
        101,
        html_scenario::process_end(t, 66, "a<b>&\"c\u{1b}[2J", Some(3), None, false),
    );
    let events: usize = hosts.iter().map(|h| h.events.len()).sum();
    assert!(events > 20_000, "{events}");
    let a = analyze(
        &hosts,
        &Options {
            step_ms: Some(60_000),
            ..Options::default()
        },
    );
    let page = html::render(&hosts, &a);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &hosts);
    assert_self_contained(&page);
    assert!(!page.contains('\u{1b}'));
    assert!(page.contains("a&lt;b&gt;&amp;&quot;c"));
    // Every event is counted by the markers of each time chart.
    for (c, host) in time_charts(&doc, &hosts) {
        assert_eq!(
            marked(c),
            host.events.len(),
            "{:?}",
            c.attr("data-resource")
        );
    }
    // The loop is one group of 20,000 with its first and last times; its markers say how many
    // alike events they hold.
    let groups: Vec<&El> = doc
        .all()
        .into_iter()
        .filter(|e| e.name == "tr" && e.has_class("group"))
        .collect();
    let total: usize = groups
        .iter()
        .map(|g| g.attr("data-n").unwrap().parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, events);
    let lp = groups
        .iter()
        .find(|g| g.text().contains("rsyncd"))
        .expect("the loop's group");
    assert_eq!(lp.attr("data-n"), Some("20000"));
    assert!(lp.text().starts_with("20000"), "{}", lp.text());
    assert!(lp.text().contains("exited with status 1"), "{}", lp.text());
    assert!(
        lp.text().contains("2025-11-30 00:00:01 .. 2025-12-06"),
        "{}",
        lp.text()
    );
    assert!(page.contains(" alike events up to "));
    let summary = doc
        .all()
        .into_iter()
        .find(|e| e.name == "summary" && e.text().starts_with("Events ("))
        .unwrap()
        .text();
    assert!(
        summary.contains(&format!("{events} in {} groups", groups.len())),
        "{summary}"
    );
    // The rows: the first and last few of each group, the OOM kill one of them.
    let rows: Vec<String> = doc
        .all()
        .into_iter()
        .filter(|e| e.name == "tr" && e.attr("class").is_some_and(|c| c.starts_with("ev-")))
        .map(El::text)
        .collect();
    assert_eq!(rows.len(), a.report.events.len());
    assert!(rows.len() < 200, "{}", rows.len());
    assert_eq!(
        rows.iter().filter(|r| r.contains("OOM killer")).count(),
        1,
        "{rows:?}"
    );
    assert_eq!(rows.iter().filter(|r| r.contains("rsyncd")).count(), 6);
    assert_eq!(rows.iter().filter(|r| r.contains("a<b>&\"c")).count(), 1);
}

#[test]
fn ten_hosts_over_a_long_window_stay_under_2_mb() {
    // Five pairs of the week: ten hosts of 10,080 one-minute steps each.
    let mut hosts: Vec<HostData> = Vec::new();
    for k in 0..5 {
        for mut h in html_scenario::seven_days() {
            h.name = format!("{}-{k}", h.name);
            hosts.push(h);
        }
    }
    let a = analyze(
        &hosts,
        &Options {
            step_ms: Some(60_000),
            ..Options::default()
        },
    );
    let page = html::render(&hosts, &a);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    let doc = parse(&page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_charts(&doc, &hosts);
    assert_self_contained(&page);
    // The same hosts one pair at a time keep one bucket per pixel: more points per chart.
    let pair = &hosts[..2];
    let one = html::render(
        pair,
        &analyze(
            pair,
            &Options {
                step_ms: Some(60_000),
                ..Options::default()
            },
        ),
    );
    assert!(
        one.len() * 3 > page.len(),
        "ten hosts are drawn coarser than two: {} vs {} bytes",
        page.len(),
        one.len()
    );
}

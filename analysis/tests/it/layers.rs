//! The workspace's shape as a rule: in every crate the modules use each other only downwards
//! (the graph of `crate::`, `super::` and child paths outside the test modules has no cycle),
//! and no source file is over 900 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 900;

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a source file ("verdict::limit"), None for lib.rs.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    (parts != ["lib"]).then(|| parts.join("::"))
}

/// The identifier path starting at byte `i` of `line` ("a::b::c" of "a::b::c(x)").
fn path_at(line: &str, i: usize) -> Vec<&str> {
    let rest = &line[i..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    rest[..end].split("::").filter(|s| !s.is_empty()).collect()
}

/// The modules `m` (source `text`) refers to, among `modules`.
fn uses(m: &str, text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    // The test module, private or shared with sibling tests (`pub(crate) mod tests`).
    let body = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min()
    .map_or(text, |i| &text[..i]);
    let own: Vec<&str> = m.split("::").collect();
    let mut out = BTreeSet::new();
    let mut resolve = |full: Vec<&str>| {
        for k in (1..=full.len()).rev() {
            let t = full[..k].join("::");
            if modules.contains(&t) {
                if t != m {
                    out.insert(t);
                }
                break;
            }
        }
    };
    for line in body.lines() {
        let l = line.trim_start();
        if l.starts_with("//") {
            continue;
        }
        let bytes = l.as_bytes();
        for (i, _) in l.match_indices("::") {
            // The start of the path this `::` is in.
            let mut s = i;
            while s > 0 && (bytes[s - 1].is_ascii_alphanumeric() || bytes[s - 1] == b'_') {
                s -= 1;
            }
            if s > 1 && &l[s - 2..s] == "::" {
                continue;
            }
            let p = path_at(l, s);
            match p.first().copied() {
                Some("crate") => resolve(p[1..].to_vec()),
                Some("super") => {
                    let mut full = own[..own.len() - 1].to_vec();
                    full.extend(&p[1..]);
                    resolve(full);
                }
                Some("self") => {
                    let mut full = own.clone();
                    full.extend(&p[1..]);
                    resolve(full);
                }
                // A child module by its own name.
                Some(c) if modules.contains(&format!("{m}::{c}")) => {
                    let mut full = own.clone();
                    full.extend(&p);
                    resolve(full);
                }
                _ => {}
            }
        }
    }
    out
}

/// A cycle of `graph`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        stack.push(v.to_string());
        for w in graph.get(v).into_iter().flatten() {
            match state.get(w.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|x| x == w).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(w.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(w, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in graph.keys() {
        if !state.contains_key(v.as_str()) {
            let mut stack = Vec::new();
            if let Some(c) = visit(v, graph, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// The crates of the workspace whose `src` the rules read.
const CRATES: [&str; 6] = [
    "agent",
    "analysis",
    "collector",
    "formulas",
    "proto",
    "testkit",
];

/// A cycle of the crate at `src`, or a file over [`MAX_LINES`]: one line each.
fn broken_rules(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    // A binary's folder is a crate of its own.
    files.retain(|f| !f.strip_prefix(src).unwrap().starts_with("bin"));
    let texts: BTreeMap<String, String> = files
        .iter()
        .filter_map(|f| Some((module_of(src, f)?, std::fs::read_to_string(f).unwrap())))
        .collect();
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = texts
        .iter()
        .map(|(m, t)| (m.clone(), uses(m, t, &modules)))
        .collect();
    let mut bad = Vec::new();
    // Every cycle, one at a time: each found is cut at its last arrow and the search goes on.
    let mut graph = graph;
    while let Some(c) = cycle(&graph) {
        bad.push(format!(
            "{}: modules that use each other: {}",
            src.display(),
            c.join(" -> ")
        ));
        let (from, to) = (&c[c.len() - 2], &c[c.len() - 1]);
        graph.get_mut(from).unwrap().remove(to);
    }
    for f in &files {
        let n = std::fs::read_to_string(f).unwrap().lines().count();
        if n > MAX_LINES {
            bad.push(format!("{}: {n} lines (at most {MAX_LINES})", f.display()));
        }
    }
    bad
}

#[test]
fn modules_use_each_other_only_downwards_and_files_stay_small() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // The rule sees the arrows it should (the pipeline uses the verdict).
    let src = root.join("analysis/src");
    let modules: BTreeSet<String> = ["analyze", "verdict", "verdict::limit", "report"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let analyze = std::fs::read_to_string(src.join("analyze.rs")).unwrap();
    assert!(uses("analyze", &analyze, &modules).contains("verdict"));
    let mut bad = Vec::new();
    for c in CRATES {
        bad.extend(broken_rules(&root.join(c).join("src")));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The rule catches a cycle, a child used by its parent and a parent used by its child.
#[test]
fn the_rule_sees_cycles() {
    let modules: BTreeSet<String> = ["a", "b", "b::c"].iter().map(|s| s.to_string()).collect();
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(
        uses("a", "use crate::b::c::X;\n", &modules),
        ["b::c".into()].into()
    );
    assert_eq!(
        uses("b", "pub use c::X;\n", &modules),
        ["b::c".into()].into()
    );
    assert_eq!(
        uses("b::c", "use super::f;\n", &modules),
        ["b".into()].into()
    );
    assert!(uses("a", "// crate::b\n", &modules).is_empty());
    assert!(
        uses(
            "a",
            "#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n",
            &modules
        )
        .is_empty()
    );
    assert!(cycle(&g(&[("a", "b"), ("b", "b::c")])).is_none());
    assert_eq!(
        cycle(&g(&[("a", "b"), ("b", "b::c"), ("b::c", "a")])),
        Some(vec!["a".into(), "b".into(), "b::c".into(), "a".into()])
    );
}

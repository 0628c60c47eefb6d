//! docs/DESIGN.md's map stays true: every folder of its "which folder owns what" table exists,
//! and every file or module it names inside a folder (`msg.rs`, `procs/`, `proc_stat`) is there.

use std::path::Path;

/// The map's rows: (folders of the first column, backticked names of the second).
fn rows(design: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let backticked = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    design
        .split("## Map")
        .nth(1)
        .expect("DESIGN.md has a Map section")
        .lines()
        .skip_while(|l| !l.starts_with("| folder"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let mut cols = l.split('|').skip(1);
            Some((backticked(cols.next()?), backticked(cols.next()?)))
        })
        .collect()
}

/// A name inside a folder: `x.rs`, `x/`, or a module `x` (x.rs or x/). Other backticked text
/// (types such as `StoreReader`, paths such as `token/` of another folder) is not a name here
/// when it holds an upper-case letter, a space or `::`; nor is a Rust keyword (`unsafe`).
fn is_module_name(n: &str) -> bool {
    const KEYWORDS: &[&str] = &["unsafe", "async", "const", "static"];
    !n.is_empty()
        && !KEYWORDS.contains(&n)
        && n.trim_end_matches('/')
            .trim_end_matches(".rs")
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn exists_in(root: &Path, folders: &[String], name: &str) -> bool {
    folders.iter().any(|f| {
        let dir = root.join(f);
        let base = name.trim_end_matches('/');
        match (name.ends_with('/'), name.ends_with(".rs")) {
            (true, _) => dir.join(base).is_dir(),
            (_, true) => dir.join(name).is_file(),
            _ => dir.join(format!("{base}.rs")).is_file() || dir.join(base).is_dir(),
        }
    })
}

#[test]
fn every_folder_and_module_of_the_design_map_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let design = std::fs::read_to_string(root.join("docs/DESIGN.md")).unwrap();
    let rows = rows(&design);
    assert!(rows.len() >= 10, "the map has {} rows", rows.len());
    let mut missing = Vec::new();
    for (folders, names) in &rows {
        // A first-column entry may be a file (`collector/src/http.rs`).
        let dirs: Vec<String> = folders
            .iter()
            .filter(|f| !f.ends_with(".rs"))
            .cloned()
            .collect();
        for f in folders {
            if !root.join(f).exists() {
                missing.push(f.clone());
            }
        }
        for n in names.iter().filter(|n| is_module_name(n)) {
            // A file named in the first column is itself a name of the row.
            let named_above = folders.iter().any(|f| f.ends_with(&format!("/{n}")));
            if !named_above && !exists_in(root, &dirs, n) {
                missing.push(format!("{} in {}", n, dirs.join(" or ")));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "DESIGN.md's map names what is not there: {missing:?}"
    );
}

/// The check sees a missing module.
#[test]
fn the_map_check_sees_a_missing_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dirs = ["analysis/src".to_string()];
    assert!(exists_in(root, &dirs, "copies.rs"));
    assert!(exists_in(root, &dirs, "verdict/"));
    assert!(exists_in(root, &dirs, "copies"));
    assert!(!exists_in(root, &dirs, "plot"));
    assert!(!is_module_name("StoreReader"));
    assert!(!is_module_name("unsafe"));
}

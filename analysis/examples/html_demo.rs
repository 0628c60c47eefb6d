//! Writes the HTML report of a synthetic replication (the field's first case) to a file:
//!
//!     cargo run -p nasprobe-analysis --example html_demo -- report.html [--7d]
//!
//! `--7d` renders seven days at one sample a minute instead of ten minutes at 1 Hz. Used by
//! tests/e2e/report_html.sh for the week-long page (the ten-minute page there is a real
//! recording rendered by `nasprobe report --html FILE`).

// The demo uses a part of the tests' scenario builders.
#[path = "../tests/it/html_scenario/mod.rs"]
#[allow(dead_code)]
mod scenario;

use nasprobe_analysis::{Options, analyze, html};

fn main() {
    let mut out = None;
    let mut long = false;
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--7d" => long = true,
            "-h" | "--help" => {
                eprintln!("usage: html_demo OUT.html [--7d]");
                return;
            }
            _ => out = Some(a),
        }
    }
    let Some(out) = out else {
        eprintln!("usage: html_demo OUT.html [--7d]");
        std::process::exit(2);
    };
    let hosts = if long {
        scenario::seven_days()
    } else {
        scenario::ten_minutes()
    };
    let analysis = analyze(&hosts, &Options::default());
    let page = html::render(&hosts, &analysis);
    if let Err(e) = std::fs::write(&out, page) {
        eprintln!("html_demo: cannot write {out}: {e}");
        std::process::exit(1);
    }
    eprintln!("html_demo: wrote {out}");
}

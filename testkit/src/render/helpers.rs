//! What every file's text is made of: /sys entries, units, the kernel's name length, the
//! `name: value` and header/value line shapes.

use std::fmt::Write as _;

/// An entry of the /sys tree (paths relative to the sys root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysEntry {
    File(String, String),
    Symlink(String, String),
}

pub(super) const MB: f64 = 1e6;

pub(super) fn kb(mib: f64) -> u64 {
    (mib.max(0.0) * 1024.0).round() as u64
}

/// The kernel keeps 15 bytes of a command name (TASK_COMM_LEN 16 with the NUL).
pub fn kernel_comm(comm: &str) -> String {
    let mut end = comm.len().min(15);
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    comm[..end].to_string()
}

pub(super) fn meminfo_line(out: &mut String, name: &str, kb: u64) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:<16}{kb:>8} kB");
}

pub(super) fn meminfo_count(out: &mut String, name: &str, n: u64) {
    let label = format!("{name}:");
    let _ = writeln!(out, "{label:<16}{n:>8}");
}

pub(super) fn header_values(out: &mut String, prefix: &str, pairs: &[(&str, i64)]) {
    let _ = write!(out, "{prefix}:");
    for (k, _) in pairs {
        let _ = write!(out, " {k}");
    }
    out.push('\n');
    let _ = write!(out, "{prefix}:");
    for (_, v) in pairs {
        let _ = write!(out, " {v}");
    }
    out.push('\n');
}

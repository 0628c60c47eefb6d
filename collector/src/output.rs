//! Standard output of every command: one buffered writer whose errors travel up as values, so a
//! closed pipe (`nasprobe report | head -1`) ends the program quietly with exit 0 and a full disk
//! (`> /dev/full`) is a one-line error, never a panic of `println!`; and the wall of a test or
//! ladder step in words; whether colours are wanted ([`color_wanted`]: `NO_COLOR`); and the
//! progress and summary lines on stderr that `--quiet` leaves out ([`note`]); every line on
//! stderr goes through [`err_text`] ([`crate::errln!`]): a closed stderr (`2>&1 | head -1`, a
//! `tee` gone at Ctrl-C) asks the command to stop as an interrupt does and is never a panic.

use std::io::{self, BufWriter, StdoutLock, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once by `main` from `--quiet`.
static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: from now on [`note`] prints nothing.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// A progress or summary line for the person at the terminal (`nasprobe: MSG` on stderr), left
/// out under `--quiet`. Errors, warnings, alerts and the lines that explain a failing exit code
/// are printed with `eprintln!` whatever `--quiet` says.
pub fn note(msg: impl std::fmt::Display) {
    if !QUIET.load(Ordering::Relaxed) {
        crate::errln!("nasprobe: {msg}");
    }
}

/// Set once a write to stderr failed: nothing more is written there.
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stderr, unbuffered, whole or not at all as far as the caller is concerned.
/// `eprintln!` panics when stderr is a closed pipe (under `panic = "abort"`: SIGABRT, exit 134,
/// the command's last lines lost); here the first failed write asks the running command to stop
/// as SIGINT does (the store is closed, the exit code is the interrupted command's) and later
/// writes are dropped.
pub fn err_text(text: std::fmt::Arguments<'_>) {
    if STDERR_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut e = io::stderr().lock();
    if e.write_fmt(text).and_then(|()| e.flush()).is_err() {
        STDERR_GONE.store(true, Ordering::Relaxed);
        crate::signals::request_stop();
    }
}

/// `eprintln!` that never panics: a line on stderr through [`err_text`].
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::err_text(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::err_text(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// The buffered, locked stdout a command writes to; call [`Out::finish`] at the end so that a
/// failed final flush is reported too.
pub struct Out(BufWriter<StdoutLock<'static>>);

/// stdout for one command.
pub fn stdout() -> Out {
    Out(BufWriter::with_capacity(1 << 16, io::stdout().lock()))
}

impl Out {
    /// Writes the whole text.
    pub fn text(&mut self, s: &str) -> io::Result<()> {
        self.0.write_all(s.as_bytes())
    }

    /// Writes the text and a newline.
    pub fn line(&mut self, s: &str) -> io::Result<()> {
        self.0.write_all(s.as_bytes())?;
        self.0.write_all(b"\n")
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> io::Result<()> {
        self.0.flush()
    }

    /// The writer, for code that formats straight into it (exporters).
    pub fn writer(&mut self) -> &mut BufWriter<StdoutLock<'static>> {
        &mut self.0
    }
}

/// Whether coloured output is wanted: not when `NO_COLOR` is set to anything but the empty
/// string (no-color.org). The live view follows it; clap's help and the log lines (anstream)
/// follow it on their own.
pub fn color_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether an error (anywhere in its chain) is a write into a closed pipe: the reader went away,
/// which for a command line tool is a normal end, not a failure.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The wall of a test or ladder step in words, from the `bottleneck` JSON of `report --json`
/// ("the wall meanwhile: nic vdst on dst at 97% — " and the verdict's sentence for that host);
/// None when there is none to say.
pub(crate) fn wall_sentence(w: &serde_json::Value) -> Option<String> {
    let res = w.get("resource")?.as_str()?;
    if res == nasprobe_analysis::verdict::Resource::None.as_str() {
        return Some("no wall found on the observed hosts meanwhile".into());
    }
    let host = w.get("host").and_then(|h| h.as_str()).unwrap_or("?");
    let what = w
        .get("device")
        .and_then(|d| d.as_str())
        .or(w.get("process").and_then(|p| p.as_str()))
        .map(|x| format!(" {x}"))
        .unwrap_or_default();
    let u = w.get("utilization").and_then(|u| u.as_f64()).unwrap_or(0.0);
    // The verdict's own sentence for that host says why (a shaper, a thread, a disk).
    let prefix = format!("{host}: ");
    let why = w
        .get("evidence")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str())
        .find_map(|e| e.strip_prefix(&prefix))
        .map(|e| format!(" — {e}"))
        .unwrap_or_default();
    Some(format!(
        "the wall meanwhile: {res}{what} on {host} at {:.0}%{why}",
        u * 100.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_found_under_context() {
        let e = anyhow::Error::from(io::Error::from(io::ErrorKind::BrokenPipe)).context("writing");
        assert!(is_closed_pipe(&e));
        let full = anyhow::Error::from(io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(!is_closed_pipe(&full));
    }
}

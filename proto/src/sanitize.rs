//! The one sanitizer for strings from the wire: process, thread, disk, NIC, mount and host names,
//! command lines, versions and refusal reasons are made safe before anything stores or shows them.
//!
//! An agent (buggy, or hostile with the token) can put terminal escapes into a process name:
//! `ESC[2J` clears the screen, `ESC]0;…BEL` sets the window title, `ESC]52;c;…BEL` writes the
//! clipboard. Bidi overrides (U+202E) turn `gpj.exe` into what looks like `exe.jpg`. Every such
//! character is replaced by a visible stand-in, never dropped silently:
//!
//! - C0 controls (U+0000..U+001F) by their Control Picture (`ESC` → `␛`, U+241B), DEL by `␡`;
//! - C1 controls (U+0080..U+009F), every invisible format character (Unicode general category
//!   Cf: zero-width space, joiners and no-break space U+200B..U+200D, U+2060, U+FEFF, the soft
//!   hyphen, bidi controls U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069, tags
//!   U+E0001..U+E007F, ...; see [`is_format`]) and the line/paragraph separators U+2028/U+2029
//!   by `�` (U+FFFD): `rs\u{200b}ync` shows as `rs�ync`, never as `rsync`.
//!
//! Wire strings have a fixed capacity; when a stand-in does not fit, `?` is used (one byte, never
//! longer than what it replaces). The collector applies it to every message as it is decoded
//! ([`hello`], [`sample`]/[`event`] of each record, [`text`] for `Refused`) and to every row as it
//! is read back (a database written by an older collector); the analysis to every sample it
//! decodes. A new string field in `msg` must be added here.

use crate::{DeviceAdded, Event, Hello, Sample, TestResult};

/// The visible stand-in for `c`, or None when `c` is safe to show.
pub fn stand_in(c: char) -> Option<char> {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32),
        '\u{7f}' => Some('\u{2421}'),
        '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}' => Some('\u{fffd}'),
        c if is_format(c) => Some('\u{fffd}'),
        _ => None,
    }
}

/// True for a character of Unicode general category Cf (format: invisible, yet it changes
/// how text shows or compares), as of Unicode 15.1.
pub fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// True when `s` holds nothing [`stand_in`] would replace.
pub fn is_safe(s: &str) -> bool {
    s.chars().all(|c| stand_in(c).is_none())
}

/// `s` with every unsafe character replaced by its stand-in (for text without a capacity).
#[cfg(feature = "std")]
pub fn text(s: &str) -> std::string::String {
    s.chars().map(|c| stand_in(c).unwrap_or(c)).collect()
}

/// Makes a fixed-capacity wire string safe in place; true when it changed.
pub fn fix<const N: usize>(s: &mut heapless::String<N>) -> bool {
    if is_safe(s) {
        return false;
    }
    let mut out = heapless::String::<N>::new();
    for (i, c) in s.char_indices() {
        let want = stand_in(c).unwrap_or(c);
        // Room for this character and one byte for each after it (each can shrink to `?`).
        let rest: usize = s[i + c.len_utf8()..]
            .chars()
            .map(|c| {
                if stand_in(c).is_some() {
                    1
                } else {
                    c.len_utf8()
                }
            })
            .sum();
        let fits = out.len() + want.len_utf8() + rest <= N;
        let pushed = if fits {
            want
        } else if stand_in(c).is_some() {
            '?'
        } else {
            c
        };
        // Cannot fail: the replaced string is never longer than the capacity (see `rest`).
        let _ = out.push(pushed);
    }
    *s = out;
    true
}

/// Makes every string of a `Hello` safe; true when one changed.
pub fn hello(h: &mut Hello) -> bool {
    let mut changed = fix(&mut h.agent_version)
        | fix(&mut h.host_name)
        | fix(&mut h.kernel_release)
        | fix(&mut h.arch)
        | fix(&mut h.boot_id);
    for d in &mut h.disks {
        changed |= fix(&mut d.name);
    }
    for m in &mut h.md_arrays {
        changed |= fix(&mut m.name) | fix(&mut m.level);
        for x in &mut m.members {
            changed |= fix(x);
        }
    }
    for n in &mut h.nics {
        changed |= fix(&mut n.name) | fix(&mut n.mac);
        for x in &mut n.slaves {
            changed |= fix(x);
        }
    }
    for m in &mut h.mounts {
        changed |= fix(m);
    }
    changed
}

/// Makes every string of a sample safe; true when one changed.
pub fn sample(s: &mut Sample) -> bool {
    let mut changed = false;
    for p in &mut s.top {
        changed |= fix(&mut p.comm);
        if let Some(c) = &mut p.cmdline {
            changed |= fix(c);
        }
        if let Some(t) = &mut p.hottest_thread
            && let Some(c) = &mut t.comm
        {
            changed |= fix(c);
        }
    }
    changed
}

/// Makes every string of an event safe; true when one changed.
pub fn event(e: &mut Event) -> bool {
    match e {
        Event::ProcessStart(p) => fix(&mut p.comm) | fix(&mut p.cmdline),
        Event::ProcessExit(x) => fix(&mut x.process.comm) | fix(&mut x.process.cmdline),
        Event::LinkChange(l) => fix(&mut l.nic),
        Event::AgentStart(a) => fix(&mut a.agent_version),
        Event::DeviceAdded(DeviceAdded::Disk(n)) | Event::DeviceAdded(DeviceAdded::Nic(n)) => {
            fix(n)
        }
        Event::ProcessEnd(x) => fix(&mut x.exit.process.comm) | fix(&mut x.exit.process.cmdline),
        Event::KernelMessage(k) => {
            let nic = k.nic.as_mut().is_some_and(fix);
            fix(&mut k.text) | nic
        }
        Event::Connections(c) => c
            .procs
            .iter_mut()
            .fold(false, |any, p| fix(&mut p.comm) | any),
        Event::OpenFiles(o) => o.procs.iter_mut().fold(false, |any, p| {
            let paths = p
                .files
                .iter_mut()
                .fold(false, |any, f| fix(&mut f.path) | any);
            fix(&mut p.comm) | paths | any
        }),
        Event::ExitWatch(_) | Event::Shaping(_) => false,
    }
}

/// Makes every string of a test result safe; true when one changed.
pub fn test_result(r: &mut TestResult) -> bool {
    match r {
        TestResult::Disk(d) => fix(&mut d.device) | fix(&mut d.fs_type),
        TestResult::Failed(why) => fix(why),
        TestResult::Net(_) => false, // numbers only
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_lines_and_connection_names_are_made_safe() {
        let mut e = Event::KernelMessage(crate::KernelMessage {
            level: 3,
            pid: None,
            nic: Some("eth0\u{1b}[2J".try_into().unwrap()),
            text: "oom \u{202e}kill".try_into().unwrap(),
            suppressed: 0,
        });
        assert!(event(&mut e));
        let Event::KernelMessage(k) = &e else {
            panic!()
        };
        assert!(
            is_safe(&k.text) && is_safe(k.nic.as_ref().unwrap()),
            "{k:?}"
        );
        assert!(!event(&mut e), "a second pass changes nothing");
    }

    #[test]
    fn open_file_paths_are_made_safe() {
        let mut procs = heapless::Vec::new();
        let mut files = heapless::Vec::new();
        files
            .push(crate::OpenFile {
                fd: 3,
                path: "/share/\u{1b}]0;x\u{7}a.mkv".try_into().unwrap(),
                pos: 1,
                size: 2,
                mode: crate::FileMode::Read,
            })
            .unwrap();
        procs
            .push(crate::ProcFiles {
                pid: 1,
                comm: "cp\u{202e}".try_into().unwrap(),
                files,
                more: 0,
            })
            .unwrap();
        let mut e = Event::OpenFiles(crate::OpenFiles { procs });
        assert!(event(&mut e));
        let Event::OpenFiles(o) = &e else { panic!() };
        assert_eq!(o.procs[0].files[0].path.as_str(), "/share/␛]0;x␇a.mkv");
        assert!(is_safe(&o.procs[0].comm));
        assert!(!event(&mut e), "a second pass changes nothing");
    }

    #[test]
    fn escapes_become_visible_and_fit() {
        let mut t: heapless::String<32> = "a\u{1b}]0;x\u{7}b".try_into().unwrap();
        assert!(fix(&mut t));
        assert_eq!(t.as_str(), "a␛]0;x␇b");
        let mut t: heapless::String<32> = "gpj\u{202e}.exe\u{9b}".try_into().unwrap();
        assert!(fix(&mut t));
        assert_eq!(t.as_str(), "gpj\u{fffd}.exe\u{fffd}");
        let mut t: heapless::String<32> = "plain é".try_into().unwrap();
        assert!(!fix(&mut t));
        let mut s: heapless::String<15> = heapless::String::new();
        for _ in 0..6 {
            s.push('\u{1b}').unwrap();
        }
        assert!(fix(&mut s));
        assert_eq!(
            s.as_str(),
            "␛␛␛␛??",
            "one stand-in per character, `?` when full"
        );
        let mut ok: heapless::String<8> = "smbd".try_into().unwrap();
        assert!(!fix(&mut ok));
    }

    #[test]
    fn invisible_format_characters_become_visible() {
        for (name, shown) in [
            ("rs\u{200b}ync", "rs\u{fffd}ync"),
            ("rs\u{2060}ync", "rs\u{fffd}ync"),
            ("\u{feff}rsync", "\u{fffd}rsync"),
            ("rs\u{ad}ync", "rs\u{fffd}ync"),
            ("rsync\u{e0041}", "rsync\u{fffd}"),
            ("smb\u{2067}d", "smb\u{fffd}d"),
        ] {
            let mut t: heapless::String<32> = name.try_into().unwrap();
            assert!(fix(&mut t), "{name:?} changed");
            assert_eq!(t.as_str(), shown);
            assert_ne!(t.as_str(), "rsync");
        }
        // Visible letters of other scripts stay.
        let mut t: heapless::String<32> = "日本 é ß".try_into().unwrap();
        assert!(!fix(&mut t));
    }
}

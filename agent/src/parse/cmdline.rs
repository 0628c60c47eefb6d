//! `/proc/PID/cmdline`: the arguments, joined for display with secrets masked.

/// Patterns always masked in command lines; `--redact` adds more.
pub const DEFAULT_REDACT: [&[u8]; 4] = [b"password=", b"--password", b"token=", b"key="];

/// What replaces a masked value.
pub(crate) const MASK: &str = "***";

/// Formats a raw /proc/PID/cmdline (NUL-separated arguments) for display: arguments joined
/// by one space, secrets masked, at most `max` bytes (capped at `CMDLINE_LEN`), non-UTF-8
/// bytes as '?'. Generic over the output's capacity: a path is redacted whole into a big one
/// before it is cut to `CMDLINE_LEN` (`Procs::redact_path`).
///
/// Masking: where an argument contains a pattern (ASCII case-insensitive), the rest of that
/// argument after the pattern (after a following '=' when the pattern has none) becomes `***`.
/// An argument that IS a pattern (`--password`) masks the whole next argument.
pub fn format_cmdline<'p, const N: usize>(
    raw: &[u8],
    patterns: impl Iterator<Item = &'p [u8]> + Clone,
    max: usize,
    out: &mut heapless::String<N>,
) {
    out.clear();
    let max = max.min(N);
    let raw = raw.strip_suffix(b"\0").unwrap_or(raw);
    if raw.is_empty() {
        return;
    }
    let mut mask_next = false;
    let mut first = true;
    for arg in raw.split(|&b| b == 0) {
        if !first && !push_label(out, b" ", max) {
            return;
        }
        first = false;
        if mask_next {
            mask_next = false;
            if !push_label(out, MASK.as_bytes(), max) {
                return;
            }
            continue;
        }
        let mut cut = None;
        for p in patterns.clone() {
            if p.is_empty() {
                continue;
            }
            if let Some(at) = find_ci(arg, p) {
                let mut end = at + p.len();
                if end < arg.len() && !p.ends_with(b"=") && arg[end] == b'=' {
                    end += 1;
                }
                if end == arg.len() {
                    // Nothing follows the pattern in this argument: the value, if any, is the
                    // next one (`--password X`, `password= X`, `x-token= X`). Found by fuzzing:
                    // `password=` ending an argument that is not the pattern itself let the next
                    // argument through.
                    mask_next = true;
                    if !arg.ends_with(b"=") {
                        continue;
                    }
                }
                cut = Some(cut.map_or(end, |c: usize| c.min(end)));
            }
        }
        match cut {
            Some(end) => {
                if !push_label(out, &arg[..end], max) || !push_label(out, MASK.as_bytes(), max) {
                    return;
                }
            }
            None => {
                if !push_label(out, arg, max) {
                    return;
                }
            }
        }
    }
}

/// Appends sanitized bytes; false when `max` was reached (the output is then complete).
fn push_label<const N: usize>(out: &mut heapless::String<N>, bytes: &[u8], max: usize) -> bool {
    let mut tmp = heapless::String::<N>::new();
    let room = max.saturating_sub(out.len());
    let complete = super::to_label(bytes, room, &mut tmp);
    let _ = out.push_str(&tmp);
    complete
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nasprobe_proto::CMDLINE_LEN;

    fn fmt(raw: &[u8], extra: &[&[u8]], max: usize) -> String {
        let mut out = heapless::String::<CMDLINE_LEN>::new();
        format_cmdline(
            raw,
            DEFAULT_REDACT.iter().copied().chain(extra.iter().copied()),
            max,
            &mut out,
        );
        out.as_str().to_string()
    }

    #[test]
    fn cmdline() {
        assert_eq!(
            fmt(b"btrfs\0send\0-k\x0028399387\0", &[], 256),
            "btrfs send -k 28399387"
        );
        assert_eq!(fmt(b"", &[], 256), "");
        assert_eq!(
            fmt(b"a\0password=hunter2\0b\0", &[], 256),
            "a password=*** b"
        );
        assert_eq!(
            fmt(b"x\0--password\0hunter2\0y", &[], 256),
            "x --password *** y"
        );
        assert_eq!(
            fmt(b"x\0--password=hunter2\0", &[], 256),
            "x --password=***"
        );
        assert_eq!(fmt(b"x\0--TOKEN=abc\0", &[], 256), "x --TOKEN=***");
        // A pattern ending its argument: the next argument is the value.
        assert_eq!(
            fmt(b"a\0password=\0hunter2\0", &[], 256),
            "a password=*** ***"
        );
        assert_eq!(
            fmt(b"a\0-password=\0hunter1\0b", &[], 256),
            "a -password=*** *** b"
        );
        assert_eq!(
            fmt(b"a\0--password=\0hunter2\0", &[], 256),
            "a --password=*** ***"
        );
        assert_eq!(fmt(b"a\0x-token=\0t\0", &[], 256), "a x-token=*** ***");
        assert_eq!(fmt(b"curl\0-u\0me:pw\0", &[b"-u"], 256), "curl -u ***");
        assert_eq!(fmt(b"abcdef\0ghi", &[], 4), "abcd");
        assert_eq!(fmt(b"ab\0cd", &[], 3), "ab ");
        assert_eq!(fmt(b"a\xff\nb", &[], 256), "a? b");
        let long = vec![b'x'; 1000];
        assert_eq!(fmt(&long, &[], 256).len(), 256);
    }
}

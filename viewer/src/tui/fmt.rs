//! Terminal text shared by every tab: counts, bars, clipping, words and
//! values packed on lines. Times, bytes
//! and percentages are written by `crate::units`, as in every other view.

/// A count as every view writes it (`crate::units::count`, the report's):
/// `1024`, `16.5 k`, `1.23 M`.
pub fn count(v: u64) -> String {
    crate::units::count(v as f64)
}

/// What [`pack`] does with a part longer than a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Long {
    /// Cut where each line ends, on as many lines as it takes (a word of
    /// running text).
    Split,
    /// Clipped with `…` on one line (a value with its unit: never spread over
    /// two lines).
    Clip,
}

/// `parts` on lines of at most `width` characters, `sep` between two parts
/// on one line: a part is never split across lines unless it is longer than
/// a line, which `long` then cuts or clips. The one word-packing loop of the
/// TUI: [`wrap`] is running text packed word by word.
pub fn pack<S: AsRef<str>>(
    parts: impl IntoIterator<Item = S>,
    sep: &str,
    width: usize,
    long: Long,
) -> Vec<String> {
    let width = width.max(1);
    let sep_len = sep.chars().count();
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for p in parts {
        let p = p.as_ref();
        let plen = p.chars().count();
        // The part on the current line, after the separator, if it fits.
        if len > 0 && len + sep_len + plen <= width {
            line.push_str(sep);
            line.push_str(p);
            len += sep_len + plen;
            continue;
        }
        if len > 0 {
            lines.push(std::mem::take(&mut line));
        }
        let mut part: Vec<char> = p.chars().collect();
        match long {
            Long::Clip => part = clip(p, width).chars().collect(),
            Long::Split => {
                while part.len() > width {
                    let rest = part.split_off(width);
                    lines.push(part.into_iter().collect());
                    part = rest;
                }
            }
        }
        len = part.len();
        line = part.into_iter().collect();
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut into lines of at most `width` characters, at spaces (a word
/// longer than a line is cut where the line ends): [`pack`] of its words.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    pack(text.split(' '), " ", width, Long::Split)
}

/// Entries of one or more lines each (wrapped to `width`) on at most `max`
/// lines: the entries that do not fit whole are counted on the last line,
/// `… and N more (hyscope report lists them all)`, never cut silently.
pub fn capped(entries: &[Vec<String>], max: usize, width: usize) -> Vec<String> {
    let total: usize = entries.iter().map(Vec::len).sum();
    if total <= max {
        return entries.concat();
    }
    let mut lines: Vec<String> = Vec::new();
    let mut whole = 0;
    for e in entries {
        if lines.len() + e.len() > max.saturating_sub(1) {
            break;
        }
        lines.extend(e.iter().cloned());
        whole += 1;
    }
    lines.push(clip(
        &format!(
            "… and {} more (hyscope report lists them all)",
            entries.len() - whole
        ),
        width,
    ));
    lines
}

/// A horizontal bar of `width` cells filled to `frac` with eighth-blocks.
pub fn bar(frac: f64, width: usize) -> String {
    let frac = if frac.is_finite() {
        frac.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (frac * width as f64 * 8.0).round() as usize;
    let full = eighths / 8;
    let rest = eighths % 8;
    let mut s = "█".repeat(full);
    if rest > 0 && full < width {
        s.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][rest - 1]);
    }
    let used = s.chars().count();
    s.extend(std::iter::repeat_n(' ', width.saturating_sub(used)));
    s
}

/// Cut `s` to at most `w` characters, marking the cut with `…`.
pub fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(1_234_567), "1.23 M");
        assert_eq!(count(16_478), "16.5 k");
        assert_eq!(count(9_999), "9999");
        assert_eq!(bar(0.5, 4), "██  ");
        assert_eq!(clip("abcdef", 4), "abc…");
    }

    #[test]
    fn pack_keeps_parts_whole() {
        let parts = [
            "total 1.00 ms".to_string(),
            "inside 2.00 ms".into(),
            "x".into(),
        ];
        assert_eq!(
            pack(&parts, "  ", 17, Long::Clip),
            ["total 1.00 ms", "inside 2.00 ms  x"]
        );
        assert_eq!(
            pack(&parts, "  ", 40, Long::Clip),
            ["total 1.00 ms  inside 2.00 ms  x"]
        );
        assert_eq!(pack(["abcdef"], " ", 4, Long::Clip), ["abc…"]);
        // A long part after a short one starts its own line.
        assert_eq!(pack(["ab", "abcdef"], " ", 4, Long::Clip), ["ab", "abc…"]);
    }

    #[test]
    fn wrap_cuts_at_spaces_and_long_words() {
        assert_eq!(wrap("ab cd ef", 5), ["ab cd", "ef"]);
        assert_eq!(wrap("abcdefgh ij", 3), ["abc", "def", "gh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        assert_eq!(wrap("a b", 10), ["a b"]);
        // Spaces kept as written inside a line, none at the start of one.
        assert_eq!(wrap("a  b", 10), ["a  b"]);
        assert_eq!(wrap("ab cd", 2), ["ab", "cd"]);
    }

    /// Entries that do not fit whole are counted on the last line.
    #[test]
    fn capped_counts_the_entries_left_out() {
        let e = |n: usize| vec!["x".to_string(); n];
        let entries = [e(2), e(1), e(2)];
        assert_eq!(capped(&entries, 5, 80).len(), 5);
        assert_eq!(
            capped(&entries, 4, 80),
            [
                "x",
                "x",
                "x",
                "… and 1 more (hyscope report lists them all)"
            ]
        );
        assert_eq!(
            capped(&entries, 2, 80),
            ["… and 3 more (hyscope report lists them all)"]
        );
    }

    /// One loop, two treatments of a part longer than a line.
    #[test]
    fn pack_splits_or_clips_a_long_part() {
        let parts = ["x", "abcdefgh", "y"];
        assert_eq!(
            pack(parts, "  ", 3, Long::Split),
            ["x", "abc", "def", "gh", "y"]
        );
        assert_eq!(pack(parts, "  ", 3, Long::Clip), ["x", "ab…", "y"]);
    }
}

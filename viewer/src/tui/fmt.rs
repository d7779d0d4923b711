//! Terminal text shared by every tab: counts, bars, clipping. Times, bytes
//! and percentages are written by `crate::units`, as in every other view.

/// A count as every view writes it (`crate::units::count`, the report's):
/// `1024`, `16.5 k`, `1.23 M`.
pub fn count(v: u64) -> String {
    crate::units::count(v as f64)
}

/// `parts` on lines of at most `width` characters, `sep` between two parts
/// on one line: a part is never split (a value and its unit stay together);
/// a part longer than a line is clipped with `…`.
pub fn pack(parts: &[String], sep: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for p in parts {
        let (len, plen) = (line.chars().count(), p.chars().count());
        if len > 0 && len + sep.chars().count() + plen <= width {
            line.push_str(sep);
            line.push_str(p);
            continue;
        }
        if len > 0 {
            lines.push(std::mem::take(&mut line));
        }
        line = clip(p, width);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
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

/// `text` cut into lines of at most `width` characters, at spaces (a word
/// longer than a line is cut where the line ends).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        // The word on the current line, after a space, if it fits.
        if len > 0 && len + 1 + word.len() <= width {
            line.push(' ');
            line.extend(&word);
            len += 1 + word.len();
            continue;
        }
        if len > 0 {
            lines.push(std::mem::take(&mut line));
        }
        while word.len() > width {
            let rest = word.split_off(width);
            lines.push(word.into_iter().collect());
            word = rest;
        }
        len = word.len();
        line = word.into_iter().collect();
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
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
            pack(&parts, "  ", 17),
            ["total 1.00 ms", "inside 2.00 ms  x"]
        );
        assert_eq!(pack(&parts, "  ", 40), ["total 1.00 ms  inside 2.00 ms  x"]);
        assert_eq!(pack(&["abcdef".to_string()], " ", 4), ["abc…"]);
    }

    #[test]
    fn wrap_cuts_at_spaces_and_long_words() {
        assert_eq!(wrap("ab cd ef", 5), ["ab cd", "ef"]);
        assert_eq!(wrap("abcdefgh ij", 3), ["abc", "def", "gh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        assert_eq!(wrap("a b", 10), ["a b"]);
    }
}

//! Number formatting shared by every tab (drawing only: no analysis here).

/// Nanoseconds as a short human duration: `812 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`.
pub fn ns(v: f64) -> String {
    // Sums of tiny negatives round to "-0": show 0.
    let v = if v.abs() < 0.5 { 0.0 } else { v };
    let a = v.abs();
    if a < 1e3 {
        format!("{v:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.3} s", v / 1e9)
    }
}

/// Bytes with binary units: `512 B`, `4.0 KiB`, `1.50 MiB`, `2.00 GiB`.
pub fn bytes(v: f64) -> String {
    let a = v.abs();
    if a < 1024.0 {
        format!("{v:.0} B")
    } else if a < 1024.0 * 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else if a < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} MiB", v / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", v / (1024.0 * 1024.0 * 1024.0))
    }
}

/// A fraction 0..1 as a percentage with one decimal.
pub fn pct(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// Large counts with thousands separators: `1 234 567`.
pub fn count(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
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
        assert_eq!(ns(812.0), "812 ns");
        assert_eq!(ns(12_300.0), "12.3 µs");
        assert_eq!(ns(4_560_000.0), "4.56 ms");
        assert_eq!(ns(1_234_000_000.0), "1.234 s");
        assert_eq!(bytes(4096.0), "4.0 KiB");
        assert_eq!(count(1_234_567), "1 234 567");
        assert_eq!(bar(0.5, 4), "██  ");
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}

//! How hyscope writes a quantity for people: times and durations, bytes,
//! percentages, energy and power, and sampled values in their metric's unit. The
//! analyzer's findings and warnings, the report, the TUI, the GUI, `record`'s
//! summary and `tune` all call these (the viewer through `hyscope::units`), so
//! one number reads the same in every view. (Machine-readable output — `report --json`, the exports — keeps raw
//! numbers and never goes through here.)
//!
//! Times take the unit that fits, with a fixed number of decimals per unit so
//! that a column of them lines up: `812 ns`, `12.3 µs`, `4.56 ms`, `120.83 ms`,
//! `1.234 s`, then `2 min 03.5 s` and `1 h 02 min 03 s`. Bytes use binary units: `512 B`, `4.0 KiB`, `1.50 MiB`
//! up to `EiB`. Not-a-number reads `n/a`, infinities `∞` and `-∞`.

/// A time unit below one minute: nanoseconds per unit, its name, decimals.
const TIME_UNITS: [(f64, &str, usize); 4] = [
    (1.0, "ns", 0),
    (1e3, "µs", 1),
    (1e6, "ms", 2),
    (1e9, "s", 3),
];

/// `n/a`, `∞` or `-∞` for a value that is not a finite number.
fn not_finite(v: f64) -> Option<String> {
    if v.is_nan() {
        Some("n/a".into())
    } else if v.is_infinite() {
        Some(if v > 0.0 { "∞" } else { "-∞" }.into())
    } else {
        None
    }
}

/// The unit `ns` writes `a` (≥ 0 nanoseconds) in, or `None` from one minute
/// on. A value is moved to the next unit when its rounding would reach 1000
/// (`999.96 µs` is `1.00 ms`, never `1000.0 µs`).
fn time_unit(a: f64) -> Option<(f64, &'static str, usize)> {
    TIME_UNITS.iter().copied().find(|&(scale, _, decimals)| {
        let limit = if scale == 1e9 { 60.0 } else { 1000.0 };
        a / scale < limit - 0.5 * 10f64.powi(-(decimals as i32))
    })
}

/// A time or duration in nanoseconds.
pub fn ns(v: f64) -> String {
    if let Some(s) = not_finite(v) {
        return s;
    }
    // Below half a nanosecond (sums of tiny negatives included) is 0, never "-0 ns".
    if v.abs() < 0.5 {
        return "0 ns".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if let Some((scale, unit, decimals)) = time_unit(a) {
        return format!("{sign}{:.decimals$} {unit}", a / scale);
    }
    let secs = a / 1e9;
    if secs < 3600.0 - 0.5 {
        // Tenths of a second, carried into the minutes when they round up.
        let tenths = (secs * 10.0).round() as u64;
        let (m, t) = (tenths / 600, tenths % 600);
        if m < 60 {
            return format!("{sign}{m} min {:02}.{} s", t / 10, t % 10);
        }
    }
    let whole = secs.round() as u64;
    let (h, rest) = (whole / 3600, whole % 3600);
    format!("{sign}{h} h {:02} min {:02} s", rest / 60, rest % 60)
}

/// A time or duration in seconds (the analysis' unit), written as [`ns`] does.
pub fn secs(v: f64) -> String {
    ns(v * 1e9)
}

/// A time in seconds, or `n/a` where it was not observed.
pub fn secs_or_na(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), secs)
}

/// A position `v` (ns) on an axis whose marks are `step` ns apart: as [`ns`],
/// with more decimals where that would write two neighbouring marks alike
/// (a 2 µs step around 1.2 ms reads `1.232 ms`, `1.234 ms`).
pub fn ns_tick(v: f64, step: f64) -> String {
    if !(v.is_finite() && step.is_finite() && step > 0.0) || v.abs() < 0.5 {
        return ns(v);
    }
    let a = v.abs();
    let (scale, unit, decimals) = match time_unit(a) {
        Some(u) => u,
        // From a minute on, steps of a second or more read as `ns` does;
        // finer ones in seconds with their decimals.
        None if step >= 1e9 => return ns(v),
        None => (1e9, "s", 0),
    };
    let needed = (-(step / scale).log10()).ceil().clamp(0.0, 9.0) as usize;
    if needed <= decimals {
        return ns(v);
    }
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}{:.needed$} {unit}", a / scale)
}

/// Bytes with binary units.
pub fn bytes(v: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if let Some(s) = not_finite(v) {
        return s;
    }
    if v.abs() < 0.5 {
        return "0 B".into();
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let mut a = v.abs();
    let mut i = 0;
    // Move up a unit where the rounded value would read 1024 or more.
    loop {
        let decimals = [0, 1, 2][i.min(2)];
        if i + 1 == UNITS.len() || a < 1024.0 - 0.5 * 10f64.powi(-decimals) {
            break;
        }
        a /= 1024.0;
        i += 1;
    }
    let decimals = [0, 1, 2][i.min(2)];
    format!("{sign}{a:.decimals$} {}", UNITS[i])
}

/// A count as tables write it: `1024`, `32.8 k`, `1.05 M`.
pub fn count(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.2} M", n / 1e6)
    } else if n >= 1e4 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// An imbalance as every view writes it: the slowest thread's busy time
/// over the team's mean, two decimals (`1.00` balanced, `1.79`); the
/// tables' `imbal` column and the advice's `imbalance 1.79` alike.
pub fn imbalance(max_over_mean: f64) -> String {
    not_finite(max_over_mean).unwrap_or_else(|| format!("{max_over_mean:.2}"))
}

/// A fraction (0.25) as a percentage with one decimal: `25.0 %`.
pub fn percent(fraction: f64) -> String {
    not_finite(fraction).unwrap_or_else(|| format!("{:.1} %", fraction * 100.0))
}

/// A difference of two fractions (0.25 − 0.30) in percentage points with
/// one decimal and its sign: `-5.0 pp`, `+1.2 pp`, `0.0 pp`.
pub fn percent_points(delta: f64) -> String {
    not_finite(delta).unwrap_or_else(|| {
        let v = delta * 100.0;
        if v.abs() < 0.05 {
            "0.0 pp".into()
        } else {
            format!("{v:+.1} pp")
        }
    })
}

/// A sampled value in its metric's unit (the manifest's): bytes, times,
/// energy and power as everywhere else; other units (queue lengths, counts)
/// a whole number as [`count`] writes it (`1 peers`, `12.3 k msg`), a
/// fraction in three decimals with an SI prefix (`12.346k msg`).
pub fn quantity(v: f64, unit: &str) -> String {
    let other = |v: f64| {
        if v.is_finite() && v.fract() == 0.0 {
            if v < 0.0 {
                format!("-{}", count(-v))
            } else {
                count(v)
            }
        } else {
            si(v)
        }
    };
    match unit {
        "bytes" | "B" => bytes(v),
        "ns" => ns(v),
        "s" => secs(v),
        "J" => joules(v),
        "W" => watts(v),
        "" => other(v),
        _ => format!("{} {unit}", other(v)),
    }
}

/// Three decimals with an SI prefix: `999.000`, `12.346k`, `1.500G`.
fn si(v: f64) -> String {
    if let Some(s) = not_finite(v) {
        return s;
    }
    let a = v.abs();
    let (d, suffix) = if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.3}{suffix}", v / d)
}

/// Energy in joules.
pub fn joules(v: f64) -> String {
    not_finite(v).unwrap_or_else(|| format!("{v:.2} J"))
}

/// Power (energy per second) in watts.
pub fn watts(v: f64) -> String {
    not_finite(v).unwrap_or_else(|| format!("{v:.1} W"))
}

/// An energy-delay product in joule-seconds.
pub fn joule_seconds(v: f64) -> String {
    not_finite(v).unwrap_or_else(|| format!("{v:.2} J·s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentage_points() {
        assert_eq!(percent_points(-0.05), "-5.0 pp");
        assert_eq!(percent_points(0.012), "+1.2 pp");
        assert_eq!(percent_points(-0.0001), "0.0 pp");
        assert_eq!(percent_points(f64::NAN), "n/a");
    }

    #[test]
    fn times() {
        assert_eq!(ns(0.0), "0 ns");
        assert_eq!(ns(-0.2), "0 ns");
        assert_eq!(ns(0.7), "1 ns");
        assert_eq!(ns(812.0), "812 ns");
        assert_eq!(ns(999.4), "999 ns");
        assert_eq!(ns(999.6), "1.0 µs");
        assert_eq!(ns(12_300.0), "12.3 µs");
        assert_eq!(ns(900_000.0), "900.0 µs");
        assert_eq!(ns(999_960.0), "1.00 ms");
        assert_eq!(ns(4_560_000.0), "4.56 ms");
        assert_eq!(ns(10e6), "10.00 ms");
        assert_eq!(ns(999_996_000.0), "1.000 s");
        assert_eq!(ns(1_234_000_000.0), "1.234 s");
        assert_eq!(ns(59.999e9), "59.999 s");
        assert_eq!(ns(59.9996e9), "1 min 00.0 s");
        assert_eq!(ns(123.456e9), "2 min 03.5 s");
        assert_eq!(ns(3599.96e9), "1 h 00 min 00 s");
        assert_eq!(ns(3723.4e9), "1 h 02 min 03 s");
        assert_eq!(ns(100.0 * 3600e9), "100 h 00 min 00 s");
        assert_eq!(secs(1.5e-3), "1.50 ms");
        assert_eq!(secs(2e-7), "200 ns");
        assert_eq!(secs_or_na(Some(0.25)), "250.00 ms");
        assert_eq!(secs_or_na(None), "n/a");
    }

    #[test]
    fn negative_and_not_finite_times() {
        assert_eq!(ns(-12_300.0), "-12.3 µs");
        assert_eq!(ns(-123.456e9), "-2 min 03.5 s");
        assert_eq!(ns(f64::NAN), "n/a");
        assert_eq!(ns(f64::INFINITY), "∞");
        assert_eq!(secs(f64::NEG_INFINITY), "-∞");
    }

    #[test]
    fn ticks_resolve_their_step() {
        // Coarse steps read as `ns` does.
        assert_eq!(ns_tick(2e6, 1e6), "2.00 ms");
        assert_eq!(ns_tick(0.0, 1e3), "0 ns");
        assert_eq!(ns_tick(3e9, 1e9), "3.000 s");
        // Fine steps get the decimals that tell neighbours apart.
        assert_eq!(ns_tick(1_232_000.0, 2_000.0), "1.232 ms");
        assert_eq!(ns_tick(1_234_000.0, 2_000.0), "1.234 ms");
        assert_eq!(ns_tick(1_500.5, 0.5), "1.5005 µs");
        assert_eq!(ns_tick(120.5e9, 0.5e9), "120.5 s");
        assert_eq!(ns_tick(f64::NAN, 1.0), "n/a");
    }

    #[test]
    fn byte_counts() {
        assert_eq!(bytes(0.0), "0 B");
        assert_eq!(bytes(32.0), "32 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(1023.7), "1.0 KiB");
        assert_eq!(bytes(4096.0), "4.0 KiB");
        assert_eq!(bytes(10_000.0), "9.8 KiB");
        assert_eq!(bytes(1024.0 * 1023.99), "1.00 MiB");
        assert_eq!(bytes(1_060_000.0), "1.01 MiB");
        assert_eq!(bytes(20.0 * 1024.0 * 1024.0), "20.00 MiB");
        assert_eq!(bytes(3.0 * (1u64 << 40) as f64), "3.00 TiB");
        assert_eq!(bytes(u64::MAX as f64), "16.00 EiB");
        assert_eq!(bytes(1e30), "867361737988.40 EiB");
        assert_eq!(bytes(-2048.0), "-2.0 KiB");
        assert_eq!(bytes(f64::NAN), "n/a");
        assert_eq!(bytes(f64::INFINITY), "∞");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(0.0), "0.0 %");
        assert_eq!(percent(1.0 / 3.0), "33.3 %");
        assert_eq!(percent(1.0), "100.0 %");
        assert_eq!(percent(-0.05), "-5.0 %");
        assert_eq!(percent(f64::NAN), "n/a");
    }

    #[test]
    fn sampled_quantities() {
        assert_eq!(quantity(20.0 * 1024.0 * 1024.0, "bytes"), "20.00 MiB");
        assert_eq!(quantity(100.0, "W"), "100.0 W");
        assert_eq!(quantity(2.5e6, "ns"), "2.50 ms");
        assert_eq!(quantity(12_345.6, "msg"), "12.346k msg");
        assert_eq!(quantity(999.0, ""), "999");
        assert_eq!(quantity(1.0, "peers"), "1 peers");
        assert_eq!(quantity(0.0, "messages"), "0 messages");
        assert_eq!(quantity(1.5, "peers"), "1.500 peers");
        assert_eq!(quantity(12_346.0, "msg"), "12.3 k msg");
        assert_eq!(quantity(-1.5e9, ""), "-1500.00 M");
        assert_eq!(quantity(-1.25, ""), "-1.250");
        assert_eq!(quantity(f64::NAN, "bytes"), "n/a");
    }

    #[test]
    fn energy_and_power() {
        assert_eq!(joules(1.0), "1.00 J");
        assert_eq!(watts(100.0), "100.0 W");
        assert_eq!(joule_seconds(0.0123), "0.01 J·s");
        assert_eq!(watts(f64::NAN), "n/a");
    }
}

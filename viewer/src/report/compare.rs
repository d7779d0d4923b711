//! `hyscope report A B`: the comparison of two traces as text. Which run
//! is which first, then what they lost and why they may not compare, the
//! differences, and what only one of them has.

use std::fmt::Write as _;

use hyscope_analyzer::model::{
    CompareItem, CompareRow, CompareSide, CompareUnit, Comparison, Noise, NoiseVerdict,
};

use super::table::{Table, section};
use crate::units;

/// The comparison of two traces as text.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "hyscope report — comparison of two runs");
    for (name, s) in [("A", &c.side_a), ("B", &c.side_b)] {
        let _ = writeln!(out, "  {name} = {}", describe(s));
    }
    for (name, s) in [("A", &c.side_a), ("B", &c.side_b)] {
        if !s.integrity.problems.is_empty() {
            section(&mut out, &format!("{name}: {}", s.integrity.title()));
            for p in &s.integrity.problems {
                let _ = writeln!(out, "  ! {p}");
            }
        }
    }
    if !c.caveats.is_empty() {
        section(&mut out, NOT_COMPARABLE);
        for w in &c.caveats {
            let _ = writeln!(out, "  ! {w}");
        }
    }
    section(&mut out, &heading(c));
    let mut t = Table::new(&COLUMNS);
    for r in c.rows.iter().filter(|r| shown(r)) {
        t.row(cells(r));
    }
    t.render(&mut out);
    let _ = writeln!(out, "  {}", noise_summary(c));
    for line in notes(c).iter().map(|l| l.to_string()).chain(unestimated(c)) {
        let _ = writeln!(out, "  {line}");
    }
    for (name, items) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !items.is_empty() {
            section(&mut out, &format!("Only in {name}"));
            let _ = writeln!(out, "  {}", listed(items));
        }
    }
    out
}

/// The differences' columns, as the text, the TUI and the GUI head them.
pub(crate) const COLUMNS: [&str; 7] = ["item", "metric", "A", "B", "B − A", "B / A", "noise"];

/// A row of the differences as the text and the TUI write it: one cell
/// per column of [`COLUMNS`], its item named by the analyzer's
/// [`hyscope_analyzer::compare::label`].
pub(crate) fn cells(r: &CompareRow) -> Vec<String> {
    vec![
        r.label(),
        row_metric(r),
        value(r.unit, r.a),
        value(r.unit, r.b),
        difference(r.unit, r.delta),
        ratio(r.ratio),
        noise(&r.noise),
    ]
}

/// A row's metric as written: `time/rank` where it compares per rank.
pub(crate) fn row_metric(r: &CompareRow) -> String {
    let m = metric(&r.metric);
    if r.per_rank {
        format!("{m}/rank")
    } else {
        m.to_string()
    }
}

/// The title over the differences: what sums over ranks is per rank when
/// the runs' rank counts differ.
pub(crate) fn heading(c: &Comparison) -> String {
    if c.per_rank {
        format!(
            "Differences (B − A), per rank where summed over ranks (A / {} ranks, B / {})",
            c.side_a.ranks, c.side_b.ranks
        )
    } else {
        "Differences (B − A)".into()
    }
}

/// Whether a row's difference is beyond the runs' own variability, in its
/// noise column: `beyond`, `within`, `too few` (a run has under 2 values),
/// `exact` (a count or bytes), `—` (the trace keeps no scatter of the
/// values: the row's `why` says why).
pub(crate) fn noise(n: &Noise) -> String {
    match n.verdict {
        NoiseVerdict::BeyondNoise => "beyond".into(),
        NoiseVerdict::WithinNoise => "within".into(),
        NoiseVerdict::TooFewValues => "too few".into(),
        NoiseVerdict::Exact => "exact".into(),
        NoiseVerdict::NotEstimated => "—".into(),
    }
}

/// How many differences are beyond noise, under the table.
pub(crate) fn noise_summary(c: &Comparison) -> String {
    let n = &c.noise;
    let estimated = n.beyond_noise + n.within_noise;
    let mut text = format!(
        "beyond noise: {} of the {estimated} differences with a noise estimate",
        n.beyond_noise
    );
    if n.too_few_values > 0 {
        let _ = write!(
            text,
            "; {} with too few values to estimate",
            n.too_few_values
        );
    }
    if n.exact > 0 {
        let _ = write!(text, "; {} exact counts or bytes", n.exact);
    }
    if n.not_estimated > 0 {
        let _ = write!(
            text,
            "; {} whose scatter the traces do not keep (`—`)",
            n.not_estimated
        );
    }
    text
}

/// A compared metric as the text and the GUI name it: one word, as the
/// report's own tables say it (`--json` keeps the field's name, `total_s`).
pub(crate) fn metric(name: &str) -> &str {
    match name {
        "duration_s" => "duration",
        "time_s" | "total_s" => "time",
        "time_per_call_s" => "time/call",
        "time_per_instance_s" => "time/instance",
        "fork_join_per_instance_s" => "fork/join/instance",
        "mpi_per_instance_s" => "MPI/instance",
        "send_to_receive_per_message_s" => "send-to-recv/msg",
        "mpi_s" => "MPI",
        "fork_join_s" => "fork/join",
        "bytes_sent" => "sent",
        "bytes_received" => "received",
        "send_to_receive_s" => "send-to-recv",
        "joules" => "energy",
        "edp_js" => "EDP",
        other => other,
    }
}

/// The title over the caveats.
pub(crate) const NOT_COMPARABLE: &str = "Not comparable as they stand";

/// What the differences' table sums, leaves out and calls noise, under it
/// (as [`notes`] writes them when the rank counts are the same).
pub(crate) const NOTES: [&str; 4] = [
    "region, loop, MPI call and wait-state times are sums over ranks (and threads); a phase's time is its slowest rank's;",
    "where an item's count differs, `time/call` (`time/instance`, `fork/join/instance`, `MPI/instance`, `send-to-recv/msg`) is each run's time over its own count (a phase's time over its slowest rank's instances): the change per call, apart from the change in calls;",
    "efficiencies in %, their difference in percentage points (pp); rows where both runs have 0 left out;",
    "noise: `beyond` when B − A exceeds what the scatter of each run's calls, instances, messages or repetitions explains (Welch's test, p < 0.001), `within` when not, `too few` when a run has under 2 values, `exact` for counts and bytes, `—` where the traces keep no scatter (and why, below)",
];

/// [`NOTES`] for `c`: its sums per rank when the rank counts differ.
pub(crate) fn notes(c: &Comparison) -> [&'static str; 4] {
    let mut n = NOTES;
    if c.per_rank {
        n[0] = "region, loop, MPI call and wait-state times are sums over ranks (and threads), here / the run's ranks (`/rank`); a phase's time is its slowest rank's;";
    }
    n
}

/// Why the rows listed without a noise estimate (`—`) have none: each
/// reason once, with how many rows it stands for.
pub(crate) fn unestimated(c: &Comparison) -> Vec<String> {
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for r in c.rows.iter().filter(|r| shown(r)) {
        if r.noise.verdict != NoiseVerdict::NotEstimated {
            continue;
        }
        let why = r.noise.why.as_deref().unwrap_or("no estimate");
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    reasons
        .into_iter()
        .map(|(why, n)| {
            let rows = if n == 1 { "row" } else { "rows" };
            format!("`—` on {n} {rows}: {why}")
        })
        .collect()
}

/// Whether a row is listed: not where both runs have 0.
pub(crate) fn shown(r: &CompareRow) -> bool {
    r.a != 0.0 || r.b != 0.0
}

/// B / A, `—` where A is 0.
pub(crate) fn ratio(r: Option<f64>) -> String {
    r.map_or("—".into(), |x| format!("{x:.2}"))
}

/// `DIR: COMMAND (R ranks × T threads, started …)`.
pub(crate) fn describe(s: &CompareSide) -> String {
    let mut text = s.trace_dir.clone();
    if !s.command.is_empty() {
        let _ = write!(text, ": {}", s.command.join(" "));
    }
    let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let _ = write!(
        text,
        " ({} × {}",
        plural(s.ranks, "rank"),
        plural(s.threads, "thread")
    );
    if !s.start_time.is_empty() {
        let _ = write!(text, ", started {}", s.start_time);
    }
    text.push(')');
    if s.integrity.is_partial() {
        text.push_str(" — PARTIAL TRACE");
    }
    text
}

/// A value in its unit, as every view writes it.
pub(crate) fn value(unit: CompareUnit, v: f64) -> String {
    match unit {
        CompareUnit::Seconds => units::secs(v),
        CompareUnit::Bytes => units::bytes(v),
        CompareUnit::Count => units::quantity(v, ""),
        CompareUnit::Fraction => units::percent(v),
        CompareUnit::Ratio => format!("{v:.2}"),
        CompareUnit::Joules => units::joules(v),
        CompareUnit::JouleSeconds => units::joule_seconds(v),
    }
}

/// A difference: as a value with its sign, a fraction's in percentage
/// points.
pub(crate) fn difference(unit: CompareUnit, d: f64) -> String {
    match unit {
        CompareUnit::Fraction => units::percent_points(d),
        _ => {
            let v = value(unit, d);
            // A zero, a negative or not a number reads as written.
            if d > 0.0 && v.starts_with(|c: char| c.is_ascii_digit() && c != '0') {
                format!("+{v}")
            } else {
                v
            }
        }
    }
}

/// `loop k.c:35, region k.c:33`.
pub(crate) fn listed(items: &[CompareItem]) -> String {
    items
        .iter()
        .map(CompareItem::label)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_analyzer::model::{TraceIntegrity, TraceProblem};

    fn row(section: &str, metric: &str, unit: CompareUnit, a: f64, b: f64) -> CompareRow {
        CompareRow {
            section: section.into(),
            item: "x".into(),
            metric: metric.into(),
            a,
            b,
            delta: b - a,
            ratio: Some(b / a),
            unit,
            per_rank: false,
            noise: Noise::default(),
        }
    }

    fn side(dir: &str, problems: Vec<TraceProblem>) -> CompareSide {
        CompareSide {
            trace_dir: dir.into(),
            command: vec!["./k".into(), "100".into()],
            ranks: 2,
            threads: 2,
            start_time: String::new(),
            integrity: TraceIntegrity { problems },
        }
    }

    /// Each unit is written by `units`: bytes in binary units, counts as
    /// whole numbers, efficiencies in % and their difference in points,
    /// wait times as times.
    #[test]
    fn values_are_written_in_their_units() {
        let c = Comparison {
            a: "A".into(),
            b: "B".into(),
            side_a: side("A", vec![]),
            side_b: side("B", vec![]),
            caveats: vec![],
            rows: vec![
                row(
                    "messages",
                    "bytes",
                    CompareUnit::Bytes,
                    1048576.0,
                    4194304.0,
                ),
                CompareRow {
                    item: "MPI_X".into(),
                    ..row("mpi", "count", CompareUnit::Count, 2.0, 3.0)
                },
                row("pop", "efficiency", CompareUnit::Fraction, 0.884, 0.836),
                row("wait", "time_s", CompareUnit::Seconds, 0.10013, 0.30021),
                row("energy", "joules", CompareUnit::Joules, 40.0, 30.0),
            ],
            per_rank: false,
            noise: Default::default(),
            only_in_a: vec![CompareItem {
                section: "loop".into(),
                item: "k.c:35".into(),
            }],
            only_in_b: vec![],
        };
        let text = render_comparison(&c);
        let line = |what: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(what))
                .unwrap_or_else(|| panic!("no {what} line in\n{text}"))
                .to_string()
        };
        let bytes = line("x messages");
        for s in ["1.00 MiB", "4.00 MiB", "3.00 MiB", "4.00"] {
            assert!(bytes.contains(s), "{bytes}");
        }
        assert!(!bytes.contains("1048576"), "{bytes}");
        let count = line("MPI_X");
        assert!(!count.contains(".000"), "{count}");
        let pop = line("POP x");
        for s in ["88.4 %", "83.6 %", "-4.8 pp"] {
            assert!(pop.contains(s), "{pop}");
        }
        let wait = line("MPI x");
        for s in ["100.13 ms", "300.21 ms", "200.08 ms"] {
            assert!(wait.contains(s), "{wait}");
        }
        assert!(line("run ").contains("-10.00 J"), "{text}");
        assert!(text.contains("Only in A"), "{text}");
        assert!(text.contains("loop k.c:35"), "{text}");
        assert!(
            text.contains("A = A: ./k 100 (2 ranks × 2 threads)"),
            "{text}"
        );
        // Differences carry their sign.
        assert!(line("MPI_X").contains("+1 "), "{text}");
        assert!(bytes.contains("+3.00 MiB"), "{bytes}");
    }

    /// A partial trace is named in the header and its problems listed
    /// before any number, with which run they belong to.
    #[test]
    fn a_partial_side_is_named_before_the_numbers() {
        let lost = TraceProblem {
            file: Some("ranks".into()),
            rank: None,
            what: "the trace is partial: 1 of 2 ranks left no rank file (rank 1)".into(),
            data_lost: true,
        };
        let c = Comparison {
            a: "A".into(),
            b: "B".into(),
            side_a: side("A", vec![]),
            side_b: side("B", vec![lost]),
            caveats: vec!["B is a partial trace".into()],
            rows: vec![row("run", "duration_s", CompareUnit::Seconds, 1.0, 2.0)],
            per_rank: false,
            noise: Default::default(),
            only_in_a: vec![],
            only_in_b: vec![],
        };
        let text = render_comparison(&c);
        let at = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("no {s:?} in\n{text}"))
        };
        assert!(text.contains("B = B: ./k 100 (2 ranks × 2 threads) — PARTIAL TRACE"));
        assert!(at("B: PARTIAL TRACE") < at("Differences"), "{text}");
        assert!(at("1 of 2 ranks left no rank file") < at("Differences"));
        assert!(at("! B is a partial trace") < at("Differences"));
    }
}

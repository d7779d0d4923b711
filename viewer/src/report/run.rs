//! The report's opening sections: what was lost, the run, the top findings,
//! the POP efficiencies, and the analysis' warnings at the end.

use std::fmt::Write as _;

use hyscope_analyzer::*;

use super::table::{count, observed_section, section};
use crate::units;

/// What was lost or found damaged, before any number, so none is read as whole.
pub fn integrity(out: &mut String, integrity: &TraceIntegrity) {
    if integrity.problems.is_empty() {
        return;
    }
    section(out, integrity.title());
    for p in &integrity.problems {
        let _ = writeln!(out, "  ! {p}");
    }
}

/// The run: command, ranks × threads, placement, libraries, events, clocks.
pub fn facts(out: &mut String, a: &Analysis) {
    let r = &a.run;
    section(out, "Run");
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(out, "  {k:<22} {v}");
    };
    if !r.command.is_empty() {
        kv("command", r.command.join(" "));
    }
    if !r.start_time.is_empty() {
        kv("started", r.start_time.clone());
    }
    let threads = r.threads_per_rank.iter().copied().max().unwrap_or(1);
    let ranks = hyscope_analyzer::model::ranks_label(r.ranks, &r.children);
    kv(
        "ranks × threads",
        format!(
            "{} × {} on {} host(s): {}",
            ranks,
            threads,
            r.hosts.len(),
            r.hosts.join(", ")
        ),
    );
    if let Some(analysed) = r.ranks_analysed_label() {
        kv("ranks analysed", analysed);
    }
    for p in r.process_lines() {
        kv(p.label, p.text);
    }
    kv("duration", units::secs(r.duration_s));
    // Of the ranks analysed only: "— 1 of 2 ranks, rank 0 left out".
    let of = r
        .counted_ranks()
        .map_or(String::new(), |c| format!(" — {c}"));
    for p in r.placement.iter().filter(|p| p.threads_share_cpus()) {
        kv("CPU placement", format!("{}{of}", placement(p)));
    }
    if let Some(m) = &r.mpi_library {
        kv("MPI", m.lines().next().unwrap_or("").to_string());
    }
    if let (Some(q), Some(p)) = (&r.thread_level_requested, &r.thread_level_provided) {
        kv("thread level", format!("requested {q}, provided {p}"));
    }
    if let Some(o) = &r.openmp_runtime {
        kv("OpenMP runtime", o.clone());
    }
    kv("events", events_text(r));
    kv(
        "clocks",
        if r.clock_corrected {
            format!("offsets applied (± {})", units::secs(r.clock_error_s))
        } else {
            "one clock (no offsets applied)".into()
        },
    );
    if r.collector_init_s > 0.0 {
        kv(
            "collector in MPI_Init",
            collector_in_mpi_init(r.collector_init_s),
        );
    }
    if r.serialized_regions > 0 {
        kv(
            "serialized regions",
            format!(
                "{} (run by one thread: no team to wait for)",
                units::count(r.serialized_regions as f64)
            ),
        );
    }
    if r.clipped_join_waits > 0 {
        kv(
            "normalised",
            format!(
                "{} late worker join-barrier ends clipped at parallel end ({})",
                r.clipped_join_waits,
                units::secs(r.clipped_join_wait_s)
            ),
        );
    }
    for m in &r.missing {
        kv("not observable", m.clone());
    }
}

/// The collector's own work at the end of `MPI_Init` (`RunFacts::collector_init_s`),
/// in words: the report, the TUI and the GUI say it alike.
pub fn collector_in_mpi_init(seconds: f64) -> String {
    format!(
        "{} (slowest rank; counted in MPI_Init's time)",
        units::secs(seconds)
    )
}

/// What a finding's two numbers are, above the list: its cost is
/// `Finding::cost_s` (`findings.rs` divides each by the ranks, and the
/// barrier times also by the team) and its share of the run. Findings
/// overlap (a barrier wait is also the loop imbalance behind it).
const FINDINGS_COST: &str = "time lost per rank (mean over ranks; barrier times also per thread), % of run time; findings overlap: do not add them";

/// The findings, costliest first: `top` of them, and how many more there are.
pub fn findings(out: &mut String, a: &Analysis, top: usize) {
    section(out, "Top findings");
    if a.findings.is_empty() {
        out.push_str("  nothing significant\n");
    } else {
        let _ = writeln!(out, "  {FINDINGS_COST}");
    }
    for (i, f) in a.findings.iter().take(top).enumerate() {
        // A finding without a time cost (the memory projection's: `cost_s`
        // 0 in `findings.rs`) says `—`, not a time of 0.
        let (cost, share) = if f.costs_time() {
            (units::secs(f.cost_s), units::percent(f.share_of_run))
        } else {
            ("—".to_string(), "—".to_string())
        };
        let _ = writeln!(
            out,
            "  {:>2}. {:>10} {:>7}  {}\n      → {}",
            i + 1,
            cost,
            share,
            f.title,
            f.what_to_do
        );
    }
    let more = a.findings.len().saturating_sub(top);
    if more > 0 {
        let _ = writeln!(
            out,
            "  … and {more} more: --top {} lists them all (or --json, or the TUI)",
            a.findings.len()
        );
    }
}

/// The POP efficiency tree and its additive losses.
pub fn pop(out: &mut String, a: &Analysis) {
    let Some(p) = observed_section(out, "POP efficiency", &a.pop) else {
        return;
    };
    fn walk(n: &PopNode, depth: usize, out: &mut String) {
        let v = match &n.value {
            Observable::Observed(v) => format!("{:>7}", units::percent(*v)),
            Observable::NotObservable(r) => format!("  n/a   ({r})"),
        };
        let name = format!("{}{}", "  ".repeat(depth), n.name);
        let _ = writeln!(out, "  {name:<48} {v}   {}", n.formula);
        for c in &n.children {
            walk(c, depth + 1, out);
        }
    }
    walk(&p.tree, 0, out);
    for line in p.scope.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "\n  additive (fractions of {} cores × {}):",
        p.cores,
        units::secs(p.elapsed_s)
    );
    let _ = writeln!(
        out,
        "  {:<48} {:>7}",
        "parallel efficiency",
        units::percent(p.tree.value.get().copied().unwrap_or(0.0))
    );
    for l in &p.additive {
        let _ = writeln!(
            out,
            "  {:<48} {:>7}   {}",
            format!("loss: {}", l.name),
            units::percent(l.fraction),
            l.formula
        );
    }
}

/// What the analysis could not do, last.
pub fn warnings(out: &mut String, a: &Analysis) {
    if !a.warnings.is_empty() {
        section(out, "Warnings");
        for w in &a.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
}

/// Where a rank's OpenMP threads share CPUs: how many on which, and why.
fn placement(p: &RankPlacement) -> String {
    format!(
        "rank {}: {} OpenMP threads on CPU {} ({} of {}'s {}{}{})",
        p.rank,
        p.threads,
        p.cpu_list(),
        p.run_cpus().len(),
        p.host,
        if p.host_cpus > 0 {
            p.host_cpus.to_string()
        } else {
            "?".into()
        },
        if p.host_oversubscribed() {
            format!("; {} threads on the host", p.host_threads)
        } else {
            String::new()
        },
        if p.pinned_together() {
            format!(
                "; bound there by the OpenMP runtime, the rank may use CPU {}",
                hyscope_analyzer::placement::cpu_list(&p.cpus)
            )
        } else {
            String::new()
        }
    )
}

/// A run's events as every view writes them: `16.2 k OpenMP, 46 MPI, 212
/// samples`, and the dropped ones if any; those of the ranks analysed, and
/// which they are when ranks were left out (`— 1 of 2 ranks, rank 0 left out`).
pub fn events_text(r: &hyscope_analyzer::RunFacts) -> String {
    format!(
        "{} OpenMP, {} MPI, {} samples{}{}",
        count(r.omp_events as f64),
        count(r.mpi_events as f64),
        count(r.sample_events as f64),
        if r.dropped_events > 0 {
            format!(", {} DROPPED", r.dropped_events)
        } else {
            String::new()
        },
        r.counted_ranks()
            .map_or(String::new(), |c| format!(" — {c}"))
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The recorded 2 ranks × 2 threads trace: more findings than 10.
    fn fixture() -> Analysis {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
        hyscope_analyzer::analyze(&dir, &Default::default()).unwrap()
    }

    #[test]
    fn findings_say_what_their_cost_is_and_how_many_are_left_out() {
        let a = fixture();
        let n = a.findings.len();
        assert!(n > 10, "{n} findings");
        let mut out = String::new();
        findings(&mut out, &a, 10);
        let lines: Vec<&str> = out.lines().collect();
        // Under the title: what the two numbers of each finding are.
        assert_eq!(lines[1..3], ["Top findings", "════════════"], "{out}");
        assert_eq!(lines[3], format!("  {FINDINGS_COST}"), "{out}");
        assert!(lines[4].starts_with("   1. "), "{out}");
        // After the 10th: the rest, and how to see them.
        assert_eq!(
            lines.last().copied(),
            Some(
                format!(
                    "  … and {} more: --top {n} lists them all (or --json, or the TUI)",
                    n - 10
                )
                .as_str()
            ),
            "{out}"
        );
        // All of them shown: nothing left out, nothing said.
        let mut all = String::new();
        findings(&mut all, &a, n);
        assert!(!all.contains("more:"), "{all}");
        assert!(all.contains(&format!("  {n:>2}. ")), "{all}");
    }

    /// The memory projection's finding costs no time (`cost_s` 0): its
    /// cost reads `—`, not `0 ns`.
    #[test]
    fn a_finding_without_a_time_cost_says_so() {
        let from =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
        let (_tmp, dir) = hyscope_testkit::fixtures::over_openib(&from);
        let a = hyscope_analyzer::analyze(&dir, &Default::default()).unwrap();
        let i = a
            .findings
            .iter()
            .position(|f| f.category == "memory")
            .expect("the memory finding");
        assert_eq!(a.findings[i].cost_s, 0.0);
        let mut out = String::new();
        findings(&mut out, &a, a.findings.len());
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("  {:>2}. ", i + 1)))
            .unwrap();
        assert_eq!(
            line,
            format!(
                "  {:>2}. {:>10} {:>7}  {}",
                i + 1,
                "—",
                "—",
                a.findings[i].title
            ),
            "{out}"
        );
        assert!(!out.contains("0 ns"), "{out}");
    }
}

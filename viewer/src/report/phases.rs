//! The report's phases: the per-phase table shown when the trace has phases,
//! and `hyscope report --phase NAME`'s restriction and its phase in detail.

use std::fmt::Write as _;

use hyscope_analyzer::{Analysis, FocusInfo, Observable, PhaseInside, PhaseStats};

use super::table::{Table, section};
use crate::units;

fn opt_pct(x: Option<f64>) -> String {
    x.map_or("—".into(), units::percent)
}

/// The repetitions of a phase in one cell: `4 × mean 20.1 ms (15.2 ms–55.2 ms, spread 198 %), slowest step 2`.
fn repetitions(p: &PhaseStats) -> String {
    let Some(it) = &p.iterations else {
        return "—".into();
    };
    format!(
        "{} × mean {} ({}–{}, spread {}), slowest {} {}",
        it.count,
        units::secs(it.mean_s),
        units::secs(it.min_s),
        units::secs(it.max_s),
        units::percent(it.spread),
        if it.by_time_step { "step" } else { "#" },
        it.slowest
    )
}

/// The columns of [`inside`].
const INSIDE: [&str; 5] = [
    "OpenMP regions",
    "fork/join",
    "sync wait",
    "MPI",
    "MPI calls",
];

/// What happened inside a phase, as table cells.
fn inside(i: &PhaseInside) -> [String; 5] {
    [
        units::secs(i.omp_region_s),
        units::secs(i.omp_fork_join_s),
        units::secs(i.omp_sync_wait_s),
        units::secs(i.mpi_s),
        i.mpi_calls.to_string(),
    ]
}

/// A table whose columns are `first`, then [`INSIDE`], then `last`.
fn table(first: &[&str], last: &[&str]) -> Table {
    let header: Vec<&str> = first.iter().chain(&INSIDE).chain(last).copied().collect();
    Table::new(&header)
}

/// Files named before they are cut short (the trace's problems list them all).
const MISSING_NAMED: usize = 3;

/// The ranks whose phases cannot be read, said before a per-phase table or
/// instead of it (`table` None): `! rank 1's phases are missing: FILE cannot
/// be read`, then which ranks every number of the table leaves out, and
/// `table`, what else it says of it (nothing when every rank's phases were
/// read).
pub(super) fn missing(out: &mut String, a: &Analysis, table: Option<&str>) {
    let m = &a.phases_missing;
    if m.is_empty() {
        return;
    }
    for u in m.iter().take(MISSING_NAMED) {
        let _ = writeln!(
            out,
            "  ! rank {}'s phases are missing: {} cannot be read (listed above)",
            u.rank, u.file
        );
    }
    if m.len() > MISSING_NAMED {
        let _ = writeln!(
            out,
            "  ! … and {} more damaged phases files (listed above)",
            m.len() - MISSING_NAMED
        );
    }
    let Some(more) = table else {
        return;
    };
    let ranks = hyscope_format::rank_ranges::rank_ranges(m.iter().map(|u| u.rank));
    let plural = if ranks.contains([',', '–']) {
        "s"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  ! every number of this table leaves rank{plural} {ranks} out: it covers the other ranks only{more}"
    );
}

/// The per-phase table (nothing when the trace has no phases); the ranks
/// whose phases cannot be read said first.
pub fn render_phases(out: &mut String, a: &Analysis) {
    let phases = match &a.phases {
        Observable::Observed(p) => p,
        Observable::NotObservable(why) => {
            // Phases recorded but none read: said, not left out.
            if !a.phases_missing.is_empty() {
                section(out, "Phases");
                missing(out, a, None);
                let _ = writeln!(out, "  not observable: {why}");
            }
            return;
        }
    };
    section(out, "Phases");
    missing(
        out,
        a,
        Some(", and the MPI efficiencies, which compare every rank, are not given"),
    );
    // Energy columns only where energy was measured.
    let energy = phases.iter().any(|p| p.energy_j.is_some());
    let mut last = vec!["MPI par. eff."];
    if energy {
        last.extend(["energy", "EDP"]);
    }
    last.push("repetitions");
    let mut t = table(&["phase", "source", "instances", "time", "share"], &last);
    for p in phases {
        let mut row = vec![
            format!("{}{}", "  ".repeat(p.depth as usize), p.name),
            p.source.clone(),
            p.instances.to_string(),
            units::secs(p.time_s),
            units::percent(p.share),
        ];
        row.extend(inside(&p.inside));
        row.push(opt_pct(p.mpi_parallel_efficiency));
        if energy {
            row.extend([
                p.energy_j.map_or("—".into(), units::joules),
                p.edp_js.map_or("—".into(), units::joule_seconds),
            ]);
        }
        row.push(repetitions(p));
        t.row(row);
    }
    t.render(out);
    out.push_str(
        "  time = the slowest rank's sum of the phase's intervals; OpenMP and MPI columns: inside them, summed over ranks\n",
    );
    if energy {
        out.push_str(
            "  energy = the job's energy counters over the phase's intervals (each host's, between samples at their average power); EDP = energy × time\n",
        );
    }
}

/// The restriction (`--phase NAME`): what it covers, then the phase in detail.
pub fn focus(out: &mut String, a: &Analysis, f: &FocusInfo) {
    let _ = writeln!(
        out,
        "Restricted to phase {}: {} intervals in {} windows, {} of the run's {} ({}). Every section below covers this time only; the gaps between the windows are cut out.",
        f.phase,
        f.instances,
        f.windows,
        units::secs(f.time_s),
        units::secs(f.run_duration_s),
        units::percent(if f.run_duration_s > 0.0 {
            f.time_s / f.run_duration_s
        } else {
            0.0
        }),
    );
    if let Some(p) = a
        .phases
        .get()
        .and_then(|ps| ps.iter().find(|p| p.name == f.phase))
    {
        phase_detail(out, p);
    }
}

/// One phase in detail.
fn phase_detail(out: &mut String, p: &PhaseStats) {
    section(out, &format!("Phase {}", p.name));
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(out, "  {k:<30} {v}");
    };
    kv("source", p.source.clone());
    kv(
        "nesting",
        match &p.parent {
            Some(parent) => format!("depth {}, inside {parent}", p.depth),
            None => format!("depth {}", p.depth),
        },
    );
    kv("instances", p.instances.to_string());
    kv(
        "time",
        format!(
            "{} on the slowest rank, {} per rank on average, {} of the run",
            units::secs(p.time_s),
            units::secs(p.mean_rank_time_s),
            units::percent(p.share)
        ),
    );
    let i = &p.inside;
    kv("OpenMP regions", units::secs(i.omp_region_s));
    kv("OpenMP fork/join", units::secs(i.omp_fork_join_s));
    kv("OpenMP sync wait", units::secs(i.omp_sync_wait_s));
    kv(
        "MPI",
        format!("{} in {} calls", units::secs(i.mpi_s), i.mpi_calls),
    );
    kv(
        "MPI parallel efficiency",
        opt_pct(p.mpi_parallel_efficiency),
    );
    kv("MPI load balance", opt_pct(p.mpi_load_balance));
    if let (Some(j), Some(edp)) = (p.energy_j, p.edp_js) {
        kv(
            "energy",
            format!("{}, EDP {}", units::joules(j), units::joule_seconds(edp)),
        );
    }
    kv(
        "MPI communication efficiency",
        opt_pct(p.mpi_communication_efficiency),
    );
    section(out, "Per rank");
    let mut t = table(&["rank", "instances", "time"], &[]);
    for r in &p.ranks {
        let mut row = vec![
            r.rank.to_string(),
            r.instances.to_string(),
            units::secs(r.time_s),
        ];
        row.extend(inside(&r.inside));
        t.row(row);
    }
    t.render(out);
    if let Some(it) = &p.iterations {
        section(out, "Repetitions");
        let _ = writeln!(out, "  {}", repetitions(p));
        let mut t = Table::new(&[
            if it.by_time_step { "step" } else { "#" },
            "time (slowest rank)",
            "vs mean",
        ]);
        for &(k, s) in &it.times_s {
            t.row(vec![
                k.to_string(),
                units::secs(s),
                if it.mean_s > 0.0 {
                    format!("{:+.1} %", (s / it.mean_s - 1.0) * 100.0)
                } else {
                    "—".into()
                },
            ]);
        }
        t.render(out);
    }
}

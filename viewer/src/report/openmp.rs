//! The report's OpenMP sections: parallel regions, loops and their schedule
//! advice, and the runtime's overhead with the fine-grain hybrid model.

use std::fmt::Write as _;

use hyscope_analyzer::*;

use super::table::{Table, count, observed_section};
use crate::units;

/// How the barrier wait was measured when the runtime's own wait events do
/// not split it (libomp: they span the whole barrier).
const ARRIVAL_NOTE: &str = "  barrier wait = until the team's last thread arrived, sync = the rest (release, last gather): libomp's wait events span the whole barrier\n";

/// The parallel regions, and the first one per thread.
pub fn regions(out: &mut String, a: &Analysis, top: usize) {
    let Some(regions) = observed_section(out, "OpenMP parallel regions", &a.regions) else {
        return;
    };
    let mut t = Table::new(&[
        "region",
        "inst",
        "team",
        "time",
        "% run",
        "fork/join",
        "f/j %",
        "barrier",
        "wait",
        "sync ovh",
        "imbal",
    ]);
    for x in regions.iter().take(top) {
        let per_thread = x.per_thread_observed();
        t.row(vec![
            x.location.label.clone(),
            count(x.instances as f64),
            x.team_size.to_string(),
            units::secs(x.time_s),
            units::percent(x.share_of_run),
            units::secs(x.fork_join_s),
            units::percent(x.fork_join_fraction),
            units::secs_or_na(per_thread.then_some(x.barrier.total_s)),
            units::secs_or_na(x.barrier.wait_observed.then_some(x.barrier.wait_s)),
            units::secs_or_na(x.barrier.wait_observed.then_some(x.barrier.sync_overhead_s)),
            if per_thread {
                crate::units::imbalance(x.imbalance)
            } else {
                "n/a".into()
            },
        ]);
    }
    t.render(out);
    out.push_str("  fork/join = region − implicit task (Mahéo 2015 §6.6.3); sync ovh = barrier − wait (Mahéo 2015 §6.7); imbal = max/mean busy\n");
    if regions.iter().any(|x| !x.per_thread_observed()) {
        out.push_str("  profile mode keeps each thread's totals over the run, not per region: barrier and imbalance per region need trace mode (the fine-grain model and POP below use the totals)\n");
    }
    if regions.iter().any(|x| x.barrier.wait_from_arrivals) {
        out.push_str(ARRIVAL_NOTE);
    }
    if let Some(x) = regions.first().filter(|x| x.per_thread_observed()) {
        let _ = writeln!(out, "\n  per thread of {}:", x.location.label);
        let mut t = Table::new(&[
            "rank.thread",
            "task",
            "busy",
            "barrier",
            "wait",
            "activation",
            "release",
        ]);
        for p in x.per_thread.iter().take(64) {
            t.row(vec![
                format!("{}.{}", p.rank, p.thread),
                units::secs(p.implicit_task_s),
                units::secs(p.busy_s),
                units::secs(p.barrier.total_s),
                units::secs(p.barrier.wait_s),
                units::secs(p.activation_s),
                units::secs(p.release_s),
            ]);
        }
        t.render(out);
    }
}

/// The loops, their schedules and the tuner's advice.
pub fn loops(out: &mut String, a: &Analysis, top: usize) {
    let Some(loops) = observed_section(out, "Loops and schedule tuning", &a.loops) else {
        return;
    };
    if loops.is_empty() {
        let _ = writeln!(out, "  none: the trace has no worksharing loop (`omp for`)");
        return;
    }
    let mut t = Table::new(&[
        "loop",
        "schedule",
        "trip",
        "inst",
        "time",
        "% run",
        "imbal",
        "chunks",
        "dispatch",
        "sched ovh",
        "advice",
    ]);
    for l in loops.iter().take(top) {
        t.row(vec![
            l.location.label.clone(),
            l.schedule.get().cloned().unwrap_or_else(|| "?".into()),
            if l.trip_count == 0 {
                l.trip_count_text()
            } else {
                count(l.trip_count as f64)
            },
            count(l.instances as f64),
            units::secs(l.time_s),
            units::percent(l.share_of_run),
            crate::units::imbalance(l.imbalance),
            l.chunks.get().map_or("n/a".into(), |c| count(*c as f64)),
            units::secs_or_na(l.dispatch_cost_s.get().copied()),
            units::secs_or_na(l.scheduling_overhead_s.get().copied()),
            l.recommendation
                .get()
                .map_or("n/a".into(), |r| r.clause.clone()),
        ]);
    }
    t.render(out);
    for l in loops.iter().take(top) {
        match &l.recommendation {
            Observable::Observed(r) => {
                let _ = writeln!(out, "  • {}\n      rule: {}", r.evidence, r.rule);
                if let Some(best) = l.fastest_simulated(5) {
                    let _ = writeln!(out, "      simulated best (a core per thread): {best}");
                }
            }
            Observable::NotObservable(why) => {
                let _ = writeln!(out, "  • {}: no advice — {why}", l.location.label);
            }
        }
    }
}

/// Fork/join, barriers, scheduling, tasks, locks and the fine-grain model.
pub fn runtime(out: &mut String, a: &Analysis, top: usize) {
    let Some(o) = observed_section(out, "OpenMP runtime overhead", &a.openmp) else {
        return;
    };
    let _ = writeln!(
        out,
        "  fork/join total        {}",
        units::secs(o.fork_join_s)
    );
    let _ = writeln!(
        out,
        "  barriers               {} total, {} wait, {} synchronisation",
        units::secs(o.barrier.total_s),
        units::secs_or_na(o.barrier.wait_observed.then_some(o.barrier.wait_s)),
        units::secs_or_na(o.barrier.wait_observed.then_some(o.barrier.sync_overhead_s)),
    );
    if o.barrier.wait_from_arrivals {
        out.push_str(ARRIVAL_NOTE);
    }
    match &o.scheduling_s {
        Observable::Observed(s) => {
            // The gaps between a thread's chunks: none where each chunk
            // ends at the next dispatch (libomp 19), so say where it went.
            let why = if *s == 0.0 {
                " (no gaps between a thread's chunks: each ends at the next dispatch, whose cost is inside it)"
            } else {
                " (gaps between a thread's chunks)"
            };
            let _ = writeln!(out, "  loop scheduling        {}{why}", units::secs(*s));
        }
        Observable::NotObservable(r) => {
            let _ = writeln!(out, "  loop scheduling        not observable: {r}");
        }
    }
    match &o.tasks {
        Observable::Observed(t) => {
            let _ = writeln!(
                out,
                "  tasks                  {} created, {} running (mean {}), {} in taskwait",
                t.created,
                units::secs(t.run_s),
                units::secs(t.mean_task_s),
                units::secs(t.taskwait_s)
            );
        }
        Observable::NotObservable(r) => {
            let _ = writeln!(out, "  tasks                  not observable: {r}");
        }
    }
    locks(out, &o.mutexes, top);
    fine_grain(out, &o.fine_grain);
}

/// The locks and critical sections, most waited for first.
fn locks(out: &mut String, mutexes: &Observable<Vec<MutexStats>>, top: usize) {
    match mutexes {
        Observable::Observed(m) if !m.is_empty() => {
            let mut t = Table::new(&[
                "lock / critical",
                "kind",
                "acquired",
                "wait",
                "hold",
                "max wait",
            ]);
            for x in m.iter().take(top) {
                t.row(vec![
                    x.location.label.clone(),
                    x.kind.clone(),
                    count(x.acquisitions as f64),
                    units::secs(x.wait_s),
                    units::secs(x.hold_s),
                    units::secs(x.max_wait_s),
                ]);
            }
            t.render(out);
        }
        Observable::Observed(_) => out.push_str("  locks                  none used\n"),
        Observable::NotObservable(r) => {
            let _ = writeln!(out, "  locks                  not observable: {r}");
        }
    }
}

/// The fine-grain hybrid model per rank (Didelot 2014 ch. 5).
fn fine_grain(out: &mut String, ranks: &[FineGrainModel]) {
    out.push_str("\n  fine-grain model (Didelot 2014 §5, Mahéo 2015 §3.3.1): T = T_seq + T_comm + T_compute/P\n");
    let mut t = Table::new(&[
        "rank",
        "P",
        "T",
        "T_compute",
        "T_comm",
        "T_seq",
        "fork/join",
        "regions",
        "bound",
        "serial idle",
        "MPI idle",
    ]);
    for f in ranks.iter().take(64) {
        t.row(vec![
            f.rank.to_string(),
            f.threads.to_string(),
            units::secs(f.t_total_s),
            units::secs(f.t_compute_s),
            units::secs(f.t_comm_s),
            units::secs(f.t_seq_s),
            units::secs(f.fork_join_s),
            count(f.regions as f64),
            f.speedup_bound.map_or("∞".into(), |b| format!("{b:.1}×")),
            units::secs(f.idle_serial_core_s),
            units::secs(f.idle_mpi_core_s),
        ]);
    }
    t.render(out);
    out.push_str(
        "  serial idle, MPI idle = core-time of the other P − 1 threads, idle while the master runs serial code or MPI outside parallel regions ((P − 1) × that time)\n",
    );
}

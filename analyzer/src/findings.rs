//! Top findings: the biggest inefficiencies, with the wall time each costs and
//! what to do, ranked.

use crate::model::*;

pub fn findings(a: &Analysis) -> Vec<Finding> {
    let run_s = a.run.duration_s.max(1e-12);
    let ranks = a.run.ranks.max(1) as f64;
    let mut out: Vec<Finding> = Vec::new();
    let mut push =
        |title: String, category: &str, location: Option<CodeLocation>, cost: f64, todo: String| {
            if cost > 0.0 {
                out.push(Finding {
                    title,
                    category: category.into(),
                    location,
                    cost_s: cost,
                    share_of_run: cost / run_s,
                    what_to_do: todo,
                });
            }
        };
    if let Some(loops) = a.loops.get() {
        for l in loops {
            if let Some(r) = l.recommendation.get()
                && !r.clause.starts_with("keep")
            {
                push(
                    format!(
                        "loop {}: {:.0} % imbalance",
                        l.location.label,
                        (1.0 - 1.0 / l.imbalance.max(1e-9)) * 100.0
                    ),
                    "loop",
                    Some(l.location.clone()),
                    r.predicted_gain_s,
                    r.evidence.clone(),
                );
            }
        }
    }
    if let Some(regions) = a.regions.get() {
        for r in regions {
            let wall = r.fork_join_s / r.ranks.len().max(1) as f64;
            push(
                format!("fork/join overhead of region {} ({} instances)", r.location.label, r.instances),
                "region",
                Some(r.location.clone()),
                wall,
                "fuse neighbouring parallel regions or move the parallel region outside the enclosing loop (document 002 §3.3.1: fork/join adds to sequential time)".into(),
            );
            let team = r.team_size.max(1) as f64;
            let wait = r.barrier.wait_s / team / r.ranks.len().max(1) as f64;
            push(
                format!("barrier wait in region {}", r.location.label),
                "region",
                Some(r.location.clone()),
                wait,
                "threads wait for the slowest at the barriers (load imbalance): balance the work or use a dynamic schedule; `nowait` where the dependence allows".into(),
            );
        }
    }
    if let Some(o) = a.openmp.get() {
        let idle: f64 = o.fine_grain.iter().map(|f| f.t_comm_s).sum::<f64>() / ranks;
        let threads = o.fine_grain.iter().map(|f| f.threads).max().unwrap_or(1);
        if threads > 1 {
            push(
                "MPI outside parallel regions leaves threads idle (master-only)".into(),
                "openmp",
                None,
                idle,
                format!(
                    "{threads} threads per rank idle during master-only MPI: overlap communication with computation, or use hybrid collectives / MPI_THREAD_MULTIPLE (document 002 §5.1)"
                ),
            );
            // Parallelising serial code over P threads saves (P − 1)/P of it.
            let seq: f64 = o
                .fine_grain
                .iter()
                .map(|f| {
                    (f.t_seq_s - f.fork_join_s) * (f.threads.max(1) - 1) as f64
                        / f.threads.max(1) as f64
                })
                .sum::<f64>()
                / ranks;
            push(
                "serial code between parallel regions".into(),
                "openmp",
                None,
                seq.max(0.0),
                "parallelise the serial code between regions: threads are idle (document 002 §3.3.1 bound 1 + T_compute / (T_seq + T_comm))".into(),
            );
        }
        if let Some(m) = o.mutexes.get() {
            for x in m.iter().take(3) {
                push(
                    format!("{} contention at {}", x.kind, x.location.label),
                    "openmp",
                    Some(x.location.clone()),
                    x.wait_s / ranks,
                    "shorten the critical section, use atomics or per-thread accumulation with a reduction".into(),
                );
            }
        }
    }
    if let Some(w) = a.wait_states.get() {
        for e in w.per_callsite.iter().take(8) {
            let todo = match e.kind {
                WaitKind::LateSender => {
                    "the receiver waits for a late sender: post the send earlier or balance the sender's work"
                }
                WaitKind::LateReceiver => {
                    "the sender waits for a late receive: pre-post receives (MPI_Irecv) earlier"
                }
                WaitKind::WaitAtNxN | WaitKind::BarrierWait => {
                    "ranks arrive late at the collective: balance the work before it"
                }
                WaitKind::EarlyReduce => {
                    "the root waits for contributors: enter the reduction later on the root or balance the work"
                }
                WaitKind::LateBroadcast => {
                    "the root enters the broadcast late: move the root's work after it"
                }
            };
            push(
                format!(
                    "{} in {} at {}",
                    e.kind.name(),
                    e.call.clone().unwrap_or_default(),
                    e.location.as_ref().map_or("?".into(), |l| l.label.clone())
                ),
                "wait",
                e.location.clone(),
                e.seconds / ranks,
                todo.into(),
            );
        }
    }
    if let Some(m) = a.memory.get() {
        for p in &m.projections {
            if p.exceeds_memory_per_core == Some(true) {
                out.push(Finding {
                    title: format!(
                        "MPI memory at {} ranks: {:.1} GiB per rank exceeds memory per core",
                        p.ranks,
                        p.total_bytes_per_rank / (1u64 << 30) as f64
                    ),
                    category: "memory".into(),
                    location: m
                        .full_connection_calls
                        .first()
                        .and_then(|c| c.location.clone()),
                    cost_s: 0.0,
                    share_of_run: 0.0,
                    what_to_do: format!(
                        "{}; use XRC/UD or shared vrails and avoid calls forcing full connection",
                        m.pattern
                    ),
                });
                break;
            }
        }
    }
    out.sort_by(|a, b| b.cost_s.total_cmp(&a.cost_s));
    out
}

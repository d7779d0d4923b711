//! Top findings: the biggest inefficiencies, with the wall time each costs and
//! what to do, ranked.

use crate::model::*;

use crate::units;

pub fn findings(a: &Analysis) -> Vec<Finding> {
    let run_s = a.run.duration_s.max(1e-12);
    // Means over ranks are over processes: a rank's programs (exec) once
    // (`processes`), never as ranks that ran at the same time.
    let procs = crate::processes::Processes::of(&a.run.children);
    let ranks = procs.for_means(&a.run) as f64;
    let threads_in_job = procs.threads_at_once(&a.run) as f64;
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
                    phase: None,
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
                        "loop {}: imbalance {}",
                        l.location.label,
                        crate::units::imbalance(l.imbalance)
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
            // The processes that ran the region (its programs' totals add up on each).
            let ran = procs.count(r.ranks.iter().copied()).max(1) as f64;
            let wall = r.fork_join_s / ran;
            push(
                format!(
                    "fork/join overhead of region {} ({} instances)",
                    r.location.label,
                    crate::units::count(r.instances as f64)
                ),
                "region",
                Some(r.location.clone()),
                wall,
                "fuse neighbouring parallel regions or move the parallel region outside the enclosing loop (Mahéo 2015 §3.3.1: fork/join adds to sequential time)".into(),
            );
            let team = r.team_size.max(1) as f64;
            let wait = r.barrier.wait_s / team / ran;
            // Threads that took turns on CPUs wait at a barrier for the
            // others' turns, not for more work: a schedule cannot help there.
            let took_turns = a
                .run
                .placement
                .iter()
                .find(|p| r.ranks.contains(&p.rank) && p.threads_take_turns());
            push(
                format!("barrier wait in region {}", r.location.label),
                "region",
                Some(r.location.clone()),
                wait,
                match took_turns {
                    Some(p) => format!(
                        "threads took turns on CPUs ({}): a thread at the barrier waits for the others' turns as much as for their work; give each thread a core (the placement finding), then record again to see the imbalance",
                        p.turns_text()
                    ),
                    None => "threads wait for the slowest at the barriers (load imbalance): balance the work or use a dynamic schedule; `nowait` where the dependence allows".into(),
                },
            );
            if r.barrier.wait_observed && r.barrier.count > 0 {
                let sync = r.barrier.sync_overhead_s / team / ran;
                let per_barrier = r.barrier.sync_overhead_s / r.barrier.count as f64;
                push(
                    format!("barrier synchronisation in region {}", r.location.label),
                    "region",
                    Some(r.location.clone()),
                    sync,
                    format!(
                        "the barriers' own cost, not imbalance ({} per thread per barrier, Mahéo 2015 §6.7): fewer barriers (`nowait`, fused loops){}",
                        units::secs(per_barrier),
                        // An uncontended barrier releases a team in about a µs;
                        // ten times that is a thread waiting for a core.
                        if per_barrier > 10e-6 {
                            "; this much per barrier means threads wait for a core: ranks × OMP_NUM_THREADS above the cores per node, or threads not pinned (OMP_PROC_BIND)"
                        } else {
                            ""
                        }
                    ),
                );
            }
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
                    "{} per rank idle during master-only MPI: overlap communication with computation, or use hybrid collectives / MPI_THREAD_MULTIPLE (Mahéo 2015 §5.1)",
                    // All but the master, the P − 1 of POP's loss.
                    match threads - 1 {
                        1 => "1 thread".to_string(),
                        n => format!("{n} threads"),
                    }
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
                "parallelise the serial code between regions: threads are idle (Mahéo 2015 §3.3.1 bound 1 + T_compute / (T_seq + T_comm))".into(),
            );
        }
        // Profile mode has no barrier times per region (and libomp's waits
        // span its barriers): the rank's totals, wait and synchronisation
        // together, per thread as the per-region findings count them.
        let per_region = a
            .regions
            .get()
            .is_some_and(|r| r.iter().any(|x| x.per_thread_observed()));
        if a.run.mode == "profile" && !per_region {
            push(
                "barriers (profile mode: all regions, wait and synchronisation together)".into(),
                "openmp",
                None,
                o.barrier.total_s / threads_in_job,
                "threads wait at barriers for the slowest (load imbalance) or for the barrier itself: re-record with --mode trace to see which region and how much of it is imbalance (balance the work, a dynamic schedule, `nowait`) or synchronisation (fewer barriers, a core per thread)".into(),
            );
        }
        placement_finding(a, o, (&procs, ranks, threads_in_job), &mut push);
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
                        "MPI memory at {} ranks: {} per rank exceeds memory per core",
                        p.ranks,
                        units::bytes(p.total_bytes_per_rank.unwrap_or_default())
                    ),
                    category: "memory".into(),
                    location: m
                        .full_connection_calls
                        .first()
                        .and_then(|c| c.location.clone()),
                    cost_s: 0.0,
                    share_of_run: 0.0,
                    what_to_do: memory_advice(m, p),
                    phase: None,
                });
                break;
            }
        }
    }
    // Stable: findings of equal cost keep the order they were found in,
    // which follows the sorted lists they come from.
    out.sort_by(|a, b| b.cost_s.total_cmp(&a.cost_s));
    out
}

/// OpenMP threads that share CPUs (`placement`): one finding for the job.
/// Bound too tightly (the host has CPUs to spare), by the launcher or by the
/// OpenMP runtime's own binding inside the rank's mask, the gain is what a
/// core per thread saves ([`bound_rank_gain`]). On an oversubscribed host no
/// binding helps; what sharing costs there is measured by the barriers'
/// synchronisation (a released thread waits for a core). Profile-mode traces
/// estimate the gain from the threads' busy times over the run.
/// What to change where the projection `p` exceeds the memory per core:
/// over queue pairs (openib, UCX rc), XRC, UD or shared vrails and fewer
/// full connections (Didelot 2014 §3.4, Table 3.4); over a transport
/// without them (TCP), only fewer connections per rank.
pub(crate) fn memory_advice(m: &MemoryFootprint, p: &Projection) -> String {
    if p.qp_bytes_per_rank.is_some_and(|q| q > 0.0) {
        format!(
            "{}; use XRC/UD or shared vrails and avoid calls forcing full connection",
            m.pattern
        )
    } else {
        format!(
            "{}; over {} every connection to another node costs its buffers: avoid calls forcing full connection, and run fewer ranks with more threads each",
            m.pattern, m.network_transport
        )
    }
}

fn placement_finding(
    a: &Analysis,
    o: &OpenMpOverhead,
    (procs, ranks, threads_in_job): (&crate::processes::Processes, f64, f64),
    push: &mut impl FnMut(String, &str, Option<CodeLocation>, f64, String),
) {
    let sharing: Vec<&RankPlacement> = a
        .run
        .placement
        .iter()
        .filter(|p| p.threads_share_cpus())
        .collect();
    let Some(first) = sharing.first() else {
        return;
    };
    // A rank's programs (exec) are one rank here too.
    let ranks_sharing = procs.count(sharing.iter().map(|p| p.rank));
    let who = if ranks_sharing == 1 {
        format!(
            "rank {} runs {} threads on CPU {}",
            first.rank,
            first.threads,
            first.cpu_list()
        )
    } else {
        format!(
            "{} ranks run more threads than CPUs (rank {}: {} threads on CPU {})",
            ranks_sharing,
            first.rank,
            first.threads,
            first.cpu_list()
        )
    };
    let threads = first.threads;
    // Pinned together by the OpenMP runtime is a case of bound too tightly
    // (an oversubscribed host gets the other advice): only the fix differs.
    let pinned = sharing.iter().all(|p| p.pinned_together());
    if sharing.iter().all(|p| p.bound_too_tightly()) {
        let gain: f64 = sharing.iter().map(|p| bound_rank_gain(a, p)).sum::<f64>() / ranks;
        let advice = if pinned {
            format!(
                "the OpenMP runtime bound the threads to {} of the rank's {} CPUs ({}): OMP_PROC_BIND=master/primary keeps every thread on the primary's place, and OMP_PLACES with fewer places than threads doubles them up — use OMP_PROC_BIND=close (or spread) with OMP_PLACES=cores",
                first.run_cpus().len(),
                first.cpus.len(),
                crate::placement::cpu_list(&first.cpus),
            )
        } else {
            let host = if first.host_cpus > 0 {
                format!(" while {} has {} CPUs", first.host, first.host_cpus)
            } else {
                String::new()
            };
            format!(
                "the launcher bound the rank to fewer CPUs than its OpenMP threads{host} (Open MPI binds each rank to one core by default for up to 2 ranks): give each rank {threads} cores — Open MPI `mpirun --map-by slot:PE={threads}` (or `--bind-to none`), MPICH `mpiexec -bind-to core:{threads}`, Slurm `srun --cpus-per-task={threads}` — with OMP_PROC_BIND=close OMP_PLACES=cores"
            )
        };
        let estimate = if a.run.mode == "profile" {
            " (profile mode: the gain is estimated from each thread's busy time over the run, without the barriers' synchronisation; a trace-mode run measures it per region)"
        } else {
            ""
        };
        push(
            format!("OpenMP threads share CPUs: {who}"),
            "placement",
            None,
            gain,
            format!("{advice}{estimate}"),
        );
    } else {
        // Σ over every thread of every rank, over the threads that ran at
        // once (a rank's exec'd programs' once): the average thread's share.
        // (None in profile mode, where the barriers' synchronisation is not
        // told from their wait: the profile-mode barrier finding covers it.)
        let cost = o.barrier.sync_overhead_s / threads_in_job;
        // The processes that share the host's CPUs at once: its ranks and
        // their child processes, a rank's exec'd programs once.
        let ranks_on_host = procs.count(
            a.run
                .placement
                .iter()
                .filter(|p| p.host == first.host)
                .map(|p| p.rank),
        );
        let fit = (first.host_cpus / (ranks_on_host as u32).max(1)).max(1);
        push(
            format!("OpenMP threads share CPUs: {who}"),
            "placement",
            None,
            cost,
            format!(
                "{} OpenMP threads on the {} CPUs of {}: threads take turns and each barrier waits for one to get a core back; run at most {fit} thread(s) per rank (OMP_NUM_THREADS={fit}) or fewer ranks per node",
                first.host_threads, first.host_cpus, first.host
            ),
        );
    }
}

/// What a rank bound to fewer CPUs than threads would gain with a core per
/// thread, summed over its parallel regions: [`shared_cpu_gain`] of each
/// region's per-thread busy times on this rank, and its threads' mean
/// barrier synchronisation. (`examples/hybrid`, one rank bound to one core
/// against `--bind-to none`, 4 alternating runs: 0.163 s predicted, 0.151 s
/// gained in the regions; `benchmarks/analyzer.md`, "CPU placement".)
///
/// A profile-mode trace has only totals: its threads' busy times over the
/// whole run stand in for each region's (the same model, as if every region
/// instance split its work like the run does), and no synchronisation split
/// (libomp's waits span its barriers).
fn bound_rank_gain(a: &Analysis, p: &RankPlacement) -> f64 {
    if a.run.mode == "profile" {
        let mut busy = p.thread_busy_s.clone();
        return if busy.len() > 1 {
            shared_cpu_gain(&mut busy, p.run_cpus().len(), p.cpus_after_fix())
        } else {
            0.0
        };
    }
    let Some(regions) = a.regions.get() else {
        return 0.0;
    };
    regions
        .iter()
        .map(|r| {
            let mine: Vec<&ThreadRegionStats> =
                r.per_thread.iter().filter(|t| t.rank == p.rank).collect();
            if mine.is_empty() {
                return 0.0;
            }
            let mut busy: Vec<f64> = mine.iter().map(|t| t.busy_s).collect();
            // And the barriers' synchronisation: a released thread waiting
            // for the core, which a core per thread brings back to the
            // runtime's microsecond.
            let sync =
                mine.iter().map(|t| t.barrier.sync_overhead_s).sum::<f64>() / mine.len() as f64;
            shared_cpu_gain(&mut busy, p.run_cpus().len(), p.cpus_after_fix()) + sync
        })
        .sum()
}

/// Threads that shared `cpus` CPUs, given how long each was busy: what the
/// slowest would have saved with a core each. Under processor sharing, while
/// n threads are still busy each runs at min(1, cpus/n) of a core, so the
/// work a thread did is rebuilt from the busy times in increasing order; the
/// slowest thread's work alone is then its time on its own core.
///
/// `cpus_after` is what the fix gives them: a core each for the launcher's
/// binding, but only the rank's own CPUs when the fix is the OpenMP binding
/// inside its mask; the slowest thread's time is then rebuilt under sharing
/// of those.
pub fn shared_cpu_gain(busy: &mut [f64], cpus: usize, cpus_after: usize) -> f64 {
    busy.sort_by(f64::total_cmp);
    let n = busy.len();
    // Under processor sharing threads finish in order of their work: the
    // k-th phase runs n − k threads at min(1, cpus / (n − k)) each.
    let rate = |c: usize, k: usize| (c as f64 / (n - k) as f64).min(1.0);
    let (mut time_after, mut work, mut prev) = (0.0, 0.0, 0.0);
    for (k, &b) in busy.iter().enumerate() {
        let done = (b - prev).max(0.0) * rate(cpus, k);
        work += done;
        time_after += done / rate(cpus_after, k);
        prev = b;
    }
    debug_assert!(work <= prev + 1e-9);
    (prev - time_after).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::shared_cpu_gain;

    #[test]
    fn processor_sharing_rebuilds_the_work() {
        // 2 threads on 1 CPU, works 50 and 150: the light one finishes at
        // 100 (half a core), the heavy one at 200; alone it would take 150.
        assert_eq!(shared_cpu_gain(&mut [200.0, 100.0], 1, 2), 50.0);
        // Equal works 100 on one CPU: both busy 200, each alone 100.
        assert_eq!(shared_cpu_gain(&mut [200.0, 200.0], 1, 2), 100.0);
        // 4 threads of 100 on 2 CPUs: all busy 200; alone 100.
        assert_eq!(shared_cpu_gain(&mut [200.0; 4], 2, 4), 100.0);
        // Enough CPUs: nothing to gain.
        assert_eq!(shared_cpu_gain(&mut [80.0, 100.0], 2, 2), 0.0);
        // 4 threads of 100 pinned to 1 CPU of a rank's 2: busy 400 each;
        // spread over the 2 they take 200.
        assert_eq!(shared_cpu_gain(&mut [400.0; 4], 1, 2), 200.0);
        // More CPUs after than threads: a core each, as with exactly 2.
        assert_eq!(shared_cpu_gain(&mut [200.0, 100.0], 1, 4), 50.0);
    }
}

//! The pass over every rank: regions, loops, locks, tasks and the overhead
//! summary from the ranks' aggregates.

use std::collections::HashMap;

use hyscope_format::OmpKind;

use super::aggregates::{MutexAcc, RegionAcc};
use super::loop_stats::build_loop;
use super::loops::LoopAcc;
use super::pass::RankPass;
use super::regions::add_thread_stats;
use super::*;
use crate::model::*;
use crate::trace_data::TraceData;

/// The OpenMP pass over every rank.
pub fn analyze_omp(
    data: &TraceData,
    run: &RunFacts,
    mut passes: Vec<RankPass>,
    warnings: &mut Vec<String>,
) -> OmpResult {
    passes.sort_by_key(|p| p.info.rank);
    // Ranks with no OpenMP rows still get an (empty) entry, in rank order.
    for rd in &data.ranks {
        if !passes.iter().any(|p| p.info.rank == rd.rank) {
            let threads = run
                .threads_per_rank
                .get(rd.rank as usize)
                .copied()
                .unwrap_or(1);
            passes.push(rank_pass(rd.rank, &[], threads.max(1)));
        }
    }
    passes.sort_by_key(|p| p.info.rank);
    let any_omp = data.ranks.iter().any(|r| r.omp_rows > 0);
    let total_rank_s: f64 = run.rank_duration_s.iter().sum::<f64>().max(1e-12);

    let mut regions: HashMap<u64, RegionAcc> = HashMap::new();
    let mut loops: HashMap<u64, LoopAcc> = HashMap::new();
    let mut mutexes: HashMap<u64, MutexAcc> = HashMap::new();
    let mut serialized = 0;
    let mut clipped = 0;
    let mut clipped_ns = 0;
    let mut barrier = BarrierStats::default();
    let (mut created, mut run_ns, mut runs, mut taskwait) = (0u64, 0i64, 0u64, 0i64);
    let mut any_wait = false;
    let mut profile_mode = false;
    let mut ranks = Vec::new();
    for p in passes {
        for (k, v) in p.regions {
            let e = regions.entry(data.canon(k)).or_default();
            e.instances += v.instances;
            e.serialized += v.serialized;
            e.ranks.extend(v.ranks);
            e.team = e.team.max(v.team);
            e.time += v.time;
            e.itask += v.itask;
            e.fork_join += v.fork_join;
            e.fj_max = e.fj_max.max(v.fj_max);
            e.fj_observed += v.fj_observed;
            for (key, t) in v.per_thread {
                let x = e
                    .per_thread
                    .entry(key)
                    .or_insert_with(|| ThreadRegionStats {
                        rank: t.rank,
                        thread: t.thread,
                        ..ThreadRegionStats::default()
                    });
                add_thread_stats(x, &t);
            }
        }
        for (k, mut v) in p.loops {
            v.region_codeptr = data.canon(v.region_codeptr);
            loops.entry(data.canon(k)).or_default().merge(v);
        }
        for (k, v) in p.mutexes {
            let e = mutexes.entry(data.canon(k)).or_default();
            e.kind = v.kind;
            e.acquisitions += v.acquisitions;
            e.wait += v.wait;
            e.hold += v.hold;
            e.max_wait = e.max_wait.max(v.max_wait);
        }
        serialized += p.serialized;
        clipped += p.clipped;
        clipped_ns += p.clipped_ns;
        barrier.total_s += p.barrier.total_s;
        barrier.wait_s += p.barrier.wait_s;
        barrier.count += p.barrier.count;
        created += p.tasks_created;
        run_ns += p.task_run;
        runs += p.task_runs;
        taskwait += p.taskwait;
        any_wait |= p.any_sync_wait;
        barrier.wait_from_arrivals |= p.barrier.wait_from_arrivals;
        profile_mode |= p.profile_mode;
        warnings.extend(p.notes);
        ranks.push(p.info);
    }
    barrier.sync_overhead_s = (barrier.total_s - barrier.wait_s).max(0.0);
    barrier.wait_observed = any_wait;
    if !any_wait {
        barrier.wait_s = 0.0;
        barrier.sync_overhead_s = 0.0;
    }

    let lost = data.problems.iter().any(|p| p.data_lost);
    let no_omp = || {
        if lost {
            // Never a missing runtime where the trace lost data: the events
            // may have been there (see the trace's integrity).
            "no OpenMP events in what the trace kept: it is partial (see its problems)".to_string()
        } else if data.manifest.openmp.is_none() {
            "no OpenMP events: the program did not use an OMPT-capable runtime (libgomp has no OMPT)".to_string()
        } else {
            "no OpenMP events were recorded".to_string()
        }
    };

    // Regions.
    let mut region_list: Vec<RegionStats> = regions
        .into_iter()
        .map(|(codeptr, a)| {
            let per_thread: Vec<ThreadRegionStats> = a.per_thread.into_values().collect();
            let mut b = BarrierStats::default();
            for t in &per_thread {
                b.total_s += t.barrier.total_s;
                b.wait_s += t.barrier.wait_s;
                b.count += t.barrier.count;
                b.wait_observed |= t.barrier.wait_observed;
                b.wait_from_arrivals |= t.barrier.wait_from_arrivals;
            }
            b.sync_overhead_s = (b.total_s - b.wait_s).max(0.0);
            let busy: Vec<f64> = per_thread.iter().map(|t| t.busy_s).collect();
            RegionStats {
                location: data.location(codeptr),
                instances: a.instances,
                serialized_instances: a.serialized,
                ranks: {
                    let mut r = a.ranks;
                    r.sort_unstable();
                    r.dedup();
                    r
                },
                team_size: a.team,
                time_s: ns_to_s(a.time),
                share_of_run: ns_to_s(a.time) / total_rank_s,
                implicit_task_s: ns_to_s(a.itask),
                fork_join_s: ns_to_s(a.fork_join),
                fork_join_fraction: if a.time > 0 {
                    a.fork_join as f64 / a.time as f64
                } else {
                    0.0
                },
                fork_join_mean_s: if a.fj_observed > 0 {
                    ns_to_s(a.fork_join) / a.fj_observed as f64
                } else {
                    0.0
                },
                fork_join_max_s: ns_to_s(a.fj_max),
                barrier: b,
                imbalance: max_over_mean(&busy),
                per_thread,
            }
        })
        .collect();
    region_list.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));

    // Loops.
    let capability = |name: &str| {
        data.manifest
            .openmp
            .as_ref()
            .and_then(|o| o.capabilities.get(name).copied())
    };
    let mut loop_list: Vec<LoopStats> = loops
        .into_iter()
        .map(|(codeptr, a)| {
            build_loop(
                data,
                codeptr,
                a,
                total_rank_s,
                capability("ompt_callback_dispatch"),
                profile_mode,
            )
        })
        .collect();
    loop_list.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));
    let scheduling: f64 = loop_list
        .iter()
        .filter_map(|l| l.scheduling_overhead_s.get())
        .sum();
    let any_chunks = loop_list.iter().any(|l| l.chunks.get().is_some());

    let mutex_list: Vec<MutexStats> = {
        let mut v: Vec<MutexStats> = mutexes
            .into_iter()
            .map(|(codeptr, m)| MutexStats {
                location: data.location(codeptr),
                kind: hyscope_format::variant_name(OmpKind::MutexWait, m.kind).to_string(),
                acquisitions: m.acquisitions,
                wait_s: ns_to_s(m.wait),
                hold_s: ns_to_s(m.hold),
                max_wait_s: ns_to_s(m.max_wait),
            })
            .collect();
        v.sort_by(|a, b| b.wait_s.total_cmp(&a.wait_s));
        v
    };
    let fork_join_s = region_list.iter().map(|r| r.fork_join_s).sum();
    let mutex_cap = capability("ompt_callback_mutex_acquire");
    let task_cap = capability("ompt_callback_task_create");
    let overhead = OpenMpOverhead {
        fork_join_s,
        barrier,
        scheduling_s: if any_chunks {
            Observable::Observed(scheduling)
        } else {
            Observable::not(
                "no loop chunk (dispatch) events: per-chunk scheduling cost is not visible",
            )
        },
        mutexes: if !mutex_list.is_empty() || mutex_cap.is_some_and(|c| c >= 2) {
            Observable::Observed(mutex_list)
        } else {
            Observable::not("mutex callbacks not registered by the runtime")
        },
        tasks: if created > 0 || runs > 0 || task_cap.is_some_and(|c| c >= 2) {
            Observable::Observed(TaskStats {
                created,
                run_s: ns_to_s(run_ns),
                mean_task_s: if runs > 0 {
                    ns_to_s(run_ns) / runs as f64
                } else {
                    0.0
                },
                taskwait_s: ns_to_s(taskwait),
            })
        } else {
            Observable::not("task callbacks not registered by the runtime")
        },
        fine_grain: Vec::new(), // filled by mpi-aware pass in `fine_grain`
    };
    if clipped > 0 {
        let at = if profile_mode {
            "from the totals (profile mode: the workers' implicit tasks less the rank's region time)"
        } else {
            "at the master's parallel end"
        };
        warnings.push(format!(
            "clipped {clipped} worker join-barrier intervals {at} ({:.3} ms of serial time not booked as barrier wait)",
            ns_to_s(clipped_ns) * 1e3
        ));
    }
    let mut result = OmpResult {
        regions: if any_omp {
            Observable::Observed(region_list)
        } else {
            Observable::not(no_omp())
        },
        loops: if any_omp {
            Observable::Observed(loop_list)
        } else {
            Observable::not(no_omp())
        },
        overhead: if any_omp {
            Observable::Observed(overhead)
        } else {
            Observable::not(no_omp())
        },
        serialized_regions: serialized,
        clipped_join_waits: clipped,
        clipped_join_wait_s: ns_to_s(clipped_ns),
        ranks,
    };
    let fg = fine_grain(data, &result.ranks);
    if let Some(o) = result.overhead.get_mut() {
        o.fine_grain = fg;
    }
    result
}

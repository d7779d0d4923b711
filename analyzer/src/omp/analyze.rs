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

use crate::units;

/// The OpenMP aggregates of every rank, merged one rank at a time in rank
/// order while the trace is read ([`crate::load`]): a rank's [`RankPass`] is
/// dropped once added, so memory holds one merged set of aggregates (and the
/// small [`RankOmp`] of each rank), not one per rank. Merging in rank order
/// keeps every floating-point sum the same as one pass over all ranks.
///
/// It is also what a process analysing a subset of the ranks would hand on:
/// merging two of them (ranks `a..b` then `b..c`) is [`OmpMerge::add`] of each
/// rank in order.
#[derive(Debug, Default)]
pub struct OmpMerge {
    regions: HashMap<u64, RegionAcc>,
    loops: HashMap<u64, LoopAcc>,
    mutexes: HashMap<u64, MutexAcc>,
    serialized: u64,
    clipped: u64,
    clipped_ns: i64,
    barrier: BarrierStats,
    created: u64,
    run_ns: i64,
    runs: u64,
    taskwait: i64,
    any_wait: bool,
    profile_mode: bool,
    notes: Vec<String>,
    ranks: Vec<RankOmp>,
}

impl OmpMerge {
    /// Each rank's own results, in the order the ranks were added.
    pub fn ranks(&self) -> &[RankOmp] {
        &self.ranks
    }

    /// The worker join-barrier ends clipped at their region's end (trace
    /// mode) or taken out of the totals (profile mode): how many, and the
    /// serial time past the ends (seconds), as [`RunFacts`] states them.
    pub fn clipped_join_waits(&self) -> (u64, f64) {
        (self.clipped, ns_to_s(self.clipped_ns))
    }

    /// Add the next rank's aggregates (ranks in increasing order), keyed by
    /// the id of the code location each of the rank's addresses is (`canon`,
    /// the rank's own symbols: [`crate::code_map`]).
    pub fn add(&mut self, p: RankPass, canon: impl Fn(u64) -> u64) {
        debug_assert!(self.ranks.last().is_none_or(|r| r.rank < p.info.rank));
        // In order of the raw code address: several may be one code
        // location, and their floating-point times must add up in one order,
        // not the hash maps' (which differs from run to run), so the same
        // trace gives the same digits every time.
        for (k, v) in by_address(p.regions) {
            let e = self.regions.entry(canon(k)).or_default();
            e.instances += v.instances;
            e.serialized += v.serialized;
            e.ranks.extend(v.ranks);
            e.team = e.team.max(v.team);
            e.time += v.time;
            e.time_sq.add(v.time_sq);
            e.itask += v.itask;
            e.fork_join += v.fork_join;
            e.fj_max = e.fj_max.max(v.fj_max);
            e.fj_observed += v.fj_observed;
            e.fj_sq.add(v.fj_sq);
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
        for (k, mut v) in by_address(p.loops) {
            v.region_codeptr = canon(v.region_codeptr);
            self.loops.entry(canon(k)).or_default().merge(v);
        }
        for (k, v) in by_address(p.mutexes) {
            let e = self.mutexes.entry(canon(k)).or_default();
            e.kind = v.kind;
            e.acquisitions += v.acquisitions;
            e.wait += v.wait;
            e.hold += v.hold;
            e.max_wait = e.max_wait.max(v.max_wait);
        }
        self.serialized += p.serialized;
        self.clipped += p.clipped;
        self.clipped_ns += p.clipped_ns;
        let barrier = &mut self.barrier;
        barrier.total_s += p.barrier.total_s;
        barrier.wait_s += p.barrier.wait_s;
        barrier.count += p.barrier.count;
        barrier.wait_from_arrivals |= p.barrier.wait_from_arrivals;
        self.created += p.tasks_created;
        self.run_ns += p.task_run;
        self.runs += p.task_runs;
        self.taskwait += p.taskwait;
        self.any_wait |= p.any_sync_wait;
        self.profile_mode |= p.profile_mode;
        self.notes.extend(p.notes);
        self.ranks.push(p.info);
    }
}

/// Why a profile-mode region's fork/join has no scatter.
const PROFILE_FORK_JOIN: &str = "profile mode: a region's fork/join is its time less its primary thread's implicit tasks, both totals over the run, with no fork/join per instance to scatter";

/// A rank's aggregates in order of their code address.
fn by_address<V>(map: HashMap<u64, V>) -> Vec<(u64, V)> {
    let mut v: Vec<(u64, V)> = map.into_iter().collect();
    v.sort_unstable_by_key(|&(k, _)| k);
    v
}

/// The OpenMP pass over every rank, from their merged aggregates.
pub fn analyze_omp(
    data: &TraceData,
    run: &RunFacts,
    merged: OmpMerge,
    warnings: &mut Vec<String>,
) -> OmpResult {
    let (clipped_join_waits, clipped_join_wait_s) = merged.clipped_join_waits();
    let OmpMerge {
        regions,
        loops,
        mutexes,
        serialized,
        clipped: _,
        clipped_ns: _,
        mut barrier,
        created,
        run_ns,
        runs,
        taskwait,
        any_wait,
        profile_mode,
        notes,
        mut ranks,
    } = merged;
    warnings.extend(notes);
    // Ranks with no OpenMP rows still get an (empty) entry, in rank order.
    let merged_ranks: std::collections::HashSet<u32> = ranks.iter().map(|r| r.rank).collect();
    for rd in &data.ranks {
        if !merged_ranks.contains(&rd.rank) {
            let threads = run
                .threads_per_rank
                .get(rd.rank as usize)
                .copied()
                .unwrap_or(1);
            ranks.push(rank_pass(rd.rank, &[], threads.max(1)).info);
        }
    }
    ranks.sort_by_key(|r| r.rank);
    let any_omp = data.ranks.iter().any(|r| r.omp_rows > 0);
    let total_rank_s: f64 = run.rank_duration_s.iter().sum::<f64>().max(1e-12);

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
            // No OpenMP runtime started the tool. The trace does not tell a
            // program without OpenMP from one on a runtime without OMPT
            // (`record` warns about libgomp when it starts the program): the
            // common case first, the other as the hint it needs.
            "no OpenMP events: the program ran no OpenMP, or ran it on a runtime without OMPT (GCC's libgomp: record with --openmp-runtime=llvm)".to_string()
        } else {
            "no OpenMP events were recorded".to_string()
        }
    };

    // Regions.
    let version = data.manifest.format_version.as_str();
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
                time_scatter: a.time_sq.observed(a.instances, a.time, version),
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
                fork_join_scatter: if profile_mode {
                    Observable::not(PROFILE_FORK_JOIN)
                } else {
                    a.fj_sq.observed(a.fj_observed, a.fork_join, version)
                },
                barrier: b,
                imbalance: team_imbalance(per_thread.iter().map(|t| (t.rank, t.busy_s))),
                per_thread,
            }
        })
        .collect();
    // Equal times keep one order on every run (the aggregates come from a hash map).
    region_list.sort_by(|a, b| {
        b.time_s
            .total_cmp(&a.time_s)
            .then_with(|| a.location.address.cmp(&b.location.address))
    });

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
                &run.placement,
            )
        })
        .collect();
    // Equal times keep one order on every run (the aggregates come from a hash map).
    loop_list.sort_by(|a, b| {
        b.time_s
            .total_cmp(&a.time_s)
            .then_with(|| a.location.address.cmp(&b.location.address))
    });
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
        v.sort_by(|a, b| {
            b.wait_s
                .total_cmp(&a.wait_s)
                .then_with(|| a.location.address.cmp(&b.location.address))
        });
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
    if clipped_join_waits > 0 {
        let at = if profile_mode {
            "from the totals (profile mode: the workers' implicit tasks less the rank's region time)"
        } else {
            "at the master's parallel end"
        };
        warnings.push(format!(
            "clipped {clipped_join_waits} worker join-barrier intervals {at} ({} of serial time not booked as barrier wait)",
            units::secs(clipped_join_wait_s)
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
        clipped_join_waits,
        clipped_join_wait_s,
        ranks,
    };
    let fg = fine_grain(data, &result.ranks);
    if let Some(o) = result.overhead.get_mut() {
        o.fine_grain = fg;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadRegionStats;

    /// Many raw addresses of one code location (one id):
    /// their floating-point times add up in address order, whatever order
    /// the rank's hash map holds them in, so a report is the same to the last
    /// digit every time.
    #[test]
    fn addresses_of_one_location_add_up_in_address_order() {
        let value = |i: u64| match i % 3 {
            0 => 1e16,
            1 => 1.0 + i as f64 * 0.1,
            _ => -1e16,
        };
        let mut pass = RankPass::default();
        for i in 0..64u64 {
            let mut t = ThreadRegionStats::default();
            t.barrier.total_s = value(i);
            let acc = pass.regions.entry(0x1000 + i).or_default();
            acc.time = 1;
            acc.per_thread.insert((0, 0), t);
        }
        let mut merge = OmpMerge::default();
        merge.add(pass, |_| 0x1000);
        let mut want = 0.0;
        for i in 0..64u64 {
            want += value(i);
        }
        let got = merge.regions[&0x1000].per_thread[&(0, 0)].barrier.total_s;
        assert_eq!(got.to_bits(), want.to_bits(), "{got} against {want}");
    }
}

//! Profile mode: the rank's aggregates from `summary` rows (totals only).

use std::collections::HashMap;

use hyscope_format::OmpRecord;

use super::aggregates::RankPass;
use super::kinds::*;
use super::sum_sq::SumSq;
use crate::model::*;

/// Profile mode (`summary` rows: variant = kind, flags = its variant, count =
/// intervals, chunk_start = summed ns, and from format 1.10 their summed
/// squares). Only totals exist: no join-barrier clipping, no per-instance
/// times (but their scatter, from the squares), no chunks. Rows with the
/// same key add up.
pub(super) fn profile_summaries(rank: u32, rows: &[&OmpRecord], out: &mut RankPass) {
    out.profile_mode = true;
    let total = |r: &OmpRecord| r.chunk_start as i64;
    // Encountering thread of each region code location.
    let mut master: HashMap<u64, u32> = HashMap::new();
    // Per thread: implicit tasks (total, count), barriers and their waits.
    let mut itask_by_thread: HashMap<u32, (i64, u64)> = HashMap::new();
    let mut barrier_by_thread: HashMap<u32, (i64, i64)> = HashMap::new();
    // Regions with a team (not serialized, e.g. `if(0)`): time and
    // instances; and whether any was forked by another thread than 0.
    let (mut teamed, mut nested) = ((0i64, 0u64), false);
    // Per loop and thread: its intervals and their squares.
    let mut loop_sq: HashMap<(u64, u32), (u64, SumSq)> = HashMap::new();
    for r in rows.iter().filter(|r| r.variant == K_PARALLEL) {
        master.entry(r.codeptr).or_insert(r.thread);
        nested |= r.thread != 0;
        if r.team_size != 1 {
            teamed.0 += total(r);
            teamed.1 += r.count;
        }
        let acc = out.regions.entry(r.codeptr).or_default();
        acc.instances += r.count;
        acc.team = acc.team.max(r.team_size);
        if !acc.ranks.contains(&rank) {
            acc.ranks.push(rank);
        }
        acc.time += total(r);
        acc.time_sq.add_summary(r);
        out.info.region_ns += total(r);
        out.info.region_count += r.count;
    }
    for r in rows.iter() {
        match r.variant {
            K_ITASK => {
                let it = itask_by_thread.entry(r.thread).or_default();
                it.0 += total(r);
                it.1 += r.count;
                // The primary's implicit tasks carry their region's address:
                // the region's fork/join. (Per-thread times per region are
                // not kept in profile mode.)
                if let Some(acc) = out.regions.get_mut(&r.codeptr).filter(|_| r.codeptr != 0)
                    && master.get(&r.codeptr) == Some(&r.thread)
                {
                    acc.itask += total(r);
                }
                if let Some(b) = out.info.busy_ns.get_mut(r.thread as usize) {
                    *b += total(r);
                }
            }
            K_SYNC if is_barrier(r.flags as u8) => {
                out.barrier.total_s += ns_to_s(total(r));
                out.barrier.count += r.count;
                barrier_by_thread.entry(r.thread).or_default().0 += total(r);
                if let Some(b) = out.info.busy_ns.get_mut(r.thread as usize) {
                    *b -= total(r);
                }
                if let Some(b) = out.info.runtime_ns.get_mut(r.thread as usize) {
                    *b += total(r);
                }
            }
            K_SYNCWAIT if is_barrier(r.flags as u8) => {
                out.barrier.wait_s += ns_to_s(total(r));
                barrier_by_thread.entry(r.thread).or_default().1 += total(r);
                out.any_sync_wait = true;
            }
            K_SYNC if is_taskwait(r.flags as u8) => out.taskwait += total(r),
            K_MWAIT | K_MHOLD => {
                let m = out.mutexes.entry(r.codeptr).or_default();
                m.kind = r.flags as u8;
                if r.variant == K_MWAIT {
                    m.acquisitions += r.count;
                    m.wait += total(r);
                } else {
                    m.hold += total(r);
                }
            }
            K_TCREATE => out.tasks_created += r.count,
            K_TRUN => {
                out.task_run += total(r);
                out.task_runs += r.count;
            }
            K_WORK if is_loop(r.flags as u8) => {
                let la = out.loops.entry(r.codeptr).or_default();
                *la.variants.entry(r.flags as u8).or_default() += r.count;
                if !la.ranks.contains(&rank) {
                    la.ranks.push(rank);
                }
                la.team = la.team.max(r.thread + 1);
                let ta = la.per_thread.entry((rank, r.thread)).or_default();
                ta.time += total(r);
                ta.busy += total(r);
                let sq = loop_sq.entry((r.codeptr, r.thread)).or_default();
                sq.0 += r.count;
                sq.1.add_summary(r);
                // Per-thread intervals: instances counted on the master only.
                if r.thread == 0 {
                    la.instances += r.count;
                }
            }
            _ => {}
        }
    }
    // A loop lasts until its last thread leaves it: per instance that is the
    // slowest thread, which under a static schedule is the same one each
    // time, so the longest thread total stands for the loop's, and its
    // intervals' scatter for the scatter of the loop's instances.
    for (codeptr, la) in out.loops.iter_mut() {
        let slowest = la.per_thread.iter().max_by_key(|(_, t)| t.time);
        la.time = slowest.map_or(0, |(_, t)| t.time);
        if let Some(&(n, sq)) =
            slowest.and_then(|((_, thread), _)| loop_sq.get(&(*codeptr, *thread)))
        {
            (la.time_n, la.time_sq) = (n, sq);
        }
    }
    if !nested {
        late_join_ends(teamed, &itask_by_thread, &barrier_by_thread, out);
    }
    // libomp's waits span its barriers (their callbacks share a time stamp):
    // then the wait is no part of the barrier, and the split needs the
    // team's arrivals, which only trace mode keeps.
    if out.any_sync_wait && out.barrier.wait_s >= out.barrier.total_s * 0.99 {
        out.any_sync_wait = false;
        out.notes.push(format!(
            "profile mode: rank {rank}: the runtime's barrier waits span its barriers; barrier wait and synchronisation are told apart in trace mode only"
        ));
    }
    if out.regions.values().all(|a| a.itask > 0) {
        for acc in out.regions.values_mut() {
            acc.fork_join = (acc.time - acc.itask).max(0);
            acc.fj_observed = acc.instances;
            out.info.fork_join_ns += acc.fork_join;
        }
    } else {
        // Implicit tasks carry no code address: only the rank's total is known
        // (all regions forked by thread 0).
        let master_task = itask_by_thread.get(&0).map_or(0, |t| t.0);
        out.info.fork_join_ns = (out.info.region_ns - master_task).max(0);
        out.notes.push(format!(
            "profile mode: implicit tasks carry no code address, fork/join is known per rank only (rank {rank}: {})",
            crate::units::secs(ns_to_s(out.info.fork_join_ns))
        ));
    }
}

/// Profile mode: take the workers' late join-barrier ends out of the totals.
///
/// libomp dispatches a worker's join-barrier ends (and its implicit task's)
/// only when it wakes for the next region or at shutdown (module
/// documentation of `hyscope_ompt::callbacks`): each of a worker's implicit
/// tasks and its last barrier then also span the serial time up to the next
/// region. Trace mode clips them at the primary's `parallel_end`; profile mode
/// has only totals, but the excess is the same in both: a worker's implicit
/// tasks, less the rank's region time, are that time after the regions'
/// ends. It is taken off the worker's barrier and wait totals (its busy time,
/// implicit tasks less barriers, has none of it).
///
/// Only where the correction is exact up to the workers' activation: every
/// region forked by thread 0 (no nesting, the caller checks) and the worker in
/// every region with a team: `teamed` is their (summed time, instances),
/// leaving out regions the runtime serialized (`if(0)`, team size 1).
pub(super) fn late_join_ends(
    teamed: (i64, u64),
    itask_by_thread: &HashMap<u32, (i64, u64)>,
    barrier_by_thread: &HashMap<u32, (i64, i64)>,
    out: &mut RankPass,
) {
    let (regions, instances) = teamed;
    let (mut clipped, mut excess_total) = (0u64, 0i64);
    for (&thread, &(itask, tasks)) in itask_by_thread {
        if thread == 0 || tasks != instances {
            continue;
        }
        let (barrier, wait) = barrier_by_thread.get(&thread).copied().unwrap_or((0, 0));
        let excess = (itask - regions).clamp(0, barrier);
        if excess == 0 {
            continue;
        }
        out.barrier.total_s -= ns_to_s(excess);
        out.barrier.wait_s -= ns_to_s(excess.min(wait));
        if let Some(b) = out.info.runtime_ns.get_mut(thread as usize) {
            *b -= excess;
        }
        clipped += tasks;
        excess_total += excess;
    }
    out.clipped += clipped;
    out.clipped_ns += excess_total;
}

//! OpenMP: parallel regions, loops, locks, tasks, idle threads and the
//! fine-grain model, from the `omp` rows of each rank.
//!
//! Normalisation (platform facts, "Quirks an analyzer must handle"): a worker's
//! join-barrier `sync_region(_wait)` end and its implicit-task end are dispatched
//! only when it wakes for the next region, so every row of a region is clipped
//! at the master's `parallel_end`; regions with a team of one are "serialized"
//! and have no implicit barrier.

use std::collections::{BTreeMap, HashMap};

use hyscope_format::{OmpKind, OmpRecord};
use rayon::prelude::*;

use crate::load::{TraceData, ns_to_s};
use crate::model::*;
use crate::tuner::{self, Sched, TuneInput};

/// Sync variants that are barriers (`ompt_sync_region_t`).
pub(crate) fn is_barrier(variant: u8) -> bool {
    matches!(variant, 1 | 2 | 3 | 4 | 8 | 9 | 10)
}
/// Taskwait and taskgroup.
fn is_taskwait(variant: u8) -> bool {
    matches!(variant, 5 | 6)
}
/// Work variants that are loops (`ompt_work_t`).
fn is_loop(variant: u8) -> bool {
    matches!(variant, 1 | 10 | 11 | 12 | 13)
}

const K_PARALLEL: u8 = OmpKind::Parallel as u8;
const K_ITASK: u8 = OmpKind::ImplicitTask as u8;
const K_WORK: u8 = OmpKind::Work as u8;
const K_CHUNK: u8 = OmpKind::Chunk as u8;
const K_SYNC: u8 = OmpKind::Sync as u8;
const K_SYNCWAIT: u8 = OmpKind::SyncWait as u8;
const K_MWAIT: u8 = OmpKind::MutexWait as u8;
const K_MHOLD: u8 = OmpKind::MutexHold as u8;
const K_TCREATE: u8 = OmpKind::TaskCreate as u8;
const K_TRUN: u8 = OmpKind::TaskRun as u8;
const K_SUMMARY: u8 = OmpKind::Summary as u8;

/// Per-rank facts other passes need (POP, energy, findings).
#[derive(Debug, Clone, Default)]
pub struct RankOmp {
    pub rank: u32,
    pub threads: u32,
    /// Intervals [start, end] of the master's (outermost) parallel regions.
    pub regions: Vec<(i64, i64)>,
    /// Σ region time on the encountering thread.
    pub region_ns: i64,
    pub fork_join_ns: i64,
    /// Per thread: busy ns inside regions (implicit task − sync − lock wait).
    pub busy_ns: Vec<i64>,
    /// Per thread: ns in sync (barriers, taskwait), lock wait, activation/release idle.
    pub runtime_ns: Vec<i64>,
    pub region_count: u64,
}

/// What [`analyze_omp`] returns.
#[derive(Debug, Clone)]
pub struct OmpResult {
    pub regions: Observable<Vec<RegionStats>>,
    pub loops: Observable<Vec<LoopStats>>,
    pub overhead: Observable<OpenMpOverhead>,
    pub serialized_regions: u64,
    pub clipped_join_waits: u64,
    pub clipped_join_wait_s: f64,
    pub ranks: Vec<RankOmp>,
}

#[derive(Debug, Default, Clone)]
struct RegionAcc {
    instances: u64,
    serialized: u64,
    ranks: Vec<u32>,
    team: u32,
    time: i64,
    itask: i64,
    fork_join: i64,
    fj_max: i64,
    fj_observed: u64,
    per_thread: BTreeMap<(u32, u32), ThreadRegionStats>,
}

#[derive(Debug, Default, Clone)]
struct LoopThreadAcc {
    time: i64,
    busy: i64,
    iterations: u64,
    chunks: u64,
}

#[derive(Debug, Default, Clone)]
struct LoopAcc {
    region_codeptr: u64,
    variants: BTreeMap<u8, u64>,
    instances: u64,
    trips: BTreeMap<u64, u64>,
    team: u32,
    ranks: Vec<u32>,
    time: i64,
    per_thread: BTreeMap<(u32, u32), LoopThreadAcc>,
    any_chunks: bool,
    chunks: u64,
    chunk_iters: u64,
    chunk_sizes: BTreeMap<u64, u64>,
    gaps: Vec<i64>,
    gap_total: i64,
    /// Cost profile: Σ cost and Σ iterations per normalised bin.
    bin_cost: Vec<f64>,
    bin_iters: Vec<f64>,
    profile_from_chunks: bool,
    profile_ok: bool,
}

const PROFILE_BINS: usize = 64;
const MAX_GAPS: usize = 100_000;

impl LoopAcc {
    fn merge(&mut self, o: LoopAcc) {
        if self.region_codeptr == 0 {
            self.region_codeptr = o.region_codeptr;
        }
        for (k, v) in o.variants {
            *self.variants.entry(k).or_default() += v;
        }
        for (k, v) in o.trips {
            *self.trips.entry(k).or_default() += v;
        }
        for (k, v) in o.chunk_sizes {
            *self.chunk_sizes.entry(k).or_default() += v;
        }
        self.instances += o.instances;
        self.team = self.team.max(o.team);
        self.ranks.extend(o.ranks);
        self.time += o.time;
        for (k, v) in o.per_thread {
            let e = self.per_thread.entry(k).or_default();
            e.time += v.time;
            e.busy += v.busy;
            e.iterations += v.iterations;
            e.chunks += v.chunks;
        }
        self.any_chunks |= o.any_chunks;
        self.chunks += o.chunks;
        self.chunk_iters += o.chunk_iters;
        if self.gaps.len() < MAX_GAPS {
            self.gaps.extend(o.gaps.into_iter().take(MAX_GAPS));
        }
        self.gap_total += o.gap_total;
        if self.bin_cost.is_empty() {
            self.bin_cost = o.bin_cost;
            self.bin_iters = o.bin_iters;
        } else if !o.bin_cost.is_empty() {
            for k in 0..PROFILE_BINS {
                self.bin_cost[k] += o.bin_cost[k];
                self.bin_iters[k] += o.bin_iters[k];
            }
        }
        self.profile_from_chunks |= o.profile_from_chunks;
        self.profile_ok |= o.profile_ok;
    }
}

#[derive(Debug, Default, Clone)]
struct MutexAcc {
    kind: u8,
    acquisitions: u64,
    wait: i64,
    hold: i64,
    max_wait: i64,
}

/// One rank's OpenMP aggregates (its rows are dropped after the pass).
#[derive(Debug, Default)]
pub struct RankPass {
    regions: HashMap<u64, RegionAcc>,
    loops: HashMap<u64, LoopAcc>,
    mutexes: HashMap<u64, MutexAcc>,
    tasks_created: u64,
    task_run: i64,
    task_runs: u64,
    taskwait: i64,
    barrier: BarrierStats,
    serialized: u64,
    clipped: u64,
    clipped_ns: i64,
    info: RankOmp,
    any_sync_wait: bool,
    profile_mode: bool,
    notes: Vec<String>,
}

impl RankPass {
    pub fn rank(&self) -> u32 {
        self.info.rank
    }
}

fn clip(r: &OmpRecord, lo: i64, hi: i64) -> i64 {
    (r.end_ns.min(hi) - r.start_ns.max(lo)).max(0)
}

/// libomp's static partition of n iterations over p threads: thread i's [start, len).
fn static_range(n: u64, p: u64, i: u64) -> (u64, u64) {
    let base = n / p;
    let extra = n % p;
    let start = i * base + i.min(extra);
    (start, base + u64::from(i < extra))
}

/// Rows of region instances processed per parallel wave (bounds the memory of
/// the per-instance results waiting to be applied).
const WAVE_ROWS: usize = 1 << 20;
/// Rows per parallel task of a wave.
const BLOCK_ROWS: usize = 1 << 15;

/// The OpenMP pass over one rank's rows (on rank 0's clock).
///
/// Both cores work on it: the rows are grouped by region while the lock, task
/// and taskwait statistics are gathered; then region instances are sorted and
/// reduced in parallel ([`Block::add`]) and their results added to the rank's
/// aggregates in region order ([`Block::apply`]), so every floating-point sum
/// is the same as one sequential pass's.
pub fn rank_pass(rank: u32, rows: &[OmpRecord], threads: u32) -> RankPass {
    rank_pass_in(rank, rows, threads, BLOCK_ROWS, WAVE_ROWS)
}

/// [`rank_pass`] with parallel tasks of ≥ `block_rows` rows and waves of
/// `wave_rows` rows (the result does not depend on them).
fn rank_pass_in(
    rank: u32,
    rows: &[OmpRecord],
    threads: u32,
    block_rows: usize,
    wave_rows: usize,
) -> RankPass {
    let mut out = RankPass {
        info: RankOmp {
            rank,
            threads,
            busy_ns: vec![0; threads as usize],
            runtime_ns: vec![0; threads as usize],
            ..RankOmp::default()
        },
        ..RankPass::default()
    };
    let ((mut idx, offsets), summaries) =
        rayon::join(|| group_rows(rows), || ungrouped_stats(rows, &mut out));
    if !summaries.is_empty() {
        profile_summaries(rank, &summaries, &mut out);
    }
    drop(summaries);
    // Blocks of whole groups (≥ BLOCK_ROWS rows each), as disjoint slices of idx.
    let mut blocks: Vec<(&mut [u32], Vec<u32>)> = Vec::new();
    {
        let mut rest: &mut [u32] = &mut idx;
        let mut g = 0;
        let ngroups = offsets.len().saturating_sub(1);
        while g < ngroups {
            let start = offsets[g];
            let mut h = g + 1;
            while h < ngroups && ((offsets[h] - start) as usize) < block_rows {
                h += 1;
            }
            let (head, tail) = rest.split_at_mut((offsets[h] - start) as usize);
            blocks.push((head, offsets[g..=h].iter().map(|o| o - start).collect()));
            rest = tail;
            g = h;
        }
    }
    let per_wave = (wave_rows / block_rows.max(1)).max(1);
    let mut pending: Vec<Block> = Vec::new();
    let mut blocks = blocks.into_iter();
    loop {
        let wave: Vec<(&mut [u32], Vec<u32>)> = blocks.by_ref().take(per_wave).collect();
        if wave.is_empty() {
            break;
        }
        // Reduce this wave's instances while the previous wave's are applied.
        let (done, ()) = rayon::join(
            || {
                wave.into_par_iter()
                    .map(|(idx, bounds)| {
                        let mut block = Block::default();
                        for w in bounds.windows(2) {
                            let group = &mut idx[w[0] as usize..w[1] as usize];
                            group.sort_unstable_by_key(|&k| {
                                let r = &rows[k as usize];
                                (r.thread, r.kind, r.start_ns)
                            });
                            block.add(rows, group);
                        }
                        block
                    })
                    .collect::<Vec<_>>()
            },
            || {
                for block in std::mem::take(&mut pending) {
                    block.apply(rank, &mut out);
                }
            },
        );
        pending = done;
    }
    for block in pending {
        block.apply(rank, &mut out);
    }
    // Outermost region intervals (nested regions lie inside).
    out.info.regions.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for &(s, e) in &out.info.regions {
        match merged.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    out.info.regions = merged;
    out
}

/// Rows per task of the parallel grouping.
const GROUP_CHUNK: usize = 1 << 20;

/// Rows of regions grouped by parallel_id with a counting sort: row indices,
/// group after group in order of first appearance, and the offsets of the
/// groups in them. Chunks of rows are numbered in parallel (each with its own
/// first-appearance order), then their numbers are mapped to the global ones
/// in chunk order, which keeps the order of first appearance.
fn group_rows(rows: &[OmpRecord]) -> (Vec<u32>, Vec<u32>) {
    group_rows_in(rows, GROUP_CHUNK)
}

fn group_rows_in(rows: &[OmpRecord], chunk: usize) -> (Vec<u32>, Vec<u32>) {
    let mut gid: Vec<u32> = vec![u32::MAX; rows.len()];
    // Per chunk: the parallel_id and row count of each local group.
    let locals: Vec<(Vec<u64>, Vec<u32>)> = rows
        .par_chunks(chunk)
        .zip(gid.par_chunks_mut(chunk))
        .map(|(rows, gid)| {
            let mut group_of: HashMap<u64, u32> = HashMap::new();
            let mut pids: Vec<u64> = Vec::new();
            let mut sizes: Vec<u32> = Vec::new();
            // Rows of one region mostly come in runs: the hash lookup is rarely needed.
            let mut last: Option<(u64, u32)> = None;
            for (r, g_out) in rows.iter().zip(gid.iter_mut()) {
                if r.parallel_id == 0 {
                    continue;
                }
                let g = match last {
                    Some((p, g)) if p == r.parallel_id => g,
                    _ => {
                        let next = sizes.len() as u32;
                        let g = *group_of.entry(r.parallel_id).or_insert(next);
                        if g == next {
                            sizes.push(0);
                            pids.push(r.parallel_id);
                        }
                        last = Some((r.parallel_id, g));
                        g
                    }
                };
                sizes[g as usize] += 1;
                *g_out = g;
            }
            (pids, sizes)
        })
        .collect();
    let mut group_of: HashMap<u64, u32> = HashMap::new();
    let mut sizes: Vec<u32> = Vec::new();
    let remaps: Vec<Vec<u32>> = locals
        .iter()
        .map(|(pids, local_sizes)| {
            pids.iter()
                .zip(local_sizes)
                .map(|(pid, n)| {
                    let next = sizes.len() as u32;
                    let g = *group_of.entry(*pid).or_insert(next);
                    if g == next {
                        sizes.push(0);
                    }
                    sizes[g as usize] += n;
                    g
                })
                .collect()
        })
        .collect();
    drop(group_of);
    drop(locals);
    gid.par_chunks_mut(chunk)
        .zip(&remaps)
        .for_each(|(gid, remap)| {
            for g in gid.iter_mut().filter(|g| **g != u32::MAX) {
                *g = remap[*g as usize];
            }
        });
    let mut offsets: Vec<u32> = Vec::with_capacity(sizes.len() + 1);
    let mut acc = 0u32;
    for sz in &sizes {
        offsets.push(acc);
        acc += sz;
    }
    offsets.push(acc);
    let mut idx: Vec<u32> = vec![0; acc as usize];
    let mut fill = offsets.clone();
    for (i, g) in gid.iter().enumerate() {
        if *g != u32::MAX {
            idx[fill[*g as usize] as usize] = i as u32;
            fill[*g as usize] += 1;
        }
    }
    (idx, offsets)
}

/// Lock, task and taskwait statistics (they need no grouping); returns the
/// profile-mode summary rows.
fn ungrouped_stats<'a>(rows: &'a [OmpRecord], out: &mut RankPass) -> Vec<&'a OmpRecord> {
    let mut summaries: Vec<&OmpRecord> = Vec::new();
    for r in rows {
        match r.kind {
            K_MWAIT | K_MHOLD => {
                let m = out.mutexes.entry(r.codeptr).or_default();
                m.kind = r.variant;
                let d = (r.end_ns - r.start_ns).max(0);
                if r.kind == K_MWAIT {
                    m.acquisitions += 1;
                    m.wait += d;
                    m.max_wait = m.max_wait.max(d);
                } else {
                    m.hold += d;
                }
            }
            K_TCREATE => out.tasks_created += 1,
            K_TRUN => {
                out.task_run += (r.end_ns - r.start_ns).max(0);
                out.task_runs += 1;
            }
            K_SYNC if is_taskwait(r.variant) => out.taskwait += (r.end_ns - r.start_ns).max(0),
            K_SYNCWAIT => out.any_sync_wait = true,
            K_SUMMARY => summaries.push(r),
            _ => {}
        }
    }
    summaries
}

/// Profile mode (`summary` rows: variant = kind, flags = its variant, count =
/// intervals, chunk_start = summed ns). Only totals exist: no join-barrier
/// clipping, no per-instance times, no chunks. Rows with the same key add up.
fn profile_summaries(rank: u32, rows: &[&OmpRecord], out: &mut RankPass) {
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
    // time, so the longest thread total stands for the loop's.
    for la in out.loops.values_mut() {
        la.time = la.per_thread.values().map(|t| t.time).max().unwrap_or(0);
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
            "profile mode: implicit tasks carry no code address, fork/join is known per rank only (rank {rank}: {:.3} ms)",
            ns_to_s(out.info.fork_join_ns) * 1e3
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
fn late_join_ends(
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

/// What the region instances of one block add to their rank's aggregates,
/// computed on their own by [`Block::add`] (in parallel with other blocks) and
/// added in region order by [`Block::apply`]. Flat vectors that the instances
/// and loops index by ranges: a few allocations per block, none per instance.
#[derive(Default)]
struct Block {
    insts: Vec<Instance>,
    /// Per thread of each instance's team, by thread.
    threads: Vec<ThreadRegionStats>,
    loops: Vec<LoopInstance>,
    /// The variant of each thread's work row.
    variants: Vec<u8>,
    per_thread: Vec<(u32, LoopThreadAcc)>,
    /// (chunk size, chunks of that size).
    chunk_sizes: Vec<(u64, u64)>,
    gaps: Vec<i64>,
    /// Cost-profile additions (bin, cost, iterations), in order.
    bins: Vec<(u8, f64, f64)>,
    // Scratch of one instance.
    /// Loop work rows: (codeptr, k-th on its thread, row).
    works: Vec<(u64, u32, u32)>,
    /// Work rows seen per codeptr on the current thread.
    seq: Vec<(u64, u32)>,
    /// Each thread's chunk rows: (thread, first, end) positions in the group.
    chunk_runs: Vec<(u32, usize, usize)>,
    /// Thread → index in the team (implicit task `count`).
    team_index: Vec<(u32, u64)>,
    /// Chunks of each thread's work row: positions in the group.
    chunk_sets: Vec<(usize, usize)>,
    /// Each thread's barriers in this instance: (thread, start, end), clipped
    /// to the region, by thread, then start.
    barriers: Vec<(u32, i64, i64)>,
    /// Each thread's other synchronisation (taskwait, taskgroup...) and
    /// barrier waits, as `barriers`, with the kind.
    other_syncs: Vec<(u32, i64, i64, u8)>,
    /// Explicit tasks run by each thread: (thread, start, end), clipped,
    /// merged into disjoint runs by [`merge_runs`].
    task_runs: Vec<(u32, i64, i64)>,
    /// Per thread of the instance: ns its barriers waited for the team's last arrival.
    arrival_idle: Vec<(u32, i64)>,
    /// The team's last arrival at each barrier of the instance.
    last_arrival: Vec<i64>,
}

/// One region instance of a [`Block`].
struct Instance {
    codeptr: u64,
    rs: i64,
    re: i64,
    team: u32,
    par_thread: u32,
    master_task: Option<i64>,
    clipped: u64,
    clipped_ns: i64,
    threads: std::ops::Range<usize>,
    loops: std::ops::Range<usize>,
}

/// One loop instance of a region instance.
struct LoopInstance {
    codeptr: u64,
    trip: u64,
    team: u32,
    time: i64,
    any_chunks: bool,
    chunks: u64,
    chunk_iters: u64,
    gap_total: i64,
    /// Whether a segment entered the cost profile (see [`segment_bins`]).
    profiled: bool,
    variants: std::ops::Range<usize>,
    per_thread: std::ops::Range<usize>,
    chunk_sizes: std::ops::Range<usize>,
    gaps: std::ops::Range<usize>,
    bins: std::ops::Range<usize>,
}

/// The cost-profile additions of `count` iterations from `start` of a `trip`
/// iterations loop that took `dur` ns, in bin order; false if the segment is
/// unusable.
fn segment_bins(
    trip: u64,
    start: u64,
    count: u64,
    dur: i64,
    out: &mut Vec<(u8, f64, f64)>,
) -> bool {
    if trip == 0 || count == 0 || dur < 0 {
        return false;
    }
    let per_iter = dur as f64 / count as f64;
    let w = trip as f64 / PROFILE_BINS as f64;
    let (a, b) = (start as f64, (start + count).min(trip) as f64);
    let mut k = ((a / w) as usize).min(PROFILE_BINS - 1);
    while k < PROFILE_BINS {
        let lo = (k as f64 * w).max(a);
        let hi = ((k + 1) as f64 * w).min(b);
        if hi > lo {
            out.push((k as u8, per_iter * (hi - lo), hi - lo));
        }
        if (k + 1) as f64 * w >= b {
            break;
        }
        k += 1;
    }
    true
}

/// The team's last arrival at each barrier of a region instance: the k-th
/// barrier of every thread is the same barrier (all threads of a team meet
/// the same barriers in the same order), so its last arrival is the latest
/// start among them. A thread waits from its arrival to that last arrival;
/// the rest of its barrier time, the release (and the last thread's gather),
/// is synchronisation overhead: Mahéo 2015 §6.7's decomposition (barrier =
/// overhead + idling for the last thread), measured from arrivals because
/// libomp's wait events span the whole barrier. The report
/// ([`arrival_idle_of`]) and the timeline (`timeline::build`) both split
/// barriers with it.
///
/// `barriers` are (thread, start, end), clipped to the region, by thread then
/// start. Fills `last` with the last arrival of each k-th barrier; false when
/// the instance does not have the same number of barriers on each of its
/// `team` threads (a truncated trace, GCC code whose worksharing barriers
/// libomp reports differently).
pub(crate) fn last_arrivals(barriers: &[(u32, i64, i64)], team: u32, last: &mut Vec<i64>) -> bool {
    last.clear();
    // Each thread's barriers are a run of `n`: thread j's k-th is at j * n + k.
    let threads = barriers.chunk_by(|a, b| a.0 == b.0).count();
    if team < 2 || threads != team as usize || !barriers.len().is_multiple_of(threads) {
        return false;
    }
    let n = barriers.len() / threads;
    if barriers
        .chunks(n)
        .any(|run| run.iter().any(|b| b.0 != run[0].0))
    {
        return false;
    }
    last.extend((0..n).map(|k| {
        (0..threads)
            .map(|j| barriers[j * n + k].1)
            .max()
            .unwrap_or(0)
    }));
    true
}

/// Whether a region instance's barriers are split by the team's arrivals
/// ([`last_arrivals`]) rather than by the runtime's own wait events: when the
/// waits (`wait_ns`, Σ of the barriers' `sync_region_wait`) cover the barriers
/// (`barrier_ns`) whole, as libomp dispatches them, or are absent.
pub(crate) fn split_by_arrivals(wait_ns: i64, barrier_ns: i64) -> bool {
    !(wait_ns > 0 && wait_ns < barrier_ns)
}

/// Each thread's idling at a region instance's barriers: from its arrival to
/// the team's last arrival ([`last_arrivals`]); time it spent running
/// explicit tasks (`task_runs`, merged) before the last arrival is work, not
/// idling. Fills `idle` with (thread, ns) (`last` is scratch); false when the
/// barriers do not match across the team.
fn arrival_idle_of(
    barriers: &[(u32, i64, i64)],
    task_runs: &[(u32, i64, i64)],
    team: u32,
    last: &mut Vec<i64>,
    idle: &mut Vec<(u32, i64)>,
) -> bool {
    idle.clear();
    if !last_arrivals(barriers, team, last) {
        return false;
    }
    let n = last.len();
    idle.extend(barriers.chunks(n).map(|run| (run[0].0, 0)));
    for (k, &last) in last.iter().enumerate() {
        for (j, (th, ns)) in idle.iter_mut().enumerate() {
            let (_, start, end) = barriers[j * n + k];
            let until = last.clamp(start, end.max(start));
            *ns += (until - start) - overlap(task_runs, *th, start, until);
        }
    }
    true
}

/// Sort (thread, start, end) intervals and merge each thread's overlapping
/// ones (a task run inside another task's taskwait) into disjoint runs.
fn merge_runs(runs: &mut Vec<(u32, i64, i64)>) {
    runs.sort_unstable();
    let mut w = 0;
    for i in 0..runs.len() {
        let r = runs[i];
        if w > 0 && runs[w - 1].0 == r.0 && r.1 <= runs[w - 1].2 {
            runs[w - 1].2 = runs[w - 1].2.max(r.2);
        } else {
            runs[w] = r;
            w += 1;
        }
    }
    runs.truncate(w);
}

/// ns of `thread`'s merged `runs` inside [start, end).
fn overlap(runs: &[(u32, i64, i64)], thread: u32, start: i64, end: i64) -> i64 {
    let first = runs.partition_point(|r| (r.0, r.2) <= (thread, start));
    runs[first..]
        .iter()
        .take_while(|r| r.0 == thread && r.1 < end)
        .map(|r| (r.2.min(end) - r.1.max(start)).max(0))
        .sum()
}

impl Block {
    /// Reduce one region instance, its rows sorted by (thread, kind, start):
    /// each thread's rows are contiguous, its chunks sorted by start.
    fn add(&mut self, rows: &[OmpRecord], group: &[u32]) {
        let Block {
            insts,
            threads,
            loops,
            variants,
            per_thread,
            chunk_sizes,
            gaps,
            bins,
            works,
            seq,
            chunk_runs,
            team_index,
            chunk_sets,
            barriers,
            other_syncs,
            task_runs,
            arrival_idle,
            last_arrival,
        } = self;
        let Some(par) = group
            .iter()
            .map(|&i| &rows[i as usize])
            .find(|r| r.kind == K_PARALLEL)
        else {
            return; // Rows of a region whose parallel row is missing (truncated trace).
        };
        let (rs, re) = (par.start_ns, par.end_ns.max(par.start_ns));
        let team = par.team_size.max(1);
        let mut inst = Instance {
            codeptr: par.codeptr,
            rs,
            re,
            team,
            par_thread: par.thread,
            master_task: None,
            clipped: 0,
            clipped_ns: 0,
            threads: threads.len()..threads.len(),
            loops: loops.len()..loops.len(),
        };
        let t0 = threads.len();
        works.clear();
        seq.clear();
        chunk_runs.clear();
        team_index.clear();
        barriers.clear();
        other_syncs.clear();
        task_runs.clear();
        // Σ ns of the instance's barriers and of the runtime's waits inside them.
        let (mut barrier_ns, mut wait_ns) = (0i64, 0i64);
        let mut current: Option<u32> = None;
        for (pos, &i) in group.iter().enumerate() {
            let r = &rows[i as usize];
            if current != Some(r.thread) {
                current = Some(r.thread);
                seq.clear();
            }
            let d = clip(r, rs, re);
            let entry = |threads: &mut Vec<ThreadRegionStats>| -> usize {
                if threads.len() == t0 || threads[threads.len() - 1].thread != r.thread {
                    threads.push(ThreadRegionStats {
                        thread: r.thread,
                        ..ThreadRegionStats::default()
                    });
                }
                threads.len() - 1
            };
            match r.kind {
                K_ITASK => {
                    let e = entry(threads);
                    let t = &mut threads[e];
                    t.implicit_task_s += ns_to_s(d);
                    t.activation_s += ns_to_s((r.start_ns - rs).max(0));
                    t.release_s += ns_to_s((re - r.end_ns.min(re)).max(0));
                    match team_index.iter_mut().find(|(t, _)| *t == r.thread) {
                        Some((_, k)) => *k = r.count,
                        None => team_index.push((r.thread, r.count)),
                    }
                    if r.thread == par.thread {
                        inst.master_task = Some(inst.master_task.unwrap_or(0) + d);
                    }
                }
                K_SYNC | K_SYNCWAIT => {
                    if r.end_ns > re && r.thread != par.thread && r.kind == K_SYNC {
                        inst.clipped += 1;
                        inst.clipped_ns += r.end_ns - re.max(r.start_ns);
                    }
                    let e = entry(threads);
                    let t = &mut threads[e];
                    let (s0, e0) = (r.start_ns.max(rs), r.start_ns.max(rs) + d);
                    if r.kind == K_SYNC {
                        if is_barrier(r.variant) {
                            t.barrier.total_s += ns_to_s(d);
                            t.barrier.count += 1;
                            barriers.push((r.thread, s0, e0));
                            barrier_ns += d;
                        } else {
                            other_syncs.push((r.thread, s0, e0, r.kind));
                        }
                        // Busy excludes every synchronisation (barrier, taskwait...).
                        t.busy_s -= ns_to_s(d);
                    } else if is_barrier(r.variant) {
                        t.barrier.wait_s += ns_to_s(d);
                        t.barrier.wait_observed = true;
                        wait_ns += d;
                        other_syncs.push((r.thread, s0, e0, r.kind));
                    }
                }
                K_MWAIT => {
                    let e = entry(threads);
                    let t = &mut threads[e];
                    t.busy_s -= ns_to_s(d);
                }
                K_TRUN if d > 0 => {
                    let s0 = r.start_ns.max(rs);
                    task_runs.push((r.thread, s0, s0 + d));
                }
                K_WORK if is_loop(r.variant) => {
                    let k = match seq.iter_mut().find(|(c, _)| *c == r.codeptr) {
                        Some((_, n)) => {
                            *n += 1;
                            *n - 1
                        }
                        None => {
                            seq.push((r.codeptr, 1));
                            0
                        }
                    };
                    works.push((r.codeptr, k, i));
                }
                K_CHUNK => match chunk_runs.last_mut() {
                    Some((t, _, end)) if *t == r.thread && *end == pos => *end += 1,
                    _ => chunk_runs.push((r.thread, pos, pos + 1)),
                },
                _ => {}
            }
        }
        // libomp dispatches a barrier's `sync_region_wait` begin and end right
        // next to its `sync_region` ones: the runtime's wait spans the whole
        // barrier and total − wait is 0. Then (or with no wait events) the wait
        // is taken from the team's arrivals instead; see [`arrival_idle_of`].
        let by_arrivals = split_by_arrivals(wait_ns, barrier_ns);
        // Explicit tasks a thread runs while it waits (at a barrier, in a
        // taskwait) are work: out of the synchronisation, into busy.
        merge_runs(task_runs);
        for &(th, s0, e0) in barriers.iter() {
            let ran = overlap(task_runs, th, s0, e0);
            if ran > 0
                && let Some(t) = threads[t0..].iter_mut().find(|t| t.thread == th)
            {
                t.barrier.total_s -= ns_to_s(ran);
                t.busy_s += ns_to_s(ran);
            }
        }
        for &(th, s0, e0, kind) in other_syncs.iter() {
            let ran = overlap(task_runs, th, s0, e0);
            if ran > 0
                && let Some(t) = threads[t0..].iter_mut().find(|t| t.thread == th)
            {
                if kind == K_SYNC {
                    t.busy_s += ns_to_s(ran);
                } else {
                    t.barrier.wait_s -= ns_to_s(ran);
                }
            }
        }
        let from_arrivals =
            by_arrivals && arrival_idle_of(barriers, task_runs, team, last_arrival, arrival_idle);
        for t in &mut threads[t0..] {
            t.busy_s += t.implicit_task_s;
            if from_arrivals {
                let idle = arrival_idle
                    .iter()
                    .find(|(th, _)| *th == t.thread)
                    .map_or(0, |&(_, ns)| ns);
                t.barrier.wait_s = ns_to_s(idle);
                t.barrier.wait_observed = true;
                t.barrier.wait_from_arrivals = true;
            }
            t.barrier.sync_overhead_s = (t.barrier.total_s - t.barrier.wait_s).max(0.0);
        }
        inst.threads.end = threads.len();
        // Loop instances: (codeptr, k-th on its thread), rows in group order.
        works.sort_by_key(|w| (w.0, w.1));
        let mut a = 0;
        while a < works.len() {
            let (codeptr, k, _) = works[a];
            let mut b = a + 1;
            while b < works.len() && works[b].0 == codeptr && works[b].1 == k {
                b += 1;
            }
            let ws = works[a..b].iter().map(|w| &rows[w.2 as usize]);
            a = b;
            let trip = ws.clone().map(|w| w.count).max().unwrap_or(0);
            let nthreads = ws.len() as u32;
            let ls = ws.clone().map(|w| w.start_ns).min().unwrap_or(rs);
            let le = ws.clone().map(|w| w.end_ns.min(re)).max().unwrap_or(rs);
            let v0 = variants.len();
            variants.extend(ws.clone().map(|w| w.variant));
            let mut li = LoopInstance {
                codeptr,
                trip,
                team: nthreads.max(team),
                time: (le - ls).max(0),
                any_chunks: false,
                chunks: 0,
                chunk_iters: 0,
                gap_total: 0,
                profiled: false,
                variants: v0..variants.len(),
                per_thread: per_thread.len()..per_thread.len(),
                chunk_sizes: chunk_sizes.len()..chunk_sizes.len(),
                gaps: gaps.len()..gaps.len(),
                bins: bins.len()..bins.len(),
            };
            let static_sched = ws.clone().all(|w| w.variant == 10);
            chunk_sets.clear();
            chunk_sets.extend(ws.clone().map(|w| {
                chunk_runs
                    .iter()
                    .find(|(t, _, _)| *t == w.thread)
                    .map_or((0, 0), |&(_, lo, hi)| {
                        let v = &group[lo..hi];
                        let a = v.partition_point(|&c| rows[c as usize].start_ns < w.start_ns);
                        let b = v.partition_point(|&c| rows[c as usize].start_ns <= w.end_ns);
                        (lo + a, lo + b)
                    })
            }));
            // chunk_start is the loop variable's first value as the runtime reports it
            // (ompt-tool docs): the iteration space starts at the smallest one.
            let base = chunk_sets
                .iter()
                .flat_map(|&(lo, hi)| group[lo..hi].iter().map(|&c| rows[c as usize].chunk_start))
                .min()
                .unwrap_or(0);
            for (w, &(lo, hi)) in ws.zip(chunk_sets.iter()) {
                let wd = clip(w, rs, re);
                let mut ta = LoopThreadAcc {
                    time: wd,
                    ..LoopThreadAcc::default()
                };
                if lo == hi {
                    ta.busy += wd;
                    if static_sched && trip > 0 {
                        // Per-thread static ranges (no dispatch events): thread i ran
                        // libomp's i-th block in the work interval.
                        if let Some(&(_, i)) = team_index.iter().find(|(t, _)| *t == w.thread) {
                            let (s, n) = static_range(trip, li.team as u64, i);
                            ta.iterations += n;
                            li.profiled |= segment_bins(trip, s, n, wd, bins);
                        }
                    }
                } else {
                    li.any_chunks = true;
                    let mut prev_end: Option<i64> = None;
                    for &ci in &group[lo..hi] {
                        let c = &rows[ci as usize];
                        let d = (c.end_ns.min(w.end_ns) - c.start_ns).max(0);
                        ta.busy += d;
                        ta.iterations += c.count;
                        ta.chunks += 1;
                        li.chunks += 1;
                        li.chunk_iters += c.count;
                        match chunk_sizes[li.chunk_sizes.start..]
                            .iter_mut()
                            .find(|(s, _)| *s == c.count)
                        {
                            Some((_, n)) => *n += 1,
                            None => chunk_sizes.push((c.count, 1)),
                        }
                        if let Some(pe) = prev_end {
                            let g = (c.start_ns - pe).max(0);
                            li.gap_total += g;
                            gaps.push(g);
                        }
                        prev_end = Some(c.end_ns);
                        li.profiled |=
                            segment_bins(trip, c.chunk_start.wrapping_sub(base), c.count, d, bins);
                    }
                }
                per_thread.push((w.thread, ta));
            }
            li.per_thread.end = per_thread.len();
            li.chunk_sizes.end = chunk_sizes.len();
            li.gaps.end = gaps.len();
            li.bins.end = bins.len();
            loops.push(li);
        }
        inst.loops.end = loops.len();
        insts.push(inst);
    }

    /// Add the block's instances to the rank's aggregates, in region order (the
    /// floating-point sums are those of one sequential pass).
    fn apply(&self, rank: u32, out: &mut RankPass) {
        for inst in &self.insts {
            let (rs, re) = (inst.rs, inst.re);
            out.clipped += inst.clipped;
            out.clipped_ns += inst.clipped_ns;
            let acc = out.regions.entry(inst.codeptr).or_default();
            acc.instances += 1;
            acc.team = acc.team.max(inst.team);
            if !acc.ranks.contains(&rank) {
                acc.ranks.push(rank);
            }
            acc.time += re - rs;
            out.info.region_ns += re - rs;
            out.info.region_count += 1;
            out.info.regions.push((rs, re));
            if inst.team <= 1 {
                // Serialized: a team of one has no implicit barrier.
                acc.serialized += 1;
                out.serialized += 1;
            }
            if let Some(task) = inst.master_task {
                let fj = (re - rs - task).max(0);
                acc.fork_join += fj;
                acc.fj_max = acc.fj_max.max(fj);
                acc.fj_observed += 1;
                acc.itask += task;
                out.info.fork_join_ns += fj;
            }
            for t in &self.threads[inst.threads.clone()] {
                if let Some(b) = out.info.busy_ns.get_mut(t.thread as usize) {
                    *b += (t.busy_s * 1e9) as i64;
                }
                if let Some(b) = out.info.runtime_ns.get_mut(t.thread as usize) {
                    let task = (t.implicit_task_s * 1e9) as i64;
                    let busy = (t.busy_s * 1e9) as i64;
                    let idle = if t.thread == inst.par_thread {
                        0 // the master's fork/join is counted once, as fork_join_ns
                    } else {
                        (re - rs - task).max(0)
                    };
                    *b += (task - busy).max(0) + idle;
                }
                out.barrier.total_s += t.barrier.total_s;
                out.barrier.wait_s += t.barrier.wait_s;
                out.barrier.count += t.barrier.count;
                out.barrier.wait_from_arrivals |= t.barrier.wait_from_arrivals;
                out.any_sync_wait |= t.barrier.wait_observed;
                let e =
                    acc.per_thread
                        .entry((rank, t.thread))
                        .or_insert_with(|| ThreadRegionStats {
                            rank,
                            thread: t.thread,
                            ..ThreadRegionStats::default()
                        });
                add_thread_stats(e, t);
            }
            for li in &self.loops[inst.loops.clone()] {
                let la = out.loops.entry(li.codeptr).or_default();
                la.region_codeptr = inst.codeptr;
                la.instances += 1;
                if !la.ranks.contains(&rank) {
                    la.ranks.push(rank);
                }
                *la.trips.entry(li.trip).or_default() += 1;
                la.team = la.team.max(li.team);
                for &v in &self.variants[li.variants.clone()] {
                    *la.variants.entry(v).or_default() += 1;
                }
                la.time += li.time;
                if li.any_chunks {
                    la.any_chunks = true;
                    la.profile_from_chunks = true;
                }
                la.chunks += li.chunks;
                la.chunk_iters += li.chunk_iters;
                for &(s, n) in &self.chunk_sizes[li.chunk_sizes.clone()] {
                    *la.chunk_sizes.entry(s).or_default() += n;
                }
                let room = MAX_GAPS.saturating_sub(la.gaps.len());
                la.gaps
                    .extend(self.gaps[li.gaps.clone()].iter().take(room).copied());
                la.gap_total += li.gap_total;
                if li.profiled {
                    if la.bin_cost.is_empty() {
                        la.bin_cost = vec![0.0; PROFILE_BINS];
                        la.bin_iters = vec![0.0; PROFILE_BINS];
                    }
                    la.profile_ok = true;
                }
                for &(k, c, n) in &self.bins[li.bins.clone()] {
                    la.bin_cost[k as usize] += c;
                    la.bin_iters[k as usize] += n;
                }
                for (thread, ta) in &self.per_thread[li.per_thread.clone()] {
                    let e = la.per_thread.entry((rank, *thread)).or_default();
                    e.time += ta.time;
                    e.busy += ta.busy;
                    e.iterations += ta.iterations;
                    e.chunks += ta.chunks;
                }
            }
        }
    }
}

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
                kind: hyscope_format::schema::variant_name(OmpKind::MutexWait, m.kind).to_string(),
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

/// Add one thread's region statistics to an accumulator of the same thread.
fn add_thread_stats(e: &mut ThreadRegionStats, t: &ThreadRegionStats) {
    e.implicit_task_s += t.implicit_task_s;
    e.busy_s += t.busy_s;
    e.activation_s += t.activation_s;
    e.release_s += t.release_s;
    e.barrier.total_s += t.barrier.total_s;
    e.barrier.wait_s += t.barrier.wait_s;
    e.barrier.sync_overhead_s += t.barrier.sync_overhead_s;
    e.barrier.count += t.barrier.count;
    e.barrier.wait_observed |= t.barrier.wait_observed;
    e.barrier.wait_from_arrivals |= t.barrier.wait_from_arrivals;
}

/// Fine-grain model per rank (Didelot 2014 ch. 5, Mahéo 2015 §3.3.1, eq. 3.1–3.2):
/// T_compute = time inside parallel regions, T_comm = MPI time of the master
/// outside them, T_seq = the rest; bound = 1 + T_compute / (T_seq + T_comm).
/// Idle threads: (P − 1) × T_seq and (P − 1) × T_comm core-seconds (master-only style).
pub fn fine_grain(data: &TraceData, ranks: &[RankOmp]) -> Vec<FineGrainModel> {
    data.ranks
        .iter()
        .zip(ranks)
        .map(|(rd, ro)| {
            let (w0, w1) = (rd.app_start_ns, rd.app_end_ns);
            let total = w1 - w0;
            let comm: i64 = rd
                .mpi
                .iter()
                .filter(|m| {
                    !m.in_parallel
                        && m.call != hyscope_format::schema::mpi_call::REQUEST_COMPLETE
                        && m.start_ns >= w0
                        && m.end_ns <= w1
                })
                .filter(|m| !inside(&ro.regions, m.start_ns))
                .map(|m| (m.end_ns - m.start_ns).max(0))
                .sum();
            // Profile mode keeps no region instances: their summed time.
            let compute: i64 = if ro.regions.is_empty() {
                ro.region_ns.min(total)
            } else {
                ro.regions
                    .iter()
                    .map(|(s, e)| ((*e).min(w1) - (*s).max(w0)).max(0))
                    .sum()
            };
            let seq = (total - compute - comm).max(0);
            let p = ro.threads.max(1);
            let denom = (seq + comm) as f64;
            FineGrainModel {
                rank: rd.rank,
                threads: p,
                t_total_s: ns_to_s(total),
                t_compute_s: ns_to_s(compute),
                t_comm_s: ns_to_s(comm),
                t_seq_s: ns_to_s(seq),
                fork_join_s: ns_to_s(ro.fork_join_ns),
                speedup_bound: (denom > 0.0).then(|| 1.0 + compute as f64 / denom),
                regions: ro.region_count,
                idle_serial_core_s: ns_to_s(seq) * (p - 1) as f64,
                idle_mpi_core_s: ns_to_s(comm) * (p - 1) as f64,
            }
        })
        .collect()
}

/// Whether t lies in one of the sorted, disjoint intervals.
pub fn inside(intervals: &[(i64, i64)], t: i64) -> bool {
    let i = intervals.partition_point(|iv| iv.1 < t);
    intervals.get(i).is_some_and(|iv| iv.0 <= t)
}

pub fn max_over_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 1.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    if mean > 0.0 { max / mean } else { 1.0 }
}

fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable(mid);
    Some(*m)
}

fn build_loop(
    data: &TraceData,
    codeptr: u64,
    mut a: LoopAcc,
    total_rank_s: f64,
    dispatch_cap: Option<i32>,
    profile_mode: bool,
) -> LoopStats {
    let location = data.location(codeptr);
    let variant = a
        .variants
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(v, _)| *v)
        .unwrap_or(1);
    let schedule: Observable<String> = match variant {
        10 => Observable::Observed("static".into()),
        11 => Observable::Observed("dynamic".into()),
        12 => Observable::Observed("guided".into()),
        13 => Observable::Observed("other".into()),
        _ => Observable::not(
            "the runtime reports only ompt_work_loop, without the schedule kind (libomp < 19)",
        ),
    };
    // The mean trip count: the simulation stands for the mean instance.
    let trip = {
        let n: u64 = a.trips.values().sum();
        let s: u128 = a.trips.iter().map(|(t, k)| *t as u128 * *k as u128).sum();
        if n > 0 {
            (s as f64 / n as f64).round() as u64
        } else {
            0
        }
    };
    let per_thread: Vec<LoopThreadStats> = a
        .per_thread
        .iter()
        .map(|(&(rank, thread), t)| LoopThreadStats {
            rank,
            thread,
            time_s: ns_to_s(t.time),
            busy_s: ns_to_s(t.busy),
            iterations: (a.any_chunks || t.iterations > 0).then_some(t.iterations),
            chunks: a.any_chunks.then_some(t.chunks),
        })
        .collect();
    let busy: Vec<f64> = per_thread.iter().map(|t| t.busy_s).collect();
    let imbalance = max_over_mean(&busy);
    let no_chunks = || -> String {
        match dispatch_cap {
            Some(1) => "no chunk events: the runtime never dispatches (ompt_callback_dispatch = never, libomp < 15)".into(),
            _ => "no chunk (dispatch) events recorded for this loop".into(),
        }
    };
    let mut gaps = std::mem::take(&mut a.gaps);
    let dispatch = median(&mut gaps).filter(|g| *g > 0);
    let time_s = ns_to_s(a.time);
    let share = time_s / total_rank_s;
    let instances = a.instances.max(1);
    let measured_ns = a.time as f64 / instances as f64;
    let team = a.team.max(1);
    let mean_chunk = (a.chunks > 0).then(|| a.chunk_iters as f64 / a.chunks as f64);
    let mode_chunk = a
        .chunk_sizes
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(s, _)| *s)
        .unwrap_or(1);
    let current: Option<Sched> = match variant {
        10 => {
            // One chunk per thread is plain static; more is static,c.
            if a.any_chunks && a.chunks > a.instances * team as u64 {
                Some(Sched::StaticChunk(mode_chunk))
            } else {
                Some(Sched::Static)
            }
        }
        11 => Some(Sched::Dynamic(mode_chunk)),
        12 => Some(Sched::Guided(
            a.chunk_sizes.keys().next().copied().unwrap_or(1),
        )),
        _ => None,
    };
    let current_text = current.map_or_else(|| "the current schedule".to_string(), |s| s.text());
    let (cost_profile, simulations, recommendation) = if a.profile_ok && trip > 0 {
        let bins: Vec<f64> = a
            .bin_cost
            .iter()
            .zip(&a.bin_iters)
            .map(|(c, n)| if *n > 0.0 { c / n } else { 0.0 })
            .collect();
        // Bins never touched (e.g. trip count varies) take the mean.
        let touched: Vec<f64> = bins.iter().cloned().filter(|b| *b > 0.0).collect();
        let mean = touched.iter().sum::<f64>() / touched.len().max(1) as f64;
        let bins: Vec<f64> = bins
            .into_iter()
            .map(|b| if b > 0.0 { b } else { mean })
            .collect();
        let profile = CostProfile {
            shape: tuner::shape_of(&bins),
            bins_ns: bins,
            source: if a.profile_from_chunks {
                "chunk intervals".into()
            } else {
                "per-thread static ranges".into()
            },
        };
        let input = TuneInput {
            label: location.label.clone(),
            measured_ns,
            instances,
            time_s,
            share_of_run: share,
            ranks: a.ranks.len().max(1) as u32,
            trip,
            team,
            // Without a measured gap, 100 ns: the order of libomp's atomic chunk
            // grab (platform facts: empty callback ~20 ns, FOR construct ~0.9 µs per loop).
            dispatch_ns: dispatch.map_or(100.0, |d| d as f64),
            dispatch_measured: dispatch.is_some(),
            current,
            current_text,
            imbalance,
            scheduling_share: if a.time > 0 {
                a.gap_total as f64 / (a.time as f64 * team as f64)
            } else {
                0.0
            },
            profile: profile.clone(),
        };
        let (sims, rec) = tuner::tune(&input);
        (
            Observable::Observed(profile),
            Observable::Observed(sims),
            Observable::Observed(rec),
        )
    } else {
        let why = if profile_mode {
            "profile mode records totals only (no trip counts, no chunks): re-record with --mode trace".to_string()
        } else if trip == 0 {
            "trip count not reported by the runtime".to_string()
        } else {
            format!("cost per iteration not reconstructible: {}", no_chunks())
        };
        (
            Observable::not(why.clone()),
            Observable::not(why.clone()),
            Observable::not(why),
        )
    };
    LoopStats {
        region: (a.region_codeptr != 0).then(|| data.location(a.region_codeptr)),
        location,
        schedule,
        instances: a.instances,
        trip_count: trip,
        team_size: team,
        time_s,
        share_of_run: share,
        per_thread,
        imbalance,
        chunks: if a.any_chunks {
            Observable::Observed(a.chunks)
        } else {
            Observable::not(no_chunks())
        },
        mean_chunk_iterations: match mean_chunk {
            Some(m) => Observable::Observed(m),
            None => Observable::not(no_chunks()),
        },
        dispatch_cost_s: match dispatch {
            Some(d) => Observable::Observed(ns_to_s(d)),
            None if a.any_chunks => Observable::not(
                "chunk intervals are back to back (each chunk ends at the next dispatch): the dispatch cost is inside them",
            ),
            None => Observable::not(no_chunks()),
        },
        scheduling_overhead_s: if a.any_chunks {
            Observable::Observed(ns_to_s(a.gap_total))
        } else {
            Observable::not(no_chunks())
        },
        cost_profile,
        simulations,
        recommendation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};

    /// Every aggregate of a rank pass, maps in key order, floats exactly.
    fn canonical(p: &RankPass) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}",
            p.regions.iter().collect::<BTreeMap<_, _>>(),
            p.loops.iter().collect::<BTreeMap<_, _>>(),
            p.mutexes.iter().collect::<BTreeMap<_, _>>(),
            (
                p.tasks_created,
                p.task_run,
                p.task_runs,
                p.taskwait,
                &p.barrier,
                p.serialized,
                p.clipped,
                p.clipped_ns,
                &p.info,
                p.any_sync_wait,
                p.profile_mode,
                &p.notes,
            )
        )
    }

    /// The region instances are reduced in parallel blocks and waves: the
    /// aggregates (floating-point sums included) are bit-identical to those of
    /// one block in one wave, however the rows are split.
    #[test]
    fn rank_pass_is_identical_however_the_regions_are_split() {
        let spec = OmpTraceSpec {
            threads: 4,
            events_per_rank: 60_000,
            chunks_per_loop: 20,
            ..OmpTraceSpec::default()
        };
        let mut rows = OmpGenerator::all(spec, 3);
        // A region without its parallel row (truncated trace) and a static loop
        // without chunks (cost profile from the static ranges).
        rows.retain(|r| !(r.parallel_id == 7 && r.kind == K_PARALLEL));
        for r in rows.iter_mut().filter(|r| r.parallel_id == 9) {
            if r.kind == K_WORK {
                r.variant = 10;
            }
        }
        rows.retain(|r| !(r.parallel_id == 9 && r.kind == K_CHUNK));
        let whole = canonical(&rank_pass_in(3, &rows, 4, usize::MAX, usize::MAX));
        assert!(whole.contains("profile_ok: true"));
        for (block, wave) in [(1, 1), (1, 3), (100, 1_000), (5_000, 20_000)] {
            let split = canonical(&rank_pass_in(3, &rows, 4, block, wave));
            assert!(split == whole, "blocks of {block} rows, waves of {wave}");
        }
        assert_eq!(canonical(&rank_pass(3, &rows, 4)), whole);
    }

    /// Grouping in parallel chunks gives the groups of one sequential scan, in
    /// order of first appearance, also when regions are interleaved.
    #[test]
    fn grouping_is_the_same_however_the_rows_are_chunked() {
        let spec = OmpTraceSpec {
            threads: 3,
            events_per_rank: 20_000,
            ..OmpTraceSpec::default()
        };
        let rows = OmpGenerator::all(spec, 1);
        let (a, b) = rows.split_at(rows.len() / 2);
        let mut mixed: Vec<OmpRecord> = Vec::new();
        for i in 0..a.len().max(b.len()) {
            mixed.extend(a.get(i));
            mixed.extend(b.get(i));
        }
        mixed.push(OmpRecord::default()); // parallel_id 0: in no group
        for rows in [&rows, &mixed] {
            let whole = group_rows_in(rows, usize::MAX);
            assert_eq!(
                whole.1.len(),
                1 + rows.iter().filter(|r| r.kind == K_PARALLEL).count()
            );
            for chunk in [1, 7, 1_000] {
                assert!(group_rows_in(rows, chunk) == whole, "chunks of {chunk}");
            }
        }
    }
}

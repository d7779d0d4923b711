//! Region instances: what each instance of a parallel region adds to its
//! rank's aggregates (threads, barriers, locks, tasks and its loops).

use hyscope_format::OmpRecord;

use super::aggregates::RankPass;
use super::barriers::{arrival_idle_of, merge_runs, overlap, split_by_arrivals};
use super::kinds::*;
use super::loops::{LoopInstance, LoopThreadAcc, MAX_GAPS, PROFILE_BINS, segment_bins};
use crate::model::*;

/// What the region instances of one block add to their rank's aggregates,
/// computed on their own by [`Block::add`] (in parallel with other blocks) and
/// added in region order by [`Block::apply`]. Flat vectors that the instances
/// and loops index by ranges: a few allocations per block, none per instance.
#[derive(Default)]
pub(super) struct Block {
    pub(super) insts: Vec<Instance>,
    /// Per thread of each instance's team, by thread.
    pub(super) threads: Vec<ThreadRegionStats>,
    pub(super) loops: Vec<LoopInstance>,
    /// The variant of each thread's work row.
    pub(super) variants: Vec<u8>,
    pub(super) per_thread: Vec<(u32, LoopThreadAcc)>,
    /// (chunk size, chunks of that size).
    pub(super) chunk_sizes: Vec<(u64, u64)>,
    pub(super) gaps: Vec<i64>,
    /// Cost-profile additions (bin, cost, iterations), in order.
    pub(super) bins: Vec<(u8, f64, f64)>,
    // Scratch of one instance.
    /// Loop work rows: (codeptr, k-th on its thread, row).
    pub(super) works: Vec<(u64, u32, u32)>,
    /// Work rows seen per codeptr on the current thread.
    pub(super) seq: Vec<(u64, u32)>,
    /// Each thread's chunk rows: (thread, first, end) positions in the group.
    pub(super) chunk_runs: Vec<(u32, usize, usize)>,
    /// Thread → index in the team (implicit task `count`).
    pub(super) team_index: Vec<(u32, u64)>,
    /// Chunks of each thread's work row: positions in the group.
    pub(super) chunk_sets: Vec<(usize, usize)>,
    /// Each thread's barriers in this instance: (thread, start, end), clipped
    /// to the region, by thread, then start.
    pub(super) barriers: Vec<(u32, i64, i64)>,
    /// Each thread's other synchronisation (taskwait, taskgroup...) and
    /// barrier waits, as `barriers`, with the kind.
    pub(super) other_syncs: Vec<(u32, i64, i64, u8)>,
    /// Explicit tasks run by each thread: (thread, start, end), clipped,
    /// merged into disjoint runs by [`merge_runs`].
    pub(super) task_runs: Vec<(u32, i64, i64)>,
    /// Per thread of the instance: ns its barriers waited for the team's last arrival.
    pub(super) arrival_idle: Vec<(u32, i64)>,
    /// The team's last arrival at each barrier of the instance.
    pub(super) last_arrival: Vec<i64>,
}

/// One region instance of a [`Block`].
pub(super) struct Instance {
    pub(super) codeptr: u64,
    pub(super) rs: i64,
    pub(super) re: i64,
    pub(super) team: u32,
    pub(super) par_thread: u32,
    pub(super) master_task: Option<i64>,
    pub(super) clipped: u64,
    pub(super) clipped_ns: i64,
    pub(super) threads: std::ops::Range<usize>,
    pub(super) loops: std::ops::Range<usize>,
}

/// The parallel row of a region instance's rows (`group`, indices into
/// `rows`): the first by (thread, start); None where it is missing (a
/// truncated trace).
pub(super) fn parallel_row<'a>(rows: &'a [OmpRecord], group: &[u32]) -> Option<&'a OmpRecord> {
    group
        .iter()
        .map(|&i| &rows[i as usize])
        .filter(|r| r.kind == K_PARALLEL)
        .min_by_key(|r| (r.thread, r.start_ns))
}

/// Whether `r`, a row of the region instance of parallel row `par`, is a
/// worker's join-barrier end that runs past the region's end `re` (libomp
/// dispatches it only when the worker wakes for the next region; module
/// documentation of [`super`]): the time past the end, which the analysis
/// clips and does not book as barrier wait.
pub(super) fn late_join_end(r: &OmpRecord, par: &OmpRecord, re: i64) -> Option<i64> {
    (r.kind == K_SYNC && r.end_ns > re && r.thread != par.thread)
        .then(|| r.end_ns - re.max(r.start_ns))
}

/// The late join-barrier ends of one region instance (`group`, indices
/// into `rows`): how many, and their ns past the region's end, as
/// [`Block::add`] counts them.
pub(super) fn late_join_ends_of(rows: &[OmpRecord], group: &[u32]) -> (u64, i64) {
    let Some(par) = parallel_row(rows, group) else {
        return (0, 0);
    };
    let re = par.end_ns.max(par.start_ns);
    group
        .iter()
        .filter_map(|&i| late_join_end(&rows[i as usize], par, re))
        .fold((0, 0), |(n, ns), d| (n + 1, ns + d))
}

pub(super) fn clip(r: &OmpRecord, lo: i64, hi: i64) -> i64 {
    (r.end_ns.min(hi) - r.start_ns.max(lo)).max(0)
}

/// libomp's static partition of n iterations over p threads: thread i's [start, len).
pub(super) fn static_range(n: u64, p: u64, i: u64) -> (u64, u64) {
    let base = n / p;
    let extra = n % p;
    let start = i * base + i.min(extra);
    (start, base + u64::from(i < extra))
}

impl Block {
    /// Reduce one region instance, its rows sorted by (thread, kind, start):
    /// each thread's rows are contiguous, its chunks sorted by start.
    pub(super) fn add(&mut self, rows: &[OmpRecord], group: &[u32]) {
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
        let Some(par) = parallel_row(rows, group) else {
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
                    if let Some(ns) = late_join_end(r, par, re) {
                        inst.clipped += 1;
                        inst.clipped_ns += ns;
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
    pub(super) fn apply(&self, rank: u32, out: &mut RankPass) {
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
            acc.time_sq.add_ns(re - rs);
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
                acc.fj_sq.add_ns(fj);
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
                la.time_n += 1;
                la.time_sq.add_ns(li.time);
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

/// Add one thread's region statistics to an accumulator of the same thread.
pub(super) fn add_thread_stats(e: &mut ThreadRegionStats, t: &ThreadRegionStats) {
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

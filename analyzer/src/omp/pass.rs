//! The per-rank pass: one rank's rows grouped by region and reduced, in
//! parallel, to the rank's aggregates ([`RankPass`]).

use std::collections::HashMap;

use hyscope_format::OmpRecord;
use rayon::prelude::*;

use super::aggregates::RankOmp;
pub use super::aggregates::RankPass;
use super::kinds::*;
use super::profile::profile_summaries;
use super::regions::{Block, late_join_ends_of};

/// Rows of region instances processed per parallel wave (bounds the memory of
/// the per-instance results waiting to be applied).
pub(super) const WAVE_ROWS: usize = 1 << 20;
/// Rows per parallel task of a wave.
pub(super) const BLOCK_ROWS: usize = 1 << 15;

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
pub(super) fn rank_pass_in(
    rank: u32,
    rows: &[OmpRecord],
    threads: u32,
    block_rows: usize,
    wave_rows: usize,
) -> RankPass {
    let mut out = RankPass::new(rank, threads);
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

/// Of [`rank_pass`], only the worker join-barrier ends it clips (trace
/// mode, [`Block::add`]) or takes out of the totals (profile mode,
/// [`profile_summaries`]), by the same rules: a [`RankPass`] holding these
/// and the rank's number and threads, nothing else. What the run's window
/// needs of the OpenMP pass ([`crate::run_extent`]).
pub fn join_pass(rank: u32, rows: &[OmpRecord], threads: u32) -> RankPass {
    let mut out = RankPass {
        info: RankOmp {
            rank,
            threads,
            ..RankOmp::default()
        },
        ..RankPass::default()
    };
    let summaries: Vec<&OmpRecord> = rows.iter().filter(|r| r.kind == K_SUMMARY).collect();
    if !summaries.is_empty() {
        let mut profile = RankPass::new(rank, threads);
        profile_summaries(rank, &summaries, &mut profile);
        (out.clipped, out.clipped_ns) = (profile.clipped, profile.clipped_ns);
    }
    let (idx, offsets) = group_rows(rows);
    let (n, ns) = offsets
        .par_windows(2)
        .map(|w| late_join_ends_of(rows, &idx[w[0] as usize..w[1] as usize]))
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    out.clipped += n;
    out.clipped_ns += ns;
    out
}

/// Rows per task of the parallel grouping.
pub(super) const GROUP_CHUNK: usize = 1 << 20;

/// Rows of regions grouped by parallel_id with a counting sort: row indices,
/// group after group in order of first appearance, and the offsets of the
/// groups in them. Chunks of rows are numbered in parallel (each with its own
/// first-appearance order), then their numbers are mapped to the global ones
/// in chunk order, which keeps the order of first appearance.
pub(super) fn group_rows(rows: &[OmpRecord]) -> (Vec<u32>, Vec<u32>) {
    group_rows_in(rows, GROUP_CHUNK)
}

pub(super) fn group_rows_in(rows: &[OmpRecord], chunk: usize) -> (Vec<u32>, Vec<u32>) {
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
pub(super) fn ungrouped_stats<'a>(rows: &'a [OmpRecord], out: &mut RankPass) -> Vec<&'a OmpRecord> {
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

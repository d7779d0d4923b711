//! Loops as the per-rank pass accumulates them: per-thread times, chunks and
//! the iteration-cost profile.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sum_sq::SumSq;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct LoopThreadAcc {
    pub(super) time: i64,
    pub(super) busy: i64,
    pub(super) iterations: u64,
    pub(super) chunks: u64,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct LoopAcc {
    pub(super) region_codeptr: u64,
    pub(super) variants: BTreeMap<u8, u64>,
    pub(super) instances: u64,
    pub(super) trips: BTreeMap<u64, u64>,
    pub(super) team: u32,
    pub(super) ranks: Vec<u32>,
    pub(super) time: i64,
    /// How many values `time` sums (its instances; in profile mode its
    /// slowest thread's intervals), and their squares.
    pub(super) time_n: u64,
    pub(super) time_sq: SumSq,
    pub(super) per_thread: BTreeMap<(u32, u32), LoopThreadAcc>,
    pub(super) any_chunks: bool,
    pub(super) chunks: u64,
    pub(super) chunk_iters: u64,
    pub(super) chunk_sizes: BTreeMap<u64, u64>,
    pub(super) gaps: Vec<i64>,
    pub(super) gap_total: i64,
    /// Cost profile: Σ cost and Σ iterations per normalised bin.
    pub(super) bin_cost: Vec<f64>,
    pub(super) bin_iters: Vec<f64>,
    pub(super) profile_from_chunks: bool,
    pub(super) profile_ok: bool,
}

pub(super) const PROFILE_BINS: usize = 64;
pub(super) const MAX_GAPS: usize = 100_000;

impl LoopAcc {
    pub(super) fn merge(&mut self, o: LoopAcc) {
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
        self.time_n += o.time_n;
        self.time_sq.add(o.time_sq);
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

/// One loop instance of a region instance.
pub(super) struct LoopInstance {
    pub(super) codeptr: u64,
    pub(super) trip: u64,
    pub(super) team: u32,
    pub(super) time: i64,
    pub(super) any_chunks: bool,
    pub(super) chunks: u64,
    pub(super) chunk_iters: u64,
    pub(super) gap_total: i64,
    /// Whether a segment entered the cost profile (see [`segment_bins`]).
    pub(super) profiled: bool,
    pub(super) variants: std::ops::Range<usize>,
    pub(super) per_thread: std::ops::Range<usize>,
    pub(super) chunk_sizes: std::ops::Range<usize>,
    pub(super) gaps: std::ops::Range<usize>,
    pub(super) bins: std::ops::Range<usize>,
}

/// The cost-profile additions of `count` iterations from `start` of a `trip`
/// iterations loop that took `dur` ns, in bin order; false if the segment is
/// unusable.
pub(super) fn segment_bins(
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

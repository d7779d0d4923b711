//! OpenMP: parallel regions, loops, locks, tasks, idle threads and the
//! fine-grain model, from the `omp` rows of each rank.
//!
//! Normalisation (platform facts, "Quirks an analyzer must handle"): a worker's
//! join-barrier `sync_region(_wait)` end and its implicit-task end are dispatched
//! only when it wakes for the next region, so every row of a region is clipped
//! at the master's `parallel_end`; regions with a team of one are "serialized"
//! and have no implicit barrier.

mod aggregates;
mod analyze;
mod barriers;
mod fine_grain;
mod kinds;
mod loop_stats;
mod loops;
pub mod pass;
mod profile;
mod regions;
mod sum_sq;

use crate::model::*;

pub use aggregates::{RankOmp, RankPass};
pub use analyze::{OmpMerge, analyze_omp};
pub(crate) use barriers::{last_arrivals, split_by_arrivals};
pub use fine_grain::{fine_grain, inside};
pub(crate) use kinds::is_barrier;
pub use pass::rank_pass;

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

/// Largest over mean of `v` (1 when `v` is empty or its mean is not positive).
pub fn max_over_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 1.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    if mean > 0.0 { max / mean } else { 1.0 }
}

/// A team's imbalance over the ranks: Σ over ranks of the largest of the
/// rank's thread values over Σ of their means, from (rank, value) pairs (1
/// when none or the means are not positive). Each rank's threads are a team
/// of their own: a difference between ranks is MPI load imbalance (POP's MPI
/// load balance), never a schedule's, so a team of one thread reads 1 on
/// any number of ranks. The inverse of POP's OpenMP load balance
/// (Σ_rank mean / Σ_rank max, `pop.rs`); one rank's is [`max_over_mean`].
pub fn team_imbalance(per_thread: impl IntoIterator<Item = (u32, f64)>) -> f64 {
    let mut by_rank: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for (rank, v) in per_thread {
        by_rank.entry(rank).or_default().push(v);
    }
    let (mut max, mut mean) = (0.0, 0.0);
    for v in by_rank.values() {
        max += v.iter().cloned().fold(f64::MIN, f64::max);
        mean += v.iter().sum::<f64>() / v.len() as f64;
    }
    if mean > 0.0 { max / mean } else { 1.0 }
}

#[cfg(test)]
mod tests;

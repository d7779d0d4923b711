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

#[cfg(test)]
mod tests;

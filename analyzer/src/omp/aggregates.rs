//! One rank's OpenMP aggregates, which the per-rank pass fills and the pass
//! over every rank merges.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::loops::LoopAcc;
use super::sum_sq::SumSq;
use crate::model::*;

/// Per-rank facts other passes need (POP, energy, findings).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct RegionAcc {
    pub(super) instances: u64,
    pub(super) serialized: u64,
    pub(super) ranks: Vec<u32>,
    pub(super) team: u32,
    pub(super) time: i64,
    /// Σ of its instances' times squared (`time` sums `instances` of them).
    pub(super) time_sq: SumSq,
    pub(super) itask: i64,
    pub(super) fork_join: i64,
    pub(super) fj_max: i64,
    pub(super) fj_observed: u64,
    /// Σ of its instances' fork/join squared (`fork_join` sums
    /// `fj_observed` of them; trace mode only).
    pub(super) fj_sq: SumSq,
    pub(super) per_thread: BTreeMap<(u32, u32), ThreadRegionStats>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(super) struct MutexAcc {
    pub(super) kind: u8,
    pub(super) acquisitions: u64,
    pub(super) wait: i64,
    pub(super) hold: i64,
    pub(super) max_wait: i64,
}

/// One rank's OpenMP aggregates (its rows are dropped after the pass); a
/// process of a parallel analysis sends them to process 0 ([`crate::parallel`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RankPass {
    pub(super) regions: HashMap<u64, RegionAcc>,
    pub(super) loops: HashMap<u64, LoopAcc>,
    pub(super) mutexes: HashMap<u64, MutexAcc>,
    pub(super) tasks_created: u64,
    pub(super) task_run: i64,
    pub(super) task_runs: u64,
    pub(super) taskwait: i64,
    pub(super) barrier: BarrierStats,
    pub(super) serialized: u64,
    pub(super) clipped: u64,
    pub(super) clipped_ns: i64,
    pub(super) info: RankOmp,
    pub(super) any_sync_wait: bool,
    pub(super) profile_mode: bool,
    pub(super) notes: Vec<String>,
}

impl RankPass {
    /// An empty pass of `rank` with `threads` threads, its per-thread
    /// totals at zero.
    pub(super) fn new(rank: u32, threads: u32) -> RankPass {
        RankPass {
            info: RankOmp {
                rank,
                threads,
                busy_ns: vec![0; threads as usize],
                runtime_ns: vec![0; threads as usize],
                ..RankOmp::default()
            },
            ..RankPass::default()
        }
    }

    pub fn rank(&self) -> u32 {
        self.info.rank
    }

    /// The master's (outermost) parallel regions, sorted.
    pub fn regions(&self) -> &[(i64, i64)] {
        &self.info.regions
    }
}

//! Where each rank's OpenMP threads could run: its affinity mask (recorded at
//! start) against its thread count and the host's CPUs. The classic hybrid
//! mistake is a launcher binding each rank to one core (Open MPI does by
//! default for up to two ranks) while the rank runs several OpenMP threads:
//! they then take turns on that core, loops run at a fraction of their speed
//! and every barrier waits for a thread to get the core back. The OpenMP
//! runtime can do the same inside a wide mask (`OMP_PROC_BIND=master`, or
//! fewer `OMP_PLACES` than threads): the threads' own masks, read while the
//! run lasts, show it.

use crate::model::ns_to_s;
use crate::model::{RankPlacement, RunFacts};
use crate::omp::RankOmp;
use hyscope_format::Manifest;

/// One row per rank analysed that recorded its affinity: a rank left out
/// for a damaged part (`run.ranks_left_out`) is in no row and in no host's
/// thread count, as in every other number.
pub fn rank_placement(m: &Manifest, run: &RunFacts, omp: &[RankOmp]) -> Vec<RankPlacement> {
    let analysed = || {
        m.ranks
            .iter()
            .filter(|r| !run.ranks_left_out.contains(&r.rank))
    };
    let procs = crate::processes::Processes::of(&run.children);
    let threads_on_host = |host: &str| -> u32 {
        // The programs of one process (each exec'd by the one before,
        // `processes`) never run at once: the most threads of any of them.
        let mut per_process: std::collections::BTreeMap<u32, u32> = Default::default();
        for r in analysed().filter(|r| r.host == host) {
            let threads = run
                .threads_per_rank
                .get(r.rank as usize)
                .copied()
                .unwrap_or(1)
                .max(1);
            let most = per_process.entry(procs.process_of(r.rank)).or_default();
            *most = (*most).max(threads);
        }
        per_process.values().sum()
    };
    let mut out: Vec<RankPlacement> = analysed()
        .filter(|r| !r.cores.is_empty())
        .map(|r| {
            let threads = run
                .threads_per_rank
                .get(r.rank as usize)
                .copied()
                .unwrap_or(1)
                .max(1);
            // The threads' masks as the run left them: only when every
            // OpenMP thread has one (a partial set would undercount).
            let mut bound: Vec<u32> = Vec::new();
            if r.thread_cpus.len() >= threads as usize && threads > 1 {
                bound = r
                    .thread_cpus
                    .iter()
                    .flat_map(|t| t.cpus.iter().copied())
                    .collect();
                bound.sort_unstable();
                bound.dedup();
            }
            RankPlacement {
                rank: r.rank,
                host: r.host.clone(),
                threads,
                cpus: r.cores.clone(),
                host_cpus: r.node_cpus,
                host_threads: threads_on_host(&r.host),
                thread_cpus: bound,
                thread_busy_s: omp
                    .iter()
                    .find(|o| o.rank == r.rank)
                    .map(|o| o.busy_ns.iter().map(|&ns| ns_to_s(ns)).collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    out.sort_by_key(|p| p.rank);
    out
}

impl RankPlacement {
    /// The CPUs its OpenMP threads ran on: their masks' union where
    /// recorded, else the rank's mask.
    pub fn run_cpus(&self) -> &[u32] {
        if self.thread_cpus.is_empty() {
            &self.cpus
        } else {
            &self.thread_cpus
        }
    }

    /// More OpenMP threads than CPUs they may run on.
    pub fn threads_share_cpus(&self) -> bool {
        self.threads as usize > self.run_cpus().len()
    }

    /// The OpenMP runtime bound the threads to fewer CPUs than the rank has
    /// (`OMP_PROC_BIND=master`/`primary`, or `OMP_PLACES` with fewer places
    /// than threads): the fix is the OpenMP binding, not the launcher's.
    pub fn pinned_together(&self) -> bool {
        self.threads_share_cpus() && self.run_cpus().len() < self.cpus.len()
    }

    /// The CPUs its threads would share once the binding is fixed: a core
    /// each when the launcher's mask is the limit; the rank's own CPUs when
    /// the OpenMP runtime pinned them together inside it.
    pub fn cpus_after_fix(&self) -> usize {
        if self.pinned_together() {
            self.cpus.len()
        } else {
            self.threads as usize
        }
    }

    /// The host has fewer CPUs than its ranks run threads in all (unknown
    /// CPU count: not judged).
    pub fn host_oversubscribed(&self) -> bool {
        self.host_cpus > 0 && self.host_threads > self.host_cpus
    }

    /// The launcher confined the rank to fewer CPUs than its threads while
    /// the host has room for all of them: a binding to fix, not a shortage.
    pub fn bound_too_tightly(&self) -> bool {
        self.threads_share_cpus() && !self.host_oversubscribed()
    }

    /// Its OpenMP threads took turns on CPUs: more of them than the CPUs
    /// they may run on, or than the host has for every rank's threads.
    /// Then a loop's time is its work over the CPUs whatever the schedule,
    /// and a simulation that gives each thread a core predicts gains the
    /// run cannot have (`tuner`).
    pub fn threads_take_turns(&self) -> bool {
        self.threads > 1 && (self.threads_share_cpus() || self.host_oversubscribed())
    }

    /// [`Self::threads_take_turns`] in words, e.g. `rank 0: 2 threads on CPU
    /// 0` or `rank 1: 4 OpenMP threads of its host's ranks on its 2 CPUs`.
    pub fn turns_text(&self) -> String {
        if self.threads_share_cpus() {
            format!(
                "rank {}: {} threads on CPU {}",
                self.rank,
                self.threads,
                self.cpu_list()
            )
        } else {
            format!(
                "rank {}: {} OpenMP threads of its host's ranks on its {} CPUs",
                self.rank, self.host_threads, self.host_cpus
            )
        }
    }

    /// `0-3,8` style list of the CPUs its threads ran on ([`Self::run_cpus`]).
    pub fn cpu_list(&self) -> String {
        cpu_list(self.run_cpus())
    }
}

/// `0-3,8` style list of sorted CPU numbers.
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(threads: u32, cpus: &[u32], host_cpus: u32, host_threads: u32) -> RankPlacement {
        RankPlacement {
            rank: 0,
            host: "n".into(),
            threads,
            cpus: cpus.to_vec(),
            host_cpus,
            host_threads,
            thread_cpus: Vec::new(),
            thread_busy_s: Vec::new(),
        }
    }

    #[test]
    fn threads_pinned_together_by_the_openmp_binding() {
        // OMP_PROC_BIND=master on a 2-CPU rank: both threads on CPU 0.
        let master = RankPlacement {
            thread_cpus: vec![0],
            ..p(2, &[0, 1], 2, 2)
        };
        assert!(master.threads_share_cpus() && master.pinned_together());
        assert!(master.bound_too_tightly(), "the host has CPUs to spare");
        assert_eq!(master.cpu_list(), "0");
        assert_eq!(master.cpus_after_fix(), 2, "the rank's 2 CPUs");
        // 4 threads pinned to one of the rank's 2 CPUs: fixed, they share 2.
        let four = RankPlacement {
            thread_cpus: vec![0],
            ..p(4, &[0, 1], 8, 4)
        };
        assert_eq!(four.cpus_after_fix(), 2);
        // The same on an oversubscribed host: not a binding to fix.
        let over = RankPlacement {
            thread_cpus: vec![0],
            ..p(2, &[0, 1], 2, 4)
        };
        assert!(over.pinned_together() && !over.bound_too_tightly());
        // OMP_PROC_BIND=close: a CPU each.
        let close = RankPlacement {
            thread_cpus: vec![0, 1],
            ..p(2, &[0, 1], 2, 2)
        };
        assert!(!close.threads_share_cpus() && !close.pinned_together());
        // The launcher's binding (no OpenMP binding): not the runtime's doing.
        let bound = RankPlacement {
            thread_cpus: vec![0],
            ..p(2, &[0], 2, 2)
        };
        assert!(bound.threads_share_cpus() && !bound.pinned_together());
        assert_eq!(bound.cpus_after_fix(), 2, "a core each");
    }

    #[test]
    fn verdicts() {
        // Open MPI's default for np <= 2: one core per rank, 2 threads, 2-CPU host.
        assert!(p(2, &[0], 2, 2).bound_too_tightly());
        // 2 ranks × 2 threads on 2 CPUs: the host is short of CPUs, not the binding.
        let over = p(2, &[0], 2, 4);
        assert!(
            over.threads_share_cpus() && over.host_oversubscribed() && !over.bound_too_tightly()
        );
        // Enough CPUs in the mask.
        assert!(!p(2, &[0, 1], 2, 2).threads_share_cpus());
        // Unknown host CPU count (older traces): only the mask is judged.
        assert!(p(4, &[0, 1], 0, 4).bound_too_tightly());
    }

    #[test]
    fn cpu_lists_are_ranges() {
        assert_eq!(
            p(1, &[0, 1, 2, 3, 8, 10, 11], 16, 1).cpu_list(),
            "0-3,8,10-11"
        );
        assert_eq!(p(1, &[5], 16, 1).cpu_list(), "5");
    }
}

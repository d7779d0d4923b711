//! Where each rank's OpenMP threads could run: its affinity mask (recorded at
//! start) against its thread count and the host's CPUs. The classic hybrid
//! mistake is a launcher binding each rank to one core (Open MPI does by
//! default for up to two ranks) while the rank runs several OpenMP threads:
//! they then take turns on that core, loops run at a fraction of their speed
//! and every barrier waits for a thread to get the core back.

use crate::model::{RankPlacement, RunFacts};
use hyscope_format::manifest::Manifest;

/// One row per rank that recorded its affinity.
pub fn rank_placement(m: &Manifest, run: &RunFacts) -> Vec<RankPlacement> {
    let threads_on_host = |host: &str| -> u32 {
        m.ranks
            .iter()
            .filter(|r| r.host == host)
            .map(|r| {
                run.threads_per_rank
                    .get(r.rank as usize)
                    .copied()
                    .unwrap_or(1)
                    .max(1)
            })
            .sum()
    };
    let mut out: Vec<RankPlacement> = m
        .ranks
        .iter()
        .filter(|r| !r.cores.is_empty())
        .map(|r| {
            let threads = run
                .threads_per_rank
                .get(r.rank as usize)
                .copied()
                .unwrap_or(1)
                .max(1);
            RankPlacement {
                rank: r.rank,
                host: r.host.clone(),
                threads,
                cpus: r.cores.clone(),
                host_cpus: r.node_cpus,
                host_threads: threads_on_host(&r.host),
            }
        })
        .collect();
    out.sort_by_key(|p| p.rank);
    out
}

impl RankPlacement {
    /// More OpenMP threads than CPUs the rank may run on.
    pub fn threads_share_cpus(&self) -> bool {
        self.threads as usize > self.cpus.len()
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

    /// `0-3,8` style list of the rank's CPUs.
    pub fn cpu_list(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.cpus.len() {
            let mut j = i;
            while j + 1 < self.cpus.len() && self.cpus[j + 1] == self.cpus[j] + 1 {
                j += 1;
            }
            parts.push(if j > i {
                format!("{}-{}", self.cpus[i], self.cpus[j])
            } else {
                self.cpus[i].to_string()
            });
            i = j + 1;
        }
        parts.join(",")
    }
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
        }
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

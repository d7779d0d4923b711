//! How the processes of a parallel analysis reach each other ([`Exchange`],
//! given by the caller: the analyzer knows no MPI) and which ranks each
//! analyses ([`split`]). Below `load` and `parallel`, which both use them.

use std::ops::Range;

/// How the processes of a parallel analysis reach each other.
pub trait Exchange {
    /// This process's index, 0 for the one that finishes the analysis.
    fn process(&self) -> usize;
    /// The number of processes.
    fn processes(&self) -> usize;
    /// The threads each process analyses with, in process order: ranks are
    /// shared in proportion, and a process of 0 takes none (a node running
    /// more processes than it has cores).
    fn threads(&self) -> Vec<usize>;
    /// At a process other than 0: start handing `bytes` to process 0 (as
    /// one message; several arrive in the order they were sent), without
    /// waiting for it to arrive: the process analyses on meanwhile.
    fn send_to_root(&self, bytes: Vec<u8>) -> Result<(), String>;
    /// At a process other than 0: wait until everything handed on has arrived.
    fn sent(&self) -> Result<(), String>;
    /// At process 0: the bytes process `from` handed on.
    fn receive(&self, from: usize) -> Result<Vec<u8>, String>;
}

/// The ranks (indices into `bytes`, each rank's OpenMP bytes in rank order)
/// each process analyses, given the threads each analyses with
/// ([`Exchange::threads`]): contiguous ranges in rank order, each process's
/// share of the bytes in proportion to its threads, process 0's counting the
/// `head` bytes it reads besides (the samples, symbols and phases of every
/// rank). A rank goes to the process its middle byte falls in; a process may
/// get none, one of 0 threads (but process 0) gets none.
pub fn split(bytes: &[u64], threads: &[usize], head: u64) -> Vec<Range<usize>> {
    let processes = threads.len().max(1);
    // Process 0 always analyses (it finishes the analysis), the others as
    // their threads say: a process of 0 reads nothing (`parallel`).
    let weights: Vec<u128> = (0..processes)
        .map(|p| {
            threads
                .get(p)
                .map_or(0, |&t| t as u128)
                .max(u128::from(p == 0))
        })
        .collect();
    let weight: u128 = weights.iter().sum();
    let total: u128 = bytes.iter().map(|&b| u128::from(b)).sum::<u128>() + u128::from(head);
    // Where each process's share ends, in bytes (times `weight`).
    let mut ends = Vec::with_capacity(processes);
    let mut acc = 0u128;
    for w in &weights {
        acc += w;
        ends.push(acc * total);
    }
    let mut owner = Vec::with_capacity(bytes.len());
    let mut before = u128::from(head);
    for (i, &b) in bytes.iter().enumerate() {
        let p = if total == 0 {
            // No bytes: by count, among the processes that take ranks.
            let at = (i as u128 * weight) / bytes.len() as u128;
            let mut acc = 0;
            weights
                .iter()
                .position(|w| {
                    acc += w;
                    at < acc
                })
                .unwrap_or(processes - 1)
        } else {
            // The middle byte, times 2 * weight, against the shares' ends.
            let middle = (2 * before + u128::from(b)) * weight;
            ends.iter()
                .position(|&e| middle < 2 * e)
                .unwrap_or(processes - 1)
        };
        owner.push(p);
        before += u128::from(b);
    }
    let mut ranges = Vec::with_capacity(processes);
    let mut start = 0;
    for p in 0..processes {
        let end = start + owner[start..].iter().take_while(|&&o| o == p).count();
        ranges.push(start..end);
        start = end;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_is_contiguous_balanced_and_covers_every_rank() {
        assert_eq!(split(&[10, 10, 10, 10], &[1, 1], 0), vec![0..2, 2..4]);
        assert_eq!(
            split(&[10, 10, 10, 10], &[1; 4], 0),
            vec![0..1, 1..2, 2..3, 3..4]
        );
        // More processes than ranks: some get none.
        assert_eq!(split(&[5, 5], &[1; 4], 0), vec![0..0, 0..1, 1..1, 1..2]);
        for (bytes, n) in [(vec![1u64, 100, 1, 1, 1], 3), (vec![0; 7], 3), (vec![], 2)] {
            let r = split(&bytes, &vec![1; n], 0);
            assert_eq!(r.len(), n);
            assert_eq!(r.first().map_or(0, |r| r.start), 0);
            assert_eq!(r.last().map_or(0, |r| r.end), bytes.len());
            assert!(r.windows(2).all(|w| w[0].end == w[1].start));
        }
        // A rank of most of the bytes does not pull its neighbours along.
        assert_eq!(split(&[1, 100, 1], &[1; 3], 0), vec![0..1, 1..2, 2..3]);
    }

    #[test]
    fn split_follows_the_threads_and_process_0s_other_bytes() {
        // Twice the threads, twice the bytes.
        assert_eq!(split(&[10; 6], &[2, 1], 0), vec![0..4, 4..6]);
        // A process of no threads takes no ranks, with bytes or without.
        assert_eq!(
            split(&[10; 4], &[1, 0, 1, 0], 0),
            vec![0..2, 2..2, 2..4, 4..4]
        );
        assert_eq!(
            split(&[0; 4], &[1, 0, 1, 0], 0),
            vec![0..2, 2..2, 2..4, 4..4]
        );
        // Process 0's other reading counts as its first bytes.
        assert_eq!(split(&[10; 4], &[1, 1], 20), vec![0..1, 1..4]);
        assert_eq!(split(&[10; 4], &[1, 1], 60), vec![0..0, 0..4]);
        // Process 0 analyses whatever its threads say; the others of 0 read nothing.
        assert_eq!(split(&[10; 4], &[0, 0], 0), vec![0..4, 4..4]);
        assert_eq!(split(&[10; 4], &[0, 1], 0), vec![0..2, 2..4]);
    }
}

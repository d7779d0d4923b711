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
    /// At a process other than 0: hand `bytes` to process 0 (as one
    /// message; several arrive in the order they were sent).
    fn send_to_root(&self, bytes: &[u8]) -> Result<(), String>;
    /// At process 0: the bytes process `from` handed on.
    fn receive(&self, from: usize) -> Result<Vec<u8>, String>;
}

/// The ranks (indices into `bytes`, each rank's OpenMP bytes in rank order)
/// each of `processes` processes analyses: contiguous ranges in rank order
/// with about the same number of bytes each (a rank goes to the process its
/// middle byte falls in); a process may get none.
pub fn split(bytes: &[u64], processes: usize) -> Vec<Range<usize>> {
    let processes = processes.max(1);
    let total: u128 = bytes.iter().map(|&b| u128::from(b)).sum();
    let mut owner = Vec::with_capacity(bytes.len());
    let mut before: u128 = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let p = if total == 0 {
            i * processes / bytes.len()
        } else {
            let middle = 2 * before + u128::from(b);
            ((middle * processes as u128) / (2 * total)) as usize
        };
        owner.push(p.min(processes - 1));
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
        assert_eq!(split(&[10, 10, 10, 10], 2), vec![0..2, 2..4]);
        assert_eq!(split(&[10, 10, 10, 10], 4), vec![0..1, 1..2, 2..3, 3..4]);
        // More processes than ranks: some get none.
        assert_eq!(split(&[5, 5], 4), vec![0..0, 0..1, 1..1, 1..2]);
        for (bytes, n) in [(vec![1u64, 100, 1, 1, 1], 3), (vec![0; 7], 3), (vec![], 2)] {
            let r = split(&bytes, n);
            assert_eq!(r.len(), n);
            assert_eq!(r.first().map_or(0, |r| r.start), 0);
            assert_eq!(r.last().map_or(0, |r| r.end), bytes.len());
            assert!(r.windows(2).all(|w| w[0].end == w[1].start));
        }
        // A rank of most of the bytes does not pull its neighbours along.
        assert_eq!(split(&[1, 100, 1], 3), vec![0..1, 1..2, 2..3]);
    }
}

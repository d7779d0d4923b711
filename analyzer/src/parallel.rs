//! One analysis computed by several processes (`mpirun -np N hyscope report`,
//! `ARCHITECTURE.md`, "Memory"): each process decodes the OpenMP rows of a
//! contiguous range of ranks ([`split`]) through the per-rank pass and hands
//! each rank's results to process 0, which adds them to its own in rank order
//! (so every floating-point sum adds the same values in the same order as one
//! process does), reads the MPI rows, samples and symbols of every rank, and
//! finishes the analysis alone. The result is the single process's, byte for
//! byte.
//!
//! The transport is the caller's ([`Exchange`]): the analyzer knows no MPI.

use std::ops::Range;
use std::path::Path;

use crate::error::AnalyzeError;
use crate::load::{Loaded, RankOut, Share, load_in};
use crate::{Analysis, AnalyzeOptions};

/// How the processes of a parallel analysis reach each other.
pub trait Exchange {
    /// This process's index, 0 for the one that finishes the analysis.
    fn process(&self) -> usize;
    /// The number of processes.
    fn processes(&self) -> usize;
    /// At a process other than 0: hand `bytes` to process 0 (once).
    fn send_to_root(&self, bytes: &[u8]) -> Result<(), String>;
    /// At process 0: the bytes process `from` handed on.
    fn receive(&self, from: usize) -> Result<Vec<u8>, String>;
}

/// Analyse the trace in `dir` as process [`Exchange::process`] of
/// [`Exchange::processes`]: process 0 returns the analysis, the others
/// `None` once they have handed on their ranks' results (or their error,
/// which process 0 then returns).
pub fn analyze_parallel(
    dir: &Path,
    options: &AnalyzeOptions,
    exchange: &dyn Exchange,
) -> Result<Option<Analysis>, AnalyzeError> {
    if exchange.processes() <= 1 {
        return crate::analyze(dir, options).map(Some);
    }
    if exchange.process() == 0 {
        return match load_in(dir, options, Share::Root(exchange))? {
            Loaded::Whole(whole) => {
                let (data, merged) = *whole;
                Ok(Some(crate::finish(data, merged, options)))
            }
            Loaded::Part(_) => unreachable!("process 0 finishes the analysis"),
        };
    }
    let part: Result<Vec<RankOut>, String> = match load_in(dir, options, Share::Worker(exchange)) {
        Ok(Loaded::Part(outs)) => Ok(outs),
        Ok(Loaded::Whole(..)) => unreachable!("a worker hands its ranks on"),
        Err(e) => Err(e.to_string()),
    };
    let bytes = postcard::to_allocvec(&part).map_err(|e| AnalyzeError::Exchange {
        message: format!("cannot encode this process's results: {e}"),
    })?;
    drop(part);
    exchange
        .send_to_root(&bytes)
        .map_err(|message| AnalyzeError::Exchange { message })?;
    Ok(None)
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

/// At process 0: the other processes' results, received once from each,
/// in process order. Dropped before the last, it receives (and drops) the
/// rest, so no process waits forever on an analysis that failed.
pub(crate) struct Pending<'a> {
    exchange: &'a dyn Exchange,
    next: usize,
}

impl<'a> Pending<'a> {
    pub(crate) fn new(exchange: &'a dyn Exchange) -> Self {
        Pending { exchange, next: 1 }
    }

    /// The next process's ranks' results (an error it met is returned as
    /// this analysis's error), or `None` after the last process.
    pub(crate) fn next_part(&mut self) -> Result<Option<Vec<RankOut>>, AnalyzeError> {
        if self.next >= self.exchange.processes() {
            return Ok(None);
        }
        let from = self.next;
        self.next += 1;
        let bytes = self
            .exchange
            .receive(from)
            .map_err(|message| AnalyzeError::Exchange { message })?;
        let part: Result<Vec<RankOut>, String> =
            postcard::from_bytes(&bytes).map_err(|e| AnalyzeError::Exchange {
                message: format!("process {from}'s results cannot be decoded: {e}"),
            })?;
        part.map(Some).map_err(AnalyzeError::Remote)
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        while self.next < self.exchange.processes() {
            let _ = self.exchange.receive(self.next);
            self.next += 1;
        }
    }
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

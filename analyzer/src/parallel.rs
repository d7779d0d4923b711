//! One analysis computed by several processes (`mpirun -np N hyscope report`,
//! `ARCHITECTURE.md`, "Memory"): each process decodes the OpenMP and MPI rows
//! of a contiguous range of ranks ([`split`], in proportion to the threads
//! each analyses with) through the per-rank passes and hands each rank's
//! results to process 0: the OpenMP aggregates, the MPI rows' reduction
//! ([`crate::rank_mpi`]) and the rank's message sides and collective calls
//! ([`crate::aligned::sides`], what the other side of a message or
//! collective needs, as in Scalasca's parallel replay), never rows. A
//! message goes per batch of ranks (encoded and sent as the batch ends,
//! without waiting for it to arrive, so a process keeps its results compact,
//! process 0 decodes one batch at a time, and once done with its own ranks
//! takes the others' as they come). Process 0 adds them to its own in rank
//! order (so every floating-point sum adds the same values in the same order
//! as one process does), matches the messages and collectives from the
//! sides, reads the samples and symbols of every rank, and finishes the
//! analysis alone. The result is the single process's, byte for byte.
//!
//! The transport is the caller's ([`Exchange`]): the analyzer knows no MPI.

use std::path::Path;

use crate::error::AnalyzeError;
pub use crate::exchange::{Exchange, split};
use crate::load::{Loaded, Share, encode_handed, load_in};
use crate::{Analysis, AnalyzeOptions};

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
    crate::timing::start();
    if exchange.process() == 0 {
        return match load_in(dir, options, Share::Root(exchange))? {
            Loaded::Whole(whole) => {
                let (data, merged_omp, merged_mpi) = *whole;
                Ok(Some(crate::finish(data, merged_omp, merged_mpi, options)))
            }
            Loaded::Part => unreachable!("process 0 finishes the analysis"),
        };
    }
    // Its batches went as they were made; then an empty last one, or the
    // error, which is the last. A process of no threads takes no ranks
    // (`split`): it reads nothing.
    let idle = exchange.threads().get(exchange.process()) == Some(&0);
    let end = if idle {
        crate::timing::step(|| {
            format!(
                "process {}: no ranks (no CPU of its node left to analyse with), the trace not opened",
                exchange.process()
            )
        });
        Ok((Vec::new(), true))
    } else {
        match load_in(dir, options, Share::Worker(exchange)) {
            Ok(Loaded::Part) => Ok((Vec::new(), true)),
            Ok(Loaded::Whole(..)) => unreachable!("a worker hands its ranks on"),
            Err(e) => Err(e.to_string()),
        }
    };
    crate::timing::step(|| format!("process {}: its ranks analysed", exchange.process()));
    let sent = exchange
        .send_to_root(encode_handed(end)?)
        .and_then(|()| exchange.sent());
    sent.map_err(|message| AnalyzeError::Exchange { message })?;
    crate::timing::step(|| format!("process {}: its ranks handed on", exchange.process()));
    Ok(None)
}

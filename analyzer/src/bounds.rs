//! Bounding a row's times: to the process's exit and to the run's window.
//! Read by the loading of OpenMP rows ([`crate::load`]) and of MPI rows
//! ([`crate::mpi_rows`]) alike.

/// Clip `[start, end]` into `[lo, hi]` with `start <= end`; true if it changed.
pub fn clip(start: &mut i64, end: &mut i64, (lo, hi): (i64, i64)) -> bool {
    let (s, e) = (*start, *end);
    *start = s.clamp(lo, hi);
    *end = e.clamp(*start, hi);
    (s, e) != (*start, *end)
}

/// End an interval at the process's exit at the latest: what the runtime
/// closes while the collector encodes the trace is not run time.
pub fn clip_interval_to_exit(start: &mut i64, end: &mut i64, exit: i64) {
    if *end > exit {
        *end = exit.max((*start).min(exit));
        *start = (*start).min(exit);
    }
}

//! The run's window: the one time span of a run that every view states.
//!
//! It runs from the first to the last event of any rank — an OpenMP or an
//! MPI row, on rank 0's clock, as the loader leaves it: ended at the rank's
//! exit (what the runtime closes while the collector encodes the trace is
//! not run time, [`crate::bounds`]) and bounded to the run. Samples and
//! phases do not stretch it: the collector samples before the program's
//! first event and at its exit. The report's duration is its length
//! ([`crate::model::RunFacts::duration_s`], but under `--phase`); the TUI's
//! and the GUI's timelines open on it and measure their rulers from its
//! start; the exports carry it as metadata and mark what lies outside it.
//!
//! A program that put another in its place by an exec ([`exec_end`]) runs
//! until that exec call, as a program that exits runs until its exit: its
//! span (and with it its application window, the run's window and its
//! process's time line, [`crate::processes`]) reaches the exec, though no
//! row of it does (the runtime never ends the initial thread's intervals
//! of a program that an exec replaced, which are what reach a program's
//! exit otherwise). Its start is its first event, as every program's.

use hyscope_format::{ProcessEnd, RankInfo};

use crate::model::RunWindow;
use crate::trace_data::RankData;

/// What a view that shows a trace's rows as recorded needs of the analysis
/// (the exports): the run's window, the worker join-barrier ends the
/// analysis clips and the ranks it leaves out for a damaged part, as
/// [`crate::analyze`] states them in its [`RunFacts`](crate::model::RunFacts)
/// (`window`, `clipped_join_waits`, `clipped_join_wait_s`) and
/// [`crate::Analysis::ranks_left_out`]; [`crate::run_extent`] computes it
/// without the rest of the analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct RunExtent {
    pub window: RunWindow,
    pub clipped_join_waits: u64,
    pub clipped_join_wait_s: f64,
    /// The ranks left out, each damaged file with its problem
    /// ([`crate::damaged_parts`]): a view leaves them out too.
    pub ranks_left_out: Vec<crate::model::LeftOutPart>,
}

/// The window of these spans (start, end): the first start to the last
/// end of those that last (end after start); empty (0, 0) if none does.
pub fn of_spans(spans: impl IntoIterator<Item = (i64, i64)>) -> RunWindow {
    spans
        .into_iter()
        .filter(|(s, e)| e > s)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .map_or_else(RunWindow::default, |(start_ns, end_ns)| RunWindow {
            start_ns,
            end_ns,
        })
}

/// When `program` called the exec that put another program in its place
/// (its own clock): the collector stamps the application's end
/// (`RankInfo::exit_ns`) in that call, before the exec. None for a program
/// that did not end by an exec.
pub fn exec_end(program: &RankInfo) -> Option<i64> {
    match program.end {
        Some(ProcessEnd::Exec { .. }) => program.exit_ns,
        _ => None,
    }
}

/// A program's span (first start, last end) reaching to its exec call
/// `exec` ([`exec_end`], on the span's clock): a program with no event has
/// no span still.
pub fn through_exec(span: Option<(i64, i64)>, exec: Option<i64>) -> Option<(i64, i64)> {
    match (span, exec) {
        (Some((first, last)), Some(e)) => Some((first, last.max(e))),
        (span, _) => span,
    }
}

/// The run's window over every rank's whole run (its OpenMP and MPI rows
/// before a focus cut them: [`RankData::whole_span`]).
pub fn of_ranks(ranks: &[RankData]) -> RunWindow {
    of_spans(ranks.iter().filter_map(RankData::whole_span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_data::MpiSpans;

    #[test]
    fn first_to_last_event_of_the_ranks_that_ran() {
        assert_eq!(of_spans([]), RunWindow::default());
        // A rank with a single instant (no duration) does not stretch it.
        let w = of_spans([(100, 900), (50, 50), (120, 1_000)]);
        assert_eq!((w.start_ns, w.end_ns), (100, 1_000));
        assert_eq!(w.duration_ns(), 900);
        assert!(w.contains(100) && w.contains(1_000) && !w.contains(1_001));
    }

    #[test]
    fn a_program_ended_by_an_exec_runs_until_the_exec() {
        let program = |end, exit_ns| RankInfo {
            end: Some(end),
            exit_ns,
            ..RankInfo::default()
        };
        let exec = ProcessEnd::Exec {
            path: "/bin/b".into(),
        };
        assert_eq!(exec_end(&program(exec.clone(), Some(900))), Some(900));
        assert_eq!(exec_end(&program(exec, None)), None);
        assert_eq!(exec_end(&program(ProcessEnd::Finished, Some(900))), None);
        assert_eq!(through_exec(Some((100, 500)), Some(900)), Some((100, 900)));
        // An exec stamped before a row's end (rows are ended at it anyway).
        assert_eq!(through_exec(Some((100, 500)), Some(400)), Some((100, 500)));
        assert_eq!(through_exec(None, Some(900)), None);
        assert_eq!(through_exec(Some((100, 500)), None), Some((100, 500)));
    }

    #[test]
    fn a_focus_does_not_change_it() {
        // The whole run's spans, not the focus's compacted axis (first_ns, last_ns).
        let rd = RankData {
            omp_whole_span: Some((200, 700)),
            omp_span: Some((0, 50)),
            mpi_spans: MpiSpans {
                whole: Some((150, 800)),
                ..MpiSpans::default()
            },
            first_ns: 0,
            last_ns: 50,
            ..RankData::default()
        };
        let w = of_ranks(&[rd]);
        assert_eq!((w.start_ns, w.end_ns), (150, 800));
    }
}

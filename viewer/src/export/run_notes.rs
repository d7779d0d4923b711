//! What an export says about the run besides its events: the run's window
//! ([`hyscope_analyzer::run_window`], computed by the analysis's own
//! loader, [`hyscope_analyzer::run_extent`], so an export states the
//! report's duration to the nanosecond without running the rest of the
//! analysis), what lies outside it, and the intervals the analysis clips but
//! an export keeps as recorded, each with why.

use std::collections::HashMap;
use std::path::Path;

use hyscope_analyzer::{DEFAULT_MEMORY, RunWindow};

use crate::units;

/// The analysis' view of the run, as an export states it.
#[derive(Default)]
pub(crate) struct RunNotes {
    /// The run's window (rank 0's clock); None when the analysis failed.
    pub window: Option<RunWindow>,
    /// Why there is no window: the analysis' error, naming the file.
    pub unknown: Option<String>,
    /// Worker join-barrier ends the analysis clips at their region's end:
    /// how many, and the time past the end (seconds).
    join_clipped: (u64, f64),
    /// Each rank's exit on rank 0's clock: the analysis ends its rows there.
    exits: HashMap<u32, i64>,
    /// What the export keeps that the analysis does not count as run time.
    pub kept: Kept,
    /// Phases parts that cannot be read, in words: their ranks' phases are
    /// not in the export.
    unread_phases: Vec<String>,
    /// The ranks the analysis leaves out for a damaged part, with their
    /// files ([`hyscope_analyzer::damaged_parts`]): the export leaves them out.
    pub left_out: Vec<hyscope_analyzer::model::LeftOutPart>,
    /// Sends and receives whose other side is on a rank left out.
    partner_left_out: (u64, u64),
}

/// Counts of what an export keeps outside the run's window or past a rank's exit.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Kept {
    /// OpenMP and MPI rows and phases that start before the window or end after it.
    pub events_outside: u64,
    /// Sampled values outside the window.
    pub samples_outside: u64,
    /// OpenMP and MPI rows that end after their rank's exit.
    pub past_exit: u64,
}

impl RunNotes {
    /// The window of the trace in `dir` and what the analysis clips, as
    /// `hyscope report` states them (under the report's default memory
    /// limit). `exits`: each rank's exit on rank 0's clock.
    pub fn analyse(dir: &Path, exits: HashMap<u32, i64>) -> RunNotes {
        match hyscope_analyzer::run_extent(dir, DEFAULT_MEMORY) {
            Ok(x) => RunNotes {
                window: Some(x.window).filter(|w| !w.is_empty()),
                unknown: x
                    .window
                    .is_empty()
                    .then(|| "no OpenMP or MPI event in the trace".to_string()),
                join_clipped: (x.clipped_join_waits, x.clipped_join_wait_s),
                exits,
                left_out: x.ranks_left_out,
                ..RunNotes::default()
            },
            Err(e) => RunNotes {
                unknown: Some(format!("the analysis of the trace failed: {e}")),
                exits,
                ..RunNotes::default()
            },
        }
    }

    /// Whether `[start, end]` (rank 0's clock) reaches outside the window.
    pub fn outside(&self, start: i64, end: i64) -> bool {
        self.window.is_some_and(|w| w.leaves(start, end))
    }

    /// Count one OpenMP or MPI row of `rank` the export writes.
    pub fn tally_row(&mut self, rank: u32, start: i64, end: i64) {
        self.kept.events_outside += u64::from(self.outside(start, end));
        self.kept.past_exit += u64::from(self.exits.get(&rank).is_some_and(|&x| end > x));
    }

    /// A phases part that cannot be read: its rank's phases are left out.
    pub fn unread_phases(
        &mut self,
        part: &hyscope_analyzer::damaged_parts::DamagedPart,
        dir: &Path,
    ) {
        self.unread_phases.push(format!(
            "the phases of rank {r} cannot be read ({}: {}): this export has none of rank {r}'s phases",
            part.file(dir),
            part.problem,
            r = part.rank
        ));
    }

    /// Sends and receives whose other side is on a rank left out: no flow
    /// and no message event of theirs is written.
    pub fn partner_left_out(&mut self, sends: u64, recvs: u64) {
        self.partner_left_out = (sends, recvs);
    }

    /// Count one phase the export writes.
    pub fn tally_phase(&mut self, start: i64, end: i64) {
        self.kept.events_outside += u64::from(self.outside(start, end));
    }

    /// Count one sampled value the export writes.
    pub fn tally_sample(&mut self, t: i64) {
        self.kept.samples_outside += u64::from(self.outside(t, t));
    }

    /// What the export says besides its events, in words, one note each:
    /// the window (or why it is not stated), what lies outside it, and
    /// each kind of interval kept longer than the analysis counts it.
    /// `marked`: how the export marks an event outside the window.
    pub fn notes(&self, marked: &str) -> Vec<String> {
        let mut out = Vec::new();
        match (&self.window, &self.unknown) {
            (Some(w), _) => out.push(format!(
                "run window: {} ({} ns), the duration `hyscope report` gives: from the first to the last \
                 OpenMP or MPI event of any rank, each rank's rows ended at its exit",
                units::secs(w.duration_s()),
                w.duration_ns()
            )),
            (None, Some(why)) => out.push(format!("run window not stated: {why}")),
            (None, None) => {}
        }
        let k = self.kept;
        if k.events_outside + k.samples_outside > 0 {
            out.push(format!(
                "outside the run window, kept as recorded: {} events and {} sampled values \
                 (the samplers run before the program's first event and at its exit; rows can end \
                 after their rank's exit){marked}",
                k.events_outside, k.samples_outside
            ));
        }
        if k.past_exit > 0 {
            out.push(format!(
                "{} OpenMP or MPI rows end after their rank's exit (the runtime closed them while \
                 the collector wrote the trace): the analysis ends them at the exit, this export \
                 keeps their recorded ends",
                k.past_exit
            ));
        }
        out.extend(self.unread_phases.iter().cloned());
        let (s, r) = self.partner_left_out;
        if s + r > 0 {
            out.push(format!(
                "{s} point-to-point sends and {r} receives have their other side on a rank left out \
                 (a part of it cannot be read): this export has no message for them, as the \
                 analysis counts them apart from its message list"
            ));
        }
        let (n, s) = self.join_clipped;
        if n > 0 {
            out.push(format!(
                "{n} worker join-barrier ends run past their region's end ({} of serial time): \
                 libomp dispatches a worker's join-barrier end only when the worker wakes for the \
                 next region (docs/platform.md, \"Quirks\"), so the analysis clips them at the \
                 master's parallel end and does not book that time as barrier wait; this export \
                 keeps them as recorded",
                units::secs(s)
            ));
        }
        out
    }
}

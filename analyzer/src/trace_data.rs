//! What the analysis passes read: every rank's rows on rank 0's clock, the
//! manifest, the resolved code addresses and what the loader found damaged
//! (made by `load`, read by every pass).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use hyscope_format::{Manifest, MpiRecord, PhaseRecord, SampleRecord};

use crate::model::{CodeLocation, LeftOutPart, TraceProblem, UnreadPhases};

/// One rank's rows, on rank 0's clock.
#[derive(Debug, Default, Clone)]
pub struct RankData {
    pub rank: u32,
    /// OpenMP rows read (the rows themselves are aggregated per rank by
    /// [`crate::omp::rank_pass`] while loading and then dropped: memory stays bounded).
    pub omp_rows: u64,
    /// Highest OpenMP thread index seen + 1.
    pub omp_threads: u32,
    /// What the spans read of the MPI rows (which are not kept: `mpi_rows`).
    pub mpi_spans: MpiSpans,
    /// MPI rows analysed (after a focus), request completions included.
    pub mpi_rows: u64,
    /// The MPI time of the application window ([`crate::rank_mpi`]).
    pub mpi_window: WindowMpi,
    /// The MPI time inside each of `phases`.
    pub phase_mpi: Vec<PhaseMpi>,
    pub samples: Vec<SampleRecord>,
    /// First and last timestamp of any row (rank 0's clock).
    pub first_ns: i64,
    pub last_ns: i64,
    /// The application's window: end of `MPI_Init(_thread)` to start of
    /// `MPI_Finalize` (first/last event without them). The fine-grain model and
    /// the POP metrics look at this window, so MPI start-up is not "communication".
    pub app_start_ns: i64,
    pub app_end_ns: i64,
    /// Named phase intervals, sorted by (thread, start, depth).
    pub phases: Vec<PhaseRecord>,
    /// The OpenMP time inside each of `phases` (summed while loading).
    pub phase_omp: Vec<PhaseOmp>,
    /// (code address, index in `phases`) → time of the OpenMP constructs and
    /// MPI calls there ([`crate::phases::code_in_windows`]).
    pub phase_code: HashMap<(u64, usize), i64>,
    /// First start and last end of the OpenMP rows analysed (rank 0's clock), if any.
    pub omp_span: Option<(i64, i64)>,
    /// The same over the whole run (differs from `omp_span` under a focus).
    pub omp_whole_span: Option<(i64, i64)>,
}

/// The MPI time of one rank's application window, as the POP metrics and
/// the fine-grain model read it (`pop::window_mpi`, where the rows are):
/// calls that start and end inside the window, request completions left out.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct WindowMpi {
    /// Inside parallel regions (the row says so, or it starts in one of the
    /// master's regions), per thread.
    pub in_parallel: BTreeMap<u32, i64>,
    /// The master thread's outside them.
    pub master_outside: i64,
    /// Every thread's outside them (the fine-grain model's T_comm).
    pub outside: i64,
    /// Every call's.
    pub all: i64,
}

/// The MPI time and calls inside one phase interval of a rank.
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PhaseMpi {
    /// Time of the calls (every thread's) inside the interval.
    pub mpi_ns: i64,
    /// The master thread's.
    pub master_mpi_ns: i64,
    /// Calls that start inside it.
    pub mpi_calls: u64,
}

/// What the spans of a rank read of its MPI rows (on rank 0's clock, over
/// the whole run).
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MpiSpans {
    /// First start and last end of the rows, if any.
    pub whole: Option<(i64, i64)>,
    /// The latest end of `MPI_Init(_thread)`.
    pub init_end: Option<i64>,
    /// The earliest start of `MPI_Finalize`.
    pub finalize_start: Option<i64>,
}

impl RankData {
    /// The rank's first and last event over the whole run (its OpenMP and
    /// MPI rows before a focus cut them), if it has any.
    pub fn whole_span(&self) -> Option<(i64, i64)> {
        self.omp_whole_span
            .into_iter()
            .chain(self.mpi_spans.whole)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }
}

impl MpiSpans {
    pub fn of(rows: &[MpiRecord]) -> MpiSpans {
        use hyscope_format::mpi_call as c;
        let whole = rows
            .iter()
            .map(|r| (r.start_ns, r.end_ns))
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        MpiSpans {
            whole,
            init_end: rows
                .iter()
                .filter(|m| m.call == c::MPI_Init || m.call == c::MPI_Init_thread)
                .map(|m| m.end_ns)
                .max(),
            finalize_start: rows
                .iter()
                .filter(|m| m.call == c::MPI_Finalize)
                .map(|m| m.start_ns)
                .min(),
        }
    }

    /// A rank's first and last event and its application window (first,
    /// last, window start, window end), from these and the span of its
    /// OpenMP rows.
    pub fn app_window(&self, omp_span: Option<(i64, i64)>) -> (i64, i64, i64, i64) {
        let (mut first, mut last) = omp_span.unwrap_or((i64::MAX, i64::MIN));
        if let Some((s, e)) = self.whole {
            first = first.min(s);
            last = last.max(e);
        }
        if first > last {
            (first, last) = (0, 0);
        }
        let start = self.init_end.unwrap_or(first).clamp(first, last);
        let end = self.finalize_start.unwrap_or(last).clamp(start, last);
        (first, last, start, end)
    }
}

/// Everything the analysis passes read.
#[derive(Debug, Default, Clone)]
pub struct TraceData {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Sorted by rank.
    pub ranks: Vec<RankData>,
    /// Which code location each rank's code addresses are: aggregates are
    /// keyed by the location's id ([`crate::code_map`]).
    pub code: crate::code_map::CodeMap,
    pub warnings: Vec<String>,
    /// What the loader found lost or damaged (becomes [`crate::Analysis::integrity`]).
    pub problems: Vec<TraceProblem>,
    /// The ranks whose phases could not be read (becomes
    /// [`crate::Analysis::phases_missing`]): their `phases` are empty.
    pub phases_missing: Vec<UnreadPhases>,
    /// The parts that left their rank out of the analysis (becomes
    /// [`crate::Analysis::ranks_left_out`]): those ranks are not in `ranks`.
    pub ranks_left_out: Vec<LeftOutPart>,
    /// Half the worst clock-offset round trip, ns.
    pub clock_error_ns: i64,
    pub clock_corrected: bool,
    /// The phase the OpenMP rows and phases were restricted to while loading;
    /// [`crate::analyze`] restricts the MPI rows and samples after matching.
    pub focus: Option<crate::focus::Focus>,
    /// Every rank's message sides and collective calls, in rank order (taken by the matching).
    pub sides: Vec<crate::aligned::RankSides>,
    /// Set when one rank's OpenMP rows alone took more than the memory limit
    /// left for them ([`crate::Analysis::memory_warning`]).
    pub memory_warning: Option<crate::model::MemoryExceeded>,
}

impl TraceData {
    /// The id of the code location `rank`'s code address `address` is
    /// ([`crate::code_map::CodeMap::note`]).
    pub fn canon(&self, rank: u32, address: u64) -> u64 {
        self.code.note(rank, address)
    }

    /// The code location of an id (an address no rank resolves is labelled
    /// `0x… (rank r, unresolved)`).
    pub fn location(&self, id: u64) -> CodeLocation {
        self.code.location(id)
    }
}

/// OpenMP time inside one phase interval of a rank, ns (all threads): summed
/// while loading (`phases::omp_in_windows`), since the OpenMP rows are not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PhaseOmp {
    /// Parallel regions (on their encountering threads).
    pub region_ns: i64,
    /// Regions minus their primary implicit task: fork and join (Mahéo 2015 §6.6.3).
    pub fork_join_ns: i64,
    /// Waiting in synchronisation regions (barriers, taskwait...), every
    /// thread, within the region's span (a worker's join-barrier wait outlasts
    /// its region with libomp: the rest is idling between regions).
    pub sync_wait_ns: i64,
}

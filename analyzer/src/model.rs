//! The public result model: plain serde data that `hyscope report`, the TUI and
//! the GUI render. No behaviour lives here beyond [`ns_to_s`], the one
//! conversion from trace nanoseconds to the model's seconds.
//!
//! Conventions:
//! - durations are seconds (`f64`, suffix `_s`), times on the timeline are ns
//!   of rank 0's clock (suffix `_ns`), sizes are bytes;
//! - ratios are plain fractions (0.12 = 12 %), speedups are factors (1.8 = 1.8×);
//! - a metric the trace cannot support is [`Observable::NotObservable`] with the
//!   reason, never a zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Trace nanoseconds as the model's seconds.
pub fn ns_to_s(ns: i64) -> f64 {
    ns as f64 * 1e-9
}

/// A value, or why the trace cannot give it.
///
/// JSON: `{"observed": <value>}` or `{"not_observable": "<why>"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Observable<T> {
    Observed(T),
    NotObservable(String),
}

impl<T> Observable<T> {
    pub fn not(reason: impl Into<String>) -> Self {
        Observable::NotObservable(reason.into())
    }
    pub fn get(&self) -> Option<&T> {
        match self {
            Observable::Observed(v) => Some(v),
            Observable::NotObservable(_) => None,
        }
    }
    pub fn get_mut(&mut self) -> Option<&mut T> {
        match self {
            Observable::Observed(v) => Some(v),
            Observable::NotObservable(_) => None,
        }
    }
    /// The reason when not observable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Observable::Observed(_) => None,
            Observable::NotObservable(r) => Some(r),
        }
    }
}

/// A code address resolved through the `symbols` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CodeLocation {
    pub address: u64,
    pub module: Option<String>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// What to print: `file:line` (file name only); without a line, the
    /// function and where it is in its module, `function (module+0x…)`
    /// ([`crate::code_map::label_of`]); else `0x…`.
    pub label: String,
    /// The location's place in its module's link-time layout, where it has no
    /// line (`addr2line -f -e <module> <offset>` finds it); `None` with a line
    /// and where the trace does not know it (format before 1.7).
    #[serde(default)]
    pub module_offset: Option<u64>,
}

/// Everything the analyzer computes for one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub trace_dir: String,
    pub run: RunFacts,
    /// POP efficiency metrics (multiplicative tree and additive losses).
    pub pop: Observable<Pop>,
    /// Per parallel region (by code location).
    pub regions: Observable<Vec<RegionStats>>,
    /// Per worksharing loop (by code location), with schedule tuning.
    pub loops: Observable<Vec<LoopStats>>,
    /// OpenMP runtime costs that are not per region: locks, tasks, idle threads,
    /// the fine-grain model per rank.
    pub openmp: Observable<OpenMpOverhead>,
    pub mpi: Observable<MpiProfile>,
    pub wait_states: Observable<WaitStates>,
    /// Every point-to-point message, matched across ranks on global time
    /// ([`crate::aligned::messages`]), and how many sends and receives found
    /// no other side.
    #[serde(default)]
    pub messages: crate::aligned::MessageList,
    pub memory: Observable<MemoryFootprint>,
    pub energy: Observable<Energy>,
    /// Ranked, biggest estimated cost first.
    pub findings: Vec<Finding>,
    /// Problems met while analysing (bad rows, unmatched messages...).
    pub warnings: Vec<String>,
    /// How complete and sound the trace is. The report, TUI and GUI show it
    /// first when it is not complete, so no number below is read as whole.
    #[serde(default)]
    pub integrity: TraceIntegrity,
    /// Per named phase (`phases` table), in order of first appearance.
    #[serde(default = "no_phases")]
    pub phases: Observable<Vec<PhaseStats>>,
    /// The ranks whose phases could not be read, each with its damaged file
    /// (also a problem of `integrity`): every phase number (`phases`, the
    /// energy per phase, the phase a finding names) leaves them out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases_missing: Vec<UnreadPhases>,
    /// Every part that left its rank out of the analysis as a whole (a part
    /// of its `omp`, `mpi` or `samples` table cannot be read, also a problem
    /// of `integrity`; [`crate::damaged_parts`]): every number covers the
    /// other ranks (`run.ranks_left_out`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks_left_out: Vec<LeftOutPart>,
    /// The phase the analysis is restricted to (`report --phase`), if any:
    /// every other section then describes that phase's time only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<FocusInfo>,
    /// Set when what the analysis must hold (the samples, matched messages
    /// and collectives, or one rank's OpenMP rows) exceeded
    /// [`crate::AnalyzeOptions::memory`]: the analysis went on above the
    /// limit. Not part of the result (it depends on the limit, the result
    /// does not), so not serialized; the report prints it on stderr.
    #[serde(skip)]
    pub memory_warning: Option<MemoryExceeded>,
}

/// What the analysis had to hold beyond its memory limit.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryExceeded {
    /// What took the memory, in words ("rank 3's 9000000 OpenMP rows").
    pub what: String,
    /// Bytes it took.
    pub need_bytes: u64,
    /// The limit ([`crate::AnalyzeOptions::memory`]) or the part of it left for `what`.
    pub limit_bytes: u64,
}

/// The restriction of an analysis to one phase ([`crate::focus`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FocusInfo {
    pub phase: String,
    /// Intervals of the phase, on every rank and thread.
    pub instances: u64,
    /// Time windows they make when merged (the same for every rank).
    pub windows: u64,
    /// Time inside the windows: the elapsed time of the restricted analysis.
    pub time_s: f64,
    /// The whole run's duration.
    pub run_duration_s: f64,
}

fn no_phases() -> Observable<Vec<PhaseStats>> {
    Observable::not("no phases recorded")
}

/// A rank whose phases are missing: a part of its `phases` table cannot be
/// read (`crate::damaged_parts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadPhases {
    pub rank: u32,
    /// The damaged file, relative to the trace directory.
    pub file: String,
}

/// A damaged part that left its rank out of the analysis
/// (`crate::damaged_parts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutPart {
    pub rank: u32,
    /// The damaged file, relative to the trace directory.
    pub file: String,
    /// What is wrong with it.
    pub problem: String,
}

/// One named phase over the run (`crate::phases`). Times are seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    pub name: String,
    /// Where its intervals come from: `api`, `mark`, `pcontrol`, `pause`, `nvtx`.
    pub source: String,
    /// Phases open around it (0 = outermost), the least over its instances.
    pub depth: u32,
    /// The phase around its first instance at the least depth, if any.
    pub parent: Option<String>,
    /// Intervals over all ranks and threads.
    pub instances: u64,
    /// Its time on the rank where it took longest (sum of that rank's intervals).
    pub time_s: f64,
    /// Its time per rank, mean over the ranks that have it.
    pub mean_rank_time_s: f64,
    /// `time_s` / the run's duration.
    pub share: f64,
    /// Inside its intervals, summed over ranks.
    #[serde(flatten)]
    pub inside: PhaseInside,
    /// POP's MPI efficiencies inside its intervals (None when it took no
    /// time, or when some ranks' phases cannot be read: `phases_missing`).
    pub mpi_parallel_efficiency: Option<f64>,
    pub mpi_load_balance: Option<f64>,
    pub mpi_communication_efficiency: Option<f64>,
    /// A repeated phase's repetitions (None when it ran once).
    pub iterations: Option<PhaseIterations>,
    /// The job's energy inside its intervals (the energy section's counters
    /// over the union of its intervals per host); None when not measured.
    pub energy_j: Option<f64>,
    /// `energy_j` × `time_s`, J·s.
    pub edp_js: Option<f64>,
    pub ranks: Vec<PhaseRank>,
}

/// A phase on one rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRank {
    pub rank: u32,
    pub instances: u64,
    pub time_s: f64,
    #[serde(flatten)]
    pub inside: PhaseInside,
}

/// What happened inside a phase's intervals: OpenMP parallel regions, their
/// fork/join overhead, synchronisation wait (all threads, within the
/// regions), MPI time (all threads) and the MPI calls begun there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseInside {
    pub omp_region_s: f64,
    pub omp_fork_join_s: f64,
    pub omp_sync_wait_s: f64,
    pub mpi_s: f64,
    pub mpi_calls: u64,
}

impl PhaseInside {
    /// Sum of two.
    pub fn add(&mut self, o: &PhaseInside) {
        self.omp_region_s += o.omp_region_s;
        self.omp_fork_join_s += o.omp_fork_join_s;
        self.omp_sync_wait_s += o.omp_sync_wait_s;
        self.mpi_s += o.mpi_s;
        self.mpi_calls += o.mpi_calls;
    }
}

/// The repetitions of a phase: one per time step (`hyscope_iteration`) when
/// its intervals carry one, else one per occurrence on each rank and thread;
/// a repetition's time is that of its slowest rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseIterations {
    pub by_time_step: bool,
    pub count: u64,
    pub mean_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// (max − min) / mean.
    pub spread: f64,
    /// The time step (or occurrence index) of the slowest repetition.
    pub slowest: i64,
    /// (time step or occurrence index, time) of each repetition.
    pub times_s: Vec<(i64, f64)>,
}

/// How complete and sound a trace is: what was lost and what was found damaged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceIntegrity {
    /// Each problem found, in the order found.
    pub problems: Vec<TraceProblem>,
}

impl TraceIntegrity {
    /// True when some data is missing: the numbers of the analysis undercount.
    pub fn is_partial(&self) -> bool {
        self.problems.iter().any(|p| p.data_lost)
    }

    /// The heading above the problems, wherever they are shown.
    pub fn title(&self) -> &'static str {
        if self.is_partial() {
            "PARTIAL TRACE: the numbers below leave out what is listed here"
        } else {
            "Trace notices"
        }
    }
}

impl std::fmt::Display for TraceProblem {
    /// `rank 1, omp/rank=1: what is wrong`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut place = Vec::new();
        if let Some(r) = self.rank {
            place.push(format!("rank {r}"));
        }
        if let Some(file) = &self.file {
            place.push(file.clone());
        }
        if !place.is_empty() {
            write!(f, "{}: ", place.join(", "))?;
        }
        f.write_str(&self.what)
    }
}

/// One thing wrong with a trace, named so a user can find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceProblem {
    /// The file concerned, relative to the trace directory, when there is one.
    pub file: Option<String>,
    /// The rank concerned, when there is one.
    pub rank: Option<u32>,
    /// What is wrong, as a user reads it (e.g. "rank 1 was killed by signal 9").
    pub what: String,
    /// True when events are missing because of it; false for a notice that
    /// changes no number.
    pub data_lost: bool,
}

/// The run's window on rank 0's clock, ns: its first to its last event
/// ([`crate::run_window`], the one definition every view reads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunWindow {
    pub start_ns: i64,
    pub end_ns: i64,
}

impl RunWindow {
    pub fn duration_ns(&self) -> i64 {
        (self.end_ns - self.start_ns).max(0)
    }

    pub fn duration_s(&self) -> f64 {
        ns_to_s(self.duration_ns())
    }

    /// Whether no rank ran (nothing to state).
    pub fn is_empty(&self) -> bool {
        self.end_ns <= self.start_ns
    }

    /// Whether the instant `t` is inside (ends included).
    pub fn contains(&self, t: i64) -> bool {
        self.start_ns <= t && t <= self.end_ns
    }

    /// Whether `[start, end]` reaches outside: it starts before or ends after.
    pub fn leaves(&self, start: i64, end: i64) -> bool {
        !self.is_empty() && (start < self.start_ns || end > self.end_ns)
    }
}

/// Facts about the run, mostly from the manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFacts {
    pub command: Vec<String>,
    pub start_time: String,
    /// `profile` or `trace`.
    pub mode: String,
    pub ranks: u32,
    /// OpenMP threads seen per rank (index = rank).
    pub threads_per_rank: Vec<u32>,
    pub hosts: Vec<String>,
    /// Ranks per host (index as `hosts`).
    pub ranks_per_host: Vec<u32>,
    /// Wall time from the first to the last event of the job (rank 0's
    /// clock): the length of `window`, but under a focus (`--phase`), where
    /// it is the phase's time.
    pub duration_s: f64,
    /// The run's window ([`crate::run_window`]): what the report's duration
    /// measures and every view's timeline and export states.
    #[serde(default)]
    pub window: RunWindow,
    /// Per rank: first to last event.
    pub rank_duration_s: Vec<f64>,
    pub mpi_library: Option<String>,
    pub mpi_flavour: Option<String>,
    pub thread_level_requested: Option<String>,
    pub thread_level_provided: Option<String>,
    pub openmp_runtime: Option<String>,
    pub omp_events: u64,
    pub mpi_events: u64,
    pub sample_events: u64,
    pub dropped_events: u64,
    /// Capability gaps of the runtime and samplers, in words.
    pub missing: Vec<String>,
    /// True when cross-node clock offsets were applied.
    pub clock_corrected: bool,
    /// Worst clock-offset uncertainty (half the minimum round trip), seconds.
    pub clock_error_s: f64,
    /// Parallel-region instances that ran on one thread (`if(0)`, nested...).
    pub serialized_regions: u64,
    /// Worker join-barrier intervals clipped at the master's `parallel_end`
    /// (platform facts: libomp dispatches them late).
    pub clipped_join_waits: u64,
    /// Seconds removed by that clipping (serial time that would have been booked as barrier wait).
    pub clipped_join_wait_s: f64,
    /// Each rank's CPUs against its OpenMP threads (`placement`).
    #[serde(default)]
    pub placement: Vec<RankPlacement>,
    /// The collector's own work at the end of `MPI_Init`, the slowest
    /// rank's (seconds; the rank files' `init_ns`): the application's
    /// `MPI_Init` returned after it, and the `MPI_Init` rows include it.
    #[serde(default)]
    pub collector_init_s: f64,
    /// Processes that ranks started (fork, exec) and that recorded events,
    /// and programs that an exec put in a recording program's place: each
    /// has an id after the job's ranks, counted in `ranks`.
    #[serde(default)]
    pub children: Vec<ChildProcess>,
    /// The programs of the trace that ended by an exec (`crate::processes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub execs: Vec<ExecEnd>,
    /// Ranks left out of the analysis because a part of theirs cannot be
    /// read (`Analysis::ranks_left_out` names the files): `ranks` and every
    /// per-rank list still count their ids, no number covers them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks_left_out: Vec<u32>,
    /// Ranks analysed (the trace's ranks but those left out).
    #[serde(default)]
    pub ranks_analysed: u32,
}

impl RunFacts {
    /// "N of M ranks analysed (rank … left out: …)" when ranks were left
    /// out, as every view says it; None when every rank was analysed.
    pub fn ranks_analysed_label(&self) -> Option<String> {
        if self.ranks_left_out.is_empty() {
            return None;
        }
        let n = self.ranks_left_out.len();
        Some(format!(
            "{} of {} ranks analysed ({} {} left out: a trace file of {} cannot be read)",
            self.ranks_analysed,
            self.ranks_analysed as usize + n,
            if n == 1 { "rank" } else { "ranks" },
            hyscope_format::rank_ranges::rank_ranges(self.ranks_left_out.iter().copied()),
            if n == 1 { "it" } else { "each" },
        ))
    }

    /// The lines about its processes beyond the ranks ([`process_lines`]).
    pub fn process_lines(&self) -> Vec<ProcessLine> {
        process_lines(&self.children, &self.execs)
    }

    /// What the run's counts over ranks (events, CPU placement) cover when
    /// ranks were left out, as every view says it: `1 of 2 ranks, rank 0
    /// left out`; None when every rank was analysed.
    pub fn counted_ranks(&self) -> Option<String> {
        if self.ranks_left_out.is_empty() {
            return None;
        }
        let n = self.ranks_left_out.len();
        Some(format!(
            "{} of {} ranks, {} {} left out",
            self.ranks_analysed,
            self.ranks_analysed as usize + n,
            if n == 1 { "rank" } else { "ranks" },
            hyscope_format::rank_ranges::rank_ranges(self.ranks_left_out.iter().copied()),
        ))
    }
}

/// A process a rank started, or a program an exec put in the place of one
/// that recorded, with an id of its own in the trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildProcess {
    /// Its id in the trace (where a rank number goes).
    pub rank: u32,
    /// The rank it comes from.
    pub of_rank: u32,
    pub pid: u32,
    pub parent_pid: u32,
    pub command: Vec<String>,
    /// The id of the program it replaced by an exec (the same process, with
    /// the same pid); None for a process a rank started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_of: Option<u32>,
}

impl ChildProcess {
    /// One line for it, as every view writes it: its id, where it comes
    /// from, its command.
    pub fn describe(&self) -> String {
        match self.exec_of {
            Some(of) => format!(
                "rank {} is pid {}, the program rank {of} exec'd: {}",
                self.rank,
                self.pid,
                self.command.join(" ")
            ),
            None => format!(
                "rank {} is pid {}, started by rank {} (parent pid {}): {}",
                self.rank,
                self.pid,
                self.of_rank,
                self.parent_pid,
                self.command.join(" ")
            ),
        }
    }
}

/// A program that ended by an exec: it wrote everything it recorded first,
/// and its process went on, under the same pid, as another program.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecEnd {
    /// Its id in the trace.
    pub rank: u32,
    pub pid: u32,
    /// The program the exec named (empty where the trace does not say).
    pub path: String,
    /// The id the next program of the process recorded under; None when it
    /// recorded nothing.
    pub next: Option<u32>,
}

impl ExecEnd {
    /// One line for it, as every view writes it.
    pub fn describe(&self) -> String {
        let program = if self.path.is_empty() {
            "another program".to_string()
        } else {
            self.path.clone()
        };
        let then = match self.next {
            Some(next) => format!("which recorded as rank {next}"),
            None => "which recorded nothing".to_string(),
        };
        format!(
            "rank {} (pid {}) exec'd {program}, {then}; everything rank {} recorded before is in the trace",
            self.rank, self.pid, self.rank
        )
    }
}

/// One line about a run's processes beyond its ranks, as every view lists
/// it (the report's Run section, the TUI's and the GUI's summaries): what
/// it tells of ([`ProcessLine::CHILD`], [`ProcessLine::PROGRAM`],
/// [`ProcessLine::EXEC`]) and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLine {
    pub label: &'static str,
    pub text: String,
}

impl ProcessLine {
    /// A process a rank started.
    pub const CHILD: &'static str = "child process";
    /// A program an exec put in the place of one that recorded (the same
    /// process: not a child).
    pub const PROGRAM: &'static str = "new program";
    /// A program that ended by an exec.
    pub const EXEC: &'static str = "exec";
}

/// The lines about the run's processes beyond its ranks, in the order every
/// view lists them: each child process and program exec'd
/// ([`ChildProcess::describe`]), then each program that ended by an exec
/// ([`ExecEnd::describe`]), in id order; none when every id is a rank.
pub fn process_lines(children: &[ChildProcess], execs: &[ExecEnd]) -> Vec<ProcessLine> {
    let children = children.iter().map(|c| ProcessLine {
        label: if c.exec_of.is_some() {
            ProcessLine::PROGRAM
        } else {
            ProcessLine::CHILD
        },
        text: c.describe(),
    });
    let execs = execs.iter().map(|e| ProcessLine {
        label: ProcessLine::EXEC,
        text: e.describe(),
    });
    children.chain(execs).collect()
}

/// The number of ranks as every view writes it: the ids in the trace, with
/// the child processes and the programs exec'd among them said apart
/// (`2 (+ 4 child processes)`, `1 (+ 2 exec'd programs)`): neither is a
/// rank of the job.
pub fn ranks_label(ids: u32, children: &[ChildProcess]) -> String {
    if children.is_empty() {
        return ids.to_string();
    }
    let execd = children.iter().filter(|c| c.exec_of.is_some()).count();
    let forked = children.len() - execd;
    let mut apart = Vec::new();
    if forked > 0 {
        apart.push(match forked {
            1 => "1 child process".to_string(),
            n => format!("{n} child processes"),
        });
    }
    if execd > 0 {
        apart.push(match execd {
            1 => "1 exec'd program".to_string(),
            n => format!("{n} exec'd programs"),
        });
    }
    format!(
        "{} (+ {})",
        (ids as usize).saturating_sub(children.len()),
        apart.join(", ")
    )
}

/// The CPUs a rank may run on, against the OpenMP threads it runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankPlacement {
    pub rank: u32,
    pub host: String,
    /// OpenMP threads the rank ran.
    pub threads: u32,
    /// Its affinity mask at start.
    pub cpus: Vec<u32>,
    /// CPUs online on its host (0 = not recorded).
    pub host_cpus: u32,
    /// OpenMP threads of all ranks on its host.
    pub host_threads: u32,
    /// The CPUs its OpenMP threads were bound to in the run (the union of
    /// their masks; empty when not recorded): fewer than `cpus` when
    /// `OMP_PROC_BIND`/`OMP_PLACES` pinned threads together.
    #[serde(default)]
    pub thread_cpus: Vec<u32>,
    /// Each OpenMP thread's busy time over the run (s; implicit tasks less
    /// barriers and lock waits): the work a profile-mode trace, which has no
    /// per-region times per thread, gives the processor-sharing model.
    #[serde(default)]
    pub thread_busy_s: Vec<f64>,
}

/// One node of the POP efficiency tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PopNode {
    pub name: String,
    pub value: Observable<f64>,
    /// The formula, in words and symbols.
    pub formula: String,
    pub children: Vec<PopNode>,
}

/// POP metrics for a hybrid run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pop {
    /// Multiplicative model: each node is the product of its children.
    pub tree: PopNode,
    /// Additive model: `1 = parallel efficiency + Σ losses`, each a fraction of all core-time.
    pub additive: Vec<PopLoss>,
    /// Useful compute time per (rank, thread), seconds: one row per
    /// process of `scope.processes`, its programs' threads added by index.
    pub useful_s: Vec<Vec<f64>>,
    /// Cores (threads) counted: Σ over the ranks' processes of the most
    /// threads of any of its programs.
    pub cores: u32,
    /// Elapsed time the efficiencies refer to.
    pub elapsed_s: f64,
    /// What the metrics count as the job's ranks, and what they leave out.
    #[serde(default)]
    pub scope: PopScope,
}

/// Which of the trace's ids the POP metrics count, and as what
/// (`crate::processes::Processes`): POP's processes are the job's ranks,
/// each observed over the whole elapsed time; the programs a rank's process
/// ran one after the other (exec) are that one process's time line, and a
/// child process a rank started is not a rank of the job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PopScope {
    /// The ranks counted, one per row of [`Pop::useful_s`]: each one's
    /// programs inside the window, in the order they ran (the rank's own
    /// first; more than one where its process exec'd).
    pub processes: Vec<Vec<u32>>,
    /// Programs of those processes that ran outside the window (exec'd
    /// after `MPI_Finalize`): not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_window: Vec<u32>,
    /// Child processes ranks started (`fork`), with the programs they
    /// exec'd: not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_processes: Vec<u32>,
}

impl PopScope {
    /// What the metrics count and leave out, one line each, as every view
    /// writes it under the POP metrics; none when every id is a rank.
    pub fn lines(&self) -> Vec<String> {
        let ranks = |ids: &[u32]| {
            let list = hyscope_format::rank_ranges::rank_ranges(ids.iter().copied());
            if ids.len() == 1 {
                format!("rank {list}")
            } else {
                format!("ranks {list}")
            }
        };
        let mut out = Vec::new();
        let joined: Vec<&Vec<u32>> = self.processes.iter().filter(|p| p.len() > 1).collect();
        if !joined.is_empty() {
            let shown: Vec<String> = joined
                .iter()
                .take(4)
                .map(|p| {
                    let chain: Vec<String> = p.iter().map(u32::to_string).collect();
                    format!("rank {} (programs {})", p[0], chain.join(", "))
                })
                .collect();
            let more = match joined.len() {
                n if n > 4 => format!(" and {} more", n - 4),
                _ => String::new(),
            };
            out.push(format!(
                "one process per rank, its exec'd programs joined: {}{more}",
                shown.join(", ")
            ));
        }
        if !self.outside_window.is_empty() {
            out.push(format!(
                "not counted: {}, exec'd after MPI_Finalize (outside the window)",
                ranks(&self.outside_window)
            ));
        }
        if !self.child_processes.is_empty() {
            out.push(format!(
                "not counted: {}, child processes (not ranks of the job)",
                ranks(&self.child_processes)
            ));
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PopLoss {
    pub name: String,
    pub fraction: f64,
    pub seconds_core: f64,
    pub formula: String,
}

/// Barrier totals: total = wait + synchronisation overhead (Mahéo 2015, §6.7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BarrierStats {
    /// Σ over threads of time inside barriers.
    pub total_s: f64,
    /// Σ over threads of waiting time (imbalance).
    pub wait_s: f64,
    /// total − wait: the runtime's own synchronisation work.
    pub sync_overhead_s: f64,
    /// Barrier instances (per thread) seen.
    pub count: u64,
    /// Whether the wait part was observed (sync_region_wait callbacks, or
    /// the team's arrival times).
    pub wait_observed: bool,
    /// The wait was taken from the team's arrival times (time to the last
    /// thread's arrival), not from the runtime's wait events, which on libomp
    /// span the whole barrier (`omp::arrival_idle_of`).
    #[serde(default)]
    pub wait_from_arrivals: bool,
}

/// One thread's share of a region (summed over instances).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadRegionStats {
    pub rank: u32,
    pub thread: u32,
    /// Implicit-task time (clipped to the region).
    pub implicit_task_s: f64,
    /// Implicit task minus synchronisation (barriers, taskwait, lock wait).
    pub busy_s: f64,
    pub barrier: BarrierStats,
    /// Time from the region's begin to this thread's implicit-task begin (activation).
    pub activation_s: f64,
    /// Time from this thread's implicit-task end (clipped) to the region end.
    pub release_s: f64,
}

/// One parallel region (code location), over all ranks and instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegionStats {
    pub location: CodeLocation,
    pub instances: u64,
    pub serialized_instances: u64,
    pub ranks: Vec<u32>,
    /// Largest team seen.
    pub team_size: u32,
    /// Σ of the encountering thread's region durations.
    pub time_s: f64,
    /// The scatter of the instances' durations `time_s` sums (None below 2
    /// instances), or why the trace cannot give it.
    #[serde(default)]
    pub time_scatter: Observable<Option<Scatter>>,
    pub share_of_run: f64,
    /// Σ master implicit-task time.
    pub implicit_task_s: f64,
    /// Fork/join (management) overhead = region time − master implicit-task time
    /// (Mahéo 2015, §6.6.3).
    pub fork_join_s: f64,
    /// fork_join / region time.
    pub fork_join_fraction: f64,
    /// Mean and max fork/join overhead per instance.
    pub fork_join_mean_s: f64,
    pub fork_join_max_s: f64,
    /// The scatter of the instances' fork/join `fork_join_s` sums, or why
    /// the trace cannot give it (profile mode: a difference of totals).
    #[serde(default)]
    pub fork_join_scatter: Observable<Option<Scatter>>,
    /// Team totals.
    pub barrier: BarrierStats,
    /// max/mean of per-thread busy time (1 = balanced).
    pub imbalance: f64,
    pub per_thread: Vec<ThreadRegionStats>,
}

impl RegionStats {
    /// Whether the region's per-thread times were recorded: in trace mode.
    /// Profile mode keeps each thread's totals over the run, not per region,
    /// so the region's barrier, wait and imbalance are not known there.
    pub fn per_thread_observed(&self) -> bool {
        !self.per_thread.is_empty()
    }
}

/// A thread's part of one loop (summed over instances).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopThreadStats {
    pub rank: u32,
    pub thread: u32,
    /// Time inside the loop (work begin → end).
    pub time_s: f64,
    /// Time executing chunks (or the loop time when no chunks are recorded).
    pub busy_s: f64,
    /// Iterations executed (from chunks), when observable.
    pub iterations: Option<u64>,
    pub chunks: Option<u64>,
}

/// One simulated schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatedSchedule {
    /// `static`, `static,8`, `dynamic,64`, `guided,4`...
    pub schedule: String,
    /// Predicted loop time per instance (max over threads), seconds.
    pub predicted_s: f64,
    /// Predicted speedup over the measured loop time.
    pub speedup: f64,
    /// max/mean of predicted per-thread busy time.
    pub imbalance: f64,
    pub chunks: u64,
}

/// Cost of iterations across the iteration space, reconstructed from the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostProfile {
    /// `uniform`, `increasing`, `decreasing`, `triangular`... in words.
    pub shape: String,
    /// Mean cost per iteration (ns) in equal bins of the iteration space.
    pub bins_ns: Vec<f64>,
    /// How it was reconstructed (`chunks` or `per-thread static ranges`).
    pub source: String,
}

/// The tuner's advice for one loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The clause to write, e.g. `schedule(dynamic,64)`, or `keep schedule(static)`.
    pub clause: String,
    /// Value for `OMP_SCHEDULE` (for `schedule(runtime)` loops), e.g. `dynamic,64`.
    pub omp_schedule: String,
    pub predicted_s: f64,
    pub predicted_speedup: f64,
    /// Run time saved per run (all instances, all ranks' critical path), seconds.
    pub predicted_gain_s: f64,
    /// One line of evidence, e.g. "stencil.c:42: schedule(dynamic,64) — predicted 1.8× on this loop, 12 % of run time; triangular cost, imbalance 1.67 under static".
    pub evidence: String,
    /// Which rule decided (simulation, Mahéo 2015 §6.6.2 empirical rule...).
    pub rule: String,
}

/// One worksharing loop (code location), over all ranks and instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopStats {
    pub location: CodeLocation,
    /// Location of the enclosing parallel region.
    pub region: Option<CodeLocation>,
    /// Schedule reported by the runtime (`static`, `dynamic`, `guided`), or why not.
    pub schedule: Observable<String>,
    pub instances: u64,
    /// Mean trip count over instances.
    pub trip_count: u64,
    pub team_size: u32,
    /// Σ loop time (per instance: first thread in → last thread out).
    pub time_s: f64,
    /// The scatter of the instances' times `time_s` sums (profile mode:
    /// of its slowest thread's), or why the trace cannot give it.
    #[serde(default)]
    pub time_scatter: Observable<Option<Scatter>>,
    pub share_of_run: f64,
    pub per_thread: Vec<LoopThreadStats>,
    /// max/mean of per-thread busy time.
    pub imbalance: f64,
    pub chunks: Observable<u64>,
    pub mean_chunk_iterations: Observable<f64>,
    /// Measured cost of handing out one chunk (median gap between a thread's consecutive chunks).
    pub dispatch_cost_s: Observable<f64>,
    /// Σ gaps between consecutive chunks of a thread (scheduling overhead).
    pub scheduling_overhead_s: Observable<f64>,
    pub cost_profile: Observable<CostProfile>,
    pub simulations: Observable<Vec<SimulatedSchedule>>,
    pub recommendation: Observable<Recommendation>,
}

impl LoopStats {
    /// The `n` fastest simulated schedules as the views list them
    /// (`static,4 1.30×`), and the advised one after them where it is not
    /// among them (a tie within 1 % goes to the simpler schedule and the
    /// larger chunk, which may rank lower): None without simulations.
    pub fn fastest_simulated(&self, n: usize) -> Option<String> {
        let sims = self.simulations.get()?;
        let text = |s: &SimulatedSchedule| format!("{} {:.2}×", s.schedule, s.speedup);
        let mut listed: Vec<String> = sims.iter().take(n).map(text).collect();
        if let Some(r) = self.recommendation.get()
            && let Some(advised) = sims.iter().skip(n).find(|s| s.schedule == r.omp_schedule)
        {
            listed.push(format!("… {} (advised)", text(advised)));
        }
        Some(listed.join(", "))
    }

    /// The mean trip count as text: `n/a` where none was recorded (profile
    /// mode keeps totals, not each loop's trip count).
    pub fn trip_count_text(&self) -> String {
        if self.trip_count == 0 {
            "n/a".into()
        } else {
            self.trip_count.to_string()
        }
    }
}

/// Lock and critical-section times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MutexStats {
    pub location: CodeLocation,
    /// `lock`, `critical`, `ordered`...
    pub kind: String,
    pub acquisitions: u64,
    pub wait_s: f64,
    pub hold_s: f64,
    pub max_wait_s: f64,
}

/// Explicit tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    pub created: u64,
    /// Σ task execution intervals.
    pub run_s: f64,
    /// Mean execution per task.
    pub mean_task_s: f64,
    /// Σ taskwait / taskgroup time.
    pub taskwait_s: f64,
}

/// Fine-grain hybrid model, per rank (Didelot 2014 ch. 5 / Mahéo 2015 §3.3.1, eq. 3.1–3.2):
/// `T_tot = T_seq + T_comm + T_compute / P`, bound `1 + T_compute / (T_seq + T_comm)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FineGrainModel {
    pub rank: u32,
    /// Threads P.
    pub threads: u32,
    pub t_total_s: f64,
    /// Time inside parallel regions (master thread).
    pub t_compute_s: f64,
    /// MPI time outside parallel regions.
    pub t_comm_s: f64,
    /// The rest: serial code, including fork/join overhead.
    pub t_seq_s: f64,
    /// Fork/join overhead folded into T_seq.
    pub fork_join_s: f64,
    /// None when T_seq + T_comm = 0 (no bound).
    pub speedup_bound: Option<f64>,
    /// Parallel regions entered (fork/join events).
    pub regions: u64,
    /// Core-seconds idle: (P−1) × serial time outside MPI.
    pub idle_serial_core_s: f64,
    /// Core-seconds idle: (P−1) × MPI time outside parallel regions (master-only).
    pub idle_mpi_core_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenMpOverhead {
    /// Σ fork/join over all regions.
    pub fork_join_s: f64,
    pub barrier: BarrierStats,
    /// Σ scheduling overhead over loops with chunk events.
    pub scheduling_s: Observable<f64>,
    pub mutexes: Observable<Vec<MutexStats>>,
    pub tasks: Observable<TaskStats>,
    pub fine_grain: Vec<FineGrainModel>,
}

/// Aggregates of one MPI call (or call site) over ranks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiCallStats {
    pub call: String,
    /// Set for per-call-site rows.
    pub location: Option<CodeLocation>,
    pub count: u64,
    pub total_s: f64,
    /// Per-rank total time: min, max, mean over ranks that made the call.
    pub min_rank_s: f64,
    pub max_rank_s: f64,
    pub mean_rank_s: f64,
    /// Coefficient of variation of per-rank time (stddev / mean).
    pub cv: f64,
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    /// Shortest and longest single call (rows of folded polls left out).
    pub min_call_s: f64,
    pub max_call_s: f64,
    pub share_of_run: f64,
    /// Unsuccessful polls (`MPI_Test*`, `MPI_Iprobe`, `MPI_Improbe`) the
    /// collector folded into `folded_rows` rows (trace `mpi.calls`); they
    /// are in `count`, and their runs' spans in the times.
    #[serde(default)]
    pub folded_polls: u64,
    #[serde(default)]
    pub folded_rows: u64,
    /// The scatter of its rows' times (a call, or a run of folded polls),
    /// over all ranks (None below 2 rows).
    #[serde(default)]
    pub scatter: Option<Scatter>,
}

/// One bin of the message-size histogram (point-to-point sends).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeBin {
    /// [lo, hi) bytes.
    pub lo: u64,
    pub hi: u64,
    pub messages: u64,
    pub bytes: u64,
    pub eager: u64,
    pub rendezvous: u64,
}

/// Point-to-point messages from each sender to each receiver: only the pairs
/// that exchanged any. A rank of a large job talks to a few neighbours, and a
/// dense ranks² table of 4,096 ranks took 268 MB of the report's memory and
/// most of its JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommMatrix {
    pub ranks: u32,
    /// Sorted by sender, then receiver; no pair twice, none without messages.
    pub pairs: Vec<CommPair>,
}

/// The messages one rank sent to another.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CommPair {
    pub from: u32,
    pub to: u32,
    pub messages: u64,
    pub bytes: u64,
}

impl CommMatrix {
    /// The messages `from` sent to `to`, if any.
    pub fn get(&self, from: u32, to: u32) -> Option<&CommPair> {
        self.pairs
            .binary_search_by_key(&(from, to), |p| (p.from, p.to))
            .ok()
            .map(|i| &self.pairs[i])
    }

    /// Bytes sent between blocks of `per` consecutive ranks: a `cells` ×
    /// `cells` grid, row = sending block, where `cells` = ⌈ranks / per⌉ (the
    /// viewers' matrix when there are more ranks than room).
    pub fn block_bytes(&self, per: usize) -> Vec<Vec<u64>> {
        let per = per.max(1);
        let cells = (self.ranks as usize).div_ceil(per);
        let mut grid = vec![vec![0u64; cells]; cells];
        for p in &self.pairs {
            if let Some(cell) = grid
                .get_mut(p.from as usize / per)
                .and_then(|row| row.get_mut(p.to as usize / per))
            {
                *cell += p.bytes;
            }
        }
        grid
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiProfile {
    pub calls: Vec<MpiCallStats>,
    pub callsites: Vec<MpiCallStats>,
    /// Eager limit used to classify messages and where it came from: on
    /// several hosts, the network's, for the messages between hosts.
    pub eager_limit: Observable<(u64, String)>,
    /// On several hosts, the limit of the messages within a host (the
    /// shared-memory transport's), where it differs.
    #[serde(default)]
    pub eager_limit_within_host: Option<(u64, String)>,
    pub histogram: Vec<SizeBin>,
    pub eager_messages: u64,
    pub rendezvous_messages: u64,
    pub matrix: CommMatrix,
    /// MPI time inside / outside OpenMP parallel regions (all threads).
    pub inside_parallel_s: f64,
    pub outside_parallel_s: f64,
    /// MPI time per rank.
    pub per_rank_s: Vec<f64>,
    pub total_s: f64,
    pub share_of_run: f64,
    /// Threads that called MPI per rank (max).
    pub calling_threads: u32,
    /// Traffic per communicator, world first, then in order of creation.
    #[serde(default)]
    pub communicators: Vec<CommStats>,
}

/// What one communicator carried.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommStats {
    /// `comm_id` of the trace.
    pub id: u64,
    /// `MPI_COMM_WORLD`, `MPI_COMM_SELF`, or how it was created
    /// (`MPI_Comm_split #1 of MPI_COMM_WORLD`).
    pub name: String,
    /// Ranks in it (0 when the trace does not record it).
    pub size: u32,
    /// World ranks of its members in its rank order, when recorded.
    pub members: Vec<u32>,
    /// Point-to-point messages sent on it (a `Sendrecv` sends one).
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes: u64,
    /// Collective calls on it by name, counted on every member rank.
    pub collectives: BTreeMap<String, u64>,
}

/// Wait-state kinds (Scalasca-style), all from clock-corrected timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// A receive waits for a send that started later.
    LateSender,
    /// A synchronous / rendezvous send waits for a receive posted later.
    LateReceiver,
    /// An all-to-all collective (Allreduce, Allgather, Alltoall...) waits for the last rank.
    WaitAtNxN,
    /// The root of Reduce/Gather waits for the last contributor.
    EarlyReduce,
    /// Bcast/Scatter non-roots wait for a late root.
    LateBroadcast,
    /// MPI_Barrier waits for the last rank.
    BarrierWait,
}

impl WaitKind {
    pub const ALL: [WaitKind; 6] = [
        WaitKind::LateSender,
        WaitKind::LateReceiver,
        WaitKind::WaitAtNxN,
        WaitKind::EarlyReduce,
        WaitKind::LateBroadcast,
        WaitKind::BarrierWait,
    ];
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::LateSender => "late sender",
            WaitKind::LateReceiver => "late receiver",
            WaitKind::WaitAtNxN => "wait at N×N",
            WaitKind::EarlyReduce => "early reduce",
            WaitKind::LateBroadcast => "late broadcast",
            WaitKind::BarrierWait => "barrier wait",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitEntry {
    pub kind: WaitKind,
    pub rank: Option<u32>,
    pub call: Option<String>,
    pub location: Option<CodeLocation>,
    pub seconds: f64,
    pub instances: u64,
    /// The scatter of its instances' waits (None below 2 instances).
    #[serde(default)]
    pub scatter: Option<Scatter>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitStates {
    pub total_s: f64,
    /// One entry per kind (rank/location None).
    pub by_kind: Vec<WaitEntry>,
    /// Per (kind, rank).
    pub per_rank: Vec<WaitEntry>,
    /// Per (kind, call site).
    pub per_callsite: Vec<WaitEntry>,
    /// Point-to-point messages that could not be matched.
    pub unmatched_messages: u64,
    /// Half the worst clock-offset round trip: waits smaller than this are noise.
    pub clock_error_s: f64,
}

/// QP counts per node for one transport (Didelot 2014, Table 3.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QpRow {
    pub transport: String,
    pub formula: String,
    /// On the observed communication graph (on-demand connections).
    pub observed_per_node: f64,
    /// Fully connected job.
    pub full_per_node: f64,
}

/// A parameter of the buffer model and where its value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelParam {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub source: String,
}

/// Memory of one rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankMemory {
    pub rank: u32,
    pub host: String,
    /// Distinct point-to-point peers seen in the trace.
    pub peers_observed: u32,
    /// Peers the rank reached at least once, including collectives forcing
    /// full connection: `intra_node_connections + inter_node_connections`.
    pub connections_estimated: u32,
    /// Of those, the peers on the rank's own node (its host in the trace),
    /// reached through the node's shared memory.
    #[serde(default)]
    pub intra_node_connections: u32,
    /// Of those, the peers on other nodes (or whose host is not known),
    /// reached through the network transport.
    #[serde(default)]
    pub inter_node_connections: u32,
    /// Last `mpi.connections` sample, when the collector recorded it.
    pub connections_measured: Option<u64>,
    pub rss_before_init: Option<u64>,
    pub rss_after_init: Option<u64>,
    /// RSS delta across MPI_Init: the MPI runtime's own footprint.
    pub mpi_init_delta: Option<u64>,
    pub rss_peak: Option<u64>,
    pub rss_last: Option<u64>,
    /// Most MPI shared-memory segment bytes mapped at once (`mem.shm_mapped` peak).
    pub shm_mapped: Option<u64>,
    /// Modelled buffer bytes on the observed graph:
    /// `shm_buffer_bytes + network_buffer_bytes` (null where the network's are).
    pub buffer_bytes_observed: Option<f64>,
    /// The shared-memory transport's buffers of the process (0 alone on its node).
    #[serde(default)]
    pub shm_buffer_bytes: f64,
    /// The network transport's buffers: per connection to another node, and
    /// the shared receive queues where there is one (0 without; null with
    /// one where the transport is not modelled).
    #[serde(default)]
    pub network_buffer_bytes: Option<f64>,
    pub communicators: u32,
}

/// Projection of the footprint to a larger job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    pub ranks: u64,
    pub nodes: u64,
    /// Connections per rank under the job's pattern:
    /// `intra_node_connections_per_rank + inter_node_connections_per_rank`.
    pub connections_per_rank: f64,
    /// Of those, to peers on the rank's node (shared memory).
    #[serde(default)]
    pub intra_node_connections_per_rank: f64,
    /// Of those, to peers on other nodes (network).
    #[serde(default)]
    pub inter_node_connections_per_rank: f64,
    pub qp_rc_per_node: f64,
    pub qp_xrc_per_node: f64,
    pub qp_ud_per_node: f64,
    /// Buffers per rank (bytes): `shm_bytes_per_rank + network_buffer_bytes_per_rank`
    /// (null where the network's are).
    pub buffer_bytes_per_rank: Option<f64>,
    /// The shared-memory transport's buffers per rank (bytes; 0 at one rank per node).
    #[serde(default)]
    pub shm_bytes_per_rank: f64,
    /// The network transport's buffers per rank (bytes; 0 without a peer on
    /// another node; null where the transport is not modelled).
    #[serde(default)]
    pub network_buffer_bytes_per_rank: Option<f64>,
    /// The transport between nodes a job of this size uses (`openib`,
    /// `UCX rc`, `UCX dc`, …): UCX changes it with the job's size; null
    /// where it is not modelled.
    #[serde(default)]
    pub network_transport: Option<String>,
    /// QP management memory per rank (bytes; null where the transport is not modelled).
    pub qp_bytes_per_rank: Option<f64>,
    /// Communicator group maps per rank (bytes).
    pub group_bytes_per_rank: f64,
    /// Null where the network's share is not modelled.
    pub total_bytes_per_rank: Option<f64>,
    /// Memory per core the total exceeds, when known.
    pub exceeds_memory_per_core: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FullConnectionCall {
    pub call: String,
    pub location: Option<CodeLocation>,
    pub ranks: Vec<u32>,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryFootprint {
    /// Job shape used by the formulas: N nodes, C ranks (cores) per node, H HCAs per node.
    pub nodes: u32,
    pub cores_per_node: u32,
    pub hcas_per_node: u32,
    pub per_rank: Vec<RankMemory>,
    pub qp_table: Vec<QpRow>,
    pub parameters: Vec<ModelParam>,
    /// Network buffer bytes per connection to a peer on another node;
    /// null where the run's transport is not modelled (`network_not_modelled`).
    pub bytes_per_connection: Option<f64>,
    /// The network transport between nodes the model charges, in words
    /// (`Open MPI openib BTL`, `UCX rc (MPICH ch4:ucx)`, `TCP (…)`).
    #[serde(default)]
    pub network_transport: String,
    /// `network buffers: not modelled for <library/transport>` where no
    /// model applies: then every network buffer and queue-pair figure of a
    /// rank with a connection to another node, and the totals, are null.
    #[serde(default)]
    pub network_not_modelled: Option<String>,
    /// Whether that transport has queue pairs (openib, UCX rc; not TCP):
    /// where not, the QP-per-node counts (Didelot 2014 Table 3.4) are
    /// InfiniBand's, for comparison, and its QP memory is 0.
    #[serde(default)]
    pub network_queue_pairs: bool,
    /// Shared-memory buffer bytes per process on a node with other ranks.
    #[serde(default)]
    pub shm_bytes_per_process: f64,
    /// Ranks per node (C) of the projection: the recorded run's, or the
    /// one given ([`crate::AnalyzeOptions::ranks_per_node`]).
    #[serde(default)]
    pub projection_ranks_per_node: u32,
    /// Where `projection_ranks_per_node` comes from, in words.
    #[serde(default)]
    pub projection_ranks_per_node_source: String,
    /// `constant neighbourhood` or `grows with N` (and why).
    pub pattern: String,
    pub full_connection_calls: Vec<FullConnectionCall>,
    pub communicators: u32,
    /// Group-map bytes per process (Kamal 2013 §3.1).
    pub group_map_bytes_per_rank: f64,
    pub projections: Vec<Projection>,
    pub memory_per_core: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyDomain {
    pub host: String,
    pub rank: u32,
    /// `energy.pkg`, `energy.ram`...
    pub metric: String,
    pub package: i64,
    pub joules: f64,
    pub avg_power_w: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyPhase {
    /// `openmp compute`, `mpi`, `serial`.
    pub phase: String,
    pub seconds: f64,
    pub joules: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    pub domains: Vec<EnergyDomain>,
    /// Σ package energy (or psys when that is all there is).
    pub total_joules: f64,
    pub avg_power_w: f64,
    pub phases: Vec<EnergyPhase>,
    /// Energy-delay product, J·s.
    pub edp_js: f64,
}

/// One ranked finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub title: String,
    /// `loop`, `region`, `mpi`, `wait`, `memory`, `openmp`...
    pub category: String,
    pub location: Option<CodeLocation>,
    /// Estimated run time this costs (seconds of wall time).
    pub cost_s: f64,
    pub share_of_run: f64,
    pub what_to_do: String,
    /// The named phase its code runs in most (`phases::name_findings`), if any.
    #[serde(default)]
    pub phase: Option<String>,
}

impl Finding {
    /// Whether it costs run time: the memory projection's finding costs
    /// none (`cost_s` 0), and the views write `—` for it, not a time of 0.
    pub fn costs_time(&self) -> bool {
        self.cost_s > 0.0
    }
}

/// Difference of one metric between two traces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub section: String,
    pub item: String,
    pub metric: String,
    pub a: f64,
    pub b: f64,
    /// b − a.
    pub delta: f64,
    /// b / a (None when a is 0).
    pub ratio: Option<f64>,
    /// What `a`, `b` and `delta` are measured in.
    #[serde(default)]
    pub unit: CompareUnit,
    /// `a` and `b` are per rank (the sum over ranks / the run's ranks):
    /// the runs have different rank counts and the metric sums over ranks.
    #[serde(default)]
    pub per_rank: bool,
    /// Whether `delta` is larger than the two runs' own variability
    /// (`compare::noise`).
    #[serde(default)]
    pub noise: Noise,
}

/// Whether a difference is larger than the runs' own variability: the
/// scatter of the values each run's total sums (its calls, instances,
/// messages, repetitions or ranks), weighed by Welch's test (`compare::noise`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub verdict: NoiseVerdict,
    /// What the values are: `calls`, `instances`, `messages`,
    /// `repetitions`, `ranks`; empty when not estimated.
    #[serde(default)]
    pub values: String,
    /// How many values A's and B's totals sum.
    #[serde(default)]
    pub values_a: u64,
    #[serde(default)]
    pub values_b: u64,
    /// The standard error of B − A, in the row's unit (None: not estimated).
    #[serde(default)]
    pub standard_error: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom of that error.
    #[serde(default)]
    pub degrees_of_freedom: Option<f64>,
    /// |B − A| / standard error.
    #[serde(default)]
    pub t: Option<f64>,
    /// The |t| beyond which the difference is called beyond noise
    /// (two-sided p < 0.001).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Why there is no estimate, when there is none.
    #[serde(default)]
    pub why: Option<String>,
}

/// The verdict of [`Noise`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseVerdict {
    /// Larger than the runs' own variability.
    BeyondNoise,
    /// Within it: the runs' own scatter explains it.
    WithinNoise,
    /// Too few values in a run (one per run: a duration, an efficiency,
    /// a ratio; or one call) to estimate the scatter.
    TooFewValues,
    /// A count or bytes: counted without error, no scatter of measured
    /// values; any difference is what the runs did.
    Exact,
    /// Measured values whose scatter the trace does not keep (`why` says
    /// why): no estimate.
    #[default]
    NotEstimated,
}

/// How many differences of a comparison are beyond noise (rows where
/// either run has a value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseSummary {
    pub beyond_noise: u64,
    pub within_noise: u64,
    pub too_few_values: u64,
    /// Counts and bytes.
    #[serde(default)]
    pub exact: u64,
    pub not_estimated: u64,
}

/// The scatter of the values an item's total sums within one run: how
/// many (calls, instances) and their sample standard deviation (n − 1),
/// in the total's unit. What `compare` weighs a difference against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Scatter {
    pub values: u64,
    pub sd: f64,
}

/// A scatter not yet measured: no values (an analysis written before it
/// was kept reads so).
impl Default for Observable<Option<Scatter>> {
    fn default() -> Self {
        Observable::Observed(None)
    }
}

impl Scatter {
    /// The scatter of `n` integer values (ns) from their sum and the sum of
    /// their squares, in seconds; exact integer sums, so the same however
    /// the values were split and merged. None below 2 values.
    pub fn of_ns(n: u64, sum: i128, sum_sq: u128) -> Option<Scatter> {
        if n < 2 {
            return None;
        }
        let (n_i, sq) = (n as i128, sum_sq as i128);
        let ss = (n_i.saturating_mul(sq) - sum.saturating_mul(sum)).max(0) as f64;
        let var = ss / (n as f64 * (n - 1) as f64);
        Some(Scatter {
            values: n,
            sd: var.sqrt() * 1e-9,
        })
    }
}

/// The unit of a compared metric (how the views write it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareUnit {
    #[default]
    Seconds,
    Bytes,
    Count,
    /// A fraction (0.25 = 25 %); its difference is in percentage points.
    Fraction,
    /// A ratio such as max/mean.
    Ratio,
    Joules,
    JouleSeconds,
}

/// A region, loop, call, phase… that only one of the two runs has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareItem {
    pub section: String,
    pub item: String,
}

/// Which run a side of a comparison is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareSide {
    pub trace_dir: String,
    pub command: Vec<String>,
    pub ranks: u32,
    /// The most OpenMP threads of a rank.
    pub threads: u32,
    pub start_time: String,
    /// How complete and sound its trace is.
    pub integrity: TraceIntegrity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    /// The two runs: what ran, and what their traces lost.
    #[serde(default)]
    pub side_a: CompareSide,
    #[serde(default)]
    pub side_b: CompareSide,
    /// Why the differences may not be the program's: different programs,
    /// rank or thread counts, a partial trace, a section measured in one
    /// run only (`compare::caveats`).
    #[serde(default)]
    pub caveats: Vec<String>,
    pub rows: Vec<CompareRow>,
    /// The runs have different rank counts: the rows of metrics summed
    /// over ranks compare per rank (their `per_rank`).
    #[serde(default)]
    pub per_rank: bool,
    /// How many rows (of those where either run has a value) are beyond
    /// the runs' own variability, within it, or without an estimate.
    #[serde(default)]
    pub noise: NoiseSummary,
    /// What only A has, and only B (matched by name: a renamed source file
    /// or a moved line is another item).
    #[serde(default)]
    pub only_in_a: Vec<CompareItem>,
    #[serde(default)]
    pub only_in_b: Vec<CompareItem>,
}

//! The level-of-detail timeline index shared by the TUI and the GUI.
//!
//! A trace holds nested intervals per thread (parallel ⊃ implicit task ⊃ loop ⊃
//! chunk, barrier ⊃ barrier wait, MPI calls inside regions...). A viewer wants,
//! for each pixel column of each row, *what the thread was doing*: the time per
//! [`State`] in that column and the dominant one. Drawing must cost as much as
//! the pixels, not as the events, so the index is built once:
//!
//! 1. **Split barriers** (per rank): a row does not know its team, so the rows
//!    of each parallel region instance are set aside while the parts are read
//!    and, per instance, clipped to the master's parallel interval and split
//!    as the report splits them (Mahéo 2015 §6.7): a barrier is waiting
//!    from the thread's arrival to the team's last arrival, then the runtime's
//!    synchronisation (see `build::split_barriers`).
//! 2. **Flatten** (per row = (rank, thread), in parallel over parts and rows):
//!    every interval gets a priority layer (an MPI call beats a lock wait beats a
//!    task beats a barrier wait beats the barrier's runtime part beats a chunk
//!    beats the loop's scheduling gaps beats the implicit task beats the fork/join
//!    part of the parallel region beats serial time); a sweep over the sorted
//!    begin/end points gives, at every instant, the state of the highest open
//!    layer. The result is a gap-free sequence of segments `(start, state)`.
//! 3. **Store** the segments compactly with sampled prefix sums: segments are
//!    packed 4 bytes each (28-bit offset from their block's base time, 4-bit
//!    state) in blocks of at most 64, and every block keeps the cumulative time
//!    per state before its first segment (a range-aggregation structure:
//!    `time(state, [a, b)) = cum(b) - cum(a)`).
//!
//! A [`TimelineIndex::query`] of `columns` cells evaluates `cum` at the
//! `columns + 1` cell boundaries: a binary search over blocks plus at most 64
//! segments each, so its cost is `O(columns · (log n + 64))` whatever the
//! number of events in the window, and it is exact at every zoom level.
//!
//! Times are nanoseconds on rank 0's clock (global time): each rank's times go
//! through its clock map, offsets at `MPI_Init` and `MPI_Finalize` with linear
//! drift between them ([`crate::aligned::clock`]).
//!
//! Details under the cursor come from the trace itself:
//! [`TimelineIndex::intervals_in`] reads only the row groups overlapping the
//! window through the reader's time-range filter.

mod build;
mod cache;
mod groups;
mod overview;
mod progressive;
#[cfg(test)]
mod tests;

use hyscope_format::{FormatError, MpiRecord, OmpKind, OmpRecord, ScanOptions, Trace, mpi_call};

use crate::aligned::{Clocks, GlobalNs};
use crate::model::LeftOutPart;

pub use cache::cache_dir;
pub use groups::{
    Entry, FANOUT, Group, GroupCell, GroupRow, Grouping, RankCells, RankRows, group_size,
    ranks_label, waiting_ns,
};
pub use overview::{Overview, bins_limit};
pub use progressive::{OverviewUpdate, build_with_overview};

/// What a thread is doing at an instant, in increasing order of priority when
/// intervals nest (an MPI call inside a loop chunk shows as MPI).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Outside any parallel region and MPI call: serial code on the initial
    /// thread, idle on pool threads.
    Serial = 0,
    /// Inside a parallel region's implicit task, a loop chunk or a masked block.
    Compute = 1,
    /// OpenMP runtime: fork/join part of a parallel region, loop scheduling
    /// between chunks, the non-waiting part of barriers (from the team's last
    /// arrival to the release) and reductions.
    OmpRuntime = 2,
    /// Waiting in a barrier for the team's last thread (from the thread's
    /// arrival to the last arrival when the runtime's wait events span the
    /// barrier, as libomp's do; else the runtime's `sync_region_wait`), or in
    /// a taskwait or taskgroup.
    BarrierWait = 3,
    /// Waiting for a lock, critical section, atomic or ordered.
    LockWait = 4,
    /// Running an explicit task.
    Task = 5,
    /// MPI point-to-point call (send, receive, probe, persistent start).
    MpiP2p = 6,
    /// MPI collective (blocking or non-blocking).
    MpiCollective = 7,
    /// MPI wait/test on requests.
    MpiWait = 8,
    /// Any other MPI call (init, finalize, communicators, windows, files).
    MpiOther = 9,
}

/// Number of [`State`]s.
pub const STATES: usize = 10;

impl State {
    pub const ALL: [State; STATES] = [
        State::Serial,
        State::Compute,
        State::OmpRuntime,
        State::BarrierWait,
        State::LockWait,
        State::Task,
        State::MpiP2p,
        State::MpiCollective,
        State::MpiWait,
        State::MpiOther,
    ];

    pub fn from_u8(v: u8) -> Option<State> {
        State::ALL.get(v as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Serial => "serial/idle",
            State::Compute => "compute",
            State::OmpRuntime => "OpenMP runtime",
            State::BarrierWait => "barrier wait",
            State::LockWait => "lock wait",
            State::Task => "task",
            State::MpiP2p => "MPI p2p",
            State::MpiCollective => "MPI collective",
            State::MpiWait => "MPI wait",
            State::MpiOther => "MPI other",
        }
    }

    /// What the state stands for, for legends and tooltips.
    pub fn description(self) -> &'static str {
        match self {
            State::Serial => "outside parallel regions and MPI: serial code, idle pool threads",
            State::Compute => "user code in a parallel region (implicit task, loop chunks)",
            State::OmpRuntime => {
                "OpenMP runtime: fork/join, loop scheduling, a barrier's synchronisation \
                 after the team's last arrival"
            }
            State::BarrierWait => {
                "waiting in a barrier until the team's last thread arrived (load \
                 imbalance), or in a taskwait/taskgroup"
            }
            State::LockWait => "waiting for a lock, critical section, atomic or ordered",
            State::Task => "running an explicit task",
            State::MpiP2p => "MPI point-to-point call",
            State::MpiCollective => "MPI collective",
            State::MpiWait => "MPI wait/test on requests",
            State::MpiOther => "other MPI call (init, finalize, communicators...)",
        }
    }

    /// Whether the state is an MPI call.
    pub fn is_mpi(self) -> bool {
        self >= State::MpiP2p
    }
}

/// Priority layer of an OpenMP interval of `kind`, None for instants and
/// kinds that do not change what the thread is doing (mutex hold, summaries).
pub(crate) fn omp_layer(kind: u8) -> Option<u8> {
    let kind = OmpKind::from_u8(kind)?;
    Some(match kind {
        // The row's lifetime: the base layer.
        OmpKind::Thread | OmpKind::InitialTask => 0,
        OmpKind::Parallel => 1,
        OmpKind::ImplicitTask => 2,
        OmpKind::Work => 3,
        OmpKind::Chunk | OmpKind::Masked => 4,
        OmpKind::Sync | OmpKind::Reduction => 5,
        OmpKind::SyncWait => LAYER_WAIT,
        OmpKind::TaskRun => 7,
        OmpKind::MutexWait => 8,
        _ => return None,
    })
}

/// Priority layer of an MPI call, None for request completions (instants).
pub(crate) fn mpi_layer(call: u16) -> Option<u8> {
    Some(match call {
        mpi_call::REQUEST_COMPLETE => return None,
        10..=36 => 9,
        50..=86 => 10,
        40..=47 => 11,
        _ => 12,
    })
}

/// The layer of waiting in a barrier, taskwait or taskgroup.
pub(crate) const LAYER_WAIT: u8 = 6;

/// The state shown for each priority layer.
pub(crate) const LAYER_STATE: [State; 13] = [
    State::Serial,
    State::OmpRuntime,
    State::Compute,
    State::OmpRuntime,
    State::Compute,
    State::OmpRuntime,
    State::BarrierWait,
    State::Task,
    State::LockWait,
    State::MpiP2p,
    State::MpiCollective,
    State::MpiWait,
    State::MpiOther,
];

/// The state an OpenMP interval shows when it is the innermost one.
pub fn omp_state(r: &OmpRecord) -> Option<State> {
    omp_layer(r.kind).map(|l| LAYER_STATE[l as usize])
}

/// The state an MPI call shows.
pub fn mpi_state(r: &MpiRecord) -> Option<State> {
    mpi_layer(r.call).map(|l| LAYER_STATE[l as usize])
}

/// One row of the timeline: a thread of a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowInfo {
    pub rank: u32,
    pub thread: u32,
    /// Host of the rank (from the manifest; empty if unknown).
    pub host: String,
}

/// What a cell `[t0, t1)` of a row contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellSummary {
    pub t0: i64,
    pub t1: i64,
    /// Nanoseconds per state (indexed by `State as usize`) inside the cell.
    pub time: [u64; STATES],
}

impl AsRef<CellSummary> for CellSummary {
    fn as_ref(&self) -> &CellSummary {
        self
    }
}

impl CellSummary {
    /// Time covered by the row inside the cell (less than the cell outside the row's lifetime).
    pub fn covered(&self) -> u64 {
        self.time.iter().sum()
    }

    /// The state with the most time, None if the row has no time in the cell.
    pub fn dominant(&self) -> Option<State> {
        let (i, &t) = self
            .time
            .iter()
            .enumerate()
            .max_by_key(|&(i, &t)| (t, std::cmp::Reverse(i)))?;
        (t > 0).then(|| State::ALL[i])
    }

    /// Share of the covered time spent in `state` (0 when nothing is covered).
    pub fn share(&self, state: State) -> f64 {
        let c = self.covered();
        if c == 0 {
            0.0
        } else {
            self.time[state as usize] as f64 / c as f64
        }
    }
}

/// A flattened segment: the row is in `state` from `start` to `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub start: i64,
    pub end: i64,
    pub state: State,
}

/// The record behind an interval returned by [`TimelineIndex::intervals_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Omp(OmpRecord),
    Mpi(MpiRecord),
}

/// One recorded interval of a row, in rank 0's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    pub start: i64,
    pub end: i64,
    /// The state it shows when innermost.
    pub state: State,
    pub detail: Detail,
}

impl Interval {
    /// Name of the interval: the OpenMP kind (and variant) or the MPI call.
    pub fn name(&self) -> String {
        match &self.detail {
            Detail::Omp(r) => match OmpKind::from_u8(r.kind) {
                Some(k) => {
                    let v = hyscope_format::variant_name(k, r.variant);
                    if v.is_empty() {
                        k.name().to_string()
                    } else {
                        format!("{} ({v})", k.name())
                    }
                }
                None => format!("omp kind {}", r.kind),
            },
            // A run of folded polls (trace `mpi.calls`): the span of all of them.
            Detail::Mpi(r) if r.is_folded() => format!(
                "{} ({} unsuccessful polls folded)",
                mpi_call::name(r.call),
                r.calls
            ),
            Detail::Mpi(r) => mpi_call::name(r.call).to_string(),
        }
    }

    /// What the time of a timeline `state` inside this interval is, where the
    /// names alone do not say it: a barrier is waiting for the team's last
    /// thread, then synchronisation (Mahéo 2015 §6.7).
    pub fn role(&self, state: State) -> Option<&'static str> {
        let Detail::Omp(r) = &self.detail else {
            return None;
        };
        let barrier = matches!(OmpKind::from_u8(r.kind)?, OmpKind::Sync | OmpKind::SyncWait)
            && crate::omp::is_barrier(r.variant);
        match state {
            State::BarrierWait if barrier => Some("waiting for the team's last arrival"),
            State::OmpRuntime if barrier => Some("barrier synchronisation, not waiting"),
            _ => None,
        }
    }

    /// Code address to resolve through the `symbols` table.
    pub fn code_address(&self) -> u64 {
        match &self.detail {
            Detail::Omp(r) => r.codeptr,
            Detail::Mpi(r) => r.callsite,
        }
    }
}

/// Segments of one row, packed with sampled prefix sums (see the module doc).
#[derive(Debug, Default, Clone)]
pub(crate) struct RowData {
    pub(crate) blocks: Vec<Block>,
    /// Per segment: `(start - block.base) << 4 | state`.
    pub(crate) packed: Vec<u32>,
    /// End of the last segment (start of the first is `blocks[0].base`).
    pub(crate) end: i64,
    /// `blocks[k].base`, contiguous so that the binary search touches few cache lines.
    pub(crate) bases: Vec<i64>,
}

#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub(crate) base: i64,
    /// Index in `packed` of the block's first segment.
    pub(crate) first: u32,
    /// Time per state from the row's start to `base`.
    pub(crate) cum: [u64; STATES],
}

/// Segments per block and the largest packed offset.
pub(crate) const BLOCK: usize = 64;
pub(crate) const MAX_OFFSET: i64 = (1 << 28) - 1;

impl RowData {
    pub(crate) fn new(blocks: Vec<Block>, packed: Vec<u32>, end: i64) -> RowData {
        let bases = blocks.iter().map(|b| b.base).collect();
        RowData {
            blocks,
            packed,
            end,
            bases,
        }
    }

    pub(crate) fn start(&self) -> Option<i64> {
        self.blocks.first().map(|b| b.base)
    }

    fn block_end(&self, b: usize) -> usize {
        self.blocks
            .get(b + 1)
            .map_or(self.packed.len(), |n| n.first as usize)
    }

    fn seg_start(&self, b: usize, i: usize) -> i64 {
        self.blocks[b].base + i64::from(self.packed[i] >> 4)
    }

    fn seg_end(&self, b: usize, i: usize) -> i64 {
        if i + 1 < self.block_end(b) {
            self.seg_start(b, i + 1)
        } else if b + 1 < self.blocks.len() {
            self.blocks[b + 1].base
        } else {
            self.end
        }
    }

    /// (block, segment) containing `t`, for `start <= t < end`.
    fn locate(&self, t: i64) -> Option<(usize, usize)> {
        self.locate_from(t, None)
    }

    /// Block `b` with `bases[b] <= t < bases[b + 1]`, searching forward from
    /// `hint` by galloping (successive cell boundaries are close when zoomed in).
    fn find_block(&self, t: i64, hint: Option<usize>) -> usize {
        let n = self.bases.len();
        match hint {
            Some(h) if h < n && self.bases[h] <= t => {
                let (mut lo, mut step) = (h, 1);
                let mut hi = lo + 1;
                while hi < n && self.bases[hi] <= t {
                    lo = hi;
                    step *= 2;
                    hi = lo + step;
                }
                let hi = hi.min(n);
                lo + self.bases[lo..hi].partition_point(|&b| b <= t) - 1
            }
            _ => self.bases.partition_point(|&b| b <= t) - 1,
        }
    }

    fn locate_from(&self, t: i64, hint: Option<usize>) -> Option<(usize, usize)> {
        let start = self.start()?;
        if t < start || t >= self.end {
            return None;
        }
        let b = self.find_block(t, hint);
        let lo = self.blocks[b].first as usize;
        let hi = self.block_end(b);
        let off = t - self.bases[b];
        let i = lo + self.packed[lo..hi].partition_point(|&p| i64::from(p >> 4) <= off) - 1;
        Some((b, i))
    }

    /// Time per state from the row's start to `t`.
    fn cum(&self, t: i64) -> [u64; STATES] {
        self.cum_from(t, &mut None)
    }

    /// [`RowData::cum`] with a search hint updated to the block of `t`.
    fn cum_from(&self, t: i64, hint: &mut Option<usize>) -> [u64; STATES] {
        let Some(start) = self.start() else {
            return [0; STATES];
        };
        if t <= start {
            return [0; STATES];
        }
        let t = t.min(self.end);
        if t == self.end {
            let b = self.blocks.len() - 1;
            return self.cum_in_block(b, self.packed.len(), self.end);
        }
        let (b, i) = self.locate_from(t, *hint).expect("start <= t < end");
        *hint = Some(b);
        self.cum_in_block(b, i, t)
    }

    /// Cumulative time at `t`, which lies in segment `i` of block `b` (or is
    /// the end of the row when `i` is one past the last segment).
    fn cum_in_block(&self, b: usize, i: usize, t: i64) -> [u64; STATES] {
        let blk = &self.blocks[b];
        let mut acc = blk.cum;
        let lo = blk.first as usize;
        let hi = self.block_end(b);
        let p = &self.packed[lo..hi];
        // Offset (from the block's base) where the block's last segment ends.
        let block_end = self.bases.get(b + 1).copied().unwrap_or(self.end) - blk.base;
        let full = (i - lo).min(p.len());
        for j in 0..full {
            let end = p.get(j + 1).map_or(block_end, |&n| i64::from(n >> 4));
            acc[(p[j] & 0xf) as usize] += (end - i64::from(p[j] >> 4)) as u64;
        }
        if full < p.len() {
            let j = full;
            acc[(p[j] & 0xf) as usize] += (t - blk.base - i64::from(p[j] >> 4)) as u64;
        }
        acc
    }

    fn segment(&self, b: usize, i: usize) -> Segment {
        Segment {
            start: self.seg_start(b, i),
            end: self.seg_end(b, i),
            state: State::from_u8((self.packed[i] & 0xf) as u8).unwrap_or(State::Serial),
        }
    }
}

/// The multi-resolution timeline of a trace. Build it once with
/// [`TimelineIndex::build`], then query it every frame.
#[derive(Debug, Clone)]
pub struct TimelineIndex {
    trace: Trace,
    rows: Vec<RowInfo>,
    data: Vec<RowData>,
    /// Each rank's rows, in display order.
    ranks: Vec<groups::RankRows>,
    span: (i64, i64),
    segments: usize,
    clocks: Clocks,
    /// The ranks left out for a damaged part, with their files
    /// ([`crate::damaged_parts`]): no row, in rank order.
    left_out: Vec<LeftOutPart>,
}

impl TimelineIndex {
    /// Read the `omp` and `mpi` tables of `trace` (parts in parallel) and
    /// build the index. A rank with a damaged part is left out whole, as the
    /// analysis leaves it out ([`TimelineIndex::left_out`]); when that
    /// leaves no rank, the first damaged file is the error.
    pub fn build(trace: &Trace) -> Result<TimelineIndex, FormatError> {
        build::build(trace, &|_, _| {})
    }

    /// [`TimelineIndex::build`], calling `progress(parts_done, parts_total)` as parts are read.
    pub fn build_with_progress(
        trace: &Trace,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<TimelineIndex, FormatError> {
        build::build(trace, progress)
    }

    /// The index of some ranks of `trace` only (see [`TimelineIndex::merge`]).
    pub fn build_ranks(
        trace: &Trace,
        ranks: &[u32],
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<TimelineIndex, FormatError> {
        build::build_ranks(trace, ranks, progress)
    }

    /// The index of a trace from the indexes of disjoint sets of its ranks
    /// ([`TimelineIndex::build_ranks`]): the same as building it whole.
    pub fn merge(trace: &Trace, parts: Vec<TimelineIndex>) -> TimelineIndex {
        let mut left_out = Vec::new();
        let mut rows = Vec::new();
        for p in parts {
            left_out.extend(p.left_out);
            rows.extend(p.rows.into_iter().zip(p.data));
        }
        TimelineIndex::from_parts(trace, rows, left_out)
    }

    /// Assemble an index from its rows, in any order (sorted into display
    /// order; span and counts derived), and the ranks left out.
    pub(crate) fn from_parts(
        trace: &Trace,
        mut rows: Vec<(RowInfo, RowData)>,
        mut left_out: Vec<LeftOutPart>,
    ) -> TimelineIndex {
        left_out.sort_by(|a, b| (a.rank, &a.file).cmp(&(b.rank, &b.file)));
        rows.sort_by(|a, b| {
            (&a.0.host, a.0.rank, a.0.thread).cmp(&(&b.0.host, b.0.rank, b.0.thread))
        });
        let (rows, data): (Vec<RowInfo>, Vec<RowData>) = rows.into_iter().unzip();
        let span = data
            .iter()
            .filter_map(|d| d.start().map(|s| (s, d.end)))
            .fold(None, |acc: Option<(i64, i64)>, (s, e)| match acc {
                None => Some((s, e)),
                Some((a, b)) => Some((a.min(s), b.max(e))),
            })
            .unwrap_or((0, 0));
        let segments = data.iter().map(|d| d.packed.len()).sum();
        TimelineIndex {
            trace: trace.clone(),
            ranks: groups::rank_rows_of(&rows),
            rows,
            data,
            span,
            segments,
            clocks: Clocks::from_manifest(&trace.manifest),
            left_out,
        }
    }

    /// The ranks left out for a damaged part (no row of theirs is in the
    /// index), each file with its problem, in rank order: the analysis's
    /// [`crate::Analysis::ranks_left_out`] for the same trace.
    pub fn left_out(&self) -> &[LeftOutPart] {
        &self.left_out
    }

    /// Whether `rank` is left out ([`TimelineIndex::left_out`]).
    pub fn is_left_out(&self, rank: u32) -> bool {
        self.left_out.iter().any(|p| p.rank == rank)
    }

    /// The trace the index was built from.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The clock mapping the index's times are on.
    pub fn clocks(&self) -> &Clocks {
        &self.clocks
    }

    /// Rows in display order: by host, rank, thread.
    pub fn rows(&self) -> &[RowInfo] {
        &self.rows
    }

    /// Index of the row of (rank, thread).
    pub fn row_of(&self, rank: u32, thread: u32) -> Option<usize> {
        self.rows
            .iter()
            .position(|r| r.rank == rank && r.thread == thread)
    }

    /// First start and last end over all rows (rank 0's clock), (0, 0) if empty.
    pub fn span(&self) -> (i64, i64) {
        self.span
    }

    /// Number of flattened segments stored (for memory accounting).
    pub fn segments(&self) -> usize {
        self.segments
    }

    /// Approximate heap bytes of the index.
    pub fn heap_bytes(&self) -> usize {
        self.data
            .iter()
            .map(|d| d.packed.capacity() * 4 + d.blocks.capacity() * std::mem::size_of::<Block>())
            .sum()
    }

    /// Time per state of `row` in `[t0, t1)`.
    pub fn summary(&self, row: usize, t0: i64, t1: i64) -> CellSummary {
        let Some(d) = self.data.get(row) else {
            return CellSummary {
                t0,
                t1,
                time: [0; STATES],
            };
        };
        let a = d.cum(t0);
        let b = d.cum(t1.max(t0));
        let mut time = [0; STATES];
        for s in 0..STATES {
            time[s] = b[s] - a[s];
        }
        CellSummary { t0, t1, time }
    }

    /// Split `[t0, t1)` into `columns` equal cells (boundaries rounded to ns)
    /// and summarise `row` in each. Cost: `columns + 1` prefix-sum lookups.
    pub fn query(&self, row: usize, t0: i64, t1: i64, columns: usize) -> Vec<CellSummary> {
        if columns == 0 {
            return Vec::new();
        }
        let Some(d) = self.data.get(row) else {
            return empty_cells(t0, t1, columns);
        };
        let mut out = Vec::with_capacity(columns);
        let mut hint = None;
        let mut prev = d.cum_from(t0, &mut hint);
        for c in 0..columns {
            let (a, b) = cell_bounds(t0, t1, columns, c);
            let next = d.cum_from(b, &mut hint);
            let mut time = [0; STATES];
            for s in 0..STATES {
                time[s] = next[s] - prev[s];
            }
            out.push(CellSummary { t0: a, t1: b, time });
            prev = next;
        }
        out
    }

    /// The flattened segment of `row` containing `t`, if `t` is in the row's lifetime.
    pub fn segment_at(&self, row: usize, t: i64) -> Option<Segment> {
        let d = self.data.get(row)?;
        let (b, i) = d.locate(t)?;
        Some(d.segment(b, i))
    }

    /// Up to `limit` flattened segments of `row` overlapping `[t0, t1)`, in time order
    /// (for drawing exact boxes when few fall into the view).
    pub fn segments_in(&self, row: usize, t0: i64, t1: i64, limit: usize) -> Vec<Segment> {
        let mut out = Vec::new();
        let Some(d) = self.data.get(row) else {
            return out;
        };
        let Some(start) = d.start() else {
            return out;
        };
        let Some((mut b, mut i)) = d.locate(t0.max(start)) else {
            return out;
        };
        while out.len() < limit && i < d.packed.len() {
            while i >= d.block_end(b) {
                b += 1;
            }
            let s = d.segment(b, i);
            if s.start >= t1 {
                break;
            }
            out.push(s);
            i += 1;
        }
        out
    }

    /// The recorded intervals (OpenMP and MPI) of `row` overlapping `[t0, t1]`,
    /// read from the trace with the time-range filter, sorted by start then by
    /// decreasing length (outermost first), at most `limit`.
    pub fn intervals_in(
        &self,
        row: usize,
        t0: i64,
        t1: i64,
        limit: usize,
    ) -> Result<Vec<Interval>, FormatError> {
        let Some(info) = self.rows.get(row) else {
            return Ok(Vec::new());
        };
        let clocks = &self.clocks;
        let rank = info.rank;
        // The reader filters on the rank's clock: widened by a nanosecond for
        // the inverse mapping's rounding, cut on global time below.
        let options = ScanOptions {
            ranks: Some(vec![rank]),
            time_range: Some((
                clocks.to_local(rank, GlobalNs(t0)) - 1,
                clocks.to_local(rank, GlobalNs(t1)) + 1,
            )),
            ..ScanOptions::default()
        };
        let global = |t: i64| clocks.to_global(rank, t).ns();
        let mut out = Vec::new();
        for (_, r) in self.trace.read_records::<OmpRecord>(&options)? {
            if r.thread != info.thread {
                continue;
            }
            if let Some(state) = omp_state(&r) {
                out.push(Interval {
                    start: global(r.start_ns),
                    end: global(r.end_ns),
                    state,
                    detail: Detail::Omp(r),
                });
            }
        }
        for (_, r) in self.trace.read_records::<MpiRecord>(&options)? {
            if r.thread != info.thread {
                continue;
            }
            if let Some(state) = mpi_state(&r) {
                out.push(Interval {
                    start: global(r.start_ns),
                    end: global(r.end_ns),
                    state,
                    detail: Detail::Mpi(r),
                });
            }
        }
        out.retain(|i| i.end >= t0 && i.start <= t1);
        out.sort_by_key(|i| (i.start, std::cmp::Reverse(i.end)));
        out.truncate(limit);
        Ok(out)
    }

    /// The innermost recorded interval of `row` containing `t` (the one whose
    /// state the timeline shows there), with its enclosing ones outermost first.
    pub fn stack_at(&self, row: usize, t: i64) -> Result<Vec<Interval>, FormatError> {
        let mut all = self.intervals_in(row, t, t, usize::MAX)?;
        all.retain(|i| i.start <= t && t < i.end.max(i.start + 1));
        all.sort_by_key(|i| (i.start, std::cmp::Reverse(i.end)));
        Ok(all)
    }
}

/// `columns` equal cells over `[t0, t1)` with no time in them.
pub fn empty_cells(t0: i64, t1: i64, columns: usize) -> Vec<CellSummary> {
    (0..columns)
        .map(|c| {
            let (a, b) = cell_bounds(t0, t1, columns, c);
            CellSummary {
                t0: a,
                t1: b,
                time: [0; STATES],
            }
        })
        .collect()
}

/// Bounds of cell `c` of `columns` equal cells over `[t0, t1)`.
pub fn cell_bounds(t0: i64, t1: i64, columns: usize, c: usize) -> (i64, i64) {
    let w = (t1 - t0).max(0) as i128;
    let n = columns as i128;
    let a = t0 as i128 + w * c as i128 / n;
    let b = t0 as i128 + w * (c as i128 + 1) / n;
    (a as i64, b as i64)
}

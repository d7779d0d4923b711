//! Building the timeline index: read parts in parallel, split each rank's
//! barriers by the team's arrivals, flatten each row.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyscope_format::{FormatError, OmpKind, PartFile, PartScan, ScanOptions, Table, Trace};
use rayon::prelude::*;

use super::{
    BLOCK, Block, LAYER_STATE, LAYER_WAIT, MAX_OFFSET, RowData, RowInfo, STATES, State,
    TimelineIndex, mpi_layer, omp_layer,
};
use crate::aligned::{ClockMap, Clocks};
use crate::damaged_parts::{DamagedPart, check_rank};
use crate::omp::{is_barrier, last_arrivals, split_by_arrivals};

/// A compact interval: start, end (rank clock), priority layer.
pub(super) type Iv = (i64, i64, u8);

/// A row of a parallel region instance that [`split_barriers`] needs: the
/// parallel row, implicit tasks, barriers and their waits (rank clock).
#[derive(Debug, Clone, Copy)]
struct TeamRow {
    parallel_id: u64,
    start: i64,
    end: i64,
    thread: u32,
    /// Team size (of the parallel row).
    team: u32,
    kind: u8,
    layer: u8,
}

/// What one part holds: compact intervals per thread, and the region rows
/// kept aside for [`split_barriers`].
#[derive(Default)]
struct PartRows {
    threads: BTreeMap<u32, Vec<Iv>>,
    team: Vec<TeamRow>,
}

const K_PARALLEL: u8 = OmpKind::Parallel as u8;
const K_ITASK: u8 = OmpKind::ImplicitTask as u8;
const K_SYNC: u8 = OmpKind::Sync as u8;
const K_SYNCWAIT: u8 = OmpKind::SyncWait as u8;

pub(super) fn build(
    trace: &Trace,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<TimelineIndex, FormatError> {
    let index = build_ranks(trace, &trace.ranks(), progress)?;
    some_rank_left(trace, &index.left_out)?;
    Ok(index)
}

/// The error of a timeline whose every rank with OpenMP or MPI rows is left
/// out (the first file's, as the analysis's): nothing is left to show.
pub(super) fn some_rank_left(
    trace: &Trace,
    left_out: &[crate::model::LeftOutPart],
) -> Result<(), FormatError> {
    let Some(first) = left_out.first() else {
        return Ok(());
    };
    let mut with_rows = trace
        .parts(Table::Omp)
        .iter()
        .chain(trace.parts(Table::Mpi))
        .map(|p| p.rank);
    let left = |r: u32| left_out.iter().any(|p| p.rank == r);
    match with_rows.all(left) {
        true => Err(FormatError::Invalid {
            path: trace.dir.join(&first.file),
            message: first.problem.clone(),
        }),
        false => Ok(()),
    }
}

/// The index of `ranks` only: one pass over their parts, rank by rank, so
/// that memory holds one rank's compact intervals besides the index. The
/// index of a whole trace is [`TimelineIndex::merge`] of the indexes of any
/// partition of its ranks (what each process of a parallel analysis builds).
pub(super) fn build_ranks(
    trace: &Trace,
    ranks: &[u32],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<TimelineIndex, FormatError> {
    let mut rows: Vec<(RowInfo, RowData)> = Vec::new();
    let left_out = for_each_rank(trace, ranks, progress, |rank| {
        let clock = rank.clock;
        let built: Vec<(u32, RowData)> = rank
            .threads
            .into_par_iter()
            .map(|(thread, ivs)| (thread, flatten(ivs, clock)))
            .collect();
        rows.extend(built.into_iter().map(|(thread, data)| {
            (
                RowInfo {
                    rank: rank.rank,
                    thread,
                    host: rank.host.clone(),
                },
                data,
            )
        }));
    })?;
    Ok(TimelineIndex::from_parts(trace, rows, left_out))
}

/// A rank's rows before flattening: each thread's compact intervals (rank
/// clock), barriers split, with the clock map to global time.
pub(super) struct RankIntervals<'a> {
    pub(super) rank: u32,
    pub(super) host: String,
    pub(super) clock: Option<&'a ClockMap>,
    pub(super) threads: BTreeMap<u32, Vec<Iv>>,
}

/// Read `ranks` rank by rank (a rank's parts in parallel) and hand each
/// rank's intervals to `each`: the one reading pass of the index and of the
/// coarse overview. A rank the analysis leaves out is left out here, by the
/// same rule ([`crate::damaged_parts`]): one of its `omp`, `mpi` or
/// `samples` parts fails [`check_rank`] (every checksum, though the index
/// decodes a few columns only), or cannot be decoded. Its parts are named
/// in what is returned (file relative to the trace, in rank order), and
/// `each` never sees it.
pub(super) fn for_each_rank(
    trace: &Trace,
    ranks: &[u32],
    progress: &(dyn Fn(usize, usize) + Sync),
    mut each: impl FnMut(RankIntervals<'_>),
) -> Result<Vec<crate::model::LeftOutPart>, FormatError> {
    let mine = |p: &&PartFile| ranks.contains(&p.rank);
    let total = trace.parts(Table::Omp).iter().filter(mine).count()
        + trace.parts(Table::Mpi).iter().filter(mine).count();
    let done = AtomicUsize::new(0);
    progress(0, total);
    let clocks = Clocks::from_manifest(&trace.manifest);
    let mut left_out: Vec<DamagedPart> = Vec::new();
    for &rank in ranks {
        let parts: Vec<&PartFile> = trace
            .parts(Table::Omp)
            .iter()
            .chain(trace.parts(Table::Mpi))
            .filter(|p| p.rank == rank)
            .collect();
        let mut damaged = check_rank(trace, rank);
        let per_part: Vec<Result<PartRows, FormatError>> = if damaged.is_empty() {
            parts
                .par_iter()
                .map(|p| {
                    let r = read_part(p);
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                    r
                })
                .collect()
        } else {
            progress(
                done.fetch_add(parts.len(), Ordering::Relaxed) + parts.len(),
                total,
            );
            Vec::new()
        };
        let info = trace.manifest.ranks.iter().find(|r| r.rank == rank);
        let mut threads: BTreeMap<u32, Vec<Iv>> = BTreeMap::new();
        let mut team: Vec<TeamRow> = Vec::new();
        for (p, part) in parts.iter().zip(per_part) {
            match part {
                Ok(mut part) => {
                    for (thread, mut ivs) in part.threads {
                        threads.entry(thread).or_default().append(&mut ivs);
                    }
                    team.append(&mut part.team);
                }
                Err(e) => damaged.push(DamagedPart::new(p, &e)),
            }
        }
        if !damaged.is_empty() {
            left_out.append(&mut damaged);
            continue;
        }
        split_barriers(team, &mut threads);
        each(RankIntervals {
            rank,
            host: info.map(|i| i.host.clone()).unwrap_or_default(),
            clock: clocks.map(rank),
            threads,
        });
    }
    crate::damaged_parts::sort(&mut left_out);
    Ok(left_out.iter().map(|d| d.left_out(&trace.dir)).collect())
}

/// The columns the timeline reads of the `omp` table.
const OMP_COLUMNS: [&str; 7] = [
    "thread",
    "kind",
    "variant",
    "start_ns",
    "end_ns",
    "parallel_id",
    "team_size",
];
/// The columns the timeline reads of the `mpi` table.
const MPI_COLUMNS: [&str; 4] = ["thread", "call", "start_ns", "end_ns"];

/// A primitive column of a batch by name, or a schema error naming it.
fn column<'a, T: arrow_array::ArrowPrimitiveType>(
    batch: &'a arrow_array::RecordBatch,
    name: &str,
) -> Result<&'a [T::Native], String> {
    use arrow_array::cast::AsArray;
    Ok(batch
        .column_by_name(name)
        .ok_or_else(|| format!("missing column `{name}`"))?
        .as_primitive_opt::<T>()
        .ok_or_else(|| format!("column `{name}` has the wrong type"))?
        .values())
}

/// Read one part into compact intervals per thread, batch by batch (memory
/// stays at one decoded batch plus the compact intervals). Only the columns
/// the timeline needs are decoded (and checksummed).
fn read_part(part: &PartFile) -> Result<PartRows, FormatError> {
    use arrow_array::types::{Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
    let mut out = PartRows::default();
    let columns: &[&str] = match part.table {
        Table::Omp => &OMP_COLUMNS,
        Table::Mpi => &MPI_COLUMNS,
        _ => return Ok(out),
    };
    let options = ScanOptions {
        columns: Some(columns.iter().map(|c| c.to_string()).collect()),
        ..ScanOptions::default()
    };
    let scan = PartScan::open(part, &options)?;
    let schema_error = |message: String| FormatError::Schema {
        path: part.path.clone(),
        table: part.table.to_string(),
        message,
    };
    for batch in scan {
        let batch = batch?;
        let thread = column::<UInt32Type>(&batch, "thread").map_err(schema_error)?;
        let start = column::<Int64Type>(&batch, "start_ns").map_err(schema_error)?;
        let end = column::<Int64Type>(&batch, "end_ns").map_err(schema_error)?;
        let mut push = |i: usize, layer: u8| {
            if end[i] > start[i] {
                out.threads
                    .entry(thread[i])
                    .or_default()
                    .push((start[i], end[i], layer));
            }
        };
        if part.table == Table::Mpi {
            let call = column::<UInt16Type>(&batch, "call").map_err(schema_error)?;
            for (i, &call) in call.iter().enumerate() {
                if let Some(layer) = mpi_layer(call) {
                    push(i, layer);
                }
            }
            continue;
        }
        let kind = column::<UInt8Type>(&batch, "kind").map_err(schema_error)?;
        let variant = column::<UInt8Type>(&batch, "variant").map_err(schema_error)?;
        let parallel = column::<UInt64Type>(&batch, "parallel_id").map_err(schema_error)?;
        let team = column::<UInt32Type>(&batch, "team_size").map_err(schema_error)?;
        for i in 0..batch.num_rows() {
            let Some(layer) = omp_layer(kind[i]) else {
                continue;
            };
            let team_row = match kind[i] {
                K_PARALLEL | K_ITASK => true,
                K_SYNC | K_SYNCWAIT => is_barrier(variant[i]),
                _ => false,
            };
            if team_row && parallel[i] != 0 {
                out.team.push(TeamRow {
                    parallel_id: parallel[i],
                    start: start[i],
                    end: end[i],
                    thread: thread[i],
                    team: team[i],
                    kind: kind[i],
                    layer,
                });
            } else {
                push(i, layer);
            }
        }
    }
    Ok(out)
}

/// Add a rank's region rows to its threads' intervals as the report counts
/// them (`omp/regions.rs`). Every row of a region instance is clipped to the master's
/// parallel interval: a worker's join-barrier and implicit-task ends arrive
/// only when it wakes for the next region (platform facts), and the time until
/// then is idling in the pool, not barrier wait. Where the runtime's barrier
/// waits span the barriers whole (libomp) or are absent, each barrier shows
/// waiting from the thread's arrival to the team's last arrival and the
/// runtime's synchronisation (release) after it: Mahéo 2015 §6.7's
/// decomposition, with the last arrivals of [`last_arrivals`]. Explicit tasks
/// run while waiting keep their higher layer. Instances whose parallel row is
/// missing stay as recorded; those whose barriers do not match across the
/// team keep the runtime's waits.
///
/// Linear apart from one sort of these rows (a fraction of the rank's).
fn split_barriers(mut rows: Vec<TeamRow>, threads: &mut BTreeMap<u32, Vec<Iv>>) {
    // Stable and adaptive: each part's rows come sorted by (thread, kind,
    // start), so mostly in runs of increasing parallel id.
    rows.par_sort_by_key(|r| (r.parallel_id, r.thread, r.kind, r.start));
    // (thread, start, end) of the instance's barriers, by thread then start.
    let mut barriers: Vec<(u32, i64, i64)> = Vec::new();
    let mut last: Vec<i64> = Vec::new();
    // Intervals by thread index (small and dense: a map lookup per row would
    // cost more than the split), added to `threads` at the end.
    let mut by_thread: Vec<Vec<Iv>> = Vec::new();
    let mut push = |thread: u32, iv: Iv| {
        if iv.1 <= iv.0 {
            return;
        }
        let t = thread as usize;
        match by_thread.get_mut(t) {
            Some(v) => v.push(iv),
            None if t < 1 << 16 => {
                by_thread.resize_with(t + 1, Vec::new);
                by_thread[t].push(iv);
            }
            None => threads.entry(thread).or_default().push(iv),
        }
    };
    for group in rows.chunk_by(|a, b| a.parallel_id == b.parallel_id) {
        let Some(par) = group.iter().find(|r| r.kind == K_PARALLEL) else {
            for r in group {
                push(r.thread, (r.start, r.end, r.layer));
            }
            continue;
        };
        let (rs, re) = (par.start, par.end.max(par.start));
        let clip = |r: &TeamRow| {
            let s = r.start.max(rs);
            (s, r.end.min(re).max(s))
        };
        barriers.clear();
        let (mut barrier_ns, mut wait_ns) = (0i64, 0i64);
        for r in group {
            let (s, e) = clip(r);
            match r.kind {
                K_SYNC => {
                    barriers.push((r.thread, s, e));
                    barrier_ns += e - s;
                }
                K_SYNCWAIT => wait_ns += e - s,
                _ => {}
            }
        }
        let split = split_by_arrivals(wait_ns, barrier_ns)
            && last_arrivals(&barriers, par.team.max(1), &mut last);
        for r in group {
            // The runtime's waits give way to the arrivals' (the barrier
            // rows below them show the runtime's part).
            if !(split && r.kind == K_SYNCWAIT) {
                let (s, e) = clip(r);
                push(r.thread, (s, e, r.layer));
            }
        }
        if split {
            // Thread j's k-th barrier is at j * n + k.
            let n = last.len();
            for (i, &(thread, s, e)) in barriers.iter().enumerate() {
                push(thread, (s, last[i % n].clamp(s, e), LAYER_WAIT));
            }
        }
    }
    for (t, mut ivs) in by_thread.into_iter().enumerate() {
        if !ivs.is_empty() {
            threads.entry(t as u32).or_default().append(&mut ivs);
        }
    }
}

/// Sweep the begin/end points of a row's intervals: at every instant the state
/// is that of the highest open layer (serial when none is open). Segment
/// bounds go to global time through the rank's clock map (None: identity).
pub(super) fn flatten(ivs: Vec<Iv>, clock: Option<&ClockMap>) -> RowData {
    flatten_with(ivs, clock, |_, _| {})
}

/// [`flatten`], handing every step of the sweep to `also` as well: the
/// index's row and the coarse overview's bins from one sweep.
pub(super) fn flatten_with(
    ivs: Vec<Iv>,
    clock: Option<&ClockMap>,
    mut also: impl FnMut(i64, Option<State>),
) -> RowData {
    let mut builder = RowBuilder::default();
    sweep(ivs, clock, |t, state| {
        also(t, state);
        match state {
            Some(s) => builder.push(t, s),
            None => builder.finish(t),
        }
    });
    builder.data
}

/// The sweep of [`flatten`]: calls `emit(t, Some(state))` where the row's
/// state becomes `state` (global time, non-decreasing; repeated states
/// possible), then `emit(end, None)` once at the row's end. Nothing for a row
/// without intervals. One meaning for the index and the coarse overview.
pub(super) fn sweep(
    ivs: Vec<Iv>,
    clock: Option<&ClockMap>,
    mut emit: impl FnMut(i64, Option<State>),
) {
    let global = |t: i64| clock.map_or(t, |m| m.to_global(t));
    let mut events: Vec<(i64, i8)> = Vec::with_capacity(ivs.len() * 2);
    for (s, e, l) in ivs {
        if e > s {
            events.push((s, l as i8 + 1));
            events.push((e, -(l as i8 + 1)));
        }
    }
    events.sort_unstable_by_key(|e| e.0);
    let mut counts = [0i32; LAYER_STATE.len()];
    let mut mask: u16 = 0;
    let mut i = 0;
    while i < events.len() {
        let t = events[i].0;
        while i < events.len() && events[i].0 == t {
            let (_, code) = events[i];
            let layer = (code.unsigned_abs() - 1) as usize;
            counts[layer] += code.signum() as i32;
            if counts[layer] > 0 {
                mask |= 1 << layer;
            } else {
                mask &= !(1 << layer);
            }
            i += 1;
        }
        if i == events.len() {
            emit(global(t), None);
        } else {
            let state = if mask == 0 {
                State::Serial
            } else {
                LAYER_STATE[15 - mask.leading_zeros() as usize]
            };
            emit(global(t), Some(state));
        }
    }
}

/// Appends segments, merging equal neighbours and cutting blocks.
#[derive(Default)]
struct RowBuilder {
    data: RowData,
    current: Option<(i64, State)>,
    running: [u64; STATES],
}

impl RowBuilder {
    fn push(&mut self, t: i64, state: State) {
        if let Some((start, s)) = self.current {
            if s == state {
                return;
            }
            self.running[s as usize] += (t - start) as u64;
        }
        let d = &mut self.data;
        let new_block = match d.blocks.last() {
            None => true,
            Some(b) => d.packed.len() - b.first as usize >= BLOCK || t - b.base > MAX_OFFSET,
        };
        if new_block {
            d.blocks.push(Block {
                base: t,
                first: d.packed.len() as u32,
                cum: self.running,
            });
        }
        let base = d.blocks.last().expect("pushed above").base;
        d.packed.push(((t - base) as u32) << 4 | state as u32);
        self.current = Some((t, state));
    }

    fn finish(&mut self, t: i64) {
        let d = std::mem::take(&mut self.data);
        let (mut blocks, mut packed) = (d.blocks, d.packed);
        packed.shrink_to_fit();
        blocks.shrink_to_fit();
        self.data = RowData::new(blocks, packed, t);
    }
}

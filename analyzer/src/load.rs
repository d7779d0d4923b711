//! Reading a trace: every part decoded in parallel (rayon), timestamps moved to
//! rank 0's clock, symbols resolved.

use std::collections::HashMap;
use std::path::Path;

use hyscope_format::{
    MAX_CLOCK_NS, MAX_THREADS, Manifest, OmpRecord, PartFile, PhaseRecord, SampleRecord,
    ScanOptions, SymbolRecord, Table, Trace, part_row_group_rows, read_part_records,
    read_part_row_groups_into,
};
use rayon::prelude::*;

use crate::aligned::Clocks;
use crate::bounds::{clip, clip_interval_to_exit};
use crate::damaged_parts::DamagedPart;
use crate::error::AnalyzeError;
use crate::model::RunFacts;
pub use crate::model::ns_to_s;
use crate::mpi_rows::MpiOut;
use crate::omp::OmpMerge;
use crate::omp::pass::{RankPass, rank_pass};
use crate::rank_mpi::MpiMerge;
use crate::trace_data::{MpiSpans, PhaseOmp, RankData, TraceData};

/// A rank's OpenMP parts and MPI parts.
type RankParts<'t> = (Vec<&'t PartFile>, Vec<&'t PartFile>);

fn parts_bytes((omp, mpi): &RankParts) -> u64 {
    omp.iter().chain(mpi).map(|p| p.bytes).sum()
}

pub use crate::code_map::{code_label, label_of};

/// Memory one decoded OpenMP row takes while its rank is analysed: the record
/// and the pass's grouping (a group number and an index per row, [`crate::omp::pass`]).
const OMP_ROW_BYTES: u64 = std::mem::size_of::<OmpRecord>() as u64 + 8;

/// Rows per byte of Parquet OpenMP part assumed until a rank has been decoded
/// (the collector's parts hold about 4 bytes per row); then the densest rank seen.
const OMP_ROWS_PER_BYTE: f64 = 0.25;

/// Share of the memory limit left after the rows the analysis keeps (samples,
/// phases) that the ranks decoded at once may take: the rest is for the
/// passes' results, the message sides, the matched messages and collectives
/// and the report.
const OMP_SHARE: u64 = 4;

/// Rows per decoded record batch of OpenMP parts: the batch's temporary
/// records (80 bytes each, 1.3 MB) stay in the cache on their way to the rank buffer.
const OMP_DECODE_BATCH: usize = 16 * 1024;

/// Rows per decoding task: parts (4 Mi rows by default) are split into pieces
/// of whole row groups so both cores stay busy to the end of a rank.
const OMP_DECODE_PIECE: usize = 1 << 20;

/// Decode a rank's OpenMP parts, in parallel pieces of row groups, into
/// disjoint slices of `buf` (grown when needed, never shrunk): returns the
/// rows, in part order.
fn decode_rank<'b>(
    parts: &[&PartFile],
    options: &ScanOptions,
    buf: &'b mut Vec<OmpRecord>,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<&'b mut [OmpRecord], AnalyzeError> {
    let groups: Vec<Vec<usize>> = parts
        .par_iter()
        .map(|p| part_row_group_rows(p, options))
        .collect::<Result<_, _>>()?;
    // Pieces: (part, row groups, rows at most, progress bytes).
    let mut pieces: Vec<(&PartFile, std::ops::Range<usize>, usize, u64)> = Vec::new();
    for (p, g) in parts.iter().zip(&groups) {
        let first = pieces.len();
        let mut start = 0;
        while start < g.len() {
            let mut end = start;
            let mut rows = 0;
            while end < g.len() && rows < OMP_DECODE_PIECE {
                rows += g[end];
                end += 1;
            }
            pieces.push((p, start..end, rows, 0));
            start = end;
        }
        // The progress bar counts the part's bytes once, with its last piece.
        match pieces.get_mut(first..).and_then(|v| v.last_mut()) {
            Some(last) => last.3 = p.bytes,
            None => {
                if let Some(b) = bar {
                    b.inc(p.bytes);
                }
            }
        }
    }
    let total: usize = pieces.iter().map(|p| p.2).sum();
    if buf.len() < total {
        buf.resize(total, OmpRecord::default());
    }
    let mut slices: Vec<&mut [OmpRecord]> = Vec::with_capacity(pieces.len());
    let mut rest = &mut buf[..total];
    for piece in &pieces {
        let (head, tail) = rest.split_at_mut(piece.2);
        slices.push(head);
        rest = tail;
    }
    let written: Vec<usize> = pieces
        .par_iter()
        .zip(slices)
        .map(|((p, range, _, bytes), slice)| {
            let n = read_part_row_groups_into(p, options, range.clone(), slice)?;
            if let (Some(b), true) = (bar, *bytes > 0) {
                b.inc(*bytes);
            }
            Ok::<_, AnalyzeError>(n)
        })
        .collect::<Result<_, _>>()?;
    // A piece may yield fewer rows than its row groups hold: close the gaps.
    let mut n = 0;
    let mut offset = 0;
    for (piece, &w) in pieces.iter().zip(&written) {
        if offset != n {
            buf.copy_within(offset..offset + w, n);
        }
        n += w;
        offset += piece.2;
    }
    Ok(&mut buf[..n])
}

/// How far before the manifest's start, and after the last trace file was
/// written, a timestamp may lie and still be of the run (ranks start a little
/// before rank 0 records the start).
const RUN_SLACK_NS: i64 = 60_000_000_000;

/// The span of rank 0's clock the run can have covered: from the manifest's
/// start to the newest trace file's modification time (the rank files are
/// written at exit; a copied trace only widens it). Unbounded where the
/// manifest has no start.
fn run_window(trace: &Trace) -> (i64, i64) {
    let m = &trace.manifest;
    if m.start_clock_ns <= 0 || m.start_clock_ns > MAX_CLOCK_NS {
        return (-MAX_CLOCK_NS, MAX_CLOCK_NS);
    }
    let lo = m.start_clock_ns - RUN_SLACK_NS;
    let newest_unix_ns = std::iter::once(trace.dir.join(hyscope_format::MANIFEST_FILE))
        .chain(
            std::fs::read_dir(trace.dir.join(hyscope_format::RANKS_DIR))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path()),
        )
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .max();
    let hi = match newest_unix_ns {
        Some(t) if m.start_unix_ns > 0 && t >= m.start_unix_ns => m
            .start_clock_ns
            .saturating_add(t - m.start_unix_ns)
            .saturating_add(RUN_SLACK_NS)
            .min(MAX_CLOCK_NS),
        _ => MAX_CLOCK_NS,
    };
    (lo, hi)
}

/// What the OpenMP pass of one rank saw of its rows.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct OmpSpan {
    /// First start and last end of the rows analysed.
    first: i64,
    last: i64,
    rows: u64,
    /// Rows decoded (before a focus keeps some of them).
    decoded: u64,
    threads: u32,
    /// First start and last end over the whole run (before a focus).
    whole: Option<(i64, i64)>,
}

/// Open and read a whole trace: samples and symbols are kept; each rank's MPI
/// rows are reduced to its spans, message sides and [`crate::rank_mpi::RankMpi`]
/// (`mpi_rows`) and its OpenMP rows to [`crate::omp::RankPass`] aggregates, both
/// merged in rank order ([`OmpMerge`]), as many ranks decoded at once as
/// `options.memory` allows. With `options.phase`, the OpenMP rows and phases
/// are restricted to that phase's time ([`crate::focus`]); an unknown phase
/// name is an error that lists the names, and so is a damaged phases part
/// (without `options.phase`, its rank's phases are left out and it is a
/// problem of the trace). A rank with a damaged `omp`, `mpi` or `samples`
/// part is left out of the analysis as a whole, and the rest is analysed;
/// when that leaves no rank, the first damaged part is the error
/// ([`crate::damaged_parts`]).
pub fn load(
    dir: &Path,
    opts: &crate::AnalyzeOptions,
) -> Result<(TraceData, OmpMerge, MpiMerge), AnalyzeError> {
    match load_in(dir, opts, Share::Alone)? {
        Loaded::Whole(whole) => Ok(*whole),
        Loaded::Part => unreachable!("a process analysing alone analyses every rank"),
    }
}

/// The results of one rank, as the per-rank passes leave them: what a
/// process of a parallel analysis hands to process 0 ([`crate::parallel`]).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct RankOut {
    rank: u32,
    /// Its results, or the parts that leave it out of the analysis.
    read: Result<RankRead, Vec<DamagedPart>>,
}

/// The results of a rank whose parts were all read.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RankRead {
    /// Of its OpenMP rows, if it has any.
    omp: Option<OmpOut>,
    /// Of its MPI rows.
    mpi: MpiOut,
}

/// The OpenMP results of one rank.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct OmpOut {
    pass: RankPass,
    span: OmpSpan,
    /// OpenMP rows clipped to the run.
    clipped: u64,
    in_phases: InPhases,
}

/// The OpenMP time inside each phase of a rank and where each construct ran.
type InPhases = (Vec<PhaseOmp>, HashMap<(u64, usize), i64>);

/// Which of the ranks this process analyses.
pub(crate) enum Share<'a> {
    /// Every rank.
    Alone,
    /// Process 0 of a parallel analysis: its own range of ranks, then the
    /// others' [`RankOut`]s, received in process (so rank) order.
    Root(&'a dyn crate::exchange::Exchange),
    /// Another process: the OpenMP and MPI rows of its range of ranks only.
    Worker(&'a dyn crate::exchange::Exchange),
}

/// What [`load_in`] returns.
pub(crate) enum Loaded {
    Whole(Box<(TraceData, OmpMerge, MpiMerge)>),
    /// A worker's ranks' results went to process 0, one encoded message
    /// per batch ([`encode_handed`]) sent as the batch ended: the worker
    /// holds them compact until they arrive, and process 0 decodes one batch
    /// at a time.
    Part,
}

/// One message from another process to process 0: a batch of its ranks'
/// results in rank order, `true` on its last; or the error that ended its
/// analysis (always its last).
type Handed = Result<(Vec<RankOut>, bool), String>;

/// The bytes of one [`Handed`] message.
pub(crate) fn encode_handed(
    part: Result<(Vec<RankOut>, bool), String>,
) -> Result<Vec<u8>, AnalyzeError> {
    postcard::to_allocvec(&part).map_err(|e| AnalyzeError::Exchange {
        message: format!("cannot encode this process's results: {e}"),
    })
}

/// What a load reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Everything the analysis reads.
    Analysis,
    /// What the run's window and the worker join-barrier ends the analysis
    /// clips need ([`crate::run_extent`]): everything read as for
    /// the analysis (so a damaged part leaves out what it leaves out of the
    /// analysis), but each rank's OpenMP rows go through
    /// [`crate::omp::pass::join_pass`] (the clipped ends alone) instead of
    /// the whole pass.
    RunWindow,
}

/// The ranks' data and merged OpenMP aggregates of the trace in `dir` as
/// [`load`] leaves them, but with only the clipped join-barrier ends of the
/// OpenMP pass ([`Need::RunWindow`]): what [`crate::run_extent`] reads.
/// `opts.phase` must be None.
pub(crate) fn load_for_run_window(
    dir: &Path,
    opts: &crate::AnalyzeOptions,
) -> Result<(TraceData, OmpMerge), AnalyzeError> {
    debug_assert!(opts.phase.is_none(), "the run's window is the whole run's");
    match load_reading(dir, opts, Share::Alone, Need::RunWindow)? {
        Loaded::Whole(whole) => {
            let (data, omp, _) = *whole;
            Ok((data, omp))
        }
        Loaded::Part => unreachable!("a process analysing alone analyses every rank"),
    }
}

/// [`load`] by one process of `share`.
pub(crate) fn load_in(
    dir: &Path,
    opts: &crate::AnalyzeOptions,
    share: Share,
) -> Result<Loaded, AnalyzeError> {
    load_reading(dir, opts, share, Need::Analysis)
}

/// [`load_in`], reading what `need` says.
fn load_reading(
    dir: &Path,
    opts: &crate::AnalyzeOptions,
    share: Share,
    need: Need,
) -> Result<Loaded, AnalyzeError> {
    // Process 0 receives from every other process once whatever happens: an
    // error here before that still lets the others finish.
    let mut pending = match share {
        Share::Root(ex) => Some(Pending::new(ex)),
        _ => None,
    };
    let (worker, exchange) = match share {
        Share::Alone => (false, None),
        Share::Root(ex) => (false, Some(ex)),
        Share::Worker(ex) => (true, Some(ex)),
    };
    let (progress, focus) = (opts.progress && !worker, opts.phase.as_deref());
    let trace = Trace::open(dir)?;
    let mut problems: Vec<crate::model::TraceProblem> = trace
        .problems()
        .iter()
        .map(|p| crate::model::TraceProblem {
            file: Some(
                p.path
                    .strip_prefix(dir)
                    .unwrap_or(&p.path)
                    .display()
                    .to_string(),
            )
            .filter(|f| !f.is_empty()),
            rank: p.rank,
            what: p.what.clone(),
            data_lost: p.data_lost,
        })
        .collect();
    let window = run_window(&trace);
    // Raw clocks beyond any uptime are damage: bounded before the clock
    // mapping so that no sum overflows.
    let raw = (-MAX_CLOCK_NS, MAX_CLOCK_NS);
    let omp_parts = trace.parts(Table::Omp);
    let mpi_parts = trace.parts(Table::Mpi);
    // The OpenMP and MPI parts of each rank (in index order, as every view
    // reads them: rows of equal sort keys keep one order), and the ranks
    // this process decodes.
    let mut rank_parts: std::collections::BTreeMap<u32, RankParts> = Default::default();
    for p in omp_parts {
        rank_parts.entry(p.rank).or_default().0.push(p);
    }
    for p in mpi_parts {
        rank_parts.entry(p.rank).or_default().1.push(p);
    }
    let own = match exchange {
        None => 0..rank_parts.len(),
        Some(ex) => {
            let bytes: Vec<u64> = rank_parts.values().map(parts_bytes).collect();
            // Process 0 also reads every rank's other tables; counted twice,
            // so that it ends its own ranks before the others end theirs and
            // decodes and adds their batches as they come, not after the last.
            let head: u64 = [Table::Samples, Table::Symbols, Table::Phases]
                .iter()
                .flat_map(|&t| trace.parts(t))
                .map(|p| 2 * p.bytes)
                .sum();
            crate::exchange::split(&bytes, &ex.threads(), head).swap_remove(ex.process())
        }
    };
    let own_ranks: std::collections::HashSet<u32> = rank_parts
        .keys()
        .skip(own.start)
        .take(own.len())
        .copied()
        .collect();
    if let Some(ex) = exchange {
        crate::timing::step(|| {
            let ranks: Vec<u32> = rank_parts
                .keys()
                .skip(own.start)
                .take(own.len())
                .copied()
                .collect();
            format!(
                "process {}: {} of {} ranks to analyse with {}{}",
                ex.process(),
                ranks.len(),
                rank_parts.len(),
                crate::timing::threads(ex.threads().get(ex.process()).copied().unwrap_or(0)),
                match (ranks.first(), ranks.last()) {
                    (Some(a), Some(b)) => format!(" (ranks {a} to {b})"),
                    _ => String::new(),
                }
            )
        });
    }
    // Named in each rank's timing line when the analysis is split.
    let process = exchange.map(|ex| ex.process());
    let mut parts: Vec<&PartFile> = Vec::new();
    // A worker reads the phases only (for the OpenMP time inside them): of
    // its ranks, or of every rank when a phase is chosen (its windows are the
    // union over the ranks).
    let tables: &[Table] = if worker {
        &[Table::Phases]
    } else {
        &[Table::Samples, Table::Symbols, Table::Phases]
    };
    for &t in tables {
        parts.extend(
            trace
                .parts(t)
                .iter()
                .filter(|p| !worker || focus.is_some() || own_ranks.contains(&p.rank)),
        );
    }
    let total_bytes: u64 = parts.iter().map(|p| p.bytes).sum::<u64>()
        + omp_parts
            .iter()
            .chain(mpi_parts)
            .filter(|p| own_ranks.contains(&p.rank))
            .map(|p| p.bytes)
            .sum::<u64>();
    let bar = (progress && total_bytes > 64 << 20).then(|| {
        let b = indicatif::ProgressBar::new(total_bytes);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "analysing {bar:40} {binary_bytes}/{binary_total_bytes} ({eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    enum Rows {
        /// A damaged samples part leaves its rank out of the analysis.
        Samples(Result<Vec<SampleRecord>, DamagedPart>),
        Symbols(Vec<SymbolRecord>),
        /// A damaged phases part leaves its rank out of the phases only
        /// ([`crate::damaged_parts`]).
        Phases(Result<Vec<PhaseRecord>, DamagedPart>),
    }
    let options = ScanOptions::default();
    // Biggest parts first so the two cores finish together.
    parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    let decoded: Vec<(u32, Rows)> = parts
        .par_iter()
        .map(|p| {
            let rows = match p.table {
                Table::Samples => Rows::Samples(crate::damaged_parts::read_part(p, &options)),
                Table::Phases => Rows::Phases(crate::damaged_parts::read_part(p, &options)),
                _ => Rows::Symbols(read_part_records(p, &options)?),
            };
            if let Some(b) = &bar {
                b.inc(p.bytes);
            }
            Ok::<_, AnalyzeError>((p.rank, rows))
        })
        .collect::<Result<_, _>>()?;

    crate::timing::step(|| "samples, symbols and phases read".into());
    let manifest = trace.manifest.clone();
    // Each rank's end (its own clock): rows end there at the latest.
    let exits: HashMap<u32, i64> = manifest
        .ranks
        .iter()
        .filter_map(|r| Some((r.rank, r.exit_ns?)))
        .collect();
    // The programs that ended by an exec: each one's span reaches its exec
    // call (its own clock; `run_window::exec_end`).
    let exec_ends: HashMap<u32, i64> = manifest
        .ranks
        .iter()
        .filter_map(|r| Some((r.rank, crate::run_window::exec_end(r)?)))
        .collect();
    let mut by_rank: std::collections::BTreeMap<u32, RankData> = std::collections::BTreeMap::new();
    for r in &manifest.ranks {
        by_rank.entry(r.rank).or_insert_with(|| RankData {
            rank: r.rank,
            ..RankData::default()
        });
    }
    for p in omp_parts.iter().chain(mpi_parts) {
        by_rank.entry(p.rank).or_insert_with(|| RankData {
            rank: p.rank,
            ..RankData::default()
        });
    }
    let mut symbol_rows = Vec::new();
    let mut phase_parts = Vec::new();
    let mut sample_parts = Vec::new();
    for (rank, rows) in decoded {
        by_rank.entry(rank).or_insert_with(|| RankData {
            rank,
            ..RankData::default()
        });
        match rows {
            Rows::Samples(read) => sample_parts.push((rank, read)),
            Rows::Phases(read) => phase_parts.push((rank, read)),
            Rows::Symbols(v) => symbol_rows.extend(v.into_iter().map(|s| (rank, s))),
        }
    }
    // A rank with a damaged samples part is left out whole: its OpenMP and
    // MPI rows are not read, and what another process read of them is dropped.
    let (sample_rows, mut left_out) = crate::damaged_parts::whole_ranks(sample_parts);
    for (rank, mut v) in sample_rows {
        if let Some(rd) = by_rank.get_mut(&rank) {
            rd.samples.append(&mut v);
        }
    }
    let samples_left_out: std::collections::HashSet<u32> =
        left_out.iter().map(|d| d.rank).collect();

    // A rank with a damaged phases part has none: said first, and by the
    // phase table; no phase restriction can be computed without it.
    let (phase_rows, damaged_phases) = crate::damaged_parts::whole_ranks(phase_parts);
    for (rank, mut v) in phase_rows {
        if let Some(rd) = by_rank.get_mut(&rank) {
            rd.phases.append(&mut v);
        }
    }
    if let (Some(name), Some(d)) = (focus, damaged_phases.first()) {
        return Err(AnalyzeError::Invalid {
            path: d.path.clone(),
            message: format!(
                "the phases of rank {} cannot be read ({}), so that rank's time in phase \"{name}\" is unknown and no report can be restricted to it; without --phase the report covers the other ranks' phases",
                d.rank, d.problem
            ),
        });
    }
    problems.extend(damaged_phases.iter().map(|d| d.trace_problem(dir)));
    let phases_missing: Vec<crate::model::UnreadPhases> =
        damaged_phases.iter().map(|d| d.unread(dir)).collect();
    // The ranks with OpenMP or MPI rows: when every one is left out, there
    // is nothing to analyse.
    let ranks_with_rows: Vec<u32> = rank_parts.keys().copied().collect();

    // Aggregates are merged while loading under the code location each
    // rank's own symbols give its addresses (`code_map`).
    let code = crate::code_map::CodeMap::new(symbol_rows);
    // What the analysis keeps of every rank, and so what is left of the limit
    // for the OpenMP rows decoded at once.
    let kept: u64 = by_rank.values().map(kept_bytes).sum();
    let omp_budget = (opts.memory.saturating_sub(kept) / OMP_SHARE).max(1);
    let mut memory_warning = None;

    // OpenMP: ranks in batches of at most `omp_budget` of decoded rows, the
    // ranks of a batch and the parts of a rank decoded in parallel; each rank's
    // rows go through the OpenMP pass and are dropped, its aggregates merged.
    let clocks = Clocks::from_manifest(&manifest);
    let manifest_threads: HashMap<u32, u32> =
        manifest.ranks.iter().map(|r| (r.rank, r.threads)).collect();
    // A rank's times can be held against the run's window when they are on
    // rank 0's clock: rank 0's host, or corrected by clock offsets.
    let host0 = manifest.ranks.iter().find(|r| r.rank == 0).map(|r| &r.host);
    let on_clock0: std::collections::HashSet<u32> = manifest
        .ranks
        .iter()
        .filter(|r| Some(&r.host) == host0 || !r.clock_offsets.is_empty())
        .map(|r| r.rank)
        .collect();
    let checked_clock = |rank: u32| on_clock0.contains(&rank);
    for rd in by_rank.values_mut() {
        let map = clocks.map(rd.rank);
        for p in &mut rd.phases {
            clip(&mut p.start_ns, &mut p.end_ns, raw);
            if let Some(m) = map {
                p.start_ns = m.to_global(p.start_ns);
                p.end_ns = m.to_global(p.end_ns);
            }
        }
    }
    let focus = match focus {
        None => None,
        Some(name) => Some(
            crate::focus::Focus::new(
                name,
                by_rank
                    .values()
                    .flat_map(|rd| rd.phases.iter().map(|p| (rd.rank, p))),
            )
            .ok_or_else(|| AnalyzeError::Invalid {
                path: dir.join(Table::Phases.dir_name()),
                message: format!(
                    "no phase named \"{name}\"; {}",
                    crate::phases::names_sentence(by_rank.values().flat_map(|rd| &rd.phases))
                ),
            })?,
        ),
    };
    // Each rank's phase windows on rank 0's clock, for the OpenMP time inside them.
    let mut phase_windows: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
    let mut phase_depths: HashMap<u32, Vec<u32>> = HashMap::new();
    for rd in by_rank.values_mut() {
        if let Some(f) = &focus {
            f.phases(rd.rank, &mut rd.phases);
        }
        hyscope_format::sort_phases(&mut rd.phases);
        let windows = rd.phases.iter().map(|p| (p.start_ns, p.end_ns)).collect();
        phase_windows.insert(rd.rank, windows);
        phase_depths.insert(rd.rank, rd.phases.iter().map(|p| p.depth).collect());
    }
    let mut phase_omp: HashMap<u32, InPhases> = HashMap::new();
    let mut rank_parts = rank_parts
        .into_iter()
        .skip(own.start)
        .take(own.len())
        .peekable();
    let mut merged = OmpMerge::default();
    let mut merged_mpi = MpiMerge::default();
    let code_ref = &code;
    let canon = |rank: u32| move |a: u64| code_ref.note(rank, a);
    let mut omp_span: HashMap<u32, OmpSpan> = HashMap::new();
    // Each rank's MPI results: what its RankData keeps, its spans and the
    // rows clipped to the run; its message sides.
    let mut mpi_kept: HashMap<u32, (crate::rank_mpi::RankMpiKept, MpiSpans, u64)> = HashMap::new();
    let mut sides: std::collections::BTreeMap<u32, crate::aligned::RankSides> = Default::default();
    // A rank's results, added in rank order.
    let mut apply = |out: RankOut| {
        let RankOut { rank, read } = out;
        if samples_left_out.contains(&rank) {
            return;
        }
        let RankRead { omp, mpi } = match read {
            Ok(r) => r,
            Err(mut damaged) => {
                left_out.append(&mut damaged);
                return;
            }
        };
        let MpiOut {
            spans,
            clipped,
            sides: rank_sides,
            pass,
        } = mpi;
        let kept_mpi = merged_mpi.add(pass, &canon(rank));
        mpi_kept.insert(rank, (kept_mpi, spans, clipped));
        sides.insert(rank, rank_sides);
        let Some(OmpOut {
            pass,
            span,
            clipped,
            in_phases,
        }) = omp
        else {
            return;
        };
        phase_omp.insert(rank, in_phases);
        if clipped > 0 {
            problems.push(clipped_problem(rank, clipped, "OpenMP", window));
        }
        // A rank is decoded whole (its regions span its parts): one
        // bigger than the limit allows is said, once.
        let need = span.decoded * OMP_ROW_BYTES + kept;
        if need > opts.memory && memory_warning.is_none() {
            memory_warning = Some(crate::model::MemoryExceeded {
                what: format!(
                    "rank {rank}'s {} OpenMP rows (a rank is analysed whole) with the samples kept",
                    span.decoded
                ),
                need_bytes: need,
                limit_bytes: opts.memory,
            });
        }
        omp_span.insert(rank, span);
        merged.add(pass, canon(rank));
    };
    // A worker's exchange, through which its batches go as they end.
    let outgoing = exchange.filter(|_| worker);
    // One row buffer per rank of a batch, reused from batch to batch: its pages
    // are faulted in once, not once per part and rank.
    let mut pool: Vec<Vec<OmpRecord>> = Vec::new();
    let omp_options = ScanOptions {
        batch_size: Some(OMP_DECODE_BATCH),
        ..ScanOptions::default()
    };
    // One rank's OpenMP rows: decoded into `buf`, clipped, on global time,
    // restricted to the focus, through the per-rank pass.
    let omp_rank = |rank: u32,
                    ps: &[&PartFile],
                    buf: &mut Vec<OmpRecord>|
     -> Result<OmpOut, AnalyzeError> {
        let t_decode = std::time::Instant::now();

        let rows = decode_rank(ps, &omp_options, buf, bar.as_ref())?;
        let decoded = rows.len() as u64;
        if let Some(&exit) = exits.get(&rank) {
            clip_to_exit(rows, exit);
        }
        let map = clocks.map(rank).filter(|m| !m.is_identity());
        let rank_window = if checked_clock(rank) { window } else { raw };
        let clipped: u64 = rows
            .par_iter_mut()
            .map(|r| {
                let mut c = clip(&mut r.start_ns, &mut r.end_ns, raw);
                if let Some(m) = map {
                    r.start_ns = m.to_global(r.start_ns);
                    r.end_ns = m.to_global(r.end_ns);
                }
                c |= clip(&mut r.start_ns, &mut r.end_ns, rank_window);
                u64::from(c)
            })
            .sum();
        let span = |rows: &[OmpRecord]| {
            rows.par_chunks(1 << 20)
                .map(|rows| {
                    rows.iter()
                        .fold((i64::MAX, i64::MIN, 0u32), |(f, l, t), r| {
                            (f.min(r.start_ns), l.max(r.end_ns), t.max(r.thread + 1))
                        })
                })
                .reduce(
                    || (i64::MAX, i64::MIN, 0u32),
                    |a, b| (a.0.min(b.0), a.1.max(b.1), a.2.max(b.2)),
                )
        };
        // The whole run's span and threads, before a focus cuts the rows;
        // a program that ended by an exec runs until it.
        let (whole_first, whole_last, threads) = span(rows);
        let exec = exec_ends.get(&rank).map(|&e| {
            map.map_or(e, |m| m.to_global(e))
                .clamp(rank_window.0, rank_window.1)
        });
        let whole = crate::run_window::through_exec(
            (!rows.is_empty()).then_some((whole_first, whole_last)),
            exec,
        );
        let rows: &[OmpRecord] = match &focus {
            Some(f) => {
                let mut kept = 0;
                for i in 0..rows.len() {
                    if f.keep(rank, rows[i].start_ns) {
                        rows.swap(kept, i);
                        kept += 1;
                    }
                }
                let rows = &mut rows[..kept];
                rows.par_iter_mut()
                    .for_each(|r| f.map_interval(&mut r.start_ns, &mut r.end_ns));
                rows
            }
            None => rows,
        };
        let (first, last) = match (&focus, whole) {
            (None, Some(whole)) => whole,
            _ => {
                let (first, last, _) = span(rows);
                (first, last)
            }
        };
        if threads > MAX_THREADS {
            return Err(AnalyzeError::Invalid {
                path: dir.join(Table::Omp.dir_name()).join(format!("rank={rank}")),
                message: format!(
                    "a row of thread {} (more than the {MAX_THREADS} threads hyscope reads): the part is damaged",
                    threads - 1
                ),
            });
        }
        let threads = threads
            .max(manifest_threads.get(&rank).copied().unwrap_or(1))
            .max(1);
        let windows = phase_windows.get(&rank).map_or(&[][..], Vec::as_slice);
        let in_phases = (
            crate::phases::omp_in_windows(rows, windows),
            crate::phases::code_in_windows(
                crate::phases::omp_constructs(rows),
                windows,
                phase_depths.get(&rank).map_or(&[][..], Vec::as_slice),
            ),
        );
        let t_pass = std::time::Instant::now();
        let pass = match need {
            Need::Analysis => rank_pass(rank, rows, threads),
            Need::RunWindow => crate::omp::pass::join_pass(rank, rows, threads),
        };
        if crate::timing::ranks() {
            crate::timing::say(&format!(
                "{}rank {rank}: {} OpenMP rows decoded in {:.2} s, pass {:.2} s",
                process.map_or(String::new(), |p| format!("process {p}: ")),
                rows.len(),
                (t_pass - t_decode).as_secs_f64(),
                t_pass.elapsed().as_secs_f64()
            ));
        }
        Ok::<_, AnalyzeError>(OmpOut {
            pass,
            span: OmpSpan {
                first,
                last,
                rows: rows.len() as u64,
                decoded,
                threads,
                whole,
            },
            clipped,
            in_phases,
        })
    };
    let several_hosts = run_hosts(&manifest).0.len() > 1;
    let limits = crate::mpi::EagerLimits::new(&manifest, several_hosts);
    let mut rows_per_byte = OMP_ROWS_PER_BYTE;
    while rank_parts.peek().is_some() {
        // The next ranks whose OpenMP rows, as dense as the densest rank so far, fit.
        let mut batch: Vec<(u32, RankParts)> = Vec::new();
        let mut batch_rows = 0u64;
        while let Some((_, (ps, _))) = rank_parts.peek() {
            let bytes: u64 = ps.iter().map(|p| p.bytes).sum();
            let rows = (bytes as f64 * rows_per_byte) as u64;
            if !batch.is_empty() && (batch_rows + rows) * OMP_ROW_BYTES > omp_budget {
                break;
            }
            batch_rows += rows;
            batch.push(rank_parts.next().expect("peeked"));
        }
        let batch_bytes: Vec<u64> = batch
            .iter()
            .map(|(_, (ps, _))| ps.iter().map(|p| p.bytes).sum())
            .collect();
        if pool.len() < batch.len() {
            pool.resize_with(batch.len(), Vec::new);
        }
        let done: Vec<RankOut> = batch
            .into_par_iter()
            .zip(pool.par_iter_mut())
            .map(|((rank, (ps, mpi_ps)), buf)| {
                if samples_left_out.contains(&rank) {
                    return Ok(RankOut {
                        rank,
                        read: Err(Vec::new()),
                    });
                }
                // A part of the rank that cannot be read leaves it out.
                let damaged = |e: AnalyzeError| match e {
                    AnalyzeError::Format(f) => {
                        match DamagedPart::among(&[ps.as_slice(), mpi_ps.as_slice()].concat(), &f) {
                            Some(d) => Ok(RankOut {
                                rank,
                                read: Err(vec![d]),
                            }),
                            None => Err(AnalyzeError::Format(f)),
                        }
                    }
                    e => Err(e),
                };
                let omp = if ps.is_empty() {
                    None
                } else {
                    match omp_rank(rank, &ps, buf) {
                        Ok(o) => Some(o),
                        Err(e) => return damaged(e),
                    }
                };
                let input = crate::mpi_rows::MpiInputs {
                    clocks: &clocks,
                    exit: exits.get(&rank).copied(),
                    window,
                    checked_clock: checked_clock(rank),
                    focus: focus.as_ref(),
                    limits: &limits,
                    phases: by_rank
                        .get(&rank)
                        .map_or(&[][..], |rd| rd.phases.as_slice()),
                    regions: omp.as_ref().map_or(&[][..], |o| o.pass.regions()),
                    omp_span: omp
                        .as_ref()
                        .filter(|o| o.span.rows > 0)
                        .map(|o| (o.span.first, o.span.last)),
                    omp_whole_span: omp.as_ref().and_then(|o| o.span.whole),
                    process,
                };
                let mpi = match crate::mpi_rows::read_rank_mpi(rank, &mpi_ps, &input, bar.as_ref())
                {
                    Ok(m) => m,
                    Err(e) => return damaged(e),
                };
                Ok::<_, AnalyzeError>(RankOut {
                    rank,
                    read: Ok(RankRead { omp, mpi }),
                })
            })
            .collect::<Result<_, _>>()?;
        let mut handed = Vec::new();
        for (out, bytes) in done.into_iter().zip(batch_bytes) {
            if let (Ok(RankRead { omp: Some(o), .. }), true) = (&out.read, bytes > 0) {
                rows_per_byte = rows_per_byte.max(o.span.decoded as f64 / bytes as f64);
            }
            match outgoing {
                Some(_) => handed.push(out),
                None => apply(out),
            }
        }
        if let Some(ex) = outgoing
            && !handed.is_empty()
        {
            ex.send_to_root(encode_handed(Ok((handed, false)))?)
                .map_err(|message| AnalyzeError::Exchange { message })?;
        }
        // The buffers are kept for the next batch unless they outgrew the limit.
        let mut held: u64 = pool.iter().map(|b| b.capacity() as u64).sum::<u64>() * OMP_ROW_BYTES;
        while held > omp_budget
            && let Some(b) = pool.pop()
        {
            held -= b.capacity() as u64 * OMP_ROW_BYTES;
        }
    }
    drop(pool);
    crate::timing::step(|| "this process's ranks' OpenMP and MPI rows analysed".into());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if outgoing.is_some() {
        return Ok(Loaded::Part);
    }
    // The other processes' ranks follow process 0's, in process order.
    if let Some(mut from) = pending.take() {
        let (mut receiving, mut adding) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
        loop {
            let t0 = std::time::Instant::now();
            let Some(outs) = from.next_part()? else { break };
            let t1 = std::time::Instant::now();
            outs.into_iter().for_each(&mut apply);
            receiving += t1 - t0;
            adding += t1.elapsed();
        }
        crate::timing::step(|| {
            format!(
                "the other processes' ranks added ({:.2} s waiting for and decoding them, {:.2} s adding)",
                receiving.as_secs_f64(),
                adding.as_secs_f64()
            )
        });
    }
    return_freed_memory();
    // The ranks left out: named first, before any number, and dropped whole.
    crate::damaged_parts::sort(&mut left_out);
    if !left_out.is_empty()
        && ranks_with_rows
            .iter()
            .all(|r| left_out.iter().any(|d| d.rank == *r))
    {
        let d = &left_out[0];
        return Err(AnalyzeError::Invalid {
            path: d.path.clone(),
            message: d.problem.clone(),
        });
    }
    for d in &left_out {
        by_rank.remove(&d.rank);
    }
    let ranks_left_out: Vec<crate::model::LeftOutPart> =
        left_out.iter().map(|d| d.left_out(dir)).collect();
    problems.extend(left_out.iter().map(|d| d.trace_problem(dir)));
    for rd in by_rank.values_mut() {
        (rd.phase_omp, rd.phase_code) = phase_omp.remove(&rd.rank).unwrap_or_default();
        if let Some(&OmpSpan {
            first,
            last,
            rows: n,
            threads,
            whole,
            ..
        }) = omp_span.get(&rd.rank)
        {
            rd.omp_rows = n;
            rd.omp_threads = threads;
            rd.omp_whole_span = whole;
            if n > 0 {
                rd.first_ns = first;
                rd.last_ns = last;
                rd.omp_span = Some((first, last));
            }
        }
    }
    // A rank without MPI rows (nor OpenMP ones) still has its (empty) MPI results.
    let mut mpi_clipped: HashMap<u32, u64> = HashMap::new();
    for rd in by_rank.values_mut() {
        let (kept, spans, clipped) = match mpi_kept.remove(&rd.rank) {
            Some(k) => k,
            None => {
                let empty = crate::rank_mpi::RankMpi::of(
                    rd.rank,
                    &[],
                    &[],
                    &[],
                    crate::rank_mpi::RankMpiInput {
                        window: (0, 0),
                        regions: &[],
                        phases: &rd.phases,
                    },
                    &limits,
                );
                sides
                    .entry(rd.rank)
                    .or_insert_with(|| crate::aligned::RankSides {
                        rank: rd.rank,
                        ..Default::default()
                    });
                (
                    merged_mpi.add(empty, &canon(rd.rank)),
                    MpiSpans::default(),
                    0,
                )
            }
        };
        kept.apply(rd);
        rd.mpi_spans = spans;
        if rd.omp_whole_span.is_none()
            && let Some(&e) = exec_ends.get(&rd.rank)
        {
            // A program with MPI rows only, ended by an exec: its span
            // reaches the exec too (its application window ends at
            // `MPI_Finalize` all the same).
            let e = clocks.map(rd.rank).map_or(e, |m| m.to_global(e));
            rd.mpi_spans.whole = crate::run_window::through_exec(rd.mpi_spans.whole, Some(e));
        }
        mpi_clipped.insert(rd.rank, clipped);
    }
    let mut ranks: Vec<RankData> = by_rank.into_values().collect();
    for rd in &mut ranks {
        // The window on this rank's own clock (the offsets are far smaller
        // than the window's slack, so mapping its ends is exact enough).
        let w = match clocks.map(rd.rank) {
            _ if !checked_clock(rd.rank) => raw,
            Some(m) => (
                window.0.saturating_add(m.offset(window.0)).max(raw.0),
                window.1.saturating_add(m.offset(window.1)).min(raw.1),
            ),
            None => window,
        };
        let mpi = mpi_clipped.get(&rd.rank).copied().unwrap_or(0);
        let mut samples = 0u64;
        for r in &mut rd.samples {
            let mut t = r.time_ns;
            samples +=
                u64::from(clip(&mut r.time_ns, &mut t, raw) | clip(&mut r.time_ns, &mut t, w));
        }
        if mpi > 0 {
            problems.push(clipped_problem(rd.rank, mpi, "MPI", window));
        }
        if samples > 0 {
            problems.push(clipped_problem(rd.rank, samples, "sample", window));
        }
    }
    problems.extend(completeness_problems(dir, &manifest));
    let mut warnings = collector_warnings(&manifest);
    warnings.extend(code.clashes());
    warnings.extend(code.notes().iter().cloned());
    let mut data = TraceData {
        dir: dir.to_path_buf(),
        warnings,
        manifest,
        ranks,
        code,
        problems,
        phases_missing,
        ranks_left_out,
        focus,
        memory_warning,
        sides: sides.into_values().collect(),
        ..TraceData::default()
    };
    normalise_clocks(&mut data);
    Ok(Loaded::Whole(Box::new((data, merged, merged_mpi))))
}

/// Bytes the analysis keeps of a rank's rows until the end (its samples and
/// phases).
pub fn kept_bytes(rd: &RankData) -> u64 {
    use std::mem::size_of;
    (rd.samples.capacity() * size_of::<SampleRecord>()
        + rd.phases.capacity() * size_of::<PhaseRecord>()) as u64
}

/// The problem of `n` rows of a rank clipped to the run.
fn clipped_problem(
    rank: u32,
    n: u64,
    what: &str,
    (lo, hi): (i64, i64),
) -> crate::model::TraceProblem {
    let span = if lo > -MAX_CLOCK_NS || hi < MAX_CLOCK_NS {
        format!("outside the run ({lo}..{hi} ns on rank 0's clock)")
    } else {
        "beyond any clock".to_string()
    };
    crate::model::TraceProblem {
        file: Some(match what {
            "OpenMP" => format!("{}/rank={rank}", Table::Omp.dir_name()),
            "MPI" => format!("{}/rank={rank}", Table::Mpi.dir_name()),
            _ => format!("{}/rank={rank}", Table::Samples.dir_name()),
        }),
        rank: Some(rank),
        what: format!("{n} {what} rows have times {span} or end before they start; clipped to it"),
        data_lost: true,
    }
}

/// End the rows at the process's exit (`RankInfo::exit_ns`, its own clock):
/// what the runtime closed later (threads and the initial task ending at
/// shutdown, after the collector encoded the trace) is not the application's
/// time.
fn clip_to_exit(rows: &mut [OmpRecord], exit: i64) {
    rows.par_iter_mut()
        .for_each(|r| clip_interval_to_exit(&mut r.start_ns, &mut r.end_ns, exit));
}

/// What the trace says it lost: each rank that did not finish (and how it
/// ended), a full disk or another write error, dropped events, and spools
/// its processes left that were never encoded.
pub fn completeness_problems(dir: &Path, manifest: &Manifest) -> Vec<crate::model::TraceProblem> {
    use crate::model::TraceProblem;
    let mut problems = Vec::new();
    let leftovers = hyscope_format::spool::to_parquet::leftover_processes(dir);
    for r in &manifest.ranks {
        if leftovers.iter().any(|p| p.rank == r.rank) {
            continue; // said below, from what the process left
        }
        let file = Some(format!("ranks/rank-{}.json", r.rank));
        let problem = |what: String| TraceProblem {
            file: file.clone(),
            rank: Some(r.rank),
            what,
            data_lost: true,
        };
        if let Some(end) = r.end.as_ref().filter(|e| e.is_partial()) {
            let recovered = if r.recovered {
                "; its events up to then were recovered from its spool"
            } else {
                ""
            };
            problems.push(problem(format!(
                "the trace is partial: rank {} {}{recovered}",
                r.rank,
                end.describe()
            )));
        }
        if r.disk_full {
            problems.push(problem(format!(
                "the trace is partial: the disk was full while rank {} wrote it; its events from then on are lost",
                r.rank
            )));
        } else if let Some(e) = &r.write_error {
            problems.push(problem(format!(
                "the trace is partial: rank {} could not write it ({e}); its events from then on are lost",
                r.rank
            )));
        }
        if r.dropped_events > 0 {
            problems.push(problem(format!(
                "rank {} dropped {} events (its buffers were full or they could not be written)",
                r.rank, r.dropped_events
            )));
        }
    }
    for p in leftovers {
        let note = p.end_note.as_ref().and_then(|(_, n)| n.as_ref());
        let how = match note.map(|n| &n.end) {
            Some(hyscope_format::ProcessEnd::Running) | None => String::new(),
            Some(e) => format!("; it {}", e.describe()),
        };
        let why = if note.is_some_and(|n| n.disk_full) {
            format!("the disk was full{how}")
        } else if how.is_empty() {
            "the process ended before encoding them".to_string()
        } else {
            how.trim_start_matches("; it ").to_string()
        };
        let file = p.spools.first().map_or_else(
            || p.end_note.as_ref().map(|(path, _)| path.clone()),
            |s| Some(s.path.clone()),
        );
        problems.push(TraceProblem {
            file: file.map(|f| {
                f.strip_prefix(dir)
                    .map_or_else(|_| f.display().to_string(), |r| r.display().to_string())
            }),
            rank: Some(p.rank),
            what: format!(
                "the trace is partial: rank {} (pid {}) left events in spool/ that are not in the trace ({why}); `hyscope record` encodes them after the job when there is room, `hyscope recover TRACE` for a job run without it",
                p.rank, p.pid
            ),
            data_lost: true,
        });
    }
    let present: std::collections::BTreeSet<u32> = manifest.ranks.iter().map(|r| r.rank).collect();
    let missing = (manifest.world_size as usize).saturating_sub(present.len());
    if missing > 0 {
        let present: Vec<u32> = present.into_iter().collect();
        problems.push(TraceProblem {
            file: Some(hyscope_format::RANKS_DIR.to_string()),
            rank: None,
            what: format!(
                "the trace is partial: {missing} of {} ranks left no rank file ({} {})",
                manifest.world_size,
                if missing == 1 { "rank" } else { "ranks" },
                hyscope_format::rank_ranges::missing_rank_ranges(&present, manifest.world_size),
            ),
            data_lost: true,
        });
    }
    problems
}

/// What the collector warned about while it recorded (`RankInfo::warnings`,
/// printed on the ranks' standard error then), each message once with the
/// ranks that gave it: "collector (ranks 0–3): …". A later reader of the
/// trace learns it too, e.g. that a sampler stopped or a setting was ignored.
pub fn collector_warnings(manifest: &Manifest) -> Vec<String> {
    let mut by_message: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
    for r in &manifest.ranks {
        for w in &r.warnings {
            by_message.entry(w).or_default().push(r.rank);
        }
    }
    by_message
        .into_iter()
        .map(|(message, mut ranks)| {
            ranks.sort_unstable();
            ranks.dedup();
            let who = if ranks.len() == 1 { "rank" } else { "ranks" };
            let ranks = hyscope_format::rank_ranges::rank_ranges(ranks);
            format!("collector ({who} {ranks}): {message}")
        })
        .collect()
}

/// Apply the manifest's clock offsets (with linear drift, [`crate::aligned::clock`])
/// to the samples (the MPI rows were put on global time where they were read,
/// `mpi_rows`), sort them and note each rank's first and last event.
pub fn normalise_clocks(data: &mut TraceData) {
    let clocks = Clocks::from_manifest(&data.manifest);
    data.ranks.par_iter_mut().for_each(|rd| {
        if let Some(m) = clocks.map(rd.rank) {
            for r in &mut rd.samples {
                r.time_ns = m.to_global(r.time_ns);
            }
        }
        rd.samples.sort_by_key(|r| r.time_ns);
        rank_spans(rd);
    });
    data.clock_corrected = data.ranks.iter().any(|rd| clocks.map(rd.rank).is_some());
    data.clock_error_ns = clocks.error_ns;
}

/// Restrict a loaded trace's samples (sorted, on rank 0's clock) to `f`'s
/// phase ([`crate::focus`]; the MPI rows were restricted where they were
/// read): every rank's span and application window become the compacted
/// time axis ([`Focus::span`](crate::focus::Focus::span)); returns the whole
/// run's duration in seconds.
pub fn restrict(f: &crate::focus::Focus, data: &mut TraceData) -> f64 {
    let whole = crate::run_window::of_ranks(&data.ranks);
    for rd in &mut data.ranks {
        let ran = rd.omp_whole_span.is_some() || rd.mpi_spans.whole.is_some();
        f.samples(rd.rank, &mut rd.samples, crate::aligned::series::is_energy);
        if ran {
            (rd.first_ns, rd.last_ns) = f.span();
            (rd.app_start_ns, rd.app_end_ns) = f.span();
        }
    }
    whole.duration_s()
}

/// A rank's first and last event and its application window, from its
/// OpenMP span and its MPI rows (rank 0's clock).
pub fn rank_spans(rd: &mut RankData) {
    // The OpenMP span was measured while loading (on rank 0's clock already).
    (rd.first_ns, rd.last_ns, rd.app_start_ns, rd.app_end_ns) =
        rd.mpi_spans.app_window(rd.omp_span);
}

/// The job's hosts (the manifest's, then any only a rank names) and the
/// job's ranks on each.
pub fn run_hosts(m: &hyscope_format::Manifest) -> (Vec<String>, Vec<u32>) {
    let mut hosts = m.hosts.clone();
    let mut ranks_per_host = vec![0u32; hosts.len()];
    for r in &m.ranks {
        let i = hosts.iter().position(|h| *h == r.host).unwrap_or_else(|| {
            hosts.push(r.host.clone());
            ranks_per_host.push(0);
            hosts.len() - 1
        });
        // A child process and a program exec'd (`processes`) run on their
        // rank's host, as no rank of the job.
        if r.child_of.is_none() {
            ranks_per_host[i] += 1;
        }
    }
    (hosts, ranks_per_host)
}

/// Run facts from the manifest and the rows.
pub fn run_facts(data: &TraceData) -> RunFacts {
    let m = &data.manifest;
    // Sized by the ranks present, not the manifest's world size: ranks that
    // left nothing are listed in the trace's problems, and every per-rank
    // table (the MPI matrix is ranks²) stays proportional to the data.
    let ranks = data.ranks.iter().map(|r| r.rank + 1).max().unwrap_or(0);
    let mut threads = vec![0u32; ranks as usize];
    for r in &m.ranks {
        if let Some(t) = threads.get_mut(r.rank as usize) {
            *t = r.threads;
        }
    }
    for rd in &data.ranks {
        let seen = rd.omp_threads.max(1);
        if let Some(t) = threads.get_mut(rd.rank as usize) {
            *t = (*t).max(seen);
        }
    }
    let (hosts, ranks_per_host) = run_hosts(m);
    // The time analysed: the run's window, or the axis a focus compacted
    // its phase's time to (`restrict`).
    let analysed = crate::run_window::of_spans(data.ranks.iter().map(|r| (r.first_ns, r.last_ns)));
    let mut rank_duration_s = vec![0.0; ranks as usize];
    for rd in &data.ranks {
        if let Some(d) = rank_duration_s.get_mut(rd.rank as usize) {
            *d = ns_to_s(rd.last_ns - rd.first_ns);
        }
    }
    let mut missing = Vec::new();
    if let Some(o) = &m.openmp {
        missing.extend(o.missing.iter().cloned());
    } else if data.ranks.iter().all(|r| r.omp_rows == 0) {
        missing.push(if data.problems.iter().any(|p| p.data_lost) {
            "no OpenMP events in what the trace kept (it is partial: see its problems)".to_string()
        } else {
            "no OpenMP events (no OMPT runtime, or not an OpenMP program)".to_string()
        });
    }
    for s in &m.samplers {
        if !s.available {
            missing.push(format!("sampler `{}` unavailable: {}", s.name, s.reason));
        }
    }
    // The manifest's counts of the ranks analysed: a rank left out for a
    // damaged part is in no number (`damaged_parts`).
    let kept =
        |r: &&hyscope_format::RankInfo| !data.ranks_left_out.iter().any(|p| p.rank == r.rank);
    let counts = |f: fn(&hyscope_format::EventCounts) -> u64| -> u64 {
        m.ranks
            .iter()
            .filter(kept)
            .fold(0u64, |n, r| n.saturating_add(f(&r.events)))
    };
    let omp_rows: u64 = data.ranks.iter().map(|r| r.omp_rows).sum();
    let mpi_rows: u64 = data.ranks.iter().map(|r| r.mpi_rows).sum();
    let sample_rows: u64 = data.ranks.iter().map(|r| r.samples.len() as u64).sum();
    RunFacts {
        command: m.command.clone(),
        start_time: m.start_time.clone(),
        mode: m.mode.clone(),
        ranks,
        threads_per_rank: threads,
        hosts,
        ranks_per_host,
        duration_s: analysed.duration_s(),
        window: crate::run_window::of_ranks(&data.ranks),
        rank_duration_s,
        mpi_library: m.mpi.as_ref().map(|x| x.library_version.trim().to_string()),
        mpi_flavour: m.mpi.as_ref().map(|x| x.flavour.clone()),
        thread_level_requested: m
            .mpi
            .as_ref()
            .and_then(|x| x.thread_level_requested.clone()),
        thread_level_provided: m.mpi.as_ref().and_then(|x| x.thread_level_provided.clone()),
        openmp_runtime: m.openmp.as_ref().map(|o| o.runtime_version.clone()),
        omp_events: counts(|e| e.omp).max(omp_rows),
        mpi_events: counts(|e| e.mpi).max(mpi_rows),
        sample_events: counts(|e| e.samples).max(sample_rows),
        dropped_events: m
            .ranks
            .iter()
            .filter(kept)
            .fold(0u64, |n, r| n.saturating_add(r.dropped_events)),
        missing,
        clock_corrected: data.clock_corrected,
        clock_error_s: ns_to_s(data.clock_error_ns),
        serialized_regions: 0,
        clipped_join_waits: 0,
        clipped_join_wait_s: 0.0,
        placement: Vec::new(),
        collector_init_s: ns_to_s(i64::try_from(m.collector_init_ns()).unwrap_or(i64::MAX)),
        children: crate::processes::children(&m.ranks),
        execs: crate::processes::execs(&m.ranks),
        ranks_left_out: left_out_ranks(data),
        ranks_analysed: data.ranks.len() as u32,
    }
}

/// The ranks [`TraceData::ranks_left_out`] names, in order, each once.
fn left_out_ranks(data: &TraceData) -> Vec<u32> {
    let mut ranks: Vec<u32> = data.ranks_left_out.iter().map(|p| p.rank).collect();
    ranks.dedup();
    ranks
}

/// At process 0: the other processes' results, received from each in
/// process order, one batch ([`Handed`]) at a time up to its last. Dropped
/// before the end, it receives (and drops) the rest, so no process waits
/// forever on an analysis that failed.
struct Pending<'a> {
    exchange: &'a dyn crate::exchange::Exchange,
    next: usize,
}

impl<'a> Pending<'a> {
    fn new(exchange: &'a dyn crate::exchange::Exchange) -> Self {
        Pending { exchange, next: 1 }
    }

    /// The next batch of ranks' results (an error a process met is returned
    /// as this analysis's error), or `None` after the last process's last.
    fn next_part(&mut self) -> Result<Option<Vec<RankOut>>, AnalyzeError> {
        if self.next >= self.exchange.processes() {
            return Ok(None);
        }
        let from = self.next;
        match self.receive() {
            Ok(Ok((outs, _))) => Ok(Some(outs)),
            Ok(Err(remote)) => Err(AnalyzeError::Remote(remote)),
            Err(e) => Err(AnalyzeError::Exchange {
                message: format!("process {from}'s results: {e}"),
            }),
        }
    }

    /// One message from process `next`, moving on to the following process
    /// after its last (an error, or one that cannot be received or decoded,
    /// is its last).
    fn receive(&mut self) -> Result<Handed, String> {
        let got = self.exchange.receive(self.next).and_then(|bytes| {
            postcard::from_bytes::<Handed>(&bytes).map_err(|e| format!("cannot be decoded: {e}"))
        });
        if !matches!(got, Ok(Ok((_, false)))) {
            self.next += 1;
        }
        got
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        while self.next < self.exchange.processes() {
            let _ = self.receive();
        }
    }
}

/// Give the memory freed by the OpenMP rows' decoding and passes back to the
/// system before the analysis goes on. glibc keeps what each thread of the
/// pool freed in that thread's arena, out of sight of `--memory`'s
/// accounting, and the cross-rank analyses and the report then allocate
/// beside it: at 2 × 10^8 events (4,096 ranks) with `--memory 400M`, the peak
/// fell from 440 MB to 370 MB alone, and from 479 MB to 375 MB in process 0
/// of 4 (`BENCHMARKS.md`), in the same time.
fn return_freed_memory() {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: malloc_trim only releases free memory; 0 keeps no padding.
        unsafe { libc::malloc_trim(0) };
        crate::timing::step(|| "freed memory returned to the system".into());
    }
}

//! One rank's MPI rows, read where the rank is analysed ([`crate::load`]):
//! ended at the process's exit and clipped to the run, put on global time,
//! reduced to the rank's spans, message sides ([`RankSides`]) and
//! [`RankMpi`], and dropped. No analysis holds MPI rows: a process of a
//! parallel analysis hands these on instead, and the memory a report needs
//! does not grow with the MPI rows of the trace.

use hyscope_format::{
    MAX_CLOCK_NS, MpiRecord, PartFile, PhaseRecord, ScanOptions, read_part_records,
};
use serde::{Deserialize, Serialize};

use crate::aligned::{Clocks, RankSides, align_rows};
use crate::error::AnalyzeError;
use crate::focus::Focus;
use crate::mpi::EagerLimits;
use crate::rank_mpi::{RankMpi, RankMpiInput};
use crate::trace_data::MpiSpans;

/// What is left of one rank's MPI rows.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct MpiOut {
    pub spans: MpiSpans,
    /// Rows clipped to the run.
    pub clipped: u64,
    /// Over the whole run, renumbered for the focus if any.
    pub sides: RankSides,
    pub pass: RankMpi,
}

/// What reading a rank's MPI rows needs besides its parts.
pub(crate) struct MpiInputs<'a> {
    pub clocks: &'a Clocks,
    /// The process's exit, on its own clock.
    pub exit: Option<i64>,
    /// The run's window on rank 0's clock.
    pub window: (i64, i64),
    /// Whether the rank's times can be held against the window (on rank 0's
    /// host, or corrected by clock offsets).
    pub checked_clock: bool,
    pub focus: Option<&'a Focus>,
    pub limits: &'a EagerLimits<'a>,
    /// The rank's phases, sorted (restricted to the focus if any).
    pub phases: &'a [PhaseRecord],
    /// From the rank's OpenMP pass: the master's parallel regions, the span
    /// of the rows analysed and the whole run's span.
    pub regions: &'a [(i64, i64)],
    pub omp_span: Option<(i64, i64)>,
    pub omp_whole_span: Option<(i64, i64)>,
    /// This process's index in a parallel analysis (named in the timing lines).
    pub process: Option<usize>,
}

/// Read and reduce rank `rank`'s MPI `parts`.
pub(crate) fn read_rank_mpi(
    rank: u32,
    parts: &[&PartFile],
    input: &MpiInputs,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<MpiOut, AnalyzeError> {
    let t_read = std::time::Instant::now();
    let options = ScanOptions::default();
    let mut rows: Vec<MpiRecord> = Vec::new();
    for p in parts {
        rows.append(&mut read_part_records(p, &options)?);
        if let Some(b) = bar {
            b.inc(p.bytes);
        }
    }
    if let Some(exit) = input.exit {
        for r in &mut rows {
            crate::bounds::clip_interval_to_exit(&mut r.start_ns, &mut r.end_ns, exit);
        }
    }
    // The run's window on this rank's own clock (the offsets are far smaller
    // than the window's slack, so mapping its ends is exact enough).
    let raw = (-MAX_CLOCK_NS, MAX_CLOCK_NS);
    let window = input.window;
    let w = match input.clocks.map(rank) {
        _ if !input.checked_clock => raw,
        Some(m) => (
            window.0.saturating_add(m.offset(window.0)).max(raw.0),
            window.1.saturating_add(m.offset(window.1)).min(raw.1),
        ),
        None => window,
    };
    let mut clipped = 0u64;
    for r in &mut rows {
        let c = crate::bounds::clip(&mut r.start_ns, &mut r.end_ns, raw)
            | crate::bounds::clip(&mut r.start_ns, &mut r.end_ns, w);
        clipped += u64::from(c);
    }
    align_rows(input.clocks, rank, &mut rows);
    let spans_rows = rows.len();
    let spans = MpiSpans::of(&rows);
    let mut sides = RankSides::of(rank, &rows);
    let ran = input.omp_whole_span.is_some() || !rows.is_empty();
    let window = match input.focus {
        Some(f) => {
            let index = f.mpi(rank, &mut rows);
            f.sides(&mut sides, &index);
            if ran { f.span() } else { (0, 0) }
        }
        None => {
            let s = spans.app_window(input.omp_span);
            (s.2, s.3)
        }
    };
    let pass = RankMpi::of(
        rank,
        &rows,
        &crate::mpi::received_by_post(&sides),
        &crate::mpi::sent_by_row(&sides),
        RankMpiInput {
            window,
            regions: input.regions,
            phases: input.phases,
        },
        input.limits,
    );
    if crate::timing::ranks() {
        crate::timing::say(&format!(
            "{}rank {rank}: {} MPI rows reduced in {:.2} s",
            input
                .process
                .map_or(String::new(), |p| format!("process {p}: ")),
            spans_rows,
            t_read.elapsed().as_secs_f64()
        ));
    }
    Ok(MpiOut {
        spans,
        clipped,
        sides,
        pass,
    })
}

//! hyscope-analyzer: turns a trace into answers.
//!
//! ```no_run
//! let a = hyscope_analyzer::analyze(std::path::Path::new("trace"), &Default::default()).unwrap();
//! for f in &a.findings { println!("{}: {}", f.title, f.what_to_do); }
//! ```
//!
//! The result model ([`model`]) is plain serde data that the text report, the
//! TUI and the GUI render. Pipeline: [`load`] reads the parts into a
//! [`trace_data::TraceData`] (rayon, one part
//! or piece of a part per task) and puts every timestamp on rank 0's clock;
//! [`omp`] rebuilds regions and loops per rank (both cores on each rank, while loading); [`tuner`] simulates loop schedules; [`mpi`]
//! builds the profile and wait states from [`aligned`]'s matched messages and
//! collectives; [`phases`] restricts them to the named phases; [`memory`], [`energy`], [`pop`] and
//! [`findings`] derive the rest. [`compare`] diffs two analyses.

pub mod aligned;
mod bounds;
pub mod code_map;
pub mod compare;
pub mod damaged_parts;
pub mod demangle;
pub mod energy;
mod error;
mod exchange;
pub mod findings;
pub mod focus;
pub mod load;
pub mod memory;
pub mod model;
pub mod mpi;
mod mpi_rows;
pub mod omp;
mod options;
pub mod parallel;
pub mod phases;
pub mod placement;
pub mod pop;
pub mod processes;
pub mod rank_mpi;
pub mod run_window;
pub mod timeline;
pub mod timing;
pub mod trace_data;
pub mod tuner;
pub mod units;

use std::path::Path;

pub use compare::compare;
pub use error::AnalyzeError;
pub use model::*;
pub use options::{AnalyzeOptions, BufferParams, DEFAULT_MEMORY};

/// Analyse the trace in `trace_dir`.
pub fn analyze(trace_dir: &Path, options: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    timing::start();
    let (data, merged_omp, merged_mpi) = load::load(trace_dir, options)?;
    Ok(finish(data, merged_omp, merged_mpi, options))
}

/// The [`run_window::RunExtent`] of the trace in `dir`, the analysis's to the
/// nanosecond (and its ranks left out, the same list): the same loader ([`crate::load`]) under the same memory
/// limit (`memory`, bytes: [`crate::AnalyzeOptions::memory`]), with of the
/// OpenMP pass only its count of clipped ends
/// ([`crate::omp::pass::join_pass`]) and without the cross-rank analyses
/// (message matching, wait states, memory, energy, POP, findings), which
/// neither the window nor the clipped ends depend on.
pub fn run_extent(dir: &Path, memory: u64) -> Result<run_window::RunExtent, AnalyzeError> {
    let opts = crate::AnalyzeOptions {
        memory,
        ..crate::AnalyzeOptions::default()
    };
    timing::start();
    let (data, omp) = load::load_for_run_window(dir, &opts)?;
    let (clipped_join_waits, clipped_join_wait_s) = omp.clipped_join_waits();
    Ok(run_window::RunExtent {
        window: run_window::of_ranks(&data.ranks),
        clipped_join_waits,
        clipped_join_wait_s,
        ranks_left_out: data.ranks_left_out,
    })
}

/// The analysis from the loaded trace and every rank's OpenMP aggregates
/// (merged in rank order): the cross-rank analyses and everything derived.
fn finish(
    mut data: trace_data::TraceData,
    merged_omp: omp::OmpMerge,
    merged_mpi: rank_mpi::MpiMerge,
    options: &AnalyzeOptions,
) -> Analysis {
    // Matched on the whole run, restricted afterwards (`focus`).
    timing::step(|| "loaded".into());
    // Matched on the whole run and dropped where a focus left a side out
    // (the sides were restricted where the rows were read).
    let left_out: Vec<u32> = data.ranks_left_out.iter().map(|p| p.rank).collect();
    let (messages, collectives) =
        aligned::match_sides_without(std::mem::take(&mut data.sides), &left_out);
    timing::step(|| "matched messages and collectives".into());
    let memory_warning = data
        .memory_warning
        .take()
        .or_else(|| kept_over_limit(&data, &messages, &collectives, options.memory));
    // The collector's own (what it could not record) first, as the loader
    // listed them; the analysis's notes after them, sorted.
    let collector_warnings = data.warnings.clone();
    let mut warnings: Vec<String> = messages
        .warning()
        .into_iter()
        .chain(messages.left_out_note())
        .collect();
    let focus = data.focus.take().map(|f| {
        let run_duration_s = load::restrict(&f, &mut data);
        f.info(run_duration_s)
    });
    let data = &data;
    let mut run = load::run_facts(data);
    // Where threads took turns on CPUs, for the loops' schedule advice;
    // again below with the threads' busy times.
    run.placement = placement::rank_placement(&data.manifest, &run, &[]);
    let omp = omp::analyze_omp(data, &run, merged_omp, &mut warnings);
    let mpi_rows = merged_mpi.profile.rows;
    let mpi = mpi::analyze_mpi(data, &run, merged_mpi.profile);
    let waits = mpi::wait_states(data, &run, &messages, &collectives);
    drop(collectives);
    let memory = memory::analyze_memory(data, &run, options, &merged_mpi.graph, mpi_rows);
    let energy = energy::analyze_energy(data, &run, &omp);
    let pop = pop::analyze_pop(data, &run, &omp);
    let mut phases = phases::analyze_phases(data, &run);
    // A phase's share is of the whole run, also when the run is cut to a phase.
    if let (Some(f), Observable::Observed(ps)) = (&focus, &mut phases)
        && f.run_duration_s > 0.0
    {
        for p in ps {
            p.share = p.time_s / f.run_duration_s;
        }
    }
    timing::step(|| "analysed".into());
    run.placement = placement::rank_placement(&data.manifest, &run, &omp.ranks);
    run.serialized_regions = omp.serialized_regions;
    run.clipped_join_waits = omp.clipped_join_waits;
    run.clipped_join_wait_s = omp.clipped_join_wait_s;
    let mut analysis = Analysis {
        trace_dir: data.dir.display().to_string(),
        run,
        pop,
        regions: omp.regions,
        loops: omp.loops,
        openmp: omp.overhead,
        mpi,
        wait_states: waits,
        messages,
        memory,
        energy,
        findings: Vec::new(),
        warnings: Vec::new(),
        integrity: TraceIntegrity {
            problems: data.problems.clone(),
        },
        phases,
        phases_missing: data.phases_missing.clone(),
        ranks_left_out: data.ranks_left_out.clone(),
        focus,
        memory_warning,
    };
    analysis.findings = findings::findings(&analysis);
    phases::name_findings(&mut analysis.findings, data);
    warnings.sort();
    warnings.dedup();
    analysis.warnings = collector_warnings;
    analysis.warnings.extend(warnings);
    analysis
}

/// What the cross-rank analyses hold at once (every rank's samples and
/// phases, the matched messages and collectives), when it exceeds `limit`.
fn kept_over_limit(
    data: &trace_data::TraceData,
    messages: &aligned::MessageList,
    collectives: &[aligned::CollectiveInstance],
    limit: u64,
) -> Option<MemoryExceeded> {
    use std::mem::size_of;
    let rows: u64 = data.ranks.iter().map(load::kept_bytes).sum();
    let matched = (messages.messages.capacity() * size_of::<aligned::Message>()
        + collectives
            .iter()
            .map(|c| {
                size_of::<aligned::CollectiveInstance>()
                    + c.members.capacity() * size_of::<aligned::collectives::Member>()
            })
            .sum::<usize>()) as u64;
    let need = rows + matched;
    (need > limit).then(|| MemoryExceeded {
        what: format!(
            "the samples of every rank with {} matched messages and {} collective instances",
            messages.messages.len(),
            collectives.len()
        ),
        need_bytes: need,
        limit_bytes: limit,
    })
}

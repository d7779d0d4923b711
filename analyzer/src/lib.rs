//! hyscope-analyzer: turns a trace into answers.
//!
//! ```no_run
//! let a = hyscope_analyzer::analyze(std::path::Path::new("trace"), &Default::default()).unwrap();
//! for f in &a.findings { println!("{}: {}", f.title, f.what_to_do); }
//! ```
//!
//! The result model ([`model`]) is plain serde data that the text report, the
//! TUI and the GUI render. Pipeline: [`load`] reads the parts (rayon, one part
//! or piece of a part per task) and puts every timestamp on rank 0's clock;
//! [`omp`] rebuilds regions and loops per rank (both cores on each rank, while loading); [`tuner`] simulates loop schedules; [`mpi`]
//! builds the profile and wait states from [`aligned`]'s matched messages and
//! collectives; [`phases`] restricts them to the named phases; [`memory`], [`energy`], [`pop`] and
//! [`findings`] derive the rest. [`compare`] diffs two analyses.

pub mod aligned;
pub mod compare;
pub mod demangle;
pub mod energy;
pub mod findings;
pub mod load;
pub mod memory;
pub mod model;
pub mod mpi;
pub mod omp;
pub mod phases;
pub mod placement;
pub mod pop;
pub mod timeline;
pub mod tuner;

use std::path::{Path, PathBuf};

pub use compare::compare;
pub use model::*;

/// What to analyse and with which model parameters.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Rank counts the memory footprint is projected to.
    pub projection_ranks: Vec<u64>,
    /// Memory per core for the projection warning (bytes); None = read /proc/meminfo of this machine.
    pub memory_per_core: Option<u64>,
    /// HCAs per node (H of Didelot 2014 Table 3.4).
    pub hcas_per_node: u32,
    /// Buffer model parameters (documented defaults in [`memory::BufferParams`]).
    pub buffers: memory::BufferParams,
    /// Show an indicatif progress bar while reading big traces.
    pub progress: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            projection_ranks: vec![1_024, 32_768, 1_048_576],
            memory_per_core: None,
            hcas_per_node: 1,
            buffers: memory::BufferParams::default(),
            progress: false,
        }
    }
}

/// Why a trace could not be analysed. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Format(#[from] hyscope_format::FormatError),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Analyse the trace in `trace_dir`.
pub fn analyze(trace_dir: &Path, options: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    let (data, passes) = load::load(trace_dir, options.progress)?;
    let data = &data;
    let mut warnings = data.warnings.clone();
    let run = load::run_facts(data);
    let omp = omp::analyze_omp(data, &run, passes, &mut warnings);
    let mpi = mpi::analyze_mpi(data, &run, &omp);
    let ranks: Vec<aligned::RankRows> = data
        .ranks
        .iter()
        .map(|rd| aligned::RankRows {
            rank: rd.rank,
            rows: &rd.mpi,
        })
        .collect();
    let messages = aligned::match_messages(&ranks);
    let collectives = aligned::match_collectives(&ranks);
    drop(ranks);
    warnings.extend(messages.warning());
    let waits = mpi::wait_states(data, &run, &messages, &collectives);
    drop(collectives);
    let memory = memory::analyze_memory(data, &run, options);
    let energy = energy::analyze_energy(data, &run, &omp);
    let pop = pop::analyze_pop(data, &run, &omp);
    let phases = phases::analyze_phases(data, &run);
    let mut run = run;
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
    };
    analysis.findings = findings::findings(&analysis);
    phases::name_findings(&mut analysis.findings, data);
    warnings.sort();
    warnings.dedup();
    analysis.warnings = warnings;
    Ok(analysis)
}

//! `hyscope report <trace> [B] [--json]`: the analysis as readable text (or
//! JSON), or the comparison of two traces.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use hyscope_analyzer::*;

use crate::units;

pub(crate) mod compare;
mod energy;
pub(crate) mod memory;
pub(crate) mod mpi;
mod openmp;
pub mod parallel;
mod phases;
pub(crate) mod run;
pub use compare::render_comparison;
pub use run::collector_in_mpi_init;
mod table;

#[derive(clap::Args)]
pub struct Args {
    /// The trace directory.
    pub trace: PathBuf,
    /// A second trace: compare TRACE (A) with it (B).
    pub other: Option<PathBuf>,
    /// Print JSON (the analyzer's result model) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Rank counts to project the MPI memory footprint to.
    #[arg(long, value_delimiter = ',', default_values_t = [1_024u64, 32_768, 1_048_576])]
    pub project: Vec<u64>,
    /// Memory per core in bytes for the projection warning (default: this machine's).
    #[arg(long)]
    pub memory_per_core: Option<u64>,
    /// HCAs per node (H of the queue-pair formulas).
    #[arg(long, default_value_t = 1)]
    pub hcas: u32,
    /// Ranks per node (C) of the projection (default: the recorded run's,
    /// the most ranks on one of its nodes). A rank's peers on its node cost
    /// shared memory, the others network buffers and queue pairs.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub ranks_per_node: Option<u32>,
    /// Rows per table (findings, call sites...).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Restrict the report to this phase (a name of the report's phase
    /// table): the phase in detail, then every section over its time only.
    #[arg(long)]
    pub phase: Option<String>,
    /// Memory the analysis may use (`2GiB`, `512M`; K, M, G are binary):
    /// it reads as many ranks at once as this allows. Where the trace's MPI
    /// rows, samples and matched messages alone need more, or the process's
    /// peak with every rank's results went above it, one warning says so and
    /// the analysis goes on above it.
    #[arg(long, default_value = "2GiB", value_parser = memory_size)]
    pub memory: u64,
    /// Under `mpirun`/`srun` (more than one process): the MPI flavour of the
    /// launcher (auto: Open MPI's `mpirun` or Slurm → Open MPI, MPICH's → MPICH).
    #[arg(long, value_enum, default_value_t = crate::record::Flavour::Auto)]
    pub mpi_flavour: crate::record::Flavour,
    /// Under `mpirun`/`srun`: the MPI library of the parallel analysis
    /// (default: `libhyscope_par.so`, or `libhyscope_par-mpich.so` for MPICH,
    /// where `record` finds the collector).
    #[arg(long, value_name = "FILE")]
    pub mpi_lib: Option<PathBuf>,
    /// Write the report to FILE instead of standard output. Under
    /// `mpirun`/`srun`, process 0 writes it itself, not through the
    /// launcher's forwarding of its output, which takes seconds for the JSON
    /// of a big trace.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A size in bytes with an optional unit (binary multiples).
fn memory_size(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_binary()
        .parse_size(s)
        .map_err(|e| format!("{e} (a size such as 2GiB or 512M)"))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Checked by every process before any analysis (the file itself is
    // created by the one that writes it, once the analysis is done).
    if let Some(path) = &args.output {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            anyhow::bail!(
                "cannot write the report to {}: {} is not a directory",
                path.display(),
                dir.unwrap_or(path).display()
            );
        }
    }
    let options = AnalyzeOptions {
        projection_ranks: args.project.clone(),
        memory_per_core: args.memory_per_core,
        hcas_per_node: args.hcas,
        ranks_per_node: args.ranks_per_node,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        phase: args.phase.clone(),
        memory: args.memory,
        ..AnalyzeOptions::default()
    };
    // Under a launcher, the processes share one analysis (not a comparison:
    // process 0 runs that alone); no launcher, no MPI.
    let launch = parallel::launched(|k| std::env::var(k).ok(), args.mpi_flavour);
    let mut mpi = None;
    if let Some(l) = &launch {
        let alone = |why: String| {
            if l.rank == 0 {
                eprintln!(
                    "hyscope: warning: {why}; process 0 analyses the whole trace alone and the other {} processes exit without output",
                    l.size - 1
                );
            }
        };
        if args.other.is_some() {
            if l.rank != 0 {
                return Ok(ExitCode::SUCCESS);
            }
        } else if let Some(why) = &l.unusable {
            alone(why.clone());
            if l.rank != 0 {
                return Ok(ExitCode::SUCCESS);
            }
        } else {
            match parallel::Mpi::open(args.mpi_lib.as_deref(), l.flavour) {
                Ok(m) if hyscope_analyzer::parallel::Exchange::processes(&m) == l.size => {
                    // This process's share of its node's cores, no more:
                    // the node's other processes analyse on the rest.
                    use hyscope_analyzer::parallel::Exchange;
                    let own = m.threads().get(m.process()).copied().unwrap_or(1);
                    let _ = rayon::ThreadPoolBuilder::new()
                        .num_threads(own.max(1))
                        .build_global();
                    mpi = Some(m)
                }
                Ok(m) => alone(format!(
                    "the {:?} MPI library sees {} processes where the launcher started {} ({}): is it the launcher's flavour (--mpi-flavour)?",
                    l.flavour,
                    hyscope_analyzer::parallel::Exchange::processes(&m),
                    l.size,
                    l.variable
                )),
                Err(e) => alone(e),
            }
            if mpi.is_none() && l.rank != 0 {
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    let a = match &mpi {
        Some(m) => match hyscope_analyzer::parallel::analyze_parallel(&args.trace, &options, m)? {
            Some(a) => a,
            // Another process: its ranks went to process 0, which prints.
            None => return Ok(ExitCode::SUCCESS),
        },
        None => analyze(&args.trace, &options)?,
    };
    let b = match &args.other {
        Some(other) => Some(analyze(other, &options)?),
        None => None,
    };
    // A partial trace: one line each, then the report of what is left.
    crate::partial::say(&args.trace, &a);
    if let (Some(dir), Some(b)) = (&args.other, &b) {
        crate::partial::say(dir, b);
    }
    let warned = [Some(&a), b.as_ref()]
        .into_iter()
        .flatten()
        .fold(false, |warned, x| memory_warning(x) | warned);
    if !warned {
        let ranks = b
            .as_ref()
            .map_or(a.run.ranks, |b| a.run.ranks.max(b.run.ranks));
        peak_warning(options.memory, ranks);
    }
    use std::io::Write;
    let cannot_write = |path: &std::path::Path, e| {
        anyhow::anyhow!("cannot write the report to {}: {e}", path.display())
    };
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::fs::File::create(path).map_err(|e| cannot_write(path, e))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut stdout = std::io::BufWriter::new(sink);
    let written = if let Some(b) = &b {
        let cmp = compare(&a, b);
        if args.json {
            json_line(&mut stdout, &cmp)
        } else {
            writeln!(stdout, "{}", render_comparison(&cmp))
        }
    } else if args.json {
        // Written as it is serialized: the JSON of a big trace (every
        // message) is not built as one string first.
        json_line(&mut stdout, &a)
    } else {
        writeln!(stdout, "{}", render(&a, args.top))
    };
    // A closed pipe (`| head`) is not an error worth a message.
    match written.and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => match &args.output {
            Some(path) => Err(cannot_write(path, e)),
            None => Err(e.into()),
        },
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Pretty JSON and a newline.
fn json_line(out: &mut impl std::io::Write, v: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, v)?;
    writeln!(out)
}

/// The analysis's one warning that it exceeded `--memory`, on stderr; true
/// when there was one.
fn memory_warning(a: &Analysis) -> bool {
    let text = memory_warning_text(a);
    if let Some(text) = &text {
        eprintln!("hyscope: warning: {text}");
    }
    text.is_some()
}

/// The process's peak resident memory against `--memory`, on stderr when
/// above it. The analysis bounds the rows it decodes at once and warns of
/// what it holds whole (one rank's rows, the cross-rank data); the results
/// of every rank are on top, and only the peak says what it all took.
fn peak_warning(limit: u64, ranks: u32) {
    if let Some(peak) = hyscope_format::proc_status::peak_rss()
        && peak > limit
    {
        eprintln!(
            "hyscope: warning: the analysis (the MPI rows and matched messages held to the end, and the results of {ranks} ranks) took {} of memory at its peak, more than the limit of {} (--memory)",
            units::bytes(peak as f64),
            units::bytes(limit as f64)
        );
    }
}

/// What the analysis says when it went above its memory limit (the report
/// prints it on stderr, the GUI among its warnings).
pub fn memory_warning_text(a: &Analysis) -> Option<String> {
    a.memory_warning.as_ref().map(|m| {
        format!(
            "{} needed {} of memory, more than the limit of {} (--memory); the analysis went on above it",
            m.what,
            units::bytes(m.need_bytes as f64),
            units::bytes(m.limit_bytes as f64)
        )
    })
}

/// The whole text report: one function per section, in the order printed.
pub fn render(a: &Analysis, top: usize) -> String {
    let mut out = String::new();
    match &a.focus {
        Some(f) => {
            let _ = writeln!(out, "hyscope report — {} — phase {}", a.trace_dir, f.phase);
            phases::focus(&mut out, a, f);
        }
        None => {
            let _ = writeln!(out, "hyscope report — {}", a.trace_dir);
        }
    }
    run::integrity(&mut out, &a.integrity);
    run::facts(&mut out, a);
    phases::render_phases(&mut out, a);
    run::findings(&mut out, a, top);
    run::pop(&mut out, a);
    openmp::regions(&mut out, a, top);
    openmp::loops(&mut out, a, top);
    openmp::runtime(&mut out, a, top);
    mpi::profile(&mut out, a, top);
    mpi::wait_states(&mut out, a, top);
    memory::footprint(&mut out, a);
    energy::energy(&mut out, a);
    run::warnings(&mut out, a);
    out
}

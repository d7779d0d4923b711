//! `hyscope recover TRACE`: encode into the trace what its processes left in
//! `spool/` when they ended before their exit (killed, crashed, aborted, or
//! out of disk), as `hyscope record` does after the job. For jobs run with
//! `libhyscope.so` preloaded by hand, without `record`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};

#[derive(clap::Args)]
pub struct Args {
    /// The trace directory.
    pub trace: PathBuf,
    /// Encode the spools even of processes that may still be running on this host.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let dir = &args.trace;
    if !dir.is_dir() {
        bail!("{}: no such trace directory", dir.display());
    }
    let leftovers = hyscope_format::spool::to_parquet::leftover_processes(dir);
    if leftovers.is_empty() {
        eprintln!("hyscope: {}: nothing to recover", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    if !args.force
        && let Some(p) = leftovers.iter().find(|p| p.may_be_running(dir))
    {
        bail!(
            "{}: rank {} (pid {}) may still be running on this host; recover after the job ends (or --force)",
            dir.display(),
            p.rank,
            p.pid
        );
    }
    recover_spools(dir);
    Ok(ExitCode::SUCCESS)
}

fn warn(msg: &str) {
    eprintln!("hyscope: warning: {msg}");
}

/// Encode what processes that ended before encoding their spools left
/// (killed, crashed, aborted, or out of disk at the time), so their events
/// are in the trace, and write in their rank files how they ended.
pub fn recover_spools(dir: &Path) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for process in hyscope_format::spool::to_parquet::leftover_processes(dir) {
        match hyscope_format::spool::to_parquet::recover_process(dir, &process, threads) {
            Ok(done) => {
                let how = done
                    .end
                    .map_or_else(String::new, |e| format!("{}; ", e.describe()));
                warn(&format!(
                    "rank {} (pid {}) {how}recovered {} OpenMP and {} MPI events from its spool{}",
                    process.rank,
                    process.pid,
                    done.events.omp,
                    done.events.mpi,
                    if done.truncated {
                        " (its last block was cut short and is lost)"
                    } else {
                        ""
                    }
                ));
                for e in &done.failed {
                    warn(&format!(
                        "cannot recover a spool of rank {}: {e}",
                        process.rank
                    ));
                }
            }
            Err(e) => warn(&format!(
                "cannot recover what rank {} (pid {}) left: {e}",
                process.rank, process.pid
            )),
        }
    }
    remove_spool_dir(dir);
}

/// Remove the trace's `spool/` directory (and its empty block directories)
/// if it is empty. Only after the job: while ranks run, another rank may be
/// about to create its spool there, so the ranks themselves never remove it.
pub fn remove_spool_dir(dir: &Path) {
    hyscope_format::remove_empty_spool_dirs(dir);
}

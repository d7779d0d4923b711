//! What the collector's encoding at exit costs per event: a spool file
//! (left in `TRACE/spool/` by a killed process, or copied aside) encoded into
//! Parquet parts as the collector does at `MPI_Finalize` or exit
//! (`spool_to_parts`), best of `ROUNDS` runs, on `THREADS` encoder threads.
//!
//! ```text
//! cargo run --release -p hyscope-format --example unspool_bench -- SPOOL [THREADS] [ROUNDS]
//! ```
//!
//! A real spool keeps each thread's rows in the order they closed, which is
//! what the sort before encoding sees; a synthetic one would not.

use std::path::PathBuf;
use std::time::Instant;

use hyscope_format::WriterOptions;
use hyscope_format::spool::to_parquet::spool_to_parts;
use hyscope_format::{MpiRecord, OmpRecord};

fn main() {
    let mut args = std::env::args().skip(1);
    let spool = PathBuf::from(
        args.next()
            .expect("usage: unspool_bench SPOOL [THREADS] [ROUNDS]"),
    );
    let threads: usize = args.next().map_or(1, |t| t.parse().expect("THREADS"));
    let rounds: usize = args.next().map_or(3, |r| r.parse().expect("ROUNDS"));
    let name = spool.file_name().unwrap().to_string_lossy().to_string();
    let mut best = f64::MAX;
    let mut faults = u64::MAX;
    let (mut rows, mut bytes) = (0, 0);
    for _ in 0..rounds {
        let out = tempfile::tempdir().expect("temp dir");
        let mut note = |_: &[OmpRecord]| {};
        let mut note_mpi = |_: &[MpiRecord]| {};
        let faults_before = minor_faults();
        let started = Instant::now();
        let stats = if name.starts_with("mpi") {
            spool_to_parts::<MpiRecord>(
                &spool,
                out.path(),
                0,
                threads,
                WriterOptions::default(),
                &mut note_mpi,
            )
        } else {
            spool_to_parts::<OmpRecord>(
                &spool,
                out.path(),
                0,
                threads,
                WriterOptions::default(),
                &mut note,
            )
        }
        .expect("spool encodes");
        best = best.min(started.elapsed().as_secs_f64());
        faults = faults.min(minor_faults() - faults_before);
        rows = stats.rows;
        bytes = walk(out.path());
    }
    println!(
        "{name}: {rows} rows on {threads} thread(s): best {:.1} ms, {:.1} ns/row, {:.2} B/row, {faults} minor page faults",
        best * 1e3,
        best * 1e9 / rows as f64,
        bytes as f64 / rows as f64
    );
}

fn walk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk(&p)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}

/// The process's minor page faults so far (`getrusage`).
fn minor_faults() -> u64 {
    // SAFETY: rusage is plain data, filled by the call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid rusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_minflt as u64
}

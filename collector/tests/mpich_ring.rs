//! The MPICH flavour of the collector (`libhyscope-mpich.so`, built by
//! `scripts/build-mpich.sh`): the ring of tests/mpi/ring.c built with
//! `mpicc.mpich` and run with `mpiexec.mpich` at 2 and 4 ranks, exact counts,
//! bytes and peers per rank; and each flavour refuses the other MPI with one
//! `hyscope:` warning, leaving the program's output and exit code alone.

use crate::mpi_common;
use mpi_common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use hyscope_format::Trace;
use mpi_common::ring::{check_ring_calls, check_ring_connections};

/// Compile tests/mpi/ring.c with `compiler` into `name`.
fn ring(compiler: &str, name: &str) -> PathBuf {
    let out = tmp().join(format!("{name}-{}", std::process::id()));
    let st = Command::new(compiler)
        .args(["-g", "-O1", "-o"])
        .arg(&out)
        .arg(repo().join("tests/mpi/ring.c"))
        .status()
        .expect("run the MPI compiler");
    assert!(st.success(), "{compiler} ring.c failed");
    out
}

struct Out {
    code: Option<i32>,
    dir: PathBuf,
    stdout: String,
    stderr: String,
}

/// `mpiexec.mpich -n <np>` with the variables passed by `-genv`; `lib` None runs it bare.
fn mpich_run(prog: &Path, np: u32, name: &str, lib: Option<&Path>) -> Out {
    let dir = tmp().join(format!("trace-mpich-{name}-{np}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-n", &np.to_string()]);
    if let Some(lib) = lib {
        cmd.args(["-genv", "LD_PRELOAD", &lib.display().to_string()]);
        cmd.args(["-genv", "HYSCOPE_OUTPUT", &dir.display().to_string()]);
        cmd.args(["-genv", "HYSCOPE_CLOCK_SYNC", "measure"]);
    }
    cmd.arg(prog);
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    Out {
        code: out.status.code(),
        dir,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn check(np: u32) {
    let prog = ring("mpicc.mpich", "ring-mpich");
    let run = mpich_run(&prog, np, "ring", Some(&mpich_library()));
    // Rank 0 returns 3: the launcher reports it, the collector did not change it.
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(!run.stderr.contains("hyscope:"), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    // Nothing a reader would set aside: with every edge measured on a loaded
    // node, offsets a few milliseconds apart within their round trips are
    // noise, not a drift to refuse (`least_drift`).
    assert!(trace.problems().is_empty(), "{:?}", trace.problems());
    let rows = mpi_rows(&trace);
    let m = &trace.manifest;
    assert_eq!(m.world_size, np);
    assert_eq!(m.ranks.len(), np as usize);
    let mpi = m.mpi.as_ref().unwrap();
    assert_eq!(mpi.flavour, "mpich");
    assert!(
        mpi.library_version.starts_with("MPICH Version:"),
        "{}",
        mpi.library_version
    );
    assert_eq!(mpi.thread_level_provided.as_deref(), Some("single"));
    let samples = samples(&trace);
    // Measured on every edge (HYSCOPE_CLOCK_SYNC=measure in `mpich_run`), so
    // the ping-pong estimate stays checked; `mpi_ring` checks the shared clock.
    check_clock_offsets(&m.ranks, true, 2);
    for rank in 0..np {
        let info = &m.ranks[rank as usize];
        // The ranks of a node share one TSC calibration (collector/src/clock/shared.rs).
        assert_eq!(info.tsc_hz, m.ranks[0].tsc_hz, "rank {rank}");
        check_ring_calls(&rows, rank, np);
        check_ring_connections(&samples, rank, np);
    }
}

#[test]
fn mpich_ring_2_ranks() {
    check(2);
}

#[test]
fn mpich_ring_4_ranks() {
    check(4);
}

/// No MPI row in the trace (if one was written at all).
fn no_mpi_rows(dir: &Path) {
    if let Ok(trace) = Trace::open(dir) {
        assert!(mpi_rows(&trace).is_empty());
    }
}

#[test]
fn openmpi_program_under_the_mpich_flavour_is_refused() {
    let prog = ring("mpicc", "ring-openmpi");
    let dir = tmp().join("trace-mpich-cross-openmpi");
    let _ = std::fs::remove_dir_all(&dir);
    let out = output_within(
        mpirun(2, Some(&mpich_library()), &dir).arg(&prog),
        LAUNCH_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let warning =
        "hyscope: this libhyscope-mpich.so is built for MPICH but the program uses Open MPI";
    assert_eq!(err.matches(warning).count(), 2, "one per rank: {err}");
    no_mpi_rows(&dir);
}

#[test]
fn mpich_program_under_the_openmpi_flavour_is_refused() {
    let prog = ring("mpicc.mpich", "ring-mpich-cross");
    let bare = mpich_run(&prog, 2, "bare", None);
    let run = mpich_run(&prog, 2, "cross", Some(&library()));
    assert_eq!(run.code, bare.code, "{}", run.stderr);
    assert_eq!(run.code, Some(3));
    assert_eq!(run.stdout, bare.stdout);
    let warning = "hyscope: this libhyscope.so is built for Open MPI but the program uses MPICH";
    assert_eq!(
        run.stderr.matches(warning).count(),
        2,
        "one per rank: {}",
        run.stderr
    );
    no_mpi_rows(&run.dir);
}

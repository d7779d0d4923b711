//! MPICH (Hydra launcher, Debian `mpich`/`libmpich-dev`): variables pass through
//! `-genv`; an MPICH program is never given the Open MPI build of the collector
//! (their ABIs differ: it would crash).

mod record_support;

use std::process::Command;

use hyscope_format::{OmpKind, Trace};
use record_support::*;

#[test]
fn hydra_launcher_gets_the_variables_through_genv() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let dir = tmp.path().join("trace");
    let out = hyscope()
        .args(["record", "--verbose", "-o"])
        .arg(&dir)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("\"-genv\" \"LD_PRELOAD\""), "{err}");
    // Two processes, each one rank (PMI_RANK) with its OpenMP regions.
    let trace = Trace::open(&dir).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    let rows = omp_rows(&trace);
    for rank in [0, 1] {
        assert_eq!(
            count_kind(&rows, rank, OmpKind::Parallel),
            OMP_REGIONS,
            "rank {rank}"
        );
    }
}

#[test]
fn mpich_program_needs_the_mpich_build_of_the_collector() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("mpich_app.c");
    std::fs::write(&c, MPI_SRC).unwrap();
    let exe = tmp.path().join("mpich_app");
    let built = Command::new("mpicc.mpich")
        .env("MPICH_CC", "clang-19")
        .args(["-fopenmp", "-g", "-O1"])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
        .arg(format!("-L{LLVM_LIB}"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", stderr(&built));
    let mpich_lib = std::path::Path::new(env!("CARGO_BIN_EXE_hyscope"))
        .parent()
        .unwrap()
        .join("libhyscope-mpich.so");
    let dir = tmp.path().join("trace");
    let out = hyscope()
        .args(["record", "-o"])
        .arg(&dir)
        .args(["--", "mpiexec.mpich", "-n", "2"])
        .arg(&exe)
        .output()
        .unwrap();
    let err = stderr(&out);
    if mpich_lib.is_file() {
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(Trace::open(&dir).unwrap().ranks(), vec![0, 1]);
    } else {
        // Refused before anything runs, with the reason.
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no MPICH build of the collector"), "{err}");
        assert!(!dir.exists());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    }
}

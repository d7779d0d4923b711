//! Hybrid MPI + OpenMP (tests/mpi/hybrid.c, clang + libomp): `in_parallel`
//! says whether the call was made inside an OpenMP parallel region (from OMPT).

mod mpi_common;
use mpi_common::*;

use hyscope_format::{OmpKind, OmpRecord, ScanOptions, Trace};

/// Build `src` with clang-19 and libomp through mpicc and run it on 2 ranks.
fn run_hybrid(src: &str, name: &str) -> Run {
    let prog = build_env(
        src,
        "mpicc",
        &["-fopenmp=libomp", "-Wl,-rpath,/usr/lib/llvm-19/lib"],
        &[("OMPI_CC", "clang-19")],
    );
    run(&prog, 2, name)
}

#[test]
fn in_parallel_from_ompt() {
    let run = run_hybrid("hybrid.c", "hybrid");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    for rank in 0..2 {
        let sends = calls(&rows, rank, "MPI_Send");
        let flags: Vec<(i32, bool)> = sends.iter().map(|m| (m.tag, m.in_parallel)).collect();
        assert_eq!(flags, vec![(1, true), (2, false)], "rank {rank}");
        assert!(
            calls(&rows, rank, "MPI_Recv")
                .iter()
                .all(|m| !m.in_parallel)
        );
    }
}

/// The trace written inside MPI_Finalize holds every OpenMP interval the
/// primary thread closed before it, including those it holds back to encode
/// in its slack (tests/mpi/hybrid_exit.c leaves by `_exit` right after
/// MPI_Finalize: no exit path runs).
#[test]
fn intervals_closed_before_finalize_are_in_its_checkpoint() {
    let run = run_hybrid("hybrid_exit.c", "hybrid-exit");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows: Vec<(u32, OmpRecord)> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    for rank in 0..2 {
        let primary = |kind: OmpKind, variant: Option<u8>| {
            rows.iter()
                .filter(|(r, o)| {
                    *r == rank
                        && o.thread == 0
                        && o.kind == kind as u8
                        && variant.is_none_or(|v| o.variant == v)
                })
                .count()
        };
        // ompt_sync_region_barrier_implicit_parallel
        let join = Some(9);
        assert_eq!(primary(OmpKind::Parallel, None), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::ImplicitTask, None), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::Sync, join), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::SyncWait, join), 3, "rank {rank}");
    }
}

/// A relative `HYSCOPE_OUTPUT` names the directory where the job started,
/// even when the program changes its working directory before it ends and
/// starts a shell that inherits the preload (`tests/mpi/chdir_exit.c`): the
/// whole trace is in that one directory, none of it under the new one.
#[test]
fn relative_output_stays_where_the_job_started() {
    let prog = build_env(
        "chdir_exit.c",
        "mpicc",
        &["-fopenmp=libomp", "-Wl,-rpath,/usr/lib/llvm-19/lib"],
        &[("OMPI_CC", "clang-19")],
    );
    let start = tmp().join(format!("chdir-start-{}", std::process::id()));
    let moved = tmp().join(format!("chdir-moved-{}", std::process::id()));
    for d in [&start, &moved] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let name = std::path::Path::new("trace-relative");
    let mut cmd = mpirun(2, Some(&library()), name);
    cmd.current_dir(&start).arg(&prog).arg(&moved);
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("system=0")
            .count(),
        2
    );
    assert!(
        !moved.join(name).exists(),
        "part of the trace went to the new working directory: {:?}",
        std::fs::read_dir(moved.join(name)).map(|d| d.count())
    );
    let dir = start.join(name);
    let trace = Trace::open(&dir).unwrap();
    let rows: Vec<(u32, OmpRecord)> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    for rank in 0..2 {
        let regions = rows
            .iter()
            .filter(|(r, o)| *r == rank && o.thread == 0 && o.kind == OmpKind::Parallel as u8)
            .count();
        assert_eq!(regions, 3, "rank {rank}");
    }
    // Every rank's events were encoded into the trace (no spool left over).
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("spool"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftovers
            .iter()
            .all(|f| !f.to_string_lossy().ends_with(".end")),
        "{leftovers:?}"
    );
}

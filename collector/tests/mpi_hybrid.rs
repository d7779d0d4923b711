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

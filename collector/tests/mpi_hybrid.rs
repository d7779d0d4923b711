//! Hybrid MPI + OpenMP (tests/mpi/hybrid.c, clang + libomp): `in_parallel`
//! says whether the call was made inside an OpenMP parallel region (from OMPT).

mod mpi_common;
use mpi_common::*;

use hyscope_format::reader::Trace;

#[test]
fn in_parallel_from_ompt() {
    let prog = build_env(
        "hybrid.c",
        "mpicc",
        &["-fopenmp=libomp", "-Wl,-rpath,/usr/lib/llvm-19/lib"],
        &[("OMPI_CC", "clang-19")],
    );
    let run = run(&prog, 2, "hybrid");
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

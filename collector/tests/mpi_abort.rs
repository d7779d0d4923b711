//! MPI_Abort (tests/mpi/abort.c): the job fails with the abort's error code,
//! and the trace written so far stays readable.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::Trace;

#[test]
fn abort_keeps_trace_readable() {
    let prog = build("abort.c", "mpicc", &[]);
    let run = run(&prog, 2, "abort");
    assert_eq!(run.code, Some(7), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    assert_eq!(trace.manifest.world_size, 2);
    let rows = mpi_rows(&trace);
    let h = histogram(&rows, 1);
    assert_eq!(h.get("MPI_Send"), Some(&2), "{h:?}");
    assert_eq!(h.get("MPI_Recv"), Some(&1));
    let a = calls(&rows, 1, "MPI_Abort");
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].tag, a[0].comm_id), (7, 1));
    assert!(
        run.stderr.contains("hyscope: MPI_Abort called"),
        "{}",
        run.stderr
    );
}

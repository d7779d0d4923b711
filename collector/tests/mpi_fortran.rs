//! Fortran (tests/mpi/fortran.f90 at 4 ranks): Open MPI's Fortran bindings
//! call PMPI directly, so these counts prove the exported `mpi_*_` symbols.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::Trace;

#[test]
fn fortran_4_ranks() {
    let prog = build("fortran.f90", "mpif90", &[]);
    let run = run(&prog, 4, "fortran");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    let np = 4u32;
    for rank in 0..np {
        let next = ((rank + 1) % np) as i32;
        let prev = ((rank + np - 1) % np) as i32;
        let h = histogram(&rows, rank);
        let expect = [
            ("MPI_Init", 1),
            ("MPI_Finalize", 1),
            ("MPI_Send", 2),
            ("MPI_Recv", 2),
            ("MPI_Isend", 2),
            ("MPI_Irecv", 2),
            ("MPI_Wait", 2),
            ("MPI_Waitall", 1),
            ("REQUEST_COMPLETE", 4),
            ("MPI_Barrier", 1),
            ("MPI_Bcast", 1),
            ("MPI_Reduce", 1),
            ("MPI_Allreduce", 1),
        ];
        assert_eq!(h.len(), expect.len(), "rank {rank}: {h:?}");
        for (call, n) in expect {
            assert_eq!(h.get(call), Some(&n), "rank {rank} {call}");
        }
        for s in calls(&rows, rank, "MPI_Send") {
            assert_eq!(
                (s.peer, s.tag, s.bytes_sent),
                (next, rank as i32, (rank as u64 + 1) * 40)
            );
            assert_ne!(s.callsite, 0);
        }
        for r in calls(&rows, rank, "MPI_Recv") {
            assert_eq!(
                (r.peer, r.tag, r.bytes_recv),
                (prev, prev, (prev as u64 + 1) * 40)
            );
        }
        for r in calls(&rows, rank, "MPI_Irecv") {
            let c = completion(&rows, rank, r.request_id);
            assert_eq!((c.peer, c.bytes_recv), (prev, 16));
        }
        let b = calls(&rows, rank, "MPI_Bcast")[0];
        assert_eq!(
            (b.root, b.bytes_sent, b.bytes_recv),
            (
                0,
                if rank == 0 { 60 } else { 0 },
                if rank == 0 { 0 } else { 20 }
            )
        );
        // MPI_IN_PLACE from Fortran reached MPI as C's MPI_IN_PLACE (the program checks the sum).
        let a = calls(&rows, rank, "MPI_Allreduce")[0];
        assert_eq!((a.bytes_sent, a.bytes_recv), (12, 12));
    }
}

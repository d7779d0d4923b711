//! `MPI_Sendrecv` and `MPI_Sendrecv_replace` record both sides
//! (tests/mpi/late_sender.c at 2 ranks): the send in `peer`/`tag`/`bytes_sent`,
//! the receive in `recv_peer`/`recv_tag`/`bytes_recv`, wildcards resolved
//! from the status.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{Endpoint, NO_RANK, NO_TAG, Trace, mpi_call};

#[test]
fn both_sides_of_sendrecv_are_recorded() {
    let prog = build("late_sender.c", "mpicc", &[]);
    for (variant, call) in [
        ("sendrecv", "MPI_Sendrecv"),
        ("replace", "MPI_Sendrecv_replace"),
    ] {
        // 1 ms delays: the answer here is the envelope, not the wait.
        let run = run_args(&prog, 2, variant, &[variant, "1"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let trace = Trace::open(&run.dir).unwrap();
        let rows = mpi_rows(&trace);
        for rank in 0..2u32 {
            let other = 1 - rank as i32;
            let got = calls(&rows, rank, call);
            assert_eq!(got.len(), 20, "{variant} rank {rank}");
            for r in got {
                // The program's `sendrecv` receive names MPI_ANY_SOURCE and
                // MPI_ANY_TAG: the status resolved them.
                assert_eq!(
                    (r.peer, r.tag, r.bytes_sent, r.comm_id),
                    (other, 3, 64, 1),
                    "{variant} rank {rank} send side"
                );
                assert_eq!(
                    (r.recv_peer, r.recv_tag, r.bytes_recv),
                    (other, 3, 64),
                    "{variant} rank {rank} receive side"
                );
                let sides = r.p2p_endpoints();
                let side = |peer| Endpoint {
                    peer,
                    tag: 3,
                    bytes: 64,
                    comm_id: 1,
                };
                assert_eq!(
                    (sides.send, sides.recv),
                    (Some(side(other)), Some(side(other)))
                );
            }
            // Every other call has no receive side.
            for (_, r) in rows
                .iter()
                .filter(|(k, m)| *k == rank && mpi_call::name(m.call) != call)
            {
                assert_eq!((r.recv_peer, r.recv_tag), (NO_RANK, NO_TAG), "{r:?}");
            }
        }
    }
}

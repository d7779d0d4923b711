//! Every blocking and nonblocking collective once (tests/mpi/collectives.c,
//! 10 ints per block, root 0): exact counts and bytes per rank, and each
//! nonblocking collective's request completed once.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{NO_RANK, Trace, mpi_call};

const B: u64 = 40;

fn check(np: u32) {
    let prog = build("collectives.c", "mpicc", &[]);
    let run = run(&prog, np, "collectives");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    let n = np as u64;
    for rank in 0..np {
        let root = rank == 0;
        let h = histogram(&rows, rank);
        for code in (50..=66).chain(70..=86) {
            assert_eq!(
                h.get(mpi_call::name(code)),
                Some(&1),
                "rank {rank} {}",
                mpi_call::name(code)
            );
        }
        assert_eq!(h["MPI_Wait"], 16);
        assert_eq!(h["MPI_Waitall"], 1);
        assert_eq!(h["REQUEST_COMPLETE"], 17);
        // (sent, received) per collective, the same for the nonblocking form.
        let expect: &[(&str, u64, u64)] = &[
            ("Barrier", 0, 0),
            (
                "Bcast",
                if root { B * (n - 1) } else { 0 },
                if root { 0 } else { B },
            ),
            ("Reduce", B, if root { B } else { 0 }),
            ("Allreduce", B, B),
            ("Gather", B, if root { B * n } else { 0 }),
            ("Gatherv", B, if root { B * n } else { 0 }),
            ("Scatter", if root { B * n } else { 0 }, B),
            ("Scatterv", if root { B * n } else { 0 }, B),
            ("Allgather", B, B * n),
            ("Allgatherv", B, B * n),
            ("Alltoall", B * n, B * n),
            ("Alltoallv", B * n, B * n),
            ("Alltoallw", B * n, B * n),
            ("Reduce_scatter", B * n, B),
            ("Reduce_scatter_block", B * n, B),
            ("Scan", B, B),
            ("Exscan", B, B),
        ];
        for &(name, sent, recv) in expect {
            for prefix in ["MPI_", "MPI_I"] {
                let call = format!(
                    "{prefix}{}",
                    if prefix == "MPI_I" {
                        name.to_lowercase()
                    } else {
                        name.to_string()
                    }
                );
                // MPI_Iallreduce etc.: the code table spells them MPI_I + lower-case first letter.
                let call = if prefix == "MPI_I" {
                    let mut c = name.chars();
                    format!(
                        "MPI_I{}{}",
                        c.next().unwrap().to_ascii_lowercase(),
                        c.as_str()
                    )
                } else {
                    call
                };
                let r = calls(&rows, rank, &call);
                assert_eq!(r.len(), 1, "rank {rank} {call}");
                let r = r[0];
                assert_eq!(
                    (r.bytes_sent, r.bytes_recv),
                    (sent, recv),
                    "rank {rank} {call}"
                );
                assert_eq!(r.comm_id, 1);
                let rooted = matches!(
                    name,
                    "Bcast" | "Reduce" | "Gather" | "Gatherv" | "Scatter" | "Scatterv"
                );
                assert_eq!(r.root, if rooted { 0 } else { NO_RANK }, "{call}");
                if prefix == "MPI_I" {
                    assert_ne!(r.request_id, 0, "{call}");
                    let c = completion(&rows, rank, r.request_id);
                    assert_eq!(c.comm_id, 1);
                } else {
                    assert_eq!(r.request_id, 0);
                }
            }
        }
    }
}

#[test]
fn collectives_2_ranks() {
    check(2);
}

#[test]
fn collectives_4_ranks() {
    check(4);
}

//! Nonblocking exchanges completed by each completion call, persistent
//! requests, probes and sendrecv (tests/mpi/nonblocking.c): every completion
//! is linked to its creating call with the peer, tag and bytes of its status.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::Trace;

fn check(np: u32) {
    let prog = build("nonblocking.c", "mpicc", &[]);
    let run = run(&prog, np, "nonblocking");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    for rank in 0..np {
        let partner = (rank ^ 1) as i32;
        let h = histogram(&rows, rank);
        assert_eq!(h["MPI_Isend"], 8, "{h:?}");
        assert_eq!(h["MPI_Irecv"], 8);
        assert_eq!(h["MPI_Wait"], 2);
        assert_eq!(h["MPI_Waitall"], 1 + 2);
        assert_eq!(h["MPI_Waitany"], 2);
        for call in [
            "MPI_Waitsome",
            "MPI_Test",
            "MPI_Testall",
            "MPI_Testany",
            "MPI_Testsome",
        ] {
            assert!(h[call] >= 1, "{call}");
        }
        assert!(h["MPI_Test"] >= 2);
        assert_eq!(h["MPI_Send_init"], 1);
        assert_eq!(h["MPI_Recv_init"], 1);
        assert_eq!(h["MPI_Startall"], 2);
        assert_eq!(h["MPI_Request_free"], 2);
        assert_eq!(h["MPI_Sendrecv"], 1);
        assert_eq!(h["MPI_Sendrecv_replace"], 1);
        // 16 exchanges + 2 rounds of 2 persistent requests.
        assert_eq!(h["REQUEST_COMPLETE"], 16 + 4);
        for (p, r) in calls(&rows, rank, "MPI_Irecv").into_iter().enumerate() {
            assert_eq!((r.peer, r.tag, r.comm_id), (partner, p as i32, 1));
            assert_ne!(r.request_id, 0);
            let c = completion(&rows, rank, r.request_id);
            assert_eq!((c.peer, c.tag), (partner, p as i32), "phase {p}");
            assert_eq!(c.bytes_recv, (p as u64 + 1) * 8, "phase {p}");
            assert!(c.start_ns >= r.end_ns);
        }
        for (p, s) in calls(&rows, rank, "MPI_Isend").into_iter().enumerate() {
            assert_eq!(
                (s.peer, s.tag, s.bytes_sent),
                (partner, p as i32, (p as u64 + 1) * 8)
            );
            let c = completion(&rows, rank, s.request_id);
            assert_eq!((c.peer, c.bytes_sent, c.bytes_recv), (partner, 0, 0));
        }
        // Persistent: each request completes once per start.
        let rinit = calls(&rows, rank, "MPI_Recv_init")[0];
        let done: Vec<_> = calls(&rows, rank, "REQUEST_COMPLETE")
            .into_iter()
            .filter(|c| c.request_id == rinit.request_id)
            .collect();
        assert_eq!(done.len(), 2);
        assert!(
            done.iter()
                .all(|c| c.bytes_recv == 12 && c.peer == partner && c.tag == 100)
        );
        for s in calls(&rows, rank, "MPI_Startall") {
            assert_eq!(s.bytes_sent, 12);
        }
        let sr = calls(&rows, rank, "MPI_Sendrecv")[0];
        assert_eq!((sr.peer, sr.bytes_sent, sr.bytes_recv), (partner, 20, 20));
        let srr = calls(&rows, rank, "MPI_Sendrecv_replace")[0];
        assert_eq!(
            (srr.peer, srr.bytes_sent, srr.bytes_recv),
            (partner, 20, 20)
        );
        if rank % 2 == 1 {
            let p = calls(&rows, rank, "MPI_Probe")[0];
            assert_eq!((p.peer, p.tag, p.bytes_recv), (partner, 200, 20));
            let mp = calls(&rows, rank, "MPI_Mprobe")[0];
            assert_eq!((mp.peer, mp.tag, mp.bytes_recv), (partner, 201, 20));
            let mr = calls(&rows, rank, "MPI_Mrecv")[0];
            assert_eq!(
                (mr.peer, mr.tag, mr.bytes_recv, mr.comm_id),
                (partner, 201, 20, 1)
            );
            assert_eq!(h["MPI_Recv"], 1);
        } else {
            assert_eq!(h["MPI_Send"], 2);
        }
    }
}

#[test]
fn nonblocking_2_ranks() {
    check(2);
}

#[test]
fn nonblocking_4_ranks() {
    check(4);
}

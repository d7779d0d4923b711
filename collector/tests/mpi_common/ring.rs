//! What `tests/mpi/ring.c` must leave in a trace whatever the MPI library
//! (`mpi_ring.rs` for Open MPI, `mpich_ring.rs` for MPICH): every rank sends
//! `ROUNDS` messages of (rank + 1) × 400 bytes to the next rank, tagged with
//! its rank, and receives as many from the previous one with wildcards that
//! the status resolves; a ring of two ranks has one peer, of more two.

use hyscope_format::{ANY, MpiRecord, SampleRecord};

use super::{calls, histogram};

pub const ROUNDS: usize = 3;

/// Rank `rank`'s MPI calls in a ring of `np`: only the program's own, with
/// the exact peers, tags and bytes.
pub fn check_ring_calls(rows: &[(u32, MpiRecord)], rank: u32, np: u32) {
    let next = (rank + 1) % np;
    let prev = (rank + np - 1) % np;
    let h = histogram(rows, rank);
    assert_eq!(h.get("MPI_Send"), Some(&ROUNDS), "rank {rank}: {h:?}");
    assert_eq!(h.get("MPI_Recv"), Some(&ROUNDS));
    assert_eq!(h.get("MPI_Init"), Some(&1));
    assert_eq!(h.get("MPI_Finalize"), Some(&1));
    assert_eq!(h.len(), 4, "only the program's own calls: {h:?}");
    for s in calls(rows, rank, "MPI_Send") {
        assert_eq!(s.peer, next as i32);
        assert_eq!(s.tag, rank as i32);
        assert_eq!(s.bytes_sent, (rank as u64 + 1) * 400);
        assert_eq!(s.bytes_recv, 0);
        assert_eq!(s.comm_id, 1);
        assert!(s.end_ns >= s.start_ns && s.start_ns > 0);
        assert!(s.callsite != 0);
    }
    for r in calls(rows, rank, "MPI_Recv") {
        // Even ranks receive with MPI_ANY_SOURCE, odd with MPI_ANY_TAG: the
        // status fills both in.
        assert_eq!(r.peer, prev as i32);
        assert_eq!(r.tag, prev as i32);
        assert_ne!(r.peer, ANY);
        assert_eq!(r.bytes_recv, (prev as u64 + 1) * 400);
    }
}

/// Rank `rank`'s connection samples in a ring of `np`: one peer per
/// direction (the same one at 2 ranks), its messages and bytes.
pub fn check_ring_connections(samples: &[(u32, SampleRecord)], rank: u32, np: u32) {
    let next = (rank + 1) % np;
    let prev = (rank + np - 1) % np;
    let peer_value = |metric: &str, key: u32| -> f64 {
        let v: Vec<f64> = samples
            .iter()
            .filter(|(r, s)| *r == rank && s.metric == metric && s.key == key as i64)
            .map(|(_, s)| s.value)
            .collect();
        assert_eq!(v.len(), 1, "rank {rank} {metric} key {key}");
        v[0]
    };
    let conns: Vec<f64> = samples
        .iter()
        .filter(|(r, s)| *r == rank && s.metric == "mpi.connections")
        .map(|(_, s)| s.value)
        .collect();
    if np == 2 {
        assert_eq!(conns, vec![1.0]);
        assert_eq!(peer_value("mpi.peer.messages", next), (2 * ROUNDS) as f64);
        assert_eq!(
            peer_value("mpi.peer.bytes", next),
            (ROUNDS as u64 * (400 + 800)) as f64
        );
    } else {
        assert_eq!(conns, vec![1.0, 2.0]);
        assert_eq!(peer_value("mpi.peer.messages", next), ROUNDS as f64);
        assert_eq!(
            peer_value("mpi.peer.bytes", next),
            (ROUNDS as u64 * (rank as u64 + 1) * 400) as f64
        );
        assert_eq!(
            peer_value("mpi.peer.bytes", prev),
            (ROUNDS as u64 * (prev as u64 + 1) * 400) as f64
        );
        assert!(peer_value("mpi.peer.first_contact_ns", next) > 0.0);
    }
}

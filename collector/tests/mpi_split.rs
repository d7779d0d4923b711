//! Communicator split (tests/mpi/split.c at 4 ranks): communicator ids are
//! equal on all members and distinct between communicators, peers and roots
//! are world ranks.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{Trace, communicators};

#[test]
fn split_4_ranks() {
    let prog = build("split.c", "mpicc", &[]);
    let run = run(&prog, 4, "split");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    let one = |rank: u32, call: &str| {
        let c = calls(&rows, rank, call);
        assert_eq!(c.len(), 1, "rank {rank} {call}");
        *c[0]
    };
    let half_id: Vec<u64> = (0..4).map(|r| one(r, "MPI_Comm_split").comm_id).collect();
    let dup_id: Vec<u64> = (0..4).map(|r| one(r, "MPI_Comm_dup").comm_id).collect();
    // Members agree: {0, 2} and {1, 3}.
    assert_eq!(half_id[0], half_id[2]);
    assert_eq!(half_id[1], half_id[3]);
    assert_eq!(dup_id[0], dup_id[2]);
    assert_eq!(dup_id[1], dup_id[3]);
    let mut all = vec![half_id[0], half_id[1], dup_id[0], dup_id[1], 0, 1, 2];
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        7,
        "ids distinct and not none/world/self: {half_id:?} {dup_id:?}"
    );
    for rank in 0..4u32 {
        let color = rank % 2;
        let other = (rank + 2) % 4; // the other member of the half, as a world rank
        assert_eq!(one(rank, "MPI_Comm_split").tag, color as i32);
        let s = one(rank, "MPI_Send");
        assert_eq!(
            (s.peer, s.bytes_sent, s.comm_id),
            (other as i32, 32, half_id[rank as usize])
        );
        let irecv = one(rank, "MPI_Irecv");
        let c = completion(&rows, rank, irecv.request_id);
        assert_eq!(
            (c.peer, c.bytes_recv, c.comm_id),
            (other as i32, 32, half_id[rank as usize])
        );
        let b = one(rank, "MPI_Bcast");
        assert_eq!((b.root, b.comm_id), (color as i32, half_id[rank as usize]));
        assert_eq!(one(rank, "MPI_Barrier").comm_id, dup_id[rank as usize]);
        let frees: Vec<u64> = calls(&rows, rank, "MPI_Comm_free")
            .iter()
            .map(|m| m.comm_id)
            .collect();
        assert_eq!(frees, vec![dup_id[rank as usize], half_id[rank as usize]]);
    }

    // Each rank's file lists the communicators it belonged to, and joined
    // they give each one's members in its rank order.
    for (rank, info) in trace.manifest.ranks.iter().enumerate() {
        let listed: Vec<(u64, u32, u32, &str, u64)> = info
            .communicators
            .iter()
            .map(|c| (c.id, c.size, c.rank, c.created_by.as_str(), c.parent))
            .collect();
        let local = rank as u32 / 2;
        assert_eq!(
            listed,
            [
                (half_id[rank], 2, local, "MPI_Comm_split", 1),
                (dup_id[rank], 2, local, "MPI_Comm_dup", half_id[rank]),
            ],
            "rank {rank}"
        );
    }
    let joined = communicators(&trace.manifest.ranks);
    let members = |id: u64| {
        let c = joined.iter().find(|c| c.id == id).unwrap();
        (c.size, c.members.clone(), c.created_by.as_str())
    };
    assert_eq!(joined.len(), 4);
    assert_eq!(members(half_id[0]), (2, vec![0, 2], "MPI_Comm_split"));
    assert_eq!(members(half_id[1]), (2, vec![1, 3], "MPI_Comm_split"));
    assert_eq!(members(dup_id[0]), (2, vec![0, 2], "MPI_Comm_dup"));
    assert_eq!(members(dup_id[1]), (2, vec![1, 3], "MPI_Comm_dup"));
}

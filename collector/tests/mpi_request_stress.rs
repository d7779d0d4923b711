//! Thousands of requests pending at once on 4 threads per rank
//! (tests/mpi/isend_stress.c, MPI_THREAD_MULTIPLE): every completion is
//! linked to the call that created its request, and nothing is reported lost.

use crate::mpi_common;
use mpi_common::*;

use std::collections::BTreeMap;

use hyscope_format::{MpiRecord, Trace};

const T: usize = 4;
const N: usize = 2000;

#[test]
fn four_threads_16000_pending_requests_all_linked() {
    let prog = build("isend_stress.c", "mpicc", &["-pthread"]);
    check(&run(&prog, 2, "isend-stress"));
}

/// The same under MPICH, whose inline-completed sends share one built-in
/// request handle as Open MPI's share `ompi_request_empty`.
#[test]
fn four_threads_16000_pending_requests_all_linked_mpich() {
    let prog = build("isend_stress.c", "mpicc.mpich", &["-pthread"]);
    check(&run_mpich(&prog, 2, "isend-stress", &[]));
}

fn check(run: &Run) {
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("hyscope:"), "{}", run.stderr);
    for rank in 0..2 {
        let line = format!("rank {rank}: {T} threads x {N} isend+irecv pending, 0 wrong values");
        assert!(run.stdout.contains(&line), "{}", run.stdout);
    }
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    for rank in 0..2u32 {
        let partner = (rank ^ 1) as i32;
        let h = histogram(&rows, rank);
        assert_eq!(h["MPI_Isend"], T * N, "{h:?}");
        assert_eq!(h["MPI_Irecv"], T * N, "{h:?}");
        assert_eq!(h["MPI_Waitall"], T, "{h:?}");
        assert_eq!(h["REQUEST_COMPLETE"], 2 * T * N, "{h:?}");
        // Each request's one completion, by id.
        let mut done: BTreeMap<u64, Vec<&MpiRecord>> = BTreeMap::new();
        for c in calls(&rows, rank, "REQUEST_COMPLETE") {
            done.entry(c.request_id).or_default().push(c);
        }
        assert_eq!(done.len(), 2 * T * N, "distinct completed requests");
        let completion = |id: u64| -> &MpiRecord {
            let c = &done[&id];
            assert_eq!(c.len(), 1, "completions of request {id}");
            c[0]
        };
        for r in calls(&rows, rank, "MPI_Irecv") {
            let c = completion(r.request_id);
            assert_eq!((c.peer, c.tag, c.bytes_recv), (partner, r.tag, 4));
        }
        for s in calls(&rows, rank, "MPI_Isend") {
            assert_eq!((s.peer, s.bytes_sent), (partner, 4));
            assert_eq!(completion(s.request_id).peer, partner);
        }
    }
    assert!(
        trace.manifest.ranks.iter().all(|r| r.warnings.is_empty()),
        "{:?}",
        trace.manifest.ranks
    );
}

//! MPI_THREAD_MULTIPLE (tests/mpi/threads.c): 4 threads per rank, each doing
//! K exchanges at once with the partner rank; nothing is lost.

use crate::mpi_common;
use mpi_common::*;

use std::collections::{BTreeMap, BTreeSet};

use hyscope_format::Trace;

const T: u64 = 4;
const K: usize = 50;

#[test]
fn thread_multiple_2_ranks() {
    let prog = build("threads.c", "mpicc", &["-pthread"]);
    let run = run(&prog, 2, "threads");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let mpi = trace.manifest.mpi.as_ref().unwrap();
    assert_eq!(mpi.thread_level_requested.as_deref(), Some("multiple"));
    assert_eq!(mpi.thread_level_provided.as_deref(), Some("multiple"));
    let rows = mpi_rows(&trace);
    for rank in 0..2u32 {
        let h = histogram(&rows, rank);
        let n = T as usize * K;
        assert_eq!(h["MPI_Isend"], n, "{h:?}");
        assert_eq!(h["MPI_Recv"], n);
        assert_eq!(h["MPI_Wait"], n);
        assert_eq!(h["REQUEST_COMPLETE"], n);
        assert_eq!(h["MPI_Init_thread"], 1);
        // bytes: K × Σ_t (t+1) ints each way.
        let total = K as u64 * (1..=T).sum::<u64>() * 4;
        assert_eq!(
            calls(&rows, rank, "MPI_Isend")
                .iter()
                .map(|m| m.bytes_sent)
                .sum::<u64>(),
            total
        );
        assert_eq!(
            calls(&rows, rank, "MPI_Recv")
                .iter()
                .map(|m| m.bytes_recv)
                .sum::<u64>(),
            total
        );
        // Each thread's sends carry its tag and size; 4 distinct recording threads.
        let mut per_thread: BTreeMap<u32, BTreeSet<(i32, u64)>> = BTreeMap::new();
        for m in calls(&rows, rank, "MPI_Isend") {
            per_thread
                .entry(m.thread)
                .or_default()
                .insert((m.tag, m.bytes_sent));
            assert_eq!(m.peer, (rank ^ 1) as i32);
        }
        assert_eq!(per_thread.len(), T as usize);
        assert!(per_thread.values().all(|s| s.len() == 1));
        let ids: BTreeSet<u64> = calls(&rows, rank, "MPI_Isend")
            .iter()
            .map(|m| m.request_id)
            .collect();
        assert_eq!(ids.len(), n, "request ids unique");
        for id in ids {
            let c = completion(&rows, rank, id);
            assert_eq!(c.peer, (rank ^ 1) as i32);
        }
        // Per-thread peer counters summed: every send and receive of the 4 threads.
        let samples = samples(&trace);
        let peer = |metric: &str| -> Vec<f64> {
            samples
                .iter()
                .filter(|(r, s)| *r == rank && s.metric == metric && s.key == (rank ^ 1) as i64)
                .map(|(_, s)| s.value)
                .collect()
        };
        assert_eq!(peer("mpi.peer.messages"), vec![2.0 * n as f64]);
        assert_eq!(peer("mpi.peer.bytes"), vec![2.0 * total as f64]);
    }
}

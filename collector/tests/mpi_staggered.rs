//! 32 ranks on an oversubscribed node finish at staggered times
//! (tests/mpi/staggered.c): no rank removes the `spool/` directory the
//! others are writing to, so every rank's events are in the trace and the
//! collector says nothing.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::Trace;

const NP: u32 = 32;
const K: usize = 200;

#[test]
fn thirty_two_ranks_finishing_at_staggered_times_lose_nothing() {
    let prog = build("staggered.c", "mpicc", &[]);
    let run = run(&prog, NP, "staggered");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("hyscope:"), "{}", run.stderr);
    for rank in 0..NP {
        let line = format!("rank {rank}: sent {K} received {K}");
        assert!(run.stdout.lines().any(|l| l == line), "{}", run.stdout);
    }
    let trace = Trace::open(&run.dir).unwrap();
    assert_eq!(trace.manifest.world_size, NP);
    assert_eq!(trace.manifest.ranks.len(), NP as usize);
    let rows = mpi_rows(&trace);
    for rank in 0..NP {
        let h = histogram(&rows, rank);
        assert_eq!(h.get("MPI_Isend"), Some(&K), "rank {rank}: {h:?}");
        assert_eq!(h.get("MPI_Recv"), Some(&K), "rank {rank}: {h:?}");
        assert_eq!(h.get("MPI_Wait"), Some(&K), "rank {rank}: {h:?}");
        assert_eq!(h.get("REQUEST_COMPLETE"), Some(&K), "rank {rank}: {h:?}");
        assert_eq!(h.get("MPI_Finalize"), Some(&1), "rank {rank}: {h:?}");
        let bytes: u64 = calls(&rows, rank, "MPI_Recv")
            .iter()
            .map(|m| m.bytes_recv)
            .sum();
        let prev = (rank + NP - 1) % NP;
        assert_eq!(bytes, K as u64 * (prev as u64 + 1) * 4, "rank {rank}");
    }
    for r in &trace.manifest.ranks {
        assert!(r.warnings.is_empty(), "rank {}: {:?}", r.rank, r.warnings);
        assert_eq!(r.dropped_events, 0, "rank {}", r.rank);
    }
    // Every spool was encoded; the shared directory itself stays (README:
    // with plain LD_PRELOAD, an empty `spool/` is left for after the job).
    let spool = run.dir.join("spool");
    let left: Vec<_> = std::fs::read_dir(&spool)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

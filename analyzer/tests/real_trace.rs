//! End to end on a real trace: `examples/hybrid/hybrid` (clang-19, libomp 19,
//! Open MPI 4.1.4), 2 ranks × 2 threads, recorded with `hyscope record` into
//! `tests/fixtures/hybrid-2x2`. The assertions follow from the program's
//! construction (N = 4000, STEPS = 2, RING_DOUBLES = 4096, A2A_DOUBLES = 1024).

use std::path::Path;

use hyscope_analyzer::{Observable, WaitKind, analyze};

fn fixture() -> hyscope_analyzer::Analysis {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hybrid-2x2");
    analyze(&dir, &Default::default()).unwrap()
}

#[test]
fn run_facts_and_normalisation() {
    let a = fixture();
    assert_eq!(a.run.ranks, 2);
    assert_eq!(a.run.threads_per_rank, vec![2, 2]);
    assert_eq!(a.run.thread_level_provided.as_deref(), Some("funneled"));
    // libomp dispatches workers' join-barrier ends late: every multi-thread
    // region instance has one to clip.
    assert!(a.run.clipped_join_waits > 0);
    assert!(a.run.clock_corrected);
}

#[test]
fn regions_and_loops_by_source_line() {
    let a = fixture();
    let regions = a.regions.get().unwrap();
    let labels: Vec<&str> = regions.iter().map(|r| r.location.label.as_str()).collect();
    for l in ["hybrid.c:39", "hybrid.c:46"] {
        assert!(labels.contains(&l), "{labels:?}");
    }
    // One row per source location across both ranks (ASLR merged).
    let r39 = regions
        .iter()
        .find(|r| r.location.label == "hybrid.c:39")
        .unwrap();
    assert_eq!(r39.instances, 4);
    assert_eq!(r39.ranks, vec![0, 1]);
    assert_eq!(r39.team_size, 2);
    let loops = a.loops.get().unwrap();
    for label in ["hybrid.c:39", "hybrid.c:47"] {
        let l = loops.iter().find(|l| l.location.label == label).unwrap();
        assert_eq!(l.trip_count, 4000);
        assert_eq!(l.instances, 4);
        // libomp 19 reports schedule(runtime) loops as static.
        assert_eq!(l.schedule, Observable::Observed("static".into()));
        // Triangular cost under static on 2 threads: the second half costs more.
        let p = l.cost_profile.get().unwrap();
        assert_eq!(p.shape, "increasing", "{label}");
        assert!(l.imbalance > 1.15, "{label}: {}", l.imbalance);
        // Open MPI bound each rank to one core (its default for two ranks):
        // the two threads took turns on it, and no schedule changes that.
        let rec = l.recommendation.get().unwrap();
        assert_eq!(rec.clause, "keep schedule(static)", "{rec:?}");
        assert_eq!(rec.predicted_speedup, 1.0, "{rec:?}");
        assert!(
            rec.rule
                .contains("took turns on CPUs (rank 0: 2 threads on CPU 0)"),
            "{rec:?}"
        );
        // What the simulation gives each thread a core for.
        let sims = l.simulations.get().unwrap();
        assert!(sims[0].speedup > 1.15, "{sims:?}");
    }
    // For the same reason, a barrier's wait is not advised as imbalance.
    let waits: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.title.starts_with("barrier wait in region"))
        .collect();
    assert!(!waits.is_empty());
    for f in waits {
        assert!(
            f.what_to_do
                .starts_with("threads took turns on CPUs (rank 0: 2 threads on CPU 0)"),
            "{}",
            f.what_to_do
        );
    }
}

#[test]
fn mpi_profile_and_memory() {
    let a = fixture();
    let m = a.mpi.get().unwrap();
    let call = |n: &str| m.calls.iter().find(|c| c.call == n).unwrap();
    assert_eq!(call("MPI_Isend").count, 8);
    assert_eq!(call("MPI_Isend").bytes_sent, 8 * 4096 * 8);
    assert_eq!(call("MPI_Irecv").count, 8);
    assert_eq!(call("MPI_Alltoall").count, 2);
    assert_eq!(call("MPI_Alltoall").bytes_sent, 2 * 2 * 1024 * 8);
    // One call-site row per source location, across both ranks (their code
    // addresses differ under ASLR): 2 ranks × 1 Alltoall, 2 ranks × 1 Init_thread,
    // and the ring's two Isend lines (89, 90) with 2 ranks × 2 steps each.
    let site = |n: &str| {
        let rows: Vec<_> = m.callsites.iter().filter(|c| c.call == n).collect();
        assert_eq!(rows.len(), 1, "{n}: {rows:?}");
        rows[0]
    };
    assert_eq!(site("MPI_Alltoall").count, 2);
    assert_eq!(
        site("MPI_Alltoall").location.as_ref().unwrap().label,
        "hybrid.c:99"
    );
    let isend: Vec<_> = m
        .callsites
        .iter()
        .filter(|c| c.call == "MPI_Isend")
        .collect();
    let labels: Vec<&str> = isend
        .iter()
        .map(|c| c.location.as_ref().unwrap().label.as_str())
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(labels.contains(&"hybrid.c:89") && labels.contains(&"hybrid.c:90"));
    assert!(isend.iter().all(|c| c.count == 4));
    assert_eq!(site("MPI_Init_thread").count, 2);
    assert_eq!(m.matrix.get(0, 1).map(|p| p.messages), Some(4));
    assert_eq!(m.matrix.get(1, 0).map(|p| p.messages), Some(4));
    // 32 KiB messages are above vader's 4 KiB eager limit.
    assert_eq!((m.eager_messages, m.rendezvous_messages), (0, 8));
    let w = a.wait_states.get().unwrap();
    assert_eq!(w.unmatched_messages, 0);
    assert!(w.by_kind.iter().any(|e| e.kind == WaitKind::WaitAtNxN));
    let mem = a.memory.get().unwrap();
    assert!(mem.pattern.starts_with("grows with N"));
    assert!(
        mem.full_connection_calls.iter().any(
            |c| c.call == "MPI_Alltoall" && c.location.as_ref().unwrap().label == "hybrid.c:99"
        )
    );
    assert_eq!(mem.per_rank[0].peers_observed, 1);
    assert!(mem.per_rank[0].mpi_init_delta.is_some());
    // Both ranks mapped Open MPI's vader segments (unmapped again at MPI_Finalize):
    // the footprint shows the peak, not the final 0.
    for r in &mem.per_rank {
        assert!(r.shm_mapped.unwrap_or(0) > 1 << 20, "{r:?}");
    }
    // No RAPL on the machine that recorded it.
    assert!(a.energy.reason().unwrap().starts_with("not measured: "));
}

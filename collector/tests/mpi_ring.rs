//! Ring of blocking sends with known sizes (tests/mpi/ring.c) at 2 and 4 ranks:
//! exact counts, bytes and peers per rank, peer samples, the job manifest,
//! clock offsets, and the program's exit code.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{ANY, ScanOptions, SymbolRecord, Trace};

const ROUNDS: usize = 3;

fn check(np: u32) {
    let prog = build("ring.c", "mpicc", &[]);
    let run = run(&prog, np, "ring");
    // Rank 0 returns 3: mpirun reports it, the collector did not change it.
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    let m = &trace.manifest;
    assert_eq!(m.world_size, np);
    assert_eq!(m.ranks.len(), np as usize);
    let mpi = m.mpi.as_ref().unwrap();
    assert_eq!(mpi.flavour, "openmpi");
    assert!(
        mpi.library_version.starts_with("Open MPI"),
        "{}",
        mpi.library_version
    );
    assert_eq!(mpi.eager_limits.get("vader"), Some(&4096));
    assert_eq!(mpi.thread_level_provided.as_deref(), Some("single"));
    for unit in [
        "mpi.connections",
        "mpi.peer.messages",
        "mpi.peer.bytes",
        "mpi.peer.first_contact_ns",
    ] {
        assert!(m.metrics.contains_key(unit), "{unit}");
    }
    let samples = samples(&trace);
    let symbols = trace
        .read_records::<SymbolRecord>(&ScanOptions::default())
        .unwrap();
    check_clock_offsets(&m.ranks, false, 2);
    for rank in 0..np {
        let info = &m.ranks[rank as usize];
        // The ranks of a node share one TSC calibration (collector/src/clock/shared.rs).
        assert_eq!(info.tsc_hz, m.ranks[0].tsc_hz, "rank {rank}");
        let next = (rank + 1) % np;
        let prev = (rank + np - 1) % np;
        let h = histogram(&rows, rank);
        assert_eq!(h.get("MPI_Send"), Some(&ROUNDS), "rank {rank}: {h:?}");
        assert_eq!(h.get("MPI_Recv"), Some(&ROUNDS));
        assert_eq!(h.get("MPI_Init"), Some(&1));
        assert_eq!(h.get("MPI_Finalize"), Some(&1));
        assert_eq!(h.len(), 4, "only the program's own calls: {h:?}");
        for s in calls(&rows, rank, "MPI_Send") {
            assert_eq!(s.peer, next as i32);
            assert_eq!(s.tag, rank as i32);
            assert_eq!(s.bytes_sent, (rank as u64 + 1) * 400);
            assert_eq!(s.bytes_recv, 0);
            assert_eq!(s.comm_id, 1);
            assert!(s.end_ns >= s.start_ns && s.start_ns > 0);
            assert!(s.callsite != 0);
            assert!(!s.in_parallel);
        }
        // The call site is the application's line of the MPI_Send.
        let send_line = if rank % 2 == 0 { 18 } else { 22 };
        for s in calls(&rows, rank, "MPI_Send") {
            let sym = symbols
                .iter()
                .find(|(r, y)| *r == rank && y.address == s.callsite)
                .map(|(_, y)| y)
                .expect("call site resolved");
            assert_eq!(sym.function.as_deref(), Some("main"));
            assert!(
                sym.file
                    .as_deref()
                    .unwrap_or("")
                    .ends_with("tests/mpi/ring.c"),
                "{sym:?}"
            );
            assert_eq!(sym.line, Some(send_line));
        }
        for r in calls(&rows, rank, "MPI_Recv") {
            // Even ranks receive with MPI_ANY_SOURCE, odd with MPI_ANY_TAG: the status fills both in.
            assert_eq!(r.peer, prev as i32);
            assert_eq!(r.tag, prev as i32);
            assert_ne!(r.peer, ANY);
            assert_eq!(r.bytes_recv, (prev as u64 + 1) * 400);
        }
        // Connection tracking: one peer per direction (the same one at 2 ranks).
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
}

#[test]
fn ring_2_ranks() {
    check(2);
}

#[test]
fn ring_4_ranks() {
    check(4);
}

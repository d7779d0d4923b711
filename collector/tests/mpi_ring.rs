//! Ring of blocking sends with known sizes (tests/mpi/ring.c) at 2 and 4 ranks:
//! exact counts, bytes and peers per rank, peer samples, the job manifest,
//! clock offsets, and the program's exit code.

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{ScanOptions, SymbolRecord, Trace};
use mpi_common::ring::{check_ring_calls, check_ring_connections};

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
        check_ring_calls(&rows, rank, np);
        // Outside any parallel region, and the call site is the
        // application's line of the MPI_Send.
        let send_line = if rank % 2 == 0 { 18 } else { 22 };
        for s in calls(&rows, rank, "MPI_Send") {
            assert!(!s.in_parallel);
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
        check_ring_connections(&samples, rank, np);
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

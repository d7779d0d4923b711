//! The MPI profile's received bytes: a nonblocking receive's bytes, known
//! only at its completion, are the posting call's (`MPI_Irecv`, the
//! `MPI_Startall` of a persistent receive), not the wait's; a blocking
//! receive keeps its own.

use crate::common;

use common::*;
use hyscope_analyzer::MpiCallStats;
use hyscope_format::{MpiRecord, mpi_call as c};

const SITE_SEND: u64 = 0x20;
const SITE_IRECV_A: u64 = 0x10;
const SITE_IRECV_B: u64 = 0x30;
const SITE_WAIT: u64 = 0x40;
const SITE_RECV: u64 = 0x50;
const SITE_INIT: u64 = 0x60;
const SITE_START: u64 = 0x70;

fn row(call: u16, start: i64, end: i64, tag: i32, request_id: u64, callsite: u64) -> MpiRecord {
    MpiRecord {
        call,
        start_ns: start,
        end_ns: end,
        peer: 0,
        tag,
        comm_id: 1,
        root: -1,
        request_id,
        callsite,
        ..MpiRecord::default()
    }
}

fn completion(at: i64, tag: i32, request_id: u64, bytes: u64) -> MpiRecord {
    MpiRecord {
        bytes_recv: bytes,
        ..row(c::REQUEST_COMPLETE, at, at, tag, request_id, 0)
    }
}

/// Rank 0 sends 100 B and 300 B that rank 1 receives with two `MPI_Irecv`
/// (two call sites) completed by one `MPI_Waitall`, 50 B to a blocking
/// `MPI_Recv`, and 12 B twice to a persistent receive started by
/// `MPI_Startall`.
fn trace() -> Builder {
    let mut b = Builder::new(2, 1, 1);
    b.symbol(SITE_IRECV_A, "halo.c", 10);
    b.symbol(SITE_IRECV_B, "halo.c", 11);
    for (tag, bytes, at) in [
        (1, 100, 2),
        (2, 300, 3),
        (3, 50, 10),
        (100, 12, 20),
        (100, 12, 30),
    ] {
        b.mpi(
            0,
            MpiRecord {
                bytes_sent: bytes,
                peer: 1,
                ..row(c::MPI_Send, at * MS, at * MS + US, tag, 0, SITE_SEND)
            },
        );
    }
    b.mpi(1, row(c::MPI_Irecv, MS, MS + US, 1, 7, SITE_IRECV_A));
    b.mpi(
        1,
        row(c::MPI_Irecv, MS + 2 * US, MS + 3 * US, 2, 8, SITE_IRECV_B),
    );
    b.mpi(
        1,
        row(c::MPI_Waitall, MS + 4 * US, 4 * MS, -1, 0, SITE_WAIT),
    );
    b.mpi(1, completion(2 * MS + 2 * US, 1, 7, 100));
    b.mpi(1, completion(3 * MS + 2 * US, 2, 8, 300));
    // The probe finds the 50 B message the MPI_Recv then takes: counted once.
    b.mpi(
        1,
        MpiRecord {
            bytes_recv: 50,
            ..row(c::MPI_Probe, 8 * MS, 9 * MS - US, 3, 0, SITE_RECV)
        },
    );
    b.mpi(
        1,
        MpiRecord {
            bytes_recv: 50,
            ..row(c::MPI_Recv, 9 * MS, 10 * MS + 2 * US, 3, 0, SITE_RECV)
        },
    );
    b.mpi(
        1,
        row(c::MPI_Recv_init, 15 * MS, 15 * MS + US, 100, 9, SITE_INIT),
    );
    for round in [19, 29] {
        b.mpi(
            1,
            row(
                c::MPI_Startall,
                round * MS,
                round * MS + US,
                -1,
                0,
                SITE_START,
            ),
        );
        b.mpi(
            1,
            row(
                c::MPI_Wait,
                round * MS + 2 * US,
                (round + 2) * MS,
                -1,
                0,
                SITE_WAIT,
            ),
        );
        b.mpi(1, completion((round + 1) * MS + 2 * US, 100, 9, 12));
    }
    b
}

fn find<'a>(rows: &'a [MpiCallStats], call: &str, label: Option<&str>) -> &'a MpiCallStats {
    rows.iter()
        .find(|s| {
            s.call == call
                && (label.is_none() || s.location.as_ref().map(|l| l.label.as_str()) == label)
        })
        .unwrap_or_else(|| panic!("no {call} {label:?} in {rows:#?}"))
}

#[test]
fn nonblocking_receives_received_by_their_posting_call() {
    let (_d, a) = trace().analyze();
    let m = a.mpi.get().expect("MPI profile");
    let recv = |call: &str| find(&m.calls, call, None).bytes_recv;
    assert_eq!(recv("MPI_Irecv"), 100 + 300);
    assert_eq!(
        recv("MPI_Waitall"),
        0,
        "the wait receives nothing of its own"
    );
    assert_eq!(recv("MPI_Recv"), 50);
    assert_eq!(recv("MPI_Probe"), 0, "the receive counts the message");
    assert_eq!(recv("MPI_Startall"), 2 * 12);
    assert_eq!(recv("MPI_Recv_init"), 0);
    assert_eq!(recv("MPI_Wait"), 0);
    assert!(m.calls.iter().all(|s| s.call != "REQUEST_COMPLETE"));
    // Per call site: each MPI_Irecv its own message.
    let site = |label| find(&m.callsites, "MPI_Irecv", Some(label)).bytes_recv;
    assert_eq!(site("halo.c:10"), 100);
    assert_eq!(site("halo.c:11"), 300);
    // What was received is what was sent (the matrix, from the sends).
    let received: u64 = m.calls.iter().map(|s| s.bytes_recv).sum();
    let sent: u64 = m.matrix.pairs.iter().map(|p| p.bytes).sum();
    assert_eq!((received, sent), (474, 474));
}

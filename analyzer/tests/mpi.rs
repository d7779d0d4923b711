//! MPI profile and wait states on synthetic two-rank traces with known answers.

use crate::common;

use common::*;
use hyscope_analyzer::WaitKind;
use hyscope_format::{ClockOffset, MpiRecord, mpi_call as c};

const SITE_RECV: u64 = 0x10;
const SITE_SEND: u64 = 0x20;

/// Rank 1's clock runs 1 s ahead of rank 0's and drifts by 100 µs over 10 s,
/// each measurement ±1 µs (round trips of 2 µs): the clock map takes the least
/// drift within those bounds, +98 µs from 1 s + 1 µs (`least_drift`):
/// `local = global + offset(local)`.
fn offset_at(local: i64) -> i64 {
    1_000_001_000 + (local - 1_000_000_000) * 98 / 10_000_000
}

fn local1(global: i64) -> i64 {
    // Solve local − offset(local) = global (offset changes 1e-5 per ns: iterate).
    let mut l = global + 1_000_000_000;
    for _ in 0..5 {
        l = global + offset_at(l);
    }
    l
}

fn late_sender(w: &hyscope_analyzer::WaitStates) -> &hyscope_analyzer::WaitEntry {
    w.by_kind
        .iter()
        .find(|e| e.kind == WaitKind::LateSender)
        .expect("a late-sender entry")
}

fn two_ranks() -> Builder {
    let mut b = Builder::new(2, 1, 2);
    b.set_offsets(
        1,
        vec![
            ClockOffset {
                local_ns: 1_000_000_000,
                offset_ns: 1_000_000_000,
                rtt_ns: 2_000,
            },
            ClockOffset {
                local_ns: 11_000_000_000,
                offset_ns: 1_000_100_000,
                rtt_ns: 2_000,
            },
        ],
    );
    b.symbol(SITE_RECV, "halo.c", 77);
    b
}

#[test]
fn late_sender_of_5_ms_across_clocks() {
    let mut b = two_ranks();
    // Global time: recv posted at 1 s, send starts at 1 s + 5 ms.
    let t0 = 1_000_000_000i64;
    b.call(
        0,
        c::MPI_Send,
        t0 + 5 * MS,
        t0 + 5 * MS + 10 * US,
        1,
        100,
        SITE_SEND,
    );
    b.call(
        1,
        c::MPI_Recv,
        local1(t0),
        local1(t0 + 5 * MS + 20 * US),
        0,
        100,
        SITE_RECV,
    );
    let (_d, a) = b.analyze();
    assert!(a.run.clock_corrected);
    assert!(close(a.run.clock_error_s, 1e-6, 1e-9));
    let w = a.wait_states.get().expect("wait states");
    let ls = late_sender(w);
    assert!((ls.seconds - 5e-3).abs() < 2e-9, "{}", ls.seconds);
    assert_eq!(ls.instances, 1);
    let site = &w.per_callsite[0];
    assert_eq!(site.location.as_ref().unwrap().label, "halo.c:77");
    assert_eq!(site.call.as_deref(), Some("MPI_Recv"));
    let pr = w
        .per_rank
        .iter()
        .find(|e| e.kind == WaitKind::LateSender)
        .unwrap();
    assert_eq!(pr.rank, Some(1));
    assert_eq!(w.unmatched_messages, 0);
}

#[test]
fn late_sender_through_irecv_and_wait() {
    let mut b = two_ranks();
    let t0 = 2_000_000_000i64;
    b.call(
        0,
        c::MPI_Send,
        t0 + 5 * MS,
        t0 + 5 * MS + 10 * US,
        1,
        100,
        SITE_SEND,
    );
    let mut irecv = MpiRecord {
        call: c::MPI_Irecv,
        start_ns: local1(t0),
        end_ns: local1(t0 + US),
        peer: 0,
        comm_id: 1,
        request_id: 7,
        root: -1,
        callsite: SITE_RECV,
        ..MpiRecord::default()
    };
    b.mpi(1, irecv);
    irecv.call = c::MPI_Wait;
    irecv.start_ns = local1(t0 + MS);
    irecv.end_ns = local1(t0 + 5 * MS + 30 * US);
    b.mpi(1, irecv);
    b.mpi(
        1,
        MpiRecord {
            call: c::REQUEST_COMPLETE,
            start_ns: local1(t0 + 5 * MS + 25 * US),
            end_ns: local1(t0 + 5 * MS + 25 * US),
            peer: 0,
            request_id: 7,
            bytes_recv: 100,
            ..MpiRecord::default()
        },
    );
    let (_d, a) = b.analyze();
    let w = a.wait_states.get().unwrap();
    let ls = late_sender(w);
    assert!((ls.seconds - 4e-3).abs() < 2e-9, "{}", ls.seconds);
    assert_eq!(w.per_callsite[0].call.as_deref(), Some("MPI_Wait"));
}

/// A `MPI_Waitall` that completes two receives whose sends start 3 ms and
/// 5 ms after it: one late-sender wait of 5 ms, not 8 (the two overlap).
#[test]
fn a_waitall_of_two_late_receives_is_one_wait_of_the_later() {
    let mut b = two_ranks();
    let t0 = 2_000_000_000i64;
    for (late, tag) in [(3 * MS, 1), (5 * MS, 2)] {
        let send = MpiRecord {
            call: c::MPI_Send,
            start_ns: t0 + late,
            end_ns: t0 + late + 10 * US,
            peer: 1,
            tag,
            comm_id: 1,
            bytes_sent: 100,
            root: -1,
            callsite: SITE_SEND,
            ..MpiRecord::default()
        };
        b.mpi(0, send);
    }
    for (request, tag) in [(7, 1), (8, 2)] {
        b.mpi(
            1,
            MpiRecord {
                call: c::MPI_Irecv,
                start_ns: local1(t0 + request as i64 * US),
                end_ns: local1(t0 + request as i64 * US + US / 2),
                peer: 0,
                tag,
                comm_id: 1,
                request_id: request,
                root: -1,
                callsite: SITE_RECV,
                ..MpiRecord::default()
            },
        );
    }
    b.mpi(
        1,
        MpiRecord {
            call: c::MPI_Waitall,
            start_ns: local1(t0 + 20 * US),
            end_ns: local1(t0 + 5 * MS + 40 * US),
            root: -1,
            callsite: SITE_RECV,
            ..MpiRecord::default()
        },
    );
    for (request, tag, done) in [(7, 1, 3 * MS + 25 * US), (8, 2, 5 * MS + 25 * US)] {
        b.mpi(
            1,
            MpiRecord {
                call: c::REQUEST_COMPLETE,
                start_ns: local1(t0 + done),
                end_ns: local1(t0 + done),
                peer: 0,
                tag,
                comm_id: 1,
                request_id: request,
                bytes_recv: 100,
                root: -1,
                ..MpiRecord::default()
            },
        );
    }
    let (_d, a) = b.analyze();
    let w = a.wait_states.get().unwrap();
    let ls = late_sender(w);
    // From the Waitall's start (t0 + 20 µs) to the later send's (t0 + 5 ms).
    assert!((ls.seconds - (5e-3 - 20e-6)).abs() < 2e-9, "{}", ls.seconds);
    assert_eq!(ls.instances, 1, "one call waited");
    assert_eq!(w.per_callsite[0].call.as_deref(), Some("MPI_Waitall"));
}

#[test]
fn collective_and_receiver_wait_states() {
    let mut b = Builder::new(2, 1, 1);
    // Late receiver: Ssend at 0 ms, receive posted at 4 ms.
    b.call(0, c::MPI_Ssend, 0, 6 * MS, 1, 8, SITE_SEND);
    b.call(1, c::MPI_Recv, 4 * MS, 6 * MS, 0, 8, SITE_RECV);
    // Barrier: rank 1 arrives 2 ms late.
    b.collective(0, c::MPI_Barrier, 10 * MS, 12 * MS + 10 * US, -1, 1);
    b.collective(1, c::MPI_Barrier, 12 * MS, 12 * MS + 10 * US, -1, 1);
    // Allreduce: rank 0 arrives 3 ms late.
    b.collective(0, c::MPI_Allreduce, 23 * MS, 23 * MS + 10 * US, -1, 2);
    b.collective(1, c::MPI_Allreduce, 20 * MS, 23 * MS + 10 * US, -1, 2);
    // Bcast from 0 entering at 33 ms, rank 1 at 31 ms.
    b.collective(0, c::MPI_Bcast, 33 * MS, 33 * MS + 10 * US, 0, 3);
    b.collective(1, c::MPI_Bcast, 31 * MS, 33 * MS + 20 * US, 0, 3);
    // Reduce to 0: root enters at 40 ms, rank 1 at 41 ms.
    b.collective(0, c::MPI_Reduce, 40 * MS, 41 * MS + 20 * US, 0, 4);
    b.collective(1, c::MPI_Reduce, 41 * MS, 41 * MS + 10 * US, 0, 4);
    let (_d, a) = b.analyze();
    let w = a.wait_states.get().unwrap();
    let get = |k: WaitKind| {
        w.by_kind
            .iter()
            .find(|e| e.kind == k)
            .map(|e| (e.seconds, e.instances))
    };
    let near =
        |x: Option<(f64, u64)>, s: f64| x.is_some_and(|(v, n)| (v - s).abs() < 1e-12 && n == 1);
    assert!(
        near(get(WaitKind::LateReceiver), 4e-3),
        "{:?}",
        get(WaitKind::LateReceiver)
    );
    assert!(
        near(get(WaitKind::BarrierWait), 2e-3),
        "{:?}",
        get(WaitKind::BarrierWait)
    );
    assert!(
        near(get(WaitKind::WaitAtNxN), 3e-3),
        "{:?}",
        get(WaitKind::WaitAtNxN)
    );
    assert!(
        near(get(WaitKind::LateBroadcast), 2e-3),
        "{:?}",
        get(WaitKind::LateBroadcast)
    );
    assert!(
        near(get(WaitKind::EarlyReduce), 1e-3),
        "{:?}",
        get(WaitKind::EarlyReduce)
    );
    assert!(get(WaitKind::LateSender).is_none());
    assert!((w.total_s - 12e-3).abs() < 1e-12);
}

#[test]
fn profile_histogram_and_matrix() {
    let mut b = Builder::new(2, 1, 1);
    // Rank 0 sends 3 × 100 B (eager) and 2 × 10 000 B (rendezvous above vader's 4096) to rank 1.
    for i in 0..5i64 {
        let bytes = if i < 3 { 100 } else { 10_000 };
        b.call(
            0,
            c::MPI_Send,
            i * MS,
            i * MS + (i + 1) * US,
            1,
            bytes,
            SITE_SEND,
        );
        b.call(1, c::MPI_Recv, i * MS, i * MS + 2 * US, 0, bytes, SITE_RECV);
    }
    let (_d, a) = b.analyze();
    let m = a.mpi.get().expect("mpi profile");
    let send = m.calls.iter().find(|x| x.call == "MPI_Send").unwrap();
    assert_eq!(send.count, 5);
    assert_eq!(send.bytes_sent, 20_300);
    assert!(close(send.total_s, 15e-6, 1e-9));
    assert!(close(send.min_call_s, 1e-6, 1e-9));
    assert!(close(send.max_call_s, 5e-6, 1e-9));
    let recv = m.calls.iter().find(|x| x.call == "MPI_Recv").unwrap();
    assert!(close(recv.total_s, 10e-6, 1e-9));
    assert_eq!(m.eager_messages, 3);
    assert_eq!(m.rendezvous_messages, 2);
    assert_eq!(m.eager_limit.get().unwrap().0, 4096);
    let bin100 = m
        .histogram
        .iter()
        .find(|b| b.lo <= 100 && 100 < b.hi)
        .unwrap();
    assert_eq!(
        (bin100.messages, bin100.eager, bin100.rendezvous),
        (3, 3, 0)
    );
    let big = m
        .histogram
        .iter()
        .find(|b| b.lo <= 10_000 && 10_000 < b.hi)
        .unwrap();
    assert_eq!((big.messages, big.bytes, big.rendezvous), (2, 20_000, 2));
    let pair = m.matrix.get(0, 1).expect("0 sent to 1");
    assert_eq!((pair.messages, pair.bytes), (5, 20_300));
    assert_eq!(m.matrix.get(1, 0), None, "1 sent nothing to 0");
    assert_eq!(
        m.matrix.pairs.len(),
        1,
        "only the pairs that exchanged messages"
    );
    // Per-rank: rank 0 15 µs, rank 1 10 µs → mean 12.5 µs, CV = 2.5/12.5 for the totals per call.
    assert!(close(m.total_s, 25e-6, 1e-9));
    assert!(close(m.outside_parallel_s, 25e-6, 1e-9));
    assert_eq!(m.inside_parallel_s, 0.0);
    let site = m
        .callsites
        .iter()
        .find(|s| s.location.as_ref().unwrap().label == "halo.c:77");
    assert!(site.is_none(), "no symbols in this trace");
}

#[test]
fn cv_across_ranks() {
    let mut b = Builder::new(2, 1, 1);
    b.collective(0, c::MPI_Barrier, 0, MS, -1, 1);
    b.collective(1, c::MPI_Barrier, 0, 3 * MS, -1, 1);
    let (_d, a) = b.analyze();
    let m = a.mpi.get().unwrap();
    let bar = &m.calls[0];
    assert!(close(bar.mean_rank_s, 2e-3, 1e-9));
    assert!(close(bar.min_rank_s, 1e-3, 1e-9));
    assert!(close(bar.max_rank_s, 3e-3, 1e-9));
    assert!(close(bar.cv, 0.5, 1e-9));
}

#[test]
fn several_hosts_without_offsets_make_wait_states_not_observable() {
    let mut b = Builder::new(2, 1, 2);
    b.call(0, c::MPI_Send, 0, 10, 1, 8, 1);
    b.call(1, c::MPI_Recv, 0, 10, 0, 8, 1);
    let (_d, a) = b.analyze();
    assert!(a.wait_states.reason().unwrap().contains("clock"));
}

/// 300 late senders on 300 channels (tags) with irregular waits: the total is
/// known exactly in ns, and the report must give it bit for bit, however the
/// matching passes happen to iterate their hash maps (each analysis in a
/// process seeds its maps differently).
#[test]
fn wait_state_sums_are_exact_and_do_not_depend_on_iteration_order() {
    let mut b = Builder::new(2, 1, 1);
    let mut total_ns = 0i64;
    for k in 0..300i64 {
        let posted = 1_000_000_000 + k * 10 * MS;
        let late = 1_000 + (k * 7_919) % 100_003; // ns, irregular
        total_ns += late;
        let tag = k as i32;
        let mut send = MpiRecord {
            thread: 0,
            call: c::MPI_Send,
            start_ns: posted + late,
            end_ns: posted + late + US,
            peer: 1,
            tag,
            bytes_sent: 8,
            comm_id: 1,
            root: -1,
            callsite: SITE_SEND,
            ..MpiRecord::default()
        };
        b.mpi(0, send);
        send.call = c::MPI_Recv;
        send.start_ns = posted;
        send.end_ns = posted + late + 2 * US;
        send.peer = 0;
        send.bytes_sent = 0;
        send.bytes_recv = 8;
        send.callsite = SITE_RECV;
        b.mpi(1, send);
    }
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path());
    let sums = |a: &hyscope_analyzer::Analysis| {
        let w = a.wait_states.get().expect("wait states");
        let e = late_sender(w);
        (e.seconds.to_bits(), e.instances, w.total_s.to_bits())
    };
    let first = sums(&hyscope_analyzer::analyze(dir.path(), &Default::default()).unwrap());
    assert_eq!(
        first.0,
        (total_ns as f64 * 1e-9).to_bits(),
        "{}",
        f64::from_bits(first.0)
    );
    assert_eq!(first.1, 300);
    for _ in 0..4 {
        let again = hyscope_analyzer::analyze(dir.path(), &Default::default()).unwrap();
        assert_eq!(sums(&again), first);
    }
}

/// The viewers' matrix of more ranks than cells sums blocks of ranks, and
/// a pair is found by its sender and receiver.
#[test]
fn matrix_blocks_sum_the_pairs_of_their_ranks() {
    use hyscope_analyzer::model::{CommMatrix, CommPair};
    let pair = |from, to, messages, bytes| CommPair {
        from,
        to,
        messages,
        bytes,
    };
    let m = CommMatrix {
        ranks: 5,
        pairs: vec![
            pair(0, 1, 1, 10),
            pair(1, 0, 2, 20),
            pair(1, 4, 1, 7),
            pair(3, 2, 3, 5),
            pair(4, 4, 1, 1),
        ],
    };
    assert_eq!(m.get(1, 4), Some(&pair(1, 4, 1, 7)));
    assert_eq!(m.get(4, 1), None);
    assert_eq!(m.block_bytes(1)[3][2], 5);
    assert_eq!(
        m.block_bytes(2),
        [vec![30, 0, 7], vec![0, 5, 0], vec![0, 0, 1]],
        "blocks {{0, 1}}, {{2, 3}}, {{4}}"
    );
    assert_eq!(m.block_bytes(5), [vec![43]]);
}

//! Unit tests of the timeline index on small traces written with `PartWriter`,
//! each with answers known by construction.

use std::path::PathBuf;

use hyscope_format::{
    ClockOffset, Manifest, MpiRecord, OmpKind, OmpRecord, PartWriter, RankInfo, Table, Trace,
    WriterOptions, mpi_call,
};

use super::build::flatten;
use super::*;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "hyscope-timeline-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn omp(thread: u32, kind: OmpKind, variant: u8, start: i64, end: i64) -> OmpRecord {
    OmpRecord {
        thread,
        kind: kind as u8,
        variant,
        start_ns: start,
        end_ns: end,
        ..OmpRecord::default()
    }
}

fn mpi(thread: u32, call: u16, start: i64, end: i64, peer: i32, bytes: u64) -> MpiRecord {
    MpiRecord {
        thread,
        call,
        start_ns: start,
        end_ns: end,
        peer,
        bytes_sent: bytes,
        ..MpiRecord::default()
    }
}

/// Write a trace: per rank, its OpenMP and MPI rows; ranks get the given clock offsets.
fn write_trace(
    dir: &std::path::Path,
    ranks: &[(u32, i64, Vec<OmpRecord>, Vec<MpiRecord>)],
    options: WriterOptions,
) -> Trace {
    let mut manifest = Manifest::new();
    for (rank, offset, omp_rows, mpi_rows) in ranks {
        if !omp_rows.is_empty() {
            let mut w = PartWriter::create(dir, Table::Omp, *rank, options.clone()).unwrap();
            w.write_omp(omp_rows).unwrap();
            w.finish().unwrap();
        }
        if !mpi_rows.is_empty() {
            let mut w = PartWriter::create(dir, Table::Mpi, *rank, options.clone()).unwrap();
            w.write_mpi(&mut mpi_rows.clone()).unwrap();
            w.finish().unwrap();
        }
        manifest.ranks.push(RankInfo {
            rank: *rank,
            host: "node0".into(),
            clock_offsets: vec![ClockOffset {
                local_ns: 0,
                offset_ns: *offset,
                rtt_ns: 0,
            }],
            ..RankInfo::default()
        });
    }
    manifest.write(dir).unwrap();
    Trace::open(dir).unwrap()
}

#[test]
fn half_barrier_half_compute_gives_exact_shares() {
    let dir = TempDir::new("half");
    // Thread 0: an implicit task over [1000, 2000), whose second half is a
    // barrier (sync) that is all waiting (sync_wait).
    let rows = vec![
        omp(0, OmpKind::ImplicitTask, 0, 1000, 2000),
        omp(0, OmpKind::Sync, 2, 1500, 2000),
        omp(0, OmpKind::SyncWait, 2, 1500, 2000),
    ];
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    assert_eq!(index.rows().len(), 1);
    assert_eq!(index.span(), (1000, 2000));

    let cells = index.query(0, 1000, 2000, 4);
    assert_eq!(cells.len(), 4);
    for (c, cell) in cells.iter().enumerate() {
        assert_eq!(
            (cell.t0, cell.t1),
            (1000 + 250 * c as i64, 1250 + 250 * c as i64)
        );
        assert_eq!(cell.covered(), 250);
        let expected = if c < 2 {
            State::Compute
        } else {
            State::BarrierWait
        };
        assert_eq!(cell.dominant(), Some(expected));
        assert_eq!(cell.share(expected), 1.0);
    }
    let whole = index.query(0, 1000, 2000, 1);
    assert_eq!(whole[0].time[State::Compute as usize], 500);
    assert_eq!(whole[0].time[State::BarrierWait as usize], 500);
    assert_eq!(whole[0].share(State::BarrierWait), 0.5);
    // A cell straddling the switch: 100 ns compute, 300 ns barrier wait.
    let s = index.summary(0, 1400, 1800);
    assert_eq!(s.time[State::Compute as usize], 100);
    assert_eq!(s.time[State::BarrierWait as usize], 300);
    assert_eq!(s.dominant(), Some(State::BarrierWait));
    // Outside the row's lifetime nothing is covered.
    let outside = index.query(0, 0, 1000, 10);
    assert!(
        outside
            .iter()
            .all(|c| c.covered() == 0 && c.dominant().is_none())
    );
    let partly = index.summary(0, 1900, 2100);
    assert_eq!(partly.covered(), 100);
}

#[test]
fn nesting_priorities_flatten_to_the_innermost_state() {
    let dir = TempDir::new("nest");
    let rows = vec![
        omp(0, OmpKind::Thread, 1, 0, 200),
        omp(0, OmpKind::Parallel, 0, 10, 110),
        omp(0, OmpKind::ImplicitTask, 0, 15, 105),
        omp(0, OmpKind::Work, 11, 20, 80),
        omp(0, OmpKind::Chunk, 3, 20, 40),
        omp(0, OmpKind::Chunk, 3, 45, 80),
        omp(0, OmpKind::Sync, 8, 80, 100),
        omp(0, OmpKind::SyncWait, 8, 85, 95),
        omp(0, OmpKind::MutexWait, 5, 30, 33),
        omp(0, OmpKind::TaskCreate, 0, 50, 50),
    ];
    let calls = vec![
        mpi(0, mpi_call::MPI_Send, 50, 60, 1, 64),
        mpi(0, mpi_call::MPI_Allreduce, 120, 150, -1, 8),
        mpi(0, mpi_call::MPI_Wait, 160, 170, -1, 0),
        mpi(0, mpi_call::REQUEST_COMPLETE, 165, 165, 1, 0),
    ];
    let trace = write_trace(&dir.0, &[(0, 0, rows, calls)], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    let segs: Vec<(i64, i64, State)> = segments(&index, 0, 0, 200, 100);
    use State::*;
    assert_eq!(
        segs,
        vec![
            (0, 10, Serial),
            (10, 15, OmpRuntime),
            (15, 20, Compute),
            (20, 30, Compute),
            (30, 33, LockWait),
            (33, 40, Compute),
            (40, 45, OmpRuntime),
            (45, 50, Compute),
            (50, 60, MpiP2p),
            (60, 80, Compute),
            (80, 85, OmpRuntime),
            (85, 95, BarrierWait),
            (95, 100, OmpRuntime),
            (100, 105, Compute),
            (105, 110, OmpRuntime),
            (110, 120, Serial),
            (120, 150, MpiCollective),
            (150, 160, Serial),
            (160, 170, MpiWait),
            (170, 200, Serial),
        ]
        .into_iter()
        // Equal neighbours are merged: (15, 20) and (20, 30) are one segment.
        .fold(Vec::<(i64, i64, State)>::new(), |mut v, s| {
            match v.last_mut() {
                Some(last) if last.2 == s.2 => last.1 = s.1,
                _ => v.push(s),
            }
            v
        })
    );
    assert_eq!(
        index.segment_at(0, 87).map(|s| (s.start, s.end, s.state)),
        Some((85, 95, BarrierWait))
    );
    assert_eq!(index.segment_at(0, 200), None);
    // The whole row: every state's time is the sum of its segments.
    let all = index.summary(0, 0, 200);
    assert_eq!(all.covered(), 200);
    assert_eq!(all.time[Serial as usize], 10 + 10 + 10 + 30);
    assert_eq!(all.time[Compute as usize], 15 + 7 + 5 + 20 + 5);
    assert_eq!(all.time[OmpRuntime as usize], 5 + 5 + 5 + 5 + 5);
    assert_eq!(all.time[LockWait as usize], 3);
    assert_eq!(all.time[BarrierWait as usize], 10);
    assert_eq!(all.time[MpiP2p as usize], 10);
    assert_eq!(all.time[MpiCollective as usize], 30);
    assert_eq!(all.time[MpiWait as usize], 10);

    // Details under the cursor: the stack at t = 55 is thread ⊃ parallel ⊃
    // implicit task ⊃ work ⊃ chunk ⊃ MPI_Send (the instant at 50 is outside).
    let stack = index.stack_at(0, 55).unwrap();
    let names: Vec<String> = stack.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        vec![
            "thread (initial)",
            "parallel",
            "implicit_task",
            "work (loop_dynamic)",
            "chunk (ws_loop_chunk)",
            "MPI_Send"
        ]
    );
    match &stack[5].detail {
        Detail::Mpi(r) => assert_eq!((r.peer, r.bytes_sent), (1, 64)),
        other => panic!("expected MPI_Send, got {other:?}"),
    }
}

#[test]
fn rows_ranks_threads_and_clock_shift() {
    let dir = TempDir::new("ranks");
    // Rank 1's clock runs 5000 ns ahead of rank 0's: its rows shift left by 5000.
    let r0 = vec![
        omp(0, OmpKind::ImplicitTask, 0, 0, 1000),
        omp(1, OmpKind::ImplicitTask, 0, 0, 1000),
        omp(1, OmpKind::MutexWait, 1, 0, 600),
    ];
    let r1 = vec![omp(0, OmpKind::ImplicitTask, 0, 5000, 6000)];
    // An MPI-only thread (index 2) on rank 1.
    let r1_mpi = vec![mpi(2, mpi_call::MPI_Recv, 5200, 5400, 0, 0)];
    let trace = write_trace(
        &dir.0,
        &[(0, 0, r0, vec![]), (1, 5000, r1, r1_mpi)],
        WriterOptions::default(),
    );
    let index = TimelineIndex::build(&trace).unwrap();
    let rows: Vec<(u32, u32, i64)> = index
        .rows()
        .iter()
        .map(|r| (r.rank, r.thread, index.clocks().to_global(r.rank, 0).ns()))
        .collect();
    assert_eq!(
        rows,
        vec![(0, 0, 0), (0, 1, 0), (1, 0, -5000), (1, 2, -5000)]
    );
    assert_eq!(index.span(), (0, 1000));
    assert_eq!(index.row_of(1, 2), Some(3));
    let lock = index.query(1, 0, 1000, 2);
    assert_eq!(lock[0].dominant(), Some(State::LockWait));
    assert_eq!(lock[1].time[State::LockWait as usize], 100);
    assert_eq!(lock[1].time[State::Compute as usize], 400);
    let recv = index.summary(3, 0, 1000);
    assert_eq!(recv.time[State::MpiP2p as usize], 200);
    assert_eq!(recv.covered(), 200);
    let ivs = index.intervals_in(3, 0, 1000, 10).unwrap();
    assert_eq!(ivs.len(), 1);
    assert_eq!((ivs[0].start, ivs[0].end), (200, 400));
    assert_eq!(ivs[0].state, State::MpiP2p);
}

/// Brute-force time per state over `[a, b)` from explicit segments.
fn brute(segs: &[(i64, i64, State)], a: i64, b: i64) -> [u64; STATES] {
    let mut t = [0u64; STATES];
    for &(s, e, st) in segs {
        let lo = s.max(a);
        let hi = e.min(b);
        if hi > lo {
            t[st as usize] += (hi - lo) as u64;
        }
    }
    t
}

#[test]
fn many_segments_and_long_gaps_cross_blocks_exactly() {
    // 1000 chunks of 7 ns compute then 3 ns barrier wait, then a gap of 2^29 ns
    // (longer than a block's offset range), then 300 more.
    let mut ivs = Vec::new();
    let mut expected = Vec::new();
    let mut t = 1_000_000i64;
    let first = t;
    for i in 0..1300 {
        if i == 1000 {
            expected.push((t, t + (1 << 29), State::Serial));
            t += 1 << 29;
        }
        ivs.push((t, t + 7, 4u8));
        ivs.push((t + 7, t + 10, 6u8));
        expected.push((t, t + 7, State::Compute));
        expected.push((t + 7, t + 10, State::BarrierWait));
        t += 10;
    }
    // The thread's lifetime covers everything (layer 0 = serial).
    ivs.push((first, t, 0));
    let data = flatten(ivs, None);
    assert_eq!(data.packed.len(), expected.len());
    assert!(data.blocks.len() > expected.len() / BLOCK);
    let index = TimelineIndex {
        trace: dummy_trace(),
        rows: vec![RowInfo {
            rank: 0,
            thread: 0,
            host: String::new(),
        }],
        data: vec![data],
        ranks: vec![super::groups::RankRows {
            rank: 0,
            rows: 0..1,
        }],
        span: (first, t),
        segments: expected.len(),
        clocks: Default::default(),
        left_out: Vec::new(),
    };
    let mut x = 12345u64;
    for _ in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let a = first - 50 + (x >> 20) as i64 % (t - first + 100);
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let b = a + (x >> 20) as i64 % 30_000;
        assert_eq!(
            index.summary(0, a, b).time,
            brute(&expected, a, b),
            "[{a}, {b})"
        );
    }
    // A query over the whole span: cells add up to the total.
    let cells = index.query(0, first, t, 1280);
    // The hinted walk of `query` gives what independent lookups give.
    for c in &cells {
        assert_eq!(c.time, index.summary(0, c.t0, c.t1).time);
    }
    for c in index.query(0, first + 9_000, first + 12_000, 700) {
        assert_eq!(c.time, brute(&expected, c.t0, c.t1));
    }
    let mut sum = [0u64; STATES];
    for c in &cells {
        for (acc, v) in sum.iter_mut().zip(c.time) {
            *acc += v;
        }
    }
    assert_eq!(sum, brute(&expected, first, t));
    assert_eq!(sum[State::Compute as usize], 1300 * 7);
    assert_eq!(sum[State::Serial as usize], 1 << 29);
    let segs = index.segments_in(0, first + 9_995, first + 10_012, 10);
    assert_eq!(
        segs.iter()
            .map(|s| (s.start - first, s.state))
            .collect::<Vec<_>>(),
        vec![
            (9_990, State::Compute),
            (9_997, State::BarrierWait),
            (10_000, State::Serial),
        ]
    );
}

/// A trace value for index tests that do not read files.
fn dummy_trace() -> Trace {
    let dir = TempDir::new("dummy");
    Manifest::new().write(&dir.0).unwrap();
    Trace::open(&dir.0).unwrap()
}

#[test]
fn parts_split_across_files_give_the_same_index() {
    // The same rows written as one part or as many small parts (and row groups).
    let mut rows = Vec::new();
    for i in 0..500i64 {
        let t = i * 100;
        rows.push(omp(0, OmpKind::Chunk, 3, t, t + 60));
        rows.push(omp(0, OmpKind::SyncWait, 2, t + 60, t + 90));
    }
    rows.push(omp(0, OmpKind::ImplicitTask, 0, 0, 50_000));
    let one = TempDir::new("one");
    let many = TempDir::new("many");
    let a = TimelineIndex::build(&write_trace(
        &one.0,
        &[(0, 0, rows.clone(), vec![])],
        WriterOptions::default(),
    ))
    .unwrap();
    let b = TimelineIndex::build(&write_trace(
        &many.0,
        &[(0, 0, rows, vec![])],
        WriterOptions {
            rows_per_part: 97,
            rows_per_row_group: 13,
            ..WriterOptions::default()
        },
    ))
    .unwrap();
    assert!(b.trace().parts(Table::Omp).len() > 5);
    assert_eq!(a.query(0, 0, 50_000, 333), b.query(0, 0, 50_000, 333));
    let total = a.summary(0, 0, 50_000);
    assert_eq!(total.time[State::Compute as usize], 500 * 60 + 500 * 10);
    assert_eq!(total.time[State::BarrierWait as usize], 500 * 30);
    // The time-range filter reads only the window.
    let ivs = b.intervals_in(0, 10_000, 10_099, 100).unwrap();
    assert_eq!(ivs.len(), 3);
    assert_eq!(ivs[0].name(), "implicit_task");
    assert_eq!((ivs[1].start, ivs[2].start), (10_000, 10_060));
}

#[test]
fn cache_key_follows_the_clock_map_not_only_the_first_offset() {
    let dir = TempDir::new("cache-key");
    let rows = vec![omp(0, OmpKind::ImplicitTask, 0, 1000, 2000)];
    let mut trace = write_trace(&dir.0, &[(1, 0, rows, vec![])], WriterOptions::default());
    let measured = |offset_ns, rtt_ns, local_ns| ClockOffset {
        local_ns,
        offset_ns,
        rtt_ns,
    };
    let mut key_with = |offsets: Vec<ClockOffset>| {
        trace.manifest.ranks[0].clock_offsets = offsets;
        super::cache::key(&trace)
    };
    // Same first offset, the second differs: another map, another key.
    let a = key_with(vec![measured(1_000, 0, 0), measured(2_000, 0, 1_000_000)]);
    let b = key_with(vec![measured(1_000, 0, 0), measured(3_000, 0, 1_000_000)]);
    assert_ne!(a, b);
    // Same values, round trips wide enough that the bounds overlap: no
    // drift, another map, another key.
    let c = key_with(vec![
        measured(1_000, 4_000, 0),
        measured(3_000, 4_000, 1_000_000),
    ]);
    assert_ne!(b, c);
    // The same map: the same key.
    assert_eq!(
        c,
        key_with(vec![
            measured(1_000, 4_000, 0),
            measured(3_000, 4_000, 1_000_000)
        ])
    );
}

#[test]
fn cached_index_answers_like_the_built_one() {
    let dir = TempDir::new("cache");
    let mut rows = Vec::new();
    for i in 0..300i64 {
        rows.push(omp(i as u32 % 3, OmpKind::Chunk, 3, i * 50, i * 50 + 30));
        rows.push(omp(
            i as u32 % 3,
            OmpKind::SyncWait,
            2,
            i * 50 + 30,
            i * 50 + 45,
        ));
    }
    let calls = vec![mpi(3, mpi_call::MPI_Bcast, 100, 9_000, -1, 64)];
    let trace = write_trace(&dir.0, &[(0, 0, rows, calls)], WriterOptions::default());
    let built = TimelineIndex::build(&trace).unwrap();
    let file = dir.0.join("cache").join("t.idx");
    super::cache::save(&built, &file, "key-1").unwrap();
    let loaded = super::cache::load(&trace, &file, "key-1").unwrap();
    assert_eq!(loaded.rows(), built.rows());
    assert_eq!(loaded.span(), built.span());
    assert_eq!(loaded.segments(), built.segments());
    for row in 0..built.rows().len() {
        assert_eq!(
            loaded.query(row, 0, 15_000, 97),
            built.query(row, 0, 15_000, 97)
        );
        assert_eq!(
            loaded.segments_in(row, 0, 15_000, 1000),
            built.segments_in(row, 0, 15_000, 1000)
        );
    }
    // Another key (the trace changed) or a truncated file: not used.
    assert!(super::cache::load(&trace, &file, "key-2").is_err());
    let bytes = std::fs::read(&file).unwrap();
    // A cache of the previous version (barriers not split by arrivals).
    let mut old = bytes.clone();
    old[..8].copy_from_slice(b"HYTLIDX1");
    std::fs::write(&file, &old).unwrap();
    assert!(super::cache::load(&trace, &file, "key-1").is_err());
    std::fs::write(&file, &bytes[..bytes.len() - 3]).unwrap();
    assert!(super::cache::load(&trace, &file, "key-1").is_err());
    std::fs::write(&file, b"garbage").unwrap();
    assert!(super::cache::load(&trace, &file, "key-1").is_err());
}

/// An OpenMP row of region instance `pid` (team of `team`).
fn team_row(
    pid: u64,
    team: u32,
    thread: u32,
    kind: OmpKind,
    variant: u8,
    start: i64,
    end: i64,
) -> OmpRecord {
    OmpRecord {
        parallel_id: pid,
        team_size: team,
        ..omp(thread, kind, variant, start, end)
    }
}

/// A barrier (explicit, `variant` 3) of `thread` whose wait spans it, as libomp dispatches them.
fn spanning_barrier(pid: u64, thread: u32, start: i64, end: i64) -> [OmpRecord; 2] {
    [
        team_row(pid, 2, thread, OmpKind::Sync, 3, start, end),
        team_row(pid, 2, thread, OmpKind::SyncWait, 3, start, end),
    ]
}

/// A region of 2 threads over [0, 500): both threads' implicit tasks span it.
fn two_thread_region() -> Vec<OmpRecord> {
    vec![
        team_row(1, 2, 0, OmpKind::Parallel, 0, 0, 500),
        team_row(1, 2, 0, OmpKind::ImplicitTask, 0, 0, 500),
        team_row(1, 2, 1, OmpKind::ImplicitTask, 0, 0, 500),
    ]
}

/// Time per state of `row` over [a, b).
/// Row `row`'s segments in [a, b), at most `limit`: (start, end, state).
fn segments(
    index: &TimelineIndex,
    row: usize,
    a: i64,
    b: i64,
    limit: usize,
) -> Vec<(i64, i64, State)> {
    index
        .segments_in(row, a, b, limit)
        .iter()
        .map(|s| (s.start, s.end, s.state))
        .collect()
}

fn time_in(index: &TimelineIndex, row: usize, a: i64, b: i64) -> [u64; STATES] {
    index.summary(row, a, b).time
}

#[test]
fn libomp_barrier_waits_until_the_teams_last_arrival() {
    let dir = TempDir::new("arrival");
    // Thread 0 arrives at 100, thread 1 at 400, both leave at 450; libomp's
    // waits span the barrier.
    let mut rows = two_thread_region();
    rows.extend(spanning_barrier(1, 0, 100, 450));
    rows.extend(spanning_barrier(1, 1, 400, 450));
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    use State::*;
    // Thread 0: waiting 300 ns for the last arrival, then 50 ns of the
    // runtime's synchronisation.
    let t0 = time_in(&index, 0, 100, 450);
    assert_eq!(t0[BarrierWait as usize], 300);
    assert_eq!(t0[OmpRuntime as usize], 50);
    let segs: Vec<(i64, i64, State)> = segments(&index, 0, 0, 500, 10);
    assert_eq!(
        segs,
        vec![
            (0, 100, Compute),
            (100, 400, BarrierWait),
            (400, 450, OmpRuntime),
            (450, 500, Compute)
        ]
    );
    // Under the cursor: the barrier's wait, then its synchronisation.
    for (t, state, role) in [
        (200, BarrierWait, "waiting for the team's last arrival"),
        (420, OmpRuntime, "barrier synchronisation, not waiting"),
    ] {
        let seg = index.segment_at(0, t).unwrap();
        assert_eq!(seg.state, state);
        let stack = index.stack_at(0, t).unwrap();
        let inner = stack.iter().rev().find(|i| i.state == state).unwrap();
        assert_eq!(inner.role(state), Some(role));
    }
    // Thread 1 arrives last: no wait, 50 ns of synchronisation.
    let t1 = time_in(&index, 1, 400, 450);
    assert_eq!(t1[BarrierWait as usize], 0);
    assert_eq!(t1[OmpRuntime as usize], 50);
    assert_eq!(time_in(&index, 1, 0, 500)[BarrierWait as usize], 0);
}

#[test]
fn barriers_that_do_not_match_across_the_team_keep_the_runtimes_wait() {
    let dir = TempDir::new("unmatched");
    // Thread 0 has two barriers, thread 1 one (a truncated trace): no
    // matching, the waits colour the whole barriers as recorded.
    let mut rows = two_thread_region();
    rows.extend(spanning_barrier(1, 0, 100, 450));
    rows.extend(spanning_barrier(1, 0, 460, 480));
    rows.extend(spanning_barrier(1, 1, 400, 450));
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    let t0 = time_in(&index, 0, 0, 500);
    assert_eq!(t0[State::BarrierWait as usize], 350 + 20);
    assert_eq!(t0[State::OmpRuntime as usize], 0);
    let t1 = time_in(&index, 1, 0, 500);
    assert_eq!(t1[State::BarrierWait as usize], 50);
    assert_eq!(t1[State::OmpRuntime as usize], 0);
}

#[test]
fn runtime_waits_inside_barriers_keep_their_split() {
    let dir = TempDir::new("inside");
    // A runtime whose wait lies inside the barrier splits it itself.
    let mut rows = two_thread_region();
    for (t, s) in [(0, 100), (1, 400)] {
        rows.push(team_row(1, 2, t, OmpKind::Sync, 3, s, 450));
        rows.push(team_row(1, 2, t, OmpKind::SyncWait, 3, s + 10, 440));
    }
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    let t0 = time_in(&index, 0, 0, 500);
    assert_eq!(t0[State::BarrierWait as usize], 330);
    assert_eq!(t0[State::OmpRuntime as usize], 20);
    let t1 = time_in(&index, 1, 0, 500);
    assert_eq!(t1[State::BarrierWait as usize], 30);
    assert_eq!(t1[State::OmpRuntime as usize], 20);
}

#[test]
fn worker_join_barrier_is_clipped_at_the_parallel_end() {
    let dir = TempDir::new("join");
    // libomp dispatches the worker's join-barrier and implicit-task ends when
    // it wakes for the next region, here at 5000: after the master's
    // parallel end (500) the worker idles in the pool (serial).
    let rows = vec![
        omp(0, OmpKind::Thread, 1, 0, 6000),
        omp(1, OmpKind::Thread, 2, 0, 6000),
        team_row(1, 2, 0, OmpKind::Parallel, 0, 0, 500),
        team_row(1, 2, 0, OmpKind::ImplicitTask, 0, 0, 490),
        team_row(1, 2, 1, OmpKind::ImplicitTask, 0, 0, 5000),
        team_row(1, 2, 0, OmpKind::Sync, 9, 300, 490),
        team_row(1, 2, 0, OmpKind::SyncWait, 9, 300, 490),
        team_row(1, 2, 1, OmpKind::Sync, 9, 200, 5000),
        team_row(1, 2, 1, OmpKind::SyncWait, 9, 200, 5000),
    ];
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    use State::*;
    let worker: Vec<(i64, i64, State)> = segments(&index, 1, 0, 6000, 10);
    // The worker arrives first (200) and waits for the master (300), then
    // synchronises until the parallel end.
    assert_eq!(
        worker,
        vec![
            (0, 200, Compute),
            (200, 300, BarrierWait),
            (300, 500, OmpRuntime),
            (500, 6000, Serial)
        ]
    );
    let master = time_in(&index, 0, 300, 490);
    assert_eq!(master[BarrierWait as usize], 0);
    assert_eq!(master[OmpRuntime as usize], 190);
}

#[test]
fn timeline_barrier_wait_is_the_reports() {
    let dir = TempDir::new("report");
    // Three threads, two explicit barriers and the join barrier, waits
    // spanning them; thread 2 runs an explicit task while it waits at the
    // first barrier (task time is work, not waiting, in both).
    let pid = 7;
    let mut rows = vec![team_row(pid, 3, 0, OmpKind::Parallel, 0, 1_000, 10_000)];
    for t in 0..3 {
        rows.push(team_row(
            pid,
            3,
            t,
            OmpKind::ImplicitTask,
            0,
            1_000 + 10 * i64::from(t),
            10_000,
        ));
    }
    let barrier = |rows: &mut Vec<OmpRecord>, t: u32, v: u8, s: i64, e: i64| {
        rows.push(team_row(pid, 3, t, OmpKind::Sync, v, s, e));
        rows.push(team_row(pid, 3, t, OmpKind::SyncWait, v, s, e));
    };
    for (t, arrivals) in [
        (0, [2_000, 6_500, 9_000]),
        (1, [3_000, 5_000, 9_500]),
        (2, [1_500, 6_000, 9_200]),
    ] {
        barrier(&mut rows, t, 3, arrivals[0], 3_100);
        barrier(&mut rows, t, 3, arrivals[1], 6_600);
        barrier(&mut rows, t, 9, arrivals[2], 10_000);
    }
    rows.push(team_row(pid, 3, 2, OmpKind::TaskRun, 0, 1_700, 2_200));
    let trace = write_trace(&dir.0, &[(0, 0, rows, vec![])], WriterOptions::default());
    let index = TimelineIndex::build(&trace).unwrap();
    let a = crate::analyze(&dir.0, &Default::default()).unwrap();
    let r = &a.regions.get().unwrap()[0];
    assert!(r.barrier.wait_from_arrivals);
    // Last arrivals 3000, 6500, 9500. Waits: thread 0 1000 + 0 + 500,
    // thread 1 0 + 1500 + 0, thread 2 (1500 − 500 of task) + 500 + 300;
    // synchronisation 100 + 100 + 500 each.
    for (t, wait) in [(0u32, 1_500u64), (1, 1_500), (2, 1_800)] {
        let row = index.row_of(0, t).unwrap();
        let time = time_in(&index, row, 0, 20_000);
        let report = r.per_thread.iter().find(|x| x.thread == t).unwrap();
        let ns = |s: f64| (s * 1e9).round() as u64;
        assert_eq!(time[State::BarrierWait as usize], wait, "thread {t}");
        assert_eq!(ns(report.barrier.wait_s), wait, "thread {t}");
        assert_eq!(time[State::OmpRuntime as usize], 700, "thread {t}");
        assert_eq!(ns(report.barrier.sync_overhead_s), 700, "thread {t}");
    }
    let t2 = time_in(&index, index.row_of(0, 2).unwrap(), 0, 20_000);
    assert_eq!(t2[State::Task as usize], 500);
}

/// `ranks` ranks of two threads computing over [0, 1000) ns (implicit
/// tasks), rank r with a lock wait on thread 1 over [100, 100 + 10·((7r) mod 16))
/// and an `MPI_Allreduce` on thread 0 over [600, 600 + 20·(r mod 16)). In two
/// cells of 500 ns each rank covers 1000 ns: in the first the most waiting is
/// 150 ns, at r ≡ 9 (mod 16) (7 is its own inverse mod 16), in the second
/// 300 ns at r ≡ 15; over the window r ≡ 15 waits most (90 + 300 ns).
fn waiting_ranks(dir: &std::path::Path, ranks: u32) -> Trace {
    let rows: Vec<_> = (0..ranks)
        .map(|r| {
            let omp_rows = vec![
                omp(0, OmpKind::ImplicitTask, 0, 0, 1000),
                omp(1, OmpKind::ImplicitTask, 0, 0, 1000),
                omp(
                    1,
                    OmpKind::MutexWait,
                    1,
                    100,
                    100 + 10 * i64::from((7 * r) % 16),
                ),
            ];
            let mpi_rows = vec![mpi(
                0,
                mpi_call::MPI_Allreduce,
                600,
                600 + 20 * i64::from(r % 16),
                -1,
                8,
            )];
            (r, 0, omp_rows, mpi_rows)
        })
        .collect();
    write_trace(dir, &rows, WriterOptions::default())
}

#[test]
fn aggregated_lines_show_the_worst_rank_and_the_spread() {
    let dir = TempDir::new("groups");
    let trace = waiting_ranks(&dir.0, 32);
    let index = TimelineIndex::build(&trace).unwrap();
    assert_eq!(index.rank_rows().len(), 32);
    assert_eq!(index.rank_rows()[9].rows, 18..20);
    let lines = Grouping::default().lines(32, 2);
    assert_eq!(
        lines,
        vec![Group { start: 0, end: 16 }, Group { start: 16, end: 32 }]
    );
    assert_eq!(
        mpi_state(&mpi(0, mpi_call::MPI_Allreduce, 0, 1, -1, 0)),
        Some(State::MpiCollective)
    );
    for (g, base) in lines.iter().zip([0u32, 16]) {
        let row = index.aggregate(*g, 0, 1000, 2);
        assert_eq!(row.ranks, (base..base + 16).collect::<Vec<_>>());
        assert_eq!(row.worst_rank, Some(base + 15));
        assert_eq!(
            row.label(),
            format!("ranks {base}–{} worst {}", base + 15, base + 15)
        );
        let [c0, c1] = [&row.cells[0], &row.cells[1]];
        assert_eq!((c0.worst.t0, c0.worst.t1, c1.worst.t1), (0, 500, 1000));
        // First cell: rank base + 9 waits 150 ns in a lock, rank base none.
        assert_eq!(c0.worst_rank, Some(base + 9));
        assert_eq!(c0.worst.time[State::LockWait as usize], 150);
        assert_eq!(c0.worst.time[State::Compute as usize], 850);
        assert_eq!(c0.worst.covered(), 1000);
        assert_eq!((c0.wait_min, c0.wait_max), (0.0, 0.15));
        // Second cell: rank base + 15 in the collective 300 ns.
        assert_eq!(c1.worst_rank, Some(base + 15));
        assert_eq!(c1.worst.time[State::MpiCollective as usize], 300);
        assert_eq!(c1.worst.time[State::Compute as usize], 700);
        assert_eq!((c1.wait_min, c1.wait_max), (0.0, 0.3));
        assert!((c1.spread() - 0.3).abs() < 1e-12);
    }
    // A line of one rank is the rank's threads summed, without spread.
    let one = index.aggregate(Group { start: 9, end: 10 }, 0, 1000, 2);
    assert_eq!(one.label(), "rank 9");
    assert_eq!(one.worst_rank, Some(9));
    let summed = index.rank_query(9, 0, 1000, 2);
    for (c, s) in one.cells.iter().zip(&summed) {
        assert_eq!(&c.worst, s);
        assert_eq!(c.spread(), 0.0);
    }
    assert_eq!(summed[0].time[State::LockWait as usize], 150);
    // Outside every rank's time: no worst rank.
    let empty = index.aggregate(lines[0], 2000, 3000, 1);
    assert_eq!((empty.worst_rank, empty.cells[0].worst_rank), (None, None));
    assert_eq!(
        index.aggregate_all(&lines, 0, 1000, 2)[1],
        index.aggregate(lines[1], 0, 1000, 2)
    );
}

#[test]
fn groups_open_down_to_single_ranks() {
    assert_eq!(group_size(4096, 40), 128);
    assert_eq!(group_size(8, 40), 1);
    assert_eq!(group_size(1000, 45), 32);
    let mut g = Grouping::default();
    assert_eq!(g.lines(4096, 40).len(), 32);
    let top = Group { start: 0, end: 128 };
    g.toggle(top);
    let lines = g.lines(4096, 40);
    assert_eq!(lines.len(), 16 + 31);
    assert_eq!(lines[0], Group { start: 0, end: 8 });
    assert_eq!(
        lines[15],
        Group {
            start: 120,
            end: 128
        }
    );
    assert_eq!(
        lines[16],
        Group {
            start: 128,
            end: 256
        }
    );
    g.toggle(Group { start: 8, end: 16 });
    let lines = g.lines(4096, 40);
    assert_eq!(lines.len(), 15 + 8 + 31);
    assert!(lines[1..9].iter().zip(8..).all(|(l, r)| *l
        == Group {
            start: r,
            end: r + 1
        }));
    // The tree shows the open groups before their children.
    let tree = g.tree(4096, 40);
    assert_eq!((tree[0].group, tree[0].open, tree[0].depth), (top, true, 0));
    assert_eq!(
        (tree[2].group, tree[2].open, tree[2].depth),
        (Group { start: 8, end: 16 }, true, 1)
    );
    assert_eq!(
        (tree[3].group, tree[3].depth),
        (Group { start: 8, end: 9 }, 2)
    );
    // A single rank does not open; closing the top closes what it holds.
    g.toggle(Group { start: 8, end: 9 });
    assert_eq!(g.expanded.len(), 2);
    g.close(top);
    assert!(g.expanded.is_empty());
    assert_eq!(g.lines(4096, 40).len(), 32);
    // The last group of a count that is no power of two is shorter.
    assert_eq!(
        Grouping::default().lines(1000, 45).last(),
        Some(&Group {
            start: 992,
            end: 1000
        })
    );
    assert_eq!(ranks_label(&[0, 2, 4]), "3 ranks 0…4");
    assert_eq!(ranks_label(&[5, 6]), "ranks 5–6");
}

#[test]
fn an_index_built_by_parts_of_the_ranks_is_the_whole_index() {
    let dir = TempDir::new("partitioned");
    let trace = waiting_ranks(&dir.0, 12);
    let whole = TimelineIndex::build(&trace).unwrap();
    let ranks = trace.ranks();
    let parts: Vec<TimelineIndex> = ranks
        .chunks(5)
        .rev()
        .map(|part| TimelineIndex::build_ranks(&trace, part, &|_, _| {}).unwrap())
        .collect();
    assert_eq!(parts[0].rank_rows().len(), 2);
    let merged = TimelineIndex::merge(&trace, parts);
    assert_eq!(merged.rows(), whole.rows());
    assert_eq!(merged.rank_rows(), whole.rank_rows());
    assert_eq!(
        (merged.span(), merged.segments()),
        (whole.span(), whole.segments())
    );
    for row in 0..whole.rows().len() {
        assert_eq!(merged.query(row, 0, 1000, 7), whole.query(row, 0, 1000, 7));
    }
}

/// Ranks with clock offsets, split barriers, nested MPI calls and a long
/// serial gap: rank r shifted by `offsets[r]`.
fn overview_trace(dir: &std::path::Path) -> Trace {
    let offsets = [0i64, 1_234, -777, 50_000];
    let rows: Vec<_> = offsets
        .iter()
        .enumerate()
        .map(|(r, &off)| {
            let r = r as u32;
            let mut omp_rows = two_thread_region();
            omp_rows.extend(spanning_barrier(1, 0, 100, 450));
            omp_rows.extend(spanning_barrier(1, 1, 400 - 37 * i64::from(r), 450));
            for i in 0..40i64 {
                let at = 1_000 + i * 997 + i64::from(r) * 13;
                omp_rows.push(omp(0, OmpKind::Chunk, 3, at, at + 600));
                omp_rows.push(omp(1, OmpKind::MutexWait, 1, at + 100, at + 150 + i));
            }
            // A lone event long after the rest: bins must widen.
            omp_rows.push(omp(2, OmpKind::Masked, 0, 3_000_000, 3_000_000 + 5_000));
            let mpi_rows = vec![
                mpi(
                    0,
                    mpi_call::MPI_Allreduce,
                    20_000,
                    30_000 + 100 * i64::from(r),
                    -1,
                    8,
                ),
                mpi(0, mpi_call::MPI_Send, 25_000, 26_000, 1, 8),
                mpi(1, mpi_call::MPI_Wait, 31_000, 45_000, -1, 0),
            ];
            (r, off, omp_rows, mpi_rows)
        })
        .collect();
    write_trace(dir, &rows, WriterOptions::default())
}

#[test]
fn overview_bins_hold_what_the_index_gives() {
    let dir = TempDir::new("overview");
    let trace = overview_trace(&dir.0);
    let index = TimelineIndex::build(&trace).unwrap();
    let ov = Overview::build(&trace, &|_, _| {}).unwrap();
    assert_eq!(RankCells::rows(&ov), index.rows());
    assert_eq!(ov.rank_rows(), index.rank_rows());
    assert_eq!(RankCells::span(&ov), index.span());
    assert!(ov.bins() > 1 && ov.bins() <= bins_limit(4));
    let (first, _) = ov.bin_bounds(0);
    let (_, last) = ov.bin_bounds(ov.bins() - 1);
    assert!(first <= index.span().0 && index.span().1 <= last);
    let mut nonzero = 0;
    for pos in 0..index.rank_rows().len() {
        for i in 0..ov.bins() {
            let (a, b) = ov.bin_bounds(i);
            let want = index.rank_query(pos, a, b, 1)[0].time;
            assert_eq!(ov.bin(pos, i), want, "rank position {pos}, bin {i}");
            nonzero += usize::from(want.iter().any(|&t| t > 0));
        }
        // Cells on bin bounds read the bins; both agree over the whole grid.
        let n = ov.bins();
        assert!(
            ov.rank_query(pos, first, last, n) == index.rank_query(pos, first, last, n),
            "rank position {pos}: the overview's cells on its bins"
        );
    }
    assert!(nonzero > 8, "the bins hold the trace's time");
    // The split barrier reaches the bins: rank 0 waits 300 + (400 - 100) ns.
    let wait: u64 = (0..ov.bins())
        .map(|i| ov.bin(0, i)[State::BarrierWait as usize])
        .sum();
    let (a, b) = index.span();
    assert_eq!(
        wait,
        index.rank_query(0, a, b, 1)[0].time[State::BarrierWait as usize]
    );
    assert!(wait > 0);
    // The same lines aggregated from either.
    let g = Group { start: 0, end: 4 };
    let from_index = index.aggregate(g, first, last, ov.bins());
    let from_overview = ov.aggregate(g, first, last, ov.bins());
    assert!(from_overview == from_index, "the same aggregated line");
    assert_eq!(from_overview.worst_rank, from_index.worst_rank);
    // A cell inside a bin gets the bin in proportion.
    let (a, b) = ov.bin_bounds(1);
    let half = ov.rank_query(0, a, a + (b - a) / 2, 1)[0].clone();
    for s in 0..STATES {
        assert_eq!(half.time[s], ov.bin(0, 1)[s] / 2);
    }
}

/// Sums of segments in aligned bins merge and coarsen exactly: brute force
/// over random segments, negative times included.
#[test]
fn overview_bins_coarsen_and_merge_exactly() {
    use super::overview::Bins;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: i64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as i64
    };
    for round in 0..50 {
        let limit = 2 + (round % 7);
        let mut parts = Vec::new();
        let mut all: Vec<(i64, i64, State)> = Vec::new();
        for _ in 0..3 {
            let mut b = Bins::new(limit);
            let mut t = next(100_000) - 50_000;
            for _ in 0..next(30) {
                let e = t + 1 + next(5_000);
                let s = State::ALL[next(STATES as i64) as usize];
                b.add(t, e, s);
                all.push((t, e, s));
                t = e + next(3_000);
            }
            parts.push(b);
        }
        let mut merged = Bins::new(limit);
        for p in parts {
            merged.merge(p);
        }
        assert!(merged.len() <= limit);
        for (i, got) in merged.sums().iter().enumerate() {
            let (a, b) = merged.bounds(i);
            let mut want = [0u64; STATES];
            for &(s, e, st) in &all {
                want[st as usize] += (e.min(b) - s.max(a)).max(0) as u64;
            }
            assert_eq!(*got, want, "round {round} bin {i}");
        }
        let total: u64 = merged.sums().iter().flatten().sum();
        assert_eq!(total, all.iter().map(|x| (x.1 - x.0) as u64).sum::<u64>());
    }
}

#[test]
fn overview_cache_reads_back_and_names_a_damaged_file() {
    use super::progressive::open_progressive_at;
    let dir = TempDir::new("overview-cache");
    let trace = overview_trace(&dir.0);
    let files = (
        dir.0.join("cache").join("t.idx"),
        dir.0.join("cache").join("t.overview"),
    );
    let file = files.1.clone();
    let whole = Overview::build(&trace, &|_, _| {}).unwrap();
    let open = || {
        let mut updates: Vec<OverviewUpdate> = Vec::new();
        let (_, cached) = open_progressive_at(
            &trace,
            Some(files.clone()),
            &|_, _| {},
            std::time::Duration::ZERO,
            &mut |u| updates.push(u),
        )
        .unwrap();
        (updates, cached)
    };
    let (first, cached) = open();
    assert!(!cached && first.iter().all(|u| !u.cached && u.warning.is_none()));
    assert!(first.last().unwrap().overview == whole);
    let (again, cached) = open();
    assert!(cached && again.len() == 1 && again[0].cached && again[0].warning.is_none());
    assert!(again[0].overview == whole);
    let bytes = std::fs::read(&file).unwrap();
    // A byte changed in the sums, a truncated file, garbage: each named, and
    // rebuilt with the index although the index's cache is good.
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 10] ^= 0x41;
    for damaged in [
        flipped,
        bytes[..n - 3].to_vec(),
        b"HYTLOVW1garbage".to_vec(),
    ] {
        std::fs::write(&file, &damaged).unwrap();
        let (o, cached) = open();
        assert!(!cached);
        let w = o[0].warning.as_deref().expect("a warning");
        assert!(
            w.starts_with("hyscope: ") && w.contains(&file.display().to_string()),
            "{w}"
        );
        assert!(o.iter().all(|u| !u.cached));
        assert!(o.last().unwrap().overview == whole);
        // Rebuilt and saved again: read back on the next open.
        let (o, cached) = open();
        assert!(cached && o.len() == 1 && o[0].cached && o[0].warning.is_none());
    }
    // Another version of the file: left without a warning; the index comes
    // from its cache.
    let mut old = bytes.clone();
    old[7] = b'0';
    std::fs::write(&file, &old).unwrap();
    let (o, cached) = open();
    assert!(cached && o.is_empty());
}

/// The same rows, spans and segments, and every row's packed segments.
fn assert_same_index(a: &TimelineIndex, b: &TimelineIndex) {
    assert_eq!(a.rows(), b.rows());
    assert_eq!(a.rank_rows(), b.rank_rows());
    assert_eq!((a.span(), a.segments()), (b.span(), b.segments()));
    for (x, y) in a.data.iter().zip(&b.data) {
        assert_eq!((&x.packed, x.end, &x.bases), (&y.packed, y.end, &y.bases));
        let cum = |d: &RowData| {
            d.blocks
                .iter()
                .map(|b| (b.first, b.cum))
                .collect::<Vec<_>>()
        };
        assert_eq!(cum(x), cum(y));
    }
}

/// The one-pass build hands over, rank by rank, exactly the overview of the
/// ranks read so far, then the whole trace's; its index is the plain build's.
#[test]
fn the_overview_published_during_the_index_build_is_exact() {
    let dir = TempDir::new("progressive");
    let trace = overview_trace(&dir.0);
    let ranks = trace.ranks();
    let mut updates = Vec::new();
    let index = build_with_overview(&trace, &|_, _| {}, std::time::Duration::ZERO, &mut |u| {
        updates.push(u)
    })
    .unwrap();
    assert_same_index(&index, &TimelineIndex::build(&trace).unwrap());
    assert_eq!(updates.len(), ranks.len(), "one overview per rank read");
    for (k, u) in updates.iter().enumerate() {
        assert_eq!((u.ranks_loaded, u.ranks), (k + 1, ranks.len()));
        assert_eq!(u.complete(), k + 1 == ranks.len());
        assert!(!u.cached && u.warning.is_none());
        let want = Overview::build_ranks(&trace, &ranks[..=k], bins_limit(ranks.len()), &|_, _| {})
            .unwrap();
        assert_eq!(u.overview.rank_rows().len(), k + 1);
        assert!(
            u.overview == want,
            "the overview of the first {} ranks",
            k + 1
        );
    }
    let whole = Overview::build(&trace, &|_, _| {}).unwrap();
    assert!(updates.last().unwrap().overview == whole);
    // A long interval between updates: only the first rank's and the whole.
    let mut updates = Vec::new();
    build_with_overview(
        &trace,
        &|_, _| {},
        std::time::Duration::from_secs(3600),
        &mut |u| updates.push(u.ranks_loaded),
    )
    .unwrap();
    assert_eq!(updates, vec![1, ranks.len()]);
}

/// Opening with caches: the first open builds both in one pass and writes
/// both caches; the second reads the overview, then the index, from them;
/// a damaged overview cache is named and rebuilt.
#[test]
fn progressive_open_writes_then_reads_both_caches() {
    use super::progressive::open_progressive_at;
    let dir = TempDir::new("progressive-cache");
    let trace = overview_trace(&dir.0);
    let files = (
        dir.0.join("c").join("t.idx"),
        dir.0.join("c").join("t.overview"),
    );
    let whole = Overview::build(&trace, &|_, _| {}).unwrap();
    let built = TimelineIndex::build(&trace).unwrap();
    let open = |updates: &mut Vec<OverviewUpdate>| {
        open_progressive_at(
            &trace,
            Some(files.clone()),
            &|_, _| {},
            std::time::Duration::ZERO,
            &mut |u| updates.push(u),
        )
        .unwrap()
    };
    let mut first = Vec::new();
    let (index, cached) = open(&mut first);
    assert!(!cached && first.len() == 4 && !first[3].cached);
    assert_same_index(&index, &built);
    assert!(files.0.exists() && files.1.exists());
    let mut second = Vec::new();
    let (index, cached) = open(&mut second);
    assert!(cached, "the index from its cache");
    assert_same_index(&index, &built);
    assert_eq!(second.len(), 1);
    assert!(second[0].cached && second[0].complete() && second[0].overview == whole);
    // A damaged overview cache: named once, the overview rebuilt with the index.
    std::fs::write(&files.1, b"HYTLOVW1 garbage").unwrap();
    std::fs::remove_file(&files.0).unwrap();
    let mut third = Vec::new();
    let (index, cached) = open(&mut third);
    assert!(!cached);
    assert_same_index(&index, &built);
    let warning = third[0].warning.as_deref().unwrap_or_default();
    assert!(
        warning.contains("t.overview") && warning.contains("unreadable"),
        "{warning}"
    );
    assert!(third[1..].iter().all(|u| u.warning.is_none()));
    assert!(third.last().unwrap().overview == whole);
    // Rewritten: read back whole.
    let mut fourth = Vec::new();
    open(&mut fourth);
    assert!(fourth.len() == 1 && fourth[0].cached && fourth[0].overview == whole);
}

/// Rank 2's OpenMP part truncated: the viewers' progressive open leaves it
/// out as the index build does ([`crate::damaged_parts`]), the last
/// overview complete (the rank left out counts as read) and naming it, the
/// other ranks' lines exactly the undamaged trace's; neither cache is
/// written, so every open reads the parts again and says it again.
#[test]
fn a_rank_left_out_is_in_the_progressive_open_and_never_cached() {
    use super::progressive::open_progressive_at;
    let dir = TempDir::new("progressive-left-out");
    let trace = overview_trace(&dir.0);
    let whole = TimelineIndex::build(&trace).unwrap();
    let part = trace
        .parts(hyscope_format::Table::Omp)
        .iter()
        .find(|p| p.rank == 2)
        .unwrap()
        .path
        .clone();
    hyscope_testkit::truncate_to_half(&part);
    let trace = Trace::open(&dir.0).unwrap();
    let files = (
        dir.0.join("c").join("t.idx"),
        dir.0.join("c").join("t.overview"),
    );
    for _ in 0..2 {
        let mut updates = Vec::new();
        let (index, cached) = open_progressive_at(
            &trace,
            Some(files.clone()),
            &|_, _| {},
            std::time::Duration::ZERO,
            &mut |u| updates.push(u),
        )
        .unwrap();
        assert!(!cached);
        assert!(
            !files.0.exists() && !files.1.exists(),
            "a cache was written"
        );
        let left: Vec<(u32, &str)> = index
            .left_out()
            .iter()
            .map(|p| (p.rank, p.file.as_str()))
            .collect();
        assert_eq!(left, [(2, "omp/rank=2/part-0.parquet")]);
        assert!(index.left_out()[0].problem.contains("corrupt or truncated"));
        let last = updates.last().unwrap();
        assert!(last.complete(), "{} of {}", last.ranks_loaded, last.ranks);
        assert_eq!(last.overview.left_out(), index.left_out());
        let ranks: Vec<u32> = index.rank_rows().iter().map(|r| r.rank).collect();
        assert_eq!(ranks, [0, 1, 3]);
        let (t0, t1) = whole.span();
        for (i, row) in index.rows().iter().enumerate() {
            let j = whole.row_of(row.rank, row.thread).unwrap();
            assert_eq!(index.query(i, t0, t1, 300), whole.query(j, t0, t1, 300));
        }
    }
}

//! OpenMP metrics on synthetic traces with analytic answers.

mod common;

use common::*;
use hyscope_analyzer::Observable;
use hyscope_format::{OmpKind, OmpRecord};

const REGION: u64 = 0x1000;
const LOOP: u64 = 0x2000;

/// One region of 2 threads: master's implicit task starts 3 µs after the fork.
fn region_with_late_task() -> Builder {
    let mut b = Builder::new(1, 2, 1);
    b.symbol(REGION, "stencil.c", 10);
    b.parallel(0, 1, REGION, 2, 0, 100 * US);
    b.implicit_task(0, 1, 0, 3 * US, 100 * US);
    b.implicit_task(0, 1, 1, 5 * US, 100 * US);
    // Join barrier: master 10 µs total of which 7 µs waiting; worker 4 µs, 1 µs waiting.
    b.barrier(0, 1, 0, 9, (90 * US, 100 * US), Some((91 * US, 98 * US)));
    b.barrier(0, 1, 1, 9, (96 * US, 100 * US), Some((97 * US, 98 * US)));
    b
}

#[test]
fn fork_join_overhead_is_region_minus_implicit_task() {
    let (_d, a) = region_with_late_task().analyze();
    let regions = a.regions.get().expect("regions observed");
    assert_eq!(regions.len(), 1);
    let r = &regions[0];
    assert_eq!(r.location.label, "stencil.c:10");
    assert_eq!(r.instances, 1);
    assert_eq!(r.team_size, 2);
    assert!(close(r.fork_join_s, 3e-6, 1e-9), "{}", r.fork_join_s);
    assert!(close(r.fork_join_fraction, 0.03, 1e-9));
    // Activation of the worker: 5 µs.
    let w = r.per_thread.iter().find(|t| t.thread == 1).unwrap();
    assert!(close(w.activation_s, 5e-6, 1e-9));
}

#[test]
fn barrier_sync_overhead_is_total_minus_wait() {
    let (_d, a) = region_with_late_task().analyze();
    let r = &a.regions.get().unwrap()[0];
    assert!(
        close(r.barrier.total_s, 14e-6, 1e-9),
        "{}",
        r.barrier.total_s
    );
    assert!(close(r.barrier.wait_s, 8e-6, 1e-9));
    assert!(close(r.barrier.sync_overhead_s, 6e-6, 1e-9));
    let m = r.per_thread.iter().find(|t| t.thread == 0).unwrap();
    assert!(close(m.barrier.sync_overhead_s, 3e-6, 1e-9));
    // Busy = implicit task − barrier: master 97 − 10 = 87 µs, worker 95 − 4 = 91 µs.
    assert!(close(m.busy_s, 87e-6, 1e-9));
    let w = r.per_thread.iter().find(|t| t.thread == 1).unwrap();
    assert!(close(w.busy_s, 91e-6, 1e-9));
    assert!(close(r.imbalance, 91.0 / 89.0, 1e-9));
}

#[test]
fn late_worker_join_barrier_is_clipped_at_parallel_end() {
    // libomp dispatches the worker's join-barrier end when it wakes for the next
    // region: here 1 ms after the master's parallel_end.
    let mut b = Builder::new(1, 2, 1);
    b.parallel(0, 1, REGION, 2, 0, 100 * US);
    b.implicit_task(0, 1, 0, 0, 100 * US);
    b.implicit_task(0, 1, 1, 0, 1_100 * US);
    b.barrier(0, 1, 0, 9, (95 * US, 100 * US), Some((95 * US, 99 * US)));
    b.barrier(
        0,
        1,
        1,
        9,
        (90 * US, 1_100 * US),
        Some((90 * US, 1_100 * US)),
    );
    let (_d, a) = b.analyze();
    assert_eq!(a.run.clipped_join_waits, 1);
    assert!(close(a.run.clipped_join_wait_s, 1e-3, 1e-9));
    let r = &a.regions.get().unwrap()[0];
    // Worker: 10 µs of barrier, all of it waiting; master 5 µs, 4 waiting.
    assert!(
        close(r.barrier.total_s, 15e-6, 1e-9),
        "{}",
        r.barrier.total_s
    );
    assert!(close(r.barrier.wait_s, 14e-6, 1e-9));
    let w = r.per_thread.iter().find(|t| t.thread == 1).unwrap();
    assert!(close(w.implicit_task_s, 100e-6, 1e-9));
}

#[test]
fn serialized_regions_are_counted() {
    let mut b = Builder::new(1, 1, 1);
    for pid in 1..=3u64 {
        let s = pid as i64 * 100 * US;
        b.parallel(0, pid, REGION, 1, s, s + 50 * US);
        b.implicit_task(0, pid, 0, s + US, s + 50 * US);
    }
    let (_d, a) = b.analyze();
    assert_eq!(a.run.serialized_regions, 3);
    let r = &a.regions.get().unwrap()[0];
    assert_eq!(r.serialized_instances, 3);
    assert!(close(r.fork_join_s, 3e-6, 1e-9));
    // No barrier in serialized regions; no wait observed.
    assert_eq!(r.barrier.count, 0);
}

#[test]
fn no_openmp_events_is_not_observable_not_zero() {
    let mut b = Builder::new(1, 1, 1);
    b.manifest.openmp = None;
    b.call(
        0,
        hyscope_format::schema::mpi_call::MPI_Barrier,
        0,
        10,
        -1,
        0,
        1,
    );
    let (_d, a) = b.analyze();
    assert!(
        a.regions.reason().unwrap().contains("OMPT"),
        "{:?}",
        a.regions
    );
    assert!(a.loops.get().is_none());
}

/// A triangular-cost loop: iteration i costs (i + 1) × 10 ns, 4 threads, 4000 iterations.
fn triangular_loop(schedule_variant: u8, with_chunks: bool) -> (Builder, f64) {
    let n: u64 = 4000;
    let p: u64 = 4;
    let cost = |i: u64| (i as i64 + 1) * 10;
    let mut b = Builder::new(1, p as u32, 1);
    b.symbol(LOOP, "stencil.c", 42);
    b.symbol(REGION, "stencil.c", 40);
    let mut region_end = 0i64;
    let mut work_rows = Vec::new();
    for t in 0..p {
        let (s, len) = (t * n / p, n / p);
        let dur: i64 = (s..s + len).map(cost).sum();
        let start = 1_000;
        let end = start + dur;
        region_end = region_end.max(end);
        work_rows.push((t, start, end, s, len));
    }
    region_end += 1_000;
    b.parallel(0, 1, REGION, p as u32, 0, region_end);
    for &(t, start, end, s, len) in &work_rows {
        b.implicit_task(0, 1, t as u32, 0, region_end);
        b.omp(
            0,
            OmpRecord {
                thread: t as u32,
                kind: OmpKind::Work as u8,
                variant: schedule_variant,
                start_ns: start,
                end_ns: end,
                parallel_id: 1,
                codeptr: LOOP,
                count: n,
                team_size: p as u32,
                ..OmpRecord::default()
            },
        );
        if with_chunks {
            b.omp(
                0,
                OmpRecord {
                    thread: t as u32,
                    kind: OmpKind::Chunk as u8,
                    variant: 3,
                    start_ns: start,
                    end_ns: end,
                    parallel_id: 1,
                    codeptr: LOOP,
                    chunk_start: s,
                    count: len,
                    ..OmpRecord::default()
                },
            );
        }
        b.barrier(
            0,
            1,
            t as u32,
            8,
            (end, region_end),
            Some((end, region_end)),
        );
    }
    let total: f64 = (0..n).map(cost).sum::<i64>() as f64;
    (b, total)
}

#[test]
fn triangular_static_loop_gets_dynamic_with_the_known_optimum() {
    let (b, total_ns) = triangular_loop(10, true);
    let (_d, a) = b.analyze();
    let l = &a.loops.get().unwrap()[0];
    assert_eq!(l.location.label, "stencil.c:42");
    assert_eq!(l.schedule, Observable::Observed("static".to_string()));
    assert_eq!(l.trip_count, 4000);
    assert_eq!(l.chunks, Observable::Observed(4));
    // Static: the last thread holds 7/16 of the work → max/mean = 1.75.
    assert!(close(l.imbalance, 1.75, 0.01), "{}", l.imbalance);
    let prof = l.cost_profile.get().unwrap();
    assert!(
        prof.shape.starts_with("triangular (cost grows"),
        "{}",
        prof.shape
    );
    let rec = l.recommendation.get().unwrap();
    // The optimum of a perfectly divisible triangular loop on 4 threads is total/4:
    // a speedup of 1.75 over static.
    assert!(
        close(rec.predicted_s, total_ns / 4.0 * 1e-9, 0.02),
        "{rec:?}"
    );
    assert!(close(rec.predicted_speedup, 1.75, 0.02), "{rec:?}");
    assert!(!rec.clause.starts_with("keep"), "{}", rec.clause);
    assert!(
        rec.evidence.starts_with("stencil.c:42: schedule("),
        "{}",
        rec.evidence
    );
    assert!(rec.evidence.contains("triangular"), "{}", rec.evidence);
    assert!(
        rec.evidence.contains("43 % imbalance under static"),
        "{}",
        rec.evidence
    );
    // The simulated static schedule reproduces the measured time.
    let sims = l.simulations.get().unwrap();
    let st = sims.iter().find(|s| s.schedule == "static").unwrap();
    assert!(close(st.speedup, 1.0, 0.01), "{st:?}");
}

#[test]
fn static_ranges_reconstruct_cost_without_chunk_events() {
    let (b, total_ns) = triangular_loop(10, false);
    let (_d, a) = b.analyze();
    let l = &a.loops.get().unwrap()[0];
    assert!(l.chunks.get().is_none());
    assert_eq!(
        l.cost_profile.get().unwrap().source,
        "per-thread static ranges"
    );
    let rec = l.recommendation.get().unwrap();
    assert!(
        close(rec.predicted_s, total_ns / 4.0 * 1e-9, 0.03),
        "{rec:?}"
    );
}

#[test]
fn balanced_static_loop_keeps_static() {
    // Uniform cost: 4 equal blocks.
    let mut b = Builder::new(1, 4, 1);
    b.parallel(0, 1, REGION, 4, 0, 20 * US);
    for t in 0..4u32 {
        b.implicit_task(0, 1, t, 0, 20 * US);
        b.omp(
            0,
            OmpRecord {
                thread: t,
                kind: OmpKind::Work as u8,
                variant: 10,
                start_ns: US,
                end_ns: 11 * US,
                parallel_id: 1,
                codeptr: LOOP,
                count: 1000,
                ..OmpRecord::default()
            },
        );
    }
    let (_d, a) = b.analyze();
    let rec = a.loops.get().unwrap()[0]
        .recommendation
        .get()
        .unwrap()
        .clone();
    assert_eq!(rec.clause, "keep schedule(static)");
    assert!(rec.rule.contains("002 §6.6.2"));
}

#[test]
fn dynamic_chunk_one_with_dispatch_cost_gets_a_larger_chunk() {
    // 4000 iterations of 20 ns each, dynamic,1, 200 ns between chunks on each thread:
    // most of the loop is scheduling.
    let mut b = Builder::new(1, 2, 1);
    let n = 4000u64;
    let mut cursor = [1_000i64, 1_000];
    let mut rows = Vec::new();
    for i in 0..n {
        let t = (i % 2) as usize;
        let start = cursor[t] + 200;
        rows.push(OmpRecord {
            thread: t as u32,
            kind: OmpKind::Chunk as u8,
            variant: 3,
            start_ns: start,
            end_ns: start + 20,
            parallel_id: 1,
            codeptr: LOOP,
            chunk_start: i,
            count: 1,
            ..OmpRecord::default()
        });
        cursor[t] = start + 20;
    }
    let end = cursor[0].max(cursor[1]) + 100;
    b.parallel(0, 1, REGION, 2, 0, end + 1_000);
    for t in 0..2u32 {
        b.implicit_task(0, 1, t, 0, end + 1_000);
        b.omp(
            0,
            OmpRecord {
                thread: t,
                kind: OmpKind::Work as u8,
                variant: 11,
                start_ns: 1_000,
                end_ns: end,
                parallel_id: 1,
                codeptr: LOOP,
                count: n,
                ..OmpRecord::default()
            },
        );
    }
    for r in rows {
        b.omp(0, r);
    }
    let (_d, a) = b.analyze();
    let l = &a.loops.get().unwrap()[0];
    assert!(close(*l.dispatch_cost_s.get().unwrap(), 200e-9, 1e-9));
    assert_eq!(l.chunks, Observable::Observed(4000));
    let sched = l.scheduling_overhead_s.get().unwrap();
    // 3998 gaps of 200 ns.
    assert!(close(*sched, 3998.0 * 200e-9, 1e-9), "{sched}");
    let rec = l.recommendation.get().unwrap();
    assert!(rec.predicted_speedup > 3.0, "{rec:?}");
    assert!(rec.rule.contains("larger chunk"), "{}", rec.rule);
    assert_ne!(rec.omp_schedule, "dynamic,1");
}

#[test]
fn one_source_location_at_different_addresses_is_one_region() {
    // Two ranks load the program at different addresses (ASLR).
    let mut b = Builder::new(2, 1, 1);
    b.symbol(0x1000, "stencil.c", 10);
    b.symbol(0x7000, "stencil.c", 10);
    b.parallel(0, 1, 0x1000, 1, 0, 10 * US);
    b.implicit_task(0, 1, 0, US, 10 * US);
    b.parallel(1, 1, 0x7000, 1, 0, 10 * US);
    b.implicit_task(1, 1, 0, 2 * US, 10 * US);
    let (_d, a) = b.analyze();
    let regions = a.regions.get().unwrap();
    assert_eq!(regions.len(), 1);
    assert_eq!(regions[0].instances, 2);
    assert_eq!(regions[0].ranks, vec![0, 1]);
    assert!(close(regions[0].fork_join_s, 3e-6, 1e-9));
    assert_eq!(regions[0].per_thread.len(), 2);
}

#[test]
fn chunk_starts_are_relative_to_the_loop_lower_bound() {
    // for (i = 1000; i < 5000; i++): the runtime reports loop-variable values.
    let (mut b, total_ns) = triangular_loop(10, true);
    for r in b.omp[0]
        .iter_mut()
        .filter(|r| r.kind == OmpKind::Chunk as u8)
    {
        r.chunk_start += 1000;
    }
    let (_d, a) = b.analyze();
    let rec = a.loops.get().unwrap()[0]
        .recommendation
        .get()
        .unwrap()
        .clone();
    assert!(
        close(rec.predicted_s, total_ns / 4.0 * 1e-9, 0.02),
        "{rec:?}"
    );
}

#[test]
fn profile_mode_summaries() {
    let mut b = Builder::new(1, 2, 1);
    b.manifest.mode = "profile".into();
    let sum =
        |thread: u32, kind: OmpKind, flags: u32, codeptr: u64, count: u64, total: i64| OmpRecord {
            thread,
            kind: OmpKind::Summary as u8,
            variant: kind as u8,
            start_ns: 0,
            end_ns: 10 * MS,
            codeptr,
            count,
            chunk_start: total as u64,
            flags,
            ..OmpRecord::default()
        };
    for r in [
        sum(0, OmpKind::Parallel, 0, REGION, 10, 1_000 * US),
        sum(0, OmpKind::ImplicitTask, 0, 0, 10, 970 * US),
        sum(1, OmpKind::ImplicitTask, 0, 0, 10, 960 * US),
        sum(0, OmpKind::Sync, 9, LOOP, 10, 100 * US),
        sum(0, OmpKind::SyncWait, 9, LOOP, 10, 80 * US),
        sum(0, OmpKind::Work, 10, LOOP, 10, 800 * US),
        sum(1, OmpKind::Work, 10, LOOP, 10, 700 * US),
    ] {
        b.omp(0, r);
    }
    let (_d, a) = b.analyze();
    let r = &a.regions.get().unwrap()[0];
    assert_eq!(r.instances, 10);
    assert!(close(r.time_s, 1e-3, 1e-9));
    let o = a.openmp.get().unwrap();
    assert!(close(o.fine_grain[0].fork_join_s, 30e-6, 1e-9));
    assert!(close(o.barrier.total_s, 100e-6, 1e-9));
    assert!(close(o.barrier.wait_s, 80e-6, 1e-9));
    assert!(a.warnings.iter().any(|w| w.contains("profile mode")));
    let l = &a.loops.get().unwrap()[0];
    assert_eq!(l.instances, 10);
    assert!(close(l.imbalance, 800.0 / 750.0, 1e-9));
    assert!(l.recommendation.reason().unwrap().contains("profile mode"));
}

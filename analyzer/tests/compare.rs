//! `compare`: two synthetic runs whose difference is known, compared row by
//! row (values, signs, units), with what only one run has and why two runs
//! may not compare as they stand.

use crate::common;

use common::*;
use hyscope_analyzer::model::{CompareUnit, Comparison, NoiseVerdict};
use hyscope_format::{OmpKind, OmpRecord, SampleRecord, mpi_call as c};
use hyscope_testkit::late_sender::late_sender;

/// `hyscope_testkit::late_sender::late_sender`, run as `./k <late_ms>`.
fn run(late_ms: i64, bytes: u64, allreduce: bool) -> Builder {
    late_sender(&format!("./k {late_ms}"), late_ms, bytes, allreduce)
}

fn cmp(a: &Builder, b: &Builder) -> Comparison {
    let (_da, a) = a.analyze();
    let (_db, b) = b.analyze();
    hyscope_analyzer::compare(&a, &b)
}

fn row<'a>(
    c: &'a Comparison,
    section: &str,
    item: &str,
    metric: &str,
) -> &'a hyscope_analyzer::model::CompareRow {
    c.rows
        .iter()
        .find(|r| r.section == section && r.item == item && r.metric == metric)
        .unwrap_or_else(|| panic!("no {section} {item} {metric} in {:#?}", c.rows))
}

#[test]
fn known_differences_with_their_signs_and_units() {
    let c = cmp(&run(100, 1 << 20, true), &run(300, 4 << 20, true));
    let late = row(&c, "wait", "late sender", "time_s");
    assert!(
        close(late.a, 0.1, 1e-9) && close(late.delta, 0.2, 1e-9),
        "{late:?}"
    );
    assert_eq!(late.unit, CompareUnit::Seconds);
    let recv = row(&c, "mpi", "MPI_Recv", "total_s");
    // Rank 1 in MPI_Recv from 0 to the send's end: 101 ms, then 301 ms.
    assert!(
        close(recv.a, 0.101, 1e-9) && close(recv.delta, 0.2, 1e-9),
        "{recv:?}"
    );
    assert!(close(recv.ratio.unwrap(), 301.0 / 101.0, 1e-9), "{recv:?}");
    let bytes = row(&c, "messages", "point-to-point", "bytes");
    assert_eq!(
        (bytes.a, bytes.delta, bytes.unit),
        ((1 << 20) as f64, (3 << 20) as f64, CompareUnit::Bytes)
    );
    let sent = row(&c, "mpi", "MPI_Send", "bytes_sent");
    assert_eq!((sent.b, sent.unit), ((4 << 20) as f64, CompareUnit::Bytes));
    assert_eq!(
        row(&c, "mpi", "MPI_Allreduce", "count").unit,
        CompareUnit::Count
    );
    assert_eq!(
        row(&c, "pop", "MPI parallel efficiency", "efficiency").unit,
        CompareUnit::Fraction
    );
    // B's sender is later: B's late sender is the slower, so B − A > 0.
    assert!(late.delta > 0.0 && late.b > late.a);
    assert!(c.caveats.is_empty(), "{:?}", c.caveats);
    assert_eq!(
        (c.side_a.command.join(" "), c.side_b.command.join(" ")),
        ("./k 100".into(), "./k 300".into())
    );
}

#[test]
fn a_run_against_itself_differs_in_nothing() {
    let (_d, a) = run(100, 1 << 20, true).analyze();
    let c = hyscope_analyzer::compare(&a, &a);
    assert!(c.caveats.is_empty() && c.only_in_a.is_empty() && c.only_in_b.is_empty());
    assert!(c.rows.iter().all(|r| r.delta == 0.0), "{:?}", c.rows);
}

#[test]
fn what_one_run_has_alone_is_listed_not_dropped() {
    let c = cmp(&run(100, 1 << 20, true), &run(100, 1 << 20, false));
    assert!(
        c.only_in_a
            .iter()
            .any(|i| i.section == "mpi" && i.item == "MPI_Allreduce"),
        "{:?}",
        c.only_in_a
    );
    assert!(c.only_in_b.is_empty(), "{:?}", c.only_in_b);
    assert!(!c.rows.iter().any(|r| r.item == "MPI_Allreduce"));
}

#[test]
fn other_programs_ranks_and_partial_traces_are_caveats() {
    let a = run(100, 1 << 20, true);
    let mut b = Builder::new(3, 2, 2);
    b.manifest.command = vec!["/tmp/p3".into()];
    b.manifest.ranks[2].dropped_events = 5;
    b.call(0, c::MPI_Send, 0, MS, 1, 100, 1);
    b.call(1, c::MPI_Recv, 0, MS, 0, 100, 2);
    let c = cmp(&a, &b);
    let has = |s: &str| c.caveats.iter().any(|w| w.starts_with(s));
    assert!(
        has("different programs: A ran `./k 100`, B ran `/tmp/p3`"),
        "{:?}",
        c.caveats
    );
    assert!(
        has("different rank counts: A has 2 ranks, B 3"),
        "{:?}",
        c.caveats
    );
    assert!(
        has("different host counts: A ran on 1 host(s), B on 2"),
        "{:?}",
        c.caveats
    );
    assert!(has("B is a partial trace ("), "{:?}", c.caveats);
    assert!(!has("A is a partial trace"), "{:?}", c.caveats);
    assert!(c.side_b.integrity.is_partial() && !c.side_a.integrity.is_partial());
}

/// Energy measured in one run only is a caveat, not a silent omission; in
/// both, a row in joules.
#[test]
fn energy_measured_in_one_run_only_is_said_so() {
    let energy = |mut b: Builder| {
        for (t, j) in [(0, 0.0), (50 * MS, 5.0), (104 * MS, 20.0)] {
            b.samples[0].push(SampleRecord {
                time_ns: t,
                metric: "energy.pkg".into(),
                key: 0,
                value: j,
            });
        }
        b
    };
    let c = cmp(&energy(run(100, 1 << 20, true)), &run(100, 1 << 20, true));
    assert!(
        c.caveats
            .iter()
            .any(|w| w.starts_with("energy: observed in A only (B: ")),
        "{:?}",
        c.caveats
    );
    let c = cmp(
        &energy(run(100, 1 << 20, true)),
        &energy(run(100, 1 << 20, true)),
    );
    let j = row(&c, "energy", "job", "joules");
    assert_eq!((j.a, j.delta, j.unit), (20.0, 0.0, CompareUnit::Joules));
}

/// `ranks` ranks each doing the same work: 4 `MPI_Allreduce`s of 10 ms.
fn same_work_per_rank(ranks: u32) -> Builder {
    let mut b = Builder::new(ranks, 1, 1);
    b.manifest.command = vec!["./k".into()];
    for r in 0..ranks {
        for i in 0..4 {
            b.collective(r, c::MPI_Allreduce, 20 * i * MS, (20 * i + 10) * MS, -1, 3);
        }
    }
    b
}

/// 2 ranks against 4, each rank doing the same: what sums over ranks
/// compares per rank (no difference), the run's duration as it is, and
/// the caveat and the comparison say so.
#[test]
fn different_rank_counts_compare_sums_per_rank() {
    let c = cmp(&same_work_per_rank(2), &same_work_per_rank(4));
    assert!(c.per_rank);
    let time = row(&c, "mpi", "MPI_Allreduce", "total_s");
    assert!(time.per_rank, "{time:?}");
    // 2 × 40 ms / 2 ranks and 4 × 40 ms / 4 ranks.
    assert!(
        (time.a - 0.040).abs() < 1e-9 && (time.b - 0.040).abs() < 1e-9,
        "{time:?}"
    );
    assert_eq!(time.delta, 0.0, "{time:?}");
    let count = row(&c, "mpi", "MPI_Allreduce", "count");
    assert_eq!((count.a, count.b), (4.0, 4.0), "{count:?}");
    let duration = row(&c, "run", "job", "duration_s");
    assert!(!duration.per_rank);
    assert_eq!(duration.a, duration.b);
    assert!(
        c.caveats.iter().any(
            |w| w.starts_with("different rank counts: A has 2 ranks, B 4")
                && w.contains("compared per rank")
        ),
        "{:?}",
        c.caveats
    );
    // The same ranks: totals.
    let c = cmp(&same_work_per_rank(4), &same_work_per_rank(4));
    assert!(!c.per_rank && c.rows.iter().all(|r| !r.per_rank));
    assert!((row(&c, "mpi", "MPI_Allreduce", "total_s").a - 0.160).abs() < 1e-9);
}

/// `MPI_Allreduce`s of `ms` ms on each of 2 ranks.
fn calls_of(ms: &[i64]) -> Builder {
    let mut b = Builder::new(2, 1, 1);
    b.manifest.command = vec!["./k".into()];
    for r in 0..2 {
        for (i, d) in ms.iter().enumerate() {
            let t = 30 * i as i64 * MS;
            b.collective(r, c::MPI_Allreduce, t, t + d * MS, -1, 3);
        }
    }
    b
}

/// A difference is weighed against the scatter of each run's calls:
/// 10, 12, 14, 16 ms against 1 ms more each (8 ms in all, under one
/// standard error: within noise), and against 20, 21, 22, 23 ms (68 ms
/// more, 9 errors: beyond). Counts are exact; one duration per run is too
/// few values.
#[test]
fn a_difference_is_weighed_against_the_calls_scatter() {
    let a = calls_of(&[10, 12, 14, 16]);
    let c = cmp(&a, &calls_of(&[11, 13, 15, 17]));
    let n = &row(&c, "mpi", "MPI_Allreduce", "total_s").noise;
    assert_eq!(
        (n.values_a, n.values_b, n.values.as_str()),
        (8, 8, "calls"),
        "{n:?}"
    );
    // 8 calls of sd 2.390 ms (n − 1) in each run: √(8 + 8) × 2.390 ms.
    assert!(
        (n.standard_error.unwrap() - 4.0 * 0.0023905).abs() < 1e-6,
        "{n:?}"
    );
    assert_eq!(n.verdict, NoiseVerdict::WithinNoise, "{n:?}");
    assert_eq!(c.noise.beyond_noise, 0, "{:?}", c.noise);

    let c = cmp(&a, &calls_of(&[20, 21, 22, 23]));
    let n = &row(&c, "mpi", "MPI_Allreduce", "total_s").noise;
    assert_eq!(n.verdict, NoiseVerdict::BeyondNoise, "{n:?}");
    assert!(n.t.unwrap() > 8.0, "{n:?}");
    assert_eq!(c.noise.beyond_noise, 1, "{:?}", c.noise);
    let count = row(&c, "mpi", "MPI_Allreduce", "count");
    assert_eq!(count.noise.verdict, NoiseVerdict::Exact);
    let duration = row(&c, "run", "job", "duration_s");
    assert_eq!(duration.noise.verdict, NoiseVerdict::TooFewValues);
}

const REGION: u64 = 0x4010;
const LOOP: u64 = 0x4020;

/// 2 ranks of 2 threads, each running one instance of the parallel region
/// at k.c:33 per value of `ms` (its duration, in ms), in that order, 1 ms
/// apart: its implicit tasks start 100 µs after it and end 50 µs before
/// its end (150 µs of fork/join each), and the static loop at k.c:35
/// inside takes them whole on both threads.
fn regions_of(ms: &[i64]) -> Builder {
    let mut b = Builder::new(2, 2, 1);
    b.manifest.command = vec!["./k".into()];
    b.symbol(REGION, "k.c", 33);
    b.symbol(LOOP, "k.c", 35);
    for r in 0..2 {
        let mut t = 0;
        for (i, d) in ms.iter().enumerate() {
            let pid = i as u64 + 1;
            let (s, e) = (t, t + d * MS);
            b.parallel(r, pid, REGION, 2, s, e);
            for thread in 0..2 {
                b.implicit_task(r, pid, thread, s + 100 * US, e - 50 * US);
                b.omp(
                    r,
                    OmpRecord {
                        thread,
                        kind: OmpKind::Work as u8,
                        variant: 10,
                        start_ns: s + 100 * US,
                        end_ns: e - 50 * US,
                        parallel_id: pid,
                        codeptr: LOOP,
                        count: 2,
                        team_size: 2,
                        ..OmpRecord::default()
                    },
                );
            }
            t = e + MS;
        }
    }
    b
}

/// `pattern` `times` times over.
fn repeated(pattern: &[i64], times: usize) -> Vec<i64> {
    pattern.repeat(times)
}

/// A region's and its loop's times are weighed against the scatter of
/// their instances, as an MPI call's against its calls': 40 instances of
/// 10, 12, 14, 16 ms (sd √(200/39) ms) against each 3 ms longer (120 ms
/// in all, 5.9 standard errors: beyond), and against 11, 12, 14, 16 ms
/// (10 ms more, of an error of √(40·200/39 + 40·147.5/39) ms: within).
#[test]
fn a_regions_difference_is_weighed_against_its_instances_scatter() {
    let a = regions_of(&repeated(&[10, 12, 14, 16], 5));
    let c = cmp(&a, &regions_of(&repeated(&[13, 15, 17, 19], 5)));
    let n = &row(&c, "region", "k.c:33", "time_s").noise;
    assert_eq!(n.verdict, NoiseVerdict::BeyondNoise, "{n:?}");
    assert_eq!(
        (n.values_a, n.values_b, n.values.as_str()),
        (40, 40, "instances")
    );
    let se = (2.0 * 40.0 * 200.0 / 39.0f64).sqrt() * 1e-3;
    assert!(
        close(n.standard_error.unwrap(), se, 1e-9),
        "{n:?} against {se}"
    );
    assert!(close(
        row(&c, "region", "k.c:33", "time_s").delta,
        0.120,
        1e-9
    ));
    // The loop inside: its instances 150 µs shorter, the same scatter.
    let l = row(&c, "loop", "k.c:35", "time_s");
    assert_eq!(l.noise.verdict, NoiseVerdict::BeyondNoise, "{l:?}");
    assert!(close(l.noise.standard_error.unwrap(), se, 1e-9), "{l:?}");
    // Fork/join: 150 µs every instance in both runs, no difference.
    let fj = row(&c, "region", "k.c:33", "fork_join_s");
    assert!(
        close(fj.a, 40.0 * 150e-6, 1e-9) && fj.delta.abs() < 1e-12,
        "{fj:?}"
    );
    assert_eq!(fj.noise.verdict, NoiseVerdict::WithinNoise, "{fj:?}");
    // The counts are exact; the imbalance is one ratio per run.
    let count = row(&c, "region", "k.c:33", "instances");
    assert_eq!((count.a, count.b), (40.0, 40.0));
    assert_eq!(count.noise.verdict, NoiseVerdict::Exact);
    assert_eq!(
        row(&c, "loop", "k.c:35", "imbalance").noise.verdict,
        NoiseVerdict::TooFewValues
    );
    // The same counts: no row per instance.
    assert!(!c.rows.iter().any(|r| r.metric == "time_per_instance_s"));

    let c = cmp(&a, &regions_of(&repeated(&[11, 12, 14, 16], 5)));
    let r = row(&c, "region", "k.c:33", "time_s");
    assert!(close(r.delta, 0.010, 1e-9), "{r:?}");
    assert_eq!(r.noise.verdict, NoiseVerdict::WithinNoise, "{r:?}");
    let se = (40.0 * (200.0 + 147.5) / 39.0f64).sqrt() * 1e-3;
    assert!(
        close(r.noise.standard_error.unwrap(), se, 1e-9),
        "{r:?} against {se}"
    );
    assert_eq!(
        row(&c, "loop", "k.c:35", "time_s").noise.verdict,
        NoiseVerdict::WithinNoise
    );
    // Every row has a verdict: none left without an estimate.
    assert_eq!(c.noise.not_estimated, 0, "{:#?}", c.rows);
}

/// Twice the instances of the same region: twice the time (beyond noise),
/// +40 instances (exact), and the same time per instance (13 ms in both,
/// within noise), in a row right after the count. Each 5 ms slower with
/// the same count: no row per instance.
#[test]
fn twice_the_calls_is_told_from_slower_calls() {
    let a = regions_of(&repeated(&[10, 12, 14, 16], 5));
    let c = cmp(&a, &regions_of(&repeated(&[10, 12, 14, 16], 10)));
    let time = row(&c, "region", "k.c:33", "time_s");
    assert!(close(time.ratio.unwrap(), 2.0, 1e-9), "{time:?}");
    assert_eq!(time.noise.verdict, NoiseVerdict::BeyondNoise, "{time:?}");
    let count = row(&c, "region", "k.c:33", "instances");
    assert_eq!((count.a, count.b, count.delta), (40.0, 80.0, 40.0));
    assert_eq!(count.noise.verdict, NoiseVerdict::Exact);
    let per = row(&c, "region", "k.c:33", "time_per_instance_s");
    assert!(
        close(per.a, 0.013, 1e-9) && close(per.b, 0.013, 1e-9),
        "{per:?}"
    );
    assert!(per.delta.abs() < 1e-12, "{per:?}");
    assert_eq!(per.noise.verdict, NoiseVerdict::WithinNoise, "{per:?}");
    assert_eq!((per.noise.values_a, per.noise.values_b), (40, 80));
    // Welch on the two means: √(s_A²/40 + s_B²/80).
    let se = (200.0 / 39.0 / 40.0 + 400.0 / 79.0 / 80.0f64).sqrt() * 1e-3;
    assert!(
        close(per.noise.standard_error.unwrap(), se, 1e-9),
        "{per:?} against {se}"
    );
    assert_eq!(per.unit, CompareUnit::Seconds);
    let at = |metric: &str| {
        c.rows
            .iter()
            .position(|r| r.section == "region" && r.metric == metric)
            .unwrap()
    };
    assert_eq!(at("time_per_instance_s"), at("instances") + 1);
    let loop_per = row(&c, "loop", "k.c:35", "time_per_instance_s");
    assert!(close(loop_per.a, 0.013 - 150e-6, 1e-9), "{loop_per:?}");
    assert_eq!(loop_per.noise.verdict, NoiseVerdict::WithinNoise);

    // Same calls, slower: the time per call is the time's change.
    let slower = cmp(&a, &regions_of(&repeated(&[15, 17, 19, 21], 5)));
    assert_eq!(
        row(&slower, "region", "k.c:33", "time_s").noise.verdict,
        NoiseVerdict::BeyondNoise
    );
    assert!(
        !slower
            .rows
            .iter()
            .any(|r| r.metric == "time_per_instance_s")
    );
}

/// An MPI call made twice as often, each call as long: its time per call
/// is within noise where its time is beyond; per call even when the runs'
/// rank counts differ (a time per call is one whatever the ranks).
#[test]
fn an_mpi_call_made_twice_as_often_is_as_long_per_call() {
    let c = cmp(
        &calls_of(&[10, 11, 12, 13]),
        &calls_of(&[10, 11, 12, 13, 10, 11, 12, 13]),
    );
    let time = row(&c, "mpi", "MPI_Allreduce", "total_s");
    assert_eq!(time.noise.verdict, NoiseVerdict::BeyondNoise, "{time:?}");
    let per = row(&c, "mpi", "MPI_Allreduce", "time_per_call_s");
    assert!(
        close(per.a, 0.0115, 1e-9) && close(per.b, 0.0115, 1e-9),
        "{per:?}"
    );
    assert_eq!(per.noise.verdict, NoiseVerdict::WithinNoise, "{per:?}");
    assert_eq!(per.noise.values, "calls");
    assert!(!per.per_rank);

    let c = cmp(&same_work_per_rank(2), &same_work_per_rank(4));
    // 4 calls a rank in both: no count change per rank, no row per call.
    assert!(
        !c.rows.iter().any(|r| r.metric == "time_per_call_s"),
        "{:#?}",
        c.rows
    );
}

/// A profile-mode run: its regions' and loops' rows are weighed against
/// the scatter their `summary` rows carry (format 1.10), each instance 5
/// ms slower being beyond noise; a profile-mode trace of an older format
/// (no sums of squares) says `—` and why, and so does a profile-mode
/// fork/join (a difference of totals).
#[test]
fn profile_mode_rows_are_weighed_and_older_ones_say_why_not() {
    // 20 instances of `ms` (as their sum and sum of squares) on rank 0.
    let profile = |ms: &[i64], version: &str, with_squares: bool| {
        let mut b = Builder::new(1, 2, 1);
        b.manifest.command = vec!["./k".into()];
        b.manifest.mode = "profile".into();
        b.manifest.format_version = version.into();
        b.symbol(REGION, "k.c", 33);
        b.symbol(LOOP, "k.c", 35);
        let n = 20u64;
        let ns: Vec<i64> = repeated(ms, 20 / ms.len()).iter().map(|d| d * MS).collect();
        let sum = ns.iter().sum::<i64>() as u64;
        let sq: u128 = ns.iter().map(|&d| (d as u128) * (d as u128)).sum();
        let row = |thread: u32, kind: OmpKind, flags: u32, codeptr: u64, total: u64, sq: u128| {
            let mut r = OmpRecord {
                thread,
                kind: OmpKind::Summary as u8,
                variant: kind as u8,
                start_ns: 0,
                end_ns: 1_000 * MS,
                codeptr,
                count: n,
                chunk_start: total,
                flags,
                team_size: 2,
                ..OmpRecord::default()
            };
            if with_squares {
                r.set_summary_sum_sq(sq);
            }
            r
        };
        b.omp(0, row(0, OmpKind::Parallel, 0, REGION, sum, sq));
        b.omp(
            0,
            row(
                0,
                OmpKind::ImplicitTask,
                0,
                REGION,
                sum - n * 150 * US as u64,
                0,
            ),
        );
        for thread in 0..2 {
            b.omp(0, row(thread, OmpKind::Work, 10, LOOP, sum, sq));
        }
        b
    };
    let a = profile(&[10, 12, 14, 16], "1.10", true);
    let c = cmp(&a, &profile(&[15, 17, 19, 21], "1.10", true));
    for (section, item) in [("region", "k.c:33"), ("loop", "k.c:35")] {
        let r = row(&c, section, item, "time_s");
        assert!(close(r.delta, 0.100, 1e-9), "{r:?}");
        assert_eq!(r.noise.verdict, NoiseVerdict::BeyondNoise, "{r:?}");
        assert_eq!((r.noise.values_a, r.noise.values_b), (20, 20), "{r:?}");
        // 20 values of sd √(100/19) ms in each run.
        let se = (2.0 * 20.0 * 100.0 / 19.0f64).sqrt() * 1e-3;
        assert!(
            close(r.noise.standard_error.unwrap(), se, 1e-9),
            "{r:?} against {se}"
        );
    }
    let fj = row(&c, "region", "k.c:33", "fork_join_s");
    assert_eq!(fj.noise.verdict, NoiseVerdict::NotEstimated, "{fj:?}");
    assert!(
        fj.noise.why.as_deref().unwrap().starts_with("profile mode"),
        "{fj:?}"
    );

    // Written before 1.10: no squares, and said so.
    let old = |ms: &[i64]| profile(ms, "1.9", false);
    let c = cmp(&old(&[10, 12, 14, 16]), &old(&[15, 17, 19, 21]));
    for (section, item) in [("region", "k.c:33"), ("loop", "k.c:35")] {
        let r = row(&c, section, item, "time_s");
        assert!(close(r.delta, 0.100, 1e-9), "{r:?}");
        assert_eq!(r.noise.verdict, NoiseVerdict::NotEstimated, "{r:?}");
        let why = r.noise.why.as_deref().unwrap();
        assert!(
            why.starts_with("recorded in profile mode before format 1.10 (this trace: 1.9)"),
            "{why}"
        );
    }
    // A 1.10 row whose squares cannot be its intervals' (damaged): no estimate.
    let mut damaged = profile(&[10, 12, 14, 16], "1.10", true);
    damaged.omp[0][0].set_summary_sum_sq(1);
    let c = cmp(&damaged, &a);
    let r = row(&c, "region", "k.c:33", "time_s");
    assert_eq!(r.noise.verdict, NoiseVerdict::NotEstimated, "{r:?}");
    assert!(
        r.noise
            .why
            .as_deref()
            .unwrap()
            .contains("do not fit their totals"),
        "{r:?}"
    );
}

/// A wait state is named as MPI's, never "wait wait at N×N".
#[test]
fn wait_states_are_labelled_once() {
    let late_root = |late_ms: i64| {
        let mut b = Builder::new(2, 1, 1);
        b.manifest.command = vec!["./k".into()];
        b.collective(0, c::MPI_Allreduce, late_ms * MS, (late_ms + 1) * MS, -1, 3);
        b.collective(1, c::MPI_Allreduce, 0, (late_ms + 1) * MS, -1, 3);
        b
    };
    let c = cmp(&late_root(10), &late_root(30));
    let r = row(&c, "wait", "wait at N×N", "time_s");
    assert!(close(r.delta, 0.020, 1e-9), "{r:?}");
    assert_eq!(r.label(), "MPI wait at N×N");
}

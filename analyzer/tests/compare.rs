//! `compare`: two synthetic runs whose difference is known, compared row by
//! row (values, signs, units), with what only one run has and why two runs
//! may not compare as they stand.

use crate::common;

use common::*;
use hyscope_analyzer::model::{CompareUnit, Comparison, NoiseVerdict};
use hyscope_format::{SampleRecord, mpi_call as c};
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
/// more, 9 errors: beyond). Counts are not weighed; one duration per run
/// is too few values.
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
    assert_eq!(count.noise.verdict, NoiseVerdict::NotEstimated);
    let duration = row(&c, "run", "job", "duration_s");
    assert_eq!(duration.noise.verdict, NoiseVerdict::TooFewValues);
}

//! Property tests: random rows of every table, written with random part and
//! row-group sizes, read back equal; random time windows return exactly the
//! overlapping rows.

use crate::common;

use hyscope_format::{
    MpiRecord, OmpRecord, PartWriter, Record, SampleRecord, ScanOptions, SymbolRecord, Trace,
};
use proptest::prelude::*;

fn omp_record() -> impl Strategy<Value = OmpRecord> {
    (
        (
            any::<u32>(),
            any::<u8>(),
            any::<u8>(),
            any::<i64>(),
            any::<i64>(),
            any::<u64>(),
            any::<u64>(),
        ),
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
        ),
    )
        .prop_map(
            |(
                (thread, kind, variant, start_ns, end_ns, parallel_id, task_id),
                (codeptr, team_size, requested_team_size, count, chunk_start, flags),
            )| OmpRecord {
                thread,
                kind,
                variant,
                start_ns,
                end_ns,
                parallel_id,
                task_id,
                codeptr,
                team_size,
                requested_team_size,
                count,
                chunk_start,
                flags,
            },
        )
        .prop_map(|mut r| {
            // A `summary` row's `task_id`, `requested_team_size` and
            // `parallel_id` hold its sum of squares (`summary_sum_sq`),
            // which is what it keeps.
            if r.kind == hyscope_format::OmpKind::Summary as u8 {
                let sum_sq = r.summary_sum_sq();
                r.parallel_id = 0;
                r.set_summary_sum_sq(sum_sq);
            }
            r
        })
}

fn mpi_record() -> impl Strategy<Value = MpiRecord> {
    (
        (
            any::<u32>(),
            any::<u16>(),
            any::<i64>(),
            any::<i64>(),
            any::<i32>(),
            any::<i32>(),
            any::<u64>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<i32>(),
            any::<u64>(),
            any::<bool>(),
            any::<u64>(),
        ),
        (any::<i32>(), any::<i32>(), any::<u32>()),
    )
        .prop_map(
            |(
                (thread, call, start_ns, end_ns, peer, tag, bytes_sent),
                (bytes_recv, comm_id, root, request_id, in_parallel, callsite),
                (recv_peer, recv_tag, calls),
            )| MpiRecord {
                thread,
                call,
                start_ns,
                end_ns,
                peer,
                tag,
                bytes_sent,
                bytes_recv,
                comm_id,
                root,
                request_id,
                in_parallel,
                callsite,
                recv_peer,
                recv_tag,
                calls,
            },
        )
}

fn sample_record() -> impl Strategy<Value = SampleRecord> {
    // Any f64 but NaN (NaN != NaN would make equality fail for the wrong reason).
    let value = any::<f64>().prop_filter("not NaN", |v| !v.is_nan());
    (any::<i64>(), "\\PC{0,20}", any::<i64>(), value).prop_map(|(time_ns, metric, key, value)| {
        SampleRecord {
            time_ns,
            metric,
            key,
            value,
        }
    })
}

fn symbol_record() -> impl Strategy<Value = SymbolRecord> {
    (
        any::<u64>(),
        "\\PC{0,30}",
        proptest::option::of("\\PC{0,30}"),
        proptest::option::of("[a-z/._]{0,20}"),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u64>()),
        proptest::option::of("[0-9a-f]{0,40}"),
    )
        .prop_map(
            |(address, module, function, file, line, module_offset, module_build_id)| {
                SymbolRecord {
                    address,
                    module,
                    function,
                    file,
                    line,
                    module_offset,
                    module_build_id,
                }
            },
        )
}

/// Write `ranks` of rows with the given sizes and read everything back.
fn round_trip<R: Record + Clone + PartialEq + std::fmt::Debug>(
    ranks: &[Vec<R>],
    rows_per_part: usize,
    rows_per_row_group: usize,
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    for (rank, rows) in ranks.iter().enumerate() {
        let mut w = PartWriter::create(
            dir.path(),
            R::TABLE,
            rank as u32,
            common::small(rows_per_part, rows_per_row_group),
        )
        .unwrap();
        // Several writes of uneven size.
        for piece in rows.chunks(rows_per_row_group / 2 + 3) {
            w.write_records(piece).unwrap();
        }
        let stats = w.finish().unwrap();
        prop_assert_eq!(stats.rows, rows.len() as u64);
        prop_assert_eq!(stats.parts as usize, rows.len().div_ceil(rows_per_part));
    }
    common::write_manifest(dir.path(), 0..ranks.len() as u32);
    let trace = Trace::open(dir.path()).unwrap();
    let back: Vec<(u32, R)> = trace.read_records(&ScanOptions::default()).unwrap();
    let want: Vec<(u32, R)> = ranks
        .iter()
        .enumerate()
        .flat_map(|(r, v)| v.iter().map(move |x| (r as u32, x.clone())))
        .collect();
    prop_assert_eq!(back, want);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn omp_rows_round_trip(
        ranks in proptest::collection::vec(proptest::collection::vec(omp_record(), 0..120), 1..4),
        rows_per_part in 1usize..50,
        rows_per_row_group in 1usize..20,
    ) {
        round_trip(&ranks, rows_per_part, rows_per_row_group)?;
    }

    #[test]
    fn mpi_rows_round_trip(
        ranks in proptest::collection::vec(proptest::collection::vec(mpi_record(), 0..120), 1..4),
        rows_per_part in 1usize..50,
        rows_per_row_group in 1usize..20,
    ) {
        round_trip(&ranks, rows_per_part, rows_per_row_group)?;
    }

    #[test]
    fn sample_rows_round_trip(
        ranks in proptest::collection::vec(proptest::collection::vec(sample_record(), 0..80), 1..3),
        rows_per_part in 1usize..50,
        rows_per_row_group in 1usize..20,
    ) {
        round_trip(&ranks, rows_per_part, rows_per_row_group)?;
    }

    #[test]
    fn symbol_rows_round_trip(
        ranks in proptest::collection::vec(proptest::collection::vec(symbol_record(), 0..80), 1..3),
        rows_per_part in 1usize..50,
        rows_per_row_group in 1usize..20,
    ) {
        round_trip(&ranks, rows_per_part, rows_per_row_group)?;
    }

    /// Random intervals, random window: the filter returns exactly the rows overlapping it,
    /// whatever row groups were pruned.
    #[test]
    fn time_window_returns_exactly_the_overlapping_rows(
        intervals in proptest::collection::vec((0i64..100_000, 0i64..5_000), 1..300),
        window in (0i64..110_000, 0i64..20_000),
        rows_per_row_group in 1usize..40,
    ) {
        let mut rows: Vec<OmpRecord> = intervals
            .iter()
            .enumerate()
            .map(|(i, &(s, d))| OmpRecord { thread: (i % 3) as u32, start_ns: s, end_ns: s + d, count: i as u64, ..OmpRecord::default() })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(dir.path(), hyscope_format::Table::Omp, 0, common::small(100, rows_per_row_group)).unwrap();
        w.write_omp(&rows).unwrap();
        w.finish().unwrap();
        common::write_manifest(dir.path(), [0].into_iter());
        let (from, to) = (window.0, window.0 + window.1);
        // The file's order: write_omp's sort, rows of equal keys in the order they came.
        rows.sort_by_key(|r| (r.thread, r.kind, r.start_ns, std::cmp::Reverse(r.end_ns)));
        let trace = Trace::open(dir.path()).unwrap();
        let got: Vec<u64> = trace
            .read_records::<OmpRecord>(&ScanOptions { time_range: Some((from, to)), ..ScanOptions::default() })
            .unwrap()
            .into_iter()
            .map(|(_, r)| r.count)
            .collect();
        let want: Vec<u64> = rows.iter().filter(|r| r.start_ns <= to && r.end_ns >= from).map(|r| r.count).collect();
        prop_assert_eq!(got, want);
    }

    /// `write_omp` sorts by (thread, kind, start, longest first) and keeps every row,
    /// on the fast path (small start span, many ties) and the fallback (huge span).
    #[test]
    fn write_omp_sorts_and_keeps_every_row(
        rows in proptest::collection::vec(
            (0u32..3, 1u8..4, 0i64..50, 0i64..5, any::<u64>()),
            0..200,
        ),
        huge_span in any::<bool>(),
    ) {
        let rows: Vec<OmpRecord> = rows
            .into_iter()
            .enumerate()
            .map(|(i, (thread, kind, start, len, id))| {
                let start_ns = if huge_span && i % 7 == 0 { i64::MAX - 10 - start } else { start - 25 };
                OmpRecord { thread, kind, start_ns, end_ns: start_ns.saturating_add(len), task_id: id, ..OmpRecord::default() }
            })
            .collect();
        let mut before: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(dir.path(), hyscope_format::Table::Omp, 0, common::small(1000, 1000)).unwrap();
        w.write_omp(&rows).unwrap();
        w.finish().unwrap();
        common::write_manifest(dir.path(), [0].into_iter());
        let back: Vec<OmpRecord> = Trace::open(dir.path())
            .unwrap()
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        prop_assert!(back.is_sorted_by_key(|r| (r.thread, r.kind, r.start_ns, std::cmp::Reverse(r.end_ns))));
        let mut after: Vec<String> = back.iter().map(|r| format!("{r:?}")).collect();
        before.sort();
        after.sort();
        prop_assert_eq!(before, after);
    }

    /// `write_mpi` sorts by (thread, start) and keeps rows of equal keys in
    /// the order they came in, whatever the span of their starts.
    #[test]
    fn write_mpi_sorts_by_thread_and_start_keeping_ties_in_order(
        rows in proptest::collection::vec((0u32..3, 0i64..20, any::<u16>()), 0..200),
        extremes in any::<bool>(),
    ) {
        let mut rows: Vec<MpiRecord> = rows
            .into_iter()
            .enumerate()
            .map(|(i, (thread, start, call))| {
                let start_ns = match (extremes, i % 5) {
                    (true, 0) => i64::MIN + start,
                    (true, 1) => i64::MAX - start,
                    _ => start - 10,
                };
                MpiRecord { thread, start_ns, end_ns: start_ns, call, request_id: i as u64, ..MpiRecord::default() }
            })
            .collect();
        let mut want = rows.clone();
        want.sort_by_key(|r| (r.thread, r.start_ns));
        let dir = tempfile::tempdir().unwrap();
        let mut w = PartWriter::create(dir.path(), hyscope_format::Table::Mpi, 0, common::small(1000, 1000)).unwrap();
        w.write_mpi(&mut rows).unwrap();
        w.finish().unwrap();
        let ids = |v: &[MpiRecord]| v.iter().map(|r| r.request_id).collect::<Vec<u64>>();
        prop_assert_eq!(ids(&rows), ids(&want));
    }
}

//! Format 1.11: a profile-mode `summary` row's Σ of squared durations is a
//! column of its own, `duration_sq_sum_ns2` (decimal(38, 0), null on every
//! other row), and the row's `task_id`, `requested_team_size` and
//! `parallel_id` are 0 in the file, where 1.10 kept the sum in the first two
//! (`version_1_0::a_1_10_trace_reads_its_sums_of_squares`).

use std::fs::File;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::DataType;
use hyscope_format::{
    OmpKind, OmpRecord, PartWriter, SUMMARY_SUM_SQ_COLUMN, SUMMARY_SUM_SQ_MAX, ScanOptions, Table,
    Trace,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::common;

/// One second, ns.
const S: u128 = 1_000_000_000;

/// A parallel region of trace mode (ids and team sizes of its own), and
/// summary rows of sums of squares 2 ms² + 4 ms² + 6 ms² (fits 64 bits),
/// two instances of 100 h (2 × 1.296e29 ns²: beyond the 96 bits format
/// 1.10 had) and one lost (saturated).
fn rows() -> (OmpRecord, Vec<(OmpRecord, u128)>) {
    let region = OmpRecord {
        kind: OmpKind::Parallel as u8,
        start_ns: 10,
        end_ns: 500,
        parallel_id: 9,
        task_id: 7,
        codeptr: 0x40_1000,
        team_size: 4,
        requested_team_size: 8,
        ..OmpRecord::default()
    };
    let summary = |codeptr: u64, count: u64, total: u128, sum_sq: u128| {
        let mut r = OmpRecord {
            kind: OmpKind::Summary as u8,
            variant: OmpKind::Parallel as u8,
            start_ns: 0,
            end_ns: 1_000,
            codeptr,
            count,
            chunk_start: total as u64,
            team_size: 2,
            ..OmpRecord::default()
        };
        r.set_summary_sum_sq(sum_sq);
        (r, sum_sq)
    };
    let ms = S / 1_000;
    let hours_100 = 360_000 * S;
    (
        region,
        vec![
            summary(0x40_2000, 3, 12 * ms, 56 * ms * ms),
            summary(0x40_3000, 2, 2 * hours_100, 2 * hours_100 * hours_100),
            summary(0x40_4000, 2, 2 * ms, SUMMARY_SUM_SQ_MAX),
        ],
    )
}

fn write_trace(dir: &std::path::Path) {
    let (region, summaries) = rows();
    let mut all = vec![region];
    all.extend(summaries.iter().map(|(r, _)| *r));
    let mut w = PartWriter::create(dir, Table::Omp, 0, common::small(100, 100)).unwrap();
    w.write_omp(&all).unwrap();
    w.finish().unwrap();
    common::write_manifest(dir, [0].into_iter());
}

/// The part as any Parquet reader sees it.
fn raw_batch(dir: &std::path::Path) -> RecordBatch {
    let file = File::open(dir.join("omp/rank=0/part-0.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

#[test]
fn summary_sums_of_squares_have_a_column_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path());
    let (region, summaries) = rows();

    // In the file: the exact sums in their column, null on the region's
    // row; the fields that hold them in memory are 0 on summary rows.
    let b = raw_batch(dir.path());
    let sums = b.column_by_name(SUMMARY_SUM_SQ_COLUMN).unwrap();
    assert_eq!(sums.data_type(), &DataType::Decimal128(38, 0));
    let sums = sums.as_primitive::<Decimal128Type>();
    let kind = b
        .column_by_name("kind")
        .unwrap()
        .as_primitive::<arrow_array::types::UInt8Type>();
    let codeptr = b
        .column_by_name("codeptr")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let task = b
        .column_by_name("task_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let parallel = b
        .column_by_name("parallel_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let requested = b
        .column_by_name("requested_team_size")
        .unwrap()
        .as_primitive::<UInt32Type>();
    assert_eq!(b.num_rows(), 4);
    for i in 0..b.num_rows() {
        if kind.value(i) == OmpKind::Parallel as u8 {
            assert!(sums.is_null(i));
            assert_eq!(
                (task.value(i), parallel.value(i), requested.value(i)),
                (
                    region.task_id,
                    region.parallel_id,
                    region.requested_team_size
                )
            );
            continue;
        }
        let (_, want) = summaries
            .iter()
            .find(|(r, _)| r.codeptr == codeptr.value(i))
            .unwrap();
        assert_eq!(sums.value(i) as u128, *want, "row {i}");
        assert_eq!(
            (task.value(i), parallel.value(i), requested.value(i)),
            (0, 0, 0),
            "row {i}"
        );
    }
    // 100 h twice: beyond 1.10's 96 bits, exact here.
    assert!(summaries[1].1 > 1 << 96);

    // Read back as records: the same sums, the region's fields as written.
    let back: Vec<OmpRecord> = Trace::open(dir.path())
        .unwrap()
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert!(back.contains(&region), "{back:?}");
    for (r, want) in &summaries {
        let got = back.iter().find(|b| b.codeptr == r.codeptr).unwrap();
        assert_eq!(got.summary_sum_sq(), *want);
        assert_eq!(got, r);
    }
}

/// A trace-mode part (no summary rows) has the column all null: a few bytes.
#[test]
fn a_part_without_summaries_has_the_column_null() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<OmpRecord> = (0..50_000i64)
        .map(|i| OmpRecord {
            kind: OmpKind::Chunk as u8,
            start_ns: i * 1_000,
            end_ns: i * 1_000 + 700,
            task_id: 5,
            count: 16,
            chunk_start: i as u64 * 16,
            ..OmpRecord::default()
        })
        .collect();
    let mut w =
        PartWriter::create(dir.path(), Table::Omp, 0, common::small(100_000, 131_072)).unwrap();
    w.write_omp(&rows).unwrap();
    w.finish().unwrap();
    let b = raw_batch(dir.path());
    let sums = b.column_by_name(SUMMARY_SUM_SQ_COLUMN).unwrap();
    assert_eq!(sums.null_count(), rows.len());
    let file = File::open(dir.path().join("omp/rank=0/part-0.parquet")).unwrap();
    let meta = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .metadata()
        .clone();
    let group = meta.row_group(0);
    let column = group
        .columns()
        .iter()
        .find(|c| c.column_path().string() == SUMMARY_SUM_SQ_COLUMN)
        .unwrap();
    assert!(
        column.compressed_size() < 200,
        "{} bytes for 50,000 nulls",
        column.compressed_size()
    );
}

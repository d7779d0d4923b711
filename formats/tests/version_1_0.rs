//! Traces of format 1.0 keep loading: an `mpi` part without the 1.1 columns
//! (`recv_peer`, `recv_tag`) and rank files without `communicators`, written
//! here as a 1.0 writer wrote them, read as rows with no receive side; a
//! `symbols` part without the 1.7 column (`module_offset`) reads as rows
//! whose offset is not known, one without the 1.9 column (`module_build_id`)
//! as rows whose module's build-id is not known.

use std::fs::File;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::Schema;
use hyscope_format::{
    FORMAT_VERSION, MpiRecord, NO_RANK, NO_TAG, Record, ScanOptions, SymbolRecord, Table, Trace,
    mpi_call,
};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

/// The `mpi` columns of format 1.0.
const COLUMNS_1_0: [&str; 13] = [
    "thread",
    "call",
    "start_ns",
    "end_ns",
    "peer",
    "tag",
    "bytes_sent",
    "bytes_recv",
    "comm_id",
    "root",
    "request_id",
    "in_parallel",
    "callsite",
];

fn rows() -> Vec<MpiRecord> {
    (0..40)
        .map(|i| MpiRecord {
            thread: 0,
            call: if i % 2 == 0 {
                mpi_call::MPI_Sendrecv
            } else {
                mpi_call::MPI_Send
            },
            start_ns: 1_000 * i,
            end_ns: 1_000 * i + 300,
            peer: 1,
            tag: 4,
            bytes_sent: 64,
            bytes_recv: if i % 2 == 0 { 64 } else { 0 },
            comm_id: 1,
            root: -1,
            callsite: 0x40_1000,
            ..MpiRecord::default()
        })
        .collect()
}

/// The `symbols` columns before 1.7 (1.0 to 1.6).
const SYMBOL_COLUMNS_1_0: [&str; 5] = ["address", "module", "function", "file", "line"];
/// The `symbols` columns of 1.7 and 1.8.
const SYMBOL_COLUMNS_1_7: [&str; 6] = [
    "address",
    "module",
    "function",
    "file",
    "line",
    "module_offset",
];

/// A code address with debug information and one without (a function only).
fn symbol_rows() -> Vec<SymbolRecord> {
    vec![
        SymbolRecord {
            address: 0x40_1000,
            module: "/app".into(),
            function: Some("main".into()),
            file: Some("/src/app.c".into()),
            line: Some(12),
            module_offset: Some(0x40_1000),
            module_build_id: Some("0123456789abcdef0123456789abcdef01234567".into()),
        },
        SymbolRecord {
            address: 0x40_1200,
            module: "/app".into(),
            function: Some("main".into()),
            file: None,
            line: None,
            module_offset: Some(0x40_1200),
            module_build_id: None,
        },
    ]
}

/// `full`'s `columns` only, as part 0 of rank 0 of `table` in a 1.0 trace.
fn write_1_0_part(dir: &std::path::Path, table: Table, full: &RecordBatch, columns: &[&str]) {
    write_old_part(dir, table, full, columns, "1.0");
}

/// `full`'s `columns` only, as part 0 of rank 0 of `table` written by `version`.
fn write_old_part(
    dir: &std::path::Path,
    table: Table,
    full: &RecordBatch,
    columns: &[&str],
    version: &str,
) {
    let schema = full.schema();
    let keep: Vec<usize> = columns
        .iter()
        .map(|c| schema.index_of(c).unwrap())
        .collect();
    let batch = full.project(&keep).unwrap();
    assert_eq!(batch.num_columns(), columns.len());
    let part_dir = dir.join(format!("{table}/rank=0"));
    std::fs::create_dir_all(&part_dir).unwrap();
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(vec![
            KeyValue::new("hyscope.format_version".into(), version.to_string()),
            KeyValue::new("hyscope.table".into(), table.to_string()),
            KeyValue::new("hyscope.rank".into(), "0".to_string()),
        ]))
        .build();
    let file = File::create(part_dir.join("part-0.parquet")).unwrap();
    let schema: Arc<Schema> = batch.schema();
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A trace as hyscope 1.0 wrote it: one `mpi` and one `symbols` part of
/// 1.0's columns, a manifest and a rank file of 1.0.
fn write_1_0_trace(dir: &std::path::Path) {
    write_1_0_part(dir, Table::Mpi, &MpiRecord::to_batch(&rows()), &COLUMNS_1_0);
    write_1_0_part(
        dir,
        Table::Symbols,
        &SymbolRecord::to_batch(&symbol_rows()),
        &SYMBOL_COLUMNS_1_0,
    );
    std::fs::write(
        dir.join("manifest.json"),
        r#"{"format_version": "1.0", "world_size": 1, "hosts": ["node0"],
            "ranks": [{"rank": 0, "host": "node0", "pid": 10, "threads": 1}]}"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("ranks")).unwrap();
    std::fs::write(
        dir.join("ranks/rank-0.json"),
        r#"{"rank": 0, "host": "node0", "pid": 10, "threads": 1, "finished": true}"#,
    )
    .unwrap();
}

/// Every `mpi` row of the trace.
fn mpi_records(trace: &Trace) -> Vec<MpiRecord> {
    trace
        .read_records::<MpiRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect()
}

#[test]
fn a_1_0_trace_reads_with_no_receive_side() {
    assert_eq!(FORMAT_VERSION, "1.11");
    let dir = tempfile::tempdir().unwrap();
    write_1_0_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.manifest.format_version, "1.0");
    assert!(trace.manifest.ranks[0].communicators.is_empty());
    // The `phases` table (1.2) is optional: an older trace has none.
    assert!(trace.parts(Table::Phases).is_empty());

    // Records: every 1.0 field as written, no receive side.
    let back = mpi_records(&trace);
    assert_eq!(back, rows());
    assert!(
        back.iter()
            .all(|r| (r.recv_peer, r.recv_tag) == (NO_RANK, NO_TAG))
    );
    // Nor the calls a row stands for (1.3): every 1.0 row is one call.
    assert!(back.iter().all(|r| r.calls == 1));
    // A 1.0 Sendrecv is a send; its receive side was not recorded.
    let sides = back[0].p2p_endpoints();
    assert!(sides.send.is_some() && sides.recv.is_none());

    // A scan projecting a 1.1 column, with a time range, gets it filled.
    let options = ScanOptions {
        columns: Some(vec!["peer".into(), "recv_peer".into()]),
        time_range: Some((5_000, 9_000)),
        ..ScanOptions::default()
    };
    let mut n = 0;
    for batch in trace.scan(Table::Mpi, &options) {
        let batch = batch.unwrap();
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["rank", "peer", "recv_peer"]);
        let recv_peer = batch
            .column_by_name("recv_peer")
            .unwrap()
            .as_primitive::<Int32Type>();
        assert!(recv_peer.values().iter().all(|&p| p == NO_RANK));
        n += batch.num_rows();
    }
    // Rows overlapping [5000, 9000]: those starting at 5000..=9000.
    assert_eq!(n, 5);
}

#[test]
fn a_symbols_part_before_1_7_reads_with_no_module_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_1_0_trace(dir.path());
    let trace = Trace::open(dir.path()).unwrap();
    // Records: every older field as written, the offset not known.
    let back: Vec<SymbolRecord> = trace
        .read_records::<SymbolRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let want: Vec<SymbolRecord> = symbol_rows()
        .into_iter()
        .map(|s| SymbolRecord {
            module_offset: None,
            module_build_id: None,
            ..s
        })
        .collect();
    assert_eq!(back, want);
    // A scan projecting the column gets it, null.
    let options = ScanOptions {
        columns: Some(vec!["address".into(), "module_offset".into()]),
        ..ScanOptions::default()
    };
    let mut n = 0;
    for batch in trace.scan(Table::Symbols, &options) {
        let batch = batch.unwrap();
        let offset = batch
            .column_by_name("module_offset")
            .unwrap()
            .as_primitive::<UInt64Type>();
        assert_eq!(offset.null_count(), batch.num_rows());
        n += batch.num_rows();
    }
    assert_eq!(n, 2);
    // Records decoded from a batch without the column (another reader's) too.
    let old = SymbolRecord::to_batch(&symbol_rows());
    let old = old.project(&[0, 1, 2, 3, 4]).unwrap();
    assert_eq!(SymbolRecord::from_batch(&old).unwrap(), want);
}

/// A `symbols` part of 1.7 or 1.8 (an offset, no build-id) reads with the
/// offsets as written and no build-id, also projected.
#[test]
fn a_symbols_part_before_1_9_reads_with_no_build_id() {
    let dir = tempfile::tempdir().unwrap();
    write_1_0_trace(dir.path());
    std::fs::remove_dir_all(dir.path().join("symbols")).unwrap();
    write_old_part(
        dir.path(),
        Table::Symbols,
        &SymbolRecord::to_batch(&symbol_rows()),
        &SYMBOL_COLUMNS_1_7,
        "1.8",
    );
    let trace = Trace::open(dir.path()).unwrap();
    let back: Vec<SymbolRecord> = trace
        .read_records::<SymbolRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let want: Vec<SymbolRecord> = symbol_rows()
        .into_iter()
        .map(|s| SymbolRecord {
            module_build_id: None,
            ..s
        })
        .collect();
    assert_eq!(back, want);
    let options = ScanOptions {
        columns: Some(vec!["module_offset".into(), "module_build_id".into()]),
        ..ScanOptions::default()
    };
    let mut n = 0;
    for batch in trace.scan(Table::Symbols, &options) {
        let batch = batch.unwrap();
        let id = batch
            .column_by_name("module_build_id")
            .unwrap()
            .as_string::<i32>();
        assert_eq!(id.null_count(), batch.num_rows());
        let offset = batch
            .column_by_name("module_offset")
            .unwrap()
            .as_primitive::<UInt64Type>();
        assert_eq!(offset.null_count(), 0);
        n += batch.num_rows();
    }
    assert_eq!(n, 2);
    let old = SymbolRecord::to_batch(&symbol_rows())
        .project(&[0, 1, 2, 3, 4, 5])
        .unwrap();
    assert_eq!(SymbolRecord::from_batch(&old).unwrap(), want);
}

#[test]
fn a_symbols_part_round_trips_the_module_offset_and_build_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut w =
        hyscope_format::PartWriter::create(dir.path(), Table::Symbols, 0, Default::default())
            .unwrap();
    w.write_records(&symbol_rows()).unwrap();
    w.finish().unwrap();
    hyscope_format::Manifest::new().write(dir.path()).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    let back: Vec<SymbolRecord> = trace
        .read_records::<SymbolRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(back, symbol_rows());
}

#[test]
fn a_1_1_part_round_trips_the_receive_side() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = rows();
    for (i, r) in rows.iter_mut().enumerate() {
        if r.call == mpi_call::MPI_Sendrecv {
            r.recv_peer = 1 + (i % 3) as i32;
            r.recv_tag = 9;
        }
    }
    let mut w =
        hyscope_format::PartWriter::create(dir.path(), Table::Mpi, 0, Default::default()).unwrap();
    w.write_records(&rows).unwrap();
    w.finish().unwrap();
    hyscope_format::Manifest::new().write(dir.path()).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    let back = mpi_records(&trace);
    assert_eq!(back, rows);
    let sides = back[0].p2p_endpoints();
    assert_eq!(
        sides.recv.map(|e| (e.peer, e.tag, e.bytes)),
        Some((1, 9, 64))
    );
    assert_eq!(
        sides.send.map(|e| (e.peer, e.tag, e.bytes)),
        Some((1, 4, 64))
    );
}

/// The `omp` columns of formats 1.0 to 1.10 (1.11 added the sum of squares').
const OMP_COLUMNS_1_10: [&str; 13] = [
    "thread",
    "kind",
    "variant",
    "start_ns",
    "end_ns",
    "parallel_id",
    "task_id",
    "codeptr",
    "team_size",
    "requested_team_size",
    "count",
    "chunk_start",
    "flags",
];

/// Format 1.10 kept a `summary` row's Σ of squared durations in `task_id`
/// (bits 0–63) and `requested_team_size` (bits 64–95), 2^96 − 1 where it
/// overflowed: such a part reads with its sums, the overflowed one lost,
/// and a parallel region's fields as they are.
#[test]
fn a_1_10_trace_reads_its_sums_of_squares() {
    use arrow_array::{ArrayRef, UInt32Array, UInt64Array};
    use hyscope_format::{OmpKind, OmpRecord, SUMMARY_SUM_SQ_COLUMN, SUMMARY_SUM_SQ_MAX};

    let region = OmpRecord {
        kind: OmpKind::Parallel as u8,
        start_ns: 5,
        end_ns: 50,
        parallel_id: 3,
        task_id: 11,
        team_size: 2,
        requested_team_size: 4,
        codeptr: 0x40_1000,
        ..OmpRecord::default()
    };
    // (code address, sum as 1.10 wrote it, sum read)
    let sums: [(u64, u128, u128); 3] = [
        (0x40_2000, 56_000_000_000_000, 56_000_000_000_000),
        (0x40_3000, (1 << 70) + 5, (1 << 70) + 5),
        (0x40_4000, (1 << 96) - 1, SUMMARY_SUM_SQ_MAX),
    ];
    let mut rows = vec![region];
    for (codeptr, written, _) in sums {
        rows.push(OmpRecord {
            kind: OmpKind::Summary as u8,
            variant: OmpKind::Parallel as u8,
            codeptr,
            count: 3,
            chunk_start: 12_000_000,
            task_id: written as u64,
            requested_team_size: (written >> 64) as u32,
            ..OmpRecord::default()
        });
    }
    // The 1.10 writer wrote every field as the record held it.
    let full = OmpRecord::to_batch(&rows);
    let mut columns: Vec<ArrayRef> = full.columns().to_vec();
    let at = |name: &str| full.schema().index_of(name).unwrap();
    columns[at("task_id")] = Arc::new(UInt64Array::from_iter_values(
        rows.iter().map(|r| r.task_id),
    ));
    columns[at("requested_team_size")] = Arc::new(UInt32Array::from_iter_values(
        rows.iter().map(|r| r.requested_team_size),
    ));
    let full = RecordBatch::try_new(full.schema(), columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_old_part(dir.path(), Table::Omp, &full, &OMP_COLUMNS_1_10, "1.10");
    std::fs::write(
        dir.path().join("manifest.json"),
        r#"{"format_version": "1.10", "mode": "profile", "world_size": 1, "hosts": ["node0"],
            "ranks": [{"rank": 0, "host": "node0", "pid": 10, "threads": 1}]}"#,
    )
    .unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    let back: Vec<OmpRecord> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(back[0], region);
    for (codeptr, _, read) in sums {
        let r = back.iter().find(|r| r.codeptr == codeptr).unwrap();
        assert_eq!(r.summary_sum_sq(), read, "{codeptr:#x}");
    }
    // A scan of the 1.11 column gets it, null: the part predates it.
    for batch in trace.scan(
        Table::Omp,
        &ScanOptions {
            columns: Some(vec![SUMMARY_SUM_SQ_COLUMN.into()]),
            ..ScanOptions::default()
        },
    ) {
        let batch = batch.unwrap();
        let column = batch.column_by_name(SUMMARY_SUM_SQ_COLUMN).unwrap();
        assert_eq!(column.null_count(), batch.num_rows());
    }
}

/// A profile-mode trace the collector of format 1.10 recorded
/// (`tests/omp/regions.c`, kept in `tests/fixtures/profile-1.10`): every
/// summary row reads a sum of squares its intervals can have, a single
/// interval's exactly its duration squared.
#[test]
fn a_recorded_1_10_profile_reads_its_sums_of_squares() {
    use hyscope_format::{OmpKind, OmpRecord};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-1.10");
    let trace = Trace::open(&dir).unwrap();
    assert_eq!(trace.manifest.format_version, "1.10");
    assert_eq!(trace.manifest.mode, "profile");
    let rows: Vec<OmpRecord> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert!(rows.len() > 10, "{rows:?}");
    for r in &rows {
        assert_eq!(r.kind, OmpKind::Summary as u8);
        let (n, total, sq) = (
            u128::from(r.count),
            u128::from(r.chunk_start),
            r.summary_sum_sq(),
        );
        if n == 1 {
            assert_eq!(sq, total * total, "{r:?}");
        } else {
            // Cauchy–Schwarz: (Σd)² / n ≤ Σd² ≤ (Σd)².
            assert!(n * sq >= total * total && sq <= total * total, "{r:?}");
        }
    }
    assert!(rows.iter().any(|r| r.count > 1 && r.chunk_start > 0));
}

//! A real outside client reads a trace: pyarrow opens each table as one
//! Hive-partitioned dataset. CI installs pyarrow (scripts/install-deps.sh);
//! without python3 or pyarrow this test fails, it does not skip.

use crate::common;

use std::process::Command;

use hyscope_format::{MpiRecord, OmpRecord, PartWriter, ScanOptions, Table, Trace, mpi_call};

const SCRIPT: &str = r#"
import json, sys
import pyarrow.dataset as ds
import pyarrow.compute as pc
from pathlib import Path

root = Path(sys.argv[1])
out = {}
omp = ds.dataset(root / 'omp', format='parquet', partitioning='hive')
t = omp.to_table()
out['omp_columns'] = t.column_names
out['omp_rows'] = t.num_rows
for rank in (0, 1):
    sel = t.filter(pc.field('rank') == rank)
    out[f'omp_rows_rank{rank}'] = sel.num_rows
    out[f'omp_count_sum_rank{rank}'] = pc.sum(sel['count']).as_py()
    out[f'omp_duration_sum_rank{rank}'] = pc.sum(pc.subtract(sel['end_ns'], sel['start_ns'])).as_py()
mpi = ds.dataset(root / 'mpi', format='parquet', partitioning='hive').to_table()
out['mpi_rows'] = mpi.num_rows
out['mpi_bytes_sent_sum'] = pc.sum(mpi['bytes_sent']).as_py()
out['mpi_in_parallel'] = pc.sum(pc.cast(mpi['in_parallel'], 'int64')).as_py()
print(json.dumps(out))
"#;

fn omp_rows(rank: u32, n: usize) -> Vec<OmpRecord> {
    (0..n)
        .map(|i| OmpRecord {
            thread: (i % 2) as u32,
            kind: 6,
            variant: 3,
            start_ns: 1_000 * i as i64,
            end_ns: 1_000 * i as i64 + 100 + rank as i64,
            count: i as u64,
            ..OmpRecord::default()
        })
        .collect()
}

#[test]
fn pyarrow_reads_each_table_as_one_partitioned_dataset() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0: 700 rows in 3 parts; rank 1: 450 rows in 2 parts.
    let (n0, n1) = (700usize, 450usize);
    common::write_omp_trace(
        dir.path(),
        &[(0, omp_rows(0, n0)), (1, omp_rows(1, n1))],
        &common::small(300, 100),
    );
    let mpi: Vec<MpiRecord> = (0..40)
        .map(|i| MpiRecord {
            call: mpi_call::MPI_Send,
            start_ns: 10 * i,
            end_ns: 10 * i + 5,
            peer: 1,
            bytes_sent: 1000 + i as u64,
            comm_id: 1,
            root: -1,
            in_parallel: i % 4 == 0,
            ..MpiRecord::default()
        })
        .collect();
    let mut w = PartWriter::create(dir.path(), Table::Mpi, 0, common::small(25, 10)).unwrap();
    w.write_records(&mpi).unwrap();
    w.finish().unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.parts(Table::Omp).len(), 5);
    assert_eq!(
        trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .len(),
        n0 + n1
    );

    let output = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}): install it with scripts/install-deps.sh")
        });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'pyarrow'"),
        "pyarrow is not installed for python3: run scripts/install-deps.sh (pip install pyarrow)\n{stderr}"
    );
    assert!(
        output.status.success(),
        "the pyarrow reader failed:\n{stderr}"
    );
    let out: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("JSON from the script");

    let sum = |n: usize| (n * (n - 1) / 2) as u64;
    assert_eq!(out["omp_rows"], (n0 + n1) as u64);
    assert_eq!(out["omp_rows_rank0"], n0 as u64);
    assert_eq!(out["omp_rows_rank1"], n1 as u64);
    assert_eq!(out["omp_count_sum_rank0"], sum(n0));
    assert_eq!(out["omp_count_sum_rank1"], sum(n1));
    assert_eq!(out["omp_duration_sum_rank0"], 100 * n0 as u64);
    assert_eq!(out["omp_duration_sum_rank1"], 101 * n1 as u64);
    // Every file column plus the partition key `rank`, which pyarrow appends last.
    let mut columns: Vec<String> = Table::Omp
        .file_schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    columns.push("rank".into());
    assert_eq!(out["omp_columns"], serde_json::json!(columns));
    assert_eq!(out["mpi_rows"], 40);
    assert_eq!(out["mpi_bytes_sent_sum"], 40 * 1000 + 40 * 39 / 2);
    assert_eq!(out["mpi_in_parallel"], 10);
}

/// pyarrow writes page CRC-32s (`write_page_checksum=True`); this reader
/// verifies them: the file reads back whole, and one flipped byte in a page is
/// an error naming the file, not a changed number.
#[test]
fn page_checksums_of_other_writers_are_verified() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = PartWriter::create(dir.path(), Table::Omp, 0, Default::default()).unwrap();
    w.write_records(&omp_rows(0, 5000)).unwrap();
    w.finish().unwrap();
    common::write_manifest(dir.path(), [0].into_iter());
    let part = dir.path().join("omp/rank=0/part-0.parquet");
    let rewrite = r#"
import sys
import pyarrow.parquet as pq
path, flip = sys.argv[1], sys.argv[2] == 'flip'
t = pq.read_table(path)
# Without hyscope's own checksums: only the pages' CRCs protect this file.
t = t.replace_schema_metadata({'hyscope.format_version': '1.0'})
pq.write_table(t, path, write_page_checksum=True, compression='zstd')
if flip:
    col = pq.ParquetFile(path).metadata.row_group(0).column(3)
    at = col.data_page_offset + col.total_compressed_size - 2
    data = bytearray(open(path, 'rb').read())
    data[at] ^= 0x01
    open(path, 'wb').write(data)
"#;
    for flip in [false, true] {
        let out = Command::new("python3")
            .args(["-c", rewrite])
            .arg(&part)
            .arg(if flip { "flip" } else { "keep" })
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = Trace::open(dir.path())
            .unwrap()
            .read_records::<OmpRecord>(&ScanOptions::default());
        if flip {
            let err = read.unwrap_err();
            assert_eq!(err.path(), part);
            assert!(
                err.to_string().contains("Page CRC checksum mismatch"),
                "{err}"
            );
        } else {
            let rows: Vec<OmpRecord> = read.unwrap().into_iter().map(|(_, r)| r).collect();
            assert_eq!(rows, omp_rows(0, 5000));
        }
    }
}

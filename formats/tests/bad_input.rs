//! Bad input gives the right `FormatError`, naming the file, and never a panic.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use hyscope_format::{
    FormatError, MpiRecord, OmpRecord, PartWriter, RankInfo, Record, ScanOptions, Table, Trace,
    part_path,
};
use parquet::arrow::ArrowWriter;

use common::*;

/// A good one-rank trace with a single omp part of 2000 rows in 4 row groups.
fn good_trace(dir: &Path) -> std::path::PathBuf {
    let mut rows = chunks(0, 1000, 0);
    rows.extend(chunks(1, 1000, 500));
    write_omp_trace(dir, &[(0, rows)], &small(100_000, 500));
    part_path(dir, Table::Omp, 0, 0)
}

fn read_all(dir: &Path) -> Result<usize, FormatError> {
    let trace = Trace::open(dir)?;
    let rows = trace.read_records::<OmpRecord>(&ScanOptions::default())?;
    let mut scanned = 0;
    for b in trace.scan(Table::Omp, &ScanOptions::default()) {
        scanned += b?.num_rows();
    }
    assert_eq!(scanned, rows.len());
    Ok(rows.len())
}

#[test]
fn missing_manifest() {
    let dir = tempfile::tempdir().unwrap();
    good_trace(dir.path());
    std::fs::remove_file(dir.path().join("manifest.json")).unwrap();
    let err = Trace::open(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::MissingManifest { .. }), "{err}");
    assert_eq!(err.path(), dir.path());
    assert!(err.to_string().contains("no manifest.json"), "{err}");
}

#[test]
fn no_such_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = Trace::open(&missing).unwrap_err();
    assert!(matches!(err, FormatError::Invalid { .. }), "{err}");
    assert_eq!(err.path(), missing);
}

#[test]
fn future_major_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    good_trace(dir.path());
    let path = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let current = format!("\"format_version\": \"{}\"", hyscope_format::FORMAT_VERSION);
    assert!(text.contains(&current), "{text}");
    std::fs::write(&path, text.replace(&current, "\"format_version\": \"2.0\"")).unwrap();
    let err = Trace::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, FormatError::Version { found, .. } if found == "2.0"),
        "{err}"
    );
    assert_eq!(err.path(), path);
    assert!(
        err.to_string().contains("2.0") && err.to_string().contains("1.x"),
        "{err}"
    );

    // A newer minor version of the same major is read.
    std::fs::write(
        &path,
        text.replace(&current, "\"format_version\": \"1.99\""),
    )
    .unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), 2000);

    // A missing or garbled version is refused too.
    for bad in ["\"\"", "\"x.y\""] {
        let garbled = format!("\"format_version\": {bad}");
        std::fs::write(&path, text.replace(&current, &garbled)).unwrap();
        let err = Trace::open(dir.path()).unwrap_err();
        assert!(matches!(err, FormatError::Version { .. }), "{err}");
    }
}

#[test]
fn part_of_a_future_major_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_manifest(dir.path(), [0].into_iter());
    let path = part_path(dir.path(), Table::Omp, 0, 0);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "hyscope.format_version".into(),
            "2.1".to_string(),
        )]))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        Table::Omp.file_schema(),
        Some(props),
    )
    .unwrap();
    w.write(&OmpRecord::to_batch(&chunks(0, 3, 0))).unwrap();
    w.close().unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(
        matches!(&err, FormatError::Version { found, .. } if found == "2.1"),
        "{err}"
    );
    assert_eq!(err.path(), path);
}

#[test]
fn corrupt_manifest_json() {
    let dir = tempfile::tempdir().unwrap();
    good_trace(dir.path());
    let path = dir.path().join("manifest.json");
    for text in [
        "{\"format_version\": \"1.0\", ",
        "",
        "[1,2]",
        "{\"world_size\": \"two\"}",
    ] {
        std::fs::write(&path, text).unwrap();
        let err = Trace::open(dir.path()).unwrap_err();
        assert!(
            matches!(err, FormatError::Manifest { .. }),
            "{text:?}: {err}"
        );
        assert_eq!(err.path(), path);
    }
}

#[test]
fn corrupt_rank_json() {
    let dir = tempfile::tempdir().unwrap();
    good_trace(dir.path());
    RankInfo {
        rank: 0,
        ..RankInfo::default()
    }
    .write(dir.path())
    .unwrap();
    let path = RankInfo::path(dir.path(), 1);
    std::fs::write(&path, b"{\"rank\": 1, \"pid\": ").unwrap();
    let err = Trace::open(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("invalid rank file"), "{err}");
    assert_eq!(err.path(), path);
    // Leftover temp files of an interrupted atomic write are not rank files.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(path.with_extension("json.tmp.123"), b"{").unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), 2000);
}

#[test]
fn truncated_part_at_every_kind_of_length() {
    let dir = tempfile::tempdir().unwrap();
    let part = good_trace(dir.path());
    let full = std::fs::read(&part).unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), 2000);
    let len = full.len();
    let mut cuts: Vec<usize> = vec![
        0,
        1,
        3,
        4,
        7,
        8,
        len / 4,
        len / 2,
        len - 9,
        len - 8,
        len - 5,
        len - 4,
        len - 1,
    ];
    cuts.extend((1..60).map(|i| i * len / 60));
    for cut in cuts {
        std::fs::write(&part, &full[..cut]).unwrap();
        let err = read_all(dir.path()).unwrap_err();
        assert!(
            matches!(err, FormatError::Parquet { .. }),
            "cut at {cut}: {err}"
        );
        assert_eq!(err.path(), part, "cut at {cut}");
        assert!(err.to_string().contains("corrupt or truncated"), "{err}");
    }
}

#[test]
fn garbage_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let part = good_trace(dir.path());
    // Not Parquet at all.
    std::fs::write(
        &part,
        b"this is not a parquet file at all, just some text\n".repeat(50),
    )
    .unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::Parquet { .. }), "{err}");
    assert_eq!(err.path(), part);
    // Parquet magic at both ends, garbage in between.
    let mut fake = b"PAR1".to_vec();
    fake.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    fake.extend_from_slice(&100u32.to_le_bytes());
    fake.extend_from_slice(b"PAR1");
    std::fs::write(&part, &fake).unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::Parquet { .. }), "{err}");
    assert_eq!(err.path(), part);
}

/// Overwrite bytes inside a valid part (data pages, page headers, footer): the
/// reader may or may not notice (Parquet has no mandatory checksums), but it must
/// never panic, and an error must name the file.
#[test]
fn corrupted_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let part = good_trace(dir.path());
    let full = std::fs::read(&part).unwrap();
    let mut errors = 0;
    let positions: Vec<usize> = (0..400).map(|i| 4 + i * (full.len() - 8) / 400).collect();
    for (n, &pos) in positions.iter().enumerate() {
        for pattern in [0xFFu8, 0x00, 0x5A] {
            let mut bytes = full.clone();
            let end = (pos + 1 + n % 7).min(full.len() - 4);
            for b in &mut bytes[pos..end] {
                *b ^= pattern | 1;
            }
            std::fs::write(&part, &bytes).unwrap();
            let result = std::panic::catch_unwind(|| read_all(dir.path()));
            match result {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => {
                    errors += 1;
                    assert_eq!(err.path(), part, "byte {pos}: {err}");
                }
                Err(_) => panic!(
                    "reader panicked on a part corrupted at byte {pos} (pattern {pattern:#x})"
                ),
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn part_with_wrong_schema() {
    let dir = tempfile::tempdir().unwrap();
    write_manifest(dir.path(), [0].into_iter());
    // An mpi part put where omp parts belong.
    let mut w = PartWriter::create(dir.path(), Table::Mpi, 0, small(100, 100)).unwrap();
    w.write_records(&[MpiRecord::default(); 3]).unwrap();
    w.finish().unwrap();
    let omp_part = part_path(dir.path(), Table::Omp, 0, 0);
    std::fs::create_dir_all(omp_part.parent().unwrap()).unwrap();
    std::fs::copy(part_path(dir.path(), Table::Mpi, 0, 0), &omp_part).unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(
        matches!(&err, FormatError::Schema { table, .. } if table == "omp"),
        "{err}"
    );
    assert_eq!(err.path(), omp_part);
    assert!(err.to_string().contains("missing column `kind`"), "{err}");

    // The right column names with a wrong type.
    let mut fields: Vec<Field> = Table::Omp
        .file_schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[0] = Field::new("thread", DataType::Int64, false);
    let schema = Arc::new(Schema::new(fields));
    let good = OmpRecord::to_batch(&chunks(0, 3, 0));
    let mut columns = good.columns().to_vec();
    columns[0] = Arc::new(Int64Array::from(vec![0i64; 3]));
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&omp_part).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::Schema { .. }), "{err}");
    assert_eq!(err.path(), omp_part);
    assert!(
        err.to_string()
            .contains("column `thread` is Int64, expected UInt32"),
        "{err}"
    );

    // A foreign Parquet file with one unrelated column.
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::UInt32, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(UInt32Array::from(vec![1, 2]))],
    )
    .unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&omp_part).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let err = read_all(dir.path()).unwrap_err();
    assert!(matches!(err, FormatError::Schema { .. }), "{err}");
    assert_eq!(err.path(), omp_part);
}

#[test]
fn writer_refuses_a_batch_of_another_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = PartWriter::create(dir.path(), Table::Omp, 0, small(100, 100)).unwrap();
    let err = w
        .write_batch(&MpiRecord::to_batch(&[MpiRecord::default()]))
        .unwrap_err();
    assert!(matches!(err, FormatError::Schema { .. }), "{err}");
    assert_eq!(w.finish().unwrap().rows, 0);
}

#[test]
fn unwritable_trace_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a_file");
    std::fs::write(&file, b"x").unwrap();
    let err = PartWriter::create(&file, Table::Omp, 0, small(10, 10))
        .err()
        .expect("a file is not a directory");
    assert!(matches!(err, FormatError::Io { .. }), "{err}");
    assert!(err.path().starts_with(&file));
}

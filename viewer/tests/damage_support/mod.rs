//! A recorded trace (`analyzer/tests/fixtures/hybrid-2x2`, 2 ranks × 2
//! threads of `examples/hybrid`) copied into a temporary directory, its parts
//! re-encoded by this version's writer (so they carry its checksums), ready
//! to be damaged by a test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use hyscope_format::{
    MpiRecord, OmpRecord, PartWriter, Record, SampleRecord, ScanOptions, SymbolRecord, Table,
    Trace, WriterOptions, read_part_records,
};

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2")
}

/// Rows per rank of the fixture (its rank files' counts): omp, mpi, samples.
pub const OMP_ROWS: [u64; 2] = [3297, 3297];
pub const MPI_ROWS: [u64; 2] = [23, 23];

fn reencode<R: Record>(from: &Trace, table: Table, to: &Path) {
    for part in from.parts(table) {
        let rows: Vec<R> = read_part_records(part, &ScanOptions::default()).unwrap();
        let mut w = PartWriter::create(to, table, part.rank, WriterOptions::default()).unwrap();
        w.write_records(&rows).unwrap();
        w.finish().unwrap();
    }
}

/// The fixture in `to` (which must not exist): the manifest and rank files
/// as recorded, every part re-encoded row for row.
pub fn copy_fixture(to: &Path) {
    let from = Trace::open(&fixture()).unwrap();
    std::fs::create_dir_all(to.join("ranks")).unwrap();
    std::fs::copy(fixture().join("manifest.json"), to.join("manifest.json")).unwrap();
    for r in 0..2 {
        let name = format!("ranks/rank-{r}.json");
        std::fs::copy(fixture().join(&name), to.join(&name)).unwrap();
    }
    reencode::<OmpRecord>(&from, Table::Omp, to);
    reencode::<MpiRecord>(&from, Table::Mpi, to);
    reencode::<SampleRecord>(&from, Table::Samples, to);
    reencode::<SymbolRecord>(&from, Table::Symbols, to);
}

/// Edit a JSON file of the trace.
pub fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

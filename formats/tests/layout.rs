//! The grouped layout of large jobs (`<table>/block=<b>/rank=<r>/`,
//! `ranks/block=<b>/rank-<r>.json`, `spool/block=<b>/`) reads like the flat
//! one: the same rows, rank files and problems through `Trace::open`, the
//! same rows through pyarrow's Hive partitioning, and a killed rank's spools
//! are recovered into its block.

use crate::common;

use std::path::Path;
use std::process::Command;

use hyscope_format::spool::to_parquet::{leftover_processes, recover_process};
use hyscope_format::{
    Layout, Manifest, OmpRecord, PartWriter, RANK_BLOCK, RankInfo, ScanOptions, SpoolWriter, Table,
    Trace, WriterOptions,
};

/// Ranks in three blocks: the first and last of block 0, the first of block 1, one of block 2.
const RANKS: [u32; 4] = [0, RANK_BLOCK - 1, RANK_BLOCK, 2 * RANK_BLOCK + 1];

fn write_trace(dir: &Path, layout: Layout) {
    let options = WriterOptions {
        layout,
        ..common::small(300, 100)
    };
    for (i, &rank) in RANKS.iter().enumerate() {
        let rows = common::chunks(0, 200 + 100 * i, 1_000_000 * i as i64);
        let mut w = PartWriter::create(dir, Table::Omp, rank, options.clone()).unwrap();
        w.write_records(&rows).unwrap();
        w.finish().unwrap();
        let info = RankInfo {
            rank,
            host: format!("node{}", rank / RANK_BLOCK),
            pid: 1000 + rank,
            threads: 1,
            events: hyscope_format::EventCounts {
                omp: rows.len() as u64,
                ..Default::default()
            },
            ..RankInfo::default()
        };
        info.write_in(dir, layout).unwrap();
    }
    // As the collector writes it: the job's size, rank 0's host, no ranks.
    let mut m = Manifest::new();
    m.world_size = 2 * RANK_BLOCK + 2;
    m.hosts = vec!["node0".into()];
    m.write(dir).unwrap();
}

fn rows(trace: &Trace) -> Vec<(u32, OmpRecord)> {
    trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
}

#[test]
fn a_grouped_trace_reads_like_a_flat_one() {
    let flat = tempfile::tempdir().unwrap();
    let grouped = tempfile::tempdir().unwrap();
    write_trace(flat.path(), Layout::Flat);
    write_trace(grouped.path(), Layout::Blocked);
    // The grouped trace's table and rank directories hold blocks, not ranks.
    let names = |d: &Path| -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(&grouped.path().join("omp")),
        ["block=0", "block=1", "block=2"]
    );
    assert_eq!(
        names(&grouped.path().join("ranks")),
        ["block=0", "block=1", "block=2"]
    );
    assert_eq!(names(&flat.path().join("omp")).len(), RANKS.len());

    let a = Trace::open(flat.path()).unwrap();
    let b = Trace::open(grouped.path()).unwrap();
    assert_eq!(a.ranks(), RANKS.to_vec());
    assert_eq!(b.ranks(), RANKS.to_vec());
    assert!(
        b.parts(Table::Omp)
            .iter()
            .any(|p| p.path.ends_with("omp/block=1/rank=1024/part-0.parquet")),
        "{:?}",
        b.parts(Table::Omp)
    );
    assert_eq!(rows(&a), rows(&b));
    assert_eq!(rows(&b).len(), 200 + 300 + 400 + 500);
    // The rank files are merged in both, and their hosts listed.
    assert_eq!(a.manifest.ranks, b.manifest.ranks);
    assert_eq!(b.manifest.ranks.len(), RANKS.len());
    assert_eq!(b.manifest.hosts, ["node0", "node1", "node2"]);
    // The same problems (the ranks absent from this sparse job), nothing about the layout.
    let what = |t: &Trace| -> Vec<String> { t.problems().iter().map(|p| p.what.clone()).collect() };
    assert_eq!(what(&a), what(&b));
    assert!(
        b.problems().iter().all(|p| !p.what.contains("not read")),
        "{:?}",
        b.problems()
    );
}

/// A rank file's rows that have no part: the problem names where the part
/// would be in the trace's layout.
#[test]
fn a_missing_partition_is_named_in_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), Layout::Blocked);
    std::fs::remove_dir_all(dir.path().join("omp/block=1/rank=1024")).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    let p = trace
        .problems()
        .iter()
        .find(|p| p.rank == Some(RANK_BLOCK) && p.data_lost)
        .expect("the missing partition is a problem");
    assert!(
        p.what
            .contains("ranks/block=1/rank-1024.json lists 400 OpenMP rows but omp/block=1/rank=1024 has no part"),
        "{}",
        p.what
    );
}

#[test]
fn pyarrow_reads_the_grouped_layout_with_hive_partitioning() {
    let dir = tempfile::tempdir().unwrap();
    write_trace(dir.path(), Layout::Blocked);
    let script = r#"
import json, sys
import pyarrow.dataset as ds
import pyarrow.compute as pc
t = ds.dataset(sys.argv[1] + '/omp', format='parquet', partitioning='hive').to_table()
out = {'columns': t.column_names[-2:], 'rows': t.num_rows}
for rank in (0, 1023, 1024, 2049):
    out[str(rank)] = t.filter(pc.field('rank') == rank).num_rows
print(json.dumps(out))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(dir.path())
        .output()
        .expect("python3 (scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"], serde_json::json!(["block", "rank"]));
    assert_eq!(v["rows"], 1400);
    assert_eq!(v["0"], 200);
    assert_eq!(v["1023"], 300);
    assert_eq!(v["1024"], 400);
    assert_eq!(v["2049"], 500);
}

/// A process of a large job killed while recording left its spool in its
/// block's spool directory: recovery encodes it into its block's partition
/// and rank file, and removes the emptied spool directories.
#[test]
fn a_killed_ranks_spool_is_recovered_into_its_block() {
    let dir = tempfile::tempdir().unwrap();
    let rank = RANK_BLOCK + 5;
    let spool_dir = Layout::Blocked.spool_dir(dir.path(), rank);
    assert!(spool_dir.ends_with("spool/block=1"));
    std::fs::create_dir_all(&spool_dir).unwrap();
    let rows = common::chunks(0, 3000, 0);
    let mut w =
        SpoolWriter::<OmpRecord>::create(&spool_dir.join(format!("omp-rank{rank}-pid4242.spool")))
            .unwrap();
    for frame in rows.chunks(1000) {
        w.append(frame).unwrap();
    }
    drop(w);
    let processes = leftover_processes(dir.path());
    assert_eq!(processes.len(), 1);
    assert_eq!(processes[0].layout, Layout::Blocked);
    let got = recover_process(dir.path(), &processes[0], 2).unwrap();
    assert_eq!(got.events.omp, 3000);
    assert!(!dir.path().join("spool").exists());
    assert!(dir.path().join("ranks/block=1/rank-1029.json").is_file());
    assert!(dir.path().join("omp/block=1/rank=1029").is_dir());
    let mut m = Manifest::new();
    m.world_size = rank + 1;
    m.write(dir.path()).unwrap();
    let trace = Trace::open(dir.path()).unwrap();
    let back: Vec<OmpRecord> = rows_of(&trace, rank);
    assert_eq!(back, rows);
    assert_eq!(trace.manifest.ranks.len(), 1);
    assert!(trace.manifest.ranks[0].recovered);
}

fn rows_of(trace: &Trace, rank: u32) -> Vec<OmpRecord> {
    rows(trace)
        .into_iter()
        .filter(|(r, _)| *r == rank)
        .map(|(_, r)| r)
        .collect()
}

//! Helpers shared by the format's integration tests.
#![allow(dead_code)]

use std::path::Path;

use hyscope_format::{Manifest, OmpKind, OmpRecord, PartWriter, RankInfo, Table, WriterOptions};

/// Small parts and row groups, so a few hundred rows exercise every boundary.
pub fn small(rows_per_part: usize, rows_per_row_group: usize) -> WriterOptions {
    WriterOptions {
        rows_per_part,
        rows_per_row_group,
        ..WriterOptions::default()
    }
}

/// `n` chunk rows of one thread, back to back: row i covers `[base + 1000 i, base + 1000 i + 900]`.
pub fn chunks(thread: u32, n: usize, base: i64) -> Vec<OmpRecord> {
    (0..n)
        .map(|i| OmpRecord {
            thread,
            kind: OmpKind::Chunk as u8,
            variant: 3,
            start_ns: base + 1000 * i as i64,
            end_ns: base + 1000 * i as i64 + 900,
            parallel_id: 1 + i as u64 / 100,
            task_id: 10 + u64::from(thread),
            codeptr: 0x401a20,
            team_size: 2,
            count: 16,
            chunk_start: 16 * i as u64,
            ..OmpRecord::default()
        })
        .collect()
}

/// Write `rows` of each rank to the `omp` table (no sorting: order is kept) and a manifest.
pub fn write_omp_trace(dir: &Path, per_rank: &[(u32, Vec<OmpRecord>)], options: &WriterOptions) {
    for (rank, rows) in per_rank {
        let mut w = PartWriter::create(dir, Table::Omp, *rank, options.clone()).unwrap();
        w.write_records(rows).unwrap();
        let stats = w.finish().unwrap();
        assert_eq!(stats.rows, rows.len() as u64);
    }
    write_manifest(dir, per_rank.iter().map(|(r, _)| *r));
}

pub fn write_manifest(dir: &Path, ranks: impl Iterator<Item = u32>) {
    let mut m = Manifest::new();
    m.command = vec!["./app".into()];
    m.ranks = ranks
        .map(|rank| RankInfo {
            rank,
            host: "node0".into(),
            pid: 1000 + rank,
            threads: 2,
            ..RankInfo::default()
        })
        .collect();
    // A rank is below the job's size (readers ignore one that is not).
    m.world_size = m.ranks.iter().map(|r| r.rank + 1).max().unwrap_or(0);
    m.write(dir).unwrap();
}

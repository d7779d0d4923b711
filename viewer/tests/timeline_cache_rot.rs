//! The timeline caches after bit rot: a part that changes in place after
//! its index was cached, with its size and modification time kept, is
//! never drawn from the cache. `tests/mpi/hybrid.c` recorded under real
//! `mpirun` (2 ranks × 2 threads), opened once with a cache directory (both
//! caches written, the second open reads them), then one byte of rank 0's
//! first OpenMP part flipped inside its data and the part's modification
//! time set back: the next opens leave rank 0 out, naming the file and the
//! problem as the analysis does, and publish no overview with it.

use crate::record_support;

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use hyscope_analyzer::timeline::{OverviewUpdate, RankCells, TimelineIndex};
use hyscope_format::Trace;
use record_support::*;

/// Open the timeline of `dir` with its caches in `cache`: the index,
/// whether it came from the cache, and every overview published.
fn open(dir: &Path, cache: &Path) -> (TimelineIndex, bool, Vec<OverviewUpdate>) {
    let trace = Trace::open(dir).unwrap();
    let mut updates = Vec::new();
    let (index, cached) =
        TimelineIndex::open_progressive_in(&trace, cache, &|_, _| {}, Duration::ZERO, &mut |u| {
            updates.push(u)
        })
        .unwrap();
    (index, cached, updates)
}

fn ranks(cells: &dyn RankCells) -> Vec<u32> {
    cells.rank_rows().iter().map(|r| r.rank).collect()
}

#[test]
fn a_part_rotted_in_place_is_not_drawn_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "hybrid");
    let dir = tmp.path().join("trace");
    record_mpi_job(&dir, &exe, 2);
    let cache = tmp.path().join("cache");

    let (built, cached, _) = open(&dir, &cache);
    assert!(!cached && built.left_out().is_empty());
    let (index, cached, updates) = open(&dir, &cache);
    assert!(cached, "the second open reads the cache");
    assert!(updates[0].cached, "the overview from the cache");
    assert_eq!(ranks(&index), [0, 1]);

    // One byte inside the first column chunk's data (after the 4-byte
    // magic), written in place; size and modification time as they were.
    let file = "omp/rank=0/part-0.parquet";
    let part = dir.join(file);
    let before = std::fs::metadata(&part).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&part)
        .unwrap();
    let mut byte = [0u8; 1];
    f.seek(SeekFrom::Start(40)).unwrap();
    std::io::Read::read_exact(&mut f, &mut byte).unwrap();
    f.seek(SeekFrom::Start(40)).unwrap();
    f.write_all(&[byte[0] ^ 0x10]).unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
    drop(f);
    let after = std::fs::metadata(&part).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );

    // What the analysis says of the damaged trace.
    let analysis =
        hyscope_analyzer::analyze(&dir, &hyscope_analyzer::AnalyzeOptions::default()).unwrap();
    assert_eq!(analysis.ranks_left_out.len(), 1);
    let says = analysis.ranks_left_out[0].says();
    assert!(
        says.starts_with(&format!(
            "rank 0 left out: {file} cannot be read (corrupt or truncated Parquet file: checksum mismatch"
        )),
        "{says}"
    );

    // Twice: a cache is not written again either.
    for _ in 0..2 {
        let (index, cached, updates) = open(&dir, &cache);
        assert!(!cached, "the index of the rotted part came from the cache");
        assert_eq!(index.left_out(), &analysis.ranks_left_out[..]);
        assert_eq!(index.left_out()[0].says(), says);
        assert_eq!(ranks(&index), [1]);
        assert!(!updates.is_empty());
        for u in &updates {
            assert!(!u.cached, "an overview from the cache was published");
            assert!(!ranks(&u.overview).contains(&0), "rank 0 in an overview");
        }
        let last = updates.last().unwrap();
        assert!(last.complete());
        assert_eq!(last.overview.left_out(), index.left_out());
    }
}

//! Where a rank's files are in a trace directory: the one place that builds
//! and discovers per-rank paths (table partitions, rank files, spools), so
//! that writers, readers and recovery agree.
//!
//! A job of up to [`FLAT_MAX_RANKS`] ranks writes the flat layout
//! (`<table>/rank=<r>/`, `ranks/rank-<r>.json`, `spool/<file>`); a larger job
//! groups its ranks by blocks of [`RANK_BLOCK`] under one more Hive key
//! (`<table>/block=<b>/rank=<r>/`, `ranks/block=<b>/rank-<r>.json`,
//! `spool/block=<b>/<file>`, b = r / [`RANK_BLOCK`]), so that no directory
//! holds more than about [`RANK_BLOCK`] ranks' entries whatever the job's
//! size. Readers take both, and a trace holds one of them.

use std::path::{Path, PathBuf};

use crate::schema::Table;

/// Ranks per `block=<b>` directory in the grouped layout.
pub const RANK_BLOCK: u32 = 1024;
/// The largest job that keeps the flat layout: its directories hold at most
/// this many ranks' entries already.
pub const FLAT_MAX_RANKS: u32 = RANK_BLOCK;
/// The directory of the rank files.
pub const RANKS_DIR: &str = "ranks";
/// The directory of the collector's spools while recording.
pub const SPOOL_DIR: &str = "spool";
/// Prefix of a block directory's name (`block=<b>`).
const BLOCK_PREFIX: &str = "block=";

/// How a trace's per-rank files are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// `<table>/rank=<r>/`: every trace of a job of up to [`FLAT_MAX_RANKS`] ranks,
    /// and every trace before format 1.4.
    #[default]
    Flat,
    /// `<table>/block=<r / RANK_BLOCK>/rank=<r>/` (format 1.4).
    Blocked,
}

impl Layout {
    /// The layout of a job of `ranks` ranks.
    pub fn for_job(ranks: u32) -> Layout {
        if ranks > FLAT_MAX_RANKS {
            Layout::Blocked
        } else {
            Layout::Flat
        }
    }

    /// The directory that holds `rank`'s entries under `dir` (`dir` itself,
    /// or its block directory).
    fn group(self, dir: PathBuf, rank: u32) -> PathBuf {
        match self {
            Layout::Flat => dir,
            Layout::Blocked => dir.join(block_name(rank)),
        }
    }

    /// The partition directory of `table` for `rank`.
    pub fn part_dir(self, trace_dir: &Path, table: Table, rank: u32) -> PathBuf {
        self.group(trace_dir.join(table.dir_name()), rank)
            .join(format!("rank={rank}"))
    }

    /// `rank`'s rank file.
    pub fn rank_file(self, trace_dir: &Path, rank: u32) -> PathBuf {
        self.group(trace_dir.join(RANKS_DIR), rank)
            .join(format!("rank-{rank}.json"))
    }

    /// The directory of `rank`'s spools while it records.
    pub fn spool_dir(self, trace_dir: &Path, rank: u32) -> PathBuf {
        self.group(trace_dir.join(SPOOL_DIR), rank)
    }

    /// The layout a file was written in, from its directory (a spool, a rank
    /// file): grouped when it is in a `block=<b>` directory.
    pub fn of_file(path: &Path) -> Layout {
        match path.parent().and_then(Path::file_name) {
            Some(name) if block_number(&name.to_string_lossy()).is_some() => Layout::Blocked,
            _ => Layout::Flat,
        }
    }
}

/// `block=<b>` for the block holding `rank`.
pub fn block_name(rank: u32) -> String {
    format!("{BLOCK_PREFIX}{}", rank / RANK_BLOCK)
}

/// The block number of a `block=<b>` directory name.
pub fn block_number(name: &str) -> Option<u32> {
    name.strip_prefix(BLOCK_PREFIX)?.parse().ok()
}

/// The entries of `dir` in either layout: its own, and those of its
/// `block=<b>` subdirectories in place of them (sorted by path). A directory
/// that cannot be read gives none.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(top) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in top.flatten() {
        let path = entry.path();
        let is_block = block_number(&entry.file_name().to_string_lossy()).is_some()
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if is_block {
            if let Ok(inner) = std::fs::read_dir(&path) {
                out.extend(inner.flatten().map(|e| e.path()));
            }
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `rank`'s rank file if there is one, in either layout.
pub fn find_rank_file(trace_dir: &Path, rank: u32) -> Option<PathBuf> {
    [Layout::Flat, Layout::Blocked]
        .into_iter()
        .map(|l| l.rank_file(trace_dir, rank))
        .find(|p| p.exists())
}

/// Remove the spool directory's empty block directories, then the spool
/// directory itself if empty (what is left in it is for recovery).
pub fn remove_empty_spool_dirs(trace_dir: &Path) {
    let spool = trace_dir.join(SPOOL_DIR);
    if let Ok(top) = std::fs::read_dir(&spool) {
        for entry in top.flatten() {
            if block_number(&entry.file_name().to_string_lossy()).is_some() {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(&spool);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_up_to_the_block_size_then_grouped() {
        assert_eq!(Layout::for_job(1), Layout::Flat);
        assert_eq!(Layout::for_job(FLAT_MAX_RANKS), Layout::Flat);
        assert_eq!(Layout::for_job(FLAT_MAX_RANKS + 1), Layout::Blocked);
        let t = Path::new("/t");
        assert_eq!(
            Layout::Flat.part_dir(t, Table::Omp, 5),
            Path::new("/t/omp/rank=5")
        );
        assert_eq!(
            Layout::Blocked.part_dir(t, Table::Mpi, 2049),
            Path::new("/t/mpi/block=2/rank=2049")
        );
        assert_eq!(
            Layout::Blocked.rank_file(t, 1023),
            Path::new("/t/ranks/block=0/rank-1023.json")
        );
        assert_eq!(
            Layout::Blocked.spool_dir(t, 1024),
            Path::new("/t/spool/block=1")
        );
        assert_eq!(
            Layout::of_file(Path::new("/t/spool/block=1/omp-rank1024-pid7.spool")),
            Layout::Blocked
        );
        assert_eq!(
            Layout::of_file(Path::new("/t/spool/omp-rank3-pid7.spool")),
            Layout::Flat
        );
        assert_eq!(block_number("block=x"), None);
    }
}

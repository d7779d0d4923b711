//! Parts of a trace that cannot be read, and the one rule every reader of
//! them follows: a rank with a damaged part is left out whole (never half of
//! its rows), the file and its problem are named, and the other ranks are
//! read. What "whole" covers depends on the table:
//!
//! - `omp`, `mpi`, `samples`: the rank is left out of the analysis as a
//!   whole ([`crate::load`]): a rank with half its intervals would give wrong
//!   imbalance and efficiency numbers, so every number covers the other
//!   ranks (`Analysis::ranks_left_out`, "N of M ranks analysed");
//! - `phases`: the rank's phases only (every other number of the rank is
//!   whole without them; `Analysis::phases_missing`). The analysis decodes
//!   the parts in parallel and the timelines ([`crate::phases::PhaseLanes`])
//!   one after another; both keep ranks by [`whole_ranks`].
//!
//! A trace whose every rank is damaged, or whose manifest or rank files are,
//! stays an error.
//!
//! The views that read a rank's rows another way than the analysis (the
//! timelines' index reads a few columns of `omp` and `mpi`, no samples) ask
//! [`check_rank`] first: every part of [`RANK_TABLES`] opened and its
//! checksums verified as the analysis's reading verifies them, so a rank
//! the analysis leaves out is left out there too ([`crate::timeline`]). The
//! exports take the analysis's own list ([`crate::run_extent`]). Every view
//! says it with [`LeftOutPart::says`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hyscope_format::{FormatError, PartFile, PartScan, PhaseRecord, ScanOptions, Table, Trace};
use rayon::prelude::*;

use crate::model::{LeftOutPart, TraceProblem, UnreadPhases};

/// The tables a damaged part of which leaves its rank out whole (a damaged
/// `phases` part leaves out the rank's phases only; a damaged `symbols`
/// part is an error).
pub const RANK_TABLES: [Table; 3] = [Table::Omp, Table::Mpi, Table::Samples];

/// A part of a trace that could not be read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DamagedPart {
    /// Its table.
    #[serde(with = "table_name")]
    pub table: Table,
    pub rank: u32,
    /// The file, as the trace's listing gives it.
    pub path: PathBuf,
    /// What is wrong with it (without the file's name).
    pub problem: String,
}

/// A [`Table`] as its directory name (the exchange between the processes of
/// a parallel analysis carries damaged parts).
mod table_name {
    use hyscope_format::Table;

    pub fn serialize<S: serde::Serializer>(t: &Table, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.dir_name())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
        let name: String = serde::Deserialize::deserialize(d)?;
        Table::ALL
            .into_iter()
            .find(|t| t.dir_name() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("no table named {name}")))
    }
}

impl DamagedPart {
    /// `part`, which `e` says cannot be read.
    pub fn new(part: &PartFile, e: &FormatError) -> DamagedPart {
        let text = e.to_string();
        let problem = text
            .strip_prefix(&format!("{}: ", e.path().display()))
            .map_or_else(|| text.clone(), str::to_string);
        DamagedPart {
            table: part.table,
            rank: part.rank,
            path: part.path.clone(),
            problem,
        }
    }

    /// The part of `parts` that `e` is about, if it is one of them.
    pub fn among(parts: &[&PartFile], e: &FormatError) -> Option<DamagedPart> {
        parts
            .iter()
            .find(|p| p.path == e.path())
            .map(|p| DamagedPart::new(p, e))
    }

    /// The file relative to the trace directory `dir`.
    pub fn file(&self, dir: &Path) -> String {
        self.path
            .strip_prefix(dir)
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }

    /// Its entry in [`crate::model::Analysis::phases_missing`].
    pub fn unread(&self, dir: &Path) -> UnreadPhases {
        UnreadPhases {
            rank: self.rank,
            file: self.file(dir),
        }
    }

    /// Its entry in [`crate::model::Analysis::ranks_left_out`].
    pub fn left_out(&self, dir: &Path) -> LeftOutPart {
        LeftOutPart {
            rank: self.rank,
            file: self.file(dir),
            problem: self.problem.clone(),
        }
    }

    /// The error it is when no rank is left to show (the reader's own text:
    /// the file, then the problem).
    pub fn error(&self) -> FormatError {
        FormatError::Invalid {
            path: self.path.clone(),
            message: self.problem.clone(),
        }
    }

    /// The trace problem that says it, before any number: what of the rank
    /// every number leaves out.
    pub fn trace_problem(&self, dir: &Path) -> TraceProblem {
        let r = self.rank;
        let what = match self.table {
            Table::Phases => format!(
                "the phases of rank {r} cannot be read ({}): the Phases table, the energy per phase and the phases that findings name leave rank {r} out",
                self.problem
            ),
            t => format!(
                "a part of rank {r}'s `{}` table cannot be read ({}): rank {r} is left out of the analysis as a whole, every number below covers the other ranks only",
                t.dir_name(),
                self.problem
            ),
        };
        TraceProblem {
            file: Some(self.file(dir)),
            rank: Some(r),
            what,
            data_lost: true,
        }
    }
}

impl LeftOutPart {
    /// The rank, its file and the problem, as every view that leaves the
    /// rank out says it (the timelines' row of the rank, the exports'
    /// `hyscope:` line): `rank 0 left out: omp/rank=0/part-0.parquet cannot
    /// be read (corrupt or truncated Parquet file: …)`.
    pub fn says(&self) -> String {
        format!(
            "rank {} left out: {} cannot be read ({})",
            self.rank, self.file, self.problem
        )
    }
}

/// What the views say of the ranks `parts` leave out, in one line: the
/// rank's [`LeftOutPart::says`] for one rank; for more, their ranks and
/// the first's file and problem. None when no rank is left out.
pub fn left_out_summary(parts: &[LeftOutPart]) -> Option<String> {
    let mut ranks: Vec<u32> = parts.iter().map(|p| p.rank).collect();
    ranks.dedup();
    match ranks.len() {
        0 => None,
        1 => Some(parts[0].says()),
        n => Some(format!(
            "{n} ranks left out ({}): a trace file of each cannot be read, e.g. {}",
            hyscope_format::rank_ranges::rank_ranges(ranks.iter().copied()),
            parts[0].says()
        )),
    }
}

/// Whether `part` can be read, checked as reading it checks before decoding
/// any row: its footer, version, schema, row counts and the checksums of
/// all its data (every column, every row group).
pub fn check_part(part: &PartFile) -> Result<(), DamagedPart> {
    PartScan::open(part, &ScanOptions::default())
        .map(drop)
        .map_err(|e| DamagedPart::new(part, &e))
}

/// The parts of `rank` in [`RANK_TABLES`] that cannot be read
/// ([`check_part`], in parallel), in file order: the rank is left out whole
/// when there is one.
pub fn check_rank(trace: &Trace, rank: u32) -> Vec<DamagedPart> {
    check_ranks_where(trace, |r| r == rank)
}

/// [`check_rank`] of every rank at once (all parts in parallel), in
/// (rank, file) order: what a cache of something built from the parts must
/// pass before it is used, since a part can rot in place and keep its size
/// and modification time ([`crate::timeline`]'s caches).
pub fn check_ranks(trace: &Trace) -> Vec<DamagedPart> {
    check_ranks_where(trace, |_| true)
}

fn check_ranks_where(trace: &Trace, rank: impl Fn(u32) -> bool) -> Vec<DamagedPart> {
    let parts: Vec<&PartFile> = RANK_TABLES
        .iter()
        .flat_map(|&t| trace.parts(t))
        .filter(|p| rank(p.rank))
        .collect();
    let mut damaged: Vec<DamagedPart> = parts
        .par_iter()
        .filter_map(|p| check_part(p).err())
        .collect();
    sort(&mut damaged);
    damaged
}

/// One part, or what is wrong with it.
pub fn read_part<R: hyscope_format::Record>(
    part: &PartFile,
    options: &ScanOptions,
) -> Result<Vec<R>, DamagedPart> {
    hyscope_format::read_part_records(part, options).map_err(|e| DamagedPart::new(part, &e))
}

/// Each rank's rows from its parts as read (`(rank, rows or damage)`, in
/// any order; a rank's rows keep the order of its parts): the ranks whose
/// parts were all read, and every part that was not, in (rank, file) order.
/// A rank with a damaged part keeps none of its rows.
pub fn whole_ranks<R>(
    read: impl IntoIterator<Item = (u32, Result<Vec<R>, DamagedPart>)>,
) -> (BTreeMap<u32, Vec<R>>, Vec<DamagedPart>) {
    let mut rows: BTreeMap<u32, Vec<R>> = BTreeMap::new();
    let mut damaged: Vec<DamagedPart> = Vec::new();
    for (rank, part) in read {
        match part {
            Ok(mut v) => rows.entry(rank).or_default().append(&mut v),
            Err(d) => damaged.push(d),
        }
    }
    for d in &damaged {
        rows.remove(&d.rank);
    }
    sort(&mut damaged);
    (rows, damaged)
}

/// Damaged parts in (rank, file) order, as every view lists them.
pub fn sort(damaged: &mut [DamagedPart]) {
    damaged.sort_by(|a, b| (a.rank, &a.path).cmp(&(b.rank, &b.path)));
}

/// The `phases` rows of a trace with their ranks, and the parts that cannot
/// be read.
pub type PhaseRows = (Vec<(u32, PhaseRecord)>, Vec<DamagedPart>);

/// The `phases` rows of `trace` that `options` selects (ranks, time range),
/// rank by rank ([`whole_ranks`]).
pub fn read_phase_rows(trace: &hyscope_format::Trace, options: &ScanOptions) -> PhaseRows {
    let (rows, damaged) = whole_ranks(
        trace
            .parts(Table::Phases)
            .iter()
            .filter(|p| options.ranks.as_ref().is_none_or(|r| r.contains(&p.rank)))
            .map(|p| (p.rank, read_part::<PhaseRecord>(p, options))),
    );
    let rows = rows
        .into_iter()
        .flat_map(|(rank, v)| v.into_iter().map(move |p| (rank, p)))
        .collect();
    (rows, damaged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn damage(rank: u32, file: &str) -> DamagedPart {
        DamagedPart {
            table: Table::Phases,
            rank,
            path: PathBuf::from(file),
            problem: "truncated".into(),
        }
    }

    /// Rank 1's second part is damaged: its first part's rows go too;
    /// ranks 0 and 2 keep theirs, in their parts' order.
    #[test]
    fn a_rank_with_a_damaged_part_is_left_out_whole() {
        let p = |name: &str| PhaseRecord::api(0, name, 1, 2, 0);
        let (rows, damaged) = whole_ranks([
            (2, Ok(vec![p("c")])),
            (1, Ok(vec![p("b")])),
            (1, Err(damage(1, "phases/rank=1/part-1.parquet"))),
            (0, Ok(vec![p("a0")])),
            (0, Ok(vec![p("a1")])),
        ]);
        let names: Vec<(u32, Vec<&str>)> = rows
            .iter()
            .map(|(r, v)| (*r, v.iter().map(|p| p.name.as_str()).collect()))
            .collect();
        assert_eq!(names, [(0, vec!["a0", "a1"]), (2, vec!["c"])]);
        assert_eq!(damaged, [damage(1, "phases/rank=1/part-1.parquet")]);
    }

    /// One rank: its own line; several: their ranks and the first's file.
    #[test]
    fn the_ranks_left_out_are_said_in_one_line() {
        let part = |rank: u32, file: &str| LeftOutPart {
            rank,
            file: file.into(),
            problem: "corrupt or truncated Parquet file: bad footer".into(),
        };
        assert_eq!(left_out_summary(&[]), None);
        let one = [
            part(3, "omp/rank=3/part-0.parquet"),
            part(3, "mpi/rank=3/part-0.parquet"),
        ];
        assert_eq!(
            left_out_summary(&one).unwrap(),
            "rank 3 left out: omp/rank=3/part-0.parquet cannot be read (corrupt or truncated Parquet file: bad footer)"
        );
        let more = [
            part(3, "omp/rank=3/part-0.parquet"),
            part(4, "samples/rank=4/part-1.parquet"),
            part(5, "omp/rank=5/part-0.parquet"),
        ];
        assert_eq!(
            left_out_summary(&more).unwrap(),
            "3 ranks left out (3–5): a trace file of each cannot be read, e.g. rank 3 left out: omp/rank=3/part-0.parquet cannot be read (corrupt or truncated Parquet file: bad footer)"
        );
    }

    #[test]
    fn the_problem_names_the_file_relative_to_the_trace() {
        let d = DamagedPart {
            table: Table::Phases,
            rank: 3,
            path: PathBuf::from("/t/trace/phases/rank=3/part-0.parquet"),
            problem: "corrupt or truncated Parquet file: bad footer".into(),
        };
        let p = d.trace_problem(Path::new("/t/trace"));
        assert_eq!(p.file.as_deref(), Some("phases/rank=3/part-0.parquet"));
        assert_eq!(p.rank, Some(3));
        assert!(p.data_lost);
        assert!(
            p.what
                .starts_with("the phases of rank 3 cannot be read (corrupt or truncated Parquet file: bad footer)"),
            "{}",
            p.what
        );
    }
}

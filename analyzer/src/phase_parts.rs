//! The `phases` table read rank by rank, as every view reads it: a rank with
//! a part that cannot be read is left out whole (never half of its phases)
//! and the file is named; the other ranks' phases are kept. The analysis
//! ([`crate::load`]) decodes the parts in parallel and the timelines
//! ([`crate::phases::PhaseLanes`]) one after another; both keep ranks by
//! [`whole_ranks`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hyscope_format::{FormatError, PartFile, PhaseRecord, ScanOptions, Table};

use crate::model::{TraceProblem, UnreadPhases};

/// A part of the `phases` table that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedPart {
    pub rank: u32,
    /// The file, as the trace's listing gives it.
    pub path: PathBuf,
    /// What is wrong with it (without the file's name).
    pub problem: String,
}

impl DamagedPart {
    fn new(part: &PartFile, e: &FormatError) -> DamagedPart {
        let text = e.to_string();
        let problem = text
            .strip_prefix(&format!("{}: ", e.path().display()))
            .map_or_else(|| text.clone(), str::to_string);
        DamagedPart {
            rank: part.rank,
            path: part.path.clone(),
            problem,
        }
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

    /// The trace problem that says it, before any number: the rank's phases
    /// are missing from everything the phases give.
    pub fn trace_problem(&self, dir: &Path) -> TraceProblem {
        TraceProblem {
            file: Some(self.file(dir)),
            rank: Some(self.rank),
            what: format!(
                "the phases of rank {r} cannot be read ({}): the Phases table, the energy per phase and the phases that findings name leave rank {r} out",
                self.problem,
                r = self.rank
            ),
            data_lost: true,
        }
    }
}

/// One part of the `phases` table, or what is wrong with it.
pub fn read_part(part: &PartFile, options: &ScanOptions) -> Result<Vec<PhaseRecord>, DamagedPart> {
    debug_assert_eq!(part.table, Table::Phases);
    hyscope_format::read_part_records(part, options).map_err(|e| DamagedPart::new(part, &e))
}

/// Each rank's phases from its parts as read (`(rank, rows or damage)`, in
/// any order; a rank's rows keep the order of its parts): the ranks whose
/// parts were all read, and every part that was not, in (rank, file) order.
/// A rank with a damaged part keeps none of its rows.
pub fn whole_ranks(
    read: impl IntoIterator<Item = (u32, Result<Vec<PhaseRecord>, DamagedPart>)>,
) -> (BTreeMap<u32, Vec<PhaseRecord>>, Vec<DamagedPart>) {
    let mut rows: BTreeMap<u32, Vec<PhaseRecord>> = BTreeMap::new();
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
    damaged.sort_by(|a, b| (a.rank, &a.path).cmp(&(b.rank, &b.path)));
    (rows, damaged)
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
            .map(|p| (p.rank, read_part(p, options))),
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

    #[test]
    fn the_problem_names_the_file_relative_to_the_trace() {
        let d = DamagedPart {
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

//! Ranks aggregated per display line, for traces with more ranks than a
//! viewer has lines (terminal rows, pixel rows): one meaning shared by the TUI
//! and the GUI.
//!
//! The ranks, in display order ([`TimelineIndex::rank_rows`]), are cut into
//! contiguous groups of a power-of-two size, the smallest that fits them into
//! the lines available ([`group_size`]). Each group's line shows, per cell,
//! the **worst** rank of the group there (the one with the most waiting time,
//! [`State::is_waiting`]: MPI, OpenMP runtime, barrier and lock waits) with its
//! threads' time per state, and the **spread**: the least and the most
//! waiting share among the group's ranks. The line's label names the ranks it
//! holds and the rank with the most waiting time over the whole window.
//!
//! A group opens on demand ([`Grouping::toggle`]) into [`FANOUT`] sub-groups,
//! down to single ranks, whose lines read exactly as a rank's line does
//! without aggregation (the rank's threads summed).
//!
//! The cost of a line is that of querying every thread of its ranks
//! ([`TimelineIndex::query`]); [`TimelineIndex::aggregate_all`] spreads the
//! lines over the cores.

use std::collections::BTreeSet;
use std::ops::Range;

use rayon::prelude::*;

use super::{CellSummary, STATES, State, TimelineIndex};

/// A rank and its rows in the index (its threads, contiguous in display order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankRows {
    pub rank: u32,
    pub rows: Range<usize>,
}

/// The ranks of rows sorted by (host, rank, thread): one entry per rank, in that order.
pub(crate) fn rank_rows_of(rows: &[super::RowInfo]) -> Vec<RankRows> {
    let mut out: Vec<RankRows> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match out.last_mut() {
            Some(last) if last.rank == r.rank && last.rows.end == i => last.rows.end = i + 1,
            _ => out.push(RankRows {
                rank: r.rank,
                rows: i..i + 1,
            }),
        }
    }
    out
}

/// A display line holding the ranks at positions `start..end` of
/// [`TimelineIndex::rank_rows`] (positions in display order, not rank numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Group {
    pub start: usize,
    pub end: usize,
}

impl Group {
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A line of one rank.
    pub fn is_single(&self) -> bool {
        self.len() == 1
    }

    /// The groups one level down: [`FANOUT`] equal parts (a power of two
    /// ranks each, the last one shorter), single ranks at the bottom.
    pub fn children(&self) -> Vec<Group> {
        let size = (self.len().div_ceil(FANOUT)).max(1).next_power_of_two();
        split(self.start..self.end, size)
    }
}

/// Sub-groups an opened group shows.
pub const FANOUT: usize = 16;

/// Ranks per line at the top level: the smallest power of two that fits
/// `ranks` ranks into `lines` lines (1 when they all fit).
pub fn group_size(ranks: usize, lines: usize) -> usize {
    ranks.div_ceil(lines.max(1)).max(1).next_power_of_two()
}

fn split(range: Range<usize>, size: usize) -> Vec<Group> {
    range
        .clone()
        .step_by(size.max(1))
        .map(|start| Group {
            start,
            end: (start + size).min(range.end),
        })
        .collect()
}

/// A group in [`Grouping::tree`]: how deep it is nested, and whether it is
/// open (its children follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub group: Group,
    pub depth: usize,
    pub open: bool,
}

/// Which groups are open. The lines follow from the number of ranks and of
/// lines available, so that a resized view regroups by itself.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Grouping {
    pub expanded: BTreeSet<Group>,
}

impl Grouping {
    /// The lines for `ranks` ranks in `lines` lines: the top-level groups,
    /// each opened group replaced by its children (recursively).
    pub fn lines(&self, ranks: usize, lines: usize) -> Vec<Group> {
        self.tree(ranks, lines)
            .into_iter()
            .filter(|e| !e.open)
            .map(|e| e.group)
            .collect()
    }

    /// [`Grouping::lines`] with the opened groups too, each before its
    /// children (a viewer's header lines that close them).
    pub fn tree(&self, ranks: usize, lines: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        for g in split(0..ranks, group_size(ranks, lines)) {
            self.push_open(g, 0, &mut out);
        }
        out
    }

    fn push_open(&self, group: Group, depth: usize, out: &mut Vec<Entry>) {
        let open = !group.is_single() && self.expanded.contains(&group);
        out.push(Entry { group, depth, open });
        if open {
            for c in group.children() {
                self.push_open(c, depth + 1, out);
            }
        }
    }

    /// Open a closed group, close an open one (a single rank has nothing to open).
    pub fn toggle(&mut self, g: Group) {
        if g.is_single() {
            return;
        }
        if !self.expanded.remove(&g) {
            self.expanded.insert(g);
        }
    }

    /// Close every group nested in `g` and `g` itself.
    pub fn close(&mut self, g: Group) {
        self.expanded
            .retain(|e| !(e.start >= g.start && e.end <= g.end));
    }
}

impl State {
    /// Whether time in the state is waiting rather than the application's own
    /// code: MPI calls, the OpenMP runtime, barrier and lock waits (the time
    /// POP's useful time leaves out, `crate::pop`; the timeline cannot tell
    /// serial code from idle pool threads, so serial time is not waiting).
    pub fn is_waiting(self) -> bool {
        !matches!(self, State::Serial | State::Compute | State::Task)
    }
}

/// Waiting time of a cell's time per state ([`State::is_waiting`]).
pub fn waiting_ns(time: &[u64; STATES]) -> u64 {
    State::ALL
        .iter()
        .filter(|s| s.is_waiting())
        .map(|&s| time[s as usize])
        .sum()
}

/// One cell of an aggregated line.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCell {
    /// The rank with the most waiting time in the cell (the first in display
    /// order on ties); None when no rank of the group has time in the cell.
    pub worst_rank: Option<u32>,
    /// The worst rank's threads' time per state in the cell.
    pub worst: CellSummary,
    /// Least and most waiting share (waiting / time covered) among the
    /// group's ranks with time in the cell.
    pub wait_min: f64,
    pub wait_max: f64,
}

impl AsRef<CellSummary> for GroupCell {
    /// The worst rank's cell (what a viewer draws).
    fn as_ref(&self) -> &CellSummary {
        &self.worst
    }
}

impl GroupCell {
    /// Most minus least waiting share across the group (0 for one rank).
    pub fn spread(&self) -> f64 {
        (self.wait_max - self.wait_min).max(0.0)
    }
}

/// An aggregated line: its group, its ranks, and its cells over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow {
    pub group: Group,
    /// Rank numbers of the group's ranks, in display order.
    pub ranks: Vec<u32>,
    /// The rank with the most waiting time over the whole window.
    pub worst_rank: Option<u32>,
    pub cells: Vec<GroupCell>,
}

impl GroupRow {
    /// What the line holds: `rank 3`, `ranks 0–15`, or `16 ranks 0…60` when
    /// their numbers are not consecutive (ranks are ordered by host first).
    pub fn ranks_label(&self) -> String {
        ranks_label(&self.ranks)
    }

    /// [`GroupRow::ranks_label`] and, for several ranks, the worst one: `ranks 0–15 worst 7`.
    pub fn label(&self) -> String {
        match (self.ranks.len(), self.worst_rank) {
            (0 | 1, _) | (_, None) => self.ranks_label(),
            (_, Some(w)) => format!("{} worst {w}", self.ranks_label()),
        }
    }
}

/// `rank 3`, `ranks 0–15`, or `16 ranks 0…60` when the numbers are not consecutive.
pub fn ranks_label(ranks: &[u32]) -> String {
    match ranks {
        [] => "no ranks".into(),
        [r] => format!("rank {r}"),
        [first, .., last] => {
            let consecutive = ranks.windows(2).all(|w| w[1] == w[0] + 1);
            if consecutive {
                format!("ranks {first}–{last}")
            } else {
                format!("{} ranks {first}…{last}", ranks.len())
            }
        }
    }
}

/// What an aggregated line is computed from: the ranks in display order and
/// each rank's time per state in the cells of a window. The level-of-detail
/// index answers exactly at any zoom; the coarse overview
/// ([`super::Overview`]) from its bins. One aggregation for both, so that a
/// line means the same whichever is shown.
pub trait RankCells: Sync {
    /// The rows (threads of ranks) in display order: by host, rank, thread.
    fn rows(&self) -> &[super::RowInfo];

    /// The ranks and their rows, in display order (host, rank).
    fn rank_rows(&self) -> &[RankRows];

    /// First start and last end over all rows (rank 0's clock), (0, 0) if empty.
    fn span(&self) -> (i64, i64);

    /// The ranks left out for a damaged part, with their files, in rank
    /// order: in no row of [`RankCells::rank_rows`] (a viewer marks their
    /// lines, [`crate::model::LeftOutPart::says`]).
    fn left_out(&self) -> &[crate::model::LeftOutPart];

    /// The time per state of every thread of the rank at position `pos` of
    /// [`RankCells::rank_rows`], summed, in `columns` equal cells of `[t0, t1)`.
    fn rank_query(&self, pos: usize, t0: i64, t1: i64, columns: usize) -> Vec<CellSummary>;

    /// The line of `group` over `[t0, t1)` in `columns` cells.
    fn aggregate(&self, group: Group, t0: i64, t1: i64, columns: usize) -> GroupRow {
        let ranks = self.rank_rows();
        let end = group.end.min(ranks.len());
        let positions = group.start.min(end)..end;
        let mut cells: Vec<GroupCell> = super::empty_cells(t0, t1, columns)
            .into_iter()
            .map(|worst| GroupCell {
                worst_rank: None,
                worst,
                wait_min: 0.0,
                wait_max: 0.0,
            })
            .collect();
        // (waiting ns in the cell of the worst rank so far) per cell.
        let mut worst_wait = vec![0u64; columns];
        let mut row_worst: Option<(u64, u32)> = None;
        for pos in positions.clone() {
            let rank = ranks[pos].rank;
            let mut total_wait = 0u64;
            let mut covered_any = false;
            for (c, summary) in self
                .rank_query(pos, t0, t1, columns)
                .into_iter()
                .enumerate()
            {
                let covered = summary.covered();
                if covered == 0 {
                    continue;
                }
                covered_any = true;
                let wait = waiting_ns(&summary.time);
                total_wait += wait;
                let share = wait as f64 / covered as f64;
                let cell = &mut cells[c];
                match cell.worst_rank {
                    None => {
                        cell.wait_min = share;
                        cell.wait_max = share;
                    }
                    Some(_) => {
                        cell.wait_min = cell.wait_min.min(share);
                        cell.wait_max = cell.wait_max.max(share);
                    }
                }
                if cell.worst_rank.is_none() || wait > worst_wait[c] {
                    worst_wait[c] = wait;
                    cell.worst_rank = Some(rank);
                    cell.worst = summary;
                }
            }
            if covered_any && row_worst.is_none_or(|(w, _)| total_wait > w) {
                row_worst = Some((total_wait, rank));
            }
        }
        GroupRow {
            group,
            ranks: positions.map(|p| ranks[p].rank).collect(),
            worst_rank: row_worst.map(|(_, r)| r),
            cells,
        }
    }

    /// [`RankCells::aggregate`] of several lines, in parallel.
    fn aggregate_all(&self, groups: &[Group], t0: i64, t1: i64, columns: usize) -> Vec<GroupRow> {
        groups
            .par_iter()
            .map(|&g| self.aggregate(g, t0, t1, columns))
            .collect()
    }
}

impl RankCells for TimelineIndex {
    fn rows(&self) -> &[super::RowInfo] {
        &self.rows
    }

    fn rank_rows(&self) -> &[RankRows] {
        &self.ranks
    }

    fn span(&self) -> (i64, i64) {
        self.span
    }

    fn left_out(&self) -> &[crate::model::LeftOutPart] {
        TimelineIndex::left_out(self)
    }

    fn rank_query(&self, pos: usize, t0: i64, t1: i64, columns: usize) -> Vec<CellSummary> {
        let mut out = super::empty_cells(t0, t1, columns);
        let Some(r) = self.ranks.get(pos) else {
            return out;
        };
        for row in r.rows.clone() {
            for (acc, c) in out.iter_mut().zip(self.query(row, t0, t1, columns)) {
                for s in 0..STATES {
                    acc.time[s] += c.time[s];
                }
            }
        }
        out
    }
}

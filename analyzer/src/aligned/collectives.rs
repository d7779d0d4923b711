//! Collective instances matched across ranks: the k-th collective call on a
//! communicator is the same operation on every member (MPI 4.0 §6.14: all
//! members call collectives on a communicator in the same order, blocking
//! and nonblocking alike).

use std::collections::HashMap;

use super::clock::GlobalNs;
use super::sides::{OUTSIDE_FOCUS, RankSides};

pub use super::endpoints::{is_blocking_collective, is_collective};

/// One rank's part in a collective instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub rank: u32,
    /// Index of the call's row in its rank's rows.
    pub row: usize,
    pub start: GlobalNs,
    pub end: GlobalNs,
    pub callsite: u64,
}

/// One collective operation as every member called it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveInstance {
    pub comm: u64,
    /// Position among the communicator's collectives (0-based).
    pub seq: u64,
    /// The call of the first member (all members agree unless the trace lost rows).
    pub call: u16,
    /// Root as a world rank (`NO_RANK` when none).
    pub root: i32,
    /// By rank.
    pub members: Vec<Member>,
    /// A member made another call at this position (rows lost on a rank).
    pub mismatch: bool,
}

impl CollectiveInstance {
    /// Whether every member made the same call.
    pub fn consistent(&self) -> bool {
        self.members.len() >= 2 && !self.mismatch
    }

    pub fn last_start(&self) -> GlobalNs {
        self.members
            .iter()
            .map(|m| m.start)
            .max()
            .unwrap_or_default()
    }
}

/// Every collective instance, ordered by communicator and sequence number.
/// An instance where members made different calls (a rank that lost rows
/// shifts every later instance) is marked, not trusted.
pub fn match_collectives(ranks: &mut [RankSides]) -> Vec<CollectiveInstance> {
    let mut by: HashMap<(u64, u64), CollectiveInstance> = HashMap::new();
    for rs in ranks.iter_mut() {
        let mut next: HashMap<u64, u64> = HashMap::new();
        for r in std::mem::take(&mut rs.collectives) {
            let k = next.entry(r.comm).or_insert(0);
            let inst = by
                .entry((r.comm, *k))
                .or_insert_with(|| CollectiveInstance {
                    comm: r.comm,
                    seq: *k,
                    call: r.call,
                    root: r.root,
                    members: Vec::new(),
                    mismatch: false,
                });
            *k += 1;
            if inst.call == r.call {
                inst.members.push(Member {
                    rank: rs.rank,
                    row: r.row,
                    start: r.start,
                    end: r.end,
                    callsite: r.callsite,
                });
            } else {
                inst.mismatch = true;
            }
        }
    }
    // Matched over the whole run, kept where a focus kept every member's row.
    let mut out: Vec<CollectiveInstance> = by
        .into_values()
        .filter(|i| i.members.iter().all(|m| m.row != OUTSIDE_FOCUS))
        .collect();
    out.sort_by_key(|i| (i.comm, i.seq));
    for i in &mut out {
        i.members.sort_by_key(|m| m.rank);
    }
    out
}

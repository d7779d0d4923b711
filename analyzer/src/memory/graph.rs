//! Who talks to whom: each rank's peers, its calls that force full
//! connection (Didelot 2014 §3.2) and its communicators, read where the
//! rank's rows are ([`GraphPart::of`]) and put together over the ranks
//! ([`ObservedGraph::of`]).

use hyscope_format::{MpiRecord, mpi_call as c};
use std::collections::{BTreeMap, BTreeSet};

/// Who talks to whom, the calls that force full connection (call and site →
/// ranks and count) and each communicator's members, as the trace shows them.
pub(super) struct ObservedGraph {
    pub peers: BTreeMap<u32, BTreeSet<u32>>,
    pub full_calls: BTreeMap<(u16, u64), (BTreeSet<u32>, u64)>,
    pub comm_members: BTreeMap<u64, BTreeSet<u32>>,
}

/// What the memory model reads of one rank's rows ([`GraphPart::of`], where
/// the rows are): the ranks it talks to, its calls that force full
/// connection (call and canonical site → calls) and the communicators it
/// used besides world and self.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct GraphPart {
    peers: BTreeSet<u32>,
    full_calls: BTreeMap<(u16, u64), u64>,
    comms: BTreeSet<u64>,
}

impl GraphPart {
    pub fn of(rank: u32, rows: &[MpiRecord]) -> GraphPart {
        let mut g = GraphPart::default();
        for r in rows {
            // A message to itself is no connection (the self transport).
            g.peers
                .extend(crate::aligned::endpoints::peers_of(r).filter(|&p| p != rank));
            let forces = matches!(
                r.call,
                c::MPI_Alltoall | c::MPI_Alltoallv | c::MPI_Alltoallw
            ) || (matches!(r.call, c::MPI_Scatterv | c::MPI_Gatherv)
                && r.root == rank as i32);
            if forces {
                *g.full_calls.entry((r.call, r.callsite)).or_default() += 1;
            }
            if r.comm_id > 2 {
                g.comms.insert(r.comm_id);
            }
        }
        g
    }

    /// The same with call sites made canonical by `canon`.
    pub fn canonical(mut self, canon: &dyn Fn(u64) -> u64) -> GraphPart {
        let calls = std::mem::take(&mut self.full_calls);
        for ((call, site), n) in calls {
            *self.full_calls.entry((call, canon(site))).or_default() += n;
        }
        self
    }

    /// A part with these peers and nothing else (the model's tests).
    #[cfg(test)]
    pub(super) fn with_peers(peers: impl IntoIterator<Item = u32>) -> GraphPart {
        GraphPart {
            peers: peers.into_iter().collect(),
            ..GraphPart::default()
        }
    }
}

impl ObservedGraph {
    /// Every rank's part, by rank.
    pub fn of(parts: &BTreeMap<u32, GraphPart>) -> ObservedGraph {
        let mut peers: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        let mut full_calls: BTreeMap<(u16, u64), (BTreeSet<u32>, u64)> = BTreeMap::new();
        let mut comm_members: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        for (&rank, g) in parts {
            peers.insert(rank, g.peers.clone());
            for (&k, &n) in &g.full_calls {
                let e = full_calls.entry(k).or_default();
                e.0.insert(rank);
                e.1 += n;
            }
            for &id in &g.comms {
                comm_members.entry(id).or_default().insert(rank);
            }
        }
        ObservedGraph {
            peers,
            full_calls,
            comm_members,
        }
    }

    /// The ranks that made a call forcing full connection.
    pub fn full_ranks(&self) -> BTreeSet<u32> {
        self.full_calls
            .values()
            .flat_map(|v| v.0.iter().copied())
            .collect()
    }
}

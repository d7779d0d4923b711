//! Which ranks share a node. A rank reaches the peers on its own node
//! through the node's shared memory (Open MPI's vader BTL, MPICH's POSIX
//! shm) and the others through the network transport: the runtime keeps
//! "pools of network and shared-memory buffers" apart (Didelot 2014
//! §3.1.1), and only a connection to another node holds queue pairs
//! (Didelot 2014 Table 3.4 counts N − 1 remote nodes) and network buffers
//! (§3.4); within a node each process has one shared-memory receive queue
//! that the node's other processes write to (Kamal 2013 §3.2.1, MPICH's
//! Nemesis). A node is a host of the trace (each rank's `host`, from its
//! rank file).

use std::collections::BTreeMap;

/// Each rank's node, and the ranks on each node.
pub(super) struct Locality {
    /// Rank → index of its node in `ranks_on`; a rank without a known host
    /// has none.
    node_of: BTreeMap<u32, usize>,
    /// Ranks on each node.
    ranks_on: Vec<u32>,
    n_ranks: u32,
}

/// A rank's connections, split by where the peer is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Split {
    /// Peers on the rank's node.
    pub intra: u32,
    /// Peers on other nodes, or whose node is not known (charged as remote:
    /// the model never leaves out a network connection it cannot rule out).
    pub inter: u32,
}

impl Split {
    pub fn total(self) -> u32 {
        self.intra + self.inter
    }
}

impl Locality {
    /// The nodes of `n_ranks` ranks, from each rank's host (`host_of`; an
    /// empty or missing host is not known).
    pub fn of(n_ranks: u32, host_of: &BTreeMap<u32, &str>) -> Locality {
        let mut hosts: Vec<&str> = Vec::new();
        let mut node_of = BTreeMap::new();
        let mut ranks_on = Vec::new();
        for (&rank, &host) in host_of.range(..n_ranks) {
            if host.is_empty() {
                continue;
            }
            let i = hosts.iter().position(|&h| h == host).unwrap_or_else(|| {
                hosts.push(host);
                ranks_on.push(0);
                hosts.len() - 1
            });
            ranks_on[i] += 1;
            node_of.insert(rank, i);
        }
        Locality {
            node_of,
            ranks_on,
            n_ranks,
        }
    }

    /// Nodes with a known host.
    pub fn nodes(&self) -> usize {
        self.ranks_on.len()
    }

    /// Ranks of the job whose host is not known.
    pub fn unknown_ranks(&self, n_ranks: u32) -> u32 {
        n_ranks - self.node_of.len() as u32
    }

    /// The node of `rank`, when its host is known.
    pub fn node(&self, rank: u32) -> Option<usize> {
        self.node_of.get(&rank).copied()
    }

    /// Whether `a` and `b` are known to be on one node.
    pub fn same_node(&self, a: u32, b: u32) -> bool {
        matches!((self.node(a), self.node(b)), (Some(x), Some(y)) if x == y)
    }

    /// Ranks on the node of `rank`, itself included (1 where its host is
    /// not known).
    pub fn ranks_beside(&self, rank: u32) -> u32 {
        self.node(rank).map_or(1, |i| self.ranks_on[i])
    }

    /// `rank`'s connections to `peers`, by where they are.
    pub fn split(&self, rank: u32, peers: impl IntoIterator<Item = u32>) -> Split {
        let mut s = Split::default();
        for q in peers.into_iter().filter(|&q| q != rank) {
            if self.same_node(rank, q) {
                s.intra += 1;
            } else {
                s.inter += 1;
            }
        }
        s
    }

    /// `rank`'s connections to every other rank of the job.
    pub fn everyone(&self, rank: u32) -> Split {
        let intra = self.ranks_beside(rank) - 1;
        Split {
            intra,
            inter: self.n_ranks.saturating_sub(1 + intra),
        }
    }

    /// Ranks per node of the recorded run: the most on one node, and where
    /// (for the projection's stated assumption).
    pub fn recorded_ranks_per_node(&self, host_of: &BTreeMap<u32, &str>) -> (u32, String) {
        let Some((i, &most)) = self
            .ranks_on
            .iter()
            .enumerate()
            .max_by_key(|&(i, &n)| (n, std::cmp::Reverse(i)))
        else {
            return (1, "as recorded: no rank names its host, 1 assumed".into());
        };
        let host = self
            .node_of
            .iter()
            .find(|&(_, &n)| n == i)
            .and_then(|(r, _)| host_of.get(r))
            .copied()
            .unwrap_or_default();
        let unknown = self.unknown_ranks(self.n_ranks);
        let nodes = self.ranks_on.len();
        let mut source = if nodes == 1 {
            format!("as recorded: {most} on {host}")
        } else {
            format!("as recorded: the most on one of {nodes} nodes, {most} on {host}")
        };
        if unknown > 0 {
            source += &format!("; {unknown} rank(s) without a host counted on other nodes");
        }
        (most, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_split_by_host() {
        let hosts: BTreeMap<u32, &str> = [(0, "a"), (1, "a"), (2, "b"), (3, "")].into();
        let l = Locality::of(5, &hosts);
        assert!(l.same_node(0, 1));
        assert!(!l.same_node(0, 2));
        // Rank 3's host is empty, rank 4 has none: neither is on a known node.
        assert!(!l.same_node(3, 3) && !l.same_node(4, 0));
        assert_eq!(l.split(0, [0, 1, 2, 3, 4]), Split { intra: 1, inter: 3 });
        assert_eq!(l.everyone(0), Split { intra: 1, inter: 3 });
        assert_eq!(l.everyone(2), Split { intra: 0, inter: 4 });
        assert_eq!(l.everyone(4), Split { intra: 0, inter: 4 });
        let (c, why) = l.recorded_ranks_per_node(&hosts);
        assert_eq!(c, 2);
        assert_eq!(
            why,
            "as recorded: the most on one of 2 nodes, 2 on a; 2 rank(s) without a host counted on other nodes"
        );
    }
}

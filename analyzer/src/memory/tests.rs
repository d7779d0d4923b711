//! The footprint of small jobs whose numbers are known by hand.

use super::*;
use hyscope_format::{MpiInfo, RankInfo};

/// Buffers per connection to another node: 32 × 12288 B eager RDMA and
/// Open MPI's per-peer receive queue, 128 × 256 B (Didelot 2014 §3.4).
const CONN: f64 = 425_984.0;
/// Open MPI's default shared receive queues, (2048 + 12288 + 65536) × 1024 B.
const SRQ: f64 = 81_788_928.0;
/// Open MPI 4.1's vader segment per process.
const SHM: f64 = 4_194_304.0;

/// `hosts[r]` is rank r's host; each rank talks to `peers(r)`.
fn footprint(
    hosts: &[&str],
    peers: impl Fn(u32) -> Vec<u32>,
    ranks_per_node: Option<u32>,
) -> MemoryFootprint {
    let mut data = TraceData::default();
    data.manifest.mpi = Some(MpiInfo {
        flavour: "openmpi".into(),
        ..MpiInfo::default()
    });
    let mut run = RunFacts {
        ranks: hosts.len() as u32,
        ..RunFacts::default()
    };
    for (r, &h) in hosts.iter().enumerate() {
        data.manifest.ranks.push(RankInfo {
            rank: r as u32,
            host: h.into(),
            ..RankInfo::default()
        });
        match run.hosts.iter().position(|x| x == h) {
            Some(i) => run.ranks_per_host[i] += 1,
            None => {
                run.hosts.push(h.into());
                run.ranks_per_host.push(1);
            }
        }
    }
    let graph = (0..hosts.len() as u32)
        .map(|r| (r, GraphPart::with_peers(peers(r))))
        .collect();
    let options = AnalyzeOptions {
        projection_ranks: vec![1024],
        memory_per_core: Some(1 << 30),
        ranks_per_node,
        ..AnalyzeOptions::default()
    };
    analyze_memory(&data, &run, &options, &graph, 10)
        .get()
        .cloned()
        .expect("an MPI run's footprint")
}

#[test]
fn a_ring_on_two_nodes_charges_the_network_only_across_them() {
    // Ranks 0, 1 on a and 2, 3 on b; r talks to r − 1 and r + 1: each rank
    // has one peer on its node and one on the other.
    let m = footprint(
        &["a", "a", "b", "b"],
        |r| vec![(r + 3) % 4, (r + 1) % 4],
        None,
    );
    for r in &m.per_rank {
        assert_eq!(
            (
                r.connections_estimated,
                r.intra_node_connections,
                r.inter_node_connections
            ),
            (2, 1, 1),
            "rank {}",
            r.rank
        );
        assert_eq!(r.network_buffer_bytes, CONN + SRQ);
        assert_eq!(r.shm_buffer_bytes, SHM);
        // Both peers were charged network buffers before: 2 × CONN + SRQ.
        assert_eq!(r.buffer_bytes_observed, 86_409_216.0);
    }
    assert_eq!(m.shm_bytes_per_process, SHM);
    assert_eq!(m.bytes_per_connection, CONN);
    // Didelot 2014 Table 3.4 on the ring: 2 RC QPs per node (one remote
    // peer per rank), 1 remote node.
    let rc = m.qp_table.iter().find(|q| q.transport == "RC").unwrap();
    assert_eq!(rc.observed_per_node, 2.0);
    // Projected at the recorded 2 ranks per node: 1 peer on the node, 1 off.
    assert_eq!(m.projection_ranks_per_node, 2);
    assert_eq!(
        m.projection_ranks_per_node_source,
        "as recorded: the most on one of 2 nodes, 2 on a"
    );
    let p = &m.projections[0];
    assert_eq!(
        (
            p.intra_node_connections_per_rank,
            p.inter_node_connections_per_rank
        ),
        (1.0, 1.0)
    );
    assert_eq!(p.total_bytes_per_rank, SHM + SRQ + CONN + 32_896.0);

    // One rank per node, as the user says: both peers remote, no segment.
    let m = footprint(
        &["a", "a", "b", "b"],
        |r| vec![(r + 3) % 4, (r + 1) % 4],
        Some(1),
    );
    assert_eq!(m.projection_ranks_per_node, 1);
    assert_eq!(
        m.projection_ranks_per_node_source,
        "given (recorded: the most on one of 2 nodes, 2 on a)"
    );
    let p = &m.projections[0];
    assert_eq!(p.inter_node_connections_per_rank, 2.0);
    assert_eq!(p.total_bytes_per_rank, SRQ + 2.0 * CONN + 2.0 * 32_896.0);
}

#[test]
fn a_pair_on_one_node_has_no_network_buffers() {
    let m = footprint(&["vm", "vm"], |r| vec![1 - r], None);
    for r in &m.per_rank {
        assert_eq!((r.intra_node_connections, r.inter_node_connections), (1, 0));
        assert_eq!(r.network_buffer_bytes, 0.0);
        assert_eq!(r.buffer_bytes_observed, SHM);
    }
    assert!(
        m.qp_table
            .iter()
            .all(|q| q.transport == "UD" || q.observed_per_node == 0.0)
    );
    assert_eq!(m.projection_ranks_per_node_source, "as recorded: 2 on vm");
    let p = &m.projections[0];
    assert_eq!(p.network_buffer_bytes_per_rank + p.qp_bytes_per_rank, 0.0);
    assert_eq!(p.total_bytes_per_rank, SHM);
}

#[test]
fn a_rank_without_a_host_is_charged_as_remote() {
    // Rank 1's rank file is missing (no host): its connection with rank 0
    // cannot be shown to stay on the node.
    let m = footprint(&["vm", ""], |r| vec![1 - r], None);
    let r0 = &m.per_rank[0];
    assert_eq!(
        (r0.intra_node_connections, r0.inter_node_connections),
        (0, 1)
    );
    assert_eq!(r0.network_buffer_bytes, CONN + SRQ);
    assert_eq!(r0.shm_buffer_bytes, 0.0);
    assert!(
        m.projection_ranks_per_node_source
            .ends_with("1 rank(s) without a host counted on other nodes"),
        "{}",
        m.projection_ranks_per_node_source
    );
}

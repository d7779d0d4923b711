//! The footprint per rank projected to larger jobs at C ranks per node:
//! a projected rank's peers on its node cost the shared-memory transport's
//! buffers (`super::shm`, per process), the others the network's buffers
//! and queue pairs (`super::network`, per connection; Didelot 2014
//! Table 3.4 and §3.4), plus the communicators' group maps (Kamal 2013
//! §3.1). Each byte is in one of these; the total is their sum.

use super::network::NetworkBuffers;
use super::shm::ShmBuffers;
use crate::model::Projection;
use crate::options::AnalyzeOptions;

/// How the footprint grows with the number of ranks.
pub(super) struct Growth {
    /// Every rank connects to every other (calls forcing full connection,
    /// or all-to-all point to point).
    pub grows: bool,
    /// Otherwise, the most peers a rank has on its node and on other nodes
    /// (each the busiest rank's), kept at any job size.
    pub max_intra: u32,
    pub max_inter: u32,
    /// Communicators of the world's size (their group maps grow with N).
    pub world_sized: f64,
    /// Group-map bytes per rank of the other communicators.
    pub fixed_group: f64,
    pub mem_per_core: Option<u64>,
}

/// Connections of a rank of a job of `ranks` ranks, `per_node` on each
/// node: (on its node, to other nodes).
pub(super) fn projected_split(g: &Growth, ranks: u64, per_node: u64) -> (u64, u64) {
    let beside = per_node.clamp(1, ranks.max(1));
    let others = ranks.saturating_sub(1);
    if g.grows {
        return (beside - 1, ranks.saturating_sub(beside));
    }
    // A constant neighbourhood keeps its peers and where they are, but a
    // node holds only C − 1 of them: the rest are on other nodes.
    let peers = (g.max_intra as u64 + g.max_inter as u64).min(others);
    let intra = (g.max_intra as u64).min(beside - 1);
    let inter = (peers - intra.min(peers)).min(ranks.saturating_sub(beside));
    (peers - inter, inter)
}

/// One projection per rank count of `options.projection_ranks`, at
/// `per_node` ranks per node.
pub(super) fn projections(
    options: &AnalyzeOptions,
    per_node: u32,
    network: &NetworkBuffers,
    shm: &ShmBuffers,
    g: &Growth,
) -> Vec<Projection> {
    let p = &options.buffers;
    let hf = options.hcas_per_node.max(1) as f64;
    let c = per_node.max(1) as u64;
    let cf = c as f64;
    options
        .projection_ranks
        .iter()
        .map(|&r| {
            let nodes_p = r.div_ceil(c).max(1);
            let (intra, inter) = projected_split(g, r, c);
            let (intra, inter) = (intra as f64, inter as f64);
            let shm_bytes = shm.bytes(c.min(r) as f64);
            let network_bytes = network.bytes(r, inter);
            let buffer = network_bytes.map(|n| shm_bytes + n);
            let qp = network.qp(r, inter, hf);
            let group = g.world_sized * r as f64 * p.group_entry_bytes as f64 + g.fixed_group;
            // `bytes_per_connection` holds no QP memory: `qp` is the only QP
            // share. No total where the network's share is not modelled.
            let total = buffer.zip(qp).map(|(b, q)| b + q + group);
            let remote_nodes = (nodes_p - 1) as f64;
            Projection {
                ranks: r,
                nodes: nodes_p,
                connections_per_rank: intra + inter,
                intra_node_connections_per_rank: intra,
                inter_node_connections_per_rank: inter,
                qp_rc_per_node: if g.grows {
                    remote_nodes * cf * cf * hf
                } else {
                    inter * cf * hf
                },
                qp_xrc_per_node: if g.grows {
                    remote_nodes * cf * hf
                } else {
                    inter.min(remote_nodes) * cf * hf
                },
                qp_ud_per_node: cf * hf,
                buffer_bytes_per_rank: buffer,
                shm_bytes_per_rank: shm_bytes,
                network_buffer_bytes_per_rank: network_bytes,
                network_transport: network.label_at(r),
                qp_bytes_per_rank: qp,
                group_bytes_per_rank: group,
                total_bytes_per_rank: total,
                exceeds_memory_per_core: g.mem_per_core.zip(total).map(|(m, t)| t > m as f64),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::network::OPENMPI_DEFAULT_RECEIVE_QUEUES;

    /// By hand, Didelot 2014 §3.4 and Open MPI's default receive queues:
    /// per connection to another node 32 × 12288 B eager RDMA + 128 × 256 B
    /// per-peer queue = 425 984 B of buffers; a queue pair 512 × 64 + 128 =
    /// 32 896 B; the shared queues (2048 + 12288 + 65536) × 1024 =
    /// 81 788 928 B per rank with such a connection. Shared memory: Open
    /// MPI 4.1's vader segment, 4 194 304 B per process on a node with
    /// other ranks.
    const CONN: f64 = 425_984.0;
    const QP: f64 = 32_896.0;
    const SRQ: f64 = 81_788_928.0;
    const SHM: f64 = 4_194_304.0;

    /// The default model at `r` ranks, `c` per node, `h` HCAs, no communicators.
    fn projected(r: u64, c: u32, h: u32, g: Growth) -> Projection {
        let options = AnalyzeOptions {
            projection_ranks: vec![r],
            hcas_per_node: h,
            ..AnalyzeOptions::default()
        };
        let network = NetworkBuffers::new(&options.buffers, OPENMPI_DEFAULT_RECEIVE_QUEUES, "test");
        assert_eq!(
            (network.bytes_per_connection, network.rq_shared as f64),
            (Some(CONN), SRQ)
        );
        let shm = ShmBuffers::of(None);
        assert_eq!(shm.bytes_per_process, SHM);
        let p = projections(&options, c, &network, &shm, &g).remove(0);
        assert_eq!(
            p.total_bytes_per_rank.unwrap(),
            p.buffer_bytes_per_rank.unwrap()
                + p.qp_bytes_per_rank.unwrap()
                + p.group_bytes_per_rank
        );
        assert_eq!(
            p.buffer_bytes_per_rank.unwrap(),
            p.shm_bytes_per_rank + p.network_buffer_bytes_per_rank.unwrap()
        );
        p
    }

    fn growth(grows: bool, max_intra: u32, max_inter: u32) -> Growth {
        Growth {
            grows,
            max_intra,
            max_inter,
            world_sized: 0.0,
            fixed_group: 0.0,
            mem_per_core: None,
        }
    }

    #[test]
    fn fully_connected_peers_on_the_node_cost_shared_memory_not_the_network() {
        // One rank per node: all 1023 connections are remote, one QP each,
        // no shared memory.
        let p = projected(1024, 1, 1, growth(true, 0, 0));
        assert_eq!(p.connections_per_rank, 1023.0);
        assert_eq!(
            (
                p.intra_node_connections_per_rank,
                p.inter_node_connections_per_rank
            ),
            (0.0, 1023.0)
        );
        assert_eq!(p.shm_bytes_per_rank, 0.0);
        assert_eq!(p.network_buffer_bytes_per_rank, Some(SRQ + 1023.0 * CONN));
        assert_eq!(p.qp_bytes_per_rank, Some(1023.0 * QP));
        // total = SRQ + (N − 1) × (buffers + one QP) = 551 223 168 B.
        assert_eq!(p.total_bytes_per_rank, Some(551_223_168.0));

        // 16 ranks per node, 2 HCAs: 15 peers on the node through the
        // segment, 1008 on the other 63 nodes with 2 QPs each.
        let p = projected(1024, 16, 2, growth(true, 0, 0));
        assert_eq!(
            (
                p.intra_node_connections_per_rank,
                p.inter_node_connections_per_rank
            ),
            (15.0, 1008.0)
        );
        assert_eq!(p.nodes, 64);
        assert_eq!(p.shm_bytes_per_rank, SHM);
        assert_eq!(p.network_buffer_bytes_per_rank, Some(SRQ + 1008.0 * CONN));
        assert_eq!(p.qp_bytes_per_rank, Some(1008.0 * 2.0 * QP));
        // 4 194 304 + 81 788 928 + 429 391 872 + 66 318 336 B.
        assert_eq!(p.total_bytes_per_rank, Some(581_693_440.0));
        // Didelot 2014 Table 3.4, RC fully connected: (N − 1) × C² × H.
        assert_eq!(p.qp_rc_per_node, 63.0 * 256.0 * 2.0);
    }

    #[test]
    fn a_neighbourhood_on_one_node_needs_no_network() {
        // The 2-rank ping-pong of one node, projected at 2 ranks per node:
        // each rank's one peer stays on its node. Before intra-node peers
        // were told apart, its connection was charged 425 984 B of network
        // buffers, the 81 788 928 B of shared receive queues and a queue pair.
        let p = projected(1024, 2, 1, growth(false, 1, 0));
        assert_eq!(
            (
                p.intra_node_connections_per_rank,
                p.inter_node_connections_per_rank
            ),
            (1.0, 0.0)
        );
        assert_eq!(p.network_buffer_bytes_per_rank, Some(0.0));
        assert_eq!(p.qp_bytes_per_rank, Some(0.0));
        assert_eq!((p.qp_rc_per_node, p.qp_xrc_per_node), (0.0, 0.0));
        assert_eq!(p.total_bytes_per_rank, Some(SHM));

        // A halo of 2 peers on the node and 2 on others, at 2 ranks per
        // node: the node holds 1 of them, the other 3 are remote.
        let p = projected(32_768, 2, 1, growth(false, 2, 2));
        assert_eq!(
            (
                p.intra_node_connections_per_rank,
                p.inter_node_connections_per_rank
            ),
            (1.0, 3.0)
        );
        assert_eq!(
            p.total_bytes_per_rank,
            Some(SHM + SRQ + 3.0 * CONN + 3.0 * QP)
        );
        // At 1 rank per node every peer is remote and no segment is mapped.
        let p = projected(32_768, 1, 1, growth(false, 2, 2));
        assert_eq!(p.inter_node_connections_per_rank, 4.0);
        assert_eq!(p.total_bytes_per_rank, Some(SRQ + 4.0 * CONN + 4.0 * QP));
        // A job of one node: everything on it.
        let p = projected(4, 8, 1, growth(false, 2, 2));
        assert_eq!(
            (
                p.intra_node_connections_per_rank,
                p.inter_node_connections_per_rank
            ),
            (3.0, 0.0)
        );
        assert_eq!(p.total_bytes_per_rank, Some(SHM));
    }
}

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

/// Open MPI's ob1 PML over the openib BTL, as a 1.8 trace records it.
fn openib() -> MpiInfo {
    MpiInfo {
        flavour: "openmpi".into(),
        components: ["btl_openib", "btl_self", "btl_vader", "pml_ob1"]
            .map(String::from)
            .to_vec(),
        ..MpiInfo::default()
    }
}

/// `hosts[r]` is rank r's host; each rank talks to `peers(r)`; Open MPI over openib.
fn footprint(
    hosts: &[&str],
    peers: impl Fn(u32) -> Vec<u32>,
    ranks_per_node: Option<u32>,
) -> MemoryFootprint {
    footprint_of(openib(), hosts, peers, ranks_per_node)
}

/// The same, of the MPI `mpi`.
fn footprint_of(
    mpi: MpiInfo,
    hosts: &[&str],
    peers: impl Fn(u32) -> Vec<u32>,
    ranks_per_node: Option<u32>,
) -> MemoryFootprint {
    let manifest = hyscope_format::Manifest {
        mpi: Some(mpi),
        ..Default::default()
    };
    footprint_in(manifest, hosts, peers, ranks_per_node)
}

/// The same, of the run `manifest` describes (its MPI, its samplers).
fn footprint_in(
    manifest: hyscope_format::Manifest,
    hosts: &[&str],
    peers: impl Fn(u32) -> Vec<u32>,
    ranks_per_node: Option<u32>,
) -> MemoryFootprint {
    footprint_at(manifest, hosts, peers, ranks_per_node, &[1024])
}

/// The same, projected to jobs of `projected` ranks.
fn footprint_at(
    manifest: hyscope_format::Manifest,
    hosts: &[&str],
    peers: impl Fn(u32) -> Vec<u32>,
    ranks_per_node: Option<u32>,
    projected: &[u64],
) -> MemoryFootprint {
    let mut data = TraceData {
        manifest,
        ..TraceData::default()
    };
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
        projection_ranks: projected.to_vec(),
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
        assert_eq!(r.network_buffer_bytes, Some(CONN + SRQ));
        assert_eq!(r.shm_buffer_bytes, SHM);
        // Both peers were charged network buffers before: 2 × CONN + SRQ.
        assert_eq!(r.buffer_bytes_observed, Some(86_409_216.0));
    }
    assert_eq!(m.shm_bytes_per_process, SHM);
    assert_eq!(m.bytes_per_connection, Some(CONN));
    assert_eq!(m.network_transport, "Open MPI openib BTL");
    assert_eq!(m.network_not_modelled, None);
    assert!(m.network_queue_pairs);
    // Over queue pairs, the advice names the transports that share them.
    let advice = crate::findings::memory_advice(&m, &m.projections[0]);
    assert!(advice.contains("XRC/UD or shared vrails"), "{advice}");
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
    assert_eq!(p.total_bytes_per_rank, Some(SHM + SRQ + CONN + 32_896.0));

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
    assert_eq!(
        p.total_bytes_per_rank,
        Some(SRQ + 2.0 * CONN + 2.0 * 32_896.0)
    );
}

#[test]
fn a_pair_on_one_node_has_no_network_buffers() {
    let m = footprint(&["vm", "vm"], |r| vec![1 - r], None);
    for r in &m.per_rank {
        assert_eq!((r.intra_node_connections, r.inter_node_connections), (1, 0));
        assert_eq!(r.network_buffer_bytes, Some(0.0));
        assert_eq!(r.buffer_bytes_observed, Some(SHM));
    }
    assert!(
        m.qp_table
            .iter()
            .all(|q| q.transport == "UD" || q.observed_per_node == 0.0)
    );
    assert_eq!(m.projection_ranks_per_node_source, "as recorded: 2 on vm");
    let p = &m.projections[0];
    assert_eq!(
        (p.network_buffer_bytes_per_rank, p.qp_bytes_per_rank),
        (Some(0.0), Some(0.0))
    );
    assert_eq!(p.total_bytes_per_rank, Some(SHM));
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
    assert_eq!(r0.network_buffer_bytes, Some(CONN + SRQ));
    assert_eq!(r0.shm_buffer_bytes, 0.0);
    assert!(
        m.projection_ranks_per_node_source
            .ends_with("1 rank(s) without a host counted on other nodes"),
        "{}",
        m.projection_ranks_per_node_source
    );
}

/// MPICH over libfabric, which no model describes.
fn mpich_ofi() -> MpiInfo {
    MpiInfo {
        flavour: "mpich".into(),
        library_version: "MPICH Version:\t4.1\nMPICH Device:\tch4:ofi\n".into(),
        ..MpiInfo::default()
    }
}

#[test]
fn a_transport_without_a_model_gets_no_network_figure() {
    // The ring across two nodes: each rank has a peer on the other node.
    // Before, MPICH's libfabric connections were charged Open MPI's openib
    // receive queues: CONN + SRQ per rank.
    let m = footprint_of(
        mpich_ofi(),
        &["a", "a", "b", "b"],
        |r| vec![(r + 3) % 4, (r + 1) % 4],
        None,
    );
    assert_eq!(m.bytes_per_connection, None);
    assert_eq!(
        m.network_not_modelled.as_deref(),
        Some("network buffers: not modelled for MPICH ch4:ofi (libfabric)")
    );
    for r in &m.per_rank {
        assert_eq!(r.network_buffer_bytes, None, "rank {}", r.rank);
        assert_eq!(r.buffer_bytes_observed, None, "rank {}", r.rank);
        // Shared memory is still MPICH's own (its POSIX iqueue).
        assert!(r.shm_buffer_bytes > 0.0);
    }
    let p = &m.projections[0];
    assert_eq!(p.network_buffer_bytes_per_rank, None);
    assert_eq!(p.qp_bytes_per_rank, None);
    assert_eq!(p.total_bytes_per_rank, None);
    assert_eq!(p.exceeds_memory_per_core, None);
    // Its parameters name nothing of the network's.
    assert!(m.parameters.iter().all(|q| !q.source.contains("openib")));

    // On one node there is no connection to another: no network buffers,
    // whatever the transport.
    let m = footprint_of(mpich_ofi(), &["vm", "vm"], |r| vec![1 - r], None);
    for r in &m.per_rank {
        assert_eq!(r.network_buffer_bytes, Some(0.0));
    }
    assert_eq!(
        m.projections[0].total_bytes_per_rank,
        Some(m.shm_bytes_per_process)
    );
}

#[test]
fn tcp_between_nodes_costs_each_connection_its_endpoint_cache() {
    // This machine's Open MPI as format 1.8 records it: ob1 over tcp. Its
    // tcp BTL mallocs btl_tcp_endpoint_cache (30 720 B by default) per
    // connection, and has no receive queue or queue pair.
    let mut mpi = MpiInfo {
        flavour: "openmpi".into(),
        components: ["btl_self", "btl_tcp", "btl_vader", "pml_ob1"]
            .map(String::from)
            .to_vec(),
        ..MpiInfo::default()
    };
    let ring = |r: u32| vec![(r + 3) % 4, (r + 1) % 4];
    let m = footprint_of(mpi.clone(), &["a", "a", "b", "b"], ring, None);
    assert_eq!(m.network_transport, "TCP (Open MPI ob1, tcp BTL)");
    assert_eq!(m.network_not_modelled, None);
    assert!(!m.network_queue_pairs);
    assert_eq!(m.bytes_per_connection, Some(30_720.0));
    for r in &m.per_rank {
        // One peer on the other node.
        assert_eq!(r.inter_node_connections, 1);
        assert_eq!(r.network_buffer_bytes, Some(30_720.0));
    }
    let p = &m.projections[0];
    assert_eq!(p.inter_node_connections_per_rank, 1.0);
    assert_eq!(
        (p.network_buffer_bytes_per_rank, p.qp_bytes_per_rank),
        (Some(30_720.0), Some(0.0))
    );
    assert_eq!(p.total_bytes_per_rank, Some(SHM + 30_720.0));
    assert!(m.parameters.iter().all(|q| !q.source.contains("openib")));
    // Where this exceeds the memory per core, the advice is no InfiniBand
    // transport's: TCP has no XRC, UD or shared vrails.
    let advice = crate::findings::memory_advice(&m, p);
    assert!(!advice.contains("XRC"), "{advice}");
    assert!(
        advice.contains("over TCP (Open MPI ob1, tcp BTL)"),
        "{advice}"
    );

    // The run's own settings: 64 KiB caches over 2 links.
    mpi.control_variables = [("btl_tcp_endpoint_cache", "65536"), ("btl_tcp_links", "2")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    let m = footprint_of(mpi, &["a", "a", "b", "b"], ring, None);
    assert_eq!(m.bytes_per_connection, Some(131_072.0));
    assert!(
        m.parameters[0]
            .source
            .contains("manifest: btl_tcp_endpoint_cache"),
        "{:?}",
        m.parameters
    );
}

/// MPICH over UCX with `env` on a node whose RDMA devices the `rdma`
/// sampler named in `reason`.
fn ucx_run(env: &[(&str, &str)], reason: &str) -> hyscope_format::Manifest {
    hyscope_format::Manifest {
        mpi: Some(MpiInfo {
            flavour: "mpich".into(),
            library_version: "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\n".into(),
            environment: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..MpiInfo::default()
        }),
        samplers: vec![hyscope_format::SamplerInfo {
            name: "rdma".into(),
            available: false,
            reason: reason.into(),
            ranks: vec![],
        }],
        ..Default::default()
    }
}

const MLX5: &str = "RDMA devices mlx5_0 present but the `rdma` tool (iproute2) is not installed";

/// UCX 1.20's defaults, by hand: rc and dc receive into 4095 × 8256 B
/// (`UCX_RC_RX_QUEUE_LEN`, `UCX_RC_SEG_SIZE`) and send from a first pool
/// chunk of 1024 × 8256 B (`UCX_IB_TX_BUFS_GROW`).
const UCX_RC_SRQ: f64 = 33_808_320.0;
const UCX_RC_POOL: f64 = 8_454_144.0;
/// rc's QP per endpoint, the model's assumption (512 × 64 + 128 B).
const UCX_RC_QP: f64 = 32_896.0;
/// dc's 32 DCIs (`UCX_DC_MLX5_NUM_DCI`) of 128 WQEs, each 4 × 128 × 64 B.
const UCX_DCIS: f64 = 1_048_576.0;
/// ud: 4096 receives and 1024 send buffers of 4096 + 40 B; one QP of 256
/// WQEs, 1024 × 64 B.
const UCX_UD_RX: f64 = 16_941_056.0;
const UCX_UD_POOL: f64 = 4_235_264.0;
const UCX_UD_QP: f64 = 65_536.0;

/// Every rank talks to every other, two ranks per node.
fn everyone(r: u32) -> Vec<u32> {
    (0..4).filter(|&p| p != r).collect()
}

#[test]
fn ucx_takes_rc_up_to_256_ranks_and_dc_above_on_mlx5() {
    let m = footprint_at(
        ucx_run(&[], MLX5),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[64, 256, 257, 4096],
    );
    assert!(
        m.network_transport.starts_with(
            "UCX rc (MPICH ch4:ucx), jobs of at most 256 ranks (UCX_RC_MAX_NUM_EPS); above, UCX dc_mlx5 (MPICH ch4:ucx)"
        ),
        "{}",
        m.network_transport
    );
    assert_eq!(m.network_not_modelled, None);
    assert!(m.network_queue_pairs);
    let rows: Vec<_> = m
        .projections
        .iter()
        .map(|p| {
            (
                p.ranks,
                p.inter_node_connections_per_rank,
                p.network_transport.as_deref(),
                p.network_buffer_bytes_per_rank,
                p.qp_bytes_per_rank,
            )
        })
        .collect();
    let proc = Some(UCX_RC_SRQ + UCX_RC_POOL);
    assert_eq!(
        rows,
        [
            // rc: one QP per endpoint on another node (all but 2 ranks).
            (64, 62.0, Some("UCX rc"), proc, Some(62.0 * UCX_RC_QP)),
            (256, 254.0, Some("UCX rc"), proc, Some(254.0 * UCX_RC_QP)),
            // dc: the same receive queue and pool, 32 DCIs whatever the peers.
            (257, 255.0, Some("UCX dc"), proc, Some(UCX_DCIS)),
            (4096, 4094.0, Some("UCX dc"), proc, Some(UCX_DCIS)),
        ]
    );
    // Before: 257 and 4096 ranks read "not modelled".
    assert!(
        m.projections
            .iter()
            .all(|p| p.total_bytes_per_rank.is_some())
    );
    let names: Vec<&str> = m.parameters.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"UCX dc initiator QPs per process"),
        "{names:?}"
    );
}

#[test]
fn ucx_settings_change_dc_and_ud_as_they_change_ucx() {
    // The run's settings: fewer DCIs; rc's receive queue length, which dc
    // reads too (its table nests rc's).
    let m = footprint_at(
        ucx_run(
            &[
                ("UCX_DC_MLX5_NUM_DCI", "8"),
                ("UCX_RC_RX_QUEUE_LEN", "1024"),
            ],
            MLX5,
        ),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[4096],
    );
    let p = &m.projections[0];
    assert_eq!(p.qp_bytes_per_rank, Some(8.0 * 32_768.0));
    assert_eq!(
        p.network_buffer_bytes_per_rank,
        Some(1024.0 * 8256.0 + UCX_RC_POOL)
    );
    // dc left out by UCX_TLS: ud_mlx5 above 256 ranks, rc below.
    let m = footprint_at(
        ucx_run(&[("UCX_TLS", "rc,ud,sm,self")], MLX5),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[256, 257, 4096],
    );
    let rows: Vec<_> = m
        .projections
        .iter()
        .map(|p| {
            (
                p.network_transport.as_deref(),
                p.network_buffer_bytes_per_rank,
                p.qp_bytes_per_rank,
            )
        })
        .collect();
    let ud = (
        Some("UCX ud"),
        Some(UCX_UD_RX + UCX_UD_POOL),
        Some(UCX_UD_QP),
    );
    assert_eq!(
        rows,
        [
            (
                Some("UCX rc"),
                Some(UCX_RC_SRQ + UCX_RC_POOL),
                Some(254.0 * UCX_RC_QP)
            ),
            ud,
            ud
        ]
    );
    // A device that is not mlx5 has no dc: ud (ud_verbs, whose send queue
    // the provider sizes: no QP memory claimed).
    let m = footprint_at(
        ucx_run(
            &[],
            "RDMA devices qedr0 present but the `rdma` tool (iproute2) is not installed",
        ),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[4096],
    );
    let p = &m.projections[0];
    assert_eq!(p.network_transport.as_deref(), Some("UCX ud"));
    assert_eq!(
        p.network_buffer_bytes_per_rank,
        Some(UCX_UD_RX + UCX_UD_POOL)
    );
    assert_eq!(p.qp_bytes_per_rank, Some(0.0));
    // rc alone: UCX has no scalable transport to take, rc at every size.
    let m = footprint_at(
        ucx_run(&[("UCX_TLS", "rc,sm,self")], MLX5),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[4096],
    );
    let p = &m.projections[0];
    assert_eq!(p.network_transport.as_deref(), Some("UCX rc"));
    assert_eq!(p.qp_bytes_per_rank, Some(4094.0 * UCX_RC_QP));
    // Devices not named (the probe failed): dc or ud is not known, so
    // above 256 ranks no figure; rc's below.
    let m = footprint_at(
        ucx_run(
            &[],
            "`/usr/sbin/rdma res show qp` failed (RDMA netlink unavailable or not permitted)",
        ),
        &["a", "a", "b", "b"],
        everyone,
        None,
        &[256, 257],
    );
    assert!(m.projections[0].total_bytes_per_rank.is_some());
    assert_eq!(m.projections[1].network_transport, None);
    assert_eq!(m.projections[1].total_bytes_per_rank, None);
    assert!(
        m.network_transport
            .contains("does not name rank 0's RDMA devices")
    );
}

#[test]
fn ucx_rc_is_modelled_only_at_the_sizes_ucx_selects_it() {
    // MPICH over UCX on nodes with an RDMA device: UCX's rc transport, one
    // shared receive queue of 4095 × 8256 B and a send pool of 1024 × 8256 B
    // per process and a queue pair per endpoint, but only for jobs of at
    // most UCX_RC_MAX_NUM_EPS (256) ranks: above, UCX takes dc.
    let ucx = |env: &[(&str, &str)]| ucx_run(env, MLX5);
    let ring = |r: u32| vec![(r + 3) % 4, (r + 1) % 4];
    let srq = UCX_RC_SRQ + UCX_RC_POOL;
    let m = footprint_in(ucx(&[]), &["a", "a", "b", "b"], ring, None);
    assert!(
        m.network_transport
            .starts_with("UCX rc (MPICH ch4:ucx), jobs of at most 256 ranks")
    );
    assert_eq!(m.network_not_modelled, None);
    // The recorded 4 ranks: rc, one peer on the other node each.
    for r in &m.per_rank {
        assert_eq!(r.network_buffer_bytes, Some(srq), "rank {}", r.rank);
    }
    // 1024 ranks: not rc but dc (before: rc's, as if UCX kept it).
    let p = &m.projections[0];
    assert_eq!(p.ranks, 1024);
    assert!(p.inter_node_connections_per_rank > 0.0);
    assert_eq!(
        (
            p.network_transport.as_deref(),
            p.network_buffer_bytes_per_rank,
            p.qp_bytes_per_rank,
        ),
        (Some("UCX dc"), Some(srq), Some(UCX_DCIS))
    );
    // Told to keep rc at any size, UCX does: rc's figures.
    let m = footprint_in(
        ucx(&[("UCX_RC_MAX_NUM_EPS", "inf")]),
        &["a", "a", "b", "b"],
        ring,
        None,
    );
    let p = &m.projections[0];
    assert_eq!(p.network_transport.as_deref(), Some("UCX rc"));
    assert_eq!(p.network_buffer_bytes_per_rank, Some(srq));
    assert_eq!(p.qp_bytes_per_rank, Some(UCX_RC_QP));
    // A limit the run set is the one applied.
    let m = footprint_in(
        ucx(&[("UCX_RC_MAX_NUM_EPS", "2048")]),
        &["a", "a", "b", "b"],
        ring,
        None,
    );
    assert!(m.projections[0].total_bytes_per_rank.is_some());
    assert!(m.network_transport.contains("at most 2048 ranks"));
}

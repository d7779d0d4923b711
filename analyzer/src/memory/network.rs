//! The network transport's buffers, by the transport the run used between
//! nodes (`super::transport`): Open MPI's openib BTL has, per connection to
//! a peer on another node, its eager-RDMA slots (Didelot 2014 §3.4) and its
//! per-peer receive queue, and per process its shared receive queues (Open
//! MPI's receive-queue specs); UCX over RDMA devices (rc, dc, ud) has
//! buffers and queues per process, and for rc a queue pair per endpoint
//! (`super::ucx`); Open MPI's
//! tcp BTL reads each connection's socket through an endpoint cache of its
//! own (`btl_tcp_endpoint_cache`, allocated when the connection is made:
//! `btl_tcp_endpoint.c`); UCX over TCP has no network buffers per
//! connection of the library's own. Any
//! other transport is not modelled: its figures are `None`, never another
//! library's defaults. Peers on the rank's own node cost none of these
//! (`super::shm`).

pub(super) use super::buffers::NetworkBuffers;
use super::buffers::qp_param;
use super::shm::param;
use super::transport::{self, Transport};
use crate::options::BufferParams;
use crate::trace_data::TraceData;

/// Open MPI 4.1's default `btl_openib_receive_queues`: one per-peer queue (P)
/// and three shared receive queues (S), each `size,count,...`.
pub const OPENMPI_DEFAULT_RECEIVE_QUEUES: &str =
    "P,128,256,192,128:S,2048,1024,1008,64:S,12288,1024,1008,64:S,65536,1024,1008,64";

/// Open MPI 4.1's default `btl_tcp_endpoint_cache`: bytes per TCP connection.
const OPENMPI_TCP_ENDPOINT_CACHE: u64 = 30_720;

/// Why a TCP connection's socket buffers are left out: they are the
/// kernel's memory, not the process's, filled only with the data queued
/// on the socket, up to limits the trace does not record.
const KERNEL_SOCKET_BUFFERS: &str = "the kernel's socket buffers: kernel memory, not the process's, holding only the data queued on each socket, up to net.ipv4.tcp_rmem/tcp_wmem (Linux defaults 131072 B receive and 16384 B send to start, autotuned up to 6 MiB and 4 MiB; the recording host's values are not recorded)";

/// (per-peer bytes, shared bytes) of an Open MPI receive-queue spec.
pub fn receive_queue_bytes(spec: &str) -> Option<(u64, u64)> {
    let mut per_peer = 0u64;
    let mut shared = 0u64;
    for q in spec.split(':').filter(|q| !q.trim().is_empty()) {
        let f: Vec<&str> = q.split(',').map(str::trim).collect();
        let size: u64 = f.get(1)?.parse().ok()?;
        let count: u64 = f.get(2)?.parse().ok()?;
        match f[0] {
            "P" => per_peer += size * count,
            "S" | "X" => shared += size * count,
            _ => return None,
        }
    }
    Some((per_peer, shared))
}

impl NetworkBuffers {
    pub fn of(data: &TraceData, p: &BufferParams) -> NetworkBuffers {
        let mpi = data.manifest.mpi.as_ref();
        match transport::of(&data.manifest) {
            Transport::OpenIb => {
                // Receive queues: the run's, else Open MPI's default.
                let (rq_spec, rq_source) = mpi
                    .and_then(|m| m.receive_queues.iter().next())
                    .map(|(k, v)| (v.clone(), format!("manifest: {k}")))
                    .unwrap_or_else(|| {
                        (
                            OPENMPI_DEFAULT_RECEIVE_QUEUES.to_string(),
                            "Open MPI 4.1 default btl_openib_receive_queues".to_string(),
                        )
                    });
                NetworkBuffers::new(p, &rq_spec, &rq_source)
            }
            Transport::UcxRdma(u) => super::ucx::model(&u, mpi.map(|m| &m.environment), p),
            Transport::OpenMpiTcp => {
                // The run's settings, else Open MPI's defaults.
                let cvar = |name: &str, default: u64| {
                    mpi.and_then(|m| m.control_variables.get(name))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map_or((default, format!("Open MPI 4.1 default {name}")), |v| {
                            (v, format!("manifest: {name}"))
                        })
                };
                let (cache, cache_src) = cvar("btl_tcp_endpoint_cache", OPENMPI_TCP_ENDPOINT_CACHE);
                let (links, links_src) = cvar("btl_tcp_links", 1);
                let links = links.max(1);
                let per_connection = cache * links;
                NetworkBuffers {
                    parameters: vec![param(
                        "TCP endpoint cache per connection",
                        per_connection as f64,
                        format!(
                            "{cache} B ({cache_src}) × {links} link(s) ({links_src}): Open MPI's tcp BTL reads each connection's socket through a buffer of its own, allocated when the connection is made; per connection to another node (its fragment free lists are not modelled, nor {KERNEL_SOCKET_BUFFERS})"
                        ),
                    )],
                    bytes_per_connection: Some(per_connection as f64),
                    rq_shared: 0,
                    qp_bytes: 0.0,
                    qp_per_process: 0.0,
                    transport: "TCP (Open MPI ob1, tcp BTL)".into(),
                    label: "tcp BTL".into(),
                    max_ranks: None,
                    above: None,
                    not_modelled: None,
                }
            }
            Transport::NoBuffers { what } => NetworkBuffers {
                parameters: vec![param(
                    "network buffers per connection",
                    0.0,
                    format!(
                        "{what}: UCX's tcp transport takes its send and receive buffers from pools its endpoints share, none per connection, and has no queue pairs (the pools are not modelled, nor {KERNEL_SOCKET_BUFFERS})"
                    ),
                )],
                bytes_per_connection: Some(0.0),
                rq_shared: 0,
                qp_bytes: 0.0,
                qp_per_process: 0.0,
                transport: what,
                label: "UCX tcp".into(),
                max_ranks: None,
                above: None,
                not_modelled: None,
            },
            Transport::NotModelled { what } => NetworkBuffers::not_modelled(what),
        }
    }

    /// The openib model of the receive-queue spec `rq_spec` (from `rq_source`).
    pub fn new(p: &BufferParams, rq_spec: &str, rq_source: &str) -> NetworkBuffers {
        let (rq_peer, rq_shared) = receive_queue_bytes(rq_spec).unwrap_or((0, 0));
        let eager_rdma = p.eager_rdma_slots as u64 * p.eager_rdma_slot_bytes;
        // Buffers only: a connection's queue pairs (one per remote peer and
        // HCA, Didelot 2014 Table 3.4) are the projection's QP memory,
        // counted there and nowhere else.
        let bytes_per_connection = (eager_rdma + rq_peer) as f64;
        let parameters = vec![
            param(
                "eager RDMA buffers per connection",
                eager_rdma as f64,
                format!(
                    "{} × {} B (Didelot 2014 §3.4, MVAPICH2 default below 8 nodes); per connection to another node",
                    p.eager_rdma_slots, p.eager_rdma_slot_bytes
                ),
            ),
            param(
                "per-peer receive queue",
                rq_peer as f64,
                format!("{rq_source}: {rq_spec}; per connection to another node"),
            ),
            param(
                "shared receive queues per process",
                rq_shared as f64,
                format!("{rq_source}: {rq_spec}; a process with a connection to another node"),
            ),
            qp_param(p),
        ];
        NetworkBuffers {
            parameters,
            bytes_per_connection: Some(bytes_per_connection),
            rq_shared,
            qp_bytes: p.qp_bytes as f64,
            qp_per_process: 0.0,
            transport: "Open MPI openib BTL".into(),
            label: "openib".into(),
            max_ranks: None,
            above: None,
            not_modelled: None,
        }
    }
}

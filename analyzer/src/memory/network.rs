//! The network transport's buffers, by the transport the run used between
//! nodes (`super::transport`): Open MPI's openib BTL has, per connection to
//! a peer on another node, its eager-RDMA slots (Didelot 2014 §3.4) and its
//! per-peer receive queue, and per process its shared receive queues (Open
//! MPI's receive-queue specs); UCX's rc transport receives into one shared
//! receive queue per process (UCX's `UCX_RC_RX_QUEUE_LEN` ×
//! `UCX_RC_SEG_SIZE`) and has per endpoint only its queue pair; Open MPI's
//! tcp BTL reads each connection's socket through an endpoint cache of its
//! own (`btl_tcp_endpoint_cache`, allocated when the connection is made:
//! `btl_tcp_endpoint.c`); UCX over TCP has no network buffers per
//! connection of the library's own. Any
//! other transport is not modelled: its figures are `None`, never another
//! library's defaults. Peers on the rank's own node cost none of these
//! (`super::shm`).

use super::shm::param;
use super::transport::{self, Transport};
use crate::model::ModelParam;
use crate::options::BufferParams;
use crate::trace_data::TraceData;

/// Open MPI 4.1's default `btl_openib_receive_queues`: one per-peer queue (P)
/// and three shared receive queues (S), each `size,count,...`.
pub const OPENMPI_DEFAULT_RECEIVE_QUEUES: &str =
    "P,128,256,192,128:S,2048,1024,1008,64:S,12288,1024,1008,64:S,65536,1024,1008,64";

/// UCX's rc transport defaults (`uct_rc_iface_common_config_table`,
/// `src/uct/ib/rc/base/rc_iface.c`): receive queue length and segment size.
const UCX_RC_RX: (u64, u64) = (4095, 8256);

/// UCX's default `UCX_RC_MAX_NUM_EPS` (`uct_rc_iface_config_table`, same
/// file): UCX selects rc only for jobs whose estimated endpoints (the MPI
/// passes its world size) are at most this many; above, dc or ud.
const UCX_RC_MAX_NUM_EPS: u64 = 256;

/// Open MPI 4.1's default `btl_tcp_endpoint_cache`: bytes per TCP connection.
const OPENMPI_TCP_ENDPOINT_CACHE: u64 = 30_720;

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

/// A UCX size setting (`8256`, `8k`, `1m`), bytes.
fn ucx_size(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let v = v.strip_suffix('b').unwrap_or(&v);
    let (num, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    Some(num.trim().parse::<u64>().ok()? * mult)
}

/// The network buffer model's inputs: what each connection to another node
/// costs and what a process with one costs once, by the run's transport.
pub(super) struct NetworkBuffers {
    pub parameters: Vec<ModelParam>,
    /// Buffers of one connection; `None`: not modelled.
    pub bytes_per_connection: Option<f64>,
    /// Shared receive queues per process with such a connection, bytes.
    pub rq_shared: u64,
    /// Memory of one queue pair (0: the transport has none).
    pub qp_bytes: f64,
    /// The transport, in words (`Open MPI openib BTL`, `TCP (…)`).
    pub transport: String,
    /// The largest job (ranks) the model holds for: UCX's rc is not
    /// selected above `UCX_RC_MAX_NUM_EPS`; `None`: any.
    pub max_ranks: Option<u64>,
    /// "network buffers: not modelled for …" where there is no model.
    pub not_modelled: Option<String>,
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
            Transport::UcxRc { via } => {
                let env = |names: &[&str]| {
                    mpi.and_then(|m| {
                        names.iter().find_map(|n| {
                            Some((
                                ucx_size(m.environment.get(*n)?)?,
                                format!("environment: {n}"),
                            ))
                        })
                    })
                };
                let (len, len_src) = env(&[
                    "UCX_RC_MLX5_RX_QUEUE_LEN",
                    "UCX_RC_VERBS_RX_QUEUE_LEN",
                    "UCX_RC_RX_QUEUE_LEN",
                    "UCX_IB_RX_QUEUE_LEN",
                ])
                .unwrap_or((UCX_RC_RX.0, "UCX default".into()));
                let (seg, seg_src) = env(&[
                    "UCX_RC_MLX5_SEG_SIZE",
                    "UCX_RC_VERBS_SEG_SIZE",
                    "UCX_RC_SEG_SIZE",
                    "UCX_IB_SEG_SIZE",
                ])
                .unwrap_or((UCX_RC_RX.1, "UCX default".into()));
                let shared = len * seg;
                // "inf" (or a negative number): rc at any size.
                let max_ranks = match mpi
                    .and_then(|m| {
                        [
                            "UCX_RC_MLX5_MAX_NUM_EPS",
                            "UCX_RC_VERBS_MAX_NUM_EPS",
                            "UCX_RC_MAX_NUM_EPS",
                        ]
                        .iter()
                        .find_map(|n| m.environment.get(*n))
                    })
                    .map(|v| v.trim())
                {
                    Some(v) if v == "inf" || v.starts_with('-') => None,
                    Some(v) => Some(v.parse().unwrap_or(UCX_RC_MAX_NUM_EPS)),
                    None => Some(UCX_RC_MAX_NUM_EPS),
                };
                let limit = max_ranks.map_or(String::new(), |n| {
                    format!(", jobs of at most {n} ranks (UCX_RC_MAX_NUM_EPS; above, UCX picks dc or ud, which are not modelled)")
                });
                NetworkBuffers {
                    parameters: vec![
                        param(
                            "UCX rc shared receive queue per process",
                            shared as f64,
                            format!(
                                "{via}: UCX_RC_RX_QUEUE_LEN {len} ({len_src}) × UCX_RC_SEG_SIZE {seg} B ({seg_src}); one per process with a connection to another node (and per RDMA device it uses); per endpoint only its queue pair"
                            ),
                        ),
                        qp_param(p),
                    ],
                    bytes_per_connection: Some(0.0),
                    rq_shared: shared,
                    qp_bytes: p.qp_bytes as f64,
                    transport: format!("UCX rc ({via}){limit}"),
                    max_ranks,
                    not_modelled: None,
                }
            }
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
                            "{cache} B ({cache_src}) × {links} link(s) ({links_src}): Open MPI's tcp BTL reads each connection's socket through a buffer of its own, allocated when the connection is made; per connection to another node (its fragment free lists and the kernel's socket buffers are not modelled)"
                        ),
                    )],
                    bytes_per_connection: Some(per_connection as f64),
                    rq_shared: 0,
                    qp_bytes: 0.0,
                    transport: "TCP (Open MPI ob1, tcp BTL)".into(),
                    max_ranks: None,
                    not_modelled: None,
                }
            }
            Transport::NoBuffers { what } => NetworkBuffers {
                parameters: vec![param(
                    "network buffers per connection",
                    0.0,
                    format!(
                        "{what}: UCX's tcp transport takes its send and receive buffers from pools its endpoints share, none per connection, and has no queue pairs (the pools and the kernel's socket buffers are not modelled)"
                    ),
                )],
                bytes_per_connection: Some(0.0),
                rq_shared: 0,
                qp_bytes: 0.0,
                transport: what,
                max_ranks: None,
                not_modelled: None,
            },
            Transport::NotModelled { what } => NetworkBuffers {
                parameters: Vec::new(),
                bytes_per_connection: None,
                rq_shared: 0,
                qp_bytes: 0.0,
                not_modelled: Some(format!("network buffers: not modelled for {what}")),
                transport: what,
                max_ranks: None,
            },
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
            transport: "Open MPI openib BTL".into(),
            max_ranks: None,
            not_modelled: None,
        }
    }

    /// Whether the model holds for a job of `ranks` ranks.
    fn holds(&self, ranks: u64) -> bool {
        self.max_ranks.is_none_or(|m| ranks <= m)
    }

    /// A rank's network buffers in a job of `ranks` ranks with `inter`
    /// connections to other nodes: theirs, and the shared receive queues
    /// once there is one; none without such a connection, whatever the
    /// transport; `None` where there is one and the transport is not
    /// modelled, or not at that size.
    pub fn bytes(&self, ranks: u64, inter: f64) -> Option<f64> {
        if inter > 0.0 {
            if !self.holds(ranks) {
                return None;
            }
            Some(inter * self.bytes_per_connection? + self.rq_shared as f64)
        } else {
            Some(0.0)
        }
    }

    /// A rank's queue-pair memory in a job of `ranks` ranks with `inter`
    /// connections to other nodes over `hcas` HCAs (one per connection and
    /// HCA, Didelot 2014 Table 3.4).
    pub fn qp(&self, ranks: u64, inter: f64, hcas: f64) -> Option<f64> {
        if inter > 0.0 {
            self.bytes_per_connection
                .filter(|_| self.holds(ranks))
                .map(|_| inter * hcas * self.qp_bytes)
        } else {
            Some(0.0)
        }
    }
}

fn qp_param(p: &BufferParams) -> ModelParam {
    param(
        "memory per queue pair",
        p.qp_bytes as f64,
        "assumption: 512 WQEs × 64 B + 128 B inline (Didelot 2014 gives no constant, Fig. 3.1); one per connection to another node and HCA, counted apart from the buffers".into(),
    )
}

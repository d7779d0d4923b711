//! The network transport's buffers: each connection to a peer on another
//! node has its eager-RDMA slots (Didelot 2014 §3.4) and its per-peer
//! receive queue, and a process that has such a connection has its shared
//! receive queues (Open MPI's receive-queue specs). Peers on the rank's own
//! node cost none of these (`super::shm`).

use crate::model::ModelParam;
use crate::options::BufferParams;
use crate::trace_data::TraceData;

/// Open MPI 4.1's default `btl_openib_receive_queues`: one per-peer queue (P)
/// and three shared receive queues (S), each `size,count,...`.
pub const OPENMPI_DEFAULT_RECEIVE_QUEUES: &str =
    "P,128,256,192,128:S,2048,1024,1008,64:S,12288,1024,1008,64:S,65536,1024,1008,64";

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

/// The network buffer model's inputs: what each connection to another node
/// costs, from the manifest's receive queues (else Open MPI's default) and
/// the parameters.
pub(super) struct NetworkBuffers {
    pub parameters: Vec<ModelParam>,
    /// Eager-RDMA slots and per-peer receive queue of one connection.
    pub bytes_per_connection: f64,
    /// Shared receive queues per process, bytes.
    pub rq_shared: u64,
}

impl NetworkBuffers {
    pub fn of(data: &TraceData, p: &BufferParams) -> NetworkBuffers {
        // Receive queues: from the manifest, else Open MPI's default.
        let (rq_spec, rq_source) = data
            .manifest
            .mpi
            .as_ref()
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

    /// The model of the receive-queue spec `rq_spec` (from `rq_source`).
    pub fn new(p: &BufferParams, rq_spec: &str, rq_source: &str) -> NetworkBuffers {
        let (rq_peer, rq_shared) = receive_queue_bytes(rq_spec).unwrap_or((0, 0));
        let eager_rdma = p.eager_rdma_slots as u64 * p.eager_rdma_slot_bytes;
        // Buffers only: a connection's queue pairs (one per remote peer and
        // HCA, Didelot 2014 Table 3.4) are the projection's QP memory,
        // counted there and nowhere else.
        let bytes_per_connection = (eager_rdma + rq_peer) as f64;
        let parameters = vec![
            ModelParam {
                name: "eager RDMA buffers per connection".into(),
                value: eager_rdma as f64,
                unit: "bytes".into(),
                source: format!(
                    "{} × {} B (Didelot 2014 §3.4, MVAPICH2 default below 8 nodes); per connection to another node",
                    p.eager_rdma_slots, p.eager_rdma_slot_bytes
                ),
            },
            ModelParam {
                name: "per-peer receive queue".into(),
                value: rq_peer as f64,
                unit: "bytes".into(),
                source: format!("{rq_source}: {rq_spec}; per connection to another node"),
            },
            ModelParam {
                name: "shared receive queues per process".into(),
                value: rq_shared as f64,
                unit: "bytes".into(),
                source: format!(
                    "{rq_source}: {rq_spec}; a process with a connection to another node"
                ),
            },
            ModelParam {
                name: "memory per queue pair".into(),
                value: p.qp_bytes as f64,
                unit: "bytes".into(),
                source: "assumption: 512 WQEs × 64 B + 128 B inline (Didelot 2014 gives no constant, Fig. 3.1); one per connection to another node and HCA, counted apart from the buffers".into(),
            },
        ];
        NetworkBuffers {
            parameters,
            bytes_per_connection,
            rq_shared,
        }
    }

    /// A rank's network buffers with `inter` connections to other nodes:
    /// theirs, and the shared receive queues once there is one.
    pub fn bytes(&self, inter: f64) -> f64 {
        if inter > 0.0 {
            inter * self.bytes_per_connection + self.rq_shared as f64
        } else {
            0.0
        }
    }
}

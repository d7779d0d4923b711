//! What the network transport costs a rank: its buffers per connection to
//! another node and per process, its queue pairs per endpoint and per
//! process, and the model of larger jobs where the transport changes with
//! the job's size (UCX). Built by `super::network` and `super::ucx`.

use super::shm::param;
use crate::model::ModelParam;
use crate::options::BufferParams;

/// The network buffer model's inputs: what each connection to another node
/// costs and what a process with one costs once, by the run's transport.
pub(super) struct NetworkBuffers {
    pub parameters: Vec<ModelParam>,
    /// Buffers of one connection; `None`: not modelled.
    pub bytes_per_connection: Option<f64>,
    /// Shared receive queues per process with such a connection, bytes.
    pub rq_shared: u64,
    /// Memory of one queue pair per endpoint (0: the transport has none).
    pub qp_bytes: f64,
    /// Queue-pair memory per process with a connection to another node,
    /// whatever its peers (UCX dc's initiators, ud's one QP).
    pub qp_per_process: f64,
    /// The transport, in words (`Open MPI openib BTL`, `TCP (…)`).
    pub transport: String,
    /// The transport in a projection's row (`openib`, `UCX dc`).
    pub label: String,
    /// The largest job (ranks) the model holds for: UCX's rc is not
    /// selected above `UCX_RC_MAX_NUM_EPS`; `None`: any.
    pub max_ranks: Option<u64>,
    /// The model of larger jobs (UCX's dc or ud above rc's limit).
    pub above: Option<Box<NetworkBuffers>>,
    /// "network buffers: not modelled for …" where there is no model.
    pub not_modelled: Option<String>,
}

impl NetworkBuffers {
    /// No model of the transport `what`.
    pub fn not_modelled(what: String) -> NetworkBuffers {
        NetworkBuffers {
            parameters: Vec::new(),
            bytes_per_connection: None,
            rq_shared: 0,
            qp_bytes: 0.0,
            qp_per_process: 0.0,
            not_modelled: Some(format!("network buffers: not modelled for {what}")),
            label: String::new(),
            transport: what,
            max_ranks: None,
            above: None,
        }
    }

    /// The model of a job of `ranks` ranks: this one, or the one above its
    /// largest job (`None`: none above it).
    fn at(&self, ranks: u64) -> Option<&NetworkBuffers> {
        if self.max_ranks.is_none_or(|m| ranks <= m) {
            Some(self)
        } else {
            self.above.as_deref()?.at(ranks)
        }
    }

    /// The transport a job of `ranks` ranks uses between nodes, as a
    /// projection's row names it; `None` where it is not modelled.
    pub fn label_at(&self, ranks: u64) -> Option<String> {
        self.at(ranks)
            .filter(|m| m.not_modelled.is_none())
            .map(|m| m.label.clone())
    }

    /// A rank's network buffers in a job of `ranks` ranks with `inter`
    /// connections to other nodes: theirs, and the shared receive queues
    /// once there is one; none without such a connection, whatever the
    /// transport; `None` where there is one and the transport is not
    /// modelled, or not at that size.
    pub fn bytes(&self, ranks: u64, inter: f64) -> Option<f64> {
        if inter > 0.0 {
            let m = self.at(ranks)?;
            Some(inter * m.bytes_per_connection? + m.rq_shared as f64)
        } else {
            Some(0.0)
        }
    }

    /// A rank's queue-pair memory in a job of `ranks` ranks with `inter`
    /// connections to other nodes over `hcas` HCAs: one per connection and
    /// HCA (Didelot 2014 Table 3.4), and the transport's per process.
    pub fn qp(&self, ranks: u64, inter: f64, hcas: f64) -> Option<f64> {
        if inter > 0.0 {
            let m = self.at(ranks)?;
            m.bytes_per_connection
                .map(|_| inter * hcas * m.qp_bytes + m.qp_per_process)
        } else {
            Some(0.0)
        }
    }
}
pub(super) fn qp_param(p: &BufferParams) -> ModelParam {
    param(
        "memory per queue pair",
        p.qp_bytes as f64,
        "assumption: 512 WQEs × 64 B + 128 B inline (Didelot 2014 gives no constant, Fig. 3.1); one per connection to another node and HCA, counted apart from the buffers".into(),
    )
}

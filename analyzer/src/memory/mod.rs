//! MPI memory footprint now and projected, one part per module: who talks
//! to whom (`graph`), which peers share a node (`locality`), the network
//! transport's buffers per connection to another node (`network`: Didelot
//! 2014 §3.4, Open MPI receive-queue specs), the shared-memory transport's
//! per process (`shm`: Kamal 2013 §3.2.1), queue pairs per node (`qp`:
//! Didelot 2014 Table 3.4), communicator group maps (Kamal 2013 §3.1), the
//! projection to larger jobs (`projection`), RSS across `MPI_Init`.

mod buffers;
mod graph;
mod locality;
mod machine;
mod network;
mod projection;
mod qp;
mod shm;
mod transport;
mod ucx;

pub use graph::GraphPart;
pub use network::{OPENMPI_DEFAULT_RECEIVE_QUEUES, receive_queue_bytes};

use hyscope_format::{metrics, mpi_call as c};
use std::collections::{BTreeMap, BTreeSet};

use crate::model::*;
use crate::options::AnalyzeOptions;
use crate::trace_data::TraceData;
use graph::ObservedGraph;
use locality::Locality;
use network::NetworkBuffers;
use projection::Growth;
use shm::ShmBuffers;

/// The footprint from the trace and every rank's [`GraphPart`] (by rank);
/// `mpi_rows`: the MPI rows of every rank.
pub fn analyze_memory(
    data: &TraceData,
    run: &RunFacts,
    options: &AnalyzeOptions,
    graph: &BTreeMap<u32, GraphPart>,
    mpi_rows: u64,
) -> Observable<MemoryFootprint> {
    if mpi_rows == 0 && data.manifest.mpi.is_none() {
        return Observable::not("not an MPI run: no MPI runtime memory to model");
    }
    // The job's MPI ranks: child processes and programs exec'd have ids
    // after them and no MPI (`processes`).
    let n_ranks = crate::processes::job_ranks(run);
    let host_of = data.manifest.rank_hosts();
    let loc = Locality::of(n_ranks, &host_of);
    let nodes = run.hosts.len().max(1) as u32;
    let cores_per_node = run
        .ranks_per_host
        .iter()
        .copied()
        .max()
        .unwrap_or(n_ranks)
        .max(1);
    let h = options.hcas_per_node.max(1);
    let p = &options.buffers;
    let network = NetworkBuffers::of(data, p);
    let shm = ShmBuffers::of(data.manifest.mpi.as_ref());
    let graph = ObservedGraph::of(graph);
    let full_ranks = graph.full_ranks();
    let any_full = !graph.full_calls.is_empty();
    let per_rank = per_rank_memory(data, n_ranks, &host_of, &loc, &graph, &network, &shm);
    let shape = qp::Shape {
        nodes,
        cores_per_node,
        hcas: h,
    };
    let qp_table = qp::qp_table(&shape, &loc, &graph.peers, &full_ranks, n_ranks);
    let max_peers = per_rank.iter().map(|r| r.peers_observed).max().unwrap_or(0);
    let all_to_all_p2p = n_ranks > 2 && max_peers >= n_ranks - 1;
    let grows = any_full || all_to_all_p2p;
    let pattern = if any_full {
        "grows with N: calls that force full connection (Alltoall(v), root of Scatterv/Gatherv; Didelot 2014 §3.2)".to_string()
    } else if all_to_all_p2p {
        "grows with N: every rank talks to every other rank point to point".to_string()
    } else {
        format!("constant neighbourhood: at most {max_peers} peers per rank")
    };
    // Communicators whose size is the world's grow with N; others stay.
    let comm_members = &graph.comm_members;
    let world_sized = comm_members
        .values()
        .filter(|m| m.len() as u32 == n_ranks)
        .count() as f64;
    let fixed_group: f64 = comm_members
        .values()
        .filter(|m| (m.len() as u32) < n_ranks)
        .map(|m| m.len() as f64 * p.group_entry_bytes as f64)
        .sum::<f64>()
        / n_ranks as f64;
    let mem_per_core = options
        .memory_per_core
        .or_else(machine::local_memory_per_core);
    let growth = Growth {
        grows,
        max_intra: per_rank
            .iter()
            .map(|r| r.intra_node_connections)
            .max()
            .unwrap_or(0),
        max_inter: per_rank
            .iter()
            .map(|r| r.inter_node_connections)
            .max()
            .unwrap_or(0),
        world_sized,
        fixed_group,
        mem_per_core,
    };
    let (recorded, recorded_source) = loc.recorded_ranks_per_node(&host_of);
    let (per_node, per_node_source) = match options.ranks_per_node {
        Some(c) => (
            c.max(1),
            format!(
                "given ({})",
                recorded_source.replace("as recorded", "recorded")
            ),
        ),
        None => (recorded, recorded_source),
    };
    let projections = projection::projections(options, per_node, &network, &shm, &growth);
    let mut parameters = network.parameters;
    parameters.extend(shm.parameters.iter().cloned());
    parameters.push(ModelParam {
        name: "group map entry".into(),
        value: p.group_entry_bytes as f64,
        unit: "bytes".into(),
        source: "int array per communicator (Kamal 2013 §2.1.3, §3.1)".into(),
    });
    Observable::Observed(MemoryFootprint {
        nodes,
        cores_per_node,
        hcas_per_node: h,
        per_rank,
        qp_table,
        parameters,
        bytes_per_connection: network.bytes_per_connection,
        network_transport: network.transport.clone(),
        network_not_modelled: network.not_modelled.clone(),
        network_queue_pairs: network.qp_bytes > 0.0 || network.qp_per_process > 0.0,
        shm_bytes_per_process: shm.bytes_per_process,
        projection_ranks_per_node: per_node,
        projection_ranks_per_node_source: per_node_source,
        pattern,
        full_connection_calls: graph
            .full_calls
            .into_iter()
            .map(|((call, site), (ranks, count))| FullConnectionCall {
                call: c::name(call).to_string(),
                location: Some(data.location(site)),
                ranks: ranks.into_iter().collect(),
                count,
            })
            .collect(),
        communicators: comm_members.len() as u32,
        group_map_bytes_per_rank: world_sized * n_ranks as f64 * p.group_entry_bytes as f64
            + fixed_group,
        projections,
        memory_per_core: mem_per_core,
    })
}

/// Each rank's observed peers, estimated connections (on its node and to
/// other nodes), RSS and modelled buffers.
fn per_rank_memory(
    data: &TraceData,
    n_ranks: u32,
    host_of: &BTreeMap<u32, &str>,
    loc: &Locality,
    graph: &ObservedGraph,
    network: &NetworkBuffers,
    shm: &ShmBuffers,
) -> Vec<RankMemory> {
    let (peers, comm_members) = (&graph.peers, &graph.comm_members);
    let full_ranks: BTreeSet<u32> = graph.full_ranks();
    let sample_last = |rank: u32, metric: &str| -> Option<f64> {
        data.ranks
            .iter()
            .find(|r| r.rank == rank)?
            .samples
            .iter()
            .rev()
            .find(|s| s.metric == metric)
            .map(|s| s.value)
    };
    let sample_max = |rank: u32, metric: &str| -> Option<f64> {
        data.ranks
            .iter()
            .find(|r| r.rank == rank)?
            .samples
            .iter()
            .filter(|s| s.metric == metric)
            .map(|s| s.value)
            .reduce(f64::max)
    };
    // A rank left out of the analysis (a damaged part) is left out here too:
    // its peers are unknown, and its manifest entry alone is half a rank.
    let left_out: BTreeSet<u32> = data.ranks_left_out.iter().map(|p| p.rank).collect();
    (0..n_ranks)
        .filter(|rank| !left_out.contains(rank))
        .map(|rank| {
            let info = data.manifest.ranks.iter().find(|r| r.rank == rank);
            let observed = peers.get(&rank).map_or(0, |s| s.len() as u32);
            let split = if full_ranks.contains(&rank) {
                loc.everyone(rank)
            } else {
                loc.split(rank, peers.get(&rank).into_iter().flatten().copied())
            };
            let shm_bytes = shm.bytes(loc.ranks_beside(rank) as f64);
            let network_bytes = network.bytes(u64::from(n_ranks), split.inter as f64);
            let before = info.and_then(|i| i.rss_before_init);
            let after = info.and_then(|i| i.rss_after_init);
            RankMemory {
                rank,
                host: host_of.get(&rank).copied().unwrap_or_default().to_string(),
                peers_observed: observed,
                connections_estimated: split.total(),
                intra_node_connections: split.intra,
                inter_node_connections: split.inter,
                connections_measured: sample_last(rank, metrics::MPI_CONNECTIONS).map(|v| v as u64),
                rss_before_init: before,
                rss_after_init: after,
                mpi_init_delta: match (before, after) {
                    (Some(b), Some(a)) => Some(a.saturating_sub(b)),
                    _ => None,
                },
                rss_peak: sample_max(rank, metrics::MEM_VMHWM)
                    .or_else(|| sample_max(rank, metrics::MEM_VMRSS))
                    .map(|v| v as u64),
                rss_last: sample_last(rank, metrics::MEM_VMRSS).map(|v| v as u64),
                // The peak: MPI_Finalize unmaps the segments, so the last sample is 0.
                shm_mapped: sample_max(rank, metrics::MEM_SHM_MAPPED).map(|v| v as u64),
                buffer_bytes_observed: network_bytes.map(|n| shm_bytes + n),
                shm_buffer_bytes: shm_bytes,
                network_buffer_bytes: network_bytes,
                communicators: comm_members.values().filter(|m| m.contains(&rank)).count() as u32,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

//! MPI memory footprint now and projected: connections, queue pairs
//! (Didelot 2014, Table 3.4), connection buffers (Didelot 2014, §3.4; Open MPI
//! receive-queue specs), communicator group maps (Kamal 2013, §3.1), RSS
//! across `MPI_Init`.

use hyscope_format::{MpiRecord, metrics, mpi_call as c};
use std::collections::{BTreeMap, BTreeSet};

use crate::model::*;
use crate::options::{AnalyzeOptions, BufferParams};
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

/// Memory per core of this machine: MemTotal / its online cores (not the
/// cores this process may run on: `mpirun` binds each process of a parallel
/// report to one, and the report must not depend on it).
fn local_memory_per_core() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let cores = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|l| cpu_list_len(&l))
        .or_else(|| Some(std::thread::available_parallelism().ok()?.get() as u64))?;
    Some(kb * 1024 / cores.max(1))
}

/// The number of CPUs in a kernel CPU list (`0-3,8,10-11`).
fn cpu_list_len(list: &str) -> Option<u64> {
    let mut n = 0;
    for item in list.trim().split(',') {
        n += match item.split_once('-') {
            Some((a, b)) => b.parse::<u64>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => {
                item.parse::<u64>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

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
    let n_ranks = run.ranks.max(1);
    let host_of = data.manifest.rank_hosts();
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
    let model = BufferModel::of(data, p);
    let graph = ObservedGraph::of(graph);
    let full_ranks: BTreeSet<u32> = graph
        .full_calls
        .values()
        .flat_map(|v| v.0.iter().copied())
        .collect();
    let any_full = !graph.full_calls.is_empty();
    let per_rank = per_rank_memory(data, n_ranks, &host_of, &graph, &full_ranks, &model);
    let shape = Shape {
        n_ranks,
        nodes,
        cores_per_node,
        hcas: h,
    };
    let qp_table = qp_table(run, &host_of, &shape, &per_rank, &graph, &full_ranks);
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
    let mem_per_core = options.memory_per_core.or_else(local_memory_per_core);
    let growth = Growth {
        grows,
        max_peers,
        world_sized,
        fixed_group,
        mem_per_core,
    };
    let projections = projections(options, &shape, &model, &growth);
    Observable::Observed(MemoryFootprint {
        nodes,
        cores_per_node,
        hcas_per_node: h,
        per_rank,
        qp_table,
        parameters: model.parameters,
        bytes_per_connection: model.bytes_per_connection,
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

/// The buffer model's inputs: what each connection costs, from the
/// manifest's receive queues (else Open MPI's default) and the parameters.
struct BufferModel {
    parameters: Vec<ModelParam>,
    bytes_per_connection: f64,
    /// Shared receive queues per process, bytes.
    rq_shared: u64,
}

impl BufferModel {
    fn of(data: &TraceData, p: &BufferParams) -> BufferModel {
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
        BufferModel::new(p, &rq_spec, &rq_source)
    }

    /// The model of the receive-queue spec `rq_spec` (from `rq_source`).
    fn new(p: &BufferParams, rq_spec: &str, rq_source: &str) -> BufferModel {
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
                    "{} × {} B (Didelot 2014 §3.4, MVAPICH2 default below 8 nodes)",
                    p.eager_rdma_slots, p.eager_rdma_slot_bytes
                ),
            },
            ModelParam {
                name: "per-peer receive queue".into(),
                value: rq_peer as f64,
                unit: "bytes".into(),
                source: format!("{rq_source}: {rq_spec}"),
            },
            ModelParam {
                name: "shared receive queues per process".into(),
                value: rq_shared as f64,
                unit: "bytes".into(),
                source: format!("{rq_source}: {rq_spec}"),
            },
            ModelParam {
                name: "memory per queue pair".into(),
                value: p.qp_bytes as f64,
                unit: "bytes".into(),
                source: "assumption: 512 WQEs × 64 B + 128 B inline (Didelot 2014 gives no constant, Fig. 3.1); one per remote connection and HCA, counted apart from the buffers".into(),
            },
            ModelParam {
                name: "group map entry".into(),
                value: p.group_entry_bytes as f64,
                unit: "bytes".into(),
                source: "int array per communicator (Kamal 2013 §2.1.3, §3.1)".into(),
            },
        ];
        BufferModel {
            parameters,
            bytes_per_connection,
            rq_shared,
        }
    }
}

/// Who talks to whom, the calls that force full connection (call and site →
/// ranks and count) and each communicator's members, as the trace shows them.
struct ObservedGraph {
    peers: BTreeMap<u32, BTreeSet<u32>>,
    full_calls: BTreeMap<(u16, u64), (BTreeSet<u32>, u64)>,
    comm_members: BTreeMap<u64, BTreeSet<u32>>,
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
}

impl GraphPart {
    /// The same with call sites made canonical by `canon`.
    pub fn canonical(mut self, canon: &dyn Fn(u64) -> u64) -> GraphPart {
        let calls = std::mem::take(&mut self.full_calls);
        for ((call, site), n) in calls {
            *self.full_calls.entry((call, canon(site))).or_default() += n;
        }
        self
    }
}

impl ObservedGraph {
    /// Every rank's part, by rank.
    fn of(parts: &BTreeMap<u32, GraphPart>) -> ObservedGraph {
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
}

/// The job's shape: ranks, nodes, cores (ranks) per node, HCAs per node.
struct Shape {
    n_ranks: u32,
    nodes: u32,
    cores_per_node: u32,
    hcas: u32,
}

/// How the footprint grows with the number of ranks.
struct Growth {
    grows: bool,
    max_peers: u32,
    world_sized: f64,
    fixed_group: f64,
    mem_per_core: Option<u64>,
}

/// Each rank's observed peers, estimated connections, RSS and buffers.
fn per_rank_memory(
    data: &TraceData,
    n_ranks: u32,
    host_of: &BTreeMap<u32, &str>,
    graph: &ObservedGraph,
    full_ranks: &BTreeSet<u32>,
    model: &BufferModel,
) -> Vec<RankMemory> {
    let (peers, comm_members) = (&graph.peers, &graph.comm_members);
    let (bytes_per_connection, rq_shared) = (model.bytes_per_connection, model.rq_shared);
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
    (0..n_ranks)
        .map(|rank| {
            let info = data.manifest.ranks.iter().find(|r| r.rank == rank);
            let observed = peers.get(&rank).map_or(0, |s| s.len() as u32);
            let estimated = if full_ranks.contains(&rank) {
                n_ranks - 1
            } else {
                observed
            };
            let before = info.and_then(|i| i.rss_before_init);
            let after = info.and_then(|i| i.rss_after_init);
            RankMemory {
                rank,
                host: host_of.get(&rank).copied().unwrap_or_default().to_string(),
                peers_observed: observed,
                connections_estimated: estimated,
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
                buffer_bytes_observed: estimated as f64 * bytes_per_connection + rq_shared as f64,
                communicators: comm_members.values().filter(|m| m.contains(&rank)).count() as u32,
            }
        })
        .collect()
}

/// Didelot 2014 Table 3.4 on the observed graph: one RC QP per connected remote
/// peer and HCA; XRC one per remote node per rank; vrails one per remote node per node.
fn qp_table(
    run: &RunFacts,
    host_of: &BTreeMap<u32, &str>,
    shape: &Shape,
    per_rank: &[RankMemory],
    graph: &ObservedGraph,
    full_ranks: &BTreeSet<u32>,
) -> Vec<QpRow> {
    let (nodes, n_ranks, cores_per_node, h) =
        (shape.nodes, shape.n_ranks, shape.cores_per_node, shape.hcas);
    let peers = &graph.peers;
    let host_idx = |rank: u32| -> usize {
        let hname = host_of.get(&rank).cloned().unwrap_or_default();
        run.hosts.iter().position(|x| *x == hname).unwrap_or(0)
    };
    let mut rc_obs = vec![0f64; nodes as usize];
    let mut xrc_obs = vec![0f64; nodes as usize];
    let mut node_remote: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); nodes as usize];
    for rm in per_rank {
        let me = host_idx(rm.rank);
        let remote: Vec<u32> = if full_ranks.contains(&rm.rank) {
            (0..n_ranks).filter(|&q| host_idx(q) != me).collect()
        } else {
            peers
                .get(&rm.rank)
                .map(|s| s.iter().copied().filter(|&q| host_idx(q) != me).collect())
                .unwrap_or_default()
        };
        let rnodes: BTreeSet<usize> = remote.iter().map(|&q| host_idx(q)).collect();
        if let Some(x) = rc_obs.get_mut(me) {
            *x += remote.len() as f64 * h as f64;
        }
        if let Some(x) = xrc_obs.get_mut(me) {
            *x += rnodes.len() as f64 * h as f64;
        }
        if let Some(s) = node_remote.get_mut(me) {
            s.extend(rnodes);
        }
    }
    let maxf = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let vr_obs = node_remote.iter().map(|s| s.len()).max().unwrap_or(0) as f64 * h as f64;
    let (nf, cf, hf) = (nodes as f64, cores_per_node as f64, h as f64);
    vec![
        QpRow {
            transport: "RC".into(),
            formula: "(N − 1) × C² × H".into(),
            observed_per_node: maxf(&rc_obs),
            full_per_node: (nf - 1.0) * cf * cf * hf,
        },
        QpRow {
            transport: "XRC".into(),
            formula: "(N − 1) × C × H".into(),
            observed_per_node: maxf(&xrc_obs),
            full_per_node: (nf - 1.0) * cf * hf,
        },
        QpRow {
            transport: "RC, 4 shared vrails".into(),
            formula: "(N − 1) × H".into(),
            observed_per_node: vr_obs,
            full_per_node: (nf - 1.0) * hf,
        },
        QpRow {
            transport: "RC, 16 shared vrails".into(),
            formula: "(N − 1) × 4 × H".into(),
            observed_per_node: vr_obs * 4.0,
            full_per_node: (nf - 1.0) * 4.0 * hf,
        },
        QpRow {
            transport: "UD".into(),
            formula: "C × H".into(),
            observed_per_node: cf * hf,
            full_per_node: cf * hf,
        },
    ]
}

/// The footprint per rank at each projected job size: buffers (every
/// connection's eager-RDMA slots and per-peer receive queue, plus the shared
/// receive queues), queue pairs (one per remote connection and HCA) and group
/// maps, each byte in one of the three; the total is their sum.
fn projections(
    options: &AnalyzeOptions,
    shape: &Shape,
    model: &BufferModel,
    g: &Growth,
) -> Vec<Projection> {
    let (cores_per_node, hf) = (shape.cores_per_node, shape.hcas as f64);
    let cf = cores_per_node as f64;
    let p = &options.buffers;
    let (bytes_per_connection, rq_shared) = (model.bytes_per_connection, model.rq_shared);
    let (grows, max_peers, world_sized, fixed_group, mem_per_core) = (
        g.grows,
        g.max_peers,
        g.world_sized,
        g.fixed_group,
        g.mem_per_core,
    );
    options
        .projection_ranks
        .iter()
        .map(|&r| {
            let nodes_p = r.div_ceil(cores_per_node as u64).max(1);
            let conn = if grows {
                (r - 1) as f64
            } else {
                max_peers as f64
            };
            let remote_share = if nodes_p > 1 {
                r.saturating_sub(cores_per_node as u64) as f64 / r.saturating_sub(1).max(1) as f64
            } else {
                0.0
            };
            let remote_conn = conn * remote_share;
            let buffer = conn * bytes_per_connection + rq_shared as f64;
            let qp = remote_conn * hf * p.qp_bytes as f64;
            let group = world_sized * r as f64 * p.group_entry_bytes as f64 + fixed_group;
            // `bytes_per_connection` holds no QP memory: `qp` is the only QP share.
            let total = buffer + qp + group;
            Projection {
                ranks: r,
                nodes: nodes_p,
                connections_per_rank: conn,
                qp_rc_per_node: if grows {
                    (nodes_p - 1) as f64 * cf * cf * hf
                } else {
                    remote_conn * cf * hf
                },
                qp_xrc_per_node: if grows {
                    (nodes_p - 1) as f64 * cf * hf
                } else {
                    remote_conn.min((nodes_p - 1) as f64) * cf * hf
                },
                qp_ud_per_node: cf * hf,
                buffer_bytes_per_rank: buffer,
                qp_bytes_per_rank: qp,
                group_bytes_per_rank: group,
                total_bytes_per_rank: total,
                exceeds_memory_per_core: mem_per_core.map(|m| total > m as f64),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default model (Open MPI 4.1's receive queues) at `r` ranks, fully
    /// connected, `c` ranks per node, `h` HCAs, no communicators.
    fn projected(r: u64, c: u32, h: u32) -> Projection {
        let options = AnalyzeOptions {
            projection_ranks: vec![r],
            ..AnalyzeOptions::default()
        };
        let model = BufferModel::new(&options.buffers, OPENMPI_DEFAULT_RECEIVE_QUEUES, "test");
        let shape = Shape {
            n_ranks: 4,
            nodes: 4_u32.div_ceil(c),
            cores_per_node: c,
            hcas: h,
        };
        let growth = Growth {
            grows: true,
            max_peers: 3,
            world_sized: 0.0,
            fixed_group: 0.0,
            mem_per_core: None,
        };
        projections(&options, &shape, &model, &growth).remove(0)
    }

    #[test]
    fn projection_counts_queue_pair_memory_once() {
        // By hand, Didelot 2014 §3.4 and Open MPI's default receive queues:
        // per connection 32 × 12288 B eager RDMA + 128 × 256 B per-peer queue
        // = 425 984 B of buffers; a queue pair 512 × 64 + 128 = 32 896 B; the
        // shared queues (2048 + 12288 + 65536) × 1024 = 81 788 928 B per rank.
        let opts = AnalyzeOptions::default();
        let model = BufferModel::new(&opts.buffers, OPENMPI_DEFAULT_RECEIVE_QUEUES, "test");
        assert_eq!(model.bytes_per_connection, 425_984.0);
        assert_eq!(model.rq_shared, 81_788_928);

        // One rank per node: all 1023 connections are remote, one QP each.
        let p = projected(1024, 1, 1);
        assert_eq!(p.connections_per_rank, 1023.0);
        assert_eq!(p.buffer_bytes_per_rank, 81_788_928.0 + 1023.0 * 425_984.0);
        assert_eq!(p.qp_bytes_per_rank, 1023.0 * 32_896.0);
        assert_eq!(p.group_bytes_per_rank, 0.0);
        // total = base + (N − 1) × (buffers + one QP) per connection = 551 223 168 B
        // (the QP share twice was 584 875 776 B).
        assert_eq!(p.total_bytes_per_rank, 81_788_928.0 + 1023.0 * 458_880.0);
        assert_eq!(p.total_bytes_per_rank, 551_223_168.0);
        assert_eq!(
            p.total_bytes_per_rank,
            p.buffer_bytes_per_rank + p.qp_bytes_per_rank + p.group_bytes_per_rank
        );

        // Two ranks per node (the bundled example's shape): 1022 of the 1023
        // connections are remote; two HCAs give each two QPs.
        let p = projected(1024, 2, 2);
        assert_eq!(p.buffer_bytes_per_rank, 517_570_560.0);
        assert_eq!(p.qp_bytes_per_rank, 1022.0 * 2.0 * 32_896.0);
        assert_eq!(p.total_bytes_per_rank, 517_570_560.0 + 67_239_424.0);
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(cpu_list_len("0-1\n"), Some(2));
        assert_eq!(cpu_list_len("0-3,8,10-11"), Some(7));
        assert_eq!(cpu_list_len("x"), None);
        assert_eq!(cpu_list_len("3-1"), None);
    }
}

//! Queue pairs per node (Didelot 2014 Table 3.4) on the observed graph and
//! fully connected: one RC QP per connection to a peer on another node and
//! HCA; XRC one per remote node per rank; shared vrails one per remote node
//! per node; UD one per rank and HCA. Peers on the rank's own node need
//! none: they talk through shared memory.

use std::collections::{BTreeMap, BTreeSet};

use super::locality::Locality;
use crate::model::QpRow;

/// The job's shape: nodes (N), ranks per node (C), HCAs per node (H).
pub(super) struct Shape {
    pub nodes: u32,
    pub cores_per_node: u32,
    pub hcas: u32,
}

/// Table 3.4's rows for the job `shape`, on the observed graph (`peers`,
/// and every other rank for the ranks in `full`, which force full connection).
pub(super) fn qp_table(
    shape: &Shape,
    loc: &Locality,
    peers: &BTreeMap<u32, BTreeSet<u32>>,
    full: &BTreeSet<u32>,
    n_ranks: u32,
) -> Vec<QpRow> {
    let (nodes, cores_per_node, h) = (shape.nodes, shape.cores_per_node, shape.hcas);
    let known = loc.nodes();
    let mut rc_obs = vec![0f64; known];
    let mut xrc_obs = vec![0f64; known];
    // Each node's remote nodes; `None`: ranks whose node is not known.
    let mut node_remote: Vec<BTreeSet<Option<usize>>> = vec![BTreeSet::new(); known];
    let unknown = loc.unknown_ranks(n_ranks) > 0;
    for rank in 0..n_ranks {
        // A rank whose node is not known is on no node's tally.
        let Some(me) = loc.node(rank) else {
            continue;
        };
        let (remote, rnodes): (u32, BTreeSet<Option<usize>>) = if full.contains(&rank) {
            let others = (0..known).filter(|&n| n != me).map(Some);
            (
                loc.everyone(rank).inter,
                others.chain(unknown.then_some(None)).collect(),
            )
        } else {
            let remote: Vec<u32> = peers
                .get(&rank)
                .into_iter()
                .flatten()
                .copied()
                .filter(|&q| q != rank && !loc.same_node(rank, q))
                .collect();
            let rnodes = remote.iter().map(|&q| loc.node(q)).collect();
            (remote.len() as u32, rnodes)
        };
        rc_obs[me] += remote as f64 * h as f64;
        xrc_obs[me] += rnodes.len() as f64 * h as f64;
        node_remote[me].extend(rnodes);
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

//! The report's MPI memory footprint: per rank, queue pairs, the model's
//! parameters and the projection to larger jobs, each rank's connections
//! and buffers split between its node (shared memory) and the other nodes
//! (network). The GUI shows these same tables; the TUI these same columns.

use std::fmt::Write as _;

use hyscope_analyzer::*;

use super::table::{Table, count, observed_section};
use crate::units;

/// The footprint measured per rank, the model and its projection.
pub fn footprint(out: &mut String, a: &Analysis) {
    let Some(m) = observed_section(out, "MPI memory footprint", &a.memory) else {
        return;
    };
    let _ = writeln!(
        out,
        "  job: N = {} node(s), C = {} rank(s) per node, H = {} HCA(s); pattern: {}",
        m.nodes, m.cores_per_node, m.hcas_per_node, m.pattern
    );
    if let Some(s) = &m.network_not_modelled {
        let _ = writeln!(out, "  {s}");
    }
    let (header, rows) = rank_table(m, RANKS_LISTED);
    let mut t = Table::new(&header);
    rows.into_iter().for_each(|r| t.row(r));
    t.render(out);
    out.push_str("\n  queue pairs per node (Didelot 2014 Table 3.4):\n");
    let (header, rows) = qp_table(m);
    let mut t = Table::new(&header);
    rows.into_iter().for_each(|r| t.row(r));
    t.render(out);
    out.push_str("\n  model parameters:\n");
    for p in &m.parameters {
        let _ = writeln!(
            out,
            "    {:<36} {:>12}  {}",
            p.name,
            units::bytes(p.value),
            p.source
        );
    }
    match m.bytes_per_connection {
        Some(b) => {
            let _ = writeln!(
                out,
                "    {:<36} {:>12}  ({}; {})",
                BUFFER_BYTES_PER_CONNECTION,
                units::bytes(b),
                m.network_transport,
                BUFFER_BYTES_PER_CONNECTION_MEANS
            );
        }
        None => {
            let _ = writeln!(out, "    {}", network_statement(m));
        }
    }
    let _ = writeln!(
        out,
        "    communicators: {}, group maps {} per rank (Kamal 2013 §3.1)",
        m.communicators,
        units::bytes(m.group_map_bytes_per_rank)
    );
    for c in &m.full_connection_calls {
        let _ = writeln!(
            out,
            "  ! {} at {} forces full connection ({} calls on {} rank(s))",
            c.call,
            c.location.as_ref().map_or("?".into(), |l| l.label.clone()),
            c.count,
            c.ranks.len()
        );
    }
    projection(out, m);
}

/// The footprint projected to larger jobs, against the memory per core.
fn projection(out: &mut String, m: &MemoryFootprint) {
    let _ = writeln!(out, "\n  {}", ranks_per_node_assumed(m));
    // Where it is not modelled, the section's first lines said so.
    if m.network_not_modelled.is_none() {
        let _ = writeln!(out, "  {}", network_statement(m));
    }
    let _ = writeln!(
        out,
        "  projection (memory per core: {}):",
        m.memory_per_core
            .map_or("unknown".into(), |b| units::bytes(b as f64))
    );
    let (header, rows) = projection_table(m);
    let mut t = Table::new(&[header.as_slice(), &[""]].concat());
    for (mut row, p) in rows.into_iter().zip(&m.projections) {
        row.push(if p.exceeds_memory_per_core == Some(true) {
            "EXCEEDS memory/core".into()
        } else {
            String::new()
        });
        t.row(row);
    }
    t.render(out);
}

/// Ranks the footprint table lists (the report's and the GUI's).
pub const RANKS_LISTED: usize = 64;

/// What the model's per-connection buffers are called in every view.
pub const BUFFER_BYTES_PER_CONNECTION: &str = "network buffer bytes per connection";

/// What they are made of and which connections have them, in every view.
pub const BUFFER_BYTES_PER_CONNECTION_MEANS: &str = "the buffers the run's transport gives each connection to another node (openib: eager RDMA slots and a per-peer receive queue; Open MPI tcp: its endpoint cache; UCX rc, dc, ud: none, their queues are per process); a peer on the same node uses shared memory instead";

/// What a figure the network model does not give reads in every view.
pub const NOT_MODELLED: &str = "not modelled";

/// A byte figure of the model, or [`NOT_MODELLED`].
pub fn modelled_bytes(v: Option<f64>) -> String {
    v.map_or(NOT_MODELLED.into(), units::bytes)
}

/// The network model's statement, as every view writes it: the transport
/// and its buffers per connection, or `network buffers: not modelled for …`.
pub fn network_statement(m: &MemoryFootprint) -> String {
    match (&m.network_not_modelled, m.bytes_per_connection) {
        (Some(s), _) => format!(
            "{s} (the figures that depend on it are left out, never another library's defaults)"
        ),
        (None, Some(b)) => format!(
            "network: {}, {} buffers per connection to another node{}",
            m.network_transport,
            units::bytes(b),
            if m.network_queue_pairs {
                ""
            } else {
                "; no queue pairs (the QP counts per node are InfiniBand's, Didelot 2014 Table 3.4, for comparison)"
            }
        ),
        (None, None) => format!("network buffers: not modelled for {}", m.network_transport),
    }
}

/// The projection's assumption on ranks per node, as every view states it.
pub fn ranks_per_node_assumed(m: &MemoryFootprint) -> String {
    format!(
        "projected at C = {} rank(s) per node ({}): a rank's peers on its node cost shared memory, the others network buffers and queue pairs",
        m.projection_ranks_per_node, m.projection_ranks_per_node_source
    )
}

/// The footprint per rank, the first `listed` ranks: header and cells, as
/// every view shows them.
pub fn rank_table(m: &MemoryFootprint, listed: usize) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let opt = |v: Option<u64>| v.map_or("n/a".into(), |b| units::bytes(b as f64));
    let rows = m
        .per_rank
        .iter()
        .take(listed)
        .map(|p| {
            vec![
                p.rank.to_string(),
                p.host.clone(),
                p.peers_observed.to_string(),
                p.intra_node_connections.to_string(),
                p.inter_node_connections.to_string(),
                p.connections_measured
                    .map_or("n/a".into(), |c| c.to_string()),
                opt(p.mpi_init_delta),
                opt(p.rss_peak),
                opt(p.shm_mapped),
                units::bytes(p.shm_buffer_bytes),
                modelled_bytes(p.network_buffer_bytes),
            ]
        })
        .collect();
    let header = vec![
        "rank",
        "host",
        "peers",
        "conn. in node",
        "conn. to other nodes",
        "measured",
        "RSS Δ MPI_Init",
        "RSS peak",
        "shm",
        "shm (model)",
        "network buffers (model)",
    ];
    (header, rows)
}

/// Queue pairs per node (Didelot 2014 Table 3.4): header and cells.
pub fn qp_table(m: &MemoryFootprint) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let rows = m
        .qp_table
        .iter()
        .map(|q| {
            vec![
                q.transport.clone(),
                q.formula.clone(),
                count(q.observed_per_node),
                count(q.full_per_node),
            ]
        })
        .collect();
    (
        vec!["transport", "formula", "observed graph", "fully connected"],
        rows,
    )
}

/// The projection to larger jobs, one row per projected size: header and
/// cells (whether a total exceeds the memory per core is the projection's
/// `exceeds_memory_per_core`, each view marks it its way).
pub fn projection_table(m: &MemoryFootprint) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let rows = m
        .projections
        .iter()
        .map(|p| {
            vec![
                count(p.ranks as f64),
                count(p.nodes as f64),
                count(p.intra_node_connections_per_rank),
                count(p.inter_node_connections_per_rank),
                count(p.qp_rc_per_node),
                count(p.qp_xrc_per_node),
                count(p.qp_ud_per_node),
                p.network_transport
                    .clone()
                    .unwrap_or_else(|| NOT_MODELLED.into()),
                units::bytes(p.shm_bytes_per_rank),
                modelled_bytes(p.network_buffer_bytes_per_rank),
                modelled_bytes(p.qp_bytes_per_rank),
                units::bytes(p.group_bytes_per_rank),
                modelled_bytes(p.total_bytes_per_rank),
            ]
        })
        .collect();
    let header = vec![
        "ranks",
        "nodes",
        "node conn/rank",
        "net conn/rank",
        "RC QP/node",
        "XRC QP/node",
        "UD QP/node",
        "net transport",
        "shm/rank",
        "net buffers/rank",
        "QPs/rank",
        "groups/rank",
        "total/rank",
    ];
    (header, rows)
}

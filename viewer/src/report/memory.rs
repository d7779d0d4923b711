//! The report's MPI memory footprint: per rank, queue pairs, the model's
//! parameters and the projection to larger jobs.

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
    let mut t = Table::new(&[
        "rank",
        "host",
        "peers",
        "connections",
        "measured",
        "RSS Δ MPI_Init",
        "RSS peak",
        "shm",
        "buffers (model)",
    ]);
    for p in m.per_rank.iter().take(64) {
        let opt = |v: Option<u64>| v.map_or("n/a".into(), |b| units::bytes(b as f64));
        t.row(vec![
            p.rank.to_string(),
            p.host.clone(),
            p.peers_observed.to_string(),
            p.connections_estimated.to_string(),
            p.connections_measured
                .map_or("n/a".into(), |c| c.to_string()),
            opt(p.mpi_init_delta),
            opt(p.rss_peak),
            opt(p.shm_mapped),
            units::bytes(p.buffer_bytes_observed),
        ]);
    }
    t.render(out);
    out.push_str("\n  queue pairs per node (Didelot 2014 Table 3.4):\n");
    let mut t = Table::new(&["transport", "formula", "observed graph", "fully connected"]);
    for q in &m.qp_table {
        t.row(vec![
            q.transport.clone(),
            q.formula.clone(),
            count(q.observed_per_node),
            count(q.full_per_node),
        ]);
    }
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
    let _ = writeln!(
        out,
        "    {:<36} {:>12}  (sum of per-connection items)",
        "bytes per connection",
        units::bytes(m.bytes_per_connection)
    );
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
    let _ = writeln!(
        out,
        "\n  projection (memory per core: {}):",
        m.memory_per_core
            .map_or("unknown".into(), |b| units::bytes(b as f64))
    );
    let mut t = Table::new(&[
        "ranks",
        "nodes",
        "conn/rank",
        "RC QP/node",
        "XRC QP/node",
        "UD QP/node",
        "buffers/rank",
        "QPs/rank",
        "groups/rank",
        "total/rank",
        "",
    ]);
    for p in &m.projections {
        t.row(vec![
            count(p.ranks as f64),
            count(p.nodes as f64),
            count(p.connections_per_rank),
            count(p.qp_rc_per_node),
            count(p.qp_xrc_per_node),
            count(p.qp_ud_per_node),
            units::bytes(p.buffer_bytes_per_rank),
            units::bytes(p.qp_bytes_per_rank),
            units::bytes(p.group_bytes_per_rank),
            units::bytes(p.total_bytes_per_rank),
            if p.exceeds_memory_per_core == Some(true) {
                "EXCEEDS memory/core".into()
            } else {
                String::new()
            },
        ]);
    }
    t.render(out);
}

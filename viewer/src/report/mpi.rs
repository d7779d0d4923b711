//! The report's MPI sections: the profile (calls, call sites, message sizes,
//! matrix, communicators) and the wait states.

use std::fmt::Write as _;

use hyscope_analyzer::*;

use super::table::{Table, count, observed_section};
use crate::units;

/// Calls and call sites, message sizes, the matrix and the communicators.
pub fn profile(out: &mut String, a: &Analysis, top: usize) {
    let Some(m) = observed_section(out, "MPI profile", &a.mpi) else {
        return;
    };
    let _ = writeln!(
        out,
        "  MPI time {} ({} of rank time); inside parallel regions {}, outside {}; up to {} calling thread(s) per rank",
        units::secs(m.total_s),
        units::percent(m.share_of_run),
        units::secs(m.inside_parallel_s),
        units::secs(m.outside_parallel_s),
        m.calling_threads
    );
    calls(out, &m.calls, "call", top);
    folded_polls(out, &m.calls);
    out.push('\n');
    calls(out, &m.callsites, "call site", top);
    messages(out, m);
}

/// Late senders and receivers, N×N waits: by kind, call site and rank.
pub fn wait_states(out: &mut String, a: &Analysis, top: usize) {
    let Some(w) = observed_section(out, "Wait states", &a.wait_states) else {
        return;
    };
    let _ = writeln!(
        out,
        "  total {} (clock error ± {}, {} unmatched messages)",
        units::secs(w.total_s),
        units::secs(w.clock_error_s),
        w.unmatched_messages
    );
    let mut t = Table::new(&["kind", "time", "instances"]);
    for e in &w.by_kind {
        t.row(vec![
            e.kind.name().into(),
            units::secs(e.seconds),
            count(e.instances as f64),
        ]);
    }
    t.render(out);
    if !w.per_callsite.is_empty() {
        out.push('\n');
        let mut t = Table::new(&["call site", "call", "kind", "time", "instances"]);
        for e in w.per_callsite.iter().take(top) {
            t.row(vec![
                e.location.as_ref().map_or("?".into(), |l| l.label.clone()),
                e.call.clone().unwrap_or_default(),
                e.kind.name().into(),
                units::secs(e.seconds),
                count(e.instances as f64),
            ]);
        }
        t.render(out);
    }
    if !w.per_rank.is_empty() {
        out.push('\n');
        let mut t = Table::new(&["rank", "kind", "time", "instances"]);
        for e in w.per_rank.iter().take(top * 4) {
            t.row(vec![
                e.rank.map_or("?".into(), |r| r.to_string()),
                e.kind.name().into(),
                units::secs(e.seconds),
                count(e.instances as f64),
            ]);
        }
        t.render(out);
    }
}

/// One row per call (or call site): count, time across ranks, bytes.
fn calls(out: &mut String, rows: &[MpiCallStats], first: &str, top: usize) {
    let mut t = Table::new(&[
        first,
        "count",
        "total",
        "% run",
        "min rank",
        "mean rank",
        "max rank",
        "CV",
        "sent",
        "received",
    ]);
    for c in rows.iter().take(top) {
        let name = match &c.location {
            Some(l) => format!("{} @ {}", c.call, l.label),
            None => c.call.clone(),
        };
        t.row(vec![
            name,
            count(c.count as f64),
            units::secs(c.total_s),
            units::percent(c.share_of_run),
            units::secs(c.min_rank_s),
            units::secs(c.mean_rank_s),
            units::secs(c.max_rank_s),
            format!("{:.2}", c.cv),
            units::bytes(c.bytes_sent as f64),
            units::bytes(c.bytes_recv as f64),
        ]);
    }
    t.render(out);
}

/// The calls whose unsuccessful polls the collector folded (trace
/// `mpi.calls`), exact counts: "MPI_Test: 1234567 calls, 1230000
/// unsuccessful polls folded into 3210 records".
fn folded_polls(out: &mut String, rows: &[MpiCallStats]) {
    for c in rows.iter().filter(|c| c.folded_polls > 0) {
        let _ = writeln!(
            out,
            "  {}: {} calls, {} unsuccessful polls folded into {} records",
            c.call, c.count, c.folded_polls, c.folded_rows
        );
    }
}

/// The eager limits messages were classified by, for people (the report and
/// the TUI): `≤ 64.0 KiB from <source>`, with the limit within a host after
/// it where a job on several hosts has one of its own; the reason where none
/// is known.
pub fn eager_limits_text(m: &MpiProfile) -> Result<String, &str> {
    let (l, src) = match &m.eager_limit {
        Observable::Observed(l) => l,
        Observable::NotObservable(r) => return Err(r),
    };
    let mut text = format!("≤ {} from {src}", units::bytes(*l as f64));
    if let Some((w, wsrc)) = &m.eager_limit_within_host {
        text = format!(
            "{text} between hosts, ≤ {} from {wsrc} within a host",
            units::bytes(*w as f64)
        );
    }
    Ok(text)
}

/// Message sizes (eager or rendezvous), the rank × rank matrix, communicators.
fn messages(out: &mut String, m: &MpiProfile) {
    match eager_limits_text(m) {
        Ok(limits) => {
            let _ = writeln!(
                out,
                "\n  message sizes (eager {limits}): {} eager, {} rendezvous",
                m.eager_messages, m.rendezvous_messages
            );
        }
        Err(r) => {
            let _ = writeln!(out, "\n  message sizes (protocol not observable: {r})");
        }
    }
    if !m.histogram.is_empty() {
        let mut t = Table::new(&["size", "messages", "bytes", "eager", "rendezvous"]);
        for b in &m.histogram {
            t.row(vec![
                format!(
                    "[{}, {})",
                    units::bytes(b.lo as f64),
                    units::bytes(b.hi as f64)
                ),
                count(b.messages as f64),
                units::bytes(b.bytes as f64),
                count(b.eager as f64),
                count(b.rendezvous as f64),
            ]);
        }
        t.render(out);
    }
    let n = m.matrix.ranks as usize;
    if n > 0 && n <= 16 && !m.matrix.pairs.is_empty() {
        out.push_str("\n  communication matrix (messages / bytes, row = sender):\n");
        let mut head = vec!["from\\to".to_string()];
        head.extend((0..n).map(|i| i.to_string()));
        let mut t = Table {
            header: head,
            rows: Vec::new(),
        };
        for s in 0..n {
            let mut row = vec![s.to_string()];
            for d in 0..n {
                row.push(match m.matrix.get(s as u32, d as u32) {
                    None => "·".into(),
                    Some(p) => format!(
                        "{} / {}",
                        count(p.messages as f64),
                        units::bytes(p.bytes as f64)
                    ),
                });
            }
            t.row(row);
        }
        t.render(out);
    }
    if m.communicators.iter().any(|c| c.id != 1) {
        out.push_str("\n  communicators:\n");
        let mut t = Table::new(&["communicator", "ranks", "messages", "bytes", "collectives"]);
        for c in &m.communicators {
            let colls: Vec<String> = c
                .collectives
                .iter()
                .map(|(name, n)| format!("{name} ×{n}"))
                .collect();
            t.row(vec![
                c.name.clone(),
                if c.size > 0 {
                    c.size.to_string()
                } else {
                    "?".into()
                },
                count(c.messages as f64),
                units::bytes(c.bytes as f64),
                colls.join(", "),
            ]);
        }
        t.render(out);
    }
}

//! Compare two analyses: per metric and per region, loop and call, the difference.

use std::collections::BTreeMap;

use crate::model::*;

pub fn compare(a: &Analysis, b: &Analysis) -> Comparison {
    let mut rows = Vec::new();
    let mut row = |section: &str, item: &str, metric: &str, x: f64, y: f64| {
        rows.push(CompareRow {
            section: section.into(),
            item: item.into(),
            metric: metric.into(),
            a: x,
            b: y,
            delta: y - x,
            ratio: (x != 0.0).then(|| y / x),
        });
    };
    row(
        "run",
        "job",
        "duration_s",
        a.run.duration_s,
        b.run.duration_s,
    );
    if let (Some(pa), Some(pb)) = (a.pop.get(), b.pop.get()) {
        fn walk(n: &PopNode, out: &mut BTreeMap<String, f64>) {
            if let Some(v) = n.value.get() {
                out.insert(n.name.clone(), *v);
            }
            for c in &n.children {
                walk(c, out);
            }
        }
        let (mut ma, mut mb) = (BTreeMap::new(), BTreeMap::new());
        walk(&pa.tree, &mut ma);
        walk(&pb.tree, &mut mb);
        for (k, v) in &ma {
            if let Some(w) = mb.get(k) {
                row("pop", k, "efficiency", *v, *w);
            }
        }
    }
    type Pair = (String, (f64, f64), (f64, f64));
    let pair = |x: &[(String, f64, f64)], y: &[(String, f64, f64)]| -> Vec<Pair> {
        let my: BTreeMap<&String, (f64, f64)> = y.iter().map(|(k, p, q)| (k, (*p, *q))).collect();
        x.iter()
            .filter_map(|(k, p, q)| my.get(k).map(|v| (k.clone(), (*p, *q), *v)))
            .collect()
    };
    let regions = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.regions.get().map_or(Vec::new(), |v| {
            v.iter()
                .map(|r| (r.location.label.clone(), r.time_s, r.fork_join_s))
                .collect()
        })
    };
    for (k, (t1, f1), (t2, f2)) in pair(&regions(a), &regions(b)) {
        row("region", &k, "time_s", t1, t2);
        row("region", &k, "fork_join_s", f1, f2);
    }
    // Phases by name: their time and the MPI time inside them.
    let phases = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.phases.get().map_or(Vec::new(), |v| {
            v.iter()
                .map(|p| (p.name.clone(), p.time_s, p.inside.mpi_s))
                .collect()
        })
    };
    for (k, (t1, m1), (t2, m2)) in pair(&phases(a), &phases(b)) {
        row("phase", &k, "time_s", t1, t2);
        row("phase", &k, "mpi_s", m1, m2);
    }
    // Their energy and EDP, where both runs measured energy.
    let energy = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.phases.get().map_or(Vec::new(), |v| {
            v.iter()
                .filter_map(|p| Some((p.name.clone(), p.energy_j?, p.edp_js?)))
                .collect()
        })
    };
    for (k, (j1, e1), (j2, e2)) in pair(&energy(a), &energy(b)) {
        row("phase", &k, "energy_j", j1, j2);
        row("phase", &k, "edp_js", e1, e2);
    }
    let loops = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.loops.get().map_or(Vec::new(), |v| {
            v.iter()
                .map(|l| (l.location.label.clone(), l.time_s, l.imbalance))
                .collect()
        })
    };
    for (k, (t1, i1), (t2, i2)) in pair(&loops(a), &loops(b)) {
        row("loop", &k, "time_s", t1, t2);
        row("loop", &k, "imbalance", i1, i2);
    }
    let calls = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.mpi.get().map_or(Vec::new(), |m| {
            m.calls
                .iter()
                .map(|c| (c.call.clone(), c.total_s, c.count as f64))
                .collect()
        })
    };
    for (k, (t1, c1), (t2, c2)) in pair(&calls(a), &calls(b)) {
        row("mpi", &k, "total_s", t1, t2);
        row("mpi", &k, "count", c1, c2);
    }
    let waits = |x: &Analysis| -> Vec<(String, f64, f64)> {
        x.wait_states.get().map_or(Vec::new(), |w| {
            w.by_kind
                .iter()
                .map(|e| (e.kind.name().to_string(), e.seconds, e.instances as f64))
                .collect()
        })
    };
    for (k, (s1, _), (s2, _)) in pair(&waits(a), &waits(b)) {
        row("wait", &k, "seconds", s1, s2);
    }
    // The matched message lists of the aligned layer: a change of the
    // communication pattern, or of what could not be matched.
    if !a.messages.messages.is_empty() || !b.messages.messages.is_empty() {
        let bytes = |x: &Analysis| x.messages.messages.iter().map(|m| m.bytes as f64).sum();
        let transit = |x: &Analysis| {
            x.messages
                .messages
                .iter()
                .map(|m| (m.recv.time - m.send.time).max(0) as f64 * 1e-9)
                .sum()
        };
        let count = |x: &Analysis| x.messages.messages.len() as f64;
        row("messages", "point-to-point", "count", count(a), count(b));
        row("messages", "point-to-point", "bytes", bytes(a), bytes(b));
        row(
            "messages",
            "point-to-point",
            "send_to_receive_s",
            transit(a),
            transit(b),
        );
        row(
            "messages",
            "point-to-point",
            "unmatched",
            a.messages.unmatched() as f64,
            b.messages.unmatched() as f64,
        );
    }
    if let (Some(ea), Some(eb)) = (a.energy.get(), b.energy.get()) {
        row("energy", "job", "joules", ea.total_joules, eb.total_joules);
        row("energy", "job", "edp_js", ea.edp_js, eb.edp_js);
    }
    Comparison {
        a: a.trace_dir.clone(),
        b: b.trace_dir.clone(),
        rows,
    }
}

//! Compare two analyses: per metric and per region, loop, call and phase,
//! the difference (B − A and B / A); what only one run has; and why the two
//! may not compare as they stand ([`caveats`]: different programs, rank,
//! thread or host counts, recording modes, partial traces, a section
//! measured in one run only).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::model::*;

/// Per item of a section (a region, a loop, a call…): its name and the
/// values of the section's metrics; `Err` with why where the section was
/// not observed in that run.
type Items = Result<Vec<(String, Vec<f64>)>, String>;

pub fn compare(a: &Analysis, b: &Analysis) -> Comparison {
    let mut d = Diff {
        rows: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        caveats: caveats(a, b),
    };
    use CompareUnit::*;
    d.section(
        "run",
        "the run",
        Ok(vec![("job".into(), vec![a.run.duration_s])]),
        Ok(vec![("job".into(), vec![b.run.duration_s])]),
        &[("duration_s", Seconds)],
    );
    let pop = |x: &Analysis| -> Items {
        fn walk(n: &PopNode, out: &mut Vec<(String, Vec<f64>)>) {
            if let Some(v) = n.value.get() {
                out.push((n.name.clone(), vec![*v]));
            }
            for c in &n.children {
                walk(c, out);
            }
        }
        observed(&x.pop, |p| {
            let mut out = Vec::new();
            walk(&p.tree, &mut out);
            out
        })
    };
    d.section(
        "pop",
        "POP efficiencies",
        pop(a),
        pop(b),
        &[("efficiency", Fraction)],
    );
    // Phases by name: their time (the slowest rank's) and the MPI time
    // inside them (summed over ranks).
    let phases = |x: &Analysis| -> Items {
        observed(&x.phases, |v| {
            v.iter()
                .map(|p| (p.name.clone(), vec![p.time_s, p.inside.mpi_s]))
                .collect()
        })
    };
    // No phases is no section, not a difference worth a caveat.
    let none_is_empty = |x: Items| x.or_else(|_| Ok(Vec::new()));
    d.section(
        "phase",
        "phases",
        none_is_empty(phases(a)),
        none_is_empty(phases(b)),
        &[("time_s", Seconds), ("mpi_s", Seconds)],
    );
    // Their energy and EDP, where both runs measured energy (the energy
    // section says when only one did).
    if a.energy.get().is_some() && b.energy.get().is_some() {
        let energy = |x: &Analysis| -> Items {
            observed(&x.phases, |v| {
                v.iter()
                    .filter_map(|p| Some((p.name.clone(), vec![p.energy_j?, p.edp_js?])))
                    .collect()
            })
            .or_else(|_| Ok(Vec::new()))
        };
        d.section(
            "phase",
            "phase energy",
            energy(a),
            energy(b),
            &[("energy_j", Joules), ("edp_js", JouleSeconds)],
        );
    }
    let regions = |x: &Analysis| -> Items {
        observed(&x.regions, |v| {
            v.iter()
                .map(|r| (r.location.label.clone(), vec![r.time_s, r.fork_join_s]))
                .collect()
        })
    };
    d.section(
        "region",
        "OpenMP parallel regions",
        regions(a),
        regions(b),
        &[("time_s", Seconds), ("fork_join_s", Seconds)],
    );
    let loops = |x: &Analysis| -> Items {
        observed(&x.loops, |v| {
            v.iter()
                .map(|l| (l.location.label.clone(), vec![l.time_s, l.imbalance]))
                .collect()
        })
    };
    d.section(
        "loop",
        "OpenMP loops",
        loops(a),
        loops(b),
        &[("time_s", Seconds), ("imbalance", Ratio)],
    );
    let calls = |x: &Analysis| -> Items {
        observed(&x.mpi, |m| {
            m.calls
                .iter()
                .map(|c| {
                    let v = vec![
                        c.total_s,
                        c.count as f64,
                        c.bytes_sent as f64,
                        c.bytes_recv as f64,
                    ];
                    (c.call.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "mpi",
        "the MPI profile",
        calls(a),
        calls(b),
        &[
            ("total_s", Seconds),
            ("count", Count),
            ("bytes_sent", Bytes),
            ("bytes_received", Bytes),
        ],
    );
    let waits = |x: &Analysis| -> Items {
        observed(&x.wait_states, |w| {
            w.by_kind
                .iter()
                .map(|e| {
                    (
                        e.kind.name().to_string(),
                        vec![e.seconds, e.instances as f64],
                    )
                })
                .collect()
        })
    };
    d.section(
        "wait",
        "MPI wait states",
        waits(a),
        waits(b),
        &[("time_s", Seconds), ("instances", Count)],
    );
    // The matched message lists of the aligned layer: a change of the
    // communication pattern, or of what could not be matched.
    if !a.messages.messages.is_empty() || !b.messages.messages.is_empty() {
        let messages = |x: &Analysis| -> Items {
            let m = &x.messages.messages;
            let bytes = m.iter().map(|m| m.bytes as f64).sum();
            let transit = m
                .iter()
                .map(|m| (m.recv.time - m.send.time).max(0) as f64 * 1e-9)
                .sum();
            let v = vec![
                m.len() as f64,
                bytes,
                transit,
                x.messages.unmatched() as f64,
            ];
            Ok(vec![("point-to-point".into(), v)])
        };
        d.section(
            "messages",
            "messages",
            messages(a),
            messages(b),
            &[
                ("count", Count),
                ("bytes", Bytes),
                ("send_to_receive_s", Seconds),
                ("unmatched", Count),
            ],
        );
    }
    let energy = |x: &Analysis| -> Items {
        observed(&x.energy, |e| {
            vec![("job".into(), vec![e.total_joules, e.edp_js])]
        })
    };
    d.section(
        "energy",
        "energy",
        energy(a),
        energy(b),
        &[("joules", Joules), ("edp_js", JouleSeconds)],
    );
    Comparison {
        a: a.trace_dir.clone(),
        b: b.trace_dir.clone(),
        side_a: side(a),
        side_b: side(b),
        caveats: d.caveats,
        rows: d.rows,
        only_in_a: d.only_in_a,
        only_in_b: d.only_in_b,
    }
}

/// An observed section's items, or why it was not observed.
fn observed<T>(x: &Observable<T>, f: impl FnOnce(&T) -> Vec<(String, Vec<f64>)>) -> Items {
    match x {
        Observable::Observed(v) => Ok(f(v)),
        Observable::NotObservable(why) => Err(why.clone()),
    }
}

/// What a comparison gathers, section by section.
struct Diff {
    rows: Vec<CompareRow>,
    only_in_a: Vec<CompareItem>,
    only_in_b: Vec<CompareItem>,
    caveats: Vec<String>,
}

impl Diff {
    /// One row per metric of each item both runs have (by name, the first
    /// of a repeated name); the others as
    /// only in A or only in B; a section observed in one run only as a
    /// caveat naming why the other has none.
    fn section(
        &mut self,
        section: &str,
        what: &str,
        a: Items,
        b: Items,
        metrics: &[(&str, CompareUnit)],
    ) {
        let (xa, xb) = match (a, b) {
            (Ok(xa), Ok(xb)) => (xa, xb),
            (Ok(xa), Err(why)) if !xa.is_empty() => {
                self.caveats
                    .push(format!("{what}: observed in A only (B: {why})"));
                return;
            }
            (Err(why), Ok(xb)) if !xb.is_empty() => {
                self.caveats
                    .push(format!("{what}: observed in B only (A: {why})"));
                return;
            }
            _ => return,
        };
        let in_b: BTreeMap<&str, &[f64]> = xb
            .iter()
            .rev()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        let in_a: BTreeSet<&str> = xa.iter().map(|(k, _)| k.as_str()).collect();
        let mut seen = BTreeSet::new();
        let item = |k: &str| CompareItem {
            section: section.into(),
            item: k.into(),
        };
        for (k, va) in &xa {
            if !seen.insert(k.as_str()) {
                continue;
            }
            let Some(vb) = in_b.get(k.as_str()) else {
                self.only_in_a.push(item(k));
                continue;
            };
            for (i, (metric, unit)) in metrics.iter().enumerate() {
                let (x, y) = (va[i], vb[i]);
                self.rows.push(CompareRow {
                    section: section.into(),
                    item: k.clone(),
                    metric: (*metric).into(),
                    a: x,
                    b: y,
                    delta: y - x,
                    ratio: (x != 0.0).then(|| y / x),
                    unit: *unit,
                });
            }
        }
        let mut seen = BTreeSet::new();
        for (k, _) in &xb {
            if !in_a.contains(k.as_str()) && seen.insert(k.as_str()) {
                self.only_in_b.push(item(k));
            }
        }
    }
}

/// Which run `x` is.
fn side(x: &Analysis) -> CompareSide {
    CompareSide {
        trace_dir: x.trace_dir.clone(),
        command: x.run.command.clone(),
        ranks: x.run.ranks,
        threads: threads(x),
        start_time: x.run.start_time.clone(),
        integrity: x.integrity.clone(),
    }
}

fn threads(x: &Analysis) -> u32 {
    x.run.threads_per_rank.iter().copied().max().unwrap_or(1)
}

/// The program a run ran: its command's file name.
fn program(x: &Analysis) -> Option<String> {
    x.run
        .command
        .first()
        .and_then(|c| Path::new(c).file_name())
        .map(|n| n.to_string_lossy().into_owned())
}

/// Why the differences between `a` and `b` may not be the program's
/// change alone: each setup difference that changes the numbers by itself,
/// and each partial trace. Empty when the two runs compare as they stand.
pub fn caveats(a: &Analysis, b: &Analysis) -> Vec<String> {
    caveats_between((a, "A"), (b, "B"), false)
}

/// [`caveats`] with the runs called by other names (`hyscope tune`: "the
/// baseline", "the tuned run"); `same_command`: the two should have run
/// the same command line, so other arguments are a caveat too (a
/// comparison's B usually differs from A by its arguments).
pub fn caveats_between(
    (a, an): (&Analysis, &str),
    (b, bn): (&Analysis, &str),
    same_command: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let (ca, cb) = (a.run.command.join(" "), b.run.command.join(" "));
    if let (Some(pa), Some(pb)) = (program(a), program(b))
        && pa != pb
    {
        out.push(format!(
            "different programs: {an} ran `{ca}`, {bn} ran `{cb}`; only what has the same name in both is compared"
        ));
    } else if same_command && ca != cb {
        out.push(format!(
            "different command lines: {an} ran `{ca}`, {bn} ran `{cb}`; their loops may differ for that alone"
        ));
    }
    if a.run.ranks != b.run.ranks {
        out.push(format!(
            "different rank counts: {an} has {} ranks, {bn} {}; the times of regions, loops, MPI calls and wait states are sums over ranks",
            a.run.ranks, b.run.ranks
        ));
    }
    let (ta, tb) = (threads(a), threads(b));
    if ta != tb {
        out.push(format!(
            "different thread counts: {an} ran up to {ta} OpenMP threads per rank, {bn} {tb}"
        ));
    }
    let (ha, hb) = (a.run.hosts.len(), b.run.hosts.len());
    if ha != hb {
        out.push(format!(
            "different host counts: {an} ran on {ha} host(s), {bn} on {hb}; messages between hosts cost more than within one"
        ));
    }
    if a.run.mode != b.run.mode {
        out.push(format!(
            "different recording modes: {an} `{}`, {bn} `{}`; profile mode keeps totals only, so some sections exist in one run only",
            a.run.mode, b.run.mode
        ));
    }
    for (name, x) in [(an, a), (bn, b)] {
        let mut lost = x.integrity.problems.iter().filter(|p| p.data_lost);
        if let Some(first) = lost.next() {
            let more = match lost.count() {
                0 => String::new(),
                n => format!(", and {n} more"),
            };
            out.push(format!(
                "{name} is a partial trace ({first}{more}): its numbers leave out what it lost, so its differences are not all the program's"
            ));
        }
    }
    out
}

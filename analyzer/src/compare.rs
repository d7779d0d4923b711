//! Compare two analyses: per metric and per region, loop, call and phase,
//! the difference (B − A and B / A); what only one run has; and why the two
//! may not compare as they stand ([`caveats`]: different programs, rank,
//! thread or host counts, recording modes, partial traces, a section
//! measured in one run only). Each difference says whether it is larger
//! than the runs' own variability ([`noise`]); runs of different rank
//! counts compare what sums over ranks per rank. Where an item's count
//! (calls, instances, messages) differs between the runs, its times are
//! compared per count too, so a change in the count is not read as a
//! change in the time of each ([`Per`]). Items are named by [`label`].

mod label;
mod noise;

pub use label::label;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::model::*;
use noise::Spread;

/// A run's value of a metric, and what its noise is estimated from.
#[derive(Debug, Clone)]
struct Value {
    v: f64,
    spread: Spread,
}

/// One value per run: a duration, an efficiency, energy.
fn one(v: f64) -> Value {
    Value {
        v,
        spread: Spread::One,
    }
}

/// A count or bytes: exact, not a measured time.
fn counted(v: f64) -> Value {
    Value {
        v,
        spread: Spread::Exact,
    }
}

/// A total of values whose scatter is `spread`.
fn total(v: f64, spread: Spread) -> Value {
    Value { v, spread }
}

/// Per item of a section (a region, a loop, a call…): its name and the
/// values of the section's metrics; `Err` with why where the section was
/// not observed in that run.
type Items = Result<Vec<(String, Vec<Value>)>, String>;

/// A compared metric: its field name, unit, and whether it sums over ranks
/// (compared per rank when the rank counts differ).
type Metric<'a> = (&'a str, CompareUnit, bool);
const SUMMED: bool = true;
const AS_IS: bool = false;

/// An item's count and the totals that sum over it (its calls' times, its
/// instances'…): where the counts differ between the runs, each total is
/// also compared per count, in a row of its own after them.
struct Per<'a> {
    /// The count's index among the section's metrics.
    count: usize,
    /// Each total's index and the name of its per-count metric.
    totals: &'a [(usize, &'a str)],
}

/// The total of values whose scatter is `s` (or why it is not known),
/// `n` of them where `s` does not say (below 2).
fn scattered(v: f64, of: &'static str, n: u64, s: &Observable<Option<Scatter>>) -> Value {
    match s {
        Observable::Observed(s) => total(v, Spread::sum(of, s.map_or(n.min(1), |s| s.values), *s)),
        Observable::NotObservable(why) => total(v, Spread::Not(why.clone())),
    }
}

pub fn compare(a: &Analysis, b: &Analysis) -> Comparison {
    let per_rank = a.run.ranks != b.run.ranks && a.run.ranks > 0 && b.run.ranks > 0;
    let mut d = Diff {
        rows: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        caveats: caveats(a, b),
        per_rank: per_rank.then(|| (1.0 / a.run.ranks as f64, 1.0 / b.run.ranks as f64)),
    };
    use CompareUnit::*;
    d.section(
        "run",
        "the run",
        Ok(vec![("job".into(), vec![one(a.run.duration_s)])]),
        Ok(vec![("job".into(), vec![one(b.run.duration_s)])]),
        &[("duration_s", Seconds, AS_IS)],
        None,
    );
    let pop = |x: &Analysis| -> Items {
        fn walk(n: &PopNode, out: &mut Vec<(String, Vec<Value>)>) {
            if let Some(v) = n.value.get() {
                out.push((n.name.clone(), vec![one(*v)]));
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
        &[("efficiency", Fraction, AS_IS)],
        None,
    );
    // Phases by name: their time (the slowest rank's; its scatter that of
    // its repetitions) and the MPI time inside them (summed over ranks;
    // its scatter that of the ranks' MPI times).
    let phases = |x: &Analysis| -> Items {
        observed(&x.phases, |v| {
            v.iter()
                .map(|p| {
                    let time = match &p.iterations {
                        Some(it) => {
                            Spread::of_values("repetitions", it.times_s.iter().map(|t| t.1))
                        }
                        None => Spread::One,
                    };
                    let mpi = Spread::of_values("ranks", p.ranks.iter().map(|r| r.inside.mpi_s));
                    (
                        p.name.clone(),
                        vec![total(p.time_s, time), total(p.inside.mpi_s, mpi)],
                    )
                })
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
        &[("time_s", Seconds, AS_IS), ("mpi_s", Seconds, SUMMED)],
        None,
    );
    // Their energy and EDP, where both runs measured energy (the energy
    // section says when only one did).
    if a.energy.get().is_some() && b.energy.get().is_some() {
        let energy = |x: &Analysis| -> Items {
            observed(&x.phases, |v| {
                v.iter()
                    .filter_map(|p| Some((p.name.clone(), vec![one(p.energy_j?), one(p.edp_js?)])))
                    .collect()
            })
            .or_else(|_| Ok(Vec::new()))
        };
        d.section(
            "phase",
            "phase energy",
            energy(a),
            energy(b),
            &[("energy_j", Joules, AS_IS), ("edp_js", JouleSeconds, AS_IS)],
            None,
        );
    }
    // Regions and loops: their times sum their instances' (whose scatter
    // the OpenMP pass keeps), their imbalance is one ratio per run.
    let regions = |x: &Analysis| -> Items {
        observed(&x.regions, |v| {
            v.iter()
                .map(|r| {
                    let n = r.instances;
                    let v = vec![
                        scattered(r.time_s, "instances", n, &r.time_scatter),
                        scattered(r.fork_join_s, "instances", n, &r.fork_join_scatter),
                        counted(n as f64),
                    ];
                    (r.location.label.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "region",
        "OpenMP parallel regions",
        regions(a),
        regions(b),
        &[
            ("time_s", Seconds, SUMMED),
            ("fork_join_s", Seconds, SUMMED),
            ("instances", Count, SUMMED),
        ],
        Some(&Per {
            count: 2,
            totals: &[(0, "time_per_instance_s")],
        }),
    );
    let loops = |x: &Analysis| -> Items {
        observed(&x.loops, |v| {
            v.iter()
                .map(|l| {
                    let v = vec![
                        scattered(l.time_s, "instances", l.instances, &l.time_scatter),
                        counted(l.instances as f64),
                        total(l.imbalance, Spread::One),
                    ];
                    (l.location.label.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "loop",
        "OpenMP loops",
        loops(a),
        loops(b),
        &[
            ("time_s", Seconds, SUMMED),
            ("instances", Count, SUMMED),
            ("imbalance", Ratio, AS_IS),
        ],
        Some(&Per {
            count: 1,
            totals: &[(0, "time_per_instance_s")],
        }),
    );
    let calls = |x: &Analysis| -> Items {
        observed(&x.mpi, |m| {
            m.calls
                .iter()
                .map(|c| {
                    let rows = c.scatter.map_or(c.count.min(1), |s| s.values);
                    let v = vec![
                        total(c.total_s, Spread::sum("calls", rows, c.scatter)),
                        counted(c.count as f64),
                        counted(c.bytes_sent as f64),
                        counted(c.bytes_recv as f64),
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
            ("total_s", Seconds, SUMMED),
            ("count", Count, SUMMED),
            ("bytes_sent", Bytes, SUMMED),
            ("bytes_received", Bytes, SUMMED),
        ],
        Some(&Per {
            count: 1,
            totals: &[(0, "time_per_call_s")],
        }),
    );
    let waits = |x: &Analysis| -> Items {
        observed(&x.wait_states, |w| {
            w.by_kind
                .iter()
                .map(|e| {
                    (
                        e.kind.name().to_string(),
                        vec![
                            total(e.seconds, Spread::sum("instances", e.instances, e.scatter)),
                            counted(e.instances as f64),
                        ],
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
        &[("time_s", Seconds, SUMMED), ("instances", Count, SUMMED)],
        Some(&Per {
            count: 1,
            totals: &[(0, "time_per_instance_s")],
        }),
    );
    // The matched message lists of the aligned layer: a change of the
    // communication pattern, or of what could not be matched.
    if !a.messages.messages.is_empty() || !b.messages.messages.is_empty() {
        let messages = |x: &Analysis| -> Items {
            let m = &x.messages.messages;
            let bytes = m.iter().map(|m| m.bytes as f64).sum();
            let ns: Vec<i64> = m
                .iter()
                .map(|m| (m.recv.time - m.send.time).max(0))
                .collect();
            let scatter = Scatter::of_ns(
                ns.len() as u64,
                ns.iter().map(|&t| t as i128).sum(),
                ns.iter().map(|&t| (t as u128) * (t as u128)).sum(),
            );
            let transit = ns.iter().sum::<i64>() as f64 * 1e-9;
            let v = vec![
                counted(m.len() as f64),
                counted(bytes),
                total(transit, Spread::sum("messages", ns.len() as u64, scatter)),
                counted(x.messages.unmatched() as f64),
            ];
            Ok(vec![("point-to-point".into(), v)])
        };
        d.section(
            "messages",
            "messages",
            messages(a),
            messages(b),
            &[
                ("count", Count, SUMMED),
                ("bytes", Bytes, SUMMED),
                ("send_to_receive_s", Seconds, SUMMED),
                ("unmatched", Count, SUMMED),
            ],
            Some(&Per {
                count: 0,
                totals: &[(2, "send_to_receive_per_message_s")],
            }),
        );
    }
    let energy = |x: &Analysis| -> Items {
        observed(&x.energy, |e| {
            vec![("job".into(), vec![one(e.total_joules), one(e.edp_js)])]
        })
    };
    d.section(
        "energy",
        "energy",
        energy(a),
        energy(b),
        &[("joules", Joules, AS_IS), ("edp_js", JouleSeconds, AS_IS)],
        None,
    );
    let mut summary = NoiseSummary::default();
    for r in d.rows.iter().filter(|r| r.a != 0.0 || r.b != 0.0) {
        *match r.noise.verdict {
            NoiseVerdict::BeyondNoise => &mut summary.beyond_noise,
            NoiseVerdict::WithinNoise => &mut summary.within_noise,
            NoiseVerdict::TooFewValues => &mut summary.too_few_values,
            NoiseVerdict::Exact => &mut summary.exact,
            NoiseVerdict::NotEstimated => &mut summary.not_estimated,
        } += 1;
    }
    Comparison {
        a: a.trace_dir.clone(),
        b: b.trace_dir.clone(),
        side_a: side(a),
        side_b: side(b),
        caveats: d.caveats,
        rows: d.rows,
        per_rank,
        noise: summary,
        only_in_a: d.only_in_a,
        only_in_b: d.only_in_b,
    }
}

/// An observed section's items, or why it was not observed.
fn observed<T>(x: &Observable<T>, f: impl FnOnce(&T) -> Vec<(String, Vec<Value>)>) -> Items {
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
    /// Different rank counts: what A's and B's summed metrics are scaled
    /// by (1 / ranks).
    per_rank: Option<(f64, f64)>,
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
        metrics: &[Metric],
        per: Option<&Per>,
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
        let in_b: BTreeMap<&str, &[Value]> = xb
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
            let first = self.rows.len();
            for (i, (metric, unit, summed)) in metrics.iter().enumerate() {
                let (sa, sb) = match self.per_rank {
                    Some(s) if *summed => s,
                    _ => (1.0, 1.0),
                };
                let (x, y) = (va[i].v * sa, vb[i].v * sb);
                let noise = noise::noise(
                    y - x,
                    (va[i].spread.clone(), sa),
                    (vb[i].spread.clone(), sb),
                );
                self.rows
                    .push(row(section, k, metric, (x, y), *unit, noise));
                self.rows[first + i].per_rank = self.per_rank.is_some() && *summed;
            }
            if let Some(per) = per {
                let counted = &self.rows[first + per.count];
                if counted.a != counted.b {
                    let at = first + 1 + per.totals.iter().fold(per.count, |m, t| m.max(t.0));
                    let rows = per_count(section, k, (va, vb), metrics, per);
                    self.rows.splice(at..at, rows);
                }
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

/// A row of `item`'s `metric`, A's value `x` and B's `y` (not per rank).
fn row(
    section: &str,
    item: &str,
    metric: &str,
    (x, y): (f64, f64),
    unit: CompareUnit,
    noise: Noise,
) -> CompareRow {
    CompareRow {
        section: section.into(),
        item: item.into(),
        metric: metric.into(),
        a: x,
        b: y,
        delta: y - x,
        ratio: (x != 0.0).then(|| y / x),
        unit,
        per_rank: false,
        noise,
    }
}

/// The rows of an item's totals per count ([`Per`]): each run's total over
/// its own count (never per rank: a time per call is one whatever the
/// ranks), its noise that of the total scaled by 1 / count.
fn per_count(
    section: &str,
    item: &str,
    (va, vb): (&[Value], &[Value]),
    metrics: &[Metric],
    per: &Per,
) -> Vec<CompareRow> {
    let (ca, cb) = (va[per.count].v, vb[per.count].v);
    if ca <= 0.0 || cb <= 0.0 {
        return Vec::new();
    }
    per.totals
        .iter()
        .map(|&(t, name)| {
            let (x, y) = (va[t].v / ca, vb[t].v / cb);
            let noise = noise::noise(
                y - x,
                (va[t].spread.clone(), 1.0 / ca),
                (vb[t].spread.clone(), 1.0 / cb),
            );
            row(section, item, name, (x, y), metrics[t].1, noise)
        })
        .collect()
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
    caveats_of((a, "A"), (b, "B"), false, true)
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
    caveats_of((a, an), (b, bn), same_command, false)
}

/// [`caveats_between`]; `per_rank`: the comparison compares what sums over
/// ranks per rank when the rank counts differ ([`compare`]), and says so.
fn caveats_of(
    (a, an): (&Analysis, &str),
    (b, bn): (&Analysis, &str),
    same_command: bool,
    per_rank: bool,
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
        let how = if per_rank {
            "what sums over ranks (the times, counts and bytes of regions, loops, MPI calls, wait states and messages, a phase's MPI time) is compared per rank, the sum / the run's ranks; the run's duration, a phase's time (its slowest rank's), efficiencies and energy as they are"
        } else {
            "the times of regions, loops, MPI calls and wait states are sums over ranks"
        };
        out.push(format!(
            "different rank counts: {an} has {} ranks, {bn} {}; {how}",
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

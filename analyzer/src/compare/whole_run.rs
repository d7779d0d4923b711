//! The rows of the run as a whole: its duration, POP's efficiencies
//! (`crate::pop`) and its energy.

use super::diff::Diff;
use super::row::AS_IS;
use super::value::{Items, Value, observed, one};
use crate::model::{Analysis, CompareUnit::*, PopNode};

/// The run's duration.
pub(super) fn duration(d: &mut Diff, a: &Analysis, b: &Analysis) {
    d.section(
        "run",
        "the run",
        Ok(vec![("job".into(), vec![one(a.run.duration_s)])]),
        Ok(vec![("job".into(), vec![one(b.run.duration_s)])]),
        &[("duration_s", Seconds, AS_IS)],
        None,
    );
}

/// Each of POP's efficiencies, one value per run.
pub(super) fn pop(d: &mut Diff, a: &Analysis, b: &Analysis) {
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
}

/// The job's energy and EDP.
pub(super) fn energy(d: &mut Diff, a: &Analysis, b: &Analysis) {
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
}

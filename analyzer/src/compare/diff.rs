//! The rows of a comparison, section by section: per metric of each item
//! both runs have, its values, difference and noise verdict; the items only
//! one run has; a section observed in one run only as a caveat.

use std::collections::{BTreeMap, BTreeSet};

use super::noise;
use super::per_count::{Per, per_count};
use super::row::{Metric, row};
use super::value::{Items, Value};
use crate::model::{CompareItem, CompareRow};

/// What a comparison gathers, section by section.
pub(super) struct Diff {
    pub(super) rows: Vec<CompareRow>,
    pub(super) only_in_a: Vec<CompareItem>,
    pub(super) only_in_b: Vec<CompareItem>,
    pub(super) caveats: Vec<String>,
    /// Different rank counts: what A's and B's summed metrics are scaled
    /// by (1 / ranks).
    pub(super) per_rank: Option<(f64, f64)>,
}

impl Diff {
    /// One row per metric of each item both runs have (by name, the first
    /// of a repeated name); the others as
    /// only in A or only in B; a section observed in one run only as a
    /// caveat naming why the other has none.
    pub(super) fn section(
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
                    let at = first + 1 + per.after();
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

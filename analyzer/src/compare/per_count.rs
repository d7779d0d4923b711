//! Where an item's count (calls, instances, messages) differs between the
//! runs, its totals compared per count too, so that a change in the count
//! is not read as a change in the time of each: `time/call` beside
//! `count`; the same rule for every section that has a count (MPI calls,
//! wait states, messages, OpenMP regions and loops, phases).

use super::noise;
use super::row::{Metric, row};
use super::value::Value;
use crate::model::CompareRow;

/// An item's count and the totals that sum over it (its calls' times, its
/// instances'…): where the counts differ between the runs, each total is
/// also compared per count, in a row of its own after them.
pub(super) struct Per<'a> {
    /// The count's index among the section's metrics.
    pub(super) count: usize,
    /// Each total: its index among the section's metrics, the index of
    /// the count it sums over, and the name of its per-count metric. That
    /// count is `count`, or a value after the section's metrics, not shown
    /// as a row of its own (a phase's time is its slowest rank's: over
    /// that rank's instances, not over every rank's).
    pub(super) totals: &'a [(usize, usize, &'a str)],
}

impl Per<'_> {
    /// The index of the last of the section's metrics the per-count rows
    /// follow: the count or the last of its totals.
    pub(super) fn after(&self) -> usize {
        self.totals
            .iter()
            .fold(self.count, |m, &(total, ..)| m.max(total))
    }
}

/// The rows of an item's totals per count ([`Per`]): each run's total over
/// its own count (never per rank: a time per call is one whatever the
/// ranks), its noise that of the total scaled by 1 / count; none for a
/// total whose count is 0 in either run.
pub(super) fn per_count(
    section: &str,
    item: &str,
    (va, vb): (&[Value], &[Value]),
    metrics: &[Metric],
    per: &Per,
) -> Vec<CompareRow> {
    per.totals
        .iter()
        .filter_map(|&(t, over, name)| {
            let (ca, cb) = (va[over].v, vb[over].v);
            if ca <= 0.0 || cb <= 0.0 {
                return None;
            }
            let (x, y) = (va[t].v / ca, vb[t].v / cb);
            let noise = noise::noise(
                y - x,
                (va[t].spread.clone(), 1.0 / ca),
                (vb[t].spread.clone(), 1.0 / cb),
            );
            Some(row(section, item, name, (x, y), metrics[t].1, noise))
        })
        .collect()
}

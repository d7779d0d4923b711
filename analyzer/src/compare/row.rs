//! One row of a comparison: an item's metric, A's and B's values, their
//! difference and ratio, and its noise verdict; and what a section says of
//! each of its metrics.

use crate::model::{CompareRow, CompareUnit, Noise};

/// A compared metric: its field name, unit, and whether it sums over ranks
/// (compared per rank when the rank counts differ).
pub(super) type Metric<'a> = (&'a str, CompareUnit, bool);
pub(super) const SUMMED: bool = true;
pub(super) const AS_IS: bool = false;

/// A row of `item`'s `metric`, A's value `x` and B's `y` (not per rank).
pub(super) fn row(
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

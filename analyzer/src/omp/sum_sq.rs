//! The sums of squares the OpenMP aggregates keep beside their times, so a
//! region's or loop's total has a scatter to weigh a comparison's
//! difference against (`compare::noise`), as the MPI profile's calls have.

use hyscope_format::{OmpRecord, SUMMARY_SUM_SQ_MAX, SUMMARY_SUM_SQ_SINCE, version_at_least};
use serde::{Deserialize, Serialize};

use crate::model::{Observable, Scatter};

/// Σ of an item's per-instance times squared (ns², exact: the same however
/// the ranks were split and merged); `None` where some of them came from
/// rows that do not carry it (profile-mode `summary` rows of traces before
/// format 1.10, or one whose sum does not fit its total). A row's sum is
/// its column `duration_sq_sum_ns2` (format 1.11), or in a 1.10 trace its
/// `task_id` and `requested_team_size`: `OmpRecord::summary_sum_sq` reads
/// either, as `hyscope_format` read the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SumSq(Option<u128>);

impl Default for SumSq {
    /// No values yet: a known sum of 0.
    fn default() -> Self {
        SumSq(Some(0))
    }
}

impl SumSq {
    /// One instance of `ns`.
    pub(super) fn add_ns(&mut self, ns: i64) {
        let d = ns.max(0) as u128;
        self.0 = self.0.map(|s| s.saturating_add(d * d));
    }

    /// Another part's sum.
    pub(super) fn add(&mut self, o: SumSq) {
        self.0 = match (self.0, o.0) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
    }

    /// A profile-mode `summary` row's intervals: their sum of squares where
    /// the row carries one that fits its count and total (n · Σd² ≥ (Σd)²,
    /// Cauchy–Schwarz; traces before 1.10 carry 0, and a lost one, overflowed
    /// or null in its column, reads as `SUMMARY_SUM_SQ_MAX`), else unknown.
    pub(super) fn add_summary(&mut self, r: &OmpRecord) {
        let sq = r.summary_sum_sq();
        let total = u128::from(r.chunk_start);
        let fits = sq < SUMMARY_SUM_SQ_MAX
            && u128::from(r.count)
                .checked_mul(sq)
                .is_none_or(|n_sq| n_sq >= total * total);
        self.add(SumSq(fits.then_some(sq)));
    }

    /// The scatter of `n` values summing to `sum` ns (None below 2); None
    /// where the sum of squares is not known.
    pub(super) fn scatter(self, n: u64, sum: i64) -> Option<Option<Scatter>> {
        self.0.map(|sq| Scatter::of_ns(n, i128::from(sum), sq))
    }

    /// [`SumSq::scatter`] as the model states it, with why not where the
    /// sum is unknown, for a trace of format `version`.
    pub(super) fn observed(self, n: u64, sum: i64, version: &str) -> Observable<Option<Scatter>> {
        match self.scatter(n, sum) {
            Some(s) => Observable::Observed(s),
            None if !version_at_least(version, SUMMARY_SUM_SQ_SINCE) => {
                let (major, minor) = SUMMARY_SUM_SQ_SINCE;
                Observable::not(format!(
                    "recorded in profile mode before format {major}.{minor} (this trace: {version}), whose totals keep no sums of squares: no scatter of its instances' times"
                ))
            }
            None => Observable::not(
                "its profile-mode rows' sums of squares do not fit their totals (damaged rows): no scatter of its instances' times",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(count: u64, total: u64, sum_sq: u128) -> OmpRecord {
        let mut r = OmpRecord {
            count,
            chunk_start: total,
            ..OmpRecord::default()
        };
        r.set_summary_sum_sq(sum_sq);
        r
    }

    /// 2, 4 and 6 ms: sd 2 ms, whether added one by one or as a summary
    /// row; a row of an older trace (0) or one that cannot be (below
    /// (Σd)² / n) leaves the sum unknown, and so does a part of it.
    #[test]
    fn summaries_add_up_as_instances_and_old_rows_are_unknown() {
        let ms = 1_000_000i64;
        let mut one_by_one = SumSq::default();
        for d in [2 * ms, 4 * ms, 6 * ms] {
            one_by_one.add_ns(d);
        }
        let mut summed = SumSq::default();
        summed.add_summary(&summary(3, 12 * ms as u64, 56 * (ms as u128).pow(2)));
        assert_eq!(summed, one_by_one);
        let s = summed.scatter(3, 12 * ms).unwrap().unwrap();
        assert_eq!(s.values, 3);
        assert!((s.sd - 0.002).abs() < 1e-12, "{s:?}");

        let mut old = SumSq::default();
        old.add_summary(&summary(3, 12 * ms as u64, 0));
        assert_eq!(old.scatter(3, 12 * ms), None);
        let mut short = SumSq::default();
        short.add_summary(&summary(3, 12 * ms as u64, 47 * (ms as u128).pow(2)));
        assert_eq!(short.scatter(3, 12 * ms), None);
        summed.add(old);
        assert_eq!(summed.scatter(6, 24 * ms), None);
        // Intervals of no time: a sum of 0 is their sum.
        let mut zero = SumSq::default();
        zero.add_summary(&summary(5, 0, 0));
        assert_eq!(zero.scatter(5, 0), Some(Scatter::of_ns(5, 0, 0)));
    }

    /// A region of one instance of 100 h and one of 101 h: their squares
    /// (2.6e29 ns²) pass the 96 bits format 1.10 held, not format 1.11's
    /// column; the scatter is that of the two, sd √0.5 h.
    #[test]
    fn sums_beyond_96_bits_are_known() {
        let h = 3_600_000_000_000u128;
        let (a, b) = (100 * h, 101 * h);
        let mut sq = SumSq::default();
        sq.add_summary(&summary(2, (a + b) as u64, a * a + b * b));
        let s = sq.scatter(2, (a + b) as i64).unwrap().unwrap();
        assert!((s.sd - 0.5f64.sqrt() * 3600.0).abs() < 1e-6, "{s:?}");
    }
}

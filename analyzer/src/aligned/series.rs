//! Sampled metrics as time series on global time, for the charts and the
//! counter tracks of every view.

use std::collections::BTreeMap;

use hyscope_format::SampleRecord;
use hyscope_format::metrics::{ENERGY_PREFIX, MPI_PEER_PREFIX};

use super::clock::{Clocks, GlobalNs};

/// One metric, key and rank: `(global time, value)`, time-ordered.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleSeries {
    pub metric: String,
    /// Peer, package… (-1 when the metric has no key).
    pub key: i64,
    pub rank: u32,
    pub points: Vec<(GlobalNs, f64)>,
}

/// Whether a sampled metric is a time series to plot: all but the per-peer
/// message counters (per-peer totals and the time of first contact, shown by
/// the MPI matrix), and only finite values.
pub fn plotted(metric: &str, value: f64) -> bool {
    !metric.starts_with(MPI_PEER_PREFIX) && value.is_finite()
}

/// Whether a metric is a cumulative energy counter (plotted as power).
pub fn is_energy(metric: &str) -> bool {
    metric.starts_with(ENERGY_PREFIX)
}

/// Group the `samples` rows (rank-local times) into the [`plotted`] series,
/// ordered by (metric, key, rank).
pub fn sample_series(
    clocks: &Clocks,
    rows: impl IntoIterator<Item = (u32, SampleRecord)>,
) -> Vec<SampleSeries> {
    let mut by: BTreeMap<(String, i64, u32), Vec<(GlobalNs, f64)>> = BTreeMap::new();
    for (rank, s) in rows {
        if !plotted(&s.metric, s.value) {
            continue;
        }
        let t = clocks.to_global(rank, s.time_ns);
        by.entry((s.metric, s.key, rank))
            .or_default()
            .push((t, s.value));
    }
    by.into_iter()
        .map(|((metric, key, rank), mut points)| {
            points.sort_by_key(|p| p.0);
            SampleSeries {
                metric,
                key,
                rank,
                points,
            }
        })
        .collect()
}

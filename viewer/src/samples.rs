//! Sampled metrics (connections, RSS, MPI_T queues, energy) as every view
//! plots them: the TUI's charts per (metric, rank) read from the `samples`
//! table (one row per metric per sampling period, small next to the event
//! tables), and the step shapes the TUI's charts and the GUI's counter tracks
//! both draw.

use std::collections::BTreeMap;
use std::path::Path;

use hyscope_analyzer::aligned::Clocks;
use hyscope_analyzer::aligned::series::sample_series;
use hyscope_format::{SampleRecord, ScanOptions, Trace};

/// One metric of one rank: `(time_ns on rank 0's clock, value)`, time-ordered.
/// Values of the same metric and time with different keys (peers, packages)
/// are summed: the chart shows the rank's total.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub metric: String,
    pub rank: u32,
    pub points: Vec<(i64, f64)>,
}

/// Every plotted metric ([`hyscope_analyzer::aligned::series::plotted`]) of
/// the trace, on global time. A rank with a damaged `samples` part has no
/// series: it is left out whole ([`hyscope_analyzer::damaged_parts`]), as
/// the analysis, which names the file, leaves it out.
pub fn load_series(dir: &Path) -> Result<Vec<Series>, String> {
    use hyscope_analyzer::damaged_parts::{read_part, whole_ranks};
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let options = ScanOptions::default();
    let (by_rank, _) = whole_ranks(
        trace
            .parts(hyscope_format::Table::Samples)
            .iter()
            .map(|p| (p.rank, read_part::<SampleRecord>(p, &options))),
    );
    let rows: Vec<(u32, SampleRecord)> = by_rank
        .into_iter()
        .flat_map(|(rank, v)| v.into_iter().map(move |s| (rank, s)))
        .collect();
    let clocks = Clocks::from_manifest(&trace.manifest);
    let mut by: BTreeMap<(String, u32), BTreeMap<i64, f64>> = BTreeMap::new();
    for s in sample_series(&clocks, rows) {
        let e = by.entry((s.metric, s.rank)).or_default();
        for (t, v) in s.points {
            *e.entry(t.ns()).or_default() += v;
        }
    }
    Ok(by
        .into_iter()
        .map(|((metric, rank), pts)| Series {
            metric,
            rank,
            points: pts.into_iter().collect(),
        })
        .collect())
}

/// Samples `(time, value)` as a step line: each value holds until the next
/// sample's time, and the last one until `end` when it is later.
pub fn steps(points: &[(i64, f64)], end: Option<i64>) -> Vec<(i64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 1);
    for (i, &(t, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push((t, points[i - 1].1));
        }
        out.push((t, v));
    }
    if let (Some(&(t, v)), Some(end)) = (points.last(), end)
        && end > t
    {
        out.push((end, v));
    }
    out
}

/// A cumulative counter `(time ns, value)` as its mean rate per second over
/// each sampling interval, drawn over that interval (power from energy).
pub fn rate_steps(points: &[(i64, f64)]) -> Vec<(i64, f64)> {
    points
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .flat_map(|w| {
            let rate = (w[1].1 - w[0].1) / ((w[1].0 - w[0].0) as f64 * 1e-9);
            [(w[0].0, rate), (w[1].0, rate)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_shapes() {
        let p = [(0, 1.0), (10, 3.0)];
        assert_eq!(steps(&p, None), [(0, 1.0), (10, 1.0), (10, 3.0)]);
        assert_eq!(
            steps(&p, Some(20)),
            [(0, 1.0), (10, 1.0), (10, 3.0), (20, 3.0)]
        );
        assert_eq!(
            steps(&p, Some(5)).len(),
            3,
            "an end before the last sample adds nothing"
        );
        // 0.5 J over 5 ms, then none: 100 W, then 0 W; a repeated time is skipped.
        let e = [
            (0, 0.0),
            (5_000_000, 0.5),
            (5_000_000, 0.5),
            (10_000_000, 0.5),
        ];
        assert_eq!(
            rate_steps(&e),
            [
                (0, 100.0),
                (5_000_000, 100.0),
                (5_000_000, 0.0),
                (10_000_000, 0.0)
            ]
        );
    }
}

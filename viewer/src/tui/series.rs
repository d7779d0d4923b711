//! Sampled metrics over time (connections, RSS, MPI_T queues, energy) for the
//! Memory and Energy charts: the raw `samples` table, read once on the loader
//! thread (it holds one row per metric per sampling period, small next to the
//! event tables), grouped per (metric, rank) on rank 0's clock.

use std::collections::BTreeMap;
use std::path::Path;

use hyscope_analyzer::aligned::Clocks;
use hyscope_analyzer::aligned::series::sample_series;
use hyscope_format::reader::ScanOptions;
use hyscope_format::{SampleRecord, Trace};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, LegendPosition};

use super::widgets;
use crate::units;

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
/// the trace, on global time.
pub fn load_series(dir: &Path) -> Result<Vec<Series>, String> {
    let trace = Trace::open(dir).map_err(|e| e.to_string())?;
    let rows = trace
        .read_records::<SampleRecord>(&ScanOptions::default())
        .map_err(|e| e.to_string())?;
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

const COLORS: [Color; 6] = [
    Color::Cyan,
    Color::Yellow,
    Color::Green,
    Color::Magenta,
    Color::Blue,
    Color::Red,
];

/// A line chart of several series against seconds since `origin`; `unit`
/// formats the y labels. `derive` plots the rate between consecutive samples
/// (power from a cumulative energy counter) instead of the values.
pub fn chart(
    f: &mut Frame,
    area: Rect,
    title: &str,
    series: &[&Series],
    origin: i64,
    derive: bool,
    unit: fn(f64) -> String,
) {
    let data: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            let pts: Vec<(f64, f64)> = if derive {
                // A step per sampling interval: the mean rate over it.
                s.points
                    .windows(2)
                    .filter(|w| w[1].0 > w[0].0)
                    .flat_map(|w| {
                        let dt = (w[1].0 - w[0].0) as f64 / 1e9;
                        let rate = (w[1].1 - w[0].1) / dt;
                        let x = |t: i64| (t - origin) as f64 / 1e9;
                        [(x(w[0].0), rate), (x(w[1].0), rate)]
                    })
                    .collect()
            } else {
                // Steps: a sampled value holds until the next sample.
                let x = |t: i64| (t - origin) as f64 / 1e9;
                let mut out = Vec::with_capacity(s.points.len() * 2);
                for (i, &(t, v)) in s.points.iter().enumerate() {
                    if i > 0 {
                        out.push((x(t), s.points[i - 1].1));
                    }
                    out.push((x(t), v));
                }
                out
            };
            (format!("rank {}", s.rank), pts)
        })
        .collect();
    let all = data.iter().flat_map(|d| d.1.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0_f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        widgets::not_observable(f, area, title, "no samples of this metric in the trace");
        return;
    }
    let x0 = x0.min(0.0);
    let x1 = if x1 > x0 { x1 } else { x0 + 1e-3 };
    let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
    let datasets: Vec<Dataset> = data
        .iter()
        .enumerate()
        .map(|(i, (name, pts))| {
            Dataset::default()
                .name(name.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(COLORS[i % COLORS.len()]))
                .data(pts)
        })
        .collect();
    let c = Chart::new(datasets)
        .block(widgets::block(title.to_string()))
        .legend_position(Some(LegendPosition::TopLeft))
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels([Line::from(units::secs(x0)), Line::from(units::secs(x1))]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y1])
                .labels([Line::from(unit(0.0)), Line::from(unit(y1 / 1.1))]),
        );
    f.render_widget(c, area);
}

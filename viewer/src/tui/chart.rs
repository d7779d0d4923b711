//! A line chart of sampled metrics ([`crate::samples`]) for the Memory and
//! Energy tabs.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, LegendPosition};

use super::widgets;
use crate::samples::{Series, rate_steps, steps};
use crate::units;

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
            let shape = if derive {
                rate_steps(&s.points)
            } else {
                steps(&s.points, None)
            };
            let pts: Vec<(f64, f64)> = shape
                .into_iter()
                .map(|(t, v)| ((t - origin) as f64 / 1e9, v))
                .collect();
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

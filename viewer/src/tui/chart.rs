//! A line chart of sampled metrics ([`crate::samples`]) for the Memory and
//! Energy tabs.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
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

/// Columns of the y labels of [`chart_over`]: `1023.99 MiB` and `1023.9 mW`
/// fit.
const Y_LABEL_WIDTH: usize = 11;

/// A line chart of several series against seconds since `origin`; `unit`
/// formats the y labels. `derive` plots the rate between consecutive samples
/// (power from a cumulative energy counter) instead of the values. The x axis
/// spans the samples (from 0 at least); [`chart_over`] gives the charts of a
/// tab one x axis instead.
pub fn chart(
    f: &mut Frame,
    area: Rect,
    title: &str,
    series: &[&Series],
    origin: i64,
    derive: bool,
    unit: fn(f64) -> String,
) {
    draw(f, area, title, series, origin, None, derive, unit)
}

/// As [`chart`], on the x axis `0 … duration_s` seconds since `origin` (the
/// run's time span), whatever the samples span: the charts of one tab given
/// the same span line up, a column the same time in each. A sample before 0
/// (the collector may take one just before the run's time 0) is drawn at 0,
/// one after the end at the end; a step reaches the end of the span.
#[allow(clippy::too_many_arguments)]
pub fn chart_over(
    f: &mut Frame,
    area: Rect,
    title: &str,
    series: &[&Series],
    origin: i64,
    duration_s: f64,
    derive: bool,
    unit: fn(f64) -> String,
) {
    draw(
        f,
        area,
        title,
        series,
        origin,
        Some(duration_s),
        derive,
        unit,
    )
}

/// An x axis label: the time as [`units::secs`] writes it, never with a
/// leading space, and `0 ns` for the tiny negatives of a clamp.
fn x_label(s: f64) -> String {
    units::secs(s.max(0.0)).trim().to_string()
}

#[allow(clippy::too_many_arguments)]
fn draw(
    f: &mut Frame,
    area: Rect,
    title: &str,
    series: &[&Series],
    origin: i64,
    span: Option<f64>,
    derive: bool,
    unit: fn(f64) -> String,
) {
    let span = span.filter(|d| d.is_finite() && *d > 0.0);
    let end = span.map(|d| origin + (d * 1e9).round() as i64);
    let data: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            let shape = if derive {
                rate_steps(&s.points)
            } else {
                steps(&s.points, end)
            };
            let pts: Vec<(f64, f64)> = shape
                .into_iter()
                .map(|(t, v)| {
                    let x = ((t - origin) as f64 / 1e9).max(0.0);
                    (span.map_or(x, |d| x.min(d)), v)
                })
                .collect();
            (format!("rank {}", s.rank), pts)
        })
        .collect();
    let all = data.iter().flat_map(|d| d.1.iter());
    let (mut x1, mut y1, mut any) = (0.0_f64, 0.0_f64, false);
    for &(x, y) in all {
        any = true;
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !any {
        widgets::not_observable(f, area, title, "no samples of this metric in the trace");
        return;
    }
    let x0 = 0.0;
    let x1 = match span {
        Some(d) => d,
        None if x1 > x0 => x1,
        None => x0 + 1e-3,
    };
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
                // The first label starts at the y axis, where its time is.
                .labels_alignment(Alignment::Right)
                .labels([Line::from(x_label(x0)), Line::from(x_label(x1))]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y1])
                .labels([unit(0.0), unit(y1 / 1.1)].map(|l| match span {
                    // One width for the y labels of every chart on the run's
                    // span: their plots start in the same column.
                    Some(_) => Line::from(format!("{:<Y_LABEL_WIDTH$}", l.trim())),
                    None => Line::from(l),
                })),
        );
    f.render_widget(c, area);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::layout::{Constraint, Layout};

    use super::*;

    const MS: i64 = 1_000_000;

    fn series(metric: &str, points: Vec<(i64, f64)>) -> Series {
        Series {
            metric: metric.into(),
            rank: 0,
            points,
        }
    }

    /// The lines of a frame, as text.
    fn lines(t: &Terminal<TestBackend>) -> Vec<String> {
        let b = t.backend().buffer();
        (0..b.area.height)
            .map(|y| {
                (0..b.area.width)
                    .map(|x| b[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect()
    }

    /// The x axis labels' line of each chart: the last line inside its borders.
    fn x_axes(lines: &[String], h: usize) -> Vec<String> {
        lines
            .chunks(h)
            .map(|c| c[h - 2].trim_matches(['│', ' ']).to_string())
            .collect()
    }

    #[test]
    fn the_charts_of_a_tab_share_the_runs_time_axis() {
        let origin = 1_000 * MS;
        // As in uv-1: connections sampled until 861 ms, VmRSS from a sample
        // just before the run's time 0 to after its end, MPI_T in between.
        let conn = series(
            "mpi.connections",
            vec![(origin, 0.0), (origin + 861 * MS, 1.0)],
        );
        let rss = series(
            "mem.vmrss",
            vec![(origin - 666_400, 3e7), (origin + 1_527 * MS, 4e7)],
        );
        let mpit = series(
            "mpi_t.q",
            vec![(origin + 10 * MS, 2.0), (origin + 1_447 * MS, 3.0)],
        );
        let mut t = Terminal::new(TestBackend::new(60, 24)).unwrap();
        let count = |v: f64| format!("{v:.0}");
        t.draw(|f| {
            let areas = Layout::vertical([Constraint::Length(8); 3]).split(f.area());
            for (area, s) in areas.iter().zip([&conn, &rss, &mpit]) {
                chart_over(f, *area, &s.metric, &[s], origin, 1.527, false, count);
            }
        })
        .unwrap();
        let lines = lines(&t);
        let axes = x_axes(&lines, 8);
        println!("{}", lines.join("\n"));
        for a in &axes {
            assert!(a.starts_with("0 ns") && a.ends_with("1.527 s"), "{a:?}");
        }
        // The same columns: each label line is the same text at the same place.
        let at = |i: usize| lines[i * 8 + 6].clone();
        assert_eq!(at(0), at(1));
        assert_eq!(at(1), at(2));
        // No label starts with a space or writes a negative time.
        assert!(
            !lines.iter().any(|l| l.contains('-') && l.contains("µs")),
            "{lines:?}"
        );
    }

    #[test]
    fn axis_labels_have_no_leading_space() {
        assert_eq!(x_label(-0.000_666_4), "0 ns");
        assert_eq!(x_label(1.527), "1.527 s");
    }
}

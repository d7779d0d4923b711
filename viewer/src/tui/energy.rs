//! Energy tab: energy per domain and per phase, or "not measured" and why.

use hyscope_format::metrics;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::{App, Tab};
use super::fmt;
use super::widgets;
use crate::units;

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "Energy");
    };
    let e = match &a.energy {
        hyscope_analyzer::Observable::Observed(e) => e,
        hyscope_analyzer::Observable::NotObservable(why) => {
            widgets::text(
                f,
                area,
                "Energy",
                &[
                    (
                        "Energy: not measured".into(),
                        Style::default().fg(Color::Yellow),
                    ),
                    (String::new(), Style::default()),
                    (why.clone(), Style::default()),
                ],
            );
            return;
        }
    };
    let [top, power, bottom] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(6),
        Constraint::Length(7),
    ])
    .areas(area);
    // Power between consecutive samples of the cumulative energy counters.
    super::chart::chart(
        f,
        power,
        "power over time (W)",
        &app.data.series(metrics::ENERGY_PREFIX),
        app.data.origin(),
        true,
        units::watts,
    );
    f.render_widget(
        Paragraph::new(Line::from(format!(
            "total {}  average power {}  energy-delay {}",
            units::joules(e.total_joules),
            units::watts(e.avg_power_w),
            units::joule_seconds(e.edp_js)
        )))
        .block(widgets::block("Energy")),
        top,
    );
    let [phases, domains] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
    let max = e
        .phases
        .iter()
        .map(|p| p.joules)
        .fold(0.0, f64::max)
        .max(1e-12);
    let w = phases.width.saturating_sub(36) as usize;
    let lines: Vec<Line<'static>> = e
        .phases
        .iter()
        .map(|p| {
            Line::from(vec![
                Span::raw(format!("{:<15}", fmt::clip(&p.phase, 15))),
                Span::styled(
                    fmt::bar(p.joules / max, w),
                    Style::default().fg(Color::Yellow),
                ),
                Span::raw(format!(
                    " {} {}",
                    units::joules(p.joules),
                    units::secs(p.seconds)
                )),
            ])
        })
        .collect();
    widgets::lines(f, phases, "energy per phase", lines);
    let rows = e
        .domains
        .iter()
        .map(|d| {
            vec![
                d.host.clone(),
                format!("{} #{}", d.metric, d.package),
                units::joules(d.joules),
                units::watts(d.avg_power_w),
            ]
        })
        .collect();
    widgets::scroll_table(
        f,
        domains,
        "domains".into(),
        &widgets::Fit {
            header: &["host", "domain", "energy", "power"],
            keep: &[5, 9, 8, 6],
            flex: 0,
            flex_min: 5,
            sorted_col: None,
            ascending: false,
        },
        rows,
        &mut app.nav[Tab::Energy.index()].scroll,
    );
}

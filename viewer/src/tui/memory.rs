//! Memory tab: the MPI footprint of each rank now, the projection to large
//! rank counts (chart), and the connections and queue pairs behind it.

use hyscope_analyzer::MemoryFootprint;
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

pub const VIEWS: [&str; 2] = ["footprint and projection", "over time"];

/// Connections, RSS and MPI_T queue lengths over the run, per rank.
fn over_time(f: &mut Frame, area: Rect, app: &App) {
    let d = &app.data;
    let origin = d.origin();
    let [a, b, c] = Layout::vertical([
        Constraint::Ratio(1, 3),
        Constraint::Ratio(1, 3),
        Constraint::Ratio(1, 3),
    ])
    .areas(area);
    let count = |v: f64| format!("{v:.0}");
    super::chart::chart(
        f,
        a,
        "MPI connections",
        &d.series(metrics::MPI_CONNECTIONS),
        origin,
        false,
        count,
    );
    super::chart::chart(
        f,
        b,
        "resident memory (VmRSS)",
        &d.series(metrics::MEM_VMRSS),
        origin,
        false,
        units::bytes,
    );
    super::chart::chart(
        f,
        c,
        "MPI_T queue lengths",
        &d.series("mpi_t."),
        origin,
        false,
        count,
    );
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map(|b| units::bytes(b as f64))
        .unwrap_or_else(|| "—".into())
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let view = app.nav[Tab::Memory.index()].view.min(VIEWS.len() - 1);
    app.nav[Tab::Memory.index()].view = view;
    let [head, area] = Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(area);
    widgets::view_bar(f, head, &VIEWS, view);
    if view == 1 {
        return over_time(f, area, app);
    }
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "Memory");
    };
    let Some(m) = widgets::observed(f, area, "Memory", &a.memory) else {
        return;
    };
    let n = m.per_rank.len() as u16;
    let [now, proj] =
        Layout::vertical([Constraint::Length((n + 4).clamp(5, 10)), Constraint::Min(6)])
            .areas(area);
    let sel = app.nav[Tab::Memory.index()]
        .selected
        .min(m.per_rank.len().saturating_sub(1));
    app.nav[Tab::Memory.index()].selected = sel;
    let rows = m
        .per_rank
        .iter()
        .filter(|r| app.matches(&format!("rank {} {}", r.rank, r.host)))
        .map(|r| {
            vec![
                r.rank.to_string(),
                r.peers_observed.to_string(),
                match r.connections_measured {
                    Some(c) => format!("{c} (meas.)"),
                    None => format!("{} (est.)", r.connections_estimated),
                },
                opt_bytes(r.rss_after_init),
                opt_bytes(r.mpi_init_delta),
                opt_bytes(r.rss_peak),
                units::bytes(r.buffer_bytes_observed),
                r.communicators.to_string(),
            ]
        })
        .collect();
    widgets::table(
        f,
        now,
        format!(
            "footprint now — {} nodes × {} ranks, pattern: {}",
            m.nodes,
            m.cores_per_node,
            fmt::clip(&m.pattern, 30)
        ),
        &[
            "rank",
            "peers",
            "connections",
            "rss@init",
            "MPI init",
            "peak",
            "buffers",
            "comms",
        ],
        None,
        false,
        &[
            Constraint::Length(4),
            Constraint::Length(5),
            Constraint::Length(12),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(10),
            Constraint::Length(5),
        ],
        rows,
        Some(sel),
    );
    projection(f, proj, m);
}

/// Bars of the projected footprint per rank (log scale: rank counts span decades).
fn projection(f: &mut Frame, area: Rect, m: &MemoryFootprint) {
    let [chart, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(area);
    let max = m
        .projections
        .iter()
        .map(|p| p.total_bytes_per_rank)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let w = chart.width.saturating_sub(24) as usize;
    let mut lines = Vec::new();
    for p in &m.projections {
        let over = p.exceeds_memory_per_core == Some(true);
        let frac = (1.0 + p.total_bytes_per_rank).ln() / (1.0 + max).ln();
        lines.push(Line::from(vec![
            Span::raw(format!("{:>8} rk ", fmt::count(p.ranks))),
            Span::styled(
                fmt::bar(frac, w),
                Style::default().fg(if over { Color::Red } else { Color::Cyan }),
            ),
            Span::raw(format!(" {}", units::bytes(p.total_bytes_per_rank))),
        ]));
        lines.push(Line::from(format!(
            "{:>12}conn {:.0}  QP/node RC {:.0} XRC {:.0} UD {:.0}",
            "", p.connections_per_rank, p.qp_rc_per_node, p.qp_xrc_per_node, p.qp_ud_per_node
        )));
    }
    if let Some(mpc) = m.memory_per_core {
        lines.push(Line::from(format!(
            "memory per core {}",
            units::bytes(mpc as f64)
        )));
    }
    f.render_widget(
        Paragraph::new(lines).block(widgets::block("projected MPI memory per rank")),
        chart,
    );
    let mut text = vec![Line::from(format!(
        "per connection {}  groups {}",
        units::bytes(m.bytes_per_connection),
        units::bytes(m.group_map_bytes_per_rank)
    ))];
    for q in &m.qp_table {
        text.push(Line::from(format!(
            "{}: {:.0} now, {:.0} full ({})",
            q.transport, q.observed_per_node, q.full_per_node, q.formula
        )));
    }
    for c in &m.full_connection_calls {
        text.push(Line::styled(
            format!("{} ×{} connects everyone", c.call, c.count),
            Style::default().fg(Color::Yellow),
        ));
    }
    for p in &m.parameters {
        text.push(Line::from(format!(
            "{} = {} {} ({})",
            p.name, p.value, p.unit, p.source
        )));
    }
    f.render_widget(
        Paragraph::new(text)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(widgets::block("connections and queue pairs")),
        side,
    );
}

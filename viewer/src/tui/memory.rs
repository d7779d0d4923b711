//! Memory tab: the MPI footprint of each rank now, the projection to large
//! rank counts (chart), and the connections and queue pairs behind it.

use hyscope_analyzer::MemoryFootprint;
use hyscope_format::metrics;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::app::{App, Tab};
use super::fmt;
use super::widgets;
use crate::units;

pub const VIEWS: [&str; 2] = ["footprint and projection", "over time"];

/// Connections, RSS and MPI_T queue lengths over the run, per rank, on one
/// time axis: the run's span, from 0 to its duration as the Summary writes it.
fn over_time(f: &mut Frame, area: Rect, app: &App) {
    let d = &app.data;
    let origin = d.origin();
    let duration_s = d.duration_ns().map(|ns| ns / 1e9).unwrap_or(0.0);
    let chart = |f: &mut Frame, area, title: &str, series: &[&_], unit| {
        super::chart::chart_over(f, area, title, series, origin, duration_s, false, unit)
    };
    let [a, b, c] = Layout::vertical([
        Constraint::Ratio(1, 3),
        Constraint::Ratio(1, 3),
        Constraint::Ratio(1, 3),
    ])
    .areas(area);
    let count = |v: f64| format!("{v:.0}");
    chart(
        f,
        a,
        "MPI connections",
        &d.series(metrics::MPI_CONNECTIONS),
        count,
    );
    chart(
        f,
        b,
        "resident memory (VmRSS)",
        &d.series(metrics::MEM_VMRSS),
        units::bytes,
    );
    chart(f, c, "MPI_T queue lengths", &d.series("mpi_t."), count);
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
                    Some(c) => format!(
                        "{}+{} ({c} meas.)",
                        r.intra_node_connections, r.inter_node_connections
                    ),
                    None => format!("{}+{}", r.intra_node_connections, r.inter_node_connections),
                },
                opt_bytes(r.rss_after_init),
                opt_bytes(r.mpi_init_delta),
                opt_bytes(r.rss_peak),
                units::bytes(r.shm_buffer_bytes),
                crate::report::memory::modelled_bytes(r.network_buffer_bytes),
                r.communicators.to_string(),
            ]
        })
        .collect();
    widgets::fit_table(
        f,
        now,
        format!(
            "footprint now — {} nodes × {} ranks, pattern: {}",
            m.nodes,
            m.cores_per_node,
            fmt::clip(&m.pattern, 30)
        ),
        &widgets::Fit {
            header: &[
                "rank",
                "peers",
                "conn node+net",
                "rss@init",
                "MPI init",
                "peak",
                "shm",
                "net buf",
                "comms",
            ],
            keep: &[9, 5, 8, 6, 4, 7, 6, 6, 3],
            flex: 0,
            flex_min: 4,
            sorted_col: None,
            ascending: false,
        },
        rows,
        Some(sel),
    );
    projection(f, proj, m);
}

/// Columns the projection chart takes at least (where the frame has them):
/// at 80 columns, its rows with six-character rank counts and bytes up to
/// `1023.99 MiB` are not cut.
const CHART_MIN_WIDTH: u16 = 56;

// A count as the report writes it (`1024`, `32.8 k`, `1.05 M`), so that a
// projection row names its job as the report does.
use crate::units::count;

/// Bars of the projected footprint per rank (log scale: rank counts span
/// decades), each with what it is made of: shared-memory and network
/// buffers, queue pairs and group maps, as the report's projection table.
fn projection(f: &mut Frame, area: Rect, m: &MemoryFootprint) {
    let chart_width = (area.width * 3 / 5).max(CHART_MIN_WIDTH.min(area.width));
    let [chart, side] =
        Layout::horizontal([Constraint::Length(chart_width), Constraint::Min(0)]).areas(area);
    let max = m
        .projections
        .iter()
        .filter_map(|p| p.total_bytes_per_rank)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let labels: Vec<String> = m
        .projections
        .iter()
        .map(|p| count(p.ranks as f64))
        .collect();
    let totals: Vec<String> = m
        .projections
        .iter()
        .map(|p| crate::report::memory::modelled_bytes(p.total_bytes_per_rank))
        .collect();
    let width = |v: &[String]| v.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    let (lw, tw) = (width(&labels), width(&totals));
    // Inside the borders: `<ranks> rk <bar> <total>`.
    let w = (chart.width.saturating_sub(2) as usize).saturating_sub(lw + 4 + 1 + tw);
    let mut lines = Vec::new();
    for ((p, label), total) in m.projections.iter().zip(&labels).zip(&totals) {
        let over = p.exceeds_memory_per_core == Some(true);
        // No bar where the total is not modelled.
        let frac = p
            .total_bytes_per_rank
            .map_or(0.0, |t| (1.0 + t).ln() / (1.0 + max).ln());
        lines.push(Line::from(vec![
            Span::raw(format!("{label:>lw$} rk ")),
            Span::styled(
                fmt::bar(frac, w),
                Style::default().fg(if over { Color::Red } else { Color::Cyan }),
            ),
            Span::raw(format!(" {total:>tw$}")),
        ]));
        lines.push(Line::from(format!(
            "  conn {}+{}  QP/node RC {} XRC {} UD {}",
            count(p.intra_node_connections_per_rank),
            count(p.inter_node_connections_per_rank),
            count(p.qp_rc_per_node),
            count(p.qp_xrc_per_node),
            count(p.qp_ud_per_node)
        )));
        lines.push(Line::from(format!(
            "  shm {}  net {}  QPs {}  groups {}",
            units::bytes(p.shm_bytes_per_rank),
            crate::report::memory::modelled_bytes(p.network_buffer_bytes_per_rank),
            crate::report::memory::modelled_bytes(p.qp_bytes_per_rank),
            units::bytes(p.group_bytes_per_rank)
        )));
    }
    let title = match m.memory_per_core {
        Some(mpc) => format!(
            "projected MPI memory per rank (per core {})",
            units::bytes(mpc as f64)
        ),
        None => "projected MPI memory per rank".to_string(),
    };
    widgets::lines(f, chart, title, lines);
    let plain = Style::default();
    let mut text = vec![
        (crate::report::memory::ranks_per_node_assumed(m), plain),
        (
            crate::report::memory::network_statement(m),
            if m.network_not_modelled.is_some() {
                Style::default().fg(Color::Yellow)
            } else {
                plain
            },
        ),
        (
            format!(
                "shm per process {}  groups {}",
                units::bytes(m.shm_bytes_per_process),
                units::bytes(m.group_map_bytes_per_rank)
            ),
            plain,
        ),
    ];
    for q in &m.qp_table {
        text.push((
            format!(
                "{}: {} now, {} full ({})",
                q.transport,
                count(q.observed_per_node),
                count(q.full_per_node),
                q.formula
            ),
            plain,
        ));
    }
    for c in &m.full_connection_calls {
        text.push((
            format!("{} ×{} connects everyone", c.call, c.count),
            Style::default().fg(Color::Yellow),
        ));
    }
    for p in &m.parameters {
        text.push((
            format!(
                "{} = {} ({})",
                p.name,
                units::quantity(p.value, &p.unit),
                p.source
            ),
            plain,
        ));
    }
    widgets::text(f, side, "connections and queue pairs", &text);
}

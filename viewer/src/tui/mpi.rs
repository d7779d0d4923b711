//! MPI tab, four views (← →): the call profile, the message-size histogram
//! with the eager/rendezvous split, the communication matrix as a heat map,
//! and the wait states.

use hyscope_analyzer::{MpiCallStats, MpiProfile, WaitStates};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::app::{App, MPI_WAITS_VIEW, Scroll, Tab, TableNav, matches_filter};
use super::fmt;
use super::widgets;
use crate::units;

pub const VIEWS: [&str; 4] = ["profile", "message sizes", "matrix", "wait states"];

const KEYS: [widgets::SortKey<MpiCallStats>; 6] = [
    (2, |c| c.total_s),
    (1, |c| c.count as f64),
    (5, |c| c.cv),
    (6, |c| c.bytes_sent as f64),
    (4, |c| c.max_rank_s),
    (7, |c| c.bytes_recv as f64),
];

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(a) = app.data.analysis() else {
        return widgets::not_ready(f, area, app, "MPI");
    };
    let view = app.nav[Tab::Mpi.index()].view.min(VIEWS.len() - 1);
    app.nav[Tab::Mpi.index()].view = view;
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(area);
    widgets::view_bar(f, head, &VIEWS, view);
    if view == MPI_WAITS_VIEW {
        if let Some(w) = widgets::observed(f, body, "Wait states", &a.wait_states) {
            let (filter, nav) = (&app.filter, &mut app.nav[Tab::Mpi.index()]);
            waits(f, body, w, filter, &mut nav.scroll);
        }
        return;
    }
    let Some(p) = widgets::observed(f, body, "MPI", &a.mpi) else {
        return;
    };
    match view {
        0 => profile(f, body, p, &mut app.nav[Tab::Mpi.index()], &app.filter),
        1 => histogram(f, body, p),
        _ => matrix(f, body, p),
    }
}

const HEADER: [&str; 10] = [
    "call", "count", "total", "mean/rk", "max/rk", "cv", "sent", "received", "run", "folded",
];
/// How much each column matters: on a narrow terminal the lowest go first
/// (their values move to the line under the table, for the selected call).
const KEEP: [u8; 10] = [9, 8, 9, 5, 4, 2, 7, 6, 3, 1];

fn profile(f: &mut Frame, area: Rect, p: &MpiProfile, nav: &mut TableNav, filter: &str) {
    let mut items: Vec<&MpiCallStats> = p
        .calls
        .iter()
        .filter(|c| matches_filter(filter, &c.call))
        .collect();
    let keys: Vec<fn(&MpiCallStats) -> f64> = KEYS.iter().map(|k| k.1).collect();
    widgets::sort_by(&mut items, nav, &keys);
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|c| {
            vec![
                c.call.clone(),
                fmt::count(c.count),
                units::secs(c.total_s),
                units::secs(c.mean_rank_s),
                units::secs(c.max_rank_s),
                format!("{:.2}", c.cv),
                units::bytes(c.bytes_sent as f64),
                // A nonblocking receive's bytes are its posting call's
                // (`MPI_Irecv`), as in the report.
                units::bytes(c.bytes_recv as f64),
                units::percent(c.share_of_run),
                // Unsuccessful polls the collector folded (trace `mpi.calls`).
                if c.folded_polls > 0 {
                    fmt::count(c.folded_polls)
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    let fit = widgets::Fit {
        header: &HEADER,
        keep: &KEEP,
        flex: 0,
        flex_min: 12,
        sorted_col: Some(KEYS[nav.sort % KEYS.len()].0),
        ascending: nav.ascending,
    };
    let selected = nav.selected;
    // What the table leaves out, or clips, of the selected call.
    let widths = fit.widths(area.width, &rows);
    let detail = rows.get(selected).and_then(|r| {
        let hidden: Vec<String> = (1..r.len())
            .filter(|&i| widths[i].is_none() && !r[i].is_empty())
            .map(|i| format!("{} {}", HEADER[i], r[i]))
            .collect();
        let clipped = widths[0].is_some_and(|w| r[0].chars().count() > w);
        (clipped || !hidden.is_empty()).then(|| {
            std::iter::once(format!("{}:", r[0]))
                .chain(hidden)
                .collect::<Vec<_>>()
        })
    });
    let inner = area.width.saturating_sub(2) as usize;
    let mut lines = fmt::pack(
        &[
            format!(
                "MPI total {} ({} of rank time)",
                units::secs(p.total_s),
                units::percent(p.share_of_run)
            ),
            format!("inside parallel {}", units::secs(p.inside_parallel_s)),
            format!("outside {}", units::secs(p.outside_parallel_s)),
            format!("calling threads {}", p.calling_threads),
        ],
        "  ",
        inner,
        fmt::Long::Clip,
    );
    if let Some(d) = &detail {
        lines.extend(fmt::pack(d, "  ", inner, fmt::Long::Clip));
    }
    let [top, bottom] = Layout::vertical([
        Constraint::Min(4),
        Constraint::Length(lines.len() as u16 + 2),
    ])
    .areas(area);
    widgets::fit_table(
        f,
        top,
        format!("MPI calls ({})  s: sort", items.len()),
        &fit,
        rows,
        Some(selected),
    );
    widgets::lines(
        f,
        bottom,
        "MPI time",
        lines.into_iter().map(Line::from).collect(),
    );
}

fn histogram(f: &mut Frame, area: Rect, p: &MpiProfile) {
    let limit = match crate::report::mpi::eager_limits_text(p) {
        Ok(limits) => format!("eager {limits}"),
        Err(why) => format!("eager limit unknown: {why}"),
    };
    let max = p
        .histogram
        .iter()
        .map(|b| b.messages)
        .max()
        .unwrap_or(0)
        .max(1);
    let w = area.width.saturating_sub(44) as usize;
    let mut lines = vec![
        Line::from(format!(
            "{limit}   eager {}  rendezvous {}",
            fmt::count(p.eager_messages),
            fmt::count(p.rendezvous_messages)
        )),
        Line::from(vec![
            Span::styled("█ eager ", Style::default().fg(Color::Green)),
            Span::styled("█ rendezvous", Style::default().fg(Color::Magenta)),
        ]),
    ];
    for b in &p.histogram {
        let ew = (b.eager as f64 / max as f64 * w as f64).round() as usize;
        let rw = (b.rendezvous as f64 / max as f64 * w as f64).round() as usize;
        lines.push(Line::from(vec![
            Span::raw(format!(
                "{:>9} – {:<9} ",
                units::bytes(b.lo as f64),
                units::bytes(b.hi as f64)
            )),
            Span::styled("█".repeat(ew), Style::default().fg(Color::Green)),
            Span::styled("█".repeat(rw), Style::default().fg(Color::Magenta)),
            Span::raw(format!(
                " {} msg {}",
                fmt::count(b.messages),
                units::bytes(b.bytes as f64)
            )),
        ]));
    }
    widgets::lines(f, area, "point-to-point message sizes", lines);
}

/// Heat colour for a fraction of the maximum (0 = none).
fn heat(frac: f64) -> Color {
    if frac <= 0.0 {
        Color::Reset
    } else if frac < 0.25 {
        Color::Blue
    } else if frac < 0.5 {
        Color::Cyan
    } else if frac < 0.75 {
        Color::Yellow
    } else {
        Color::Red
    }
}

fn matrix(f: &mut Frame, area: Rect, p: &MpiProfile) {
    let m = &p.matrix;
    let n = m.ranks as usize;
    // Ranks per cell when the matrix is larger than the screen (drawing only: sum of a block).
    let fit_w = (area.width.saturating_sub(8) / 3).max(1) as usize;
    let fit_h = area.height.saturating_sub(4).max(1) as usize;
    let per = n.div_ceil(fit_w.min(fit_h)).max(1);
    let cells = n.div_ceil(per);
    let grid = m.block_bytes(per);
    let get = |a: usize, b: usize| grid[a][b];
    let max = grid.iter().flatten().copied().max().unwrap_or(0);
    let mut lines = vec![Line::from(format!(
        "bytes sent, row = sender, column = receiver; max {}{}",
        units::bytes(max as f64),
        if per > 1 {
            format!("; {per} ranks per cell")
        } else {
            String::new()
        }
    ))];
    let mut head = String::from("     ");
    for b in 0..cells {
        head.push_str(&format!("{:>3}", b * per));
    }
    lines.push(Line::from(head));
    for a in 0..cells {
        let mut spans = vec![Span::raw(format!("{:>4} ", a * per))];
        for b in 0..cells {
            let v = get(a, b);
            let frac = v as f64 / max.max(1) as f64;
            let ch = if v == 0 { " · " } else { "███" };
            spans.push(Span::styled(ch, Style::default().fg(heat(frac))));
        }
        lines.push(Line::from(spans));
    }
    widgets::lines(f, area, "communication matrix", lines);
}

fn waits(f: &mut Frame, area: Rect, w: &WaitStates, filter: &str, scroll: &mut Scroll) {
    let [top, bottom] = Layout::vertical([Constraint::Length(9), Constraint::Min(3)]).areas(area);
    let max = w
        .by_kind
        .iter()
        .map(|e| e.seconds)
        .fold(0.0, f64::max)
        .max(1e-12);
    let bw = top.width.saturating_sub(40) as usize;
    let mut lines = vec![Line::from(format!(
        "total {}  unmatched messages {}  clock error ±{}",
        units::secs(w.total_s),
        w.unmatched_messages,
        units::secs(w.clock_error_s)
    ))];
    for e in &w.by_kind {
        lines.push(Line::from(vec![
            Span::raw(format!("{:<15}", e.kind.name())),
            Span::styled(
                fmt::bar(e.seconds / max, bw),
                Style::default().fg(Color::Red),
            ),
            Span::raw(format!(
                " {} ×{}",
                units::secs(e.seconds),
                fmt::count(e.instances)
            )),
        ]));
    }
    widgets::lines(f, top, "wait states", lines);
    let rows = w
        .per_callsite
        .iter()
        .filter(|e| matches_filter(filter, e.call.as_deref().unwrap_or("")))
        .map(|e| {
            vec![
                e.kind.name().to_string(),
                e.call.clone().unwrap_or_default(),
                e.location.as_ref().map(widgets::loc).unwrap_or_default(),
                units::secs(e.seconds),
                fmt::count(e.instances),
            ]
        })
        .collect();
    widgets::scroll_table(
        f,
        bottom,
        "per call site".into(),
        &widgets::Fit {
            header: &["kind", "call", "site", "time", "count"],
            keep: &[5, 6, 9, 9, 8],
            flex: 2,
            flex_min: 12,
            sorted_col: None,
            ascending: false,
        },
        rows,
        scroll,
    );
}

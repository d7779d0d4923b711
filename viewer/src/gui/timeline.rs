//! The timeline widget: rows grouped host -> rank -> thread, drawn from the
//! level-of-detail index (one query per row per frame, one rectangle per run of
//! equal pixel columns), a time ruler, p2p message lines, highlights, and the
//! mouse interactions (wheel zoom, drag pan, shift/right-drag range select,
//! click select, hover tooltip).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use eframe::egui::{self, Align2, Color32, FontId, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use hyscope_analyzer::timeline::{
    CellSummary, Detail, Entry, GroupRow, Grouping, Interval, RankCells, State, ranks_label,
};

use super::data::{Instance, TraceData};
use crate::aggregate::{self, GroupLines, Request, Source};
use crate::loading::Coarse;
use crate::loading::Loading;
use crate::units;
use hyscope_format::PhaseRecord;

mod phase_labels;
mod phase_tip;
use phase_labels::Bar;

/// (trace, row, segment start) of the hovered segment.
type HoverKey = (usize, usize, i64);

/// Width of the row-label column.
pub const LABEL_W: f32 = 130.0;
const RULER_H: f32 = 20.0;
/// Ranks are aggregated when one line per rank would be thinner than this (px).
const MIN_LINE_H: f32 = 6.0;
/// Each nesting depth of a rank's phases gets a line of its own when the lines
/// are at least this high (px), else one line stacks them all.
const PHASE_DEPTH_MIN_H: f32 = 12.0;
/// Draw message lines only when at most this many are in view.
const MAX_MESSAGES: usize = 400;

/// The state colours (the same hues as the TUI's legend).
pub fn state_color(s: State, dark: bool) -> Color32 {
    match s {
        State::Serial => {
            if dark {
                Color32::from_rgb(70, 70, 78)
            } else {
                Color32::from_rgb(205, 205, 212)
            }
        }
        State::Compute => Color32::from_rgb(64, 160, 90),
        State::OmpRuntime => Color32::from_rgb(230, 150, 40),
        State::BarrierWait => Color32::from_rgb(220, 60, 60),
        State::LockWait => Color32::from_rgb(170, 50, 170),
        State::Task => Color32::from_rgb(60, 190, 190),
        State::MpiP2p => Color32::from_rgb(60, 110, 230),
        State::MpiCollective => Color32::from_rgb(120, 80, 220),
        State::MpiWait => Color32::from_rgb(140, 170, 250),
        State::MpiOther => Color32::from_rgb(110, 130, 160),
    }
}

/// The visible time window, in ns relative to each trace's first event (so two
/// compared traces share it on aligned axes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct View {
    pub t0: f64,
    pub t1: f64,
}

impl View {
    pub fn width(&self) -> f64 {
        (self.t1 - self.t0).max(1.0)
    }

    /// Zoom by `factor` (< 1 zooms in) keeping time `at` under the same pixel.
    pub fn zoom(&mut self, factor: f64, at: f64) {
        let factor = factor.clamp(0.01, 100.0);
        let w = (self.width() * factor).max(100.0);
        let frac = (at - self.t0) / self.width();
        self.t0 = at - frac * w;
        self.t1 = self.t0 + w;
    }

    pub fn pan(&mut self, dt: f64) {
        self.t0 += dt;
        self.t1 += dt;
    }
}

/// The interval picked by a click, with its details read from the trace.
pub struct Picked {
    pub trace: usize,
    pub row: usize,
    pub t: i64,
    pub stack: Vec<Interval>,
}

/// UI state of the timelines shared across frames.
#[derive(Default)]
pub struct TimelineState {
    pub collapsed_hosts: HashSet<(usize, String)>,
    pub collapsed_ranks: HashSet<(usize, u32)>,
    /// Range selection (relative ns) and where a range drag started.
    pub range: Option<(f64, f64)>,
    drag_from: Option<f64>,
    pub picked: Option<Picked>,
    /// Highlighted instances (rank, thread, start, end) and what they are,
    /// per trace: one trace's, or both traces' (a location the two share).
    pub highlight: Vec<(usize, String, Vec<Instance>)>,
    /// Messages between this rank pair are highlighted.
    pub rank_pair: Option<(u32, u32)>,
    /// Hover details computed in the background, keyed by (trace, row, segment start).
    hover: Option<(HoverKey, Loading<Vec<Interval>>)>,
    /// Frame statistics: rectangles drawn last frame.
    pub rects_drawn: usize,
    /// The view drawn last frame, per trace (to detect motion).
    last_view: Vec<View>,
    /// Time spent in the index queries last frame (ms).
    pub query_ms: f64,
    /// Draw each pixel column as stacked state shares instead of the dominant state
    /// (shows minority states such as short barrier waits at any zoom).
    pub shares: bool,
    /// Screen rectangle of each trace's timeline body last frame (row area right of the labels).
    pub body: Vec<Rect>,
    /// Per trace, when ranks are aggregated: which groups of ranks are open.
    pub grouping: Vec<Grouping>,
    /// Per trace: the aggregated lines, computed off the UI thread when large.
    pub group_lines: Vec<GroupLines>,
    /// Single ranks whose threads the aggregated view shows, per trace.
    pub open_ranks: HashSet<(usize, u32)>,
    /// Compute the aggregated lines before drawing them (screenshots).
    pub wait_aggregates: bool,
    /// Per trace: the labels of the aggregated lines drawn last frame (empty
    /// when ranks are not aggregated).
    pub group_labels: Vec<Vec<String>>,
    /// Per trace: the phase names drawn on the phase rows last frame (a name
    /// cut to its bar ends in "…").
    pub phase_labels: Vec<Vec<String>>,
}

/// `v[which]`, grown with defaults as needed.
fn slot<T: Default>(v: &mut Vec<T>, which: usize) -> &mut T {
    if v.len() <= which {
        v.resize_with(which + 1, T::default);
    }
    &mut v[which]
}

enum Line {
    /// A group of ranks, or one rank, when ranks are aggregated.
    Group(Entry),
    Host(String),
    Rank(u32, Option<usize>),
    /// A phase row above a rank's rows (only for ranks with phases): the
    /// phases of one nesting depth, or of every depth stacked (`None`).
    Phases(u32, Option<u32>),
    Thread(usize),
    /// A rank left out for a damaged part (no row in the index): what it
    /// says in place of cells ([`hyscope_analyzer::model::LeftOutPart::says`];
    /// above aggregated lines, every rank left out in one line).
    LeftOut(u32, String),
}

/// Where a trace's timeline is drawn this frame: its body (right of the
/// labels, below the ruler), the height of one line, and the view that maps
/// time (ns relative to `origin`, the trace's first event) to x.
struct Geometry {
    body: Rect,
    line_h: f32,
    view: View,
    origin: i64,
}

impl Geometry {
    /// The geometry of `lines` lines in `rect` (the body right of the labels
    /// and below the ruler), remembered as trace `which`'s body.
    fn place(
        rect: Rect,
        lines: usize,
        view: View,
        origin: i64,
        which: usize,
        st: &mut TimelineState,
    ) -> Geometry {
        let body = Rect::from_min_max(
            Pos2::new(rect.left() + LABEL_W, rect.top() + RULER_H),
            rect.right_bottom(),
        );
        if st.body.len() <= which {
            st.body.resize(which + 1, Rect::NOTHING);
        }
        st.body[which] = body;
        Geometry {
            body,
            line_h: (body.height() / lines.max(1) as f32).clamp(5.0, 18.0),
            view,
            origin,
        }
    }

    fn width_px(&self) -> f32 {
        self.body.width().max(1.0)
    }

    fn to_x(&self, t_rel: f64) -> f32 {
        let v = &self.view;
        self.body.left() + ((t_rel - v.t0) / v.width() * self.width_px() as f64) as f32
    }

    fn to_t(&self, x: f32) -> f64 {
        let v = &self.view;
        v.t0 + (x - self.body.left()) as f64 / self.width_px() as f64 * v.width()
    }
}

/// Where the drawn lines ended up: the middle of each thread's and each
/// rank's line (for messages and highlights), and the rows a pointer picks.
#[derive(Default)]
struct Placed {
    row_y: HashMap<(u32, u32), f32>,
    rank_y: HashMap<u32, f32>,
    hit_rows: Vec<(Rect, usize)>,
    /// The phase bars without their whole name inside (their tooltips).
    phase_hits: Vec<phase_tip::Hit>,
}

impl Placed {
    /// A thread's line, else its rank's (collapsed ranks show no threads).
    fn y(&self, rank: u32, thread: u32) -> Option<f32> {
        self.row_y
            .get(&(rank, thread))
            .or_else(|| self.rank_y.get(&rank))
            .copied()
    }
}

/// Draw the timeline of trace `which` into `rect` and handle its input.
pub fn show(
    ui: &mut egui::Ui,
    rect: Rect,
    data: &Arc<TraceData>,
    which: usize,
    view: &mut View,
    st: &mut TimelineState,
) {
    let painter = ui.painter_at(rect);
    let max_lines = ((rect.height() - RULER_H) / MIN_LINE_H).max(1.0) as usize;
    let lines = if data.index.rank_rows().len() > max_lines {
        group_display_lines(data, which, st, max_lines)
    } else {
        // A line per phase depth where they leave every line readable.
        let per_depth = display_lines(data, which, st, true);
        if per_depth.len() as f32 * PHASE_DEPTH_MIN_H <= rect.height() - RULER_H {
            per_depth
        } else {
            display_lines(data, which, st, false)
        }
    };
    let geo = Geometry::place(rect, lines.len(), *view, data.index.span().0, which, st);
    ruler(
        &painter,
        Rect::from_min_max(
            Pos2::new(geo.body.left(), rect.top()),
            Pos2::new(rect.right(), geo.body.top()),
        ),
        view,
        ui.visuals().text_color(),
    );
    let placed = draw_rows(ui, &painter, rect.left(), &geo, data, &lines, which, st);
    for (_, _, inst) in st.highlight.iter().filter(|h| h.0 == which) {
        draw_highlight(&painter, &geo, &placed, inst);
    }
    let dark = ui.visuals().dark_mode;
    draw_messages(&painter, &geo, &placed, data, st.rank_pair, dark);
    if let Some(range) = st.range {
        draw_range(&painter, &geo, range);
    }
    input(ui, &geo, &placed, data, which, view, st);
}

/// The timeline of trace `which` from its coarse overview while the index
/// loads: a line per rank, or per group of ranks as with the index (the
/// same aggregation, from the overview's bins), `note` saying so; zoom and
/// pan as with the index, groups open on a click. Thread rows, messages and
/// details come with the index. The lines are computed on a worker (with
/// the index's, [`GroupLines`]); true when this frame drew some.
pub fn show_coarse(
    ui: &mut egui::Ui,
    rect: Rect,
    ov: &Coarse,
    which: usize,
    view: &mut View,
    st: &mut TimelineState,
    note: &str,
) -> bool {
    let src: &dyn RankCells = ov.overview.as_ref();
    let painter = ui.painter_at(rect);
    let max_lines = ((rect.height() - RULER_H) / MIN_LINE_H).max(1.0) as usize;
    let entries = slot(&mut st.grouping, which).tree(src.rank_rows().len(), max_lines);
    let geo = Geometry::place(rect, entries.len(), *view, src.span().0, which, st);
    let body = geo.body;
    ruler(
        &painter,
        Rect::from_min_max(
            Pos2::new(body.left(), rect.top()),
            Pos2::new(rect.right(), body.top()),
        ),
        view,
        ui.visuals().text_color(),
    );
    let columns = ((geo.width_px().floor() as usize).min(view.width().ceil() as usize)).max(1);
    let request = Request {
        t0: geo.origin + view.t0 as i64,
        t1: geo.origin + view.t1.ceil() as i64,
        columns,
        groups: entries
            .iter()
            .filter(|e| !e.open)
            .map(|e| e.group)
            .collect(),
    };
    let wanted = !request.groups.is_empty();
    let lines = if wanted {
        let source = Source::Coarse(Arc::clone(&ov.overview));
        aggregated_lines(ui, st, which, &source, request)
    } else {
        Arc::default()
    };
    slot(&mut st.group_labels, which).clear();
    let dark = ui.visuals().dark_mode;
    let mut placed = Placed::default();
    let mut rects = 0;
    for (k, e) in entries.iter().enumerate() {
        let y = body.top() + k as f32 * geo.line_h;
        let label_rect = Rect::from_min_size(
            Pos2::new(rect.left(), y),
            Vec2::new(LABEL_W - 4.0, geo.line_h),
        );
        let row_rect = Rect::from_min_max(
            Pos2::new(body.left(), y + 1.0),
            Pos2::new(body.right(), y + geo.line_h - 1.0),
        );
        let computed = aggregate::line(&lines, e.group);
        group_label(
            ui,
            &painter,
            label_rect,
            src,
            (*e, computed),
            (which, k),
            st,
            &mut placed,
        );
        if let Some(g) = computed {
            rects += draw_group(&painter, &geo, g, row_rect, dark, st.shares);
        }
    }
    st.rects_drawn = rects;
    // The note (and a damaged cache's warning) as labels over the body's top.
    let warn = ui.visuals().warn_fg_color;
    // The ranks left out (known once every rank is read) are said there too.
    let left_out = hyscope_analyzer::damaged_parts::left_out_summary(ov.overview.left_out());
    for (i, text) in std::iter::once(note)
        .chain(ov.warning.as_deref())
        .chain(left_out.as_deref())
        .enumerate()
    {
        let at = Rect::from_min_size(
            Pos2::new(body.left(), body.top() + 2.0 + 18.0 * i as f32),
            Vec2::new(body.width() - 4.0, 16.0),
        );
        ui.put(
            at,
            egui::Label::new(egui::RichText::new(text).color(warn).size(13.0))
                .halign(egui::Align::RIGHT),
        );
    }
    // Zoom with the wheel (or pinch), pan by dragging, as with the index.
    let resp = ui.interact(
        body,
        egui::Id::unique(("hyscope-timeline", which)),
        Sense::click_and_drag(),
    );
    wheel(ui, &resp, &geo, view);
    if resp.dragged_by(egui::PointerButton::Primary) {
        view.pan(-resp.drag_delta().x as f64 / geo.width_px() as f64 * view.width());
    }
    !wanted || !lines.is_empty()
}

/// The aggregated lines of `request` from `source` for trace `which`: the
/// last computed while a worker computes these (a repaint is asked for
/// their arrival), or computed before returning in screenshot mode.
fn aggregated_lines(
    ui: &egui::Ui,
    st: &mut TimelineState,
    which: usize,
    source: &Source,
    request: Request,
) -> Arc<Vec<GroupRow>> {
    let wait = st.wait_aggregates;
    let cache = slot(&mut st.group_lines, which);
    if wait {
        cache.get(source, request.clone());
        cache.wait();
    }
    let got = cache.get(source, request);
    if cache.busy() {
        ui.ctx().request_repaint();
    }
    got.unwrap_or_default()
}

/// Zoom with the wheel (or a pinch) around the pointer, pan with a
/// horizontal scroll.
fn wheel(ui: &egui::Ui, resp: &egui::Response, geo: &Geometry, view: &mut View) {
    let width_px = geo.width_px() as f64;
    let (scroll, zoom) = ui.input(|i| (i.smooth_scroll_delta, i.zoom_delta()));
    if let Some(p) = resp.hover_pos() {
        let at = geo.to_t(p.x);
        if zoom != 1.0 {
            view.zoom(1.0 / zoom as f64, at);
        } else if scroll.y != 0.0 {
            view.zoom((-scroll.y as f64 * 0.004).exp(), at);
        }
        if scroll.x != 0.0 {
            view.pan(-scroll.x as f64 / width_px * view.width());
        }
    }
}

/// Display lines when ranks are aggregated: groups of ranks (an open group
/// as a header before its children), single ranks, and the threads of the
/// ranks opened.
fn group_display_lines(
    data: &TraceData,
    which: usize,
    st: &mut TimelineState,
    max_lines: usize,
) -> Vec<Line> {
    let ranks = data.index.rank_rows();
    let mut lines = Vec::new();
    let left_out = data.index.left_out();
    if let Some(text) = hyscope_analyzer::damaged_parts::left_out_summary(left_out) {
        lines.push(Line::LeftOut(left_out[0].rank, text));
    }
    for e in slot(&mut st.grouping, which).tree(ranks.len(), max_lines) {
        lines.push(Line::Group(e));
        let r = &ranks[e.group.start];
        if e.group.is_single() && st.open_ranks.contains(&(which, r.rank)) {
            lines.extend(r.rows.clone().map(Line::Thread));
        }
    }
    lines
}

/// Display lines: host and rank headers, then the threads of expanded ranks;
/// above a rank with phases, a line per phase depth (the outermost first)
/// when `per_depth`, else one line for all.
fn display_lines(data: &TraceData, which: usize, st: &TimelineState, per_depth: bool) -> Vec<Line> {
    let index = &data.index;
    let mut lines = Vec::new();
    let mut last_host: Option<String> = None;
    let mut last_rank: Option<u32> = None;
    // The ranks left out, each in its place (host, then rank) with no row.
    let host_of = |rank: u32| {
        let m = &index.trace().manifest;
        m.ranks
            .iter()
            .find(|r| r.rank == rank)
            .map_or(String::new(), |r| r.host.clone())
    };
    let mut left_out: Vec<(String, u32, String)> = Vec::new();
    for p in index.left_out() {
        if !left_out.iter().any(|l| l.1 == p.rank) {
            left_out.push((host_of(p.rank), p.rank, p.says()));
        }
    }
    left_out.sort();
    let mut left_out = left_out.into_iter().peekable();
    let mark = |lines: &mut Vec<Line>,
                last_host: &mut Option<String>,
                (host, rank, says): (String, u32, String)| {
        if last_host.as_deref() != Some(host.as_str()) {
            lines.push(Line::Host(host.clone()));
            *last_host = Some(host);
        }
        lines.push(Line::LeftOut(rank, says));
    };
    for (i, r) in index.rows().iter().enumerate() {
        while let Some(l) = left_out.next_if(|l| (l.0.as_str(), l.1) < (r.host.as_str(), r.rank)) {
            mark(&mut lines, &mut last_host, l);
            last_rank = None;
        }
        if last_host.as_deref() != Some(r.host.as_str()) {
            lines.push(Line::Host(r.host.clone()));
            last_host = Some(r.host.clone());
            last_rank = None;
        }
        if st.collapsed_hosts.contains(&(which, r.host.clone())) {
            continue;
        }
        if last_rank != Some(r.rank) {
            let collapsed = st.collapsed_ranks.contains(&(which, r.rank));
            if data.phases.has(r.rank) {
                if per_depth {
                    let depths = data
                        .phases
                        .in_window(r.rank, i64::MIN, i64::MAX)
                        .map(|p| p.depth + 1)
                        .max()
                        .unwrap_or(1);
                    lines.extend((0..depths).map(|d| Line::Phases(r.rank, Some(d))));
                } else {
                    lines.push(Line::Phases(r.rank, None));
                }
            }
            lines.push(Line::Rank(r.rank, collapsed.then_some(i)));
            last_rank = Some(r.rank);
            if collapsed {
                continue;
            }
        }
        if !st.collapsed_ranks.contains(&(which, r.rank)) {
            lines.push(Line::Thread(i));
        }
    }
    for l in left_out {
        mark(&mut lines, &mut last_host, l);
    }
    lines
}

/// Every line's label and the cells of its data row, queried from the index
/// for this view.
#[allow(clippy::too_many_arguments)]
fn draw_rows(
    ui: &mut egui::Ui,
    painter: &egui::Painter,
    label_left: f32,
    geo: &Geometry,
    data: &TraceData,
    lines: &[Line],
    which: usize,
    st: &mut TimelineState,
) -> Placed {
    let v = geo.view;
    // One cell per pixel column, or per nanosecond when zoomed in further.
    // While the view moves (zoom, pan), cells are 2 px wide; the first still
    // frame after the motion redraws at full resolution.
    let moving = st.last_view.get(which).is_some_and(|lv| *lv != v);
    if st.last_view.len() <= which {
        st.last_view.resize(which + 1, v);
    }
    st.last_view[which] = v;
    if moving {
        ui.ctx().request_repaint();
    }
    let px_per_cell = if moving { 2.0 } else { 1.0 };
    let columns = ((geo.width_px() / px_per_cell).floor() as usize)
        .min(v.width().ceil() as usize)
        .max(1);
    let col_w = geo.width_px() / columns as f32;
    let abs0 = geo.origin + v.t0 as i64;
    let abs1 = geo.origin + v.t1.ceil() as i64;
    // Query every drawn row (in parallel: the cost is cells × rows, not events).
    let drawn: Vec<usize> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Thread(i) | Line::Rank(_, Some(i)) => Some(*i),
            _ => None,
        })
        .collect();
    let q = std::time::Instant::now();
    let mut cells_of = query_rows(&data.index, &drawn, abs0, abs1, columns);
    st.query_ms = q.elapsed().as_secs_f64() * 1e3;
    // Aggregated lines: the last computed (maybe for another window while
    // the worker catches up), each placed by its own cells' times.
    let request = Request {
        t0: abs0,
        t1: abs1,
        columns,
        groups: lines
            .iter()
            .filter_map(|l| match l {
                Line::Group(e) if !e.open => Some(e.group),
                _ => None,
            })
            .collect(),
    };
    let groups: Arc<Vec<GroupRow>> = if request.groups.is_empty() {
        Arc::default()
    } else {
        let source = Source::Index(Arc::clone(&data.index));
        aggregated_lines(ui, st, which, &source, request)
    };
    slot(&mut st.group_labels, which).clear();
    let dark = ui.visuals().dark_mode;
    let mut placed = Placed::default();
    let mut rects = 0usize;
    // Each rank's phases in the window, found once for its phase lines.
    let mut in_window: HashMap<u32, Vec<&PhaseRecord>> = HashMap::new();
    let mut phase_labels = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let y = geo.body.top() + k as f32 * geo.line_h;
        let label_rect = Rect::from_min_size(
            Pos2::new(label_left, y),
            Vec2::new(LABEL_W - 4.0, geo.line_h),
        );
        if let Line::Phases(r, depth) = line {
            let lane = Rect::from_min_max(
                Pos2::new(geo.body.left(), y + 1.0),
                Pos2::new(geo.body.right(), y + geo.line_h - 1.0),
            );
            let font = FontId::proportional((geo.line_h - 3.0).clamp(7.0, 12.0));
            let phases = in_window
                .entry(*r)
                .or_insert_with(|| data.phases.in_window(*r, abs0, abs1).collect());
            let row = PhaseRow {
                rank: *r,
                phases,
                depth: *depth,
                window: (abs0, abs1),
                lane,
            };
            let text = ui.visuals().text_color();
            rects += draw_phases(
                painter,
                &row,
                &font,
                text,
                (&mut phase_labels, &mut placed.phase_hits),
            );
        }
        let row_rect = Rect::from_min_max(
            Pos2::new(geo.body.left(), y + 1.0),
            Pos2::new(geo.body.right(), y + geo.line_h - 1.0),
        );
        if let Line::LeftOut(rank, says) = line {
            left_out_line(ui, painter, (label_rect, row_rect), *rank, says);
            continue;
        }
        if let Line::Group(e) = line {
            let computed = aggregate::line(&groups, e.group);
            let worst_row = group_label(
                ui,
                painter,
                label_rect,
                data.index.as_ref(),
                (*e, computed),
                (which, k),
                st,
                &mut placed,
            );
            if let Some(g) = computed {
                if let Some(r) = worst_row {
                    placed.hit_rows.push((row_rect, r));
                }
                rects += draw_group(painter, geo, g, row_rect, dark, st.shares);
            }
            continue;
        }
        let Some(row) = label(
            ui,
            painter,
            label_rect,
            data,
            line,
            (which, k),
            st,
            &mut placed,
        ) else {
            continue;
        };
        placed.hit_rows.push((row_rect, row));
        let cells = cells_of.remove(&row).unwrap_or_default();
        rects += if st.shares {
            draw_shares(painter, &cells, geo.body.left(), col_w, row_rect, dark)
        } else {
            draw_dominant(painter, &cells, geo.body.left(), col_w, row_rect, dark)
        };
    }
    st.rects_drawn = rects;
    *slot(&mut st.phase_labels, which) = phase_labels;
    placed
}

/// One line's label; host and rank labels collapse and expand on a click.
/// Records where the line is and returns its data row, if it has one.
#[allow(clippy::too_many_arguments)]
fn label(
    ui: &mut egui::Ui,
    painter: &egui::Painter,
    rect: Rect,
    data: &TraceData,
    line: &Line,
    (which, k): (usize, usize),
    st: &mut TimelineState,
    placed: &mut Placed,
) -> Option<usize> {
    let middle = rect.center().y;
    let (text, data_row, toggle): (String, Option<usize>, Option<Toggle>) = match line {
        Line::Host(h) => {
            let c = st.collapsed_hosts.contains(&(which, h.clone()));
            (
                format!(
                    "{} {}",
                    if c { "+" } else { "-" },
                    if h.is_empty() { "host" } else { h }
                ),
                None,
                Some(Toggle::Host(h.clone())),
            )
        }
        Line::Rank(r, collapsed) => {
            placed.rank_y.insert(*r, middle);
            (
                format!("  {} rank {r}", if collapsed.is_some() { "+" } else { "-" }),
                *collapsed,
                Some(Toggle::Rank(*r)),
            )
        }
        Line::Thread(i) => {
            let r = &data.index.rows()[*i];
            placed.row_y.insert((r.rank, r.thread), middle);
            (format!("      thread {}", r.thread), Some(*i), None)
        }
        Line::Phases(_, None | Some(0)) => ("    phases".to_string(), None, None),
        Line::Phases(_, Some(d)) => (format!("      depth {d}"), None, None),
        Line::Group(_) | Line::LeftOut(..) => return None,
    };
    let font = FontId::proportional((rect.height() - 3.0).clamp(7.0, 12.0));
    painter.text(
        rect.left_center(),
        Align2::LEFT_CENTER,
        text,
        font,
        ui.visuals().text_color(),
    );
    if let Some(t) = toggle {
        let resp = ui.interact(
            rect,
            egui::Id::unique(("hyscope-toggle", which, k)),
            Sense::click(),
        );
        if resp.clicked() {
            match t {
                Toggle::Host(h) => toggle_set(&mut st.collapsed_hosts, (which, h)),
                Toggle::Rank(r) => toggle_set(&mut st.collapsed_ranks, (which, r)),
            }
        }
    }
    data_row
}

/// The line of a rank left out for a damaged part: `× rank 0` (`× left
/// out` for every rank left out above aggregated lines), and across the
/// body what cannot be read, in the warning colour; hovering shows all of it.
fn left_out_line(
    ui: &mut egui::Ui,
    painter: &egui::Painter,
    (label, body): (Rect, Rect),
    rank: u32,
    says: &str,
) {
    let font = FontId::proportional((label.height() - 3.0).clamp(7.0, 12.0));
    let warn = ui.visuals().warn_fg_color;
    let name = if says.starts_with(&format!("rank {rank} ")) {
        format!("  × rank {rank}")
    } else {
        "× left out".to_string()
    };
    painter.text(
        label.left_center(),
        Align2::LEFT_CENTER,
        name,
        font.clone(),
        warn,
    );
    let text = egui::RichText::new(says).color(warn).font(font);
    ui.put(
        body.shrink2(Vec2::new(4.0, 0.0)),
        egui::Label::new(text).truncate().halign(egui::Align::LEFT),
    )
    .on_hover_text(says);
}

/// The label of an aggregated line: which ranks it holds and the worst one
/// over the window (`ranks 0–127 · worst 93`); a click opens or closes the
/// group, or shows a single rank's threads. Returns the first thread row of
/// the line's worst rank (what a pointer over the line picks).
#[allow(clippy::too_many_arguments)]
fn group_label(
    ui: &mut egui::Ui,
    painter: &egui::Painter,
    rect: Rect,
    src: &dyn RankCells,
    (e, computed): (Entry, Option<&GroupRow>),
    (which, k): (usize, usize),
    st: &mut TimelineState,
    placed: &mut Placed,
) -> Option<usize> {
    let ranks = &src.rank_rows()[e.group.start..e.group.end];
    let numbers: Vec<u32> = ranks.iter().map(|r| r.rank).collect();
    let middle = rect.center().y;
    for &r in &numbers {
        placed.rank_y.insert(r, middle);
    }
    let single = e.group.is_single();
    let open = e.open || (single && st.open_ranks.contains(&(which, numbers[0])));
    let what = match computed.and_then(|g| g.worst_rank) {
        Some(w) if !single && !e.open => format!("{} · worst {w}", ranks_label(&numbers)),
        _ => ranks_label(&numbers),
    };
    let text = format!(
        "{}{} {what}",
        "  ".repeat(e.depth),
        if open { "-" } else { "+" }
    );
    let font = FontId::proportional((rect.height() - 3.0).clamp(7.0, 12.0));
    painter.text(
        rect.left_center(),
        Align2::LEFT_CENTER,
        &text,
        font,
        ui.visuals().text_color(),
    );
    slot(&mut st.group_labels, which).push(text);
    let resp = ui.interact(
        rect,
        egui::Id::unique(("hyscope-group", which, k)),
        Sense::click(),
    );
    if resp.clicked() {
        if single {
            toggle_set(&mut st.open_ranks, (which, numbers[0]));
        } else {
            slot(&mut st.grouping, which).toggle(e.group);
        }
    }
    let worst = computed?.worst_rank?;
    ranks.iter().find(|r| r.rank == worst).map(|r| r.rows.start)
}

/// An aggregated line: the worst rank of each cell drawn as a rank's line is
/// (dominant state, or stacked shares), and below it a strip as bright as the
/// spread of waiting across the group's ranks. The cells are placed by their
/// own times, so lines computed for an earlier window stretch into place.
fn draw_group(
    painter: &egui::Painter,
    geo: &Geometry,
    row: &GroupRow,
    rect: Rect,
    dark: bool,
    shares: bool,
) -> usize {
    let (Some(first), Some(last)) = (row.cells.first(), row.cells.last()) else {
        return 0;
    };
    let painter = painter.with_clip_rect(geo.body);
    let x = |t: i64| geo.to_x((t - geo.origin) as f64);
    let left = x(first.worst.t0);
    let col_w = (x(last.worst.t1) - left) / row.cells.len() as f32;
    let strip = (rect.height() * 0.3).clamp(1.0, 5.0);
    let top = Rect::from_min_max(rect.min, Pos2::new(rect.right(), rect.bottom() - strip));
    let mut rects = if shares {
        draw_shares(&painter, &row.cells, left, col_w, top, dark)
    } else {
        draw_dominant(&painter, &row.cells, left, col_w, top, dark)
    };
    // The spread in eight levels, one rectangle per run of equal levels.
    let level = |c: &hyscope_analyzer::timeline::GroupCell| -> Option<u8> {
        c.worst_rank.map(|_| (c.spread() * 8.0).round() as u8)
    };
    let ink = if dark { 255 } else { 0 };
    let mut run: Option<(usize, u8)> = None;
    for c in 0..=row.cells.len() {
        let l = row.cells.get(c).and_then(level);
        if run.map(|r| r.1) != l {
            if let Some((from, lv)) = run
                && lv > 0
            {
                let r = Rect::from_min_max(
                    Pos2::new(left + from as f32 * col_w, rect.bottom() - strip),
                    Pos2::new(left + c as f32 * col_w, rect.bottom()),
                );
                let alpha = (u32::from(lv) * 255 / 8) as u8;
                painter.rect_filled(
                    r,
                    0.0,
                    Color32::from_rgba_unmultiplied(ink, ink, ink, alpha),
                );
                rects += 1;
            }
            run = l.map(|l| (c, l));
        }
    }
    rects
}

/// Each column's dominant state, one rectangle per run of equal columns.
/// Returns the rectangles drawn.
fn draw_dominant<C: AsRef<CellSummary>>(
    painter: &egui::Painter,
    cells: &[C],
    left: f32,
    col_w: f32,
    row: Rect,
    dark: bool,
) -> usize {
    let mut rects = 0;
    let mut run: Option<(usize, State)> = None;
    for c in 0..=cells.len() {
        let dom = cells.get(c).and_then(|x| x.as_ref().dominant());
        if run.map(|r| r.1) != dom {
            if let Some((from, s)) = run {
                let r = Rect::from_min_max(
                    Pos2::new(left + from as f32 * col_w, row.top()),
                    Pos2::new(left + c as f32 * col_w, row.bottom()),
                );
                painter.rect_filled(r, 0.0, state_color(s, dark));
                rects += 1;
            }
            run = dom.map(|d| (c, d));
        }
    }
    rects
}

/// Highlighted instances (a loop or region selected in a panel).
fn draw_highlight(painter: &egui::Painter, geo: &Geometry, placed: &Placed, inst: &[Instance]) {
    let stroke = Stroke::new(2.0, Color32::from_rgb(255, 220, 0));
    let (body, half) = (geo.body, geo.line_h / 2.0);
    for &(rank, thread, s, e) in inst {
        let (s, e) = ((s - geo.origin) as f64, (e - geo.origin) as f64);
        if e < geo.view.t0 || s > geo.view.t1 {
            continue;
        }
        let Some(y) = placed.y(rank, thread) else {
            continue;
        };
        let r = Rect::from_min_max(
            Pos2::new(geo.to_x(s).max(body.left()), y - half + 1.0),
            Pos2::new(
                geo.to_x(e).min(body.right()).max(geo.to_x(s) + 1.0),
                y + half - 1.0,
            ),
        );
        painter.rect_stroke(r, 0.0, stroke, StrokeKind::Inside);
    }
}

/// Point-to-point messages in view (those of one rank pair when chosen), as
/// lines from the send to the receive; none when there are too many to read.
fn draw_messages(
    painter: &egui::Painter,
    geo: &Geometry,
    placed: &Placed,
    data: &TraceData,
    rank_pair: Option<(u32, u32)>,
    dark: bool,
) {
    let origin = geo.origin;
    let in_view: Vec<_> = data
        .messages
        .iter()
        .filter(|m| {
            let s = (m.send_ns - origin) as f64;
            let r = (m.recv_ns - origin) as f64;
            r >= geo.view.t0 && s <= geo.view.t1
        })
        .filter(|m| {
            rank_pair.is_none_or(|(a, b)| {
                (m.from_rank, m.to_rank) == (a, b) || (m.from_rank, m.to_rank) == (b, a)
            })
        })
        .take(MAX_MESSAGES + 1)
        .collect();
    if in_view.len() > MAX_MESSAGES {
        return;
    }
    let stroke = Stroke::new(1.0, if dark { Color32::WHITE } else { Color32::BLACK });
    for m in in_view {
        let y0 = placed.y(m.from_rank, m.from_thread);
        let y1 = placed.y(m.to_rank, m.to_thread);
        if let (Some(y0), Some(y1)) = (y0, y1) {
            let a = Pos2::new(geo.to_x((m.send_ns - origin) as f64), y0);
            let b = Pos2::new(geo.to_x((m.recv_ns - origin) as f64), y1);
            painter.line_segment([a, b], stroke);
            painter.circle_filled(b, 2.0, stroke.color);
        }
    }
}

/// The range selection, shaded.
fn draw_range(painter: &egui::Painter, geo: &Geometry, (a, b): (f64, f64)) {
    let r = Rect::from_min_max(
        Pos2::new(geo.to_x(a.min(b)), geo.body.top()),
        Pos2::new(geo.to_x(a.max(b)), geo.body.bottom()),
    )
    .intersect(geo.body);
    painter.rect_filled(r, 0.0, Color32::from_rgba_unmultiplied(120, 160, 255, 50));
    painter.rect_stroke(
        r,
        0.0,
        Stroke::new(1.0, Color32::from_rgb(90, 130, 255)),
        StrokeKind::Inside,
    );
}

/// Wheel zoom, drag pan, shift/right-drag range selection, click to pick an
/// interval, and the hover tooltip.
fn input(
    ui: &mut egui::Ui,
    geo: &Geometry,
    placed: &Placed,
    data: &Arc<TraceData>,
    which: usize,
    view: &mut View,
    st: &mut TimelineState,
) {
    let resp = ui.interact(
        geo.body,
        egui::Id::unique(("hyscope-timeline", which)),
        Sense::click_and_drag(),
    );
    let width_px = geo.width_px() as f64;
    let shift = ui.input(|i| i.modifiers.shift);
    wheel(ui, &resp, geo, view);
    let selecting = shift || resp.dragged_by(egui::PointerButton::Secondary);
    if resp.drag_started()
        && selecting
        && let Some(p) = ui
            .input(|i| i.pointer.press_origin())
            .or(resp.interact_pointer_pos())
    {
        st.drag_from = Some(geo.to_t(p.x));
    }
    if resp.dragged() {
        if let (Some(from), Some(p)) = (st.drag_from, resp.interact_pointer_pos()) {
            let to = geo.to_t(p.x);
            st.range = Some((from.min(to), from.max(to)));
        } else if resp.dragged_by(egui::PointerButton::Primary) {
            view.pan(-resp.drag_delta().x as f64 / width_px * view.width());
        }
    }
    if resp.drag_stopped() {
        st.drag_from = None;
    }
    let hovered_row = resp.hover_pos().and_then(|p| {
        placed
            .hit_rows
            .iter()
            .find(|(r, _)| r.top() <= p.y && p.y < r.bottom() + 2.0)
            .map(|&(_, row)| (row, geo.origin + geo.to_t(p.x) as i64))
    });
    if resp.clicked()
        && let Some((row, t)) = hovered_row
    {
        let stack = data.index.stack_at(row, t).unwrap_or_default();
        st.picked = Some(Picked {
            trace: which,
            row,
            t,
            stack,
        });
    }
    // A phase bar's tooltip first: the row above a phase line reaches 2 px into it.
    let phase_hit = resp
        .hover_pos()
        .and_then(|p| phase_tip::at(&placed.phase_hits, p));
    match (phase_hit, hovered_row) {
        (Some(hit), _) => {
            st.hover = None;
            phase_tip::show(&resp, &data.phases, hit);
        }
        (None, Some((row, t))) => hover(ui, &resp, data, (which, row, t), st),
        (None, None) => st.hover = None,
    }
}

/// The tooltip of the segment under the pointer: its state and duration at
/// once, the intervals under it when read (on a worker thread).
fn hover(
    ui: &egui::Ui,
    resp: &egui::Response,
    data: &Arc<TraceData>,
    (which, row, t): (usize, usize, i64),
    st: &mut TimelineState,
) {
    let index = &data.index;
    let Some(seg) = index.segment_at(row, t) else {
        st.hover = None;
        return;
    };
    let key = (which, row, seg.start);
    if st.hover.as_ref().is_none_or(|(k, _)| *k != key) {
        let data = Arc::clone(data);
        st.hover = Some((
            key,
            Loading::spawn(move || data.index.stack_at(row, t).map_err(|e| e.to_string())),
        ));
    }
    let info = &index.rows()[row];
    let details = st.hover.as_mut().map(|(_, l)| {
        l.poll();
        l
    });
    let pending = details.as_ref().is_some_and(|l| l.is_pending());
    let stack = details.and_then(|l| l.ready()).cloned().unwrap_or_default();
    if pending {
        ui.ctx().request_repaint();
    }
    resp.clone().on_hover_ui_at_pointer(|ui| {
        ui.label(format!("rank {} thread {}", info.rank, info.thread));
        ui.label(format!(
            "{}: {}",
            seg.state.name(),
            units::ns((seg.end - seg.start) as f64)
        ));
        if let Some(inner) = stack
            .iter()
            .rev()
            .find(|i| i.state == seg.state)
            .or(stack.last())
        {
            if let Some(role) = inner.role(seg.state) {
                ui.weak(role);
            }
            interval_details(ui, data, info.rank, inner);
        } else if pending {
            ui.weak("reading details...");
        }
    });
}

/// Colours of the phase rows, by name (`phases::name_hue`).
const PHASE_COLORS: [Color32; 6] = [
    Color32::from_rgb(200, 120, 220),
    Color32::from_rgb(110, 200, 220),
    Color32::from_rgb(230, 210, 100),
    Color32::from_rgb(130, 210, 130),
    Color32::from_rgb(120, 150, 235),
    Color32::from_rgb(235, 130, 120),
];

/// What one phase line shows: `rank`'s phases in the time `window`, those
/// of nesting depth `depth` or of every depth (`None`), drawn in `lane`.
struct PhaseRow<'a> {
    rank: u32,
    phases: &'a [&'a PhaseRecord],
    depth: Option<u32>,
    window: (i64, i64),
    lane: Rect,
}

/// A phase line: each phase as a bar (stacked one band per nesting depth,
/// the outermost on top, when the line holds every depth), and the names
/// where `phase_labels::place` finds room, added to `names`: black on their
/// bar, in the `text` colour beside it. The bars that do not hold their
/// whole name are added to `hits` (their tooltips). Returns the bars drawn.
fn draw_phases(
    painter: &egui::Painter,
    row: &PhaseRow,
    font: &FontId,
    text: Color32,
    (names, hits): (&mut Vec<String>, &mut Vec<phase_tip::Hit>),
) -> usize {
    let (lane, (t0, t1)) = (row.lane, row.window);
    let phases: Vec<&PhaseRecord> = row
        .phases
        .iter()
        .copied()
        .filter(|p| row.depth.is_none_or(|d| p.depth == d))
        .collect();
    let levels = match row.depth {
        Some(_) => 1,
        None => phases.iter().map(|p| p.depth + 1).max().unwrap_or(1) as usize,
    };
    let x = |t: i64| {
        lane.left() + ((t - t0) as f64 / (t1 - t0).max(1) as f64 * lane.width() as f64) as f32
    };
    let bars: Vec<Bar> = phases
        .iter()
        .map(|p| {
            let x0 = x(p.start_ns).max(lane.left());
            Bar {
                x0,
                x1: x(p.end_ns).min(lane.right()).max(x0 + 1.0),
                level: if row.depth.is_some() {
                    0
                } else {
                    p.depth as usize
                },
                name: p.name.as_str(),
            }
        })
        .collect();
    let color =
        |b: &Bar| PHASE_COLORS[hyscope_analyzer::phases::name_hue(b.name, PHASE_COLORS.len())];
    for b in &bars {
        painter.rect_filled(phase_labels::bar_rect(lane, levels, b), 0.0, color(b));
    }
    let measure = |text: &str, font: &FontId| {
        painter
            .layout_no_wrap(text.to_string(), font.clone(), Color32::BLACK)
            .size()
    };
    let labels = phase_labels::place(&bars, lane, levels, font, &measure);
    let mut whole_inside = vec![false; bars.len()];
    for l in &labels {
        whole_inside[l.bar] |= !l.beside && l.text == bars[l.bar].name;
    }
    for (i, b) in bars.iter().enumerate() {
        if !whole_inside[i] {
            hits.push(phase_tip::Hit {
                rect: phase_labels::bar_rect(lane, levels, b),
                rank: row.rank,
                phase: phases[i].clone(),
            });
        }
    }
    for l in labels {
        let bar = &bars[l.bar];
        let color = if l.beside {
            text
        } else {
            // A name taller than its band stands on the bar's colour.
            let r = phase_labels::bar_rect(lane, levels, bar);
            if !r.contains_rect(l.rect) {
                let plate = Rect::from_x_y_ranges(
                    (l.rect.left() - 1.0).max(bar.x0)..=(l.rect.right() + 1.0).min(bar.x1),
                    l.rect.y_range(),
                );
                painter.rect_filled(plate, 0.0, color(bar));
            }
            Color32::BLACK
        };
        painter.text(
            l.rect.left_center(),
            Align2::LEFT_CENTER,
            &l.text,
            l.font,
            color,
        );
        names.push(l.text);
    }
    bars.len()
}

/// Stacked shares: each column split vertically by the time share of each
/// state, quantised to whole pixels; equal neighbouring columns merge into one
/// rectangle per state band.
fn draw_shares<C: AsRef<CellSummary>>(
    painter: &egui::Painter,
    cells: &[C],
    left: f32,
    col_w: f32,
    row: Rect,
    dark: bool,
) -> usize {
    let h = row.height().max(1.0);
    let layout = |c: &hyscope_analyzer::timeline::CellSummary| -> [u8; 10] {
        let mut out = [0u8; 10];
        let covered = c.covered();
        if covered == 0 {
            return out;
        }
        let mut acc = 0u64;
        for (i, t) in c.time.iter().enumerate() {
            // Cumulative rounding keeps the bands summing to the row height.
            let before = (acc as f64 / covered as f64 * h as f64).round() as u8;
            acc += t;
            let after = (acc as f64 / covered as f64 * h as f64).round() as u8;
            out[i] = after - before;
        }
        out
    };
    let mut rects = 0;
    let mut run: Option<(usize, [u8; 10])> = None;
    for c in 0..=cells.len() {
        let l = cells.get(c).map(|x| layout(x.as_ref()));
        if run.map(|r| r.1) != l {
            if let Some((from, bands)) = run {
                let mut y = row.top();
                for (i, &b) in bands.iter().enumerate() {
                    if b == 0 {
                        continue;
                    }
                    let r = Rect::from_min_max(
                        Pos2::new(left + from as f32 * col_w, y),
                        Pos2::new(left + c as f32 * col_w, y + b as f32),
                    );
                    painter.rect_filled(r, 0.0, state_color(State::ALL[i], dark));
                    rects += 1;
                    y += b as f32;
                }
            }
            run = l.map(|l| (c, l));
        }
    }
    rects
}

/// `index.query` for several rows, split over the available cores.
fn query_rows(
    index: &hyscope_analyzer::timeline::TimelineIndex,
    rows: &[usize],
    t0: i64,
    t1: i64,
    columns: usize,
) -> HashMap<usize, Vec<hyscope_analyzer::timeline::CellSummary>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(rows.len())
        .max(1);
    let per = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&r| (r, index.query(r, t0, t1, columns)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

enum Toggle {
    Host(String),
    Rank(u32),
}

fn toggle_set<T: std::hash::Hash + Eq>(set: &mut HashSet<T>, v: T) {
    if !set.remove(&v) {
        set.insert(v);
    }
}

/// Details of one interval: kind, code location, duration, iterations, bytes, peer.
pub fn interval_details(ui: &mut egui::Ui, data: &TraceData, rank: u32, i: &Interval) {
    ui.strong(i.name());
    ui.label(format!("at {}", data.location(rank, i.code_address())));
    ui.label(format!("duration {}", units::ns((i.end - i.start) as f64)));
    match &i.detail {
        Detail::Omp(r) => {
            if r.kind == hyscope_format::OmpKind::Chunk as u8 {
                ui.label(format!("iterations {} (from {})", r.count, r.chunk_start));
            } else if r.kind == hyscope_format::OmpKind::Work as u8 {
                ui.label(format!("trip count {}", r.count));
            }
            if r.team_size > 0 {
                ui.label(format!("team size {}", r.team_size));
            }
        }
        Detail::Mpi(r) => {
            if r.peer >= 0 {
                ui.label(format!("peer rank {}", r.peer));
            }
            if r.root >= 0 {
                ui.label(format!("root rank {}", r.root));
            }
            if r.bytes_sent > 0 || r.bytes_recv > 0 {
                ui.label(format!(
                    "sent {} / received {}",
                    units::bytes(r.bytes_sent as f64),
                    units::bytes(r.bytes_recv as f64)
                ));
            }
        }
    }
}

/// Ticks at 1-2-5 steps with labels relative to the trace start.
fn ruler(painter: &egui::Painter, rect: Rect, view: &View, color: Color32) {
    let px = rect.width().max(1.0) as f64;
    let target = view.width() / (px / 90.0).max(1.0);
    let mag = 10f64.powf(target.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= target)
        .unwrap_or(10.0 * mag);
    let mut t = (view.t0 / step).ceil() * step;
    let stroke = Stroke::new(1.0, color.gamma_multiply(0.6));
    painter.line_segment([rect.left_bottom(), rect.right_bottom()], stroke);
    let mut n = 0;
    while t <= view.t1 && n < 200 {
        let x = rect.left() + ((t - view.t0) / view.width() * px) as f32;
        painter.line_segment(
            [
                Pos2::new(x, rect.bottom() - 6.0),
                rect.left_bottom() + Vec2::new(x - rect.left(), 0.0),
            ],
            stroke,
        );
        painter.text(
            Pos2::new(x + 2.0, rect.top() + 2.0),
            Align2::LEFT_TOP,
            units::ns_tick(t, step),
            FontId::proportional(11.0),
            color,
        );
        t += step;
        n += 1;
    }
}

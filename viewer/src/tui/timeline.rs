//! Timeline tab: one row per rank (expandable to its threads), each character
//! cell coloured by the state that dominates it, with zoom, pan, a cursor and a
//! selected range. The per-cell summaries come from the analyzer's
//! level-of-detail index (`hyscope_analyzer::timeline`); this module only maps the
//! window to cells and draws.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::data::Data;
use super::{fmt, scroll};
use crate::units;

use crate::aggregate::{self, GroupLines, Request};
pub use hyscope_analyzer::timeline::{
    CellSummary, Group, GroupCell, GroupRow, Grouping, RankCells, STATES, Segment, State,
    TimelineIndex,
};

/// A row of the timeline: a rank, one thread of a rank, or a group of ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowKey {
    /// The rank (a group's first rank).
    pub rank: u32,
    /// None = the rank as a whole (its threads summed).
    pub thread: Option<u32>,
    /// Rows of the index this row sums (a group: every thread of its ranks).
    pub index_rows: Vec<usize>,
    /// Several ranks aggregated on one line (more ranks than lines), with their numbers.
    pub group: Option<(Group, Vec<u32>)>,
    /// The rank is left out for a damaged part (no index row): what its
    /// line says instead of cells, the file and the problem
    /// ([`hyscope_analyzer::model::LeftOutPart::says`]; for aggregated
    /// lines, every rank left out, `damaged_parts::left_out_summary`).
    pub left_out: Option<String>,
}

/// Colour of each state of the analyzer's classification.
pub fn color(s: State) -> Color {
    match s {
        State::Serial => Color::DarkGray,
        State::Compute => Color::Green,
        State::OmpRuntime => Color::Yellow,
        State::BarrierWait => Color::Red,
        State::LockWait => Color::Magenta,
        State::Task => Color::LightGreen,
        State::MpiP2p => Color::Blue,
        State::MpiCollective => Color::Cyan,
        State::MpiWait => Color::LightBlue,
        State::MpiOther => Color::Gray,
    }
}

/// Legend names short enough for 80 columns.
fn short_name(s: State) -> &'static str {
    match s {
        State::Serial => "serial",
        State::Compute => "compute",
        State::OmpRuntime => "omp-rt",
        State::BarrierWait => "bar-wait",
        State::LockWait => "lock",
        State::Task => "task",
        State::MpiP2p => "p2p",
        State::MpiCollective => "coll",
        State::MpiWait => "mpi-wait",
        State::MpiOther => "mpi",
    }
}

/// Sum the cells of several index rows (a rank row sums its threads).
fn row_cells(
    ix: &TimelineIndex,
    row: &RowKey,
    t0: i64,
    t1: i64,
    columns: usize,
) -> Vec<CellSummary> {
    let mut out: Option<Vec<CellSummary>> = None;
    for &r in &row.index_rows {
        let cells = ix.query(r, t0, t1, columns);
        match &mut out {
            None => out = Some(cells),
            Some(acc) => {
                for (a, c) in acc.iter_mut().zip(cells) {
                    for s in 0..STATES {
                        a.time[s] += c.time[s];
                    }
                }
            }
        }
    }
    out.unwrap_or_default()
}

/// What the cursor shows, cached per cell. The recorded interval under the
/// cursor is read from the trace files on a worker thread, so a redraw never
/// waits for the disk; it replaces the first line when it arrives.
#[derive(Debug, Default)]
pub struct CursorDetail {
    key: Option<(usize, i64, i64)>,
    pub lines: Vec<String>,
    pending: Option<std::sync::mpsc::Receiver<Option<String>>>,
    started: Option<std::time::Instant>,
    /// How long the last read took (for `--timing`).
    pub last_read_ms: Option<f64>,
}

impl CursorDetail {
    /// Take the worker's answer if it is there. True when the lines changed.
    pub fn poll(&mut self) -> bool {
        let Some(rx) = &self.pending else {
            return false;
        };
        match rx.try_recv() {
            Ok(line) => {
                self.pending = None;
                self.last_read_ms = self.started.map(|t| t.elapsed().as_secs_f64() * 1e3);
                match line {
                    Some(l) if !self.lines.is_empty() => {
                        self.lines[0] = l;
                        true
                    }
                    _ => false,
                }
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.pending = None;
                false
            }
        }
    }

    /// Block until the worker answered (render tests). True when the lines changed.
    #[allow(dead_code)]
    pub fn wait(&mut self) -> bool {
        let Some(rx) = self.pending.take() else {
            return false;
        };
        match rx.recv() {
            Ok(Some(l)) if !self.lines.is_empty() => {
                self.lines[0] = l;
                true
            }
            _ => false,
        }
    }
}

/// Window, cursor, selection and expanded ranks.
#[derive(Debug, Default)]
pub struct TimelineState {
    pub t0: i64,
    pub t1: i64,
    /// Cursor column inside the data area (0-based).
    pub cursor: u16,
    /// Selected visible row.
    pub row: usize,
    pub row_scroll: usize,
    pub expanded: BTreeSet<u32>,
    /// Start of a range being selected with `v`.
    pub anchor: Option<i64>,
    pub selection: Option<(i64, i64)>,
    /// Width of the data area at the last draw (columns).
    pub columns: u16,
    pub detail: CursorDetail,
    /// Cursor-detail readers in flight.
    readers: Arc<AtomicUsize>,
    drag_from: Option<u16>,
    /// The trace's phases, read once the index is loaded.
    phases: Option<hyscope_analyzer::phases::PhaseLanes>,
    /// The visible row each drawn line below the ruler shows (None: a phase
    /// row; the pinned rank's line shows its rank row), for the mouse; empty
    /// before the first draw.
    line_rows: Vec<Option<usize>>,
    /// The interval of the chosen phase `f` zoomed to last.
    pub phase_frame: Option<usize>,
    /// Lines available for rows at the last draw: more ranks than that are
    /// aggregated (0 before the first draw).
    pub fit: usize,
    /// Which aggregated lines are open.
    pub grouping: Grouping,
    /// The aggregated lines, computed off the UI thread when large.
    pub group_lines: GroupLines,
    /// Width of the row labels at the last draw.
    label_w: u16,
    /// The view is the one the timeline opens on (the run's window once the
    /// analysis gives it, [`Data::home_span`]) and follows it until moved.
    at_home: bool,
}

const LABEL_W: u16 = 12;
/// Lines under the legend for a phases part that cannot be read.
const NOTE_LINES: usize = 4;
/// Row labels when ranks are aggregated: `▸ranks 4080–4095 worst 4093`.
const GROUP_LABEL_W: u16 = 28;

impl TimelineState {
    pub fn new(data: &Data) -> TimelineState {
        let mut s = TimelineState {
            columns: 60,
            label_w: LABEL_W,
            at_home: true,
            ..Default::default()
        };
        if let Some(home) = data.home_span() {
            (s.t0, s.t1) = home;
        }
        s
    }

    /// Open on the run's window ([`Data::home_span`]) while the view has
    /// not been moved (it may come after the timeline: the analysis loads
    /// on its own thread).
    pub fn follow_home(&mut self, data: &Data) {
        if (self.at_home || self.t1 <= self.t0)
            && let Some(home) = data.home_span()
        {
            (self.t0, self.t1) = home;
            self.at_home = true;
        }
    }

    /// Zoom to the next interval of the phase `name` (all ranks' merged),
    /// with a margin of a twentieth on each side.
    pub fn frame_phase(&mut self, name: &str, data: &Data) {
        let Some(ix) = data.timeline() else {
            return;
        };
        let lanes = self
            .phases
            .get_or_insert_with(|| hyscope_analyzer::phases::PhaseLanes::read(ix));
        let windows = lanes.windows(name);
        if windows.is_empty() {
            return;
        }
        let k = self.phase_frame.map_or(0, |k| (k + 1) % windows.len());
        self.phase_frame = Some(k);
        let (a, b) = windows[k];
        let margin = ((b - a) / 20).max(1);
        let (lo, hi) = self.full(data);
        self.t0 = a - margin;
        self.t1 = (b + margin).max(self.t0 + self.columns as i64);
        self.clamp(lo, hi);
    }

    /// How far the view can zoom out and pan: the run's window and every
    /// row the timeline has (some lie outside the window: the title says so).
    fn full(&self, data: &Data) -> (i64, i64) {
        let span = data.cells().map(|s| s.span());
        match (data.home_span(), span) {
            (Some(h), Some(s)) => (h.0.min(s.0), h.1.max(s.1)),
            (h, s) => h.or(s).unwrap_or((0, 1)),
        }
    }

    /// Whether ranks are aggregated: more of them than lines, and no filter
    /// (a filter shows the matching ranks one per line).
    pub fn aggregated(&self, data: &Data, filter: &str) -> bool {
        data.cells()
            .is_some_and(|ix| filter.is_empty() && self.fit > 0 && ix.rank_rows().len() > self.fit)
    }

    /// Rows shown: ranks (or groups of ranks when there are more ranks than
    /// lines), and the threads of expanded ranks, that pass the filter.
    pub fn visible_rows(&self, data: &Data, filter: &str) -> Vec<RowKey> {
        let Some(ix) = data.cells() else {
            return Vec::new();
        };
        let ranks = ix.rank_rows();
        let rank_row = |pos: usize| RowKey {
            rank: ranks[pos].rank,
            thread: None,
            index_rows: ranks[pos].rows.clone().collect(),
            group: None,
            left_out: None,
        };
        let f = filter.to_lowercase();
        let mut rows = Vec::new();
        let push_rank = |k: RowKey, rows: &mut Vec<RowKey>| {
            // A rank's threads come with the index (the overview sums them).
            let expanded = self.expanded.contains(&k.rank) && data.timeline().is_some();
            let threads: Vec<RowKey> = if expanded {
                k.index_rows
                    .iter()
                    .map(|&i| RowKey {
                        rank: k.rank,
                        thread: Some(ix.rows()[i].thread),
                        index_rows: vec![i],
                        group: None,
                        left_out: None,
                    })
                    .collect()
            } else {
                Vec::new()
            };
            rows.push(k);
            rows.extend(threads);
        };
        if self.aggregated(data, filter) {
            for g in self.grouping.lines(ranks.len(), self.fit) {
                if g.is_single() {
                    push_rank(rank_row(g.start), &mut rows);
                } else {
                    rows.push(RowKey {
                        rank: ranks[g.start].rank,
                        thread: None,
                        index_rows: (ranks[g.start].rows.start..ranks[g.end - 1].rows.end)
                            .collect(),
                        group: Some((g, ranks[g.start..g.end].iter().map(|r| r.rank).collect())),
                        left_out: None,
                    });
                }
            }
            // The ranks left out: one line above the groups, saying which.
            if let Some(text) = hyscope_analyzer::damaged_parts::left_out_summary(ix.left_out()) {
                rows.insert(0, left_out_row(ix.left_out()[0].rank, text));
            }
            return rows;
        }
        // Each rank's rows, and each rank left out, in display order (by
        // host, then rank).
        let host_of = |rank: u32| {
            data.manifest
                .ranks
                .iter()
                .find(|r| r.rank == rank)
                .map_or(String::new(), |r| r.host.clone())
        };
        let mut chunks: Vec<((String, u32), Vec<RowKey>)> = Vec::new();
        for (pos, r) in ranks.iter().enumerate() {
            let k = rank_row(pos);
            if f.is_empty() || row_label(&k).to_lowercase().contains(&f) {
                let mut chunk = Vec::new();
                push_rank(k, &mut chunk);
                let host = ix.rows()[r.rows.start].host.clone();
                chunks.push(((host, r.rank), chunk));
            }
        }
        let mut marked: Vec<u32> = Vec::new();
        for p in ix.left_out() {
            let k = left_out_row(p.rank, p.says());
            if !marked.contains(&p.rank)
                && (f.is_empty() || row_label(&k).to_lowercase().contains(&f))
            {
                marked.push(p.rank);
                chunks.push(((host_of(p.rank), p.rank), vec![k]));
            }
        }
        chunks.sort_by(|a, b| a.0.cmp(&b.0));
        chunks.into_iter().flat_map(|(_, c)| c).collect()
    }

    /// ns per character cell.
    pub fn cell_ns(&self) -> f64 {
        (self.t1 - self.t0).max(1) as f64 / self.columns.max(1) as f64
    }

    /// Time at the left edge of column `c` (the index's own cell bounds).
    pub fn time_at(&self, c: u16) -> i64 {
        hyscope_analyzer::timeline::cell_bounds(
            self.t0,
            self.t1,
            self.columns.max(1) as usize,
            c as usize,
        )
        .0
    }

    /// `[start, end)` of the cursor's cell.
    pub fn cursor_time(&self) -> (i64, i64) {
        hyscope_analyzer::timeline::cell_bounds(
            self.t0,
            self.t1,
            self.columns.max(1) as usize,
            self.cursor as usize,
        )
    }

    /// Zoom by `factor` (< 1 zooms in) keeping the cursor's time under the cursor.
    pub fn zoom(&mut self, factor: f64, data: &Data) {
        let (lo, hi) = self.full(data);
        let pivot = self.time_at(self.cursor);
        let frac = self.cursor as f64 / self.columns.max(1) as f64;
        // At least one ns per cell, at most the whole run.
        let width = (((self.t1 - self.t0) as f64 * factor) as i64)
            .max(self.columns as i64)
            .min((hi - lo).max(1));
        self.t0 = pivot - (width as f64 * frac) as i64;
        self.t1 = self.t0 + width;
        self.clamp(lo, hi);
    }

    /// Pan by `cells` character cells (negative = left).
    pub fn pan(&mut self, cells: i64, data: &Data) {
        let (lo, hi) = self.full(data);
        let d = (cells as f64 * self.cell_ns()) as i64;
        self.t0 += d;
        self.t1 += d;
        self.clamp(lo, hi);
    }

    fn clamp(&mut self, lo: i64, hi: i64) {
        // Every move of the view ends here: it no longer follows the home span.
        self.at_home = false;
        let w = self.t1 - self.t0;
        if self.t0 < lo {
            self.t0 = lo;
            self.t1 = lo + w;
        }
        if self.t1 > hi {
            self.t1 = hi;
            self.t0 = (hi - w).max(lo);
        }
    }

    pub fn on_key(&mut self, key: KeyEvent, data: &Data, filter: &str) {
        let rows = self.visible_rows(data, filter).len();
        match key.code {
            KeyCode::Left | KeyCode::Char('h') => {
                if self.cursor == 0 {
                    self.pan(-1, data);
                } else {
                    self.cursor -= 1;
                }
            }
            KeyCode::Right | KeyCode::Char('l') => {
                if self.cursor + 1 >= self.columns {
                    self.pan(1, data);
                } else {
                    self.cursor += 1;
                }
            }
            KeyCode::Char('H') => self.pan(-(self.columns as i64 / 4).max(1), data),
            KeyCode::Char('L') => self.pan((self.columns as i64 / 4).max(1), data),
            KeyCode::Char('+') | KeyCode::Char('=') | KeyCode::Char('i') => self.zoom(0.5, data),
            KeyCode::Char('-') | KeyCode::Char('o') => self.zoom(2.0, data),
            KeyCode::Char('0') => {
                self.at_home = true;
                self.follow_home(data);
            }
            KeyCode::Up | KeyCode::Char('k') => self.row = self.row.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.row = (self.row + 1).min(rows.saturating_sub(1))
            }
            KeyCode::PageDown => self.row = (self.row + 10).min(rows.saturating_sub(1)),
            KeyCode::PageUp => self.row = self.row.saturating_sub(10),
            KeyCode::Enter => {
                let visible = self.visible_rows(data, filter);
                match visible.get(self.row) {
                    Some(RowKey {
                        group: Some((g, _)),
                        ..
                    }) => self.grouping.toggle(*g),
                    Some(r) if r.thread.is_none() && !self.expanded.remove(&r.rank) => {
                        self.expanded.insert(r.rank);
                    }
                    _ => {}
                }
            }
            KeyCode::Backspace => {
                // Close the innermost open group holding the selected row.
                let visible = self.visible_rows(data, filter);
                let pos = visible.get(self.row).and_then(|r| {
                    data.cells()?
                        .rank_rows()
                        .iter()
                        .position(|x| x.rank == r.rank)
                });
                if let Some(p) = pos
                    && let Some(g) = self
                        .grouping
                        .expanded
                        .iter()
                        .filter(|g| g.start <= p && p < g.end)
                        .min_by_key(|g| g.len())
                        .copied()
                {
                    self.grouping.close(g);
                    let rows = self.visible_rows(data, filter);
                    if let Some(i) = rows.iter().position(|r| match &r.group {
                        Some((h, _)) => h.start <= g.start && g.end <= h.end,
                        None => false,
                    }) {
                        self.row = i;
                    }
                }
            }
            KeyCode::Char('v') => {
                let (t, end) = self.cursor_time();
                match self.anchor.take() {
                    None => {
                        self.anchor = Some(t);
                        self.selection = None;
                    }
                    Some(a) => self.selection = Some((a.min(t), a.max(end))),
                }
            }
            KeyCode::Char('z') => {
                if let Some((a, b)) = self.selection {
                    let (lo, hi) = self.full(data);
                    self.t0 = a;
                    self.t1 = b.max(a + self.columns as i64);
                    self.clamp(lo, hi);
                }
            }
            _ => {}
        }
    }

    pub fn on_mouse(&mut self, m: MouseEvent, area: Rect, data: &Data) {
        // Data columns start after the border and the label.
        let data_x = area.x + 1 + self.label_w;
        let col = m
            .column
            .saturating_sub(data_x)
            .min(self.columns.saturating_sub(1));
        match m.kind {
            MouseEventKind::ScrollUp => {
                self.cursor = col;
                self.zoom(0.5, data);
            }
            MouseEventKind::ScrollDown => {
                self.cursor = col;
                self.zoom(2.0, data);
            }
            MouseEventKind::Down(MouseButton::Left) => {
                self.cursor = col;
                self.drag_from = Some(col);
                // Rows start two lines below the top (border + ruler).
                if m.row >= area.y + 2 {
                    let line = (m.row - area.y - 2) as usize;
                    if self.line_rows.is_empty() {
                        self.row = line + self.row_scroll;
                    } else if let Some(Some(row)) = self.line_rows.get(line) {
                        self.row = *row;
                    }
                }
            }
            MouseEventKind::Drag(MouseButton::Left) => {
                if let Some(from) = self.drag_from {
                    let (a, b) = (from.min(col), from.max(col));
                    self.selection = Some((self.time_at(a), self.time_at(b + 1)));
                    self.cursor = col;
                }
            }
            MouseEventKind::Up(MouseButton::Left) => self.drag_from = None,
            _ => {}
        }
    }
}

/// Colours of the phase rows, by name (`phases::name_hue`).
const PHASE_COLORS: [Color; 6] = [
    Color::LightMagenta,
    Color::LightCyan,
    Color::LightYellow,
    Color::LightGreen,
    Color::LightBlue,
    Color::LightRed,
];

/// The phase row above a rank: each cell shows the rank's innermost phase,
/// its name spelt along the cells it covers, one colour per name.
fn phase_line(
    lanes: &hyscope_analyzer::phases::PhaseLanes,
    rank: u32,
    t0: i64,
    t1: i64,
    cols: usize,
    label_w: u16,
) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{:w$}", "  phases", w = label_w as usize),
        Style::default().fg(Color::Gray),
    )];
    let mut run: Option<(&hyscope_format::PhaseRecord, usize)> = None;
    for cell in lanes.cells(rank, t0, t1, cols) {
        let Some(p) = cell else {
            run = None;
            spans.push(Span::raw(" "));
            continue;
        };
        let at = match run {
            Some((q, n)) if std::ptr::eq(q, p) => n + 1,
            _ => 0,
        };
        run = Some((p, at));
        let ch = p.name.chars().nth(at).unwrap_or('─');
        let hue = hyscope_analyzer::phases::name_hue(&p.name, PHASE_COLORS.len());
        spans.push(Span::styled(
            ch.to_string(),
            Style::default().fg(Color::Black).bg(PHASE_COLORS[hue]),
        ));
    }
    Line::from(spans)
}

/// A timeline line's label (reversed on the selected line) and the space
/// after it, with room for `cols` cells.
fn label_spans(label: String, selected: bool, label_w: usize, cols: usize) -> Vec<Span<'static>> {
    let style = if selected {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
    };
    let mut spans = Vec::with_capacity(cols + 2);
    spans.push(Span::styled(format!("{label:w$}", w = label_w - 1), style));
    spans.push(Span::raw(" "));
    spans
}

/// An aggregated line: each cell in the colour of the worst rank's dominant
/// state there, shaded by the spread of waiting across the group's ranks
/// ([`spread_shade`]). `line` may have been computed for another window: a
/// cell shows the computed cell at its middle time.
fn group_line(
    st: &TimelineState,
    line: Option<&GroupRow>,
    label: String,
    selected: bool,
    label_w: usize,
    cols: usize,
    (sel_a, sel_b): (i64, i64),
) -> Line<'static> {
    let mut spans = label_spans(label, selected, label_w, cols);
    for c in 0..cols {
        let (a, b) = hyscope_analyzer::timeline::cell_bounds(st.t0, st.t1, cols, c);
        let cell = line.and_then(|l| {
            let same = l.cells.len() == cols
                && l.cells.first().is_some_and(|x| x.worst.t0 == st.t0)
                && l.cells.last().is_some_and(|x| x.worst.t1 == st.t1);
            if same {
                l.cells.get(c)
            } else {
                aggregate::cell_at(l, a + (b - a) / 2)
            }
        });
        let mut style = Style::default();
        let ch = match cell.and_then(|x| x.worst.dominant().map(|d| (x, d))) {
            Some((x, d)) => {
                style = style.fg(color(d));
                spread_shade(x.spread())
            }
            None => ' ',
        };
        if c == st.cursor as usize {
            style = style.bg(Color::White);
        } else if a < sel_b && b > sel_a {
            style = style.bg(Color::DarkGray);
        }
        spans.push(Span::styled(ch.to_string(), style));
    }
    Line::from(spans)
}

/// The rows the timeline draws in `height` lines under its ruler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowWindow {
    /// The rank row drawn first, above its threads, when the first row of
    /// the window is one of them: a thread row never shows without its rank.
    pub pinned: Option<usize>,
    /// Rows `first..end` are drawn, each after its phase line if it has one.
    pub first: usize,
    pub end: usize,
    /// Whether the first row's phase line is drawn (left out when the row
    /// alone fills the lines).
    pub first_phase: bool,
    /// Rows left out above (the pinned row is shown) and below.
    pub above: usize,
    pub below: usize,
}

/// The window of `rows` that fits in `height` lines (a row takes two when
/// `has_phase`, one more for a pinned rank): from `scroll`, moved the least
/// that shows `selected`, and back up while that leaves no empty line.
pub fn row_window(
    rows: &[RowKey],
    has_phase: &dyn Fn(usize) -> bool,
    height: usize,
    selected: usize,
    scroll: usize,
) -> RowWindow {
    let n = rows.len();
    if n == 0 || height == 0 {
        return RowWindow {
            pinned: None,
            first: 0,
            end: 0,
            first_phase: false,
            above: 0,
            below: n,
        };
    }
    let lines = |i: usize| 1 + has_phase(i) as usize;
    // The rank of a thread row, above it.
    let rank_of = |i: usize| {
        rows[i].thread?;
        (0..i).rev().find(|&j| {
            rows[j].thread.is_none() && rows[j].group.is_none() && rows[j].rank == rows[i].rank
        })
    };
    // Lines taken by rows `first..end`, the rank of the first pinned.
    let cost = |first: usize, end: usize| -> usize {
        rank_of(first).map_or(0, |_| 1) + (first..end).map(lines).sum::<usize>()
    };
    let selected = selected.min(n - 1);
    let mut first = scroll.min(selected);
    while first < selected && cost(first, selected + 1) > height {
        first += 1;
    }
    // Up again while every row from there to the end fits.
    while first > 0 && cost(first - 1, n) <= height {
        first -= 1;
    }
    let mut pinned = rank_of(first);
    let mut first_phase = has_phase(first);
    // A row alone too tall: its pinned rank goes, then its phase line.
    if pinned.is_some() && 1 + lines(first) > height {
        pinned = None;
    }
    if first_phase && pinned.map_or(0, |_| 1) + 2 > height {
        first_phase = false;
    }
    let mut used = pinned.map_or(0, |_| 1) + 1 + first_phase as usize;
    let mut end = first + 1;
    while end < n && used + lines(end) <= height {
        used += lines(end);
        end += 1;
    }
    RowWindow {
        pinned,
        first,
        end,
        first_phase,
        above: first - pinned.map_or(0, |_| 1),
        below: n - end,
    }
}

/// The line of a rank left out for a damaged part, saying `text`.
fn left_out_row(rank: u32, text: String) -> RowKey {
    RowKey {
        rank,
        thread: None,
        index_rows: Vec::new(),
        group: None,
        left_out: Some(text),
    }
}

/// A left-out rank's line (`✗rank 0`; `✗left out` above aggregated lines,
/// for every rank left out), then what it says in place of cells.
fn left_out_line(
    row: &RowKey,
    text: &str,
    (selected, aggregated): (bool, bool),
    label_w: usize,
    cols: usize,
) -> Line<'static> {
    let label = match aggregated {
        false => format!("✗{}", fmt::clip(&row_label(row), label_w - 2)),
        true => "✗left out".to_string(),
    };
    let mut spans = label_spans(label, selected, label_w, cols);
    spans.push(Span::styled(
        fmt::clip(text, cols),
        Style::default().fg(Color::Red),
    ));
    Line::from(spans)
}

pub fn row_label(r: &RowKey) -> String {
    match (&r.group, r.thread) {
        (Some((_, ranks)), _) => hyscope_analyzer::timeline::ranks_label(ranks),
        (None, None) => format!("rank {}", r.rank),
        (None, Some(t)) => format!(" thread {t}"),
    }
}

/// Shade of an aggregated cell by the spread of waiting across its ranks:
/// solid when they agree, lighter as they differ.
fn spread_shade(spread: f64) -> char {
    if spread < 0.1 {
        '█'
    } else if spread < 0.25 {
        '▓'
    } else if spread < 0.5 {
        '▒'
    } else {
        '░'
    }
}

/// Shade of a cell by how much of it the dominant state covers.
fn shade(share: f64) -> char {
    if share >= 0.75 {
        '█'
    } else if share >= 0.5 {
        '▓'
    } else if share >= 0.25 {
        '▒'
    } else {
        '░'
    }
}

/// Relative time on the ruler (from the start of the run), with the
/// decimals that `step` (ns: a cell of the window) resolves, as the GUI's
/// ruler (`units::ns_tick`): zoomed in, the positions still differ.
fn rel(t: i64, origin: i64, step: f64) -> String {
    units::ns_tick((t - origin) as f64, step)
}

/// The Timeline tab of `data`, rows passing `filter`.
pub fn draw(f: &mut Frame, area: Rect, st: &mut TimelineState, data: &Data, filter: &str) {
    // The index when loaded; until then the coarse overview (`ix` None).
    let ix = data.timeline();
    if let Some(e) = data.timeline_failure() {
        // As the GUI: the failure, not the overview of the ranks read before it.
        let text = vec![
            Line::styled(
                format!("timeline unavailable: {e}"),
                Style::default().fg(Color::Red),
            ),
            Line::from(""),
            Line::from(
                "Nothing is drawn: the ranks read before the failure would pass for the whole run.",
            ),
        ];
        f.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title("Timeline — unavailable"),
            ),
            area,
        );
        return;
    }
    let Some(src) = data.cells() else {
        let msg = data.timeline_status();
        f.render_widget(
            Paragraph::new(msg).block(Block::default().borders(Borders::ALL).title("Timeline")),
            area,
        );
        return;
    };
    if st.phases.is_none()
        && let Some(ix) = ix
    {
        st.phases = Some(hyscope_analyzer::phases::PhaseLanes::read(ix));
    }
    // A phases part that cannot be read: named under the legend (its
    // ranks go without their phase row).
    let mut note: Vec<String> = st
        .phases
        .as_ref()
        .and_then(|l| l.problem())
        .map_or_else(Vec::new, |p| fmt::wrap(&p, area.width as usize));
    // At most NOTE_LINES lines, the last saying how many more there are.
    if note.len() > NOTE_LINES {
        let more = note.len() + 1 - NOTE_LINES;
        note.truncate(NOTE_LINES - 1);
        note.push(scroll::more('▼', more, scroll::Noun::Lines));
    }
    let [main, legend, notes, details] = Layout::vertical([
        Constraint::Min(4),
        Constraint::Length(1),
        Constraint::Length(note.len() as u16),
        Constraint::Length(3),
    ])
    .areas(area);
    f.render_widget(
        Paragraph::new(note.into_iter().map(Line::from).collect::<Vec<_>>())
            .style(Style::default().fg(Color::Red)),
        notes,
    );
    st.follow_home(data);
    if st.t1 <= st.t0 {
        (st.t0, st.t1) = src.span();
    }
    // Times are measured from the run's window's start (the report's time 0).
    let origin = data.origin();
    let height = main.height.saturating_sub(3) as usize; // borders + ruler
    st.fit = height.max(1);
    let aggregated = st.aggregated(data, filter);
    st.label_w = if aggregated { GROUP_LABEL_W } else { LABEL_W };
    let label_w = st.label_w;
    st.columns = main.width.saturating_sub(label_w + 2).max(1);
    st.cursor = st.cursor.min(st.columns - 1);
    let rows = st.visible_rows(data, filter);
    st.row = st.row.min(rows.len().saturating_sub(1));
    // A rank with phases has its phase line above its row.
    let lanes = st.phases.as_ref().filter(|l| !l.is_empty() && !aggregated);
    let has_phase = |i: usize| {
        rows[i].thread.is_none()
            && rows[i].group.is_none()
            && lanes.is_some_and(|l| l.has(rows[i].rank))
    };
    let win = row_window(&rows, &has_phase, height, st.row, st.row_scroll);
    st.row_scroll = win.first;
    let cols = st.columns as usize;
    let (sel_a, sel_b) = st.selection.unwrap_or((i64::MAX, i64::MIN));

    let mut lines = Vec::with_capacity(height + 1);
    // Ruler: window start, cursor time and cell width, window end.
    let (ct, _) = st.cursor_time();
    let step = st.cell_ns();
    let left = rel(st.t0, origin, step);
    let right = rel(st.t1, origin, step);
    let mid = format!(
        "cursor {}  cell {}",
        rel(ct, origin, step),
        units::ns(st.cell_ns())
    );
    let used = left.chars().count() + right.chars().count() + mid.chars().count();
    let pad = cols.saturating_sub(used);
    lines.push(Line::from(vec![
        Span::raw(format!("{:w$}", "", w = label_w as usize)),
        Span::styled(
            format!(
                "{left}{:a$}{mid}{:b$}{right}",
                "",
                "",
                a = pad / 2,
                b = pad - pad / 2
            ),
            Style::default().fg(Color::Gray),
        ),
    ]));
    st.line_rows.clear();
    // The aggregated lines on screen: the last computed (maybe for another
    // window while the worker catches up).
    let groups: Vec<Group> = rows[win.first..win.end]
        .iter()
        .filter_map(|r| r.group.as_ref().map(|(g, _)| *g))
        .collect();
    let request = Request {
        t0: st.t0,
        t1: st.t1,
        columns: cols,
        groups,
    };
    let lines_wanted = !request.groups.is_empty();
    let group_lines: Arc<Vec<GroupRow>> = match data.source() {
        Some(source) if lines_wanted => st.group_lines.get(&source, request).unwrap_or_default(),
        _ => Arc::default(),
    };
    // The rank row pinned above its first threads, then the rows of the
    // window, each after its phase line.
    let drawn = win.pinned.map(|p| (p, false)).into_iter().chain(
        (win.first..win.end).map(|i| (i, has_phase(i) && (i != win.first || win.first_phase))),
    );
    for (i, phase) in drawn {
        let row = &rows[i];
        if let (true, Some(lanes)) = (phase, lanes) {
            lines.push(phase_line(lanes, row.rank, st.t0, st.t1, cols, label_w));
            st.line_rows.push(None);
        }
        st.line_rows.push(Some(i));
        if let Some(text) = &row.left_out {
            let how = (i == st.row, aggregated);
            lines.push(left_out_line(row, text, how, label_w as usize, cols));
            continue;
        }
        let marker = match row.thread {
            None if row.group.is_none() && st.expanded.contains(&row.rank) => "▾",
            None => "▸",
            Some(_) => " ",
        };
        let label_w = label_w as usize;
        if let Some((g, _)) = &row.group {
            let line = aggregate::line(&group_lines, *g);
            let mut text = row_label(row);
            if let Some(w) = line.and_then(|l| l.worst_rank) {
                text.push_str(&format!(" worst {w}"));
            }
            let label = format!("{marker}{}", fmt::clip(&text, label_w - 2));
            lines.push(group_line(
                st,
                line,
                label,
                i == st.row,
                label_w,
                cols,
                (sel_a, sel_b),
            ));
            continue;
        }
        let cells = match ix {
            Some(ix) => row_cells(ix, row, st.t0, st.t1, cols),
            None => rank_cells(src, row.rank, st.t0, st.t1, cols),
        };
        let label = format!("{marker}{}", fmt::clip(&row_label(row), label_w - 2));
        let mut spans = label_spans(label, i == st.row, label_w, cols);
        for (c, cell) in cells.iter().enumerate().take(cols) {
            let mut style = Style::default();
            let ch = match cell.dominant() {
                Some(s) => {
                    style = style.fg(color(s));
                    shade(cell.share(s))
                }
                None => ' ',
            };
            if c == st.cursor as usize {
                style = style.bg(Color::White);
            } else if cell.t0 < sel_b && cell.t1 > sel_a {
                style = style.bg(Color::DarkGray);
            }
            spans.push(Span::styled(ch.to_string(), style));
        }
        lines.push(Line::from(spans));
    }
    let mut title = format!(
        "Timeline {} – {} ({} shown)",
        rel(st.t0, origin, step),
        rel(st.t1, origin, step),
        units::ns((st.t1 - st.t0) as f64)
    );
    // Time outside the run's window is shown but is not run time.
    if let Some(w) = data.run_window()
        && (st.t0 < w.start_ns || st.t1 > w.end_ns)
    {
        title.push_str(&format!(
            " — run {} – {}: beyond it is not run time",
            rel(w.start_ns, origin, step),
            rel(w.end_ns, origin, step)
        ));
    }
    if let (None, Some(c)) = (ix, data.coarse()) {
        let read = c.ranks_note();
        let of = if read.is_empty() {
            String::new()
        } else {
            format!(" ({read})")
        };
        title.push_str(&format!(
            " — coarse overview{of}, bins of {}: detail loading…",
            units::ns(c.overview.bin_ns() as f64)
        ));
    }
    if lines_wanted && group_lines.is_empty() {
        title.push_str(" — computing the lines…");
    }
    if data.manifest.mode == "profile" {
        // Rows that look idle would otherwise read as serial code.
        title.push_str(
            " — profile mode: OpenMP totals only, no OpenMP intervals (record with --mode trace)",
        );
    }
    // What the window leaves out above and below (the pinned rank is shown).
    let shown = scroll::Window {
        first: win.above,
        shown: rows.len() - win.above - win.below,
        total: rows.len(),
    };
    f.render_widget(
        Paragraph::new(lines).block(scroll::marked(
            &title,
            main.width,
            &shown,
            scroll::Noun::Rows,
        )),
        main,
    );

    let mut leg = Vec::new();
    for s in State::ALL {
        leg.push(Span::styled("█", Style::default().fg(color(s))));
        leg.push(Span::raw(format!("{} ", short_name(s))));
    }
    f.render_widget(Paragraph::new(Line::from(leg)), legend);

    // Details: the interval under the cursor, and the selected range's statistics.
    let mut text: Vec<Line> = Vec::new();
    // A rank left out: what cannot be read, in full.
    if let Some(said) = rows.get(st.row).and_then(|r| r.left_out.as_ref()) {
        text = fmt::wrap(said, details.width as usize)
            .into_iter()
            .map(|l| Line::styled(l, Style::default().fg(Color::Red)))
            .collect();
        f.render_widget(Paragraph::new(text), details);
        return;
    }
    let Some(ix) = ix else {
        if let Some(row) = rows.get(st.row) {
            text = coarse_details(src, row, &group_lines, st.cursor_time(), data);
        }
        f.render_widget(Paragraph::new(text), details);
        return;
    };
    if let Some(row) = rows.get(st.row) {
        let (a, b) = st.cursor_time();
        // An aggregated line: the worst rank of the cell under the cursor.
        let group_cell = row
            .group
            .as_ref()
            .and_then(|(g, _)| aggregate::line(&group_lines, *g))
            .and_then(|l| aggregate::cell_at(l, a + (b - a) / 2));
        let worst = group_cell.and_then(|c| c.worst_rank).and_then(|w| {
            ix.rank_rows()
                .iter()
                .find(|r| r.rank == w)
                .map(|r| (w, r.rows.start))
        });
        // The first thread of a rank row stands for the rank under the cursor.
        let irow = worst.map_or(row.index_rows[0], |(_, i)| i);
        let key = (irow, a, b);
        if st.detail.key != Some(key) {
            let (lines, fine) = cursor_lines(ix, irow, a, b, origin, step);
            // At most two readers in flight: a held arrow key must not pile
            // up threads reading the trace (the cell then shows its segment).
            let readers = Arc::clone(&st.readers);
            let pending = match (fine, data.timeline_arc()) {
                (Some(seg), Some(ix)) if readers.load(Ordering::Relaxed) < 2 => {
                    let ix = Arc::clone(ix);
                    let (tx, rx) = std::sync::mpsc::channel();
                    readers.fetch_add(1, Ordering::Relaxed);
                    let r2 = Arc::clone(&readers);
                    let spawned = std::thread::Builder::new()
                        .name("hyscope-tui-cursor".into())
                        .spawn(move || {
                            let line = interval_line(&ix, irow, seg, origin, step);
                            r2.fetch_sub(1, Ordering::Relaxed);
                            let _ = tx.send(line);
                        });
                    if spawned.is_err() {
                        readers.fetch_sub(1, Ordering::Relaxed);
                    }
                    spawned.ok().map(|_| rx)
                }
                _ => None,
            };
            st.detail = CursorDetail {
                key: Some(key),
                lines,
                started: pending.as_ref().map(|_| std::time::Instant::now()),
                pending,
                last_read_ms: None,
            };
        }
        let who = match (row.thread, worst) {
            (Some(t), _) => format!("rank {} thread {t}", row.rank),
            (None, Some((w, _))) => format!(
                "rank {w} thread {} (worst of {})",
                ix.rows()[irow].thread,
                row_label(row)
            ),
            (None, None) => format!("rank {} thread {}", row.rank, ix.rows()[irow].thread),
        };
        for (i, l) in st.detail.lines.iter().enumerate() {
            text.push(Line::from(if i == 0 {
                format!("{who}: {l}")
            } else if let (1, Some(c)) = (i, group_cell) {
                format!(
                    "{l} · waiting {}–{} of the cell across the ranks",
                    units::percent(c.wait_min),
                    units::percent(c.wait_max)
                )
            } else {
                l.clone()
            }));
        }
        if let Some((a, b)) = st.selection {
            let cells = row_cells(ix, row, a, b, 1);
            let mut per: Vec<(State, u64)> = State::ALL
                .iter()
                .map(|&s| (s, cells.iter().map(|c| c.time[s as usize]).sum()))
                .filter(|x| x.1 > 0)
                .collect();
            let total: u64 = per.iter().map(|x| x.1).sum();
            per.sort_by_key(|x| std::cmp::Reverse(x.1));
            // The statistics are the selected row's: say which.
            let of = match (&row.group, row.thread) {
                (None, Some(t)) => format!("rank {} thread {t}", row.rank),
                (None, None) => format!("rank {}, its threads", row.rank),
                (Some(_), _) => row_label(row),
            };
            let mut spans = vec![Span::raw(format!(
                "range {} – {} ({}), {of}: ",
                rel(a, origin, step),
                rel(b, origin, step),
                units::ns((b - a) as f64)
            ))];
            for (s, t) in per.iter().take(4) {
                spans.push(Span::styled(
                    format!(
                        "{} {} ",
                        s.name(),
                        units::percent(*t as f64 / total.max(1) as f64)
                    ),
                    Style::default().fg(color(*s)),
                ));
            }
            text.push(Line::from(spans));
        } else if let Some(a) = st.anchor {
            text.push(Line::from(format!(
                "selecting from {} — press v again to end the range",
                rel(a, origin, step)
            )));
        }
    }
    f.render_widget(Paragraph::new(text), details);
}

/// The time per state of the rank `rank` in `cols` cells, from the overview
/// or the index (its threads summed).
fn rank_cells(src: &dyn RankCells, rank: u32, t0: i64, t1: i64, cols: usize) -> Vec<CellSummary> {
    match src.rank_rows().iter().position(|r| r.rank == rank) {
        Some(pos) => src.rank_query(pos, t0, t1, cols),
        None => hyscope_analyzer::timeline::empty_cells(t0, t1, cols),
    }
}

/// The details while only the overview is loaded: the cursor cell's shares
/// (the worst rank's on an aggregated line), and that the recorded
/// intervals come with the index.
fn coarse_details(
    src: &dyn RankCells,
    row: &RowKey,
    group_lines: &[GroupRow],
    (a, b): (i64, i64),
    data: &Data,
) -> Vec<Line<'static>> {
    let group_cell = row
        .group
        .as_ref()
        .and_then(|(g, _)| aggregate::line(group_lines, *g))
        .and_then(|l| aggregate::cell_at(l, a + (b - a) / 2));
    let (who, cell) = match group_cell {
        Some(c) => (
            match c.worst_rank {
                Some(w) => format!("rank {w} (worst of {})", row_label(row)),
                None => row_label(row),
            },
            c.worst.clone(),
        ),
        None => (
            row_label(row),
            rank_cells(src, row.rank, a, b, 1)
                .pop()
                .unwrap_or(CellSummary {
                    t0: a,
                    t1: b,
                    time: [0; STATES],
                }),
        ),
    };
    let mut lines = vec![Line::from(format!(
        "{who}: coarse overview — the recorded intervals show once the detail is loaded"
    ))];
    let mut second = share_text(&cell);
    if let Some(c) = group_cell {
        second.push_str(&format!(
            " · waiting {}–{} of the cell across the ranks",
            units::percent(c.wait_min),
            units::percent(c.wait_max)
        ));
    }
    lines.push(Line::from(second));
    if let Some(w) = data.overview_warning() {
        lines.push(Line::from(w.to_string()));
    }
    lines
}

/// The cell's state shares and the segment at its middle; the segment too when
/// the cell is fine enough (≤ 3 segments) for its recorded interval to be
/// worth reading from the trace.
fn cursor_lines(
    ix: &TimelineIndex,
    row: usize,
    a: i64,
    b: i64,
    origin: i64,
    step: f64,
) -> (Vec<String>, Option<Segment>) {
    let cell = ix.summary(row, a, b);
    let mid = a + (b - a) / 2;
    let (first, fine) = match ix.segment_at(row, mid) {
        None => ("nothing recorded".to_string(), None),
        Some(seg) => (
            format!(
                "{} for {} at {}",
                seg.state.name(),
                units::ns((seg.end - seg.start) as f64),
                rel(seg.start, origin, step)
            ),
            (ix.segments_in(row, a, b, 4).len() <= 3).then_some(seg),
        ),
    };
    (vec![first, share_text(&cell)], fine)
}

/// `cell: compute 62.0 %, MPI wait 30.0 %, …`: the cell's three largest shares.
fn share_text(cell: &CellSummary) -> String {
    let mut shares: Vec<(State, f64)> = State::ALL
        .iter()
        .map(|&s| (s, cell.share(s)))
        .filter(|x| x.1 > 0.0)
        .collect();
    shares.sort_by(|x, y| y.1.total_cmp(&x.1));
    let text: Vec<String> = shares
        .iter()
        .take(3)
        .map(|(s, v)| format!("{} {}", s.name(), units::percent(*v)))
        .collect();
    format!("cell: {}", text.join(", "))
}

/// The innermost recorded interval behind `seg` (reads the row groups of the
/// trace around it).
fn interval_line(
    ix: &TimelineIndex,
    row: usize,
    seg: Segment,
    origin: i64,
    step: f64,
) -> Option<String> {
    let mid = seg.start + (seg.end - seg.start) / 2;
    let iv = ix
        .stack_at(row, mid)
        .ok()?
        .into_iter()
        .rev()
        .find(|i| i.state == seg.state)?;
    let role = iv
        .role(seg.state)
        .map_or(String::new(), |r| format!(" — {r}"));
    Some(format!(
        "{} [{}] {} at {}{role}",
        iv.name(),
        seg.state.name(),
        units::ns((iv.end - iv.start) as f64),
        rel(iv.start, origin, step)
    ))
}

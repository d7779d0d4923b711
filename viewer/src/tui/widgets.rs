//! Small drawing helpers shared by the tabs.

use hyscope_analyzer::Observable;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};

use super::app::{App, Scroll, TableNav};
use super::{fmt, scroll};

/// A sort key of a table: the column it marks and the value rows are ordered by.
pub type SortKey<T> = (usize, fn(&T) -> f64);

pub fn block(title: impl Into<String>) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(title.into())
}

/// `lines` in a box titled `title`, from the top: when they do not all fit,
/// its bottom border says how many are left out.
pub fn lines(f: &mut Frame, area: Rect, title: impl Into<String>, lines: Vec<Line<'static>>) {
    lines_from(f, area, &title.into(), lines, 0, None);
}

/// `lines` in a box titled `title` from line `first` (no further than the
/// last line at the bottom), its border marking what is left out, with the
/// keys that scroll it when given.
fn lines_from(
    f: &mut Frame,
    area: Rect,
    title: &str,
    lines: Vec<Line<'static>>,
    first: usize,
    keys: Option<scroll::Keys>,
) {
    let room = area.height.saturating_sub(2) as usize;
    let w = scroll::Window::from(lines.len(), room, first);
    f.render_widget(
        Paragraph::new(lines)
            .scroll((w.first as u16, 0))
            .block(scroll::titled(
                title,
                area.width,
                &w,
                scroll::Noun::Lines,
                keys,
            )),
        area,
    );
}

/// Paragraphs of running text (a line break starts a new one), each in its
/// style, wrapped at spaces to `width` columns: the lines [`text`] draws.
pub fn wrap_text(paragraphs: &[(String, Style)], width: usize) -> Vec<Line<'static>> {
    paragraphs
        .iter()
        .flat_map(|(t, style)| {
            t.split('\n')
                .flat_map(|p| fmt::wrap(p, width))
                .map(move |l| Line::styled(l, *style))
        })
        .collect()
}

/// Paragraphs of running text (a line break starts a new one), each in its
/// style, wrapped at spaces to the box's width and drawn as [`lines`] (what
/// is cut is marked).
pub fn text(f: &mut Frame, area: Rect, title: impl Into<String>, paragraphs: &[(String, Style)]) {
    let width = area.width.saturating_sub(2) as usize;
    lines(f, area, title, wrap_text(paragraphs, width));
}

/// [`text`] from its line `first`, scrolled by the keys that scroll a
/// table without a selection (its markers name them).
pub fn text_from(
    f: &mut Frame,
    area: Rect,
    title: &str,
    paragraphs: &[(String, Style)],
    first: usize,
) {
    let width = area.width.saturating_sub(2) as usize;
    let lines = wrap_text(paragraphs, width);
    lines_from(f, area, title, lines, first, Some(SCROLL_KEYS));
}

/// Draw `not observable: why` in place of a section the trace cannot support.
pub fn not_observable(f: &mut Frame, area: Rect, title: &str, reason: &str) {
    text(
        f,
        area,
        title,
        &[
            (
                "not observable".to_string(),
                Style::default().fg(Color::Yellow),
            ),
            (reason.to_string(), Style::default()),
        ],
    );
}

/// The value of an observable, or draw why not and return None.
pub fn observed<'a, T>(
    f: &mut Frame,
    area: Rect,
    title: &str,
    o: &'a Observable<T>,
) -> Option<&'a T> {
    match o {
        Observable::Observed(v) => Some(v),
        Observable::NotObservable(why) => {
            not_observable(f, area, title, why);
            None
        }
    }
}

/// Order `items` by the numeric key of the nav's sort column (descending unless
/// the user reversed it), keep the selection inside the list.
pub fn sort_by<T>(items: &mut [&T], nav: &mut TableNav, keys: &[fn(&T) -> f64]) {
    if keys.is_empty() {
        return;
    }
    let k = keys[nav.sort % keys.len()];
    items.sort_by(|a, b| {
        let o = k(a).total_cmp(&k(b));
        if nav.ascending { o } else { o.reverse() }
    });
    nav.selected = nav.selected.min(items.len().saturating_sub(1));
    nav.last = Some(items.len().saturating_sub(1));
}

/// The header of a table, the sorted column marked with its arrow.
fn header_texts(header: &[&str], sorted_col: Option<usize>, ascending: bool) -> Vec<String> {
    header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if Some(i) == sorted_col {
                format!("{h}{}", if ascending { "▲" } else { "▼" })
            } else {
                h.to_string()
            }
        })
        .collect()
}

/// How a [`fit_table`] lays out its columns: the header, which column gives
/// way, and which go first when the terminal is too narrow.
pub struct Fit<'a> {
    pub header: &'a [&'a str],
    /// Per column, how much it matters: the lowest is left out first.
    pub keep: &'a [u8],
    /// The column of names: it takes what is left (at least `flex_min`
    /// cells, or its widest text), its text clipped with `…`.
    pub flex: usize,
    pub flex_min: usize,
    pub sorted_col: Option<usize>,
    pub ascending: bool,
}

impl Fit<'_> {
    /// The width of each column in a table of `width` cells (borders
    /// included), `None` for a column left out. Every other column is as wide
    /// as its widest text, header and sort arrow included, so that no value
    /// or unit is cut; the sorted column and the names are never left out.
    pub fn widths(&self, width: u16, rows: &[Vec<String>]) -> Vec<Option<usize>> {
        let head = header_texts(self.header, self.sorted_col, self.ascending);
        let n = head.len();
        let w: Vec<usize> = (0..n)
            .map(|i| {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.chars().count())
                    .chain([head[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let avail = width.saturating_sub(2) as usize;
        let mut shown = vec![true; n];
        let fixed = |shown: &[bool]| -> usize {
            let cols = shown.iter().filter(|&&s| s).count();
            (0..n)
                .filter(|&i| shown[i] && i != self.flex)
                .map(|i| w[i])
                .sum::<usize>()
                + cols.saturating_sub(1)
        };
        let flex_min = w.get(self.flex).copied().unwrap_or(0).min(self.flex_min);
        while fixed(&shown) + flex_min > avail {
            let Some(drop) = (0..n)
                .filter(|&i| shown[i] && i != self.flex && Some(i) != self.sorted_col)
                .min_by_key(|&i| (self.keep.get(i).copied().unwrap_or(0), std::cmp::Reverse(i)))
            else {
                break;
            };
            shown[drop] = false;
        }
        let flex_w = avail
            .saturating_sub(fixed(&shown))
            .min(w.get(self.flex).copied().unwrap_or(0));
        (0..n)
            .map(|i| shown[i].then_some(if i == self.flex { flex_w } else { w[i] }))
            .collect()
    }
}

/// A table laid out by `fit` (columns as wide as their text, the least
/// important left out when they do not all fit), the sorted column marked
/// and the selected row highlighted.
pub fn fit_table(
    f: &mut Frame,
    area: Rect,
    title: String,
    fit: &Fit,
    rows: Vec<Vec<String>>,
    selected: Option<usize>,
) {
    // Borders and the header.
    let room = area.height.saturating_sub(3) as usize;
    let n = rows.len();
    let w = match selected {
        Some(s) => scroll::Window::showing(n, room, s),
        None => scroll::Window::from(n, room, 0),
    };
    let block = scroll::marked(&title, area.width, &w, scroll::Noun::Rows);
    let selected = selected.filter(|_| n > 0).map(|s| s.min(n - 1));
    draw_table(f, area, block, fit, rows, w.first, selected);
}

/// The keys that scroll a table without a selection, as its markers name
/// them.
const SCROLL_KEYS: scroll::Keys = ("↑ PgUp", "↓ PgDn");

/// A table laid out as [`fit_table`] with no row selected, scrolled from
/// `pos.first` (the keys that move a selection elsewhere scroll it: its
/// markers name them), no further than its last row at the bottom; `pos`
/// keeps what this frame had room for.
pub fn scroll_table(
    f: &mut Frame,
    area: Rect,
    title: String,
    fit: &Fit,
    rows: Vec<Vec<String>>,
    pos: &mut Scroll,
) {
    let room = area.height.saturating_sub(3) as usize;
    let w = scroll::Window::from(rows.len(), room, pos.first);
    *pos = Scroll {
        first: w.first,
        last: rows.len().saturating_sub(room),
        room,
    };
    let block = scroll::titled(
        &title,
        area.width,
        &w,
        scroll::Noun::Rows,
        Some(SCROLL_KEYS),
    );
    draw_table(f, area, block, fit, rows, w.first, None);
}

/// The table of [`fit_table`] and [`scroll_table`] in `block`, from row
/// `first`, `selected` highlighted.
fn draw_table(
    f: &mut Frame,
    area: Rect,
    block: Block<'static>,
    fit: &Fit,
    rows: Vec<Vec<String>>,
    first: usize,
    selected: Option<usize>,
) {
    let widths = fit.widths(area.width, &rows);
    let keep = |cells: Vec<String>| -> Vec<String> {
        cells
            .into_iter()
            .enumerate()
            .filter_map(|(i, c)| match widths.get(i).copied().flatten() {
                Some(w) if i == fit.flex => Some(fmt::clip(&c, w)),
                Some(_) => Some(c),
                None => None,
            })
            .collect()
    };
    let head = keep(header_texts(fit.header, fit.sorted_col, fit.ascending));
    let constraints: Vec<Constraint> = widths
        .iter()
        .flatten()
        .map(|&w| Constraint::Length(w as u16))
        .collect();
    let mut state = TableState::default()
        .with_offset(first)
        .with_selected(selected);
    let t = Table::new(rows.into_iter().map(|r| Row::new(keep(r))), constraints)
        .header(Row::new(head).style(Style::default().add_modifier(Modifier::BOLD)))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .column_spacing(1)
        .flex(Flex::Start)
        .block(block);
    f.render_stateful_widget(t, area, &mut state);
}

/// A location label, or `?`.
pub fn loc(l: &hyscope_analyzer::CodeLocation) -> String {
    if l.label.is_empty() {
        format!("{:#x}", l.address)
    } else {
        l.label.clone()
    }
}

/// A block with the analysis' loading status when it is not ready yet.
pub fn not_ready(f: &mut Frame, area: Rect, app: &App, title: &str) {
    text(
        f,
        area,
        title,
        &[(app.data.analysis_status(), Style::default())],
    );
}

/// The sub-views of a tab, the current one highlighted (← → switch).
pub fn view_bar(f: &mut Frame, area: Rect, views: &[&str], view: usize) {
    let mut spans = Vec::new();
    for (i, v) in views.iter().enumerate() {
        let st = if i == view {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default().fg(Color::Gray)
        };
        spans.push(Span::styled(format!(" {v} "), st));
        spans.push(Span::raw(" "));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

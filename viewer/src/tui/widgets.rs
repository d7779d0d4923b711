//! Small drawing helpers shared by the tabs.

use hyscope_analyzer::Observable;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState, Wrap};

use super::app::{App, TableNav};

/// A sort key of a table: the column it marks and the value rows are ordered by.
pub type SortKey<T> = (usize, fn(&T) -> f64);

pub fn block(title: impl Into<String>) -> Block<'static> {
    Block::default().borders(Borders::ALL).title(title.into())
}

/// Draw `not observable: why` in place of a section the trace cannot support.
pub fn not_observable(f: &mut Frame, area: Rect, title: &str, reason: &str) {
    f.render_widget(
        Paragraph::new(vec![
            Line::styled("not observable", Style::default().fg(Color::Yellow)),
            Line::from(reason.to_string()),
        ])
        .wrap(Wrap { trim: true })
        .block(block(title)),
        area,
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
}

/// A table with a header whose sorted column is marked, the selected row highlighted.
#[allow(clippy::too_many_arguments)]
pub fn table(
    f: &mut Frame,
    area: Rect,
    title: String,
    header: &[&str],
    sorted_col: Option<usize>,
    ascending: bool,
    widths: &[Constraint],
    rows: Vec<Vec<String>>,
    selected: Option<usize>,
) {
    let head: Vec<String> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if Some(i) == sorted_col {
                format!("{h}{}", if ascending { "▲" } else { "▼" })
            } else {
                h.to_string()
            }
        })
        .collect();
    let n = rows.len();
    let t = Table::new(rows.into_iter().map(Row::new), widths.to_vec())
        .header(Row::new(head).style(Style::default().add_modifier(Modifier::BOLD)))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .column_spacing(1)
        .block(block(title));
    let mut state = TableState::default();
    if n > 0 {
        state.select(selected.map(|s| s.min(n - 1)));
    }
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
    f.render_widget(
        Paragraph::new(app.data.analysis_status())
            .wrap(Wrap { trim: true })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(title.to_string()),
            ),
        area,
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

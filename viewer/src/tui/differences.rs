//! Differences tab (`hyscope tui A B`): the comparison `hyscope report A B`
//! prints (`hyscope_analyzer::compare`). Why the runs may not compare as
//! they stand first, with which run is which; then the rows, every cell
//! written by the report's own functions (`report::compare::cells`, under
//! its `COLUMNS`), scrolled by the usual keys; then what only one run has.

use hyscope_analyzer::model::Comparison;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};

use super::app::{App, Scroll, Tab};
use super::widgets;
use crate::report::compare as report;

/// The rows the table keeps at least (or all of them, if fewer): the boxes
/// above and below it give way first.
const TABLE_MIN_ROWS: usize = 4;

/// How much a column matters: on a narrow terminal the lowest is left out
/// first. The item (the names, clipped) and its difference stay; a column
/// the comparison gains comes with the least.
fn keep(column: &str) -> u8 {
    match column {
        "item" | "B − A" => 9,
        "metric" => 8,
        "A" | "B" => 7,
        "B / A" => 6,
        _ => 5,
    }
}

/// The lines above the table: the caveats and what either trace lost (in
/// the warning's colour), which run is A and which B, and the phase both
/// are restricted to.
fn above(c: &Comparison, phase: Option<&str>) -> Vec<(String, Style)> {
    let warn = Style::default().fg(Color::Yellow);
    let mut out: Vec<(String, Style)> =
        c.caveats.iter().map(|w| (format!("! {w}"), warn)).collect();
    for (name, s) in [("A", &c.side_a), ("B", &c.side_b)] {
        if !s.integrity.problems.is_empty() {
            out.push((format!("{name}: {}", s.integrity.title()), warn));
            out.extend(
                s.integrity
                    .problems
                    .iter()
                    .map(|p| (format!("  ! {p}"), warn)),
            );
        }
    }
    for (name, s) in [("A", &c.side_a), ("B", &c.side_b)] {
        out.push((
            format!("{name} = {}", report::describe(s)),
            Style::default(),
        ));
    }
    if let Some(p) = phase {
        out.push((
            format!("both runs restricted to phase {p}"),
            Style::default(),
        ));
    }
    out
}

/// The lines below the table: what only one run has, then what the
/// table's sums mean.
fn below(c: &Comparison) -> Vec<(String, Style)> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    for (name, items) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !items.is_empty() {
            out.push((format!("Only in {name}: {}", report::listed(items)), bold));
        }
    }
    let gray = Style::default().fg(Color::Gray);
    out.push((report::noise_summary(c), gray));
    out.extend(report::notes(c).iter().map(|n| (n.to_string(), gray)));
    out.extend(report::unestimated(c).into_iter().map(|n| (n, gray)));
    out
}

/// The heights of the three boxes in `height` rows: each as tall as its
/// lines, but the table keeps [`TABLE_MIN_ROWS`] rows (its header and
/// borders besides); the box below gives way first, down to a quarter of
/// the height, then the box above, down to its borders (its title and what
/// it leaves out, scrolled off). What is left stays empty, below.
fn heights(height: u16, top: usize, rows: usize, bottom: usize) -> [u16; 3] {
    let h = height as usize;
    let table_min = 3 + rows.min(TABLE_MIN_ROWS);
    let bottom = (bottom + 2)
        .min((h / 4).max(3))
        .min(h.saturating_sub(table_min + 2));
    let top = (top + 2)
        .min(h.saturating_sub(table_min + bottom))
        .max(2.min(h));
    let table = h.saturating_sub(top + bottom).min(rows + 3);
    [top as u16, table as u16, bottom as u16]
}

/// The tab. One scroll runs over the lines above the table, then its rows:
/// the caveats scroll away (their box keeps its title and says how many
/// lines it left out) before the rows do.
pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(c) = app.data.comparison() else {
        let status = app.data.comparison_status();
        return widgets::text(f, area, "Differences", &[(status, Style::default())]);
    };
    let width = area.width.saturating_sub(2) as usize;
    let top = above(c, app.data.phase.as_deref());
    let top_lines = widgets::wrap_text(&top, width).len();
    let bottom = below(c);
    let all: Vec<_> = c.rows.iter().filter(|r| report::shown(r)).collect();
    let rows: Vec<Vec<String>> = all
        .iter()
        .filter(|r| app.matches(&r.label()))
        .map(|r| report::cells(r))
        .collect();
    let pos = app.nav[Tab::Differences.index()].scroll;
    let top_first = pos.first.min(top_lines);
    let [h_top, h_table, h_bottom] = heights(
        area.height,
        top_lines - top_first,
        rows.len(),
        widgets::wrap_text(&bottom, width).len(),
    );
    let [a_top, a_table, a_bottom] = Layout::vertical([
        Constraint::Length(h_top),
        Constraint::Length(h_table),
        Constraint::Length(h_bottom),
    ])
    .areas(area);
    let title = if c.caveats.is_empty() {
        "Runs compared"
    } else {
        report::NOT_COMPARABLE
    };
    widgets::text_from(f, a_top, title, &top, top_first);
    // The report's heading: per rank where the rank counts differ.
    let title = if rows.len() < all.len() {
        format!(
            "{}: {} of {} rows",
            report::heading(c),
            rows.len(),
            all.len()
        )
    } else {
        format!("{}: {} rows", report::heading(c), rows.len())
    };
    let keep: Vec<u8> = report::COLUMNS.iter().map(|c| keep(c)).collect();
    let fit = widgets::Fit {
        header: &report::COLUMNS,
        keep: &keep,
        flex: 0,
        flex_min: 12,
        sorted_col: None,
        ascending: false,
    };
    let only = c.only_in_a.is_empty() && c.only_in_b.is_empty();
    let mut table = Scroll {
        first: pos.first - top_first,
        ..Scroll::default()
    };
    widgets::scroll_table(f, a_table, title, &fit, rows, &mut table);
    let title = if only { "Notes" } else { "Only in one run" };
    widgets::text(f, a_bottom, title, &bottom);
    app.nav[Tab::Differences.index()].scroll = Scroll {
        first: top_first + table.first,
        last: top_lines + table.last,
        room: table.room,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table keeps its rows; the boxes around it are as tall as their
    /// lines where there is room, the one below giving way first.
    #[test]
    fn the_table_keeps_its_rows() {
        // Room for all, and to spare.
        assert_eq!(heights(40, 3, 10, 4), [5, 13, 6]);
        // 80×24: a body of 22 rows, many caveats.
        let [t, m, b] = heights(22, 12, 30, 6);
        assert!(m as usize >= 3 + TABLE_MIN_ROWS, "{t} {m} {b}");
        assert_eq!(t + m + b, 22);
        assert_eq!(b, 5);
        let [_, m, _] = heights(22, 12, 2, 6);
        assert_eq!(m, 5, "a table of 2 rows");
        // The caveats scrolled away: their box keeps its borders.
        assert_eq!(heights(22, 0, 30, 6), [2, 15, 5]);
        // Tiny: nothing overflows.
        let [t, m, b] = heights(5, 10, 30, 10);
        assert!(t + m + b <= 5, "{t} {m} {b}");
    }
}

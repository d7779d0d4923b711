//! The frame: tab bar, the current tab, the footer with its keys, the filter
//! line and the help overlay.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Tabs};

use super::app::{App, HELP, Scroll, Tab, footer_keys};
use super::{differences, energy, fmt, loops, memory, mpi, openmp, scroll, summary, timeline};

pub fn draw(f: &mut Frame, app: &mut App) {
    let [tabs, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(f.area());

    let titles: Vec<Line> = app
        .tabs()
        .iter()
        .enumerate()
        .map(|(i, t)| Line::from(format!("{} {}", i + 1, t.title())))
        .collect();
    f.render_widget(
        Tabs::new(titles)
            .select(app.tab.index())
            .highlight_style(Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD))
            .divider("│")
            .padding("", ""),
        tabs,
    );

    let body = match partial_line(app, body.width as usize) {
        Some(line) => {
            let [banner, rest] =
                Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
            f.render_widget(
                Paragraph::new(Line::styled(line, Style::default().fg(Color::Red))),
                banner,
            );
            rest
        }
        None => body,
    };
    match app.tab {
        Tab::Summary => summary::draw(f, body, app),
        Tab::Timeline => {
            app.last_timeline_area = body;
            timeline::draw(f, body, &mut app.timeline, &app.data, &app.filter)
        }
        Tab::OpenMp => openmp::draw(f, body, app),
        Tab::Loops => loops::draw(f, body, app),
        Tab::Mpi => mpi::draw(f, body, app),
        Tab::Memory => memory::draw(f, body, app),
        Tab::Energy => energy::draw(f, body, app),
        Tab::Differences => differences::draw(f, body, app),
    }

    let foot = if app.filter_editing {
        Line::from(vec![
            Span::styled("/", Style::default().fg(Color::Yellow)),
            Span::raw(app.filter.clone()),
            Span::styled("▏", Style::default().fg(Color::Yellow)),
            Span::styled("  Enter apply  Esc clear", Style::default().fg(Color::Gray)),
        ])
    } else {
        let mut spans = Vec::new();
        if let Some(p) = &app.data.phase {
            spans.push(Span::styled(
                format!("phase: {p}  "),
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            ));
        }
        if !app.filter.is_empty() {
            spans.push(Span::styled(
                format!("filter: {}  ", app.filter),
                Style::default().fg(Color::Yellow),
            ));
        }
        spans.push(Span::styled(
            footer_keys(app.tab, app.tabs().len()),
            Style::default().fg(Color::Gray),
        ));
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(foot), footer);

    if app.help {
        help(f, f.area(), &mut app.help_scroll);
    }
}

/// Width of the help's key column.
const HELP_KEYS_W: usize = 22;
/// The narrowest explanation column of the help in two columns: narrower,
/// each key goes on its own line with its explanation below it.
const HELP_TEXT_MIN_W: usize = 16;
/// The keys that scroll the help, up and down, as its markers name them.
const HELP_KEYS: scroll::Keys = ("↑ PgUp", "↓ PgDn");

/// The help's lines in `width` columns: each key beside its explanation,
/// wrapped to the room left, or on a narrow terminal each key on its own
/// line with its explanation wrapped below it, indented.
fn help_lines(width: usize) -> Vec<Line<'static>> {
    let key_style = Style::default().add_modifier(Modifier::BOLD);
    let mut out = Vec::new();
    let text_w = width.saturating_sub(HELP_KEYS_W + 1);
    for (k, v) in HELP {
        if text_w >= HELP_TEXT_MIN_W {
            for (i, l) in fmt::wrap(v, text_w).into_iter().enumerate() {
                let key = if i == 0 { *k } else { "" };
                out.push(Line::from(vec![
                    Span::styled(format!("{key:HELP_KEYS_W$} "), key_style),
                    Span::raw(l),
                ]));
            }
        } else {
            for l in fmt::wrap(k, width) {
                out.push(Line::styled(l, key_style));
            }
            for l in fmt::wrap(v, width.saturating_sub(2)) {
                out.push(Line::from(format!("  {l}")));
            }
        }
    }
    out
}

/// The keys, in a box as wide as its longest line allows (up to the
/// terminal's width) and as tall as its lines (up to the terminal's height):
/// a help taller than that scrolls, its title and markers say with which keys.
fn help(f: &mut Frame, area: Rect, pos: &mut Scroll) {
    // The borders, the key column and the space after it.
    let longest = HELP
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0);
    let w = (HELP_KEYS_W + 3 + longest).min(area.width as usize) as u16;
    let lines = help_lines(w.saturating_sub(2) as usize);
    let h = (lines.len() + 2).min(area.height as usize) as u16;
    let room = h.saturating_sub(2) as usize;
    let window = scroll::Window::from(lines.len(), room, pos.first);
    *pos = Scroll {
        first: window.first,
        last: lines.len().saturating_sub(room),
        room,
    };
    let titles: &[&str] = if pos.last > 0 {
        &[
            "Keys — ↑↓ PgUp PgDn Home End scroll, any other key closes",
            "Keys — ↑↓ PgUp PgDn scroll, other keys close",
            "Keys — ↑↓ scroll, other keys close",
            "Keys ↑↓ scroll",
            "Keys ↑↓",
        ]
    } else {
        &["Keys — any key closes", "Keys"]
    };
    // The longest title that fits between the corners, and the marker of
    // the lines above when scrolled.
    let room =
        (w.saturating_sub(2) as usize).saturating_sub(if window.above() > 0 { 10 } else { 0 });
    let title = titles
        .iter()
        .find(|t| t.chars().count() <= room)
        .unwrap_or(&titles[titles.len() - 1]);
    let [r] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(r);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .scroll((window.first as u16, 0))
            .block(scroll::titled(
                title,
                w,
                &window,
                scroll::Noun::Lines,
                Some(HELP_KEYS),
            )),
        r,
    );
}

/// One frame of `w`×`h` drawn off-screen (ratatui's `TestBackend`), as text,
/// one line per row: what the tests read. The interval under the cursor
/// arrives from a worker thread, so the frame is drawn again once it is there.
pub fn render_text(app: &mut App, w: u16, h: u16) -> String {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let Ok(mut term) = Terminal::new(TestBackend::new(w, h));
    let _ = term.draw(|f| draw(f, app));
    if app.timeline.detail.wait() {
        let _ = term.draw(|f| draw(f, app));
    }
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Every tab but the Summary (which lists the problems in full under the
/// PARTIAL TRACE title) starts with one line saying the trace is partial and
/// what it lost first, as the GUI's bar does above every view: no tab's
/// numbers are read as the whole run's.
fn partial_line(app: &App, width: usize) -> Option<String> {
    if app.tab == Tab::Summary {
        return None;
    }
    let integrity = &app.data.analysis()?.integrity;
    let mut lost = integrity.problems.iter().filter(|p| p.data_lost);
    let first = lost.next()?;
    // The count and where to read the rest first: a long problem is clipped.
    let rest = match lost.count() {
        0 => "the Summary tab lists it".to_string(),
        n => format!("the Summary tab lists all {}", n + 1),
    };
    fmt::clip(&format!("PARTIAL TRACE ({rest}): {first}"), width).into()
}

//! The frame: tab bar, the current tab, the footer with its keys, the filter
//! line and the help overlay.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, Tabs};

use super::app::{App, HELP, Tab, footer_keys};
use super::{energy, fmt, loops, memory, mpi, openmp, summary, timeline};

pub fn draw(f: &mut Frame, app: &mut App) {
    let [tabs, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(f.area());

    let titles: Vec<Line> = Tab::ALL
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
            footer_keys(app.tab),
            Style::default().fg(Color::Gray),
        ));
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(foot), footer);

    if app.help {
        help(f, f.area());
    }
}

/// Width of the help's key column.
const HELP_KEYS_W: u16 = 22;

/// The keys, in a box as wide as its longest line allows (up to the
/// terminal's width), each explanation wrapped to the room left.
fn help(f: &mut Frame, area: Rect) {
    // Borders, the key column and the space between the columns.
    let chrome = HELP_KEYS_W + 3;
    let longest = HELP
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0);
    let w = (chrome as usize + longest).min(area.width as usize) as u16;
    let text_w = w.saturating_sub(chrome).max(1) as usize;
    let rows: Vec<Row> = HELP
        .iter()
        .map(|(k, v)| {
            let lines = fmt::wrap(v, text_w);
            let height = lines.len().max(1) as u16;
            Row::new(vec![k.to_string(), lines.join("\n")]).height(height)
        })
        .collect();
    let needed: u16 = HELP
        .iter()
        .map(|(_, v)| fmt::wrap(v, text_w).len().max(1) as u16)
        .sum();
    let h = (needed + 2).min(area.height);
    let [r] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(area);
    let [r] = Layout::vertical([Constraint::Length(h)])
        .flex(Flex::Center)
        .areas(r);
    f.render_widget(Clear, r);
    f.render_widget(
        Table::new(rows, [Constraint::Length(HELP_KEYS_W), Constraint::Min(1)]).block(
            Block::default()
                .borders(Borders::ALL)
                .title("Keys — any key closes"),
        ),
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

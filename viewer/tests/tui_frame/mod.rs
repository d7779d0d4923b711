//! One frame of the TUI drawn on ratatui's `TestBackend`, as text: shared by
//! the TUI tests.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use hyscope_viewer::tui;

/// Draw one frame of `w`×`h` and return it as text, one line per row.
pub fn render(app: &mut tui::app::App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| tui::draw::draw(f, app)).unwrap();
    // The interval under the cursor arrives from a worker thread: redraw with it.
    if app.timeline.detail.wait() {
        term.draw(|f| tui::draw::draw(f, app)).unwrap();
    }
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

//! One frame of the TUI drawn on ratatui's `TestBackend`, as text: shared by
//! the TUI tests.

use hyscope_viewer::tui;

/// Draw one frame of `w`×`h` and return it as text, one line per row.
pub fn render(app: &mut tui::app::App, w: u16, h: u16) -> String {
    tui::draw::render_text(app, w, h)
}

//! Render tests of every TUI tab with ratatui's `TestBackend` on a small
//! synthetic trace with known numbers (see `tui_common.rs`).

#![allow(dead_code)]

#[path = "tui_common.rs"]
mod common;
#[path = "../src/tui.rs"]
mod tui;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use tui::app::{App, Tab};

fn app(name: &str) -> App {
    let dir = common::write_trace(name);
    App::new(tui::data::Data::open_blocking(&dir).expect("open trace"))
}

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

/// Draw one frame of `w`×`h` and return it as text, one line per row.
fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| tui::draw::draw(f, app)).unwrap();
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

#[test]
fn summary_tab() {
    let mut a = app("summary");
    assert!(a.data.analysis().is_some(), "{}", a.data.analysis_status());
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("1 Summary"));
    assert!(s.contains("./hybrid --small"));
    assert!(s.contains("ranks 2  threads/rank 2  nodes 1  duration 10.00 ms"));
    assert!(s.contains("openmpi Open MPI v4.1.4 (thread level funneled)"));
    assert!(s.contains("rapl (perf power PMU: energy-psys reads 0)"));
    assert!(s.contains("POP efficiency"));
    assert!(s.contains("Findings"));
}

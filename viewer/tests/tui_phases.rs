//! The TUI timeline's phase row: above each rank that has phases, the
//! rank's innermost phase spelt along the cells it covers.

#![allow(dead_code)]

mod tui_common;
mod tui_frame;

use hyscope_viewer::tui;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hyscope_format::{PartWriter, PhaseRecord, Table, WriterOptions};
use tui::app::{App, Tab};
use tui_frame::render;

fn phase(name: &str, start_ns: i64, end_ns: i64, depth: u32) -> PhaseRecord {
    PhaseRecord::api(0, name, start_ns, end_ns, depth)
}

#[test]
fn a_phase_row_above_each_rank_with_phases() {
    let dir = tui_common::write_trace("phases-row");
    // Rank 0 only (the synthetic trace's 10 ms): "solver" from 1 ms to 9 ms,
    // with "halo" nested in its first half.
    let mut w = PartWriter::create(&dir, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        phase("solver", 1_000_000, 9_000_000, 0),
        phase("halo", 1_000_000, 5_000_000, 1),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let lines: Vec<&str> = s.lines().collect();
    let at = |needle: &str| lines.iter().position(|l| l.contains(needle));
    let row = at("phases").expect("a phase row");
    assert!(lines[row + 1].contains("rank 0"), "{s}");
    // One phase row only: rank 1 has no phases.
    assert_eq!(lines.iter().filter(|l| l.contains("phases")).count(), 1);
    // The innermost phase is spelt where it starts, then its parent.
    let text = lines[row];
    let halo = text.find("halo─").expect("halo spelt");
    let solver = text.find("solver─").expect("solver spelt");
    assert!(halo < solver, "{text}");

    // A click selects the row drawn there: the phase row belongs to no row,
    // rank 0's row is below it and rank 1's below that.
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let area = a.last_timeline_area;
    let click = |a: &mut App, line: u16| {
        a.on_mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: area.x + 20,
            row: area.y + 2 + line,
            modifiers: KeyModifiers::NONE,
        })
    };
    click(&mut a, 2);
    assert_eq!(a.timeline.row, 1);
    click(&mut a, 0);
    assert_eq!(a.timeline.row, 1);
    click(&mut a, 1);
    assert_eq!(a.timeline.row, 0);
}

//! The TUI timeline's phase row: above each rank that has phases, the
//! rank's innermost phase spelt along the cells it covers.

#![allow(dead_code)]

use crate::tui_common;
use crate::tui_frame;

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

/// `p` restricts every tab to a phase (and the whole run after the last),
/// `f` on the timeline zooms to the chosen phase's intervals.
#[test]
fn p_restricts_the_tabs_to_a_phase_and_f_zooms_to_it() {
    use tui_common::MS;
    let dir = tui_common::write_trace_with_energy("phases-focus");
    // Rank 0: "first half" over the first 5 ms (the RAPL samples at 0 and
    // 5 ms: 0.5 J of the run's 1 J), "halo" from 6 to 8 ms.
    let mut w = PartWriter::create(&dir, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        phase("first half", 0, 5 * MS, 0),
        phase("halo", 6 * MS, 8 * MS, 0),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let key = |a: &mut App, c: char| {
        a.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        a.data.analysis.wait();
        a.data.poll();
    };
    assert_eq!(a.data.phase_names, ["first half", "halo"]);
    let whole = a
        .data
        .analysis()
        .unwrap()
        .energy
        .get()
        .unwrap()
        .total_joules;
    assert!((whole - 1.0).abs() < 1e-9, "{whole}");

    key(&mut a, 'p');
    assert_eq!(a.data.phase.as_deref(), Some("first half"));
    let an = a.data.analysis().expect("restricted analysis");
    let focus = an.focus.as_ref().expect("focus");
    assert_eq!((focus.phase.as_str(), focus.instances), ("first half", 1));
    assert!((focus.time_s - 0.005).abs() < 1e-12, "{focus:?}");
    let joules = an.energy.get().unwrap().total_joules;
    assert!((joules - 0.5).abs() < 1e-9, "{joules}");
    assert!(an.run.duration_s <= 0.005 + 1e-12, "{}", an.run.duration_s);
    let s = render(&mut a, 120, 30);
    assert!(s.contains("phase: first half"), "{s}");

    key(&mut a, 'p');
    assert_eq!(a.data.phase.as_deref(), Some("halo"));
    let focus = a.data.analysis().unwrap().focus.clone().unwrap();
    assert!((focus.time_s - 0.002).abs() < 1e-12, "{focus:?}");
    // The timeline zooms to halo's interval (a twentieth of margin).
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    render(&mut a, 120, 30);
    a.on_key(KeyEvent::new(KeyCode::Char('f'), KeyModifiers::NONE));
    assert_eq!(
        (a.timeline.t0, a.timeline.t1),
        (6 * MS - 100_000, 8 * MS + 100_000)
    );

    // After the last phase: the whole run again; P goes backwards.
    key(&mut a, 'p');
    assert_eq!(a.data.phase, None);
    assert!(a.data.analysis().unwrap().focus.is_none());
    let s = render(&mut a, 120, 30);
    assert!(!s.contains("phase: "), "{s}");
    key(&mut a, 'P');
    assert_eq!(a.data.phase.as_deref(), Some("halo"));
}

/// A damaged phases part (rank 0's, truncated): rank 1's phase row stays,
/// rank 0 goes without one and the timeline names the file; `p` still
/// offers rank 1's phases.
#[test]
fn a_damaged_phases_part_leaves_out_its_rank_only_and_names_the_file() {
    use tui_common::MS;
    let dir = tui_common::write_trace("phases-damaged");
    for rank in 0..2 {
        let mut w =
            PartWriter::create(&dir, Table::Phases, rank, WriterOptions::default()).unwrap();
        w.write_records(&[phase("solver", MS, 9 * MS, 0)]).unwrap();
        w.finish().unwrap();
    }
    hyscope_testkit::truncate_to_half(&dir.join("phases/rank=0/part-0.parquet"));
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    assert_eq!(a.data.phase_names, ["solver"]);
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let lines: Vec<&str> = s.lines().collect();
    let rows: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("│  phases"))
        .collect();
    assert_eq!(rows.len(), 1, "{s}");
    assert!(lines[rows[0] + 1].contains("rank 1"), "{s}");
    assert!(lines[rows[0]].contains("solver─"), "{s}");
    let flat: String = lines.concat();
    assert!(flat.contains("phases of rank 0 not shown: "), "{s}");
    let note_from = flat.find("phases of rank 0 not shown: ").unwrap();
    assert!(
        flat[note_from..].contains("phases/rank=0/part-0.parquet"),
        "{s}"
    );
}

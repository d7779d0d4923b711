//! The TUI on a damaged trace: a part that cannot be read is named where its
//! data would be, never shown as a partial picture that looks whole or as a
//! load that is still going on.

#![allow(dead_code)]

use crate::tui_common;
use crate::tui_frame;

use hyscope_viewer::tui;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui::app::{App, Tab};
use tui_frame::render;

/// Cut the file at `path` to `len` bytes (a truncated copy, a full disk).
fn truncate(path: &std::path::Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// The index cannot be built (rank 1's OpenMP part is truncated): the
/// Timeline tab says so and names the file, as the Summary tab and the GUI
/// do, instead of rank 0's coarse overview with "detail loading…" forever.
#[test]
fn a_timeline_that_cannot_be_built_names_the_damaged_file() {
    let dir = tui_common::write_trace("damaged-omp");
    let part = dir.join("omp/rank=1/part-0.parquet");
    let len = std::fs::metadata(&part).unwrap().len();
    truncate(&part, len / 2);
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    assert!(a.data.timeline().is_none(), "the index was built");
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 120, 30);
    println!("{s}");
    let flat: String = s.lines().collect::<Vec<_>>().join("");
    let flat: String = flat.chars().filter(|c| !"│ ".contains(*c)).collect();
    assert!(flat.contains("timelineunavailable:"), "{s}");
    assert!(flat.contains("omp/rank=1/part-0.parquet"), "{s}");
    assert!(!s.contains("loading"), "{s}");
    assert!(!s.contains("▸rank 0"), "a partial overview is drawn:\n{s}");
}

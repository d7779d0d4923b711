//! The TUI on a damaged trace: a part that cannot be read is named where its
//! data would be, never shown as a partial picture that looks whole or as a
//! load that is still going on. A rank with a damaged part is left out of
//! the timeline as the analysis leaves it out, its line marked.

#![allow(dead_code)]

use crate::tui_common;
use crate::tui_frame;

use hyscope_viewer::tui;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hyscope_analyzer::timeline::RankCells;
use tui::app::{App, Tab};
use tui_frame::render;

/// Cut the file at `path` to `len` bytes (a truncated copy, a full disk).
fn truncate(path: &std::path::Path, len: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
}

/// Rank 1's OpenMP part is truncated: rank 1 is left out of the timeline
/// as the analysis leaves it out (`hyscope_analyzer::damaged_parts`). Its
/// line says so with the file and problem, in place of cells, and the
/// details say it whole when it is selected; rank 0's line is drawn from the
/// index; the Summary keeps the PARTIAL TRACE banner and counts the events
/// of rank 0 only.
#[test]
fn a_rank_with_a_damaged_part_is_marked_left_out_and_the_others_drawn() {
    let dir = tui_common::write_trace("damaged-omp");
    let part = dir.join("omp/rank=1/part-0.parquet");
    let len = std::fs::metadata(&part).unwrap().len();
    truncate(&part, len / 2);
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let ix = a.data.timeline().expect("the index is built");
    let ranks: Vec<u32> = ix.rank_rows().iter().map(|r| r.rank).collect();
    assert_eq!(ranks, [0]);
    let analysis = a.data.analysis().expect("analysed");
    assert_eq!(ix.left_out(), &analysis.ranks_left_out[..]);
    let says = ix.left_out()[0].says();
    assert!(
        says.starts_with("rank 1 left out: omp/rank=1/part-0.parquet cannot be read (corrupt or truncated Parquet file"),
        "{says}"
    );
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 160, 30);
    println!("{s}");
    let line = |start: &str| {
        s.lines()
            .map(|l| l.trim_start_matches('│'))
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line `{start}` in\n{s}"))
            .to_string()
    };
    let marked = line("✗rank 1");
    assert!(
        marked.contains("rank 1 left out: omp/rank=1/part-0.parquet cannot be read (corrupt or truncated Parquet file"),
        "{marked}"
    );
    assert!(line("▸rank 0").contains('█'), "rank 0 has no cells:\n{s}");
    // Every tab but the Summary says on its first line that the trace is partial.
    assert!(
        s.lines().nth(1).is_some_and(|l| l.starts_with(
            "PARTIAL TRACE (the Summary tab lists it): rank 1, omp/rank=1/part-0.parquet"
        )),
        "{s}"
    );
    assert!(!s.contains("timeline unavailable"), "{s}");
    // Rank 1's line selected: the details say it whole.
    a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    let s = render(&mut a, 160, 30);
    let flat: String = s.lines().collect::<Vec<_>>().join(" ");
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&says), "{s}");
    // The Summary: the banner, and rank 0's events of the 2 ranks.
    a.on_key(KeyEvent::new(KeyCode::Char('1'), KeyModifiers::NONE));
    let s = render(&mut a, 160, 30);
    assert!(
        s.contains("PARTIAL TRACE: the numbers below leave out what is listed here"),
        "{s}"
    );
    let m = hyscope_format::Manifest::read(&dir).unwrap();
    let e = &m.ranks.iter().find(|r| r.rank == 0).unwrap().events;
    let want = format!(
        "events    {}  dropped 0 — 1 of 2 ranks, rank 1 left out",
        hyscope_viewer::units::count((e.omp + e.mpi + e.samples) as f64)
    );
    assert!(s.contains(&want), "no `{want}` in\n{s}");
}

/// Every rank's OpenMP part is truncated: no rank is left to draw, and the
/// Timeline tab names the first damaged file, as the Summary tab and the GUI
/// do, instead of a partial overview or "detail loading…" forever.
#[test]
fn a_timeline_without_any_readable_rank_names_the_damaged_file() {
    let dir = tui_common::write_trace("damaged-omp-all");
    for r in 0..2 {
        let part = dir.join(format!("omp/rank={r}/part-0.parquet"));
        let len = std::fs::metadata(&part).unwrap().len();
        truncate(&part, len / 2);
    }
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    assert!(a.data.timeline().is_none(), "the index was built");
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 120, 30);
    println!("{s}");
    let flat: String = s.lines().collect::<Vec<_>>().join("");
    let flat: String = flat.chars().filter(|c| !"│ ".contains(*c)).collect();
    assert!(flat.contains("timelineunavailable:"), "{s}");
    assert!(flat.contains("omp/rank=0/part-0.parquet"), "{s}");
    assert!(!s.contains("loading"), "{s}");
    assert!(!s.contains("▸rank"), "a partial overview is drawn:\n{s}");
}

/// More ranks than lines (64 ranks aggregated on 30 rows) and rank 5's
/// OpenMP part truncated: one line above the groups says which rank is left
/// out and why, and the groups hold the other 63 ranks.
#[test]
fn aggregated_lines_say_the_rank_left_out_above_them() {
    let dir = tui_common::write_trace_ranks("damaged-omp-64", 64);
    let part = dir.join("omp/rank=5/part-0.parquet");
    let len = std::fs::metadata(&part).unwrap().len();
    truncate(&part, len / 2);
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let ix = a.data.timeline().expect("the index is built");
    assert_eq!(ix.rank_rows().len(), 63);
    assert!(ix.rank_rows().iter().all(|r| r.rank != 5));
    a.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    let s = render(&mut a, 160, 30);
    println!("{s}");
    let marked = s
        .lines()
        .map(|l| l.trim_start_matches('│'))
        .find(|l| l.starts_with("✗left out"))
        .unwrap_or_else(|| panic!("no left-out line in\n{s}"));
    assert!(
        marked.contains("rank 5 left out: omp/rank=5/part-0.parquet cannot be read (corrupt or truncated Parquet file"),
        "{marked}"
    );
    assert!(s.contains("▸ranks 0–"), "no aggregated line:\n{s}");
}

//! The run summary's processes beyond the ranks: the lines `hyscope report`
//! prints under "Run" (`hyscope_analyzer::process_lines`), each whole,
//! wrapped at the panel's edge.

use std::path::Path;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use hyscope_analyzer::ProcessLine;
use hyscope_format::{
    ChildOf, Manifest, OmpKind, PartWriter, ProcessEnd, RankInfo, Table, WriterOptions,
};

use super::super::app::GuiApp;
use super::{SPAN, T, TempDir, omp, open};

/// Rank 0 (pid 10) forks pid 11 (id 2), then execs a program that records
/// as id 1: one rank, one child process, one exec'd program; each program
/// runs one implicit task.
fn write_trace(dir: &Path) {
    let mut m = Manifest::new();
    let long = "/opt/pipeline/bin/the-second-stage-of-a-long-pipeline";
    for (id, pid, end, child_of) in [
        (0, 10, ProcessEnd::Exec { path: long.into() }, None),
        (1, 10, ProcessEnd::Finished, Some((0, 9))),
        (2, 11, ProcessEnd::Finished, Some((0, 10))),
    ] {
        let start = T + i64::from(id) * SPAN;
        let mut w = PartWriter::create(dir, Table::Omp, id, WriterOptions::default()).unwrap();
        w.write_omp(&[omp(
            0,
            OmpKind::ImplicitTask,
            0,
            start,
            start + SPAN,
            0x401a00,
        )])
        .unwrap();
        w.finish().unwrap();
        m.ranks.push(RankInfo {
            rank: id,
            host: "node0".into(),
            pid,
            threads: 1,
            command: vec![long.into(), "--input".into(), "stage-one.out".into()],
            end: Some(end),
            child_of: child_of.map(|(rank, parent_pid)| ChildOf { rank, parent_pid }),
            ..RankInfo::default()
        });
    }
    m.write(dir).unwrap();
}

#[test]
fn the_summary_lists_the_reports_process_lines_whole() {
    let dir = TempDir::new("processes");
    write_trace(&dir.0);
    let mut app = GuiApp::new(open(&dir.0), None, true, false);
    app.wait_loaded();
    let a = app.slots[0]
        .analysis
        .ready()
        .cloned()
        .expect("analysis loaded");
    let lines = a.run.process_lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(3);
    // The count, as the report writes it: one row.
    let count = h.get_by_label("1 (+ 1 child process, 1 exec'd program)");
    let row = count.rect().height();
    for p in &lines {
        // Each line whole (not cut with "…" at the panel's edge): on
        // more than one row of the panel, inside it.
        let line = h.get_by_label(&p.text);
        let r = line.rect();
        assert!(
            r.height() > 1.5 * row,
            "{}: {r:?} (one row is {row})",
            p.text
        );
    }
    // Each under its label, as in the report.
    for label in [ProcessLine::CHILD, ProcessLine::EXEC] {
        let want = lines.iter().filter(|p| p.label == label).count();
        assert_eq!(h.get_all_by_label(label).count(), want, "{label}");
    }
}

//! The `phases` table (format 1.2): a journal written as the collector
//! writes it becomes a part that reads back row for row, both at the end of
//! a run and when `hyscope record` recovers a killed process's spool.

use crate::common;

use hyscope_format::spool::phases::{self as phase_journal, HEADER, PhaseRow};
use hyscope_format::{Layout, NO_ITERATION, PhaseRecord, ScanOptions, Table, Trace, phase_source};

fn journal_text() -> Vec<u8> {
    let rows: Vec<PhaseRow> = (0..5)
        .map(|i| PhaseRow {
            thread: 0,
            name: 1,
            start_ns: 1_000 + 100 * i,
            end_ns: 1_050 + 100 * i,
            depth: 1,
            source: phase_source::API,
            iteration: i,
        })
        .chain([PhaseRow {
            thread: 0,
            name: 0,
            start_ns: 900,
            end_ns: 2_000,
            depth: 0,
            source: phase_source::API,
            iteration: NO_ITERATION,
        }])
        .collect();
    let mut text = format!("{HEADER}\n").into_bytes();
    text.extend(phase_journal::encode(&[(0, "solver"), (1, "step")], &rows));
    // The process was killed while writing the next line.
    text.extend(b"P 0 1 2000 ");
    text
}

fn phases(trace: &Trace) -> Vec<PhaseRecord> {
    trace
        .read_records::<PhaseRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(rank, r)| {
            assert_eq!(rank, 3);
            r
        })
        .collect()
}

fn check(rows: &[PhaseRecord]) {
    assert_eq!(rows.len(), 6);
    // Sorted by thread and start: the enclosing phase first.
    assert_eq!(rows[0].name, "solver");
    assert_eq!(
        (rows[0].start_ns, rows[0].end_ns, rows[0].depth),
        (900, 2_000, 0)
    );
    assert_eq!(rows[0].iteration, NO_ITERATION);
    for (i, r) in rows[1..].iter().enumerate() {
        assert_eq!(r.name, "step");
        assert_eq!(r.iteration, i as i64);
        assert_eq!(r.start_ns, 1_000 + 100 * i as i64);
        assert_eq!(r.depth, 1);
    }
}

#[test]
fn a_journal_becomes_a_phases_part() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.txt");
    std::fs::write(&journal, journal_text()).unwrap();
    let read = phase_journal::journal_to_part(&journal, dir.path(), 3, Layout::Flat).unwrap();
    assert!(read.truncated);
    assert!(read.bad_lines.is_empty());
    common::write_manifest(dir.path(), [3].into_iter());
    let trace = Trace::open(dir.path()).unwrap();
    assert_eq!(trace.parts(Table::Phases).len(), 1);
    check(&phases(&trace));
}

#[test]
fn a_killed_process_journal_is_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    std::fs::create_dir_all(&spool).unwrap();
    std::fs::write(
        spool.join(phase_journal::journal_file_name(3, 4242)),
        journal_text(),
    )
    .unwrap();
    common::write_manifest(dir.path(), [3].into_iter());
    let left = hyscope_format::spool::to_parquet::leftover_processes(dir.path());
    assert_eq!(left.len(), 1);
    assert!(left[0].phases.is_some());
    let out = hyscope_format::spool::to_parquet::recover_process(dir.path(), &left[0], 1).unwrap();
    assert_eq!(out.phases, 6);
    assert!(out.truncated);
    assert!(!spool.exists() || std::fs::read_dir(&spool).unwrap().next().is_none());
    let trace = Trace::open(dir.path()).unwrap();
    check(&phases(&trace));
}

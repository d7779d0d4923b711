//! The memory limit (`AnalyzeOptions::memory`) changes how many ranks are
//! read at once, never the result: the same trace analysed with the default
//! limit and with a limit so small that every rank is read alone (the
//! row buffers released after each) gives the same JSON, floating-point sums
//! included.

use std::path::Path;

use hyscope_analyzer::{AnalyzeOptions, analyze};

use crate::synth;

/// The JSON of `dir`'s analysis with `memory` bytes, and whether it warned.
fn json(dir: &Path, memory: u64) -> (String, bool) {
    let a = analyze(
        dir,
        &AnalyzeOptions {
            memory,
            ..AnalyzeOptions::default()
        },
    )
    .unwrap();
    (
        serde_json::to_string_pretty(&a).unwrap(),
        a.memory_warning.is_some(),
    )
}

fn same_under_any_limit(dir: &Path) {
    let (whole, warned) = json(dir, hyscope_analyzer::DEFAULT_MEMORY);
    assert!(!warned, "a small trace fits the default limit");
    // 1 byte: one rank per batch, and the one warning that the limit was exceeded.
    let (tiny, warned) = json(dir, 1);
    assert!(warned);
    assert_eq!(whole, tiny);
    // A limit that fits a few ranks at once.
    let (some, _) = json(dir, 8 << 20);
    assert_eq!(whole, some);
}

#[test]
fn synthetic_trace_is_analysed_the_same_under_any_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 24 ranks × 4 threads, ~12,000 rows each: every section has data
    // (regions, loops with chunks, collectives, ring messages).
    synth::write_synth_trace(dir.path(), 24 * 12_000, 24, 4);
    let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
    assert_eq!(a.run.ranks, 24);
    assert!(a.messages.messages.len() > 24);
    assert!(!a.loops.get().unwrap().is_empty());
    same_under_any_limit(dir.path());
}

#[test]
fn recorded_trace_is_analysed_the_same_under_any_memory_limit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hybrid-2x2");
    same_under_any_limit(&dir);
}

#[test]
fn phase_focus_is_analysed_the_same_under_any_memory_limit() {
    // The synthetic trace with a phase on every rank's master thread over
    // its middle, the analysis cut to it (OpenMP rows restricted while read).
    let dir = tempfile::tempdir().unwrap();
    synth::write_synth_trace(dir.path(), 8 * 12_000, 8, 4);
    let whole = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
    for rank in 0..8u32 {
        let span = whole.run.rank_duration_s[rank as usize];
        let mut w = hyscope_format::PartWriter::create(
            dir.path(),
            hyscope_format::Table::Phases,
            rank,
            hyscope_format::WriterOptions::default(),
        )
        .unwrap();
        // The generator's clock starts 2 h after boot (rank × 1 µs later).
        let t0 = 7_200_000_000_000 + i64::from(rank) * 1_000;
        let ns = (span * 1e9) as i64;
        w.write_records(&[hyscope_format::PhaseRecord::api(
            0,
            PHASE,
            t0 + ns / 4,
            t0 + ns / 2,
            0,
        )])
        .unwrap();
        w.finish().unwrap();
    }
    let run = |memory| {
        let a = analyze(
            dir.path(),
            &AnalyzeOptions {
                memory,
                phase: Some(PHASE.to_string()),
                ..AnalyzeOptions::default()
            },
        )
        .unwrap();
        assert!(a.focus.is_some());
        serde_json::to_string_pretty(&a).unwrap()
    };
    assert_eq!(run(hyscope_analyzer::DEFAULT_MEMORY), run(1));
}

const PHASE: &str = "middle";

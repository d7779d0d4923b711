//! `hyscope_analyzer::run_extent`, what the exports read instead of the whole
//! analysis, states the analysis's run window and clipped worker
//! join-barrier ends exactly (window to the nanosecond, the clipped time to
//! the last bit): on a real recording (`tests/fixtures/hybrid-2x2`, where
//! libomp's late join-barrier ends are clipped) and on a synthetic trace of
//! many ranks, under the default memory limit and one that reads each rank
//! alone.

use std::path::Path;

use hyscope_analyzer::run_window::RunExtent;
use hyscope_analyzer::{AnalyzeOptions, DEFAULT_MEMORY, analyze};

use crate::synth;

/// The analysis's own statement of the run's extent.
fn analysed(dir: &Path) -> RunExtent {
    let a = analyze(dir, &AnalyzeOptions::default()).unwrap();
    RunExtent {
        window: a.run.window,
        clipped_join_waits: a.run.clipped_join_waits,
        clipped_join_wait_s: a.run.clipped_join_wait_s,
        ranks_left_out: a.ranks_left_out,
    }
}

fn same_as_the_analysis(dir: &Path) -> RunExtent {
    let want = analysed(dir);
    for memory in [DEFAULT_MEMORY, 1] {
        let got = hyscope_analyzer::run_extent(dir, memory).unwrap();
        assert_eq!(got.window, want.window, "memory {memory}");
        assert_eq!(got.clipped_join_waits, want.clipped_join_waits);
        assert_eq!(got.ranks_left_out, want.ranks_left_out, "memory {memory}");
        assert_eq!(
            got.clipped_join_wait_s.to_bits(),
            want.clipped_join_wait_s.to_bits(),
            "{} s against {} s",
            got.clipped_join_wait_s,
            want.clipped_join_wait_s
        );
    }
    want
}

#[test]
fn recorded_trace_has_the_analysis_window_and_clipped_ends() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hybrid-2x2");
    let x = same_as_the_analysis(&dir);
    assert!(!x.window.is_empty());
    assert!(x.clipped_join_waits > 0 && x.clipped_join_wait_s > 0.0);
}

#[test]
fn synthetic_ranks_have_the_analysis_window() {
    let dir = tempfile::tempdir().unwrap();
    synth::write_synth_trace(dir.path(), 12 * 8_000, 12, 4);
    let x = same_as_the_analysis(dir.path());
    assert!(x.window.duration_ns() > 0);
}

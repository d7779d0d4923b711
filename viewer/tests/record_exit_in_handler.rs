//! An `exit` (or an exec) in a signal handler that interrupted the
//! collector while it held one of its locks: the exit path takes the same
//! locks, so it waited for its own thread and the job hung until SIGKILL,
//! its trace lost. Now it spools as after a crash and the trace says so.
//! `tests/omp/exit_in_handoff.c` (its header says what it prints), with
//! `HYSCOPE_TEST_SIGNAL_IN_HANDOFF` raising SIGUSR1 while the collector
//! holds its queue's lock, every time.

use crate::record_support;
use hyscope_format::{OmpKind, ProcessEnd, Trace};
use record_support::*;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The run must end within this (it ends in well under a second; hung, it
/// waited forever).
const LIMIT: Duration = Duration::from_secs(30);

const WARNING: &str =
    "ran in a signal handler that interrupted the collector inside a lock; every event was spooled";

/// Record `exit_in_handoff MODE` with the signal raised in the hand-off;
/// the output and how long it took.
fn record(dir: &Path, mode: &str) -> (Output, Duration) {
    let exe = build_omp_test_program(dir, "exit_in_handoff");
    let mut cmd = record_into(&dir.join("trace"));
    cmd.arg(&exe)
        .arg(mode)
        .env("OMP_NUM_THREADS", "1")
        .env("HYSCOPE_TEST_SIGNAL_IN_HANDOFF", libc::SIGUSR1.to_string());
    let start = Instant::now();
    let out = hyscope_testkit::output_within(&mut cmd, LIMIT);
    (out, start.elapsed())
}

/// The regions the handler printed as ended.
fn printed_regions(out: &Output) -> usize {
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("regions "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `regions N` line: {stdout}\n{}", stderr(out)))
}

/// Every region the program printed is in the trace (the one ending when
/// the signal came may be too), the rank file says how the program ended
/// and keeps the one warning, given once on stderr.
fn check_trace(dir: &Path, out: &Output, end: fn(&ProcessEnd) -> bool, how: &str) {
    let regions = printed_regions(out);
    assert!(regions > 0, "the signal came before any region ended");
    let trace = Trace::open(&dir.join("trace")).unwrap();
    let kept = count_kind(&omp_rows(&trace), 0, OmpKind::Parallel);
    assert!(
        (regions..=regions + 1).contains(&kept),
        "printed {regions} regions, the trace has {kept}\n{}",
        stderr(out)
    );
    let rank = &trace.manifest.ranks[0];
    assert!(rank.end.as_ref().is_some_and(end), "{:?}", rank.end);
    let warned: Vec<&String> = rank
        .warnings
        .iter()
        .filter(|w| w.contains(WARNING))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", rank.warnings);
    assert!(warned[0].starts_with(how), "{}", warned[0]);
    let err = stderr(out);
    assert_eq!(err.matches(WARNING).count(), 1, "{err}");
}

/// `exit(5)` in the SIGUSR1 handler: status 5, within seconds, every region.
/// Without the exit path's check, `finish` waited for the queue's lock its
/// own thread held: the run hung until the time limit.
#[test]
fn an_exit_in_a_handler_that_interrupted_a_collector_lock_ends_and_keeps_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, took) = record(tmp.path(), "exit");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(took < Duration::from_secs(20), "took {took:?}");
    check_trace(
        tmp.path(),
        &out,
        |e| matches!(e, ProcessEnd::Finished),
        "exit()",
    );
}

/// An exec (`/bin/sh -c 'exit 6'`) in the same handler: the exec's end
/// path (`end_program`) takes the same locks. Status 6, every region, and
/// the rank file says it exec'd.
#[test]
fn an_exec_in_a_handler_that_interrupted_a_collector_lock_ends_and_keeps_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, took) = record(tmp.path(), "exec");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(took < Duration::from_secs(20), "took {took:?}");
    check_trace(
        tmp.path(),
        &out,
        |e| matches!(e, ProcessEnd::Exec { .. }),
        "an exec",
    );
}

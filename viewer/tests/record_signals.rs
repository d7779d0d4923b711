//! A signal sent to a recorded process goes where it would without hyscope:
//! the collector's own threads (writer, sampler, …) block every signal but
//! the faults, so the application's handler never runs on one of them
//! (`tests/omp/signal_thread.c`, whose header says what it prints).

use crate::record_support;
use hyscope_format::{OmpKind, Trace};
use hyscope_testkit::OutputWithin;
use record_support::*;

/// Every thread of the program's own blocks SIGUSR1 and it sends itself the
/// signal 50 times: none may be handled (it stays pending) until the main
/// thread unblocks it and takes the one left. With the collector's threads
/// open to it, every one was handled on `hyscope-sampler` or
/// `hyscope-writer`.
#[test]
fn a_blocked_process_signal_waits_for_the_applications_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "signal_thread");
    let trace = tmp.path().join("trace");
    let out = run_ok(
        record_into(&trace)
            .arg(&exe)
            .arg("50")
            .env("OMP_NUM_THREADS", "2"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("handled-by"), "{stdout}");
    assert!(stdout.contains("pending-to-main 1"), "{stdout}");
    assert!(stdout.contains("sum 2000"), "{stdout}");
    let rows = omp_rows(&Trace::open(&trace).unwrap());
    assert_eq!(count_kind(&rows, 0, OmpKind::Parallel), 2001);
}

/// A SIGTERM handler that calls `exit(7)`: the program's exit status is 7
/// and the trace has every region. When the handler ran on the collector's
/// sampler thread, its `exit` raced the main thread's return and the status
/// came out 0.
#[test]
fn an_exit_in_the_applications_handler_keeps_its_status_and_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "signal_thread");
    let trace = tmp.path().join("trace");
    let out = record_into(&trace)
        .arg(&exe)
        .args(["5", "exit-in-handler"])
        .env("OMP_NUM_THREADS", "2")
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("regions 2000"));
    let rows = omp_rows(&Trace::open(&trace).unwrap());
    assert_eq!(count_kind(&rows, 0, OmpKind::Parallel), 2001);
}

//! Completion calls with count 0 and null arrays (MPICH's test suite,
//! `pt2pt/waittestnull`, passes them): the collector forwards them and the
//! program gets MPI's answers, exit status 0 and no collector message. The
//! wrappers' code is the same for both MPI flavours; the test's debug build
//! checks the slice preconditions that a null array used to violate.
use crate::mpi_common;
use mpi_common::*;

const EXPECTED: &str = "Testall rc 0 flag 1\nWaitall rc 0\nTestany rc 0 flag 1 index_undefined 1\n\
Waitany rc 0 index_undefined 1\nTestsome rc 0 outcount_undefined 1\nWaitsome rc 0 outcount_undefined 1\n\
empty completions ok\n";

#[test]
fn empty_completions_open_mpi() {
    let prog = build("empty_completions.c", "mpicc", &[]);
    let run = run(&prog, 1, "empty_completions");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, EXPECTED);
    assert!(!run.stderr.contains("hyscope"), "stderr: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "stderr: {}", run.stderr);
}

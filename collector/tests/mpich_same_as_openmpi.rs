//! The MPICH flavour records what the Open MPI flavour records: each program of
//! tests/mpi/ (whose exact answers the `mpi_*` tests check under Open MPI) is
//! built and run with both MPIs, and every rank's rows must agree field by
//! field (call, peer, tag, bytes, root, communicator id), as must the exit code.
//! Only the number of MPI_Test*/MPI_Waitsome calls may differ (it depends on the MPI's progress).

use crate::mpi_common;
use mpi_common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use hyscope_format::{Trace, mpi_call};

fn compile(compiler: &str, src: &str, extra: &[&str]) -> PathBuf {
    let out = tmp().join(format!(
        "same-{compiler}-{}-{}",
        src.trim_end_matches(".c"),
        std::process::id()
    ));
    let st = Command::new(compiler)
        .args(["-g", "-O1", "-o"])
        .arg(&out)
        .arg(repo().join("tests/mpi").join(src))
        .args(extra)
        .status()
        .unwrap();
    assert!(st.success(), "{compiler} {src}");
    out
}

type Row = (u32, &'static str, i32, i32, u64, u64, i32, u64);

/// Sorted rows of the trace in `dir` (request ids and times differ between runs).
fn rows(dir: &Path) -> Vec<Row> {
    let trace = Trace::open(dir).unwrap();
    let mut v: Vec<Row> = mpi_rows(&trace)
        .into_iter()
        .map(|(r, m)| {
            (
                r,
                mpi_call::name(m.call),
                m.peer,
                m.tag,
                m.bytes_sent,
                m.bytes_recv,
                m.root,
                m.comm_id,
            )
        })
        .collect();
    v.sort();
    v
}

fn same(src: &str, extra: &[&str], np: u32) {
    let name = src.trim_end_matches(".c");
    let ompi = compile("mpicc", src, extra);
    let ompi_run = run(&ompi, np, &format!("same-{name}"));
    let mpich = compile("mpicc.mpich", src, extra);
    let mpich_run = run_mpich(&mpich, np, &format!("same-{name}"), &[]);
    let err = &mpich_run.stderr;
    assert_eq!(mpich_run.code, ompi_run.code, "{err}");
    assert!(!err.contains("hyscope:"), "{err}");
    // Polling calls (MPI_Test*, and MPI_Waitsome, which may return one or both
    // requests) repeat as often as the MPI needs: compare which ranks made
    // them, and every other row (completions included) exactly.
    let split = |v: Vec<Row>| -> (Vec<Row>, Vec<(u32, &'static str)>) {
        let (polls, rest): (Vec<Row>, Vec<Row>) = v
            .into_iter()
            .partition(|r| r.1.starts_with("MPI_Test") || r.1 == "MPI_Waitsome");
        let mut p: Vec<(u32, &'static str)> = polls.iter().map(|r| (r.0, r.1)).collect();
        p.dedup();
        (rest, p)
    };
    let (a, a_polls) = split(rows(&ompi_run.dir));
    let (b, b_polls) = split(rows(&mpich_run.dir));
    assert_eq!(a_polls, b_polls, "{name}: polling calls");
    assert!(!a.is_empty());
    if a.len() != b.len() {
        let n = |v: &[Row], r: &Row| v.iter().filter(|x| *x == r).count();
        let only_a: Vec<&Row> = a.iter().filter(|r| n(&a, r) != n(&b, r)).collect();
        let only_b: Vec<&Row> = b.iter().filter(|r| n(&a, r) != n(&b, r)).collect();
        panic!("{name}: only Open MPI {only_a:?}\nonly MPICH {only_b:?}");
    }
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{name}: Open MPI row vs MPICH row");
    }
}

#[test]
fn nonblocking_2_ranks() {
    same("nonblocking.c", &[], 2);
}

#[test]
fn collectives_4_ranks() {
    same("collectives.c", &[], 4);
}

#[test]
fn split_4_ranks() {
    same("split.c", &[], 4);
}

#[test]
fn threads_2_ranks() {
    same("threads.c", &["-pthread"], 2);
}

/// 16,000 requests pending per rank on 4 threads (`MPI_THREAD_MULTIPLE`): both
/// MPIs hand out one shared handle for the inline-completed sends, whose
/// entries the request table queues; every completion keeps its request's
/// peer, tag (the thread) and bytes.
#[test]
fn isend_stress_2_ranks() {
    same("isend_stress.c", &["-pthread"], 2);
}

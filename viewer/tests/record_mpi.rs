//! `hyscope record` with Open MPI at 2 ranks, in both positions:
//! `hyscope record -- mpirun -np 2 ./app` and `mpirun -np 2 hyscope record -- ./app`.

mod record_support;

use std::path::Path;

use hyscope_format::schema::mpi_call;
use hyscope_format::{MpiRecord, OmpKind, ScanOptions, Trace};
use record_support::*;

/// Both ranks wrote their part of the trace, with the OpenMP regions the program has.
fn check_trace(dir: &Path) {
    let trace = Trace::open(dir).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    let ranks: Vec<u32> = trace.manifest.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, vec![0, 1]);
    assert!(trace.manifest.ranks.iter().all(|r| r.finished));
    // Both ranks convert the TSC with the node's one calibration.
    let hz: Vec<Option<f64>> = trace.manifest.ranks.iter().map(|r| r.tsc_hz).collect();
    assert_eq!(hz[0], hz[1], "{hz:?}");
    let rows = omp_rows(&trace);
    for rank in [0, 1] {
        assert_eq!(count_kind(&rows, rank, OmpKind::Parallel), 2, "rank {rank}");
        assert_eq!(
            count_kind(&rows, rank, OmpKind::ImplicitTask),
            4,
            "rank {rank}"
        );
    }
    // The MPI calls of the program, per rank.
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    for rank in [0, 1] {
        let calls = |c: u16| {
            mpi.iter()
                .filter(|(r, m)| *r == rank && m.call == c)
                .count()
        };
        for (call, n) in [
            (mpi_call::MPI_Init_thread, 1),
            (mpi_call::MPI_Irecv, 1),
            (mpi_call::MPI_Isend, 1),
            (mpi_call::MPI_Waitall, 1),
            (mpi_call::MPI_Allreduce, 1),
            (mpi_call::MPI_Finalize, 1),
            (mpi_call::REQUEST_COMPLETE, 2),
        ] {
            assert_eq!(calls(call), n, "rank {rank}: {}", mpi_call::name(call));
        }
    }
}

fn summary_lines(err: &str) -> usize {
    err.lines()
        .filter(|l| l.starts_with("hyscope: trace "))
        .count()
}

#[test]
fn record_in_front_of_mpirun() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&exe)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // sum over 2 ranks of 2 regions x (1 + 2)
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
    assert_eq!(summary_lines(&err), 1, "{err}");
    assert!(err.contains(", 2 ranks, "), "{err}");
    check_trace(&dir);
}

#[test]
fn record_per_rank_under_mpirun() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    let out = std::process::Command::new("mpirun")
        .args(mpirun_args(2))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
    // Only rank 0 prints the job's summary.
    assert_eq!(summary_lines(&err), 1, "{err}");
    assert!(err.contains(", 2 ranks, "), "{err}");
    check_trace(&dir);
}

#[test]
fn per_rank_default_names_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "agree", MPI_SRC);
    let out = std::process::Command::new("mpirun")
        .current_dir(tmp.path())
        .args(mpirun_args(2))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .args(["record", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dirs: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hyscope-agree-")
        })
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    check_trace(&dirs[0]);
}

//! Hybrid MPI + OpenMP (tests/mpi/hybrid.c, clang + libomp): `in_parallel`
//! says whether the call was made inside an OpenMP parallel region (from OMPT).

use crate::mpi_common;
use mpi_common::*;

use hyscope_format::{OmpKind, OmpRecord, ScanOptions, Trace};

/// Build `src` with clang-19 and libomp through mpicc and run it on 2 ranks.
fn run_hybrid(src: &str, name: &str) -> Run {
    let prog = build_env(
        src,
        "mpicc",
        &["-fopenmp=libomp", "-Wl,-rpath,/usr/lib/llvm-19/lib"],
        &[("OMPI_CC", "clang-19")],
    );
    run(&prog, 2, name)
}

#[test]
fn in_parallel_from_ompt() {
    let run = run_hybrid("hybrid.c", "hybrid");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows = mpi_rows(&trace);
    for rank in 0..2 {
        let sends = calls(&rows, rank, "MPI_Send");
        let flags: Vec<(i32, bool)> = sends.iter().map(|m| (m.tag, m.in_parallel)).collect();
        assert_eq!(flags, vec![(1, true), (2, false)], "rank {rank}");
        assert!(
            calls(&rows, rank, "MPI_Recv")
                .iter()
                .all(|m| !m.in_parallel)
        );
    }
}

/// The trace written inside MPI_Finalize holds every OpenMP interval the
/// primary thread closed before it, including those it holds back to encode
/// in its slack (tests/mpi/hybrid_exit.c leaves by `_exit` right after
/// MPI_Finalize: no exit path runs).
#[test]
fn intervals_closed_before_finalize_are_in_its_checkpoint() {
    let run = run_hybrid("hybrid_exit.c", "hybrid-exit");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let trace = Trace::open(&run.dir).unwrap();
    let rows: Vec<(u32, OmpRecord)> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    for rank in 0..2 {
        let primary = |kind: OmpKind, variant: Option<u8>| {
            rows.iter()
                .filter(|(r, o)| {
                    *r == rank
                        && o.thread == 0
                        && o.kind == kind as u8
                        && variant.is_none_or(|v| o.variant == v)
                })
                .count()
        };
        // ompt_sync_region_barrier_implicit_parallel
        let join = Some(9);
        assert_eq!(primary(OmpKind::Parallel, None), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::ImplicitTask, None), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::Sync, join), 3, "rank {rank}");
        assert_eq!(primary(OmpKind::SyncWait, join), 3, "rank {rank}");
    }
}

/// A relative `HYSCOPE_OUTPUT` names the directory where the job started,
/// even when the program changes its working directory before it ends and
/// starts a shell that inherits the preload (`tests/mpi/chdir_exit.c`): the
/// whole trace is in that one directory, none of it under the new one.
#[test]
fn relative_output_stays_where_the_job_started() {
    let prog = build_chdir_exit();
    let start = tmp().join(format!("chdir-start-{}", std::process::id()));
    let moved = tmp().join(format!("chdir-moved-{}", std::process::id()));
    for d in [&start, &moved] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let name = std::path::Path::new("trace-relative");
    let mut cmd = mpirun(2, Some(&library()), name);
    cmd.current_dir(&start).arg(&prog).arg(&moved);
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("system=0")
            .count(),
        2
    );
    assert!(
        !moved.join(name).exists(),
        "part of the trace went to the new working directory: {:?}",
        std::fs::read_dir(moved.join(name)).map(|d| d.count())
    );
    let dir = start.join(name);
    let trace = Trace::open(&dir).unwrap();
    assert_eq!(primary_regions(&trace, 2), [3, 3]);
    // Every rank's events were encoded into the trace (no spool left over).
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("spool"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftovers
            .iter()
            .all(|f| !f.to_string_lossy().ends_with(".end")),
        "{leftovers:?}"
    );
}

/// A second job told to write where an earlier job's trace is writes beside
/// it (`DIR-2`), says so once (rank 0, not the shell each rank starts), and
/// leaves the earlier trace as it was: its files had been read as the
/// second job's child processes and parts.
#[test]
fn a_second_job_into_the_same_directory_writes_beside_the_first() {
    let prog = build_chdir_exit();
    let dir = tmp().join(format!("rerun-{}", std::process::id()));
    let second = dir.with_file_name(format!("rerun-{}-2", std::process::id()));
    for d in [&dir, &second] {
        let _ = std::fs::remove_dir_all(d);
    }
    let elsewhere = tmp().join(format!("rerun-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&elsewhere).unwrap();
    let first = output_within(
        mpirun(2, Some(&library()), &dir).arg(&prog).arg(&elsewhere),
        LAUNCH_LIMIT,
    );
    assert_eq!(first.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&first.stderr).contains("hyscope:"));
    let files = |d: &std::path::Path| {
        let mut v: Vec<_> = walk(d);
        v.sort();
        v
    };
    let before = files(&dir);
    let again = output_within(
        mpirun(2, Some(&library()), &dir).arg(&prog).arg(&elsewhere),
        LAUNCH_LIMIT,
    );
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    let warnings: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("hyscope:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("earlier run") && warnings[0].contains(&second.display().to_string()),
        "{stderr}"
    );
    assert_eq!(files(&dir), before, "the earlier trace changed");
    let trace = Trace::open(&second).unwrap();
    // Two ranks, no process taken for a child of theirs.
    let mut rank_files: Vec<_> = walk(&second.join("ranks"));
    rank_files.sort();
    assert_eq!(
        rank_files,
        [
            std::path::PathBuf::from("rank-0.json"),
            std::path::PathBuf::from("rank-1.json")
        ],
    );
    assert_eq!(primary_regions(&trace, 2), [3, 3]);
    for d in [&dir, &second, &elsewhere] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Every file under `d` (relative paths).
fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(d).unwrap().to_path_buf());
            }
        }
    }
    out
}

/// `tests/mpi/chdir_exit.c`, built with clang-19 and libomp through mpicc.
fn build_chdir_exit() -> std::path::PathBuf {
    build_env(
        "chdir_exit.c",
        "mpicc",
        &["-fopenmp=libomp", "-Wl,-rpath,/usr/lib/llvm-19/lib"],
        &[("OMPI_CC", "clang-19")],
    )
}

/// The parallel regions each of the first `ranks` ranks' primary thread ran.
fn primary_regions(trace: &Trace, ranks: u32) -> Vec<usize> {
    let rows: Vec<(u32, OmpRecord)> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    (0..ranks)
        .map(|rank| {
            rows.iter()
                .filter(|(r, o)| *r == rank && o.thread == 0 && o.kind == OmpKind::Parallel as u8)
                .count()
        })
        .collect()
}

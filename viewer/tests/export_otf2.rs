//! `hyscope export --format otf2`: a real 2-rank MPI+OpenMP recording written as
//! an OTF2 archive and read back by Debian's `otf2-print` (package `otf2-tools`),
//! with exact event counts.

mod record_support;

use std::collections::BTreeMap;
use std::process::Command;

use hyscope_format::{MpiRecord, SampleRecord, ScanOptions, Trace, mpi_call};
use record_support::*;

#[test]
fn otf2_archive_read_back_by_otf2_print() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let archive_dir = tmp.path().join("otf2");
    let out = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(&archive_dir)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let archive = archive_dir.join("traces.otf2");
    assert!(archive.is_file());

    let printed = Command::new("otf2-print").arg(&archive).output().unwrap();
    let err = stderr(&printed);
    assert!(printed.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let text = String::from_utf8(printed.stdout).unwrap();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for line in text.lines() {
        if let Some(word) = line.split_whitespace().next() {
            *counts.entry(word).or_default() += 1;
        }
    }
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);

    let trace = Trace::open(&dir).unwrap();
    let omp = omp_rows(&trace);
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let samples: Vec<(u32, SampleRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let completions = mpi
        .iter()
        .filter(|(_, m)| m.call == mpi_call::REQUEST_COMPLETE)
        .count();
    // Every OpenMP interval and every MPI call is one region, entered and left once.
    assert_eq!(n("ENTER"), omp.len() + mpi.len() - completions);
    assert_eq!(n("LEAVE"), n("ENTER"));
    // The program: per rank one Isend, one Irecv (request + completion), one Allreduce.
    assert_eq!(n("MPI_ISEND"), 2);
    assert_eq!(n("MPI_ISEND_COMPLETE"), 2);
    assert_eq!(n("MPI_IRECV_REQUEST"), 2);
    assert_eq!(n("MPI_IRECV"), 2);
    assert_eq!(n("MPI_COLLECTIVE_BEGIN"), 2);
    assert_eq!(n("MPI_COLLECTIVE_END"), 2);
    assert_eq!(n("METRIC"), samples.len());
    // Each Isend names the other rank's thread 0 and carries one double.
    for line in text.lines().filter(|l| l.starts_with("MPI_ISEND ")) {
        assert!(line.contains("Tag: 7, Length: 8"), "{line}");
    }

    // Definitions: 4 locations (2 ranks × 2 threads), 2 processes.
    let defs = Command::new("otf2-print")
        .arg("-G")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(defs.status.success());
    let defs = String::from_utf8(defs.stdout).unwrap();
    let count = |k: &str| defs.lines().filter(|l| l.starts_with(k)).count();
    assert_eq!(count("LOCATION "), 4);
    assert_eq!(count("LOCATION_GROUP "), 2);
    assert_eq!(count("COMM "), 1);

    // An existing output is refused.
    let again = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(&archive_dir)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("refusing to overwrite"));
}

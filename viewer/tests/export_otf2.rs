//! `hyscope export --format otf2`: a real 2-rank MPI+OpenMP recording written as
//! an OTF2 archive and read back by Debian's `otf2-print` (package `otf2-tools`),
//! with exact event counts.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hyscope_analyzer::aligned::Clocks;
use hyscope_format::{MpiRecord, PhaseRecord, SampleRecord, ScanOptions, Trace, mpi_call};
use record_support::*;

#[test]
fn otf2_archive_read_back_by_otf2_print() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    record_mpi_job(&dir, &exe, 2);

    let archive_dir = tmp.path().join("otf2");
    let (text, defs) = export_and_print(&dir, &archive_dir);
    assert!(archive_dir.join("traces.otf2").is_file());
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
    let count = |k: &str| defs.lines().filter(|l| l.starts_with(k)).count();
    assert_eq!(count("LOCATION "), 4);
    assert_eq!(count("LOCATION_GROUP "), 2);
    assert_eq!(count("COMM "), 1);

    // An existing output is refused.
    let again = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(&archive_dir)
        .arg(&dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("refusing to overwrite"));
}

/// `hyscope export --format otf2 -o <archive_dir> <trace>`, then `otf2-print`
/// of the events (and with `-G`, the definitions).
fn export_and_print(trace: &Path, archive_dir: &Path) -> (String, String) {
    let out = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(archive_dir)
        .arg(trace)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let archive = archive_dir.join("traces.otf2");
    let print = |args: &[&str]| {
        let o = Command::new("otf2-print")
            .args(args)
            .arg(&archive)
            .output_within_limit()
            .unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert!(!err.contains("warning"), "{err}");
        String::from_utf8(o.stdout).unwrap()
    };
    (print(&[]), print(&["-G"]))
}

#[test]
fn otf2_phases_are_user_phase_regions_on_their_thread() {
    // tests/phases/nested.c: setup, then solver around 4 steps, each around a halo.
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_phase_program(tmp.path(), "nested");
    let dir = tmp.path().join("trace");
    record_mpi_job(&dir, &exe, 2);
    let (events, defs) = export_and_print(&dir, &tmp.path().join("otf2"));

    // One region per phase name: user code, flagged as a phase.
    let phase_regions: Vec<&str> = defs
        .lines()
        .filter(|l| {
            l.starts_with("REGION ") && l.contains("Role: CODE, Paradigm: USER, Flags: {PHASE}")
        })
        .map(|l| l.split('"').nth(1).unwrap())
        .collect();
    assert_eq!(phase_regions, ["setup", "solver", "step", "halo"]);

    let trace = Trace::open(&dir).unwrap();
    let clocks = Clocks::from_manifest(&trace.manifest);
    let rows: Vec<(u32, PhaseRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    for rank in [0u32, 1] {
        // Rank r's thread 0 is location r << 16: its phase Enter/Leave, in order.
        let loc = (u64::from(rank) << 16).to_string();
        let mut seq = Vec::new();
        let mut times = Vec::new();
        for l in events.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if !matches!(f.first(), Some(&"ENTER" | &"LEAVE")) || f[1] != loc {
                continue;
            }
            let name = l.split('"').nth(1).unwrap();
            if phase_regions.contains(&name) {
                seq.push(format!("{} {name}", f[0]));
                times.push(f[2].parse::<i64>().unwrap());
            }
        }
        let mut want = vec!["ENTER setup", "LEAVE setup", "ENTER solver"];
        for _ in 0..4 {
            want.extend(["ENTER step", "ENTER halo", "LEAVE halo", "LEAVE step"]);
        }
        want.push("LEAVE solver");
        assert_eq!(seq, want, "rank {rank}");
        // The times are the trace's on global time, to the nanosecond.
        let g = |t: i64| clocks.to_global(rank, t).ns();
        let mine: Vec<&PhaseRecord> = rows
            .iter()
            .filter(|(r, _)| *r == rank)
            .map(|(_, p)| p)
            .collect();
        let (setup, solver) = (mine[0], mine[1]);
        assert_eq!(
            (setup.name.as_str(), solver.name.as_str()),
            ("setup", "solver")
        );
        assert_eq!(times[1] - times[0], g(setup.end_ns) - g(setup.start_ns));
        assert_eq!(times[2] - times[0], g(solver.start_ns) - g(setup.start_ns));
        assert_eq!(
            times[times.len() - 1] - times[2],
            g(solver.end_ns) - g(solver.start_ns)
        );
        for (i, step) in mine[2..].iter().filter(|p| p.name == "step").enumerate() {
            let (enter, leave) = (times[3 + 4 * i], times[6 + 4 * i]);
            assert_eq!(leave - enter, g(step.end_ns) - g(step.start_ns), "step {i}");
        }
    }
}

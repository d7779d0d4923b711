//! A program built without debug information (`-O2`, no `-g`, as production
//! binaries often are), recorded for real (clang-19, libomp 19, Open MPI, 2
//! ranks): its symbols give a function and no line, so every construct of
//! `main` is in one function. The report still tells the call sites apart —
//! two parallel regions, two `MPI_Allreduce` call sites — each one over both
//! ranks (loaded at their own addresses), labelled by function, module and
//! offset in the module, which `addr2line` takes.

use crate::record_support;

use std::path::Path;
use std::process::Command;

use hyscope_format::{OmpKind, ScanOptions, SymbolRecord, Trace};
use record_support::*;

/// Two parallel regions in `main`, the first run `argv[1]` times, the second
/// 2 more; then two `MPI_Allreduce` calls. Loops kept rolled, so each region
/// is one call site.
const SRC: &str = r#"#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    double a = 0, b = 0;
#pragma clang loop unroll(disable)
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(2) reduction(+ : a)
        a += omp_get_thread_num() + 1;
    }
#pragma clang loop unroll(disable)
    for (int r = 0; r < reps + 2; r++) {
#pragma omp parallel num_threads(2) reduction(+ : b)
        b += 10 * (omp_get_thread_num() + 1);
    }
    double sa = 0, sb = 0;
    MPI_Allreduce(&a, &sa, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&b, &sb, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("a %g\nb %g\n", sa, sb);
    MPI_Finalize();
    return 0;
}
"#;

const NAME: &str = "nodebug";
/// The first region's instances per rank (`argv[1]`); the second's is 2 more.
const REPS: u64 = 3;

/// The function `addr2line -f -e exe offset` names.
fn addr2line_function(exe: &Path, offset: u64) -> String {
    let out = Command::new("addr2line")
        .arg("-f")
        .arg("-e")
        .arg(exe)
        .arg(format!("{offset:#x}"))
        .output()
        .expect("run addr2line");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The report's parallel regions and `MPI_Allreduce` call sites (label,
/// ranks, count, module offset), asserted to be one per construct of `SRC`
/// over both ranks: two regions with their own instances, two call sites
/// of one call per rank each.
fn one_location_per_construct(report: &serde_json::Value) -> (Vec<Located>, Vec<Located>) {
    // Two regions, each over both ranks with its own instances.
    let regions = report_regions(report);
    assert_eq!(regions.len(), 2, "{regions:#?}");
    let mut counts: Vec<(Vec<u64>, u64)> = regions.iter().map(|r| (r.1.clone(), r.2)).collect();
    counts.sort();
    assert_eq!(
        counts,
        [(vec![0, 1], 2 * REPS), (vec![0, 1], 2 * (REPS + 2))],
        "{regions:#?}"
    );
    // Two MPI_Allreduce call sites, one call per rank each.
    let sites = allreduce_sites(report);
    assert_eq!(sites.len(), 2, "{sites:#?}");
    assert!(sites.iter().all(|s| s.2 == 2), "{sites:#?}");

    (regions, sites)
}

#[test]
fn call_sites_of_code_without_debug_info_stay_apart_and_merge_across_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_without_debug_info(tmp.path(), NAME, SRC);
    let dir = tmp.path().join("trace");
    let out = run_ok(
        record_into(&dir)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&exe)
            .arg(REPS.to_string()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Each rank: 3 × (1 + 2) and 5 × (10 + 20).
    assert_eq!(printed(&stdout, "a"), 18.0, "{stdout}");
    assert_eq!(printed(&stdout, "b"), 300.0, "{stdout}");

    // What the test is about: the regions' symbols give `main` and no line.
    let trace = Trace::open(&dir).unwrap();
    let symbols: Vec<(u32, SymbolRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let rows = omp_rows(&trace);
    let region_symbols: Vec<&SymbolRecord> = rows
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Parallel as u8)
        .map(|(rank, r)| {
            symbols
                .iter()
                .find(|(s_rank, s)| s_rank == rank && s.address == r.codeptr)
                .map(|(_, s)| s)
                .unwrap_or_else(|| panic!("rank {rank} has no symbol for {:#x}", r.codeptr))
        })
        .collect();
    assert!(
        region_symbols
            .iter()
            .all(|s| s.function.as_deref() == Some("main") && s.line.is_none()),
        "{region_symbols:#?}"
    );
    assert_eq!(
        count_kind(&rows, 0, OmpKind::Parallel),
        2 * REPS as usize + 2
    );

    let report = report_json(&dir);
    let (regions, sites) = one_location_per_construct(&report);

    // Each labelled so that a user can find the code: the function, the
    // module's file name and the offset, which addr2line resolves to `main`.
    for (label, _, _, offset) in regions.iter().chain(&sites) {
        assert!(*offset > 0, "{label}: no module offset");
        assert_eq!(*label, format!("main ({NAME}+{offset:#x})"));
        assert_eq!(addr2line_function(&exe, *offset), "main", "{label}");
    }

    // The exports name each region's events by the same place (OTF2 makes
    // one region definition per name and source).
    let json = tmp.path().join("trace.json");
    run_ok(
        hyscope()
            .args(["export", "--format", "perfetto", "-o"])
            .arg(&json)
            .arg(&dir),
    );
    let events: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut names: Vec<&str> = events["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with("parallel"))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut want: Vec<String> = regions
        .iter()
        .map(|r| format!("parallel @ {}", r.0))
        .collect();
    want.sort();
    assert_eq!(names, want);
}

/// One program copied to a path per node (`p1/nodebug`, `p2/nodebug`, as a
/// job staging its binary to each node's scratch), run as an MPMD job of the
/// two copies: the ranks' symbols name different modules, yet each region
/// and call site is one location over both ranks, as from one path.
#[test]
fn copies_of_one_binary_at_two_paths_merge_across_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_without_debug_info(tmp.path(), NAME, SRC);
    let copies: Vec<std::path::PathBuf> = ["p1", "p2"]
        .iter()
        .map(|d| copy_to(&exe, &tmp.path().join(d).join(NAME)))
        .collect();
    let dir = tmp.path().join("trace");
    let reps = REPS.to_string();
    let out = record_mpmd(&dir, (&copies[0], &reps), (&copies[1], &reps));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(printed(&stdout, "a"), 18.0, "{stdout}");
    assert_eq!(printed(&stdout, "b"), 300.0, "{stdout}");

    // What the test is about: each rank's code is in its own copy.
    let symbols: Vec<(u32, SymbolRecord)> = trace_rows(&dir);
    for (rank, copy) in copies.iter().enumerate() {
        let mains: Vec<&SymbolRecord> = symbols
            .iter()
            .filter(|(r, s)| *r == rank as u32 && s.function.as_deref() == Some("main"))
            .map(|(_, s)| s)
            .collect();
        assert!(!mains.is_empty(), "rank {rank}: {symbols:#?}");
        assert!(
            mains
                .iter()
                .all(|s| Path::new(&s.module) == copy.as_path() && s.line.is_none()),
            "rank {rank}: {mains:#?}"
        );
    }

    let (regions, sites) = one_location_per_construct(&report_json(&dir));
    for (label, _, _, offset) in regions.iter().chain(&sites) {
        assert_eq!(*label, format!("main ({NAME}+{offset:#x})"));
    }
}

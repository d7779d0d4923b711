//! Copies of one binary merge on proof, a GNU build-id per module, not on
//! file name and layout; recorded for real (clang-19 without `-g`, libomp
//! 19, Open MPI), as MPMD jobs of two parts, one rank each:
//!
//! - two builds of one program that differ by a constant only (`K = 1`,
//!   `K = 2`: the same file name, the code laid out alike, other build-ids)
//!   are two code locations per construct, one per rank;
//! - one build copied to two paths under two file names is one location
//!   per construct over both ranks;
//! - one build linked without a build-id (`-Wl,--build-id=none`), copied
//!   to two paths of one file name, is one location by file name and
//!   layout, and the report says that this is not proven.

use crate::record_support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use hyscope_format::{SymbolRecord, elf};
use record_support::*;

/// `argv[1]` parallel regions of 2 threads, each thread adding `K` times
/// its number + 1; one `MPI_Allreduce`. `K` is a volatile global: another
/// value changes the data, not the code.
const SRC: &str = r#"#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
static volatile int K = 1;
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    double s = 0;
#pragma clang loop unroll(disable)
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += K * (omp_get_thread_num() + 1);
    }
    double sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d K %d sum %g\n", rank, K, sum);
    MPI_Finalize();
    return 0;
}
"#;

/// Parallel regions per rank.
const REPS: u64 = 3;

/// `SRC` with `K = k`, built as `dir/app` with the linker's `build_id`
/// option (`-Wl,--build-id`, `-Wl,--build-id=none`).
fn build(dir: &Path, k: u32, build_id: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = SRC.replace("K = 1;", &format!("K = {k};"));
    build_mpi_without_debug_info_with(dir, "app", &src, &[build_id])
}

/// The build-id `readelf -n` prints for `exe`, if any.
fn readelf_build_id(exe: &Path) -> Option<String> {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(exe)
        .output()
        .expect("run readelf");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
}

/// Record the MPMD job `-np 1 a REPS : -np 1 b REPS` into `dir`; its output.
fn record_both(dir: &Path, a: &Path, b: &Path) -> String {
    let reps = REPS.to_string();
    let out = record_mpmd(dir, (a, &reps), (b, &reps));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The line rank `rank` printed: `K <k> sum <sum>`.
fn printed_by(stdout: &str, rank: u32) -> &str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("rank {rank} ")))
        .unwrap_or_else(|| panic!("rank {rank} printed nothing: {stdout}"))
}

/// Rank `rank`'s `symbols` rows in the module named `app` or `renamed`.
fn app_rows(symbols: &[(u32, SymbolRecord)], rank: u32) -> Vec<&SymbolRecord> {
    let rows: Vec<&SymbolRecord> = symbols
        .iter()
        .filter(|(r, s)| {
            *r == rank
                && Path::new(&s.module)
                    .file_name()
                    .is_some_and(|n| n == "app" || n == "renamed")
        })
        .map(|(_, s)| s)
        .collect();
    assert!(!rows.is_empty(), "rank {rank}: {symbols:#?}");
    rows
}

/// The code of rank `rank`'s rows in its program: (function, offset in the
/// module), which no line accompanies (no `-g`).
fn layout(symbols: &[(u32, SymbolRecord)], rank: u32) -> BTreeSet<(String, u64)> {
    app_rows(symbols, rank)
        .into_iter()
        .map(|s| {
            assert!(s.line.is_none(), "{s:?}");
            (
                s.function.clone().unwrap_or_default(),
                s.module_offset.expect("an offset"),
            )
        })
        .collect()
}

/// The one build-id of rank `rank`'s rows in its program, and its module.
fn build_id_of(symbols: &[(u32, SymbolRecord)], rank: u32) -> (Option<String>, String) {
    let rows = app_rows(symbols, rank);
    let ids: BTreeSet<(Option<String>, String)> = rows
        .iter()
        .map(|s| (s.module_build_id.clone(), s.module.clone()))
        .collect();
    assert_eq!(ids.len(), 1, "rank {rank}: {rows:#?}");
    ids.into_iter().next().unwrap()
}

/// (label, ranks, count) of the report's parallel regions and of its
/// `MPI_Allreduce` call sites (which list no ranks), each sorted.
type Sites = Vec<(String, Vec<u64>, u64)>;

fn regions_and_sites(report: &serde_json::Value) -> (Sites, Sites) {
    let sorted = |list: Vec<Located>| -> Sites {
        let mut v: Sites = list.into_iter().map(|(l, r, n, _)| (l, r, n)).collect();
        v.sort();
        v
    };
    (
        sorted(report_regions(report)),
        sorted(allreduce_sites(report)),
    )
}

/// The report's notes on code locations merged without proof.
fn code_location_notes(report: &serde_json::Value) -> Vec<String> {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("code locations:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn two_builds_laid_out_alike_are_two_locations() {
    let tmp = tempfile::tempdir().unwrap();
    let one = build(&tmp.path().join("b1"), 1, "-Wl,--build-id");
    let two = build(&tmp.path().join("b2"), 2, "-Wl,--build-id");
    let dir = tmp.path().join("trace");
    let stdout = record_both(&dir, &one, &two);
    // Each rank ran its own build: 3 regions × K × (1 + 2); 9 + 18 in all.
    assert_eq!(printed_by(&stdout, 0), "K 1 sum 27", "{stdout}");
    assert_eq!(printed_by(&stdout, 1), "K 2 sum 27", "{stdout}");

    // What the test is about: the two builds' code is laid out alike (the
    // same functions at the same offsets of one file name, which file name
    // and layout alone take for one binary) and their build-ids, those
    // `readelf` prints, differ.
    let symbols: Vec<(u32, SymbolRecord)> = trace_rows(&dir);
    assert_eq!(layout(&symbols, 0), layout(&symbols, 1));
    let (id0, module0) = build_id_of(&symbols, 0);
    let (id1, module1) = build_id_of(&symbols, 1);
    assert_eq!(
        (Path::new(&module0), Path::new(&module1)),
        (one.as_path(), two.as_path())
    );
    assert!(id0.is_some() && id0 == readelf_build_id(&one), "{id0:?}");
    assert!(id1.is_some() && id1 == readelf_build_id(&two), "{id1:?}");
    assert_ne!(id0, id1);

    // Two locations per construct, each on its own rank, labelled alike.
    let report = report_json(&dir);
    let (regions, sites) = regions_and_sites(&report);
    assert_eq!(regions.len(), 2, "{regions:#?}");
    assert_eq!(regions[0].0, regions[1].0);
    let mut by_rank: Vec<(Vec<u64>, u64)> = regions.iter().map(|r| (r.1.clone(), r.2)).collect();
    by_rank.sort();
    assert_eq!(by_rank, [(vec![0], REPS), (vec![1], REPS)], "{regions:#?}");
    assert_eq!(sites.len(), 2, "{sites:#?}");
    assert!(
        sites.iter().all(|s| s.2 == 1),
        "one call per rank: {sites:#?}"
    );
    assert!(code_location_notes(&report).is_empty(), "{report:#}");
}

#[test]
fn one_build_at_two_paths_and_names_is_one_location() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(&tmp.path().join("build"), 1, "-Wl,--build-id");
    let a = copy_to(&exe, &tmp.path().join("p1/app"));
    let b = copy_to(&exe, &tmp.path().join("p2/renamed"));
    let dir = tmp.path().join("trace");
    let stdout = record_both(&dir, &a, &b);
    assert_eq!(printed_by(&stdout, 0), "K 1 sum 18", "{stdout}");
    assert_eq!(printed_by(&stdout, 1), "K 1 sum 18", "{stdout}");

    // Each rank's code is in its own copy, under its own name, with the
    // build's one build-id.
    let symbols: Vec<(u32, SymbolRecord)> = trace_rows(&dir);
    let (id0, module0) = build_id_of(&symbols, 0);
    let (id1, module1) = build_id_of(&symbols, 1);
    assert_eq!(
        (Path::new(&module0), Path::new(&module1)),
        (a.as_path(), b.as_path())
    );
    assert!(id0.is_some() && id0 == readelf_build_id(&exe), "{id0:?}");
    assert_eq!(id0, id1);

    // One location per construct over both ranks.
    let report = report_json(&dir);
    let (regions, sites) = regions_and_sites(&report);
    assert_eq!(regions.len(), 1, "{regions:#?}");
    assert_eq!((regions[0].1.clone(), regions[0].2), (vec![0, 1], 2 * REPS));
    assert_eq!(sites.len(), 1, "{sites:#?}");
    assert_eq!(sites[0].2, 2, "one call per rank: {sites:#?}");
    assert!(code_location_notes(&report).is_empty(), "{report:#}");
}

#[test]
fn without_a_build_id_copies_merge_by_layout_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build(&tmp.path().join("build"), 1, "-Wl,--build-id=none");
    assert_eq!(readelf_build_id(&exe), None);
    let a = copy_to(&exe, &tmp.path().join("p1/app"));
    let b = copy_to(&exe, &tmp.path().join("p2/app"));
    let dir = tmp.path().join("trace");
    let stdout = record_both(&dir, &a, &b);
    assert_eq!(printed_by(&stdout, 1), "K 1 sum 18", "{stdout}");

    let symbols: Vec<(u32, SymbolRecord)> = trace_rows(&dir);
    assert_eq!(build_id_of(&symbols, 0), (None, a.display().to_string()));
    assert_eq!(build_id_of(&symbols, 1), (None, b.display().to_string()));

    // One location per construct, by file name and layout …
    let report = report_json(&dir);
    let (regions, sites) = regions_and_sites(&report);
    assert_eq!(regions.len(), 1, "{regions:#?}");
    assert_eq!((regions[0].1.clone(), regions[0].2), (vec![0, 1], 2 * REPS));
    assert_eq!(sites.len(), 1, "{sites:#?}");
    assert_eq!(sites[0].2, 2, "one call per rank: {sites:#?}");
    // … which the report says is not proven, naming both paths.
    let notes = code_location_notes(&report);
    assert_eq!(notes.len(), 1, "{report:#}");
    let want = format!(
        "code locations: {} counted as a copy of {} (same file name, code laid out alike) without a GNU build-id to prove it",
        b.display(),
        a.display()
    );
    assert!(notes[0].starts_with(&want), "{notes:?}");
    let text = run_ok(hyscope().arg("report").arg(&dir));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains(&notes[0]),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

/// One parallel region of 2 threads adding `K`; then it creates the file
/// `argv[1]` and waits (60 s at most) for the file `argv[2]`; then exits.
const WAITS_SRC: &str = r#"#include <omp.h>
#include <stdio.h>
#include <unistd.h>
static volatile int K = 1;
int main(int argc, char **argv) {
    double s = 0;
#pragma omp parallel num_threads(2) reduction(+ : s)
    s += K * (omp_get_thread_num() + 1);
    FILE *ready = fopen(argv[1], "w");
    if (ready) fclose(ready);
    for (int i = 0; i < 6000 && access(argv[2], F_OK) != 0; i++) usleep(10000);
    printf("K %d sum %g\n", K, s);
    return 0;
}
"#;

/// A program whose file is replaced on disk while it runs (a rebuild, an
/// installation: a new file renamed over the path, as `install` and the
/// linkers do) has the build-id of the binary that ran, not of the file at
/// its path by the time of its exit.
#[test]
fn a_binary_replaced_while_it_runs_has_the_build_id_that_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |k: u32| {
        let dir = tmp.path().join(format!("b{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        build_omp(
            &dir,
            "app",
            &WAITS_SRC.replace("K = 1;", &format!("K = {k};")),
        )
    };
    let (ran, other) = (build(1), build(2));
    let (ran_id, other_id) = (elf::read(&ran).build_id, elf::read(&other).build_id);
    assert!(
        ran_id.is_some() && ran_id != other_id,
        "{ran_id:?} {other_id:?}"
    );
    let exe = copy_to(&ran, &tmp.path().join("run/app"));
    let (ready, go) = (tmp.path().join("ready"), tmp.path().join("go"));
    let dir = tmp.path().join("trace");
    let mut record = record_into(&dir);
    record.arg(&exe).arg(&ready).arg(&go);
    let recording = std::thread::spawn(move || run_ok(&mut record));

    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < hyscope_testkit::LAUNCH_LIMIT && !recording.is_finished(),
            "the program never got past its parallel region"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let new = copy_to(&other, &tmp.path().join("run/app.new"));
    std::fs::rename(&new, &exe).unwrap();
    assert_eq!(elf::read(&exe).build_id, other_id, "the file is replaced");
    std::fs::write(&go, "").unwrap();
    let out = recording.join().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "K 1 sum 3\n");

    let symbols: Vec<(u32, SymbolRecord)> = trace_rows(&dir);
    let rows: Vec<&SymbolRecord> = symbols
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.module.starts_with(&exe.display().to_string()))
        .collect();
    assert!(!rows.is_empty(), "{symbols:#?}");
    for row in rows {
        assert_eq!(row.module_build_id, ran_id, "{row:?}");
    }
}

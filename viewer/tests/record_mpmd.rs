//! One address, different code on different ranks, recorded for real
//! (clang-19, libomp 19, Open MPI): the analysis merges ranks by the code
//! location each rank's own symbols give an address, never by the address.
//!
//! - An MPMD job, `hyscope record -- mpirun -np 1 mpmd_a 3 : -np 1 mpmd_b 5`:
//!   two programs built alike (`-no-pie`, the same code but for the source
//!   file's name and the letter they print), so their parallel region and
//!   `MPI_Allreduce` are at the same addresses. Each program's stay its own.
//! - An SPMD job whose two plugins, linked at one preferred address
//!   (`-Wl,-Ttext-segment`), are loaded A first on even ranks and B first on
//!   odd ones: the address of A's region on rank 0 is B's on rank 1. Each
//!   plugin's region is one location over both ranks.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;

use hyscope_format::{OmpKind, ScanOptions, SymbolRecord, Trace};
use record_support::*;

/// Half A of the MPMD job (half B: the same with `B`), `argv[1]` regions.
const MPMD_SRC: &str = r#"#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    double s = 0;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    double sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("A rank %d sum %g\n", rank, sum);
    MPI_Finalize();
    return 0;
}
"#;

/// Plugin A (plugin B: the same with `plug_b_run`): `reps` regions.
const PLUGIN_SRC: &str = r#"#include <omp.h>
double plug_a_run(int reps) {
    double s = 0;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    return s;
}
"#;

/// The SPMD program: loads plugins A and B (`argv[1]`, `argv[2]`), B first
/// on odd ranks, runs A's region 2 times and B's 3 times.
const SPMD_SRC: &str = r#"#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
typedef double (*run_fn)(int);
static void *load(const char *path) {
    void *h = dlopen(path, RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); exit(1); }
    return h;
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    int b_first = r && atoi(r) % 2;
    void *a = b_first ? NULL : load(argv[1]);
    void *b = load(argv[2]);
    if (!a) a = load(argv[1]);
    run_fn run_a = (run_fn)dlsym(a, "plug_a_run"), run_b = (run_fn)dlsym(b, "plug_b_run");
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double s = run_a(2) + run_b(3), sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d sum %g\n", rank, sum);
    MPI_Finalize();
    return 0;
}
"#;

/// The line of `src`'s parallel region (where its code address resolves).
fn pragma_line(src: &str) -> usize {
    src.lines()
        .position(|l| l.contains("omp parallel"))
        .unwrap()
        + 1
}

/// Each rank's parallel regions' code addresses, each once, sorted.
fn region_addresses(trace: &Trace, rank: u32) -> Vec<u64> {
    let mut a: Vec<u64> = omp_rows(trace)
        .into_iter()
        .filter(|(r, row)| *r == rank && row.kind == OmpKind::Parallel as u8)
        .map(|(_, row)| row.codeptr)
        .collect();
    a.sort_unstable();
    a.dedup();
    a
}

/// The source file (name only) `rank`'s symbols give `address`.
fn file_of(trace: &Trace, rank: u32, address: u64) -> String {
    let symbols: Vec<(u32, SymbolRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    symbols
        .iter()
        .find(|(r, s)| *r == rank && s.address == address)
        .and_then(|(_, s)| s.file.as_deref())
        .map(|f| {
            Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|| panic!("rank {rank} does not resolve {address:#x}"))
}

/// (label, ranks, instances) of every parallel region the analysis lists.
fn regions(dir: &Path) -> Vec<(String, Vec<u32>, u64)> {
    let a = hyscope_analyzer::analyze(dir, &Default::default()).unwrap();
    let mut v: Vec<_> = a
        .regions
        .get()
        .unwrap()
        .iter()
        .map(|r| (r.location.label.clone(), r.ranks.clone(), r.instances))
        .collect();
    v.sort();
    v
}

#[test]
fn mpmd_programs_with_code_at_one_address_stay_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let a = build_mpi_with(tmp.path(), "mpmd_a", MPMD_SRC, &["-no-pie"]);
    let b_src = MPMD_SRC.replace("\"A rank", "\"B rank");
    let b = build_mpi_with(tmp.path(), "mpmd_b", &b_src, &["-no-pie"]);
    let dir = tmp.path().join("trace");
    let out = record_mpmd(&dir, (&a, "3"), (&b, "5"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 3 regions × (1 + 2) + 5 × (1 + 2), on both ranks.
    assert!(stdout.contains("A rank 0 sum 24"), "{stdout}");
    assert!(stdout.contains("B rank 1 sum 24"), "{stdout}");
    // What the test is about: one address, a different program on each rank.
    let trace = Trace::open(&dir).unwrap();
    let (r0, r1) = (region_addresses(&trace, 0), region_addresses(&trace, 1));
    assert_eq!(r0.len(), 1, "{r0:x?}");
    assert_eq!(r0, r1, "the programs' regions are not at one address");
    assert_eq!(file_of(&trace, 0, r0[0]), "mpmd_a.c");
    assert_eq!(file_of(&trace, 1, r0[0]), "mpmd_b.c");
    let line = pragma_line(MPMD_SRC);
    assert_eq!(
        regions(&dir),
        [
            (format!("mpmd_a.c:{line}"), vec![0], 3),
            (format!("mpmd_b.c:{line}"), vec![1], 5)
        ]
    );
    let analysis = hyscope_analyzer::analyze(&dir, &Default::default()).unwrap();
    let mut sites: Vec<String> = analysis
        .mpi
        .get()
        .unwrap()
        .callsites
        .iter()
        .filter(|c| c.call == "MPI_Allreduce")
        .map(|c| c.location.as_ref().unwrap().label.clone())
        .collect();
    sites.sort();
    let line = MPMD_SRC
        .lines()
        .position(|l| l.contains("MPI_Allreduce"))
        .unwrap()
        + 1;
    assert_eq!(
        sites,
        [format!("mpmd_a.c:{line}"), format!("mpmd_b.c:{line}")]
    );
}

#[test]
fn spmd_plugins_at_swapped_addresses_merge_by_location() {
    let tmp = tempfile::tempdir().unwrap();
    let plugin = ["-shared", "-fPIC", "-Wl,-Ttext-segment=0x10000000"];
    let a = build_mpi_with(tmp.path(), "plug_a", PLUGIN_SRC, &plugin);
    let b_src = PLUGIN_SRC.replace("plug_a_run", "plug_b_run");
    let b = build_mpi_with(tmp.path(), "plug_b", &b_src, &plugin);
    let exe = build_mpi_with(tmp.path(), "spmd_plugins", SPMD_SRC, &["-no-pie", "-ldl"]);
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&exe)
        .arg(&a)
        .arg(&b)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // What the test is about: the plugin loaded first is at the preferred
    // address, A on rank 0 and B on rank 1; the other is elsewhere.
    let trace = Trace::open(&dir).unwrap();
    let (r0, r1) = (region_addresses(&trace, 0), region_addresses(&trace, 1));
    assert_eq!((r0.len(), r1.len()), (2, 2), "{r0:x?} {r1:x?}");
    let shared: Vec<u64> = r0.iter().filter(|x| r1.contains(x)).copied().collect();
    assert_eq!(
        shared.len(),
        1,
        "one address on both ranks: {r0:x?} {r1:x?}"
    );
    assert_eq!(file_of(&trace, 0, shared[0]), "plug_a.c");
    assert_eq!(file_of(&trace, 1, shared[0]), "plug_b.c");
    let line = pragma_line(PLUGIN_SRC);
    assert_eq!(
        regions(&dir),
        [
            (format!("plug_a.c:{line}"), vec![0, 1], 4),
            (format!("plug_b.c:{line}"), vec![0, 1], 6)
        ]
    );
}

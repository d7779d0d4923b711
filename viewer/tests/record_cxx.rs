//! A C++ MPI+OpenMP program built without debug information: its parallel
//! region and its MPI call sites have only the symbol table's mangled names,
//! and every view shows them as the source names them, while `report --json`
//! keeps the raw symbol. Known answers: one region per rank (team of 2) in
//! `hal::Solver::relax(double*, int)`, 4 messages from rank 0 to rank 1 sent
//! from `hal::exchange(int, double*)`.

#![allow(dead_code)]

use crate::record_support;
use crate::tui_frame;
use hyscope_testkit::OutputWithin;

use hyscope_viewer::tui;

use tui_frame::render;

use std::path::{Path, PathBuf};
use std::process::Command;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const SRC: &str = r#"
#include <mpi.h>
#include <omp.h>
#include <cstdio>
namespace hal {
struct Solver {
    __attribute__((noinline)) double relax(double *v, int n);
};
double Solver::relax(double *v, int n) {
    double s = 0;
#pragma omp parallel for num_threads(2) reduction(+ : s)
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}
__attribute__((noinline)) void exchange(int rank, double *v) {
    for (int k = 0; k < 4; k++) {
        if (rank == 0) MPI_Send(v, 8, MPI_DOUBLE, 1, k, MPI_COMM_WORLD);
        else MPI_Recv(v, 8, MPI_DOUBLE, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}
}
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double v[1000];
    for (int i = 0; i < 1000; i++) v[i] = 1;
    hal::Solver solver;
    double s = solver.relax(v, 1000);
    hal::exchange(rank, v);
    if (rank == 0) std::printf("sum %g\n", s);
    MPI_Finalize();
    return 0;
}
"#;

const RELAX: &str = "hal::Solver::relax(double*, int)";
const RELAX_RAW: &str = "_ZN3hal6Solver5relaxEPdi";
const EXCHANGE: &str = "hal::exchange(int, double*)";

fn build_cxx(dir: &Path) -> PathBuf {
    let src = dir.join("cxx_app.cpp");
    std::fs::write(&src, SRC).unwrap();
    let exe = dir.join("cxx_app");
    let lib = record_support::LLVM_LIB;
    let out = Command::new("mpicxx")
        .env("OMPI_CXX", "clang++-19")
        // No -g: the names come from the symbol table only, mangled.
        .args(["-fopenmp", "-O1", "-g0"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-Wl,-rpath,{lib}"))
        .arg(format!("-L{lib}"))
        .output_within_limit()
        .unwrap();
    assert!(out.status.success(), "{}", record_support::stderr(&out));
    exe
}

#[test]
fn cxx_names_without_debug_info_are_demangled_in_every_view() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_cxx(tmp.path());
    let dir = tmp.path().join("trace");
    let out = record_support::record_into(&dir)
        .arg("mpirun")
        .args(record_support::mpirun_args(2))
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        record_support::stderr(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 1000\n");

    let report = record_support::run_ok(record_support::hyscope().arg("report").arg(&dir));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains(RELAX), "{text}");
    assert!(text.contains(&format!("MPI_Send @ {EXCHANGE}")), "{text}");
    assert!(!text.contains("_ZN3hal"), "{text}");

    let json = record_support::run_ok(
        record_support::hyscope()
            .arg("report")
            .arg("--json")
            .arg(&dir),
    );
    let json = String::from_utf8_lossy(&json.stdout);
    // The readable label for people, the raw symbol kept for tools.
    assert!(json.contains(RELAX), "{json}");
    assert!(json.contains(RELAX_RAW), "{json}");

    let mut app = tui::app::App::new(tui::data::Data::open_blocking(&dir).unwrap());
    assert!(
        app.data.analysis().is_some(),
        "{}",
        app.data.analysis_status()
    );
    app.on_key(KeyEvent::new(KeyCode::Char('3'), KeyModifiers::NONE));
    let s = render(&mut app, 140, 30);
    assert!(s.contains(RELAX), "{s}");
    assert!(!s.contains("_ZN3hal"), "{s}");
}

//! The TUI on a real trace: a small MPI+OpenMP program built with mpicc +
//! clang-19, recorded with the real `hyscope record` under the real `mpirun`
//! (2 ranks × 2 threads), then every tab rendered with ratatui's `TestBackend`.
//!
//! Known answers: 3 parallel regions per rank with a `schedule(static)` loop of
//! 1000 iterations; rank 0 sends rank 1 five 2000-byte messages (eager under
//! Open MPI's 4096-byte vader limit); one `MPI_Allreduce` of 8 bytes per rank.

#![allow(dead_code)]

use crate::record_support;
use crate::tui_frame;
use hyscope_testkit::OutputWithin;

use hyscope_viewer::tui;

use tui_frame::render;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use tui::app::App;

const SRC: &str = r#"
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double s = 0;
    for (int r = 0; r < 3; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        {
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++) s += i * 0.5;
        }
    }
    static char buf[2000];
    for (int k = 0; k < 5; k++) {
        if (rank == 0) MPI_Send(buf, 2000, MPI_CHAR, 1, k, MPI_COMM_WORLD);
        else MPI_Recv(buf, 2000, MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
"#;

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

fn line_with<'a>(s: &'a str, what: &str) -> &'a str {
    s.lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with {what:?}:\n{s}"))
}

#[test]
fn every_tab_on_a_recorded_hybrid_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = record_support::build_mpi(tmp.path(), "tui_app", SRC);
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
    // 2 ranks × 3 regions × Σ_{i<1000} i/2
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 1.4985e+06\n");

    let mut a = App::new(tui::data::Data::open_blocking(&dir).unwrap());
    assert!(a.data.analysis().is_some(), "{}", a.data.analysis_status());

    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("ranks 2  threads/rank 2  nodes 1"), "{s}");
    assert!(s.contains("MPI       openmpi"), "{s}");
    assert!(s.contains("OpenMP    LLVM OMP"), "{s}");

    key(&mut a, KeyCode::Char('2'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("▸rank 0") && s.contains("▸rank 1"), "{s}");
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 100, 30);
    assert!(s.contains(" thread 0") && s.contains(" thread 1"), "{s}");

    key(&mut a, KeyCode::Char('3'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("OpenMP regions (1)"), "{s}");
    let row = line_with(&s, "tui_app.c");
    // 2 ranks × 3 instances, team of 2.
    assert!(row.contains(" 6 ") && row.contains(" 2 "), "{row}");

    key(&mut a, KeyCode::Char('4'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("Loops (1)"), "{s}");
    assert!(line_with(&s, "tui_app.c").contains("static"), "{s}");
    assert!(s.contains("6 instances, trip count 1000, team 2"), "{s}");
    assert!(s.contains("r0t0") && s.contains("r1t1"), "{s}");

    key(&mut a, KeyCode::Char('5'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let send = line_with(&s, "MPI_Send ");
    assert!(send.contains(" 5 ") && send.contains("9.8 KiB"), "{send}");
    assert!(line_with(&s, "MPI_Recv ").contains(" 5 "), "{s}");
    let ar = line_with(&s, "MPI_Allreduce");
    assert!(ar.contains(" 2 ") && ar.contains("16 B"), "{ar}");
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("eager 5  rendezvous 0"), "{s}");
    assert!(s.contains("5 msg 9.8 KiB"), "{s}");
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("max 9.8 KiB"), "{s}");
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(
        s.contains("wait states") && s.contains("unmatched messages 0"),
        "{s}"
    );

    key(&mut a, KeyCode::Char('6'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("footprint now"), "{s}");
    assert!(line_with(&s, "│0 ").contains(" 1 "), "{s}");

    key(&mut a, KeyCode::Char('7'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    // No RAPL on these VMs: said, never shown as zero.
    assert!(s.contains("Energy: not measured"), "{s}");
}

//! The TUI's Differences tab (`hyscope tui A B`) on two real traces: one
//! MPI+OpenMP program built with mpicc + clang-19, recorded twice with the
//! real `hyscope record` under the real `mpirun` (2 ranks each), its
//! arguments changing what it does in a known way:
//!
//! - A: `cmp 5 2`: 5 messages of 2000 bytes from rank 0 to rank 1, three
//!   parallel regions of 2 threads;
//! - B: `cmp 8 1 extra`: 8 messages, the regions on 1 thread, and one more
//!   region (line 19) that A does not run.
//!
//! The tab must show the caveat (other thread counts) before the rows, the
//! rows of `hyscope report A B` cell for cell, and the region only in B.

#![allow(dead_code)]

use std::path::Path;

use crate::record_support;
use crate::tui_frame;
use hyscope_testkit::OutputWithin;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hyscope_viewer::tui;
use tui::app::{App, Tab};
use tui_frame::render;

const SRC: &str = r#"#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int msgs = atoi(argv[1]), threads = atoi(argv[2]);
    double s = 0;
    for (int r = 0; r < 3; r++) {
#pragma omp parallel num_threads(threads) reduction(+ : s)
        {
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++) s += i * 0.5;
        }
    }
    if (argc > 3) {
#pragma omp parallel num_threads(threads) reduction(+ : s)
        s += 1;
    }
    static char buf[2000];
    for (int k = 0; k < msgs; k++) {
        if (rank == 0) MPI_Send(buf, 2000, MPI_CHAR, 1, k, MPI_COMM_WORLD);
        else MPI_Recv(buf, 2000, MPI_CHAR, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"#;

fn record(exe: &Path, dir: &Path, args: &[&str]) {
    let out = record_support::record_into(dir)
        .arg("mpirun")
        .args(record_support::mpirun_args(2))
        .arg(exe)
        .args(args)
        .output_within_limit()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        record_support::stderr(&out)
    );
}

/// The words of a line, the table's borders left out.
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// The `n` rows of the report's differences table (under its rule), as
/// words.
fn report_rows(text: &str, n: usize) -> Vec<Vec<String>> {
    let rule = text
        .lines()
        .position(|l| l.trim_start().starts_with('─'))
        .unwrap_or_else(|| panic!("no table in\n{text}"));
    text.lines().skip(rule + 1).take(n).map(words).collect()
}

#[test]
fn differences_of_two_recorded_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = record_support::build_mpi(tmp.path(), "cmp", SRC);
    let (a, b) = (tmp.path().join("A"), tmp.path().join("B"));
    record(&exe, &a, &["5", "2"]);
    record(&exe, &b, &["8", "1", "extra"]);

    let mut data = tui::data::Data::open_blocking(&a).unwrap();
    data.compare_with(&b, true).unwrap();
    let mut app = App::new(data);
    assert!(
        app.data.comparison().is_some(),
        "{}",
        app.data.comparison_status()
    );
    app.on_key(KeyEvent::new(KeyCode::Char('8'), KeyModifiers::NONE));
    assert_eq!(app.tab, Tab::Differences);

    // Wide and tall enough for every row: the report's rows, cell for cell.
    let s = render(&mut app, 220, 120);
    println!("{s}");
    let text = record_support::run_ok(record_support::hyscope().arg("report").arg(&a).arg(&b));
    let text = String::from_utf8(text.stdout).unwrap();
    println!("{text}");
    let tui: Vec<Vec<String>> = s.lines().map(words).collect();
    let c = app.data.comparison().unwrap();
    let n = c.rows.iter().filter(|r| r.a != 0.0 || r.b != 0.0).count();
    assert!(n > 20, "{n} rows");
    let rows = report_rows(&text, n);
    for r in &rows {
        assert!(tui.contains(r), "the report's row {r:?} is not in\n{s}");
    }
    assert!(
        s.contains(&format!("Differences (B − A): {} rows", rows.len())),
        "{s}"
    );
    // The known differences.
    let row = |item: &str, metric: &str| -> Vec<String> {
        tui.iter()
            .find(|w| w.join(" ").starts_with(item) && w.contains(&metric.to_string()))
            .unwrap_or_else(|| panic!("no {item} {metric} row in\n{s}"))
            .clone()
    };
    let send = row("MPI_Send", "count");
    assert_eq!(
        send[..7],
        ["MPI_Send", "count", "5", "8", "+3", "1.60", "exact"],
        "{send:?}"
    );
    let sent = row("MPI_Send", "sent");
    assert_eq!(
        sent[2..7],
        ["9.8", "KiB", "15.6", "KiB", "+5.9"],
        "{sent:?}"
    );
    let p2p = row("point-to-point messages", "count");
    assert_eq!(p2p[3..8], ["5", "8", "+3", "1.60", "exact"], "{p2p:?}");
    // The counts differ: each call's time beside them, in the next row,
    // with its verdict (5 and 8 calls: a scatter to weigh it against).
    let next = |item: &str, metric: &str| -> Vec<String> {
        let at = tui
            .iter()
            .position(|w| w.join(" ").starts_with(item) && w.contains(&metric.to_string()))
            .unwrap_or_else(|| panic!("no {item} {metric} row in\n{s}"));
        tui[at + 1].clone()
    };
    for (item, count, per) in [
        ("MPI_Send", "count", "time/call"),
        ("MPI_Recv", "count", "time/call"),
        (
            "point-to-point messages",
            "send-to-recv",
            "send-to-recv/msg",
        ),
    ] {
        let w = next(item, count);
        assert!(
            w.join(" ").starts_with(item) && w.contains(&per.to_string()),
            "{w:?}"
        );
        let verdict = w.last().unwrap();
        assert!(verdict == "within" || verdict == "beyond", "{w:?}");
    }
    // Regions and loops: their instances (3 on each rank in both runs,
    // exact) and their times weighed against them.
    for (item, count) in [
        ("region cmp.c:12", "instances"),
        ("loop cmp.c:14", "instances"),
    ] {
        let w = row(item, count);
        assert_eq!(
            w[2..],
            ["instances", "6", "6", "0", "1.00", "exact"],
            "{w:?}"
        );
        let time = row(item, "time");
        let verdict = time.last().unwrap();
        assert!(verdict == "within" || verdict == "beyond", "{time:?}");
    }
    assert!(
        !tui.iter().any(|w| {
            w.first().is_some_and(|i| i == "region" || i == "loop")
                && w.contains(&"time/instance".to_string())
        }),
        "the same instances: {s}"
    );
    assert!(!s.contains("`—` on"), "every row has a verdict: {s}");
    // The caveat first, then the rows, then what only B has.
    let at = |what: &str| {
        s.find(what)
            .unwrap_or_else(|| panic!("no {what:?} in\n{s}"))
    };
    assert!(at("Not comparable as they stand") < at("Differences (B − A)"));
    assert!(
        at("! different thread counts: A ran up to 2 OpenMP threads per rank, B 1")
            < at("Differences (B − A)"),
        "{s}"
    );
    assert!(at("Differences (B − A)") < at("Only in B: region cmp.c:19"));
    assert!(!s.contains("Only in A"), "{s}");

    // 80 × 24: the caveats first, the rows scrolled to with the keys.
    let s = render(&mut app, 80, 24);
    println!("{s}");
    assert!(s.contains("! different thread counts"), "{s}");
    assert!(s.contains("more rows (↓ PgDn)"), "{s}");
    for _ in 0..60 {
        app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    let s = render(&mut app, 80, 24);
    println!("{s}");
    // The last row at the bottom of the table (its item may be clipped,
    // its last columns left out, at this width).
    let last = &rows.last().unwrap()[0];
    let end = s
        .lines()
        .position(|l| l.contains("more rows (↑ PgUp)"))
        .unwrap();
    let bottom = s
        .lines()
        .skip(end)
        .position(|l| l.starts_with('└'))
        .unwrap();
    let row = s.lines().nth(end + bottom - 1).unwrap();
    let first = words(row)[0].clone();
    assert!(
        last.starts_with(first.trim_end_matches('…')),
        "{last:?} not last in\n{s}"
    );
    assert!(!s.contains("more rows (↓ PgDn)"), "{s}");
    assert!(s.contains("more rows (↑ PgUp)"), "{s}");
}

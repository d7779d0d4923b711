//! Render tests of every TUI tab with ratatui's `TestBackend` on a small
//! synthetic trace with known numbers (see `tui_common.rs`).

#![allow(dead_code)]

#[path = "tui_common.rs"]
mod common;
#[path = "../src/tui.rs"]
mod tui;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use tui::app::{App, Tab};

fn app(name: &str) -> App {
    let dir = common::write_trace(name);
    App::new(tui::data::Data::open_blocking(&dir).expect("open trace"))
}

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

/// Draw one frame of `w`×`h` and return it as text, one line per row.
fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| tui::draw::draw(f, app)).unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn summary_tab() {
    let mut a = app("summary");
    assert!(a.data.analysis().is_some(), "{}", a.data.analysis_status());
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("1 Summary"));
    assert!(s.contains("./hybrid --small"));
    assert!(s.contains("ranks 2  threads/rank 2  nodes 1  duration 10.00 ms"));
    assert!(s.contains("openmpi Open MPI v4.1.4 (thread level funneled)"));
    assert!(s.contains("rapl (perf power PMU: energy-psys reads 0)"));
    assert!(s.contains("POP efficiency"));
    assert!(s.contains("Findings"));
}

fn all_tabs_fit(a: &mut App) {
    // Every tab draws in 80×24 without panicking and keeps its footer.
    for t in Tab::ALL {
        a.tab = t;
        let s = render(a, 80, 24);
        assert!(s.contains("? help"), "{t:?} at 80×24:\n{s}");
    }
}

#[test]
fn timeline_tab() {
    let mut a = app("timeline");
    key(&mut a, KeyCode::Char('2'));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(
        s.contains("Timeline 0 ns – 10.00 ms (10.00 ms shown)"),
        "{s}"
    );
    assert!(s.contains("▸rank 0") && s.contains("▸rank 1"));
    // The cursor starts at the first cell: rank 0 is in MPI_Init_thread (0 – 0.9 ms).
    assert!(
        s.contains("rank 0 thread 0: MPI_Init_thread [MPI other] 900.0 µs at 0 ns"),
        "{s}"
    );
    // Expand rank 0 to its threads, zoom in twice around the cursor.
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char('+'));
    key(&mut a, KeyCode::Char('+'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("(2.50 ms shown)"), "{s}");
    assert!(s.contains("▾rank 0") && s.contains(" thread 1"));
    // Move the cursor to 2.0 ms (thread 1 waits in region 0's loop barrier 1.801–2.249 ms).
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    let cell = a.timeline.cell_ns();
    while (a.timeline.cursor_time().0 as f64) < 2.0e6 - cell / 2.0 {
        key(&mut a, KeyCode::Right);
    }
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(
        s.contains("rank 0 thread 1: sync_wait (barrier_implicit_workshare) [barrier wait]"),
        "{s}"
    );
    // Select a range with v … v and read its statistics.
    key(&mut a, KeyCode::Char('0'));
    key(&mut a, KeyCode::Home);
    a.timeline.cursor = 0;
    key(&mut a, KeyCode::Char('v'));
    a.timeline.cursor = a.timeline.columns - 1;
    key(&mut a, KeyCode::Char('v'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("range 0 ns – 10.00 ms (10.00 ms)"), "{s}");
    // Pan is bounded by the run: at full view it does not move.
    key(&mut a, KeyCode::Char('L'));
    assert_eq!((a.timeline.t0, a.timeline.t1), (0, common::END));
    all_tabs_fit(&mut a);
}

#[test]
fn openmp_tab() {
    let mut a = app("openmp");
    key(&mut a, KeyCode::Char('3'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    // 2 ranks × 4 instances of 1.5 ms; fork/join = region − master implicit task = 20 µs each.
    assert!(s.contains("0x401000"), "{s}");
    let row = s.lines().find(|l| l.contains("0x401000")).unwrap();
    assert!(row.contains(" 8 ") && row.contains(" 2 "), "{row}");
    assert!(
        row.contains("12.00 ms") && row.contains("160.0 µs"),
        "{row}"
    );
    assert!(s.contains("time▼"));
    // Sort by the next column, then drill down into the threads.
    key(&mut a, KeyCode::Char('s'));
    let s = render(&mut a, 100, 30);
    assert!(s.contains("fork/join▼"), "{s}");
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("threads of 0x401000"), "{s}");
    assert_eq!(
        s.lines()
            .filter(|l| l.contains("│0    ") || l.contains("│1    "))
            .count(),
        4,
        "{s}"
    );
}

#[test]
fn loops_tab() {
    let mut a = app("loops");
    key(&mut a, KeyCode::Char('4'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let row = s.lines().find(|l| l.contains("0x402000")).unwrap();
    assert!(row.contains("static"), "{row}");
    // Thread 0 works 1.19 ms and thread 1 0.78 ms in each of 4 instances.
    assert!(s.contains("r0t0") && s.contains("4.76 ms"), "{s}");
    assert!(s.contains("r0t1") && s.contains("3.12 ms"), "{s}");
    assert!(s.contains("trip count 1000"), "{s}");
    let l = &a.data.analysis().unwrap().loops.get().unwrap()[0];
    let r = l.recommendation.get().expect("a recommendation");
    assert!(s.contains(&r.clause), "{s}");
    assert!(s.contains(&format!("{:.2}×", r.predicted_speedup)), "{s}");
}

#[test]
fn mpi_tab() {
    let mut a = app("mpi");
    key(&mut a, KeyCode::Char('5'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let send = s.lines().find(|l| l.contains("MPI_Send")).unwrap();
    // 10 × 1 KiB + 1 MiB in 11 calls.
    assert!(send.contains(" 11 ") && send.contains("1.01 MiB"), "{send}");
    let ar = s.lines().find(|l| l.contains("MPI_Allreduce")).unwrap();
    assert!(ar.contains(" 4 ") && ar.contains("32 B"), "{ar}");
    // Filter to one call.
    key(&mut a, KeyCode::Char('/'));
    for c in "allred".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 100, 30);
    assert!(
        s.contains("MPI calls (1)") && !s.contains("MPI_Send"),
        "{s}"
    );
    assert!(s.contains("filter: allred"));
    key(&mut a, KeyCode::Esc);
    // Sizes: 10 eager (1 KiB < 4096 B), 1 rendezvous (1 MiB).
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("eager limit 4.0 KiB"), "{s}");
    assert!(s.contains("eager 10  rendezvous 1"), "{s}");
    assert!(
        s.contains("10 msg 10.0 KiB") && s.contains("1 msg 1.00 MiB"),
        "{s}"
    );
    // Matrix: only 0 → 1 carries bytes.
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(s.contains("max 1.01 MiB"), "{s}");
    let r0 = s.lines().find(|l| l.contains("│   0 ")).unwrap();
    let r1 = s.lines().find(|l| l.contains("│   1 ")).unwrap();
    assert!(r0.contains("███") && !r1.contains("███"), "{s}");
    // Wait states: each receive is posted 20 µs before its send.
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let ls = s
        .lines()
        .find(|l| l.contains("late sender") && l.contains("×"))
        .unwrap();
    assert!(ls.contains("200.0 µs ×10"), "{ls}");
}

#[test]
fn memory_tab() {
    let mut a = app("memory");
    key(&mut a, KeyCode::Char('6'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    // RSS 10 MiB before and 30 MiB after MPI_Init on both ranks.
    let r0 = s.lines().find(|l| l.starts_with("│0 ")).unwrap();
    assert!(r0.contains("30.00 MiB") && r0.contains("20.00 MiB"), "{r0}");
    assert!(s.contains("1 048 576 rk"), "{s}");
    let m = a.data.analysis().unwrap().memory.get().unwrap();
    let p = m.projections.last().unwrap();
    assert!(
        s.contains(&tui::fmt::bytes(p.total_bytes_per_rank)[..5]),
        "{s}"
    );
}

#[test]
fn energy_tab_and_help() {
    let mut a = app("energy");
    key(&mut a, KeyCode::Char('7'));
    let s = render(&mut a, 80, 24);
    println!("{s}");
    assert!(s.contains("Energy: not measured"), "{s}");
    assert!(s.contains("energy-psys reads 0"), "{s}");
    key(&mut a, KeyCode::Char('?'));
    let s = render(&mut a, 80, 24);
    println!("{s}");
    assert!(
        s.contains("Keys — any key closes") && s.contains("zoom in / out"),
        "{s}"
    );
    key(&mut a, KeyCode::Char('x'));
    assert!(!a.help);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.tab, Tab::Summary);
    key(&mut a, KeyCode::Char('q'));
    assert!(a.quit);
}

//! Render tests of every TUI tab with ratatui's `TestBackend` on a small
//! synthetic trace with known numbers (see `tui_common/mod.rs`).

#![allow(dead_code)]

use crate::tui_common;
use crate::tui_frame;

use hyscope_viewer::{tui, units};
use tui::fmt;

use tui_frame::render;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use tui::app::{App, Tab};

fn app(name: &str) -> App {
    let dir = tui_common::write_trace(name);
    App::new(tui::data::Data::open_blocking(&dir).expect("open trace"))
}

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
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

#[test]
fn summary_tab_shows_a_partial_trace_first() {
    let dir = tui_common::write_trace("summary-partial");
    std::fs::remove_dir_all(dir.join("mpi/rank=1")).unwrap();
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    assert!(a.data.analysis().is_some(), "{}", a.data.analysis_status());
    let s = render(&mut a, 120, 34);
    println!("{s}");
    let lines: Vec<&str> = s.lines().collect();
    let title = lines
        .iter()
        .position(|l| l.contains("PARTIAL TRACE: the numbers below leave out what is listed here"))
        .expect("integrity block");
    let problem = lines
        .iter()
        .position(|l| l.contains("! rank 1, mpi/rank=1: manifest.json lists"))
        .expect("the problem");
    let run = lines
        .iter()
        .position(|l| l.contains("Run — "))
        .expect("run facts");
    assert!(title < problem && problem < run, "{s}");
    assert!(s.contains("has no part"), "{s}");
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
    // The statistics name the row they are for (the thread selected above).
    assert!(
        s.contains("range 0 ns – 10.00 ms (10.00 ms), rank 0 thread 1: "),
        "{s}"
    );
    // Pan is bounded by the run: at full view it does not move.
    key(&mut a, KeyCode::Char('L'));
    assert_eq!((a.timeline.t0, a.timeline.t1), (0, tui_common::END));
    all_tabs_fit(&mut a);
}

/// A profile-mode trace has no OpenMP intervals to draw: the timeline says
/// so, or its rows would read as serial code.
#[test]
fn timeline_of_a_profile_mode_trace_says_what_is_missing() {
    let dir = tui_common::write_trace("profile-timeline");
    let mut m = hyscope_format::Manifest::read(&dir).unwrap();
    m.mode = "profile".into();
    m.write(&dir).unwrap();
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    key(&mut a, KeyCode::Char('2'));
    let s = render(&mut a, 160, 20);
    let title = s.lines().find(|l| l.contains("┌Timeline")).unwrap();
    assert!(title.contains("profile mode: OpenMP totals only"), "{s}");

    let mut a = app("trace-timeline");
    key(&mut a, KeyCode::Char('2'));
    let s = render(&mut a, 160, 20);
    assert!(!s.contains("profile mode"), "{s}");
}

#[test]
fn openmp_tab() {
    let mut a = app("openmp");
    key(&mut a, KeyCode::Char('3'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    // 2 ranks × 4 instances of 1.5 ms; fork/join = region − master implicit task = 20 µs each.
    assert!(s.contains("hybrid.c:40"), "{s}");
    let row = s.lines().find(|l| l.contains("hybrid.c:40")).unwrap();
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
    assert!(s.contains("threads of hybrid.c:40"), "{s}");
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
    let row = s.lines().find(|l| l.contains("hybrid.c:42")).unwrap();
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
    // Received, as in the report: the receives' 1.01 MiB after their 0 B sent.
    assert!(
        s.lines()
            .any(|l| l.contains(" sent ") && l.contains(" received ")),
        "{s}"
    );
    let recv = s.lines().find(|l| l.contains("MPI_Recv")).unwrap();
    let (sent, received) = (recv.find(" 0 B").unwrap(), recv.find("1.01 MiB"));
    assert!(received.is_some_and(|r| r > sent), "{recv}");
    // The MPI time is a share of the ranks' time, not of the run's.
    let m = a.data.analysis().unwrap().mpi.get().unwrap();
    let total = format!(
        "MPI total {} ({} of rank time)",
        units::secs(m.total_s),
        units::percent(m.share_of_run)
    );
    assert!(s.contains(&total), "no `{total}` in\n{s}");
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
    assert!(s.contains("eager ≤ 4.0 KiB from vader"), "{s}");
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
    assert!(s.contains("1.05 M rk"), "{s}");
    projection_rows_are_whole(&a, &s);
    // The model's parameters read as the report's: bytes formatted, never raw.
    let s = render(&mut a, 200, 60);
    println!("{s}");
    assert!(
        s.contains("eager RDMA buffers per connection = 384.0 KiB"),
        "{s}"
    );
    assert!(s.contains("per-peer receive queue = 32.0 KiB"), "{s}");
    assert!(s.contains("memory per queue pair = 32.1 KiB"), "{s}");
    assert!(!s.contains(" bytes"), "{s}");
    // At the smallest supported frame nothing of a projection row is cut.
    let s = render(&mut a, 80, 24);
    println!("{s}");
    projection_rows_are_whole(&a, &s);
    // and no cell of the per-rank table is cut (a column that does not fit
    // is left out whole): the connections read whole where they are shown.
    let m = a.data.analysis().unwrap().memory.get().unwrap().clone();
    for r in &m.per_rank {
        let row = s
            .lines()
            .find(|l| l.starts_with(&format!("│{} ", r.rank)))
            .unwrap_or_else(|| panic!("rank {}: {s}", r.rank));
        let conn = format!("{}+{}", r.intra_node_connections, r.inter_node_connections);
        let whole = match r.connections_measured {
            Some(c) => format!("{conn} ({c} meas.)"),
            None => conn.clone(),
        };
        assert!(
            !row.contains(&format!(" {conn}")) || row.contains(&whole),
            "connections cut: {row}\n{s}"
        );
    }
}

/// Each projection of the memory tab in the frame `s` reads as the report's
/// row: the ranks as the report writes them, then the whole total per rank
/// (formatted, unit included) at the end of its bar, and on its own line the
/// shared-memory and network buffers, queue pairs and group maps the total
/// is the sum of.
fn projection_rows_are_whole(a: &App, s: &str) {
    let analysis = a.data.analysis().unwrap();
    let m = analysis.memory.get().unwrap();
    let report = hyscope_viewer::report::render(analysis, 10);
    let rows: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.contains("projection (memory per core"))
        .skip(3)
        .take(m.projections.len())
        .collect();
    assert_eq!(rows.len(), m.projections.len(), "{report}");
    for (p, row) in m.projections.iter().zip(rows) {
        let ranks = row.trim().split("  ").next().unwrap();
        let [total, shm, net, qps, groups] = [
            p.total_bytes_per_rank.unwrap(),
            p.shm_bytes_per_rank,
            p.network_buffer_bytes_per_rank.unwrap(),
            p.qp_bytes_per_rank.unwrap(),
            p.group_bytes_per_rank,
        ]
        .map(units::bytes);
        assert!(
            row.contains(&total) && row.contains(&shm) && row.contains(&net) && row.contains(&qps),
            "{row}"
        );
        assert_eq!(
            p.total_bytes_per_rank.unwrap(),
            p.buffer_bytes_per_rank.unwrap()
                + p.qp_bytes_per_rank.unwrap()
                + p.group_bytes_per_rank
        );
        assert_eq!(
            p.buffer_bytes_per_rank.unwrap(),
            p.shm_bytes_per_rank + p.network_buffer_bytes_per_rank.unwrap()
        );
        let bar = s
            .lines()
            .find(|l| l.contains(&format!("│{ranks} rk ")) || l.contains(&format!(" {ranks} rk ")))
            .unwrap_or_else(|| panic!("no row for {ranks} ranks:\n{s}"));
        assert!(bar.contains(&format!(" {total}│")), "{total}: {bar}\n{s}");
        let parts = format!("shm {shm}  net {net}  QPs {qps}  groups {groups}");
        assert!(
            s.contains(&format!("{parts} ")) || s.contains(&format!("{parts}│")),
            "{parts}\n{s}"
        );
    }
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

#[test]
fn timeline_mouse() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut a = app("mouse");
    key(&mut a, KeyCode::Char('2'));
    render(&mut a, 100, 30);
    let area = a.last_timeline_area;
    // Data columns start after the border and the 12-column label.
    let x0 = area.x + 1 + 12;
    let ev = |kind, column, row| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    // Wheel up over the middle column zooms in around it.
    let mid = x0 + a.timeline.columns / 2;
    let before = a.timeline.time_at(a.timeline.columns / 2);
    a.on_mouse(ev(MouseEventKind::ScrollUp, mid, area.y + 3));
    assert_eq!(a.timeline.t1 - a.timeline.t0, tui_common::END / 2);
    let after = a.timeline.time_at(a.timeline.columns / 2);
    assert!(
        (after - before).abs() <= 2 * a.timeline.cell_ns() as i64,
        "{before} {after}"
    );
    a.on_mouse(ev(MouseEventKind::ScrollDown, mid, area.y + 3));
    assert_eq!((a.timeline.t0, a.timeline.t1), (0, tui_common::END));
    // Drag from column 0 to column 9 of rank 1's row: a 10-cell range.
    a.on_mouse(ev(MouseEventKind::Down(MouseButton::Left), x0, area.y + 3));
    assert_eq!(a.timeline.row, 1);
    a.on_mouse(ev(
        MouseEventKind::Drag(MouseButton::Left),
        x0 + 9,
        area.y + 3,
    ));
    a.on_mouse(ev(
        MouseEventKind::Up(MouseButton::Left),
        x0 + 9,
        area.y + 3,
    ));
    let (s0, s1) = a.timeline.selection.expect("a range");
    assert_eq!((s0, s1), (0, a.timeline.time_at(10)));
    let s = render(&mut a, 100, 30);
    assert!(s.contains("rank 1 thread 0:"), "{s}");
    assert!(
        s.contains(&format!("range 0 ns – {}", units::ns(s1 as f64))),
        "{s}"
    );
}

/// Like [`render`], but every shaded cell shows the letter of its state colour
/// (s serial, c compute, r OpenMP runtime, b barrier wait, l lock, t task,
/// p MPI p2p, o collective, w MPI wait, m other MPI), so snapshots keep the colours.
fn render_states(app: &mut App, w: u16, h: u16) -> String {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::Color;
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| tui::draw::draw(f, app)).unwrap();
    if app.timeline.detail.wait() {
        term.draw(|f| tui::draw::draw(f, app)).unwrap();
    }
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            let c = &buf[(x, y)];
            let sym = c.symbol();
            let shaded = matches!(sym, "█" | "▓" | "▒" | "░");
            let letter = match c.fg {
                Color::DarkGray => "s",
                Color::Green => "c",
                Color::Yellow => "r",
                Color::Red => "b",
                Color::Magenta => "l",
                Color::LightGreen => "t",
                Color::Blue => "p",
                Color::Cyan => "o",
                Color::LightBlue => "w",
                Color::Gray => "m",
                _ => sym,
            };
            out.push_str(if shaded { letter } else { sym });
        }
        out.push('\n');
    }
    out
}

#[test]
fn timeline_states() {
    // Region 0 on rank 0: 1.0–2.5 ms; thread 1 computes until 1.8 ms then waits in the barrier.
    let mut a = app("states");
    key(&mut a, KeyCode::Char('2'));
    key(&mut a, KeyCode::Enter);
    for _ in 0..2 {
        key(&mut a, KeyCode::Char('+'));
    }
    let s = render_states(&mut a, 80, 24);
    println!("{s}");
    let t1 = s.lines().find(|l| l.contains(" thread 1")).unwrap();
    assert!(t1.contains("cccc") && t1.contains("bbbb"), "{t1}");
    let r0 = s.lines().find(|l| l.contains("rank 0")).unwrap();
    assert!(r0.contains('m') && r0.contains('c'), "{r0}");
    insta::assert_snapshot!("timeline_states_80x24", s);
}

#[test]
fn snapshots() {
    // Tabs whose text depends only on the trace and the drawing code.
    let mut a = app("snapshots");
    key(&mut a, KeyCode::Char('2'));
    key(&mut a, KeyCode::Enter);
    insta::assert_snapshot!("timeline_80x24", render(&mut a, 80, 24));
    key(&mut a, KeyCode::Char('5'));
    key(&mut a, KeyCode::Right);
    insta::assert_snapshot!("mpi_sizes_80x24", render(&mut a, 80, 24));
    key(&mut a, KeyCode::Char('7'));
    insta::assert_snapshot!("energy_80x24", render(&mut a, 80, 24));
}

#[test]
fn memory_over_time() {
    let mut a = app("memory-time");
    key(&mut a, KeyCode::Char('6'));
    key(&mut a, KeyCode::Right);
    let s = render(&mut a, 100, 30);
    println!("{s}");
    assert!(
        s.contains("MPI connections") && s.contains("resident memory (VmRSS)"),
        "{s}"
    );
    // y axes end at the largest sample: 1 connection, 40 MiB.
    let conn = s
        .lines()
        .skip_while(|l| !l.contains("MPI connections"))
        .take(3)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(conn.contains("│1"), "{conn}");
    assert!(s.contains("40.00 MiB"), "{s}");
    // The x axis is the run's (its charts share it): it ends at the run's
    // duration, 10 ms, after the last sample at 9.5 ms.
    assert!(s.contains("10.00 ms"), "{s}");
    // No MPI_T samples in this trace: said so.
    assert!(s.contains("no samples of this metric"), "{s}");
    let _ = render(&mut a, 80, 24);
}

#[test]
fn energy_measured() {
    let dir = tui_common::write_trace_with_energy("energy-measured");
    let mut a = App::new(tui::data::Data::open_blocking(&dir).unwrap());
    key(&mut a, KeyCode::Char('7'));
    let s = render(&mut a, 100, 30);
    println!("{s}");
    // 1 J over 10 ms.
    assert!(s.contains("total 1.00 J  average power 100.0 W"), "{s}");
    assert!(s.contains("power over time (W)"), "{s}");
    // Both intervals are 0.5 J in 5 ms: the chart's top label is 100.0 W.
    assert!(s.contains("100.0 W│") || s.contains("100.0 W "), "{s}");
    assert!(s.contains("energy.pkg #0") && s.contains("1.00 J"), "{s}");
    // The step covers the whole run: drawn from the first column of the plot.
    let line = s.lines().find(|l| l.contains('⠒')).unwrap();
    assert!(
        line.contains("│⠒") || line.contains("│⠉") || line.contains("│⠤"),
        "{line}"
    );
    let _ = render(&mut a, 80, 24);
}

/// The analysis's warnings are on the summary, as in the report's Warnings
/// section (a recorded libomp run: the join barriers clipped at the end of
/// each region).
#[test]
fn summary_tab_shows_the_analysis_warnings() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analyzer/tests/fixtures/hybrid-2x2");
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let warnings = a.data.analysis().expect("analysed").warnings.clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("clipped 16 worker join-barrier intervals"));
    let s = render(&mut a, 160, 30);
    assert!(
        s.contains(
            "warnings  clipped 16 worker join-barrier intervals at the master's parallel end"
        ),
        "{s}"
    );
}

/// The help box as (key, explanation) pairs, read off the frame: the key
/// column, and the explanation with its wrapped lines joined.
fn help_entries(s: &str) -> Vec<(String, String)> {
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let top = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains("┌Keys"))
        .expect("the help box");
    let x0 = lines[top].iter().position(|&c| c == '┌').unwrap();
    let x1 = x0 + lines[top][x0..].iter().position(|&c| c == '┐').unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for l in &lines[top + 1..] {
        if l[x0] == '└' {
            return out;
        }
        let inner: String = l[x0 + 1..x1].iter().collect();
        let (k, v) = inner.split_at(inner.char_indices().nth(22).unwrap().0);
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        match out.last_mut() {
            Some(last) if k.is_empty() => {
                last.1.push(' ');
                last.1.push_str(&v);
            }
            _ => out.push((k, v)),
        }
    }
    panic!("the help box is cut at the bottom:\n{s}");
}

/// Every line of the help is there in full: on a wide terminal in a box
/// as wide as its longest line, on 80×24 wrapped.
#[test]
fn the_help_shows_every_line_in_full() {
    let mut a = app("help");
    key(&mut a, KeyCode::Char('?'));
    for (w, h) in [(200, 50), (80, 24)] {
        let s = render(&mut a, w, h);
        println!("{s}");
        let shown = help_entries(&s);
        let want: Vec<(String, String)> = tui::app::HELP
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(shown, want, "at {w}×{h}:\n{s}");
    }
}

/// Ctrl-C quits with the help open, as the help says.
#[test]
fn ctrl_c_quits_with_the_help_open() {
    let mut a = app("keys");
    key(&mut a, KeyCode::Char('?'));
    assert!(a.help);
    a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(a.quit, "Ctrl-C with the help open did not quit");
}

/// Enter opens nothing on the Loops tab (whose footer does not offer it),
/// so Esc then clears the filter as documented; on OpenMP Enter opens the
/// threads and Esc closes them first.
#[test]
fn enter_opens_nothing_on_loops_and_esc_clears_the_filter() {
    let mut a = app("keys-esc");
    key(&mut a, KeyCode::Char('4'));
    let s = render(&mut a, 100, 30);
    let footer = s.lines().last().unwrap();
    assert!(!footer.contains('⏎'), "{footer}");
    key(&mut a, KeyCode::Char('/'));
    key(&mut a, KeyCode::Char('x'));
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.filter, "x");
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.filter, "", "Esc on Loops did not clear the filter");

    key(&mut a, KeyCode::Char('3'));
    let s = render(&mut a, 100, 30);
    assert!(s.lines().last().unwrap().contains("⏎ threads"), "{s}");
    key(&mut a, KeyCode::Char('/'));
    key(&mut a, KeyCode::Char('0'));
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Enter);
    assert!(a.nav().detail);
    key(&mut a, KeyCode::Esc);
    assert!(!a.nav().detail);
    assert_eq!(a.filter, "0");
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.filter, "");
}

/// Zoomed in to a few ns per cell, the ruler's times take the decimals
/// that tell them apart (as the GUI's, `units::ns_tick`).
#[test]
fn the_ruler_adds_decimals_when_zoomed_in() {
    let mut a = app("ruler");
    key(&mut a, KeyCode::Char('2'));
    render(&mut a, 100, 30);
    a.timeline.cursor = a.timeline.columns / 2;
    for _ in 0..45 {
        key(&mut a, KeyCode::Char('+'));
    }
    let s = render(&mut a, 100, 30);
    println!("{s}");
    let title = s.lines().find(|l| l.contains("┌Timeline")).unwrap();
    let span = title.split("┌Timeline ").nth(1).unwrap();
    let span = &span[..span.find(" (").unwrap()];
    let (left, right) = span.split_once(" – ").unwrap();
    assert_ne!(left, right, "{title}");
    assert!(
        left.ends_with(" ms") && left.len() > "5.00 ms".len(),
        "{title}"
    );
    let ruler = s.lines().nth(2).unwrap();
    assert!(
        ruler.contains(left) && ruler.contains(right),
        "{ruler} vs {title}"
    );
}

/// The recorded 2 ranks × 2 threads trace (`analyzer/tests/fixtures`).
fn recorded() -> App {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analyzer/tests/fixtures/hybrid-2x2");
    App::new(tui::data::Data::open_blocking(&dir).expect("open trace"))
}

/// The recorded trace as if its manifest said Open MPI ran ob1 over openib
/// ([`hyscope_testkit::fixtures::over_openib`]).
fn recorded_over_openib() -> (App, tempfile::TempDir) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analyzer/tests/fixtures/hybrid-2x2");
    let (tmp, dir) = hyscope_testkit::fixtures::over_openib(&from);
    let app = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    (app, tmp)
}

/// The cells of the table whose header row contains `first`, by header
/// name: each row's text under each column, read off the frame between the
/// column's start and the next one's.
fn table_cells(s: &str, first: &str) -> Vec<Vec<(String, String)>> {
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let h = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains(first))
        .expect("the table's header");
    let head = &lines[h];
    // Columns start after a space (or the border) with a non-space.
    let starts: Vec<usize> = (1..head.len())
        .filter(|&x| head[x] != ' ' && head[x] != '│' && matches!(head[x - 1], ' ' | '│'))
        .collect();
    let end = head.iter().rposition(|&c| c == '│').unwrap();
    let cell = |l: &[char], i: usize| -> String {
        let to = starts.get(i + 1).copied().unwrap_or(end);
        l[starts[i]..to]
            .iter()
            .collect::<String>()
            .trim()
            .to_string()
    };
    let names: Vec<String> = (0..starts.len()).map(|i| cell(head, i)).collect();
    lines[h + 1..]
        .iter()
        .take_while(|l| l.first() == Some(&'│') && l[1] != ' ')
        .map(|l| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), cell(l, i)))
                .collect()
        })
        .collect()
}

/// At 80×24 the MPI profile cuts no number and no unit: every column it
/// shows holds each call's value whole (as `units` writes it), names are
/// clipped with `…`, and what does not fit moves under the table.
#[test]
fn mpi_profile_cuts_no_value_at_80x24() {
    for mut a in [app("mpi-narrow"), recorded()] {
        key(&mut a, KeyCode::Char('5'));
        let calls = a.data.analysis().unwrap().mpi.get().unwrap().calls.clone();
        for (w, h) in [(80, 24), (100, 30)] {
            let s = render(&mut a, w, h);
            println!("{s}");
            let rows = table_cells(&s, "count");
            assert_eq!(rows.len(), calls.len(), "{s}");
            let names: Vec<&str> = rows[0].iter().map(|(n, _)| n.as_str()).collect();
            for must in ["call", "count", "total▼", "sent"] {
                assert!(
                    names.contains(&must),
                    "no {must} at {w}×{h}: {names:?}\n{s}"
                );
            }
            for row in &rows {
                let name = &row[0].1;
                let c = calls
                    .iter()
                    .find(|c| {
                        c.call == *name
                            || name
                                .strip_suffix('…')
                                .is_some_and(|p| c.call.starts_with(p))
                    })
                    .unwrap_or_else(|| panic!("{name}: no such call\n{s}"));
                for (col, text) in &row[1..] {
                    let want = match col.trim_end_matches(['▲', '▼']) {
                        "count" => fmt::count(c.count),
                        "total" => units::secs(c.total_s),
                        "mean/rk" => units::secs(c.mean_rank_s),
                        "max/rk" => units::secs(c.max_rank_s),
                        "cv" => format!("{:.2}", c.cv),
                        "sent" => units::bytes(c.bytes_sent as f64),
                        "received" => units::bytes(c.bytes_recv as f64),
                        "run" => units::percent(c.share_of_run),
                        "folded" if c.folded_polls == 0 => String::new(),
                        "folded" => fmt::count(c.folded_polls),
                        other => panic!("column {other:?} at {w}×{h}\n{s}"),
                    };
                    assert_eq!(*text, want, "{} {col} at {w}×{h}\n{s}", c.call);
                }
            }
        }
        // What the table leaves out is under it, for the selected call.
        let s = render(&mut a, 80, 24);
        let rows = table_cells(&s, "count");
        if !rows[0].iter().any(|(n, _)| n == "cv") {
            assert!(s.contains("  cv "), "{s}");
        }
    }
}

/// The sort arrow stays on every OpenMP column, the narrow ones included.
#[test]
fn openmp_sort_arrow_on_every_column() {
    let mut a = app("openmp-arrow");
    key(&mut a, KeyCode::Char('3'));
    let want = [
        "time",
        "fork/join",
        "bar.wait",
        "imbal",
        "sync ovh",
        "inst",
        "team",
    ];
    for (w, h) in [(80, 24), (100, 30)] {
        for (i, col) in want.iter().enumerate() {
            let s = render(&mut a, w, h);
            assert!(s.contains(&format!("{col}▼")), "{col} at {w}×{h}\n{s}");
            key(&mut a, KeyCode::Char('S'));
            let s = render(&mut a, w, h);
            assert!(s.contains(&format!("{col}▲")), "{col} at {w}×{h}\n{s}");
            key(&mut a, KeyCode::Char('S'));
            key(&mut a, KeyCode::Char('s'));
            let _ = i;
        }
    }
}

/// The run's facts use the terminal's width: on 200 columns the MPI
/// library's version, the warning and what is missing are whole (or clipped
/// with `…` at the border, never before); on 80 clipped with `…`.
#[test]
fn summary_facts_use_the_whole_width() {
    let mut a = recorded();
    let m = a.data.manifest.clone();
    let version = m.mpi.as_ref().unwrap().library_version.clone();
    let warning = a.data.analysis().unwrap().warnings[0].clone();
    for (w, h) in [(200, 40), (80, 24)] {
        let s = render(&mut a, w, h);
        println!("{s}");
        let line = |label: &str| -> String {
            let l = s
                .lines()
                .find(|l| l.starts_with(&format!("│{label}")))
                .unwrap_or_else(|| panic!("no {label} in\n{s}"));
            let inner = l.trim_start_matches('│').trim_end_matches('│');
            assert_eq!(inner.chars().count(), w as usize - 2, "{l}");
            inner.trim_end().to_string()
        };
        // The text after the label is `text` whole, or a prefix of it
        // clipped with `…` at the border.
        let whole_or_clipped = |label: &str, text: &str| {
            let l = line(label);
            let shown = l[label.len()..].to_string();
            if shown != text {
                let p = shown
                    .strip_suffix('…')
                    .unwrap_or_else(|| panic!("{label}: `{shown}` is cut without `…` at {w}\n{s}"));
                assert!(text.starts_with(p), "{shown} vs {text}");
                assert_eq!(
                    l.chars().count(),
                    w as usize - 2,
                    "{label} clipped early\n{s}"
                );
            }
            shown == text
        };
        let missing: Vec<String> = m
            .samplers
            .iter()
            .filter(|x| !x.available)
            .map(|x| format!("{} ({})", x.name, x.reason))
            .collect();
        whole_or_clipped("missing   ", &missing.join("; "));
        whole_or_clipped("warnings  ", &warning);
        let mpi = line("MPI       ");
        if w == 200 {
            assert!(mpi.contains(&version), "{mpi}");
            assert!(whole_or_clipped("warnings  ", &warning), "{s}");
        } else {
            assert!(mpi.ends_with("… (thread level funneled)"), "{mpi}");
        }
    }
}

/// The findings' panel (the recorded trace): a filter keeps each finding's own number (the
/// report's) and says how many of all are shown; the scroll stops at the
/// end; a finding without a time cost says `—`, not `0 ns`.
#[test]
fn findings_keep_their_numbers_and_stop_at_the_end() {
    let (mut a, _trace) = recorded_over_openib();
    let findings = a.data.analysis().unwrap().findings.clone();
    let n = findings.len();
    key(&mut a, KeyCode::Char('/'));
    for c in "barrier wait".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 160, 50);
    println!("{s}");
    let shown: Vec<usize> = (0..n)
        .filter(|&i| {
            findings[i].title.to_lowercase().contains("barrier wait")
                || findings[i].category.to_lowercase().contains("barrier wait")
        })
        .collect();
    assert!(shown.len() < n && shown[0] > 0, "{shown:?}");
    assert!(
        s.contains(&format!("Findings ({} of {n})", shown.len())),
        "{s}"
    );
    for i in &shown {
        let head = format!("│{}. {}", i + 1, &findings[*i].title[..10]);
        assert!(s.contains(&head), "no `{head}` in\n{s}");
    }
    // The memory projection's finding costs no time: `—`.
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Char('/'));
    for c in "MPI memory".chars() {
        key(&mut a, KeyCode::Char(c));
    }
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 200, 50);
    println!("{s}");
    let i = findings
        .iter()
        .position(|f| f.category == "memory")
        .expect("the memory finding");
    let line = s
        .lines()
        .find(|l| l.contains(&format!("│{}. MPI memory", i + 1)))
        .unwrap_or_else(|| panic!("no memory finding in\n{s}"));
    assert!(
        line.trim_end_matches('│').trim_end().ends_with(" —"),
        "{line}"
    );
    assert!(!s.contains("0 ns (0.0 %)"), "{s}");
    // Scrolled past the end, the panel still shows the last lines, and one
    // step up moves it.
    key(&mut a, KeyCode::Esc);
    for _ in 0..50 {
        key(&mut a, KeyCode::PageDown);
    }
    let end = render(&mut a, 100, 30);
    println!("{end}");
    let panel = |s: &str| -> String {
        s.lines()
            .skip_while(|l| !l.contains("┌Findings"))
            .skip(1)
            .take_while(|l| !l.contains('└'))
            .map(|l| l.chars().skip(51).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let last = &findings[n - 1].what_to_do;
    let tail: String = last.split(' ').next_back().unwrap().to_string();
    assert!(
        panel(&end).contains(&tail),
        "`{tail}` not at the end:\n{end}"
    );
    key(&mut a, KeyCode::Down);
    assert_eq!(render(&mut a, 100, 30), end);
    key(&mut a, KeyCode::Up);
    assert_ne!(render(&mut a, 100, 30), end, "one step up did not move");
}

/// Counts read as in the report (`units::count`): `16.5 k`, not `16 478`.
#[test]
fn counts_read_as_in_the_report() {
    let dir = tui_common::write_trace("counts");
    let mut m = hyscope_format::Manifest::read(&dir).unwrap();
    m.ranks[0].events.omp += 16_000;
    m.write(&dir).unwrap();
    let events: u64 = m
        .ranks
        .iter()
        .map(|r| r.events.omp + r.events.mpi + r.events.samples)
        .sum();
    assert!(events >= 10_000);
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let s = render(&mut a, 100, 30);
    let want = format!("events    {}  dropped 0", units::count(events as f64));
    assert!(s.contains(&want), "no `{want}` in\n{s}");
    assert_eq!(fmt::count(events), units::count(events as f64));
}

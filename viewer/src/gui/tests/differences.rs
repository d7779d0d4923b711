//! The "Differences" tab of two traces opened together: what `hyscope
//! report A B` prints, in the GUI.

use std::path::Path;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use hyscope_format::{
    Manifest, MpiRecord, OmpKind, OmpRecord, PartWriter, RankInfo, Table, WriterOptions, mpi_call,
};

use super::super::app::GuiApp;
use super::super::panels::Tab;
use super::{T, TempDir, omp, open};
use crate::report::compare as report;

/// A run of `program` over `span` ns: on rank 0 thread 0 computes in the
/// region at 0x401a00 while thread 1 waits at its barrier, then sends
/// `bytes` to rank 1, which waits for them in `MPI_Recv` all along; with
/// `extra`, rank 0's threads then run a second region, at 0x402000.
fn write_run(dir: &Path, program: &str, span: i64, bytes: u64, extra: bool) {
    let o = WriterOptions::default();
    // A parallel region on thread 0 and its two implicit tasks, linked by
    // the region's id.
    let region = |id: u64, start: i64, end: i64, codeptr: u64| {
        let mut rows = vec![OmpRecord {
            parallel_id: id,
            task_id: 1,
            requested_team_size: 2,
            flags: 0x8000_0001,
            ..omp(0, OmpKind::Parallel, 0, start, end, codeptr)
        }];
        for t in 0..2 {
            rows.push(OmpRecord {
                parallel_id: id,
                task_id: 10 * id + u64::from(t),
                count: u64::from(t),
                ..omp(t, OmpKind::ImplicitTask, 0, start, end, codeptr)
            });
        }
        rows
    };
    let mut rows = region(1, T, T + span, 0x401a00);
    rows.extend([
        omp(1, OmpKind::Sync, 1, T, T + span, 0x401b00),
        omp(1, OmpKind::SyncWait, 1, T, T + span, 0x401b00),
    ]);
    if extra {
        rows.extend(region(2, T + span, T + span + span / 2, 0x402000));
    }
    let mut w = PartWriter::create(dir, Table::Omp, 0, o.clone()).unwrap();
    w.write_omp(&rows).unwrap();
    w.finish().unwrap();
    let mpi = |rank: u32, call, start_ns, end_ns, sent: u64, recv: u64| {
        let mut w = PartWriter::create(dir, Table::Mpi, rank, o.clone()).unwrap();
        w.write_mpi(&mut [MpiRecord {
            thread: 0,
            call,
            start_ns,
            end_ns,
            peer: 1 - rank as i32,
            tag: 7,
            bytes_sent: sent,
            bytes_recv: recv,
            ..MpiRecord::default()
        }])
        .unwrap();
        w.finish().unwrap();
    };
    mpi(1, mpi_call::MPI_Recv, T, T + span, 0, bytes);
    mpi(0, mpi_call::MPI_Send, T + span, T + span, bytes, 0);
    let mut m = Manifest::new();
    m.command = vec![program.into(), "100".into()];
    for rank in 0..2 {
        m.ranks.push(RankInfo {
            rank,
            host: "node0".into(),
            threads: 2,
            ..RankInfo::default()
        });
    }
    m.write(dir).unwrap();
}

/// The cells of the report's table line that starts with `item` then
/// `metric` (cells are parted by two spaces or more).
fn report_cells(text: &str, item: &str, metric: &str) -> Vec<String> {
    let table = &text[text.find("Differences (B − A)").expect("the table")..];
    table
        .lines()
        .map(|l| {
            l.trim()
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .find(|cells| {
            cells.len() == crate::report::compare::COLUMNS.len()
                && cells[0] == item
                && cells[1] == metric
        })
        .unwrap_or_else(|| panic!("no {item} {metric} row in\n{text}"))
}

/// The height of the table's row whose first cell is `item` and second
/// `metric`.
fn row_y(h: &Harness<'_, GuiApp>, item: &str, metric: &str) -> f32 {
    let y = |n: egui_kittest::Node<'_>| n.rect().center().y;
    let ys: Vec<f32> = h
        .get_all_by_label(metric)
        .map(y)
        .filter(|&m| h.get_all_by_label(item).any(|n| (y(n) - m).abs() < 2.0))
        .collect();
    assert_eq!(ys.len(), 1, "one {item} {metric} row");
    ys[0]
}

/// The table has a row of these cells, left to right.
fn assert_row(h: &Harness<'_, GuiApp>, cells: &[String]) {
    let y = row_y(h, &cells[0], &cells[1]);
    let mut left = f32::NEG_INFINITY;
    for c in cells {
        let x = h
            .get_all_by_label(c)
            .map(|n| n.rect())
            .filter(|r| (r.center().y - y).abs() < 2.0 && r.left() > left)
            .map(|r| r.left())
            .min_by(f32::total_cmp)
            .unwrap_or_else(|| panic!("no {c:?} after x = {left} in the row {cells:?}"));
        left = x;
    }
}

/// Two runs of different programs, B's region and receive twice as long
/// and its message four times as big, and a region only B has: the tab
/// opens first and shows the caveat, which run is which, each row's values
/// as the report writes them, and the region only in B; a header sorts the
/// rows; a click on the shared region highlights it on both timelines.
#[test]
fn the_differences_tab_shows_the_reports_comparison() {
    const SPAN: i64 = 1_000_000;
    let (a_dir, b_dir) = (TempDir::new("diff-a"), TempDir::new("diff-b"));
    write_run(&a_dir.0, "./k", SPAN, 1024, false);
    write_run(&b_dir.0, "./m", 2 * SPAN, 4096, true);
    let mut app = GuiApp::new(open(&a_dir.0), Some(open(&b_dir.0)), true, false);
    app.wait_loaded();
    let [a, b] = [0, 1].map(|k| app.slots[k].analysis.ready().cloned().expect("analysed"));
    let c = hyscope_analyzer::compare(&a, &b);
    let text = crate::report::render_comparison(&c);
    assert_eq!(
        app.tab,
        Tab::Differences,
        "two traces open on their differences"
    );
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(3);

    // The caveat, first and in words the report uses.
    assert_eq!(c.caveats.len(), 1, "{:?}", c.caveats);
    assert!(
        c.caveats[0].starts_with("different programs: A ran `./k 100`, B ran `./m 100`"),
        "{:?}",
        c.caveats
    );
    assert!(text.contains(&format!("! {}", c.caveats[0])));
    let title = h.get_by_label(report::NOT_COMPARABLE).rect();
    let caveat = h.get_by_label(&format!("! {}", c.caveats[0])).rect();
    let which_a = h.get_by_label_contains("A = ").rect();
    assert!(title.top() < caveat.top() && caveat.top() < which_a.top());
    // Which run is which, as the report's header says.
    for line in text.lines().skip(1).take(2) {
        h.get_by_label(line.trim());
    }
    h.get_by_label_contains(&format!("A = {}", a_dir.0.display()));
    h.get_by_label_contains(&format!("B = {}", b_dir.0.display()));

    // Every row the report lists, cell for cell.
    let shown: Vec<_> = c.rows.iter().filter(|r| report::shown(r)).collect();
    assert!(shown.len() > 5, "{text}");
    for r in &shown {
        let item = r.label();
        assert_row(&h, &report_cells(&text, &item, report::metric(&r.metric)));
    }
    // Known differences among them, written as the report writes them.
    let region = "region 0x401a00 (rank 0, unresolved)";
    let known = [
        [
            "MPI_Send", "sent", "1.0 KiB", "4.0 KiB", "+3.0 KiB", "4.00", "exact",
        ],
        // One receive a run: too few values to weigh the difference.
        [
            "MPI_Recv", "time", "1.00 ms", "2.00 ms", "+1.00 ms", "2.00", "too few",
        ],
    ];
    for cells in known {
        let cells = cells.map(String::from);
        assert_eq!(report_cells(&text, &cells[0], &cells[1]), cells);
        assert_row(&h, &cells);
    }
    assert!(shown.iter().any(|r| r.label() == region), "{text}");

    // What only B has.
    assert!(c.only_in_a.is_empty());
    let only_b = report::listed(&c.only_in_b);
    assert_eq!(only_b, "region 0x402000 (rank 0, unresolved)");
    assert!(
        text.contains(&format!("Only in B\n═════════\n  {only_b}")),
        "{text}"
    );
    h.get_by_label("Only in B");
    h.get_by_label(&only_b);

    // Sorted by B / A, largest first: the bytes (4.00) before the times (2.00).
    let y = row_y;
    assert!(y(&h, "MPI_Recv", "time") < y(&h, "MPI_Send", "sent"));
    // The last column, scrolled into view as a user would.
    h.get_by_label("B / A").scroll_to_me();
    h.run_steps(3);
    h.get_by_label("B / A").click();
    h.run_steps(3);
    h.get_by_label("B / A▼");
    assert!(y(&h, "MPI_Send", "sent") < y(&h, "MPI_Recv", "time"));

    // The shared region highlighted on both timelines.
    h.get_all_by_label(region).next().unwrap().scroll_to_me();
    h.run_steps(3);
    h.get_all_by_label(region).next().unwrap().click();
    for _ in 0..200 {
        h.run_steps(1);
        if h.state().tl.highlight.len() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut on: Vec<(usize, usize)> = h
        .state()
        .tl
        .highlight
        .iter()
        .map(|(w, _, i)| (*w, i.len()))
        .collect();
    on.sort();
    // The region's row and its two implicit tasks, in A and in B.
    assert_eq!(on, [(0, 3), (1, 3)]);
}

/// Each run's analysis restricted to a phase of its own choosing (the
/// phase box): the comparison is made again, and says when the two cover
/// different parts of the runs.
#[test]
fn a_phase_chosen_in_one_run_only_is_a_caveat() {
    use hyscope_format::PhaseRecord;
    const SPAN: i64 = 1_000_000;
    let (a_dir, b_dir) = (TempDir::new("diff-phase-a"), TempDir::new("diff-phase-b"));
    for dir in [&a_dir.0, &b_dir.0] {
        write_run(dir, "./k", SPAN, 1024, false);
        let mut w = PartWriter::create(dir, Table::Phases, 0, WriterOptions::default()).unwrap();
        w.write_records(&[PhaseRecord::api(0, "solver", T, T + SPAN / 2, 0)])
            .unwrap();
        w.finish().unwrap();
    }
    let mut app = GuiApp::new(open(&a_dir.0), Some(open(&b_dir.0)), true, false);
    app.wait_loaded();
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(2);
    assert!(h.query_by_label(report::NOT_COMPARABLE).is_none());
    let caveat = "! different parts of the runs: A covers phase solver, B the whole run (the phase box of each)";
    let restricted = |h: &mut Harness<'static, GuiApp>, which: usize| {
        h.state_mut().slots[which].set_phase(Some("solver".into()));
        h.state_mut().wait_loaded();
        h.run_steps(2);
    };
    restricted(&mut h, 0);
    h.get_by_label(report::NOT_COMPARABLE);
    h.get_by_label(caveat);
    // The rows are the new analysis's: A's duration is the phase's half.
    let [a, b] = [0, 1].map(|k| h.state().slots[k].analysis.ready().cloned().unwrap());
    let c = hyscope_analyzer::compare(&a, &b);
    let r = c.rows.iter().find(|r| r.section == "run").unwrap();
    let cells = [
        r.label(),
        report::metric(&r.metric).to_string(),
        report::value(r.unit, r.a),
        report::value(r.unit, r.b),
        report::difference(r.unit, r.delta),
        report::ratio(r.ratio),
    ];
    assert_eq!(cells[2..], ["500.0 µs", "1.00 ms", "+500.0 µs", "2.00"]);
    assert_row(&h, &cells);
    restricted(&mut h, 1);
    assert!(h.query_by_label(caveat).is_none());
    h.get_by_label("both runs restricted to phase solver");
}

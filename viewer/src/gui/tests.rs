//! UI tests with egui_kittest on a small real trace written with `PartWriter`:
//! open, zoom with the keyboard, select a range with the mouse, click an
//! interval, and check the numbers the selection panel shows.

use std::path::{Path, PathBuf};

use eframe::egui::{self, Key, Modifiers, PointerButton, Pos2};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use hyscope_format::{
    Manifest, MpiRecord, OmpKind, OmpRecord, PartWriter, RankInfo, SampleRecord, Table,
    WriterOptions, mpi_call,
};

use super::app::GuiApp;
use crate::units;

mod differences;
mod processes;

const T: i64 = 5_000_000_000;
const SPAN: i64 = 1_000_000;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("hyscope-gui-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(dir: &Path) -> hyscope_format::Trace {
    hyscope_format::Trace::open(dir).unwrap()
}

/// The timeline data of the trace in `dir`, loaded without the cache.
fn load(dir: &Path) -> super::data::TraceData {
    let progress = super::data::Progress::default();
    super::data::load_trace(&open(dir), &progress, false, std::sync::mpsc::channel().0).unwrap()
}

fn omp(thread: u32, kind: OmpKind, variant: u8, start: i64, end: i64, codeptr: u64) -> OmpRecord {
    OmpRecord {
        thread,
        kind: kind as u8,
        variant,
        start_ns: start,
        end_ns: end,
        codeptr,
        team_size: 2,
        ..OmpRecord::default()
    }
}

/// Rank 0: thread 0 computes over the whole millisecond (one implicit task),
/// thread 1 waits in a barrier over it; rank 1: thread 0 is in one MPI_Recv
/// from rank 0 over it. Any time range inside is a third of each state.
/// Rank 0 also has a send at the end whose message the receive completes.
fn write_trace(dir: &Path) {
    let o = WriterOptions::default();
    let mut w = PartWriter::create(dir, Table::Omp, 0, o.clone()).unwrap();
    w.write_omp(&[
        omp(0, OmpKind::ImplicitTask, 0, T, T + SPAN, 0x401a00),
        omp(1, OmpKind::ImplicitTask, 0, T, T + SPAN, 0x401a00),
        omp(1, OmpKind::Sync, 1, T, T + SPAN, 0x401b00),
        omp(1, OmpKind::SyncWait, 1, T, T + SPAN, 0x401b00),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut w = PartWriter::create(dir, Table::Mpi, 1, o.clone()).unwrap();
    w.write_mpi(&mut [MpiRecord {
        thread: 0,
        call: mpi_call::MPI_Recv,
        start_ns: T,
        end_ns: T + SPAN,
        peer: 0,
        tag: 7,
        bytes_recv: 4096,
        ..MpiRecord::default()
    }])
    .unwrap();
    w.finish().unwrap();
    let mut w = PartWriter::create(dir, Table::Mpi, 0, o.clone()).unwrap();
    w.write_mpi(&mut [MpiRecord {
        thread: 0,
        call: mpi_call::MPI_Send,
        start_ns: T + SPAN,
        end_ns: T + SPAN,
        peer: 1,
        tag: 7,
        bytes_sent: 4096,
        ..MpiRecord::default()
    }])
    .unwrap();
    w.finish().unwrap();
    let mut w = PartWriter::create(dir, Table::Samples, 0, o).unwrap();
    w.write_records(&[
        SampleRecord {
            time_ns: T,
            metric: "mem.vmrss".into(),
            key: -1,
            value: 1e6,
        },
        SampleRecord {
            time_ns: T + SPAN / 2,
            metric: "mem.vmrss".into(),
            key: -1,
            value: 2e6,
        },
        // Per-peer totals and the time of first contact: not time series.
        SampleRecord {
            time_ns: T + SPAN,
            metric: "mpi.peer.first_contact_ns".into(),
            key: 1,
            value: T as f64,
        },
        SampleRecord {
            time_ns: T + SPAN,
            metric: "mpi.peer.bytes".into(),
            key: 1,
            value: 4096.0,
        },
    ])
    .unwrap();
    w.finish().unwrap();
    let mut m = Manifest::new();
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

fn harness(dir: &Path) -> Harness<'static, GuiApp> {
    let mut app = GuiApp::new(open(dir), None, false, false);
    app.wait_loaded();
    Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app)
}

#[test]
fn open_zoom_select_and_read_the_selection_panel() {
    let dir = TempDir::new("select");
    write_trace(&dir.0);
    let mut h = harness(&dir.0);
    h.run_steps(3);
    {
        let app = h.state();
        let d = app.slots[0].data.ready().expect("loaded");
        assert_eq!(d.index.rows().len(), 3);
        assert_eq!(d.index.span(), (T, T + SPAN));
        assert_eq!((app.view.t0, app.view.t1), (0.0, SPAN as f64));
        assert_eq!(d.messages.len(), 1);
        // RSS as steps held to the end of the trace; no per-peer totals.
        assert_eq!(d.counters.len(), 1, "{:?}", d.counters);
        assert_eq!(
            d.counters[0].points,
            [
                (T, 1e6),
                (T + SPAN / 2, 1e6),
                (T + SPAN / 2, 2e6),
                (T + SPAN, 2e6)
            ]
        );
        // One rectangle per row: the whole row is one state.
        assert_eq!(app.tl.rects_drawn, 3);
    }
    // Zoom in with the keyboard: half the width around the centre.
    h.key_press(Key::Plus);
    h.run_steps(3);
    assert_eq!(
        (h.state().view.t0, h.state().view.t1),
        (250_000.0, 750_000.0)
    );
    h.key_press(Key::Home);
    h.run_steps(3);
    assert_eq!((h.state().view.t0, h.state().view.t1), (0.0, SPAN as f64));

    // Select from 25 % to 75 % of the width with a right-button drag.
    let body = h.state().tl.body[0];
    let y = body.center().y;
    let x0 = body.left() + body.width() * 0.25;
    let x1 = body.left() + body.width() * 0.75;
    h.event(egui::Event::PointerMoved(Pos2::new(x0, y)));
    h.run_steps(3);
    h.event(egui::Event::PointerButton {
        pos: Pos2::new(x0, y),
        button: PointerButton::Secondary,
        pressed: true,
        modifiers: Modifiers::NONE,
    });
    h.run_steps(3);
    for k in 1..=10 {
        let x = x0 + (x1 - x0) * k as f32 / 10.0;
        h.event(egui::Event::PointerMoved(Pos2::new(x, y)));
        h.run_steps(3);
    }
    h.event(egui::Event::PointerButton {
        pos: Pos2::new(x1, y),
        button: PointerButton::Secondary,
        pressed: false,
        modifiers: Modifiers::NONE,
    });
    h.run_steps(3);
    let (a, b) = h.state().tl.range.expect("a range is selected");
    let ns_per_px = SPAN as f64 / body.width() as f64;
    assert!(
        (a - 250_000.0).abs() <= 2.0 * ns_per_px,
        "range starts at {a}"
    );
    assert!(
        (b - 750_000.0).abs() <= 2.0 * ns_per_px,
        "range ends at {b}"
    );
    // The selection panel: three rows, each a third of the thread time.
    let len = (origin_ns(b) - origin_ns(a)) as f64;
    h.get_by_label(&format!("thread time {}", units::ns(3.0 * len)));
    for state in ["compute", "barrier wait", "MPI p2p"] {
        h.get_by_label(&format!("{state}: {} (33.3 %)", units::ns(len)));
        // Its legend entry: swatch and name in one label (they never wrap apart).
        h.get_by_label(&format!("█{state}"));
    }
    // Zoom to the selection.
    h.key_press(Key::Z);
    h.run_steps(3);
    assert_eq!((h.state().view.t0, h.state().view.t1), (a, b));

    // Click thread 1 of rank 0: its stack is implicit task ⊃ barrier ⊃ wait.
    h.key_press(Key::Home);
    h.run_steps(3);
    let body = h.state().tl.body[0];
    let picked_y = thread_row_y(&h, 0, 1);
    h.event(egui::Event::PointerMoved(Pos2::new(
        body.center().x,
        picked_y,
    )));
    h.run_steps(3);
    h.event(egui::Event::PointerButton {
        pos: Pos2::new(body.center().x, picked_y),
        button: PointerButton::Primary,
        pressed: true,
        modifiers: Modifiers::NONE,
    });
    h.event(egui::Event::PointerButton {
        pos: Pos2::new(body.center().x, picked_y),
        button: PointerButton::Primary,
        pressed: false,
        modifiers: Modifiers::NONE,
    });
    h.run_steps(3);
    let picked = h.state().tl.picked.as_ref().expect("an interval is picked");
    let names: Vec<String> = picked.stack.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        vec!["implicit_task", "sync (barrier)", "sync_wait (barrier)"]
    );
    h.remove_cursor();
    h.run_steps(3);
    h.get_by_label("sync_wait (barrier)");
    assert_eq!(h.get_all_by_label("duration 1.00 ms").count(), 3);

    // Theme toggle.
    assert!(h.state().dark);
    h.key_press(Key::T);
    h.run_steps(3);
    assert!(!h.state().dark);
}

/// Relative ns rounded the way the index query sees them.
fn origin_ns(t: f64) -> i64 {
    T + t as i64
}

/// The y of a thread row: rows are laid out host, rank, thread..., equally tall.
fn thread_row_y(h: &Harness<'_, GuiApp>, rank: u32, thread: u32) -> f32 {
    let body = h.state().tl.body[0];
    // host, rank 0, t0, t1, rank 1, t0
    let lines = 6.0;
    let line_h = (body.height() / lines).clamp(5.0, 18.0);
    let k = match (rank, thread) {
        (0, 0) => 2.0,
        (0, 1) => 3.0,
        _ => 5.0,
    };
    body.top() + k * line_h + line_h / 2.0
}

#[test]
fn collapsing_a_rank_hides_its_threads() {
    let dir = TempDir::new("collapse");
    write_trace(&dir.0);
    let mut h = harness(&dir.0);
    h.run_steps(3);
    assert_eq!(h.state().tl.rects_drawn, 3);
    let body = h.state().tl.body[0];
    // Click the "rank 0" header label (second line).
    let line_h = (body.height() / 6.0).clamp(5.0, 18.0);
    let p = Pos2::new(body.left() - 60.0, body.top() + 1.5 * line_h);
    h.event(egui::Event::PointerMoved(p));
    h.run_steps(3);
    h.event(egui::Event::PointerButton {
        pos: p,
        button: PointerButton::Primary,
        pressed: true,
        modifiers: Modifiers::NONE,
    });
    h.event(egui::Event::PointerButton {
        pos: p,
        button: PointerButton::Primary,
        pressed: false,
        modifiers: Modifiers::NONE,
    });
    h.run_steps(3);
    assert!(h.state().tl.collapsed_ranks.contains(&(0, 0)));
    // Rank 0 collapsed: its header draws thread 0's row, rank 1 its thread.
    assert_eq!(h.state().tl.rects_drawn, 2);
}

#[test]
fn highlight_instances_and_compare_two_traces() {
    let a = TempDir::new("cmp-a");
    let b = TempDir::new("cmp-b");
    write_trace(&a.0);
    write_trace(&b.0);
    let mut app = GuiApp::new(open(&a.0), Some(open(&b.0)), false, false);
    app.wait_loaded();
    // Both implicit tasks of rank 0 have the region's code address, which
    // no symbol resolves: the location is rank 0's own (its id, as the
    // analysis names it).
    let id = app.slots[0]
        .data
        .ready()
        .expect("loaded")
        .code
        .id(0, 0x401a00);
    app.highlight(0, id, "region 0x401a00".into());
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    for _ in 0..200 {
        h.run_steps(1);
        if !h.state().tl.highlight.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    h.run_steps(2);
    assert_eq!(h.state().tl.highlight.len(), 1, "instances found");
    let (which, _, inst) = h.state().tl.highlight[0].clone();
    assert_eq!(which, 0);
    assert_eq!(inst, vec![(0, 0, T, T + SPAN), (0, 1, T, T + SPAN)]);
    h.get_by_label("highlighted: region 0x401a00, 2 intervals on 1 rank");
    // Two timelines on the same relative time axis, one above the other.
    let bodies = h.state().tl.body.clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0].left(), bodies[1].left());
    assert!(bodies[1].top() > bodies[0].bottom());
    assert_eq!(h.state().tl.rects_drawn, 3);
    // A range selection summarises both traces.
    h.state_mut().tl.range = Some((0.0, 500_000.0));
    h.run_steps(2);
    assert_eq!(h.get_all_by_label("thread time 1.50 ms").count(), 2);
    assert_eq!(
        h.get_all_by_label("barrier wait: 500.0 µs (33.3 %)")
            .count(),
        2
    );
}

#[test]
fn the_timeline_keeps_most_of_the_window_beside_long_analysis_text() {
    // A real recorded trace: its run facts hold Open MPI's long library string
    // and its findings long advice, which once widened the analysis panel to
    // half the window.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let mut app = GuiApp::new(open(&fixture), None, true, false);
    app.wait_loaded();
    assert!(app.slots[0].analysis.ready().is_some(), "analysis loaded");
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(5);
    let body = h.state().tl.body[0];
    // Side panels take at most 1/3 + 1/5 of the width, the row labels ~130 px:
    // the body gets more than a third (235 px, under a fifth, before the cap).
    assert!(
        body.width() > 1280.0 / 3.0,
        "timeline body is only {} px of 1280",
        body.width()
    );
}

/// Tracks share a plot only with tracks of the same family and unit: memory
/// in bytes never shares a y axis with MPI_T queue lengths in messages.
#[test]
fn counter_families_never_mix_units() {
    let track = |name: &str, unit: &str| super::data::CounterTrack {
        name: name.into(),
        unit: unit.into(),
        points: Vec::new(),
    };
    assert_eq!(
        track("mem.vmrss rank 0 (bytes)", "bytes").family(),
        "mem · bytes"
    );
    assert_eq!(
        track(
            "mpi_t.pml_ob1_posted_recvq_length rank 0 (messages)",
            "messages"
        )
        .family(),
        "mpi_t · messages"
    );
    assert_ne!(
        track(
            "mpi_t.mpool_hugepage_bytes_allocated rank 0 (bytes)",
            "bytes"
        )
        .family(),
        track(
            "mpi_t.pml_ob1_posted_recvq_length rank 0 (messages)",
            "messages"
        )
        .family()
    );
    assert_eq!(
        track("power energy.pkg [0] rank 0 (W)", "W").family(),
        "power · W"
    );
    assert_eq!(track("custom rank 0", "").family(), "custom");
}

/// A symbol without debug information is shown as the source names it: the
/// GUI labels code with the analyzer's one labelling, demangling included.
#[test]
fn mangled_symbols_read_as_their_source_names_them() {
    let dir = TempDir::new("demangle");
    write_trace(&dir.0);
    let mut w = PartWriter::create(&dir.0, Table::Symbols, 0, WriterOptions::default()).unwrap();
    w.write_records(&[hyscope_format::SymbolRecord {
        address: 0x401a00,
        module: "/opt/app/solver".into(),
        function: Some("_ZN3hal6Solver5relaxEPdi".into()),
        file: None,
        line: None,
        module_offset: None,
        module_build_id: None,
    }])
    .unwrap();
    w.finish().unwrap();
    let data = load(&dir.0);
    assert_eq!(
        data.location(0, 0x401a00),
        "hal::Solver::relax(double*, int)"
    );
    assert_eq!(data.location(0, 0x401b00), "0x401b00");
}

/// The GUI's arrows and the report are the same messages at the same global
/// times, on the recorded hybrid fixture (whose rank 1 clock already drifts
/// by 2.3 µs between `MPI_Init` and `MPI_Finalize`) and on a copy whose rank
/// 1 drifts by 50 µs more.
#[test]
fn arrows_are_the_reports_messages() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let tmp = TempDir::new("arrows");
    let drifted = tmp.0.join("drifted");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(&fixture)
        .arg(&drifted)
        .status()
        .unwrap();
    assert!(st.success());
    let path = RankInfo::path(&drifted, 1);
    let mut info = RankInfo::read(&path).unwrap();
    info.clock_offsets[1].offset_ns += 50_000;
    info.write(&drifted).unwrap();
    for dir in [fixture.as_path(), drifted.as_path()] {
        let data = load(dir);
        let a = hyscope_analyzer::analyze(dir, &Default::default()).unwrap();
        let reported: Vec<super::data::Message> = a
            .messages
            .messages
            .iter()
            .map(super::data::Message::from)
            .collect();
        // The ring (4 Isend/Irecv pairs each way) of examples/hybrid.
        assert_eq!(reported.len(), 8, "{}", dir.display());
        assert_eq!(a.messages.unmatched(), 0);
        assert_eq!(data.messages, reported, "{}", dir.display());
    }
}

/// A trace that lost data says so in the top bar, naming the rank and file.
#[test]
fn a_partial_trace_is_said_in_the_top_bar() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(&fixture)
        .arg(&trace)
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::remove_dir_all(trace.join("mpi/rank=1")).unwrap();
    let mut app = GuiApp::new(open(&trace), None, true, false);
    app.wait_loaded();
    assert!(app.slots[0].analysis.ready().is_some(), "analysis loaded");
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(3);
    h.get_by_label_contains("PARTIAL TRACE: the numbers below leave out what is listed here");
    h.get_by_label_contains(
        "! rank 1, mpi/rank=1: ranks/rank-1.json lists 23 MPI rows but mpi/rank=1 has no part: 23 missing",
    );
}

/// A rank with a damaged part (rank 1's OpenMP part of the recorded
/// fixture, truncated) is left out of the timeline as the analysis leaves
/// it out: its line says so with the file and the problem, rank 0's threads
/// are drawn, and neither a message with rank 1 on a side (every one of the
/// ring's) nor a counter of rank 1's is.
#[test]
fn a_rank_with_a_damaged_part_is_marked_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(&fixture)
        .arg(&trace)
        .status()
        .unwrap();
    assert!(copied.success());
    hyscope_testkit::truncate_to_half(&trace.join("omp/rank=1/part-0.parquet"));
    let whole = load(&fixture);
    assert_eq!(whole.messages.len(), 8);
    assert!(whole.counters.iter().any(|c| c.name.contains(" rank 1")));
    let mut app = GuiApp::new(open(&trace), None, true, false);
    app.wait_loaded();
    let a = app.slots[0].analysis.ready().cloned().expect("analysed");
    let d = app.slots[0].data.ready().cloned().expect("loaded");
    assert_eq!(d.index.left_out(), &a.ranks_left_out[..]);
    assert_eq!(d.index.left_out()[0].rank, 1);
    assert!(d.index.rows().iter().all(|r| r.rank == 0));
    assert_eq!(d.messages, [], "a message with rank 1 on a side");
    assert!(!d.counters.iter().any(|c| c.name.contains(" rank 1")));
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(3);
    h.get_by_label_contains(
        "rank 1 left out: omp/rank=1/part-0.parquet cannot be read (corrupt or truncated Parquet file",
    );
    assert!(h.state().tl.rects_drawn > 0, "rank 0 is not drawn");
}

#[test]
fn a_phase_row_above_a_rank_with_phases() {
    use hyscope_format::PhaseRecord;
    let dir = TempDir::new("phases");
    write_trace(&dir.0);
    let phase = |name, start_ns, end_ns, depth| PhaseRecord::api(0, name, start_ns, end_ns, depth);
    let mut w = PartWriter::create(&dir.0, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        phase("solver", T, T + SPAN, 0),
        phase("halo", T + SPAN / 4, T + SPAN / 2, 1),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut h = harness(&dir.0);
    h.run_steps(3);
    // The three state runs of `collapsing_a_rank_hides_its_threads`, and the
    // two phases of rank 0 (rank 1 has none: no phase row).
    assert_eq!(h.state().tl.rects_drawn, 3 + 2);
}

/// A damaged phases part (rank 0's, truncated): rank 1's phase row stays,
/// and the top bar names the file (as the TUI's timeline does).
#[test]
fn a_damaged_phases_part_is_named_and_the_other_ranks_keep_their_phases() {
    use hyscope_format::PhaseRecord;
    let dir = TempDir::new("phases-damaged");
    write_trace(&dir.0);
    for rank in 0..2 {
        let mut w =
            PartWriter::create(&dir.0, Table::Phases, rank, WriterOptions::default()).unwrap();
        w.write_records(&[PhaseRecord::api(0, "solver", T, T + SPAN, 0)])
            .unwrap();
        w.finish().unwrap();
    }
    hyscope_testkit::truncate_to_half(&dir.0.join("phases/rank=0/part-0.parquet"));
    let mut h = harness(&dir.0);
    h.run_steps(3);
    let d = h.state().slots[0].data.ready().cloned().expect("loaded");
    assert!(d.phases.has(1) && !d.phases.has(0));
    h.get_by_label_contains("phases of rank 0 not shown: ");
    h.get_by_label_contains("phases/rank=0/part-0.parquet");
}

/// The analysis panel's phase filter restricts the analysis to a phase,
/// and "zoom to it" frames the phase's interval in the timeline.
#[test]
fn the_phase_filter_restricts_the_analysis_and_zooms_to_the_phase() {
    use hyscope_format::PhaseRecord;
    let dir = TempDir::new("phase-filter");
    write_trace(&dir.0);
    let mut w = PartWriter::create(&dir.0, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        PhaseRecord::api(0, "solver", T, T + SPAN, 0),
        PhaseRecord::api(0, "halo", T + SPAN / 4, T + SPAN / 2, 1),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut app = GuiApp::new(open(&dir.0), None, true, false);
    app.wait_loaded();
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(2);
    assert_eq!(h.state().slots[0].phase_names, ["solver", "halo"]);
    h.get_by_label("phase");

    h.state_mut().slots[0].set_phase(Some("halo".into()));
    h.state_mut().slots[0].analysis.wait();
    h.run_steps(2);
    let focus = h.state().slots[0]
        .analysis
        .ready()
        .and_then(|a| a.focus.clone())
        .expect("restricted analysis");
    assert_eq!((focus.phase.as_str(), focus.instances), ("halo", 1));
    assert!(
        (focus.time_s - SPAN as f64 / 4.0 * 1e-9).abs() < 1e-15,
        "{focus:?}"
    );
    h.get_by_label_contains("1 intervals, 250.0 µs of the run's");
    h.get_by_label("zoom to it").click();
    h.run_steps(2);
    let origin = h.state().slots[0].data.ready().unwrap().index.span().0;
    let margin = (SPAN / 4 / 20) as f64;
    let v = h.state().view;
    assert_eq!(
        (v.t0, v.t1),
        (
            (T + SPAN / 4 - origin) as f64 - margin,
            (T + SPAN / 2 - origin) as f64 + margin
        )
    );
}

/// Press and release the primary button at `p`.
fn click(h: &mut Harness<'static, GuiApp>, p: Pos2) {
    h.event(egui::Event::PointerMoved(p));
    h.run_steps(2);
    for pressed in [true, false] {
        h.event(egui::Event::PointerButton {
            pos: p,
            button: PointerButton::Primary,
            pressed,
            modifiers: Modifiers::NONE,
        });
    }
    h.run_steps(3);
}

/// The middle of the label of aggregated line `k` (all lines are groups).
fn group_label_pos(h: &Harness<'static, GuiApp>, k: usize) -> Pos2 {
    let st = &h.state().tl;
    let body = st.body[0];
    let n = st.group_labels[0].len();
    let line_h = (body.height() / n as f32).clamp(5.0, 18.0);
    Pos2::new(
        body.left() - super::timeline::LABEL_W + 30.0,
        body.top() + (k as f32 + 0.5) * line_h,
    )
}

/// 256 ranks in an 800-pixel window: lines of 4 ranks naming their worst
/// rank (the last of each 4, `aggregate::test_trace`); a click on a label
/// opens the group into its ranks, a click on a rank shows its thread.
#[test]
fn aggregated_ranks_open_on_a_click() {
    let dir = TempDir::new("aggregated");
    crate::aggregate::test_trace::write(&dir.0, 256);
    let mut h = harness(&dir.0);
    h.state_mut().tl.wait_aggregates = true;
    h.run_steps(3);
    let labels = h.state().tl.group_labels[0].clone();
    assert_eq!(labels.len(), 64, "{labels:?}");
    assert_eq!(labels[0], "+ ranks 0–3 · worst 3");
    assert_eq!(labels[63], "+ ranks 252–255 · worst 255");
    assert!(h.state().tl.rects_drawn >= 64);
    let p = group_label_pos(&h, 0);
    click(&mut h, p);
    let labels = h.state().tl.group_labels[0].clone();
    assert_eq!(labels.len(), 68, "{labels:?}");
    assert_eq!(labels[0], "- ranks 0–3");
    assert_eq!(
        &labels[1..5],
        ["  + rank 0", "  + rank 1", "  + rank 2", "  + rank 3"]
    );
    assert_eq!(labels[5], "+ ranks 4–7 · worst 7");
    let p = group_label_pos(&h, 2);
    click(&mut h, p);
    assert!(h.state().tl.open_ranks.contains(&(0, 1)));
    assert_eq!(h.state().tl.group_labels[0][2], "  - rank 1");
    // Closing the group again.
    let p = group_label_pos(&h, 0);
    click(&mut h, p);
    assert_eq!(h.state().tl.group_labels[0][0], "+ ranks 0–3 · worst 3");
}

/// Until the index is loaded the timeline shows the coarse overview with
/// the same aggregated lines, a note saying so, and groups that open on a
/// click; then the detailed timeline replaces it.
#[test]
fn coarse_overview_until_the_index_is_loaded() {
    let dir = TempDir::new("coarse");
    crate::aggregate::test_trace::write(&dir.0, 256);
    let mut app = GuiApp::new(open(&dir.0), None, false, false);
    app.slots[0].overview.wait();
    app.slots[0].data.wait();
    let data = app.slots[0].data.ready().cloned().expect("loaded");
    let (tx, rx) = std::sync::mpsc::channel();
    app.slots[0].data = crate::loading::Loading::Pending(rx);
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    // The first frame asks a worker for the lines (256 ranks × 1,000
    // columns: too many for the UI thread) and draws the note without them.
    h.run_steps(1);
    h.get_by_label_contains("coarse overview, bins of");
    assert!(h.state().first_coarse_frame_s.is_none(), "no lines yet");
    assert!(h.state().tl.group_lines[0].busy());
    h.state_mut().tl.wait_aggregates = true;
    h.run_steps(2);
    assert!(h.state().first_coarse_frame_s.is_some());
    assert!(h.state().first_timeline_frame_s.is_none());
    assert_eq!(h.state().tl.group_lines[0].computed_coarse, 1);
    h.get_by_label_contains("coarse overview, bins of");
    h.get_by_label_contains("detail loading…");
    let labels = h.state().tl.group_labels[0].clone();
    assert_eq!(labels.len(), 64, "{labels:?}");
    assert_eq!(labels[0], "+ ranks 0–3 · worst 3");
    assert_eq!(labels[63], "+ ranks 252–255 · worst 255");
    assert!(h.state().tl.rects_drawn >= 64);
    // The whole run in view, as the index will show it.
    assert_eq!((h.state().view.t0, h.state().view.t1), (0.0, 1e6));
    let p = group_label_pos(&h, 0);
    click(&mut h, p);
    let labels = h.state().tl.group_labels[0].clone();
    assert_eq!(labels[0], "- ranks 0–3");
    assert_eq!(labels[1], "  + rank 0");
    assert_eq!(labels[5], "+ ranks 4–7 · worst 7");
    // The index arrives: the detailed timeline, the same lines, no note.
    tx.send(Ok(data)).unwrap();
    h.run_steps(3);
    assert!(h.state().first_timeline_frame_s.is_some());
    assert!(h.query_by_label_contains("detail loading…").is_none());
    let labels = h.state().tl.group_labels[0].clone();
    assert_eq!(labels[0], "- ranks 0–3");
    assert_eq!(labels[5], "+ ranks 4–7 · worst 7");
    assert_eq!((h.state().view.t0, h.state().view.t1), (0.0, 1e6));
}

/// The GUI loads the timeline from the trace opened before the window, not
/// by opening it again (with thousands of ranks an open lists every part):
/// once the opened trace's manifest is moved away, a new open fails, and
/// the timeline and its overview still load, every rank in them.
#[test]
fn the_trace_is_opened_once() {
    use hyscope_analyzer::timeline::RankCells;
    let dir = TempDir::new("once");
    crate::aggregate::test_trace::write(&dir.0, 16);
    let trace = open(&dir.0);
    std::fs::rename(dir.0.join("manifest.json"), dir.0.join("moved.json")).unwrap();
    assert!(
        hyscope_format::Trace::open(&dir.0).is_err(),
        "a second open fails"
    );
    let mut app = GuiApp::new(trace, None, false, false);
    app.wait_loaded();
    let data = app.slots[0]
        .data
        .ready()
        .expect("loaded from the opened trace");
    assert_eq!(data.index.rank_rows().len(), 16);
    app.slots[0].overview.poll();
    let coarse = app.slots[0].overview.ready().expect("the overview");
    assert_eq!((coarse.ranks_loaded, coarse.ranks), (16, 16));
    assert!(coarse.ranks_note().is_empty());
    assert_eq!(coarse.overview.rank_rows().len(), 16);
}

/// An MPMD job (`mpirun -np 1 a : -np 1 b`, two programs built alike): one
/// address is a.c's region on rank 0 and b.c's on rank 1, and rank 1 also
/// has an address its symbols do not resolve. Highlighting a region the
/// analysis lists finds its own program's rows only, by the analysis's rule.
#[test]
fn highlight_keeps_each_program_s_rows() {
    let dir = TempDir::new("mpmd");
    let o = WriterOptions::default();
    let region = |start: i64, pid: u64, codeptr: u64| OmpRecord {
        parallel_id: pid,
        team_size: 1,
        ..omp(0, OmpKind::Parallel, 0, start, start + SPAN / 10, codeptr)
    };
    for (rank, file, n) in [(0u32, "a.c", 3u64), (1, "b.c", 5)] {
        let mut rows: Vec<OmpRecord> = (0..n)
            .map(|i| region(T + i as i64 * SPAN / 5, i + 1, 0x401200))
            .collect();
        if rank == 1 {
            rows.push(region(T + SPAN, 9, 0x5000));
        }
        let mut w = PartWriter::create(&dir.0, Table::Omp, rank, o.clone()).unwrap();
        w.write_omp(&rows).unwrap();
        w.finish().unwrap();
        let mut w = PartWriter::create(&dir.0, Table::Symbols, rank, o.clone()).unwrap();
        w.write_records(&[hyscope_format::SymbolRecord {
            address: 0x401200,
            module: format!("/bin/{file}"),
            function: Some("main".into()),
            file: Some(format!("/src/{file}")),
            line: Some(15),
            module_offset: Some(0x401200),
            module_build_id: None,
        }])
        .unwrap();
        w.finish().unwrap();
    }
    let mut m = Manifest::new();
    for rank in 0..2 {
        m.ranks.push(RankInfo {
            rank,
            host: "node0".into(),
            threads: 1,
            ..RankInfo::default()
        });
    }
    m.write(&dir.0).unwrap();
    let data = load(&dir.0);
    let a = hyscope_analyzer::analyze(&dir.0, &Default::default()).unwrap();
    let mut seen: Vec<(String, Vec<u32>, usize)> = a
        .regions
        .get()
        .unwrap()
        .iter()
        .map(|r| {
            let inst = super::data::instances_of(&data, r.location.address, usize::MAX).unwrap();
            let mut ranks: Vec<u32> = inst.iter().map(|i| i.0).collect();
            ranks.sort_unstable();
            ranks.dedup();
            assert_eq!(inst.len() as u64, r.instances, "{}", r.location.label);
            (r.location.label.clone(), ranks, inst.len())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("0x5000 (rank 1, unresolved)".to_string(), vec![1], 1),
            ("a.c:15".to_string(), vec![0], 3),
            ("b.c:15".to_string(), vec![1], 5),
        ]
    );
}

/// On the recorded 2-rank fixture (a PIE binary: each rank has its own
/// addresses), every loop, region and MPI call site the analysis lists is
/// highlighted on both ranks, and a loop's instances are its instances
/// times its team (one interval per thread).
#[test]
fn highlight_finds_instances_on_every_rank() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let data = load(&fixture);
    let a = hyscope_analyzer::analyze(&fixture, &Default::default()).unwrap();
    let ranks = |address: u64| {
        let inst = super::data::instances_of(&data, address, usize::MAX).unwrap();
        let mut ranks: Vec<u32> = inst.iter().map(|i| i.0).collect();
        ranks.dedup();
        ranks.sort_unstable();
        ranks.dedup();
        (ranks, inst.len())
    };
    let loops = a.loops.get().unwrap();
    assert!(!loops.is_empty());
    for l in loops {
        let (r, n) = ranks(l.location.address);
        assert_eq!(r, [0, 1], "loop {}", l.location.label);
        assert_eq!(
            n as u64,
            l.instances * l.team_size as u64,
            "loop {}",
            l.location.label
        );
    }
    let regions = a.regions.get().unwrap();
    assert!(!regions.is_empty());
    for g in regions {
        assert_eq!(
            ranks(g.location.address).0,
            [0, 1],
            "region {}",
            g.location.label
        );
        // Every thread of the team, not only the primary that carries the
        // region's address.
        let inst = super::data::instances_of(&data, g.location.address, usize::MAX).unwrap();
        let mut threads: Vec<(u32, u32)> = inst.iter().map(|i| (i.0, i.1)).collect();
        threads.sort_unstable();
        threads.dedup();
        assert_eq!(
            threads,
            [(0, 0), (0, 1), (1, 0), (1, 1)],
            "region {}",
            g.location.label
        );
    }
    let sites = &a.mpi.get().unwrap().callsites;
    assert!(sites.iter().any(|c| c.location.is_some()));
    for c in sites {
        if let Some(loc) = &c.location {
            assert_eq!(ranks(loc.address).0, [0, 1], "{} {}", c.call, loc.label);
        }
    }
}

/// The Memory tab lays the footprint out as the report does, bytes written
/// by `units::bytes`, not as the analysis's raw fields.
#[test]
fn the_memory_tab_shows_the_footprint_tables() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../analyzer/tests/fixtures/hybrid-2x2");
    let mut app = GuiApp::new(open(&fixture), None, true, false);
    app.wait_loaded();
    let a = app.slots[0]
        .analysis
        .ready()
        .cloned()
        .expect("analysis loaded");
    let m = a.memory.get().expect("footprint observed");
    app.tab = super::panels::Tab::Memory;
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(3);
    h.get_by_label("MPI memory footprint");
    h.get_by_label(&format!(
        "Projection (memory per core: {})",
        m.memory_per_core
            .map_or("unknown".into(), |b| units::bytes(b as f64))
    ));
    h.get_by_label("total/rank");
    // The fixture (format 1.0) does not say which PML Open MPI selected:
    // the network's buffers are not modelled, and where the projection has
    // connections to other nodes its totals say so, never a number.
    let statement =
        "network buffers: not modelled for Open MPI (which PML it selected is not recorded)";
    assert_eq!(m.network_not_modelled.as_deref(), Some(statement));
    h.get_by_label(&crate::report::memory::network_statement(m));
    assert!(!m.projections.is_empty());
    assert!(
        m.projections
            .iter()
            .any(|p| p.inter_node_connections_per_rank > 0.0 && p.total_bytes_per_rank.is_none())
    );
    for p in &m.projections {
        let total = crate::report::memory::modelled_bytes(p.total_bytes_per_rank);
        assert!(
            h.get_all_by_label(&total).count() > 0,
            "projected total {total} for {} ranks",
            p.ranks
        );
    }
    assert!(!m.parameters.is_empty());
    for p in &m.parameters {
        h.get_by_label(&p.name);
    }
    assert_eq!(m.bytes_per_connection, None);
    // No raw serde field names.
    assert!(h.query_by_label_contains("bytes_per_connection").is_none());
    assert!(h.query_by_label_contains("memory_per_core").is_none());
}

#[test]
fn counts_say_one_in_the_singular() {
    use super::panels::counted;
    assert_eq!(counted(1, "warning", "warnings"), "1 warning");
    assert_eq!(counted(0, "warning", "warnings"), "0 warnings");
    assert_eq!(counted(2, "rank", "ranks"), "2 ranks");
}

/// Nested phases at the default 1280×800 (`solver` around a `step` around
/// a `halo` too narrow for its name, 10 px, all three starting together):
/// each depth has a line of its own, so every phase is named, the halo
/// beside its bar. (Stacked in one 16 px line, only `step` would have room.)
#[test]
fn nested_phases_are_named_at_the_default_size() {
    use hyscope_format::PhaseRecord;
    let dir = TempDir::new("phase-names");
    write_trace(&dir.0);
    let phase = |name, start_ns, end_ns, depth| PhaseRecord::api(0, name, start_ns, end_ns, depth);
    let mut w = PartWriter::create(&dir.0, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        phase("solver", T, T + SPAN, 0),
        phase("step", T, T + SPAN / 2, 1),
        phase("halo", T, T + SPAN / 50, 2),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut h = harness(&dir.0);
    h.run_steps(3);
    let mut names = h.state().tl.phase_labels[0].clone();
    names.sort();
    assert_eq!(names, ["halo", "solver", "step"]);
}

/// At the default 1280×800 the top bar's "? keys" is in the window, and it
/// (or `?`) opens a window naming every key the GUI reacts to.
#[test]
fn every_key_is_listed_in_the_keys_window() {
    let dir = TempDir::new("keys");
    write_trace(&dir.0);
    let mut h = harness(&dir.0);
    h.run_steps(2);
    let b = h.get_by_label("? keys").rect();
    assert!(b.right() <= 1280.0, "{b:?}");
    h.key_press(Key::F1);
    h.run_steps(2);
    assert!(h.state().show_keys);
    for (keys, what) in super::app::KEYS {
        h.get_by_label(keys);
        h.get_by_label(what);
    }
    // The keys `keyboard` reacts to, each named.
    let listed: String = super::app::KEYS
        .iter()
        .map(|k| k.0)
        .collect::<Vec<_>>()
        .join(", ");
    for k in [
        "W",
        "A",
        "S",
        "D",
        "Left arrow",
        "Right arrow",
        "-",
        "+",
        "0",
        "Home",
        "Z",
        "Esc",
        "T",
        "C",
        "M",
    ] {
        assert!(listed.split(", ").any(|x| x == k), "{k} not in {listed}");
    }
}

/// The timeline opens on the run's window (`hyscope_analyzer::run_window`,
/// the report's duration), not on every row: here both ranks exit 3/4 into
/// the rows, so the analysis ends their rows there, while the timeline still
/// has them to the end (drawn when zoomed out, shaded as not run time).
#[test]
fn the_timeline_opens_on_the_runs_window() {
    let dir = TempDir::new("run-window");
    write_trace(&dir.0);
    let exit = T + SPAN * 3 / 4;
    let mut m = open(&dir.0).manifest;
    for r in &mut m.ranks {
        r.exit_ns = Some(exit);
    }
    m.write(&dir.0).unwrap();
    let mut app = GuiApp::new(open(&dir.0), None, true, false);
    app.wait_loaded();
    let w = app.slots[0]
        .run_window()
        .expect("the analysis gives the run's window");
    assert_eq!((w.start_ns, w.end_ns), (T, exit));
    assert_eq!(app.slots[0].shown_span(), Some((T, T + SPAN)));
    let mut h = Harness::builder()
        .with_size([1280.0, 800.0])
        .build_ui_state(|ui, app: &mut GuiApp| app.ui(ui), app);
    h.run_steps(2);
    let at = |h: &Harness<'_, GuiApp>| {
        let v = h.state().view;
        (origin_ns(v.t0), origin_ns(v.t1))
    };
    assert_eq!(at(&h), (T, exit), "the view opens on the run's window");
    // Zoomed out, then home again: the window, not the rows' span.
    h.key_press(Key::Minus);
    h.run_steps(2);
    assert!(at(&h).1 > exit, "{:?}", at(&h));
    h.key_press(Key::Home);
    h.run_steps(2);
    assert_eq!(at(&h), (T, exit));
}

/// A phase bar too narrow for its name (a 1 µs `halo` in a 1 ms run, under
/// one pixel) has a tooltip naming it, its depth and the phase it is in, its
/// duration and its rank; a bar that holds its name (`solver`) has none.
#[test]
fn a_phase_bar_too_narrow_for_its_name_has_a_tooltip() {
    use hyscope_format::PhaseRecord;
    let dir = TempDir::new("phase-tip");
    write_trace(&dir.0);
    let phase = |name, start_ns, end_ns, depth| PhaseRecord::api(0, name, start_ns, end_ns, depth);
    let halo = (T + SPAN / 4, T + SPAN / 4 + 1_000);
    let mut w = PartWriter::create(&dir.0, Table::Phases, 0, WriterOptions::default()).unwrap();
    w.write_records(&[
        phase("solver", T, T + SPAN, 0),
        phase("step", T, T + SPAN / 2, 1),
        phase("halo", halo.0, halo.1, 2),
        phase("halo", halo.1 + 1_000, halo.1 + 2_000, 2),
    ])
    .unwrap();
    w.finish().unwrap();
    let mut h = harness(&dir.0);
    h.run_steps(3);
    // Lines: the host, rank 0's three phase lines (depth 0, 1, 2), ...
    let body = h.state().tl.body[0];
    let line_h = 18.0;
    let origin = h.state().slots[0].data.ready().unwrap().index.span().0;
    let v = h.state().view;
    let x = |t: i64| {
        body.left() + ((t - origin) as f64 - v.t0) as f32 / v.width() as f32 * body.width()
    };
    assert!(x(halo.1) - x(halo.0) < 1.0, "the halo is under a pixel");
    let tip = "depth 2, in step";
    let at_halo = Pos2::new(x(halo.0) + 0.5, body.top() + 3.5 * line_h);
    h.event(egui::Event::PointerMoved(at_halo));
    h.run_steps(4);
    h.get_by_label_contains(tip);
    h.get_by_label_contains(&format!("duration {}", units::ns(1_000.0)));
    h.get_by_label_contains("rank 0 thread 0");
    // On `solver`, named inside its bar: no phase tooltip.
    let at_solver = Pos2::new(x(T + SPAN / 2), body.top() + 1.5 * line_h);
    h.event(egui::Event::PointerMoved(at_solver));
    h.run_steps(4);
    assert!(h.query_by_label_contains(tip).is_none());
    assert!(h.query_by_label_contains("outermost").is_none());
}

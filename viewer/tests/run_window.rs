//! One time span for a run, in every view: a recorded 2-rank × 2-thread
//! program gives the same run window (`hyscope_analyzer::run_window`), to
//! the nanosecond, in `report --json` (its duration), the TUI's timeline
//! (the view it opens on and its ruler's time 0), the Perfetto JSON (the
//! `metadata` object and the `run window` slice) and the OTF2 archive (its
//! properties, read back by `otf2-print -I`); both exports mark what lies
//! outside the window and say which intervals the analysis clips that they
//! keep as recorded.
//!
//! Known answers: between its 3 parallel regions each rank sleeps 20 ms
//! (serial code); libomp dispatches a worker's join-barrier end only when the
//! worker wakes for the next region (docs/platform.md, "Quirks"), so the
//! analysis clips at least 2 worker join-barrier ends per rank, each ≥ 20 ms
//! past its region's end. The workers' last ends come at shutdown, after the
//! collector took the rank's exit: the timeline has rows past the window.

use crate::record_support;
use crate::tui_frame;
use hyscope_testkit::OutputWithin;

use std::path::Path;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hyscope_viewer::tui;
use hyscope_viewer::units;
use record_support::*;
use serde_json::Value;

const SRC: &str = r#"
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>
static void msleep(long ms) { struct timespec t = {0, ms * 1000000L}; nanosleep(&t, NULL); }
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
        msleep(20);
    }
    double sum = 0;
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
"#;

/// Serial time after each of the first two regions, per rank (ns).
const GAP_NS: i64 = 20_000_000;

/// What the report says: the window (ns), its duration (s) and the worker
/// join-barrier ends it clips (count, s).
struct Reported {
    start: i64,
    end: i64,
    duration_s: f64,
    clipped: u64,
    clipped_s: f64,
}

fn reported(dir: &Path) -> Reported {
    let v = report_json(dir);
    let run = &v["run"];
    let int = |x: &Value| x.as_i64().unwrap_or_else(|| panic!("not an integer: {x}"));
    Reported {
        start: int(&run["window"]["start_ns"]),
        end: int(&run["window"]["end_ns"]),
        duration_s: run["duration_s"].as_f64().unwrap(),
        clipped: run["clipped_join_waits"].as_u64().unwrap(),
        clipped_s: run["clipped_join_wait_s"].as_f64().unwrap(),
    }
}

/// The note an export gives about the clipped join-barrier ends, if any.
fn join_note(notes: &[String], clipped: u64) -> Option<&String> {
    let what = format!("{clipped} worker join-barrier ends run past their region's end");
    notes
        .iter()
        .find(|n| n.contains(&what) && n.contains("the analysis clips them"))
}

/// The TUI's timeline: opened before anything is loaded, drawn once all is.
fn tui_timeline(dir: &Path, r: &Reported) {
    let data = tui::data::Data::open(dir, false).unwrap();
    let mut app = tui::app::App::new(data);
    let deadline = Instant::now() + Duration::from_secs(120);
    while app.data.analysis().is_none() || app.data.timeline().is_none() {
        assert!(
            Instant::now() < deadline,
            "{} {}",
            app.data.analysis_status(),
            app.data.timeline_status()
        );
        std::thread::sleep(Duration::from_millis(20));
        app.data.poll();
    }
    let span = app.data.timeline().unwrap().span();
    assert!(
        span.1 > r.end,
        "the timeline has rows past the run's window (workers' last ends at shutdown): {span:?} vs {}",
        r.end
    );
    app.on_key(KeyEvent::new(KeyCode::Char('2'), KeyModifiers::NONE));
    let s = tui_frame::render(&mut app, 120, 30);
    println!("{s}");
    assert_eq!(
        (app.timeline.t0, app.timeline.t1),
        (r.start, r.end),
        "the timeline opens on the run's window"
    );
    let dur = units::ns((r.end - r.start) as f64);
    assert!(
        s.contains(&format!("Timeline 0 ns – {dur} ({dur} shown)")),
        "{s}"
    );
    assert!(!s.contains("not run time"), "{s}");
    // Zoomed out, the rows past the window are drawn and said to be outside it.
    app.on_key(KeyEvent::new(KeyCode::Char('-'), KeyModifiers::NONE));
    let s = tui_frame::render(&mut app, 120, 30);
    assert!(app.timeline.t1 > r.end, "{s}");
    assert!(
        s.contains(&format!("run 0 ns – {dur}: beyond it is not run time")),
        "{s}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('0'), KeyModifiers::NONE));
    tui_frame::render(&mut app, 120, 30);
    assert_eq!((app.timeline.t0, app.timeline.t1), (r.start, r.end));
}

/// µs with ns decimals (as the export writes them) → ns.
fn us_to_ns(x: &Value) -> i64 {
    (x.as_f64().unwrap() * 1000.0).round() as i64
}

fn perfetto(dir: &Path, out: &Path, r: &Reported) {
    let o = hyscope()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(out)
        .arg(dir)
        .env("HYSCOPE_TIMING", "1")
        .output_within_limit()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The window and the clipped ends come from the analysis's loader and
    // per-rank passes alone: no cross-rank analysis (its first step is the
    // matching) runs for an export.
    assert!(
        stderr(&o).contains("OpenMP and MPI rows analysed")
            && !stderr(&o).contains("matched messages and collectives"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let meta = &v["metadata"]["hyscope"];
    let w = &meta["run_window"];
    let (start, end) = (us_to_ns(&w["start_us"]), us_to_ns(&w["end_us"]));
    assert_eq!(w["duration_ns"].as_i64(), Some(r.end - r.start), "{meta}");
    assert_eq!(end - start, r.end - r.start, "{meta}");
    let notes: Vec<String> = serde_json::from_value(meta["notes"].clone()).unwrap();
    let note = join_note(&notes, r.clipped).unwrap_or_else(|| panic!("{notes:#?}"));
    assert!(note.contains(&units::secs(r.clipped_s)), "{note}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("end after their rank's exit")),
        "{notes:#?}"
    );
    // The note is on stderr too.
    assert!(
        join_note(&[stderr(&o)], r.clipped).is_some(),
        "{}",
        stderr(&o)
    );
    let events = v["traceEvents"].as_array().unwrap();
    // The run's track: one slice over the window.
    let slice = events
        .iter()
        .find(|e| e["name"] == "run window" && e["ph"] == "X")
        .expect("a `run window` slice");
    assert_eq!(us_to_ns(&slice["ts"]), start);
    assert_eq!(us_to_ns(&slice["dur"]), r.end - r.start);
    // Every row and phase reaching outside the window is marked, and only those.
    let mut outside = 0;
    for e in events.iter().filter(|e| {
        matches!(e["cat"].as_str(), Some("omp" | "mpi" | "phase"))
            && matches!(e["ph"].as_str(), Some("X" | "i"))
    }) {
        let s = us_to_ns(&e["ts"]);
        let f = s + e.get("dur").map_or(0, us_to_ns);
        let out = s < start || f > end;
        assert_eq!(
            e["args"]["outside_run_window"].as_bool().unwrap_or(false),
            out,
            "{e}"
        );
        outside += usize::from(out);
    }
    assert!(outside > 0, "rows past the window are exported");
}

/// `otf2-print -I`'s properties of the archive: name → value.
fn otf2_properties(archive: &Path) -> Vec<(String, String)> {
    let o = std::process::Command::new("otf2-print")
        .arg("-I")
        .arg(archive)
        .output_within_limit()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let field = |l: &str, key: &str| l.strip_prefix(key).map(|v| v.trim().to_string());
    let mut props = Vec::new();
    let mut name = None;
    for l in text.lines() {
        if let Some(n) = field(l, "Property name") {
            name = Some(n);
        } else if let (Some(v), Some(n)) = (field(l, "Property value"), name.take()) {
            props.push((n, v));
        }
    }
    props
}

fn otf2(dir: &Path, out: &Path, r: &Reported) {
    let o = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(out)
        .arg(dir)
        .output_within_limit()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let props = otf2_properties(&out.join("traces.otf2"));
    let get = |k: &str| -> i64 {
        props
            .iter()
            .find(|(n, _)| n == k)
            .unwrap_or_else(|| panic!("no property {k}: {props:?}"))
            .1
            .parse()
            .unwrap()
    };
    assert_eq!(get("HYSCOPE::RUN_DURATION_NS"), r.end - r.start);
    assert_eq!(
        get("HYSCOPE::RUN_WINDOW_END") - get("HYSCOPE::RUN_WINDOW_START"),
        r.end - r.start
    );
    let notes: Vec<String> = props
        .iter()
        .filter(|(n, _)| n.starts_with("HYSCOPE::NOTE_"))
        .map(|(_, v)| v.clone())
        .collect();
    assert!(join_note(&notes, r.clipped).is_some(), "{notes:#?}");
}

#[test]
fn report_tui_and_exports_state_one_run_window() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "run_window", SRC);
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // 2 ranks × 3 regions × Σ_{i<1000} i/2
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 1.4985e+06\n");

    let r = reported(&dir);
    assert!(r.end > r.start);
    assert_eq!(
        (r.duration_s * 1e9).round() as i64,
        r.end - r.start,
        "the report's duration is its window's length"
    );
    assert!(
        r.clipped >= 4 && r.clipped_s * 1e9 >= (4 * GAP_NS) as f64 * 0.99,
        "2 ranks × 2 late worker join-barrier ends of ≥ 20 ms: {} clipped, {} s",
        r.clipped,
        r.clipped_s
    );
    tui_timeline(&dir, &r);
    perfetto(&dir, &tmp.path().join("run.json"), &r);
    otf2(&dir, &tmp.path().join("otf2"), &r);
}

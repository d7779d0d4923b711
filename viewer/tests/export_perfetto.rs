//! `hyscope export --format perfetto`: a real 2-rank MPI+OpenMP recording,
//! exported and parsed back, with exact counts per rank and thread and one flow
//! per point-to-point message.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hyscope_analyzer::aligned::Clocks;
use hyscope_format::{MpiRecord, PhaseRecord, ScanOptions, Trace, mpi_call};
use record_support::*;
use serde_json::Value;

/// Record the MPI test program with 2 ranks × 2 threads; returns (tempdir, trace dir).
fn recorded() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    record_mpi_job(&dir, &exe, 2);
    (tmp, dir)
}

fn export(trace: &Path, out: &Path, extra: &[&str]) -> String {
    let o = hyscope()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(out)
        .args(extra)
        .arg(trace)
        .output_within_limit()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    err
}

fn events(json: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    v["traceEvents"].as_array().unwrap().clone()
}

/// (pid, tid) → count of complete/instant events of a category.
fn per_thread(evs: &[Value], cat: &str) -> BTreeMap<(u64, u64), usize> {
    let mut m = BTreeMap::new();
    for e in evs {
        let ph = e["ph"].as_str().unwrap();
        if (ph == "X" || ph == "i") && e["cat"] == cat {
            *m.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
                .or_default() += 1;
        }
    }
    m
}

fn rows_per_thread<I: Iterator<Item = (u32, u32)>>(rows: I) -> BTreeMap<(u64, u64), usize> {
    let mut m = BTreeMap::new();
    for (rank, thread) in rows {
        *m.entry((u64::from(rank) + 1, u64::from(thread) + 1))
            .or_default() += 1;
    }
    m
}

#[test]
fn perfetto_export_has_every_event_and_one_flow_per_message() {
    let (tmp, dir) = recorded();
    let json = tmp.path().join("out.json");
    let err = export(&dir, &json, &[]);
    let evs = events(&json);

    let trace = Trace::open(&dir).unwrap();
    let omp = omp_rows(&trace);
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();

    // Every row is exactly one event on its rank's process and its thread.
    let exported_omp = per_thread(&evs, "omp");
    assert_eq!(
        exported_omp,
        rows_per_thread(omp.iter().map(|(r, o)| (*r, o.thread)))
    );
    assert_eq!(
        per_thread(&evs, "mpi"),
        rows_per_thread(mpi.iter().map(|(r, m)| (*r, m.thread)))
    );
    // 2 ranks × 2 OpenMP threads.
    assert_eq!(
        exported_omp.keys().copied().collect::<Vec<_>>(),
        vec![(1, 1), (1, 2), (2, 1), (2, 2)]
    );
    // Known answers of the program: 2 parallel regions per rank, one Isend and one Irecv each.
    for pid in [1u64, 2] {
        let named = |n: &str| {
            evs.iter()
                .filter(|e| e["pid"] == pid && e["ph"] == "X")
                .filter(|e| e["name"].as_str().unwrap().split(' ').next() == Some(n))
                .count()
        };
        assert_eq!(named("parallel"), 2, "pid {pid}");
        assert_eq!(named("MPI_Isend"), 1, "pid {pid}");
        assert_eq!(named("MPI_Irecv"), 1, "pid {pid}");
        assert_eq!(named("MPI_Allreduce"), 1, "pid {pid}");
        let pname = evs
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid)
            .unwrap();
        assert!(
            pname["args"]["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("rank {} ", pid - 1))
        );
    }
    let total = evs
        .iter()
        // The rows' events: not the run's own track (one `run window` slice).
        .filter(|e| (e["ph"] == "X" || e["ph"] == "i") && e["cat"] != "run")
        .count();
    assert_eq!(total, omp.len() + mpi.len());
    assert!(err.contains(&format!("({total} events, 2 flows,")), "{err}");

    // The ring of 2 ranks sends one message each way: 2 flows, from the Isend on
    // one rank to the completion of the matching Irecv on the other.
    let starts: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!((starts.len(), ends.len()), (2, 2));
    for s in &starts {
        let f = ends.iter().find(|f| f["id"] == s["id"]).unwrap();
        assert_ne!(s["pid"], f["pid"]);
        assert_eq!(f["bp"], "e");
        assert_eq!(s["args"]["tag"], 7);
        assert_eq!(s["args"]["bytes"], 8);
        // Bound to the Isend slice and to the receive's completion on the other rank.
        let on = |pid: &Value, tid: &Value, ts: &Value, name: &str| {
            evs.iter().any(|e| {
                e["pid"] == *pid && e["tid"] == *tid && e["ts"] == *ts && e["name"] == name
            })
        };
        assert!(on(&s["pid"], &s["tid"], &s["ts"], "MPI_Isend"), "{s}");
        assert!(
            on(&f["pid"], &f["tid"], &f["ts"], "request complete"),
            "{f}"
        );
    }
    // The trace has exactly those two receive completions with a status.
    let recv_completions = mpi
        .iter()
        .filter(|(_, m)| m.call == mpi_call::REQUEST_COMPLETE && m.bytes_recv == 8)
        .count();
    assert_eq!(recv_completions, 2);
}

#[test]
fn perfetto_time_window_keeps_overlapping_events_only() {
    let (tmp, dir) = recorded();
    let trace = Trace::open(&dir).unwrap();
    let start = trace.manifest.start_clock_ns;
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    // A window around the Allreduce of rank 0, relative to the trace start.
    let ar = mpi
        .iter()
        .find(|(r, m)| *r == 0 && m.call == mpi_call::MPI_Allreduce)
        .unwrap()
        .1;
    let (from, to) = (ar.start_ns - start, ar.end_ns - start);
    let json = tmp.path().join("window.json");
    export(
        &dir,
        &json,
        &["--from", &format!("{from}ns"), "--to", &format!("{to}ns")],
    );
    let evs = events(&json);
    // The window is on global time: each rank's rows through its clock map.
    let clocks = Clocks::from_manifest(&trace.manifest);
    let overlapping = |rank: u32, s: i64, e: i64| {
        let g = |t| clocks.to_global(rank, t).ns();
        g(e) >= start + from && g(s) <= start + to
    };
    let omp = omp_rows(&trace);
    let expect = omp
        .iter()
        .filter(|(r, o)| overlapping(*r, o.start_ns, o.end_ns))
        .count()
        + mpi
            .iter()
            .filter(|(r, m)| overlapping(*r, m.start_ns, m.end_ns))
            .count();
    let got = evs
        .iter()
        // The rows' events: not the run's own track (one `run window` slice).
        .filter(|e| (e["ph"] == "X" || e["ph"] == "i") && e["cat"] != "run")
        .count();
    assert_eq!(got, expect);
    assert!(got < omp.len() + mpi.len());
    assert!(
        evs.iter()
            .any(|e| e["name"] == "MPI_Allreduce" && e["pid"] == 1)
    );
}

#[test]
fn not_a_trace_gives_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = hyscope()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(tmp.path().join("x.json"))
        .arg(tmp.path())
        .output_within_limit()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("cannot open the trace") && err.contains("no manifest.json"),
        "{err}"
    );
    assert!(!tmp.path().join("x.json").exists());
}

/// `tests/phases/nested.c` recorded with 2 ranks: setup, then solver around 4
/// steps, each around a halo, on thread 0 of each rank.
fn recorded_phases() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_phase_program(tmp.path(), "nested");
    let dir = tmp.path().join("trace");
    record_mpi_job(&dir, &exe, 2);
    (tmp, dir)
}

#[test]
fn perfetto_phases_are_slices_on_a_phase_track_per_thread() {
    let (tmp, dir) = recorded_phases();
    let json = tmp.path().join("out.json");
    let err = export(&dir, &json, &[]);
    let evs = events(&json);
    let trace = Trace::open(&dir).unwrap();
    let clocks = Clocks::from_manifest(&trace.manifest);
    let rows: Vec<(u32, PhaseRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    assert_eq!(rows.len(), 2 * 10);
    assert!(err.contains(", 20 phases, 2 ranks)"), "{err}");

    let ns = |v: &Value| (v.as_f64().unwrap() * 1000.0).round() as i64;
    for rank in [0u32, 1] {
        let pid = u64::from(rank) + 1;
        // The track: named, and only phases on it.
        let track = evs
            .iter()
            .find(|e| {
                e["ph"] == "M"
                    && e["name"] == "thread_name"
                    && e["pid"] == pid
                    && e["args"]["name"] == "thread 0 phases"
            })
            .expect("a phase track for thread 0")["tid"]
            .clone();
        let slices: Vec<&Value> = evs
            .iter()
            .filter(|e| e["cat"] == "phase" && e["pid"] == pid)
            .collect();
        assert!(slices.iter().all(|e| e["tid"] == track && e["ph"] == "X"));
        // Exactly the trace's phases, in its order, with their depth, and
        // their durations on global time to the nanosecond.
        let want: Vec<&PhaseRecord> = rows
            .iter()
            .filter(|(r, _)| *r == rank)
            .map(|(_, p)| p)
            .collect();
        let names: Vec<&str> = slices.iter().map(|e| e["name"].as_str().unwrap()).collect();
        let mut expect = vec!["setup", "solver"];
        expect.extend(["step", "halo"].repeat(4));
        assert_eq!(names, expect);
        let g = |t: i64| clocks.to_global(rank, t).ns();
        for (e, p) in slices.iter().zip(&want) {
            assert_eq!(e["name"], p.name.as_str());
            assert_eq!(e["args"]["depth"], p.depth);
            assert_eq!(e["args"]["source"], "api");
            assert_eq!(ns(&e["dur"]), g(p.end_ns) - g(p.start_ns), "{e}");
            assert_eq!(
                ns(&e["ts"]) - ns(&slices[0]["ts"]),
                g(p.start_ns) - g(want[0].start_ns),
                "{e}"
            );
        }
        // The time steps are arguments of step and halo.
        let steps: Vec<i64> = slices
            .iter()
            .filter(|e| e["name"] == "step")
            .map(|e| e["args"]["iteration"].as_i64().unwrap())
            .collect();
        assert_eq!(steps, [0, 1, 2, 3]);
        // Nested: each step inside solver, each halo inside its step.
        let end = |e: &Value| ns(&e["ts"]) + ns(&e["dur"]);
        for pair in slices[2..].chunks(2) {
            let (step, halo) = (pair[0], pair[1]);
            assert!(ns(&slices[1]["ts"]) <= ns(&step["ts"]) && end(step) <= end(slices[1]));
            assert!(ns(&step["ts"]) <= ns(&halo["ts"]) && end(halo) <= end(step));
        }
    }
}

//! A program that puts another in its place by an exec runs until the exec
//! call, as a program that exits runs until its exit: serial code between
//! its last parallel region and the exec is its time, in every view. The
//! runtime never ends the initial thread's intervals of a program an exec
//! replaced (which reach a program's exit otherwise), so without the rule
//! its time ended at its last region and the run's window missed that code
//! (`hyscope_analyzer::run_window::exec_end`).
//!
//! Known answers: `tests/omp/exec.c` with the steps `2 spin 300 execv 2
//! spin 200 true`: the first program runs 2 regions, spins 300 ms outside
//! OpenMP and execs itself; the second runs 2 regions, spins 200 ms and
//! execs `/bin/true`, which records nothing. Each `spin` prints its start
//! and end on `CLOCK_MONOTONIC`, the clock the collector's times follow
//! (TSC calibrated against it, or it): the tests hold the trace's times
//! against them within [`TOLERANCE_NS`].

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;

use hyscope_format::Trace;
use record_support::*;
use serde_json::Value;

/// How far the collector's clock may be from the program's
/// `CLOCK_MONOTONIC` over a second (a TSC's calibration against it is good
/// to a few µs), with the time between the spin's last reading and the
/// exec's stamp (a printf and a flush): 5 ms.
const TOLERANCE_NS: i64 = 5_000_000;

const STEPS: &[&str] = &["2", "spin", "300", "execv", "2", "spin", "200", "true"];

/// (ms, from, to) of each `spin` line the programs printed.
fn spins(stdout: &str) -> Vec<(i64, i64, i64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["spin", ms, "from", a, "to", b] => {
                    Some((ms.parse().ok()?, a.parse().ok()?, b.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

fn report_json(trace: &Path) -> Value {
    let out = run_ok(hyscope().arg("report").arg("--json").arg(trace));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Perfetto export's run window (start, end), ns.
fn perfetto_window(trace: &Path, out: &Path) -> (i64, i64) {
    run_ok(
        hyscope()
            .args(["export", "--format", "perfetto", "-o"])
            .arg(out)
            .arg(trace),
    );
    let v: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let w = &v["metadata"]["hyscope"]["run_window"];
    let ns = |x: &Value| (x.as_f64().unwrap() * 1000.0).round() as i64;
    (ns(&w["start_us"]), ns(&w["end_us"]))
}

#[test]
fn a_program_runs_until_its_exec() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build_omp_test_program(dir.path(), "exec");
    let trace_dir = dir.path().join("trace");
    let out = record_into(&trace_dir)
        .arg(&prog)
        .args(STEPS)
        .env("OMP_THREAD_LIMIT", "1")
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let spun = spins(&stdout);
    assert_eq!(
        spun.iter().map(|s| s.0).collect::<Vec<_>>(),
        [300, 200],
        "{stdout}"
    );

    // Both programs ended by an exec, the exec stamped after their spin.
    let trace = Trace::open(&trace_dir).unwrap();
    let exec: BTreeMap<u32, i64> = trace
        .manifest
        .ranks
        .iter()
        .map(|r| {
            assert!(
                matches!(r.end, Some(hyscope_format::ProcessEnd::Exec { .. })),
                "{r:?}"
            );
            (r.rank, r.exit_ns.expect("the exec is stamped"))
        })
        .collect();
    assert_eq!(exec.len(), 2, "{exec:?}");
    for (id, &(_, _, to)) in spun.iter().enumerate() {
        let e = exec[&(id as u32)];
        assert!(
            e >= to - TOLERANCE_NS && e <= to + TOLERANCE_NS,
            "program {id}: exec at {e}, spin ended at {to}"
        );
    }

    // Each program's time: from its first event to its exec, its spin in it.
    let j = report_json(&trace_dir);
    let run = &j["run"];
    let per_program: Vec<f64> = serde_json::from_value(run["rank_duration_s"].clone()).unwrap();
    for (id, &(ms, from, _)) in spun.iter().enumerate() {
        let d_ns = (per_program[id] * 1e9).round() as i64;
        assert!(
            d_ns >= ms * 1_000_000 - TOLERANCE_NS,
            "program {id} ran {d_ns} ns, less than its {ms} ms spin: {run}"
        );
        // Its first event (a region before the spin) to the exec.
        let first = exec[&(id as u32)] - d_ns;
        assert!(first <= from + TOLERANCE_NS, "program {id}: {run}");
    }

    // The run's window: the first program's first event to the last exec,
    // both spins in it; POP's one process has the same time line.
    let w = &run["window"];
    let (start, end) = (
        w["start_ns"].as_i64().unwrap(),
        w["end_ns"].as_i64().unwrap(),
    );
    assert_eq!(end, exec[&1], "{run}");
    assert!(start <= spun[0].1 + TOLERANCE_NS, "{run}");
    assert!(end - start >= 500_000_000 - TOLERANCE_NS, "{run}");
    let duration_ns = (run["duration_s"].as_f64().unwrap() * 1e9).round() as i64;
    assert_eq!(duration_ns, end - start, "{run}");
    let pop = &j["pop"]["observed"];
    let elapsed_ns = (pop["elapsed_s"].as_f64().unwrap() * 1e9).round() as i64;
    assert_eq!(elapsed_ns, end - start, "{pop}");
    assert_eq!(
        pop["scope"]["processes"],
        serde_json::json!([[0, 1]]),
        "{pop}"
    );

    // The export states the same window, to the nanosecond.
    let (ps, pe) = perfetto_window(&trace_dir, &dir.path().join("trace.json"));
    assert_eq!(pe - ps, end - start);
}

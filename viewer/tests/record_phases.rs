//! Phases end to end under real `mpirun` (Open MPI, 2 ranks) and libomp:
//! `hyscope.h` phases nested three deep whose durations the program
//! measures itself (the report's times match within 1 %), the same program
//! run without hyscope, and `MPI_Pcontrol` levels and `omp_control_tool`
//! pause/start with exact counts of what is inside and outside the pause.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hyscope_format::{
    MpiRecord, NO_ITERATION, OmpKind, PhaseRecord, ScanOptions, Trace, mpi_call, phase_source,
};
use record_support::*;

fn mpirun(exe: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(mpirun_args(2)).arg(exe);
    cmd
}

/// `hyscope record -o trace -- mpirun -np 2 exe`.
fn recorded_run(trace: &Path, exe: &Path) -> Command {
    let mut cmd = record_into(trace);
    cmd.arg("mpirun").args(mpirun_args(2)).arg(exe);
    cmd
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines starting with `prefix`, sorted (the ranks' lines interleave).
fn lines(text: &str, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// What a program measured of one phase: around its begin and end calls
/// (`outer`) and between them (`inner`: the same as `outer` where the program
/// prints one number). The recorded interval lies between the two.
#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    outer: i64,
    inner: i64,
}

impl std::ops::AddAssign for Measured {
    fn add_assign(&mut self, o: Measured) {
        self.outer += o.outer;
        self.inner += o.inner;
    }
}

/// What a run measured (its `phase <rank> <name> <step> <outer ns> [<inner ns>]`
/// lines): (rank, name) → total, and (rank, name, step) → one.
#[allow(clippy::type_complexity)]
fn measured(
    text: &str,
) -> (
    BTreeMap<(u32, String), Measured>,
    BTreeMap<(u32, String, i64), Measured>,
) {
    let mut total: BTreeMap<(u32, String), Measured> = BTreeMap::new();
    let mut steps: BTreeMap<(u32, String, i64), Measured> = BTreeMap::new();
    for l in lines(text, "phase ") {
        let f: Vec<&str> = l.split_whitespace().collect();
        let outer = f[4].parse::<i64>().unwrap();
        let m = Measured {
            outer,
            inner: f.get(5).map_or(outer, |v| v.parse().unwrap()),
        };
        let (rank, name, step) = (
            f[1].parse::<u32>().unwrap(),
            f[2].to_string(),
            f[3].parse::<i64>().unwrap(),
        );
        *total.entry((rank, name.clone())).or_default() += m;
        steps.insert((rank, name, step), m);
    }
    (total, steps)
}

/// `got` ns within what the program measured: at most 1 % above the time
/// around the calls, at least 1 % below the time between them (a program
/// preempted around its calls widens the window, never moves the interval
/// out of it).
fn within_measured(got: i64, m: Measured, what: &str) {
    let (got, outer, inner) = (got as f64, m.outer as f64, m.inner as f64);
    assert!(
        got <= 1.01 * outer && got >= 0.99 * inner,
        "{what}: {got} ns recorded, the program measured {inner}..{outer} ns"
    );
}

/// Rank `rank`'s setup, solver, 4 steps and 4 halos (`tests/phases/nested.c`
/// and its NVTX twin): counted, nested, of `source`, with their time steps
/// (`stepped`) or none, each within 1 % of what the program measured.
fn check_nested(
    rows: &[(u32, PhaseRecord)],
    rank: u32,
    measured: &BTreeMap<(u32, String), Measured>,
    steps: &BTreeMap<(u32, String, i64), Measured>,
    source: u8,
    stepped: bool,
) {
    let of = |name: &str| -> Vec<&PhaseRecord> {
        rows.iter()
            .filter(|(r, p)| *r == rank && p.name == name)
            .map(|(_, p)| p)
            .collect()
    };
    let (setup, solver, step, halo) = (of("setup"), of("solver"), of("step"), of("halo"));
    assert_eq!(
        (setup.len(), solver.len(), step.len(), halo.len()),
        (1, 1, 4, 4)
    );
    assert_eq!((setup[0].depth, solver[0].depth), (0, 0));
    assert_eq!(solver[0].iteration, NO_ITERATION);
    assert!(setup[0].end_ns <= solver[0].start_ns);
    for (p, name) in [(setup[0], "setup"), (solver[0], "solver")] {
        within_measured(
            p.end_ns - p.start_ns,
            measured[&(rank, name.to_string())],
            &format!("rank {rank} {name}"),
        );
    }
    for (i, (s, h)) in step.iter().zip(&halo).enumerate() {
        let it = if stepped { i as i64 } else { NO_ITERATION };
        assert_eq!((s.thread, s.depth, h.depth), (0, 1, 2));
        assert_eq!((s.iteration, h.iteration), (it, it));
        assert_eq!((s.source, h.source), (source, source));
        assert!(solver[0].start_ns <= s.start_ns && s.end_ns <= solver[0].end_ns);
        assert!(s.start_ns <= h.start_ns && h.end_ns <= s.end_ns);
        // Each interval within 1 % of what the program measured around it.
        for (p, name) in [(s, "step"), (h, "halo")] {
            within_measured(
                p.end_ns - p.start_ns,
                steps[&(rank, name.to_string(), i as i64)],
                &format!("rank {rank} {name} {i}"),
            );
        }
    }
}

/// The report's phases: per phase (but `skip`) and rank, the time the
/// program measured, within 1 %.
fn check_report_times(
    phases: &[serde_json::Value],
    measured: &BTreeMap<(u32, String), Measured>,
    skip: &[&str],
) {
    for p in phases {
        let name = p["name"].as_str().unwrap();
        if skip.contains(&name) {
            continue;
        }
        for r in p["ranks"].as_array().unwrap() {
            let rank = r["rank"].as_u64().unwrap() as u32;
            let got = r["time_s"].as_f64().unwrap();
            within_measured(
                (got * 1e9).round() as i64,
                measured[&(rank, name.to_string())],
                &format!("rank {rank} {name} (report)"),
            );
        }
    }
}

fn report_json(trace: &Path, extra: &[&str]) -> serde_json::Value {
    let out = run_ok(hyscope().arg("report").arg(trace).arg("--json").args(extra));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn nested_phases_match_what_the_program_measured() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_phase_program(dir.path(), "nested");

    // Without hyscope: runs, and prints the same results.
    let plain = run_ok(&mut mpirun(&exe));
    let trace = dir.path().join("trace");
    let recorded = run_ok(&mut recorded_run(&trace, &exe));
    let (plain, recorded) = (stdout(&plain), stdout(&recorded));
    assert_eq!(lines(&plain, "result"), lines(&recorded, "result"));
    assert_eq!(lines(&plain, "result").len(), 2);
    assert_eq!(
        lines(&plain, "phase").len(),
        lines(&recorded, "phase").len()
    );

    let (measured, steps) = measured(&recorded);
    assert_eq!(measured.len(), 8, "{measured:?}");

    // The trace: every interval, nested as the program nests them.
    let t = Trace::open(&trace).unwrap();
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    for rank in [0, 1] {
        check_nested(&rows, rank, &measured, &steps, phase_source::API, true);
    }

    // The report: per phase and rank, the time the program measured.
    let a = report_json(&trace, &[]);
    let phases = a["phases"]["observed"].as_array().expect("phases observed");
    check_report_times(phases, &measured, &[]);
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["setup", "solver", "step", "halo"]);
    let depth: Vec<u64> = phases
        .iter()
        .map(|p| p["depth"].as_u64().unwrap())
        .collect();
    assert_eq!(depth, [0, 0, 1, 2]);
    assert_eq!(phases[2]["parent"], "solver");
    assert_eq!(phases[3]["parent"], "step");
    // The ring exchange is inside halo: one MPI_Sendrecv per step and rank.
    assert_eq!(phases[3]["mpi_calls"], 8);
    // Step 2 is the slow one (130 ms against 30 ms of sleep).
    let it = &phases[2]["iterations"];
    assert_eq!(it["count"], 4);
    assert_eq!(it["by_time_step"], true);
    assert_eq!(it["slowest"], 2, "{it}");
    // The OpenMP loop of each step is inside step, not inside halo.
    assert!(phases[2]["omp_region_s"].as_f64().unwrap() > 0.0);
    assert_eq!(phases[3]["omp_region_s"].as_f64().unwrap(), 0.0);

    // The text report shows the table; --phase one phase; an unknown name fails.
    let text = stdout(&run_ok(hyscope().arg("report").arg(&trace)));
    assert!(text.contains("\nPhases\n"), "{text}");
    assert!(text.contains("slowest step 2"), "{text}");
    // --phase restricts the whole report to the phase's time.
    let one = stdout(&run_ok(
        hyscope().args(["report", "--phase", "step"]).arg(&trace),
    ));
    assert!(
        one.contains("Restricted to phase step: 8 intervals in ")
            && !one.contains("  solver ")
            && one.contains("Phase step")
            && one.contains("Repetitions")
            && one.contains("Top findings"),
        "{one}"
    );
    // Inside "halo": the 8 ring exchanges (4 steps × 2 ranks) and nothing else
    // (not the barrier before, not MPI_Finalize after), matched as 8 messages;
    // no OpenMP region (the loop is outside halo).
    let halo = report_json(&trace, &["--phase", "halo"]);
    let focus = &halo["focus"];
    assert_eq!(focus["phase"], "halo");
    assert_eq!(focus["instances"], 8);
    // The exchange makes the two ranks' halos of a step overlap.
    assert_eq!(focus["windows"], 4, "{focus}");
    let (t, run) = (
        focus["time_s"].as_f64().unwrap(),
        focus["run_duration_s"].as_f64().unwrap(),
    );
    assert!(t >= 0.08 && t < run, "{focus}");
    // The restricted run lasts the phase's merged time: POP's elapsed time.
    let duration = halo["run"]["duration_s"].as_f64().unwrap();
    assert!((duration - t).abs() < 1e-9, "{duration} vs {t}");
    assert!((halo["pop"]["observed"]["elapsed_s"].as_f64().unwrap() - t).abs() < 1e-9);
    let calls: Vec<(String, u64)> = halo["mpi"]["observed"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["call"].as_str().unwrap().to_string(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(calls, [("MPI_Sendrecv".to_string(), 8)], "{calls:?}");
    assert_eq!(halo["messages"]["messages"].as_array().unwrap().len(), 8);
    let regions = halo["regions"]["observed"].as_array().map_or(0, Vec::len);
    assert_eq!(regions, 0);
    // The phase's own numbers are those of the whole-run table.
    let whole_halo = &phases[3];
    let focused_halo = halo["phases"]["observed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "halo")
        .unwrap();
    for k in ["time_s", "share", "mpi_calls", "instances"] {
        assert_eq!(focused_halo[k], whole_halo[k], "{k}");
    }
    // Inside "step": the 8 OpenMP loops, 1 per step and rank.
    let step = report_json(&trace, &["--phase", "step"]);
    let instances: u64 = step["regions"]["observed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["instances"].as_u64().unwrap())
        .sum();
    assert_eq!(instances, 8);
    // compare matches the phases by name (here a trace against itself).
    let out = run_ok(
        hyscope()
            .arg("report")
            .arg(&trace)
            .arg(&trace)
            .arg("--json"),
    );
    let cmp: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<&serde_json::Value> = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["section"] == "phase")
        .collect();
    // 4 phases: time, MPI time and instances (the same: none per instance).
    assert_eq!(rows.len(), 12, "{rows:?}");
    assert!(rows.iter().all(|r| r["a"] == r["b"]));
    let bad = hyscope()
        .args(["report", "--phase", "nope"])
        .arg(&trace)
        .output_within_limit()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no phase named \"nope\""),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn pcontrol_levels_and_control_tool_pause() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_phase_program(dir.path(), "control");

    // Without hyscope: omp_control_tool finds no tool (-2), same results.
    let plain = stdout(&run_ok(&mut mpirun(&exe)));
    assert_eq!(
        lines(&plain, "control"),
        ["control 0 -2 -2", "control 1 -2 -2"]
    );
    let trace = dir.path().join("trace");
    let recorded = stdout(&run_ok(&mut recorded_run(&trace, &exe)));
    // With it: pause and start succeed (omp_control_tool_success).
    assert_eq!(
        lines(&recorded, "control"),
        ["control 0 0 0", "control 1 0 0"]
    );
    assert_eq!(lines(&plain, "result"), lines(&recorded, "result"));

    let t = Trace::open(&trace).unwrap();
    let omp = omp_rows(&t);
    let mpi: Vec<(u32, MpiRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    let phases: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    for rank in [0, 1] {
        // 3 regions before the pause and 1 after: the 4 inside are absent.
        assert_eq!(count_kind(&omp, rank, OmpKind::Parallel), 4, "rank {rank}");
        assert_eq!(
            count_kind(&omp, rank, OmpKind::ImplicitTask),
            8,
            "rank {rank}"
        );
        let barriers: Vec<&MpiRecord> = mpi
            .iter()
            .filter(|(r, m)| *r == rank && m.call == mpi_call::MPI_Barrier)
            .map(|(_, m)| m)
            .collect();
        // 5 + 2 + 1; the 6 inside the pause are absent.
        assert_eq!(barriers.len(), 8, "rank {rank}");
        let mine: BTreeMap<&str, &PhaseRecord> = phases
            .iter()
            .filter(|(r, _)| *r == rank)
            .map(|(_, p)| (p.name.as_str(), p))
            .collect();
        // No "hidden": it was begun and ended inside the pause.
        assert_eq!(
            mine.keys().copied().collect::<Vec<_>>(),
            ["Pcontrol 2", "Pcontrol 3", "paused"]
        );
        let (p2, p3, paused) = (mine["Pcontrol 2"], mine["Pcontrol 3"], mine["paused"]);
        assert_eq!(
            (p2.source, p3.source),
            (phase_source::PCONTROL, phase_source::PCONTROL)
        );
        assert_eq!(paused.source, phase_source::PAUSE);
        // The program's MPI_Pcontrol(3) splits the two levels at one instant.
        assert_eq!(p2.end_ns, p3.start_ns);
        assert!(p3.end_ns <= paused.start_ns);
        let inside = |p: &PhaseRecord| {
            barriers
                .iter()
                .filter(|m| m.start_ns >= p.start_ns && m.end_ns <= p.end_ns)
                .count()
        };
        assert_eq!((inside(p2), inside(p3), inside(paused)), (5, 2, 0));
        let regions_inside_pause = omp
            .iter()
            .filter(|(r, o)| {
                *r == rank
                    && o.kind == OmpKind::Parallel as u8
                    && o.start_ns >= paused.start_ns
                    && o.end_ns <= paused.end_ns
            })
            .count();
        assert_eq!(regions_inside_pause, 0);
    }

    // The report's per-phase MPI calls: the barriers of each level (and its
    // closing MPI_Pcontrol call), on both ranks.
    let a = report_json(&trace, &[]);
    let phases = a["phases"]["observed"].as_array().expect("phases observed");
    let by: BTreeMap<&str, &serde_json::Value> = phases
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p))
        .collect();
    assert_eq!(by["Pcontrol 2"]["instances"], 2);
    assert_eq!(by["paused"]["mpi_calls"], 0);
    assert_eq!(by["paused"]["omp_region_s"].as_f64().unwrap(), 0.0);
}

#[test]
fn fortran_through_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/hyscope.f90");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/phases/fortran.f90");
    let exe = dir.path().join("fortran");
    // The module is compiled with the program; no library is linked.
    let out = Command::new("gfortran")
        .args(["-O1", "-g", "-J"])
        .arg(dir.path())
        .arg(&inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let plain = stdout(&run_ok(&mut Command::new(&exe)));
    let trace = dir.path().join("trace");
    let recorded = stdout(&run_ok(record_into(&trace).arg(&exe)));
    assert_eq!(lines(&plain, "result"), ["result 3"]);
    assert_eq!(lines(&recorded, "result"), ["result 3"]);

    let measured: BTreeMap<(String, i64), i64> = lines(&recorded, "phase ")
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                (f[1].to_string(), f[2].parse().unwrap()),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    let t = Trace::open(&trace).unwrap();
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    let got: Vec<(&str, u32, u8, i64)> = rows
        .iter()
        .map(|(_, p)| (p.name.as_str(), p.depth, p.source, p.iteration))
        .collect();
    assert_eq!(
        got,
        [
            ("start", 0, phase_source::API, NO_ITERATION),
            ("outer", 0, phase_source::API, NO_ITERATION),
            ("inner", 1, phase_source::API, 0),
            ("inner", 1, phase_source::API, 1),
            ("inner", 1, phase_source::API, 2),
            // The mark lasts until the end; the last time step is current.
            ("tail", 0, phase_source::MARK, 2),
        ]
    );
    // "start" began with the collector's start-up (not measured by the
    // program); "tail" ends at the process's exit.
    for (_, p) in rows
        .iter()
        .filter(|(_, p)| p.name != "tail" && p.name != "start")
    {
        let want = measured[&(p.name.clone(), p.iteration)] as f64;
        let d = (p.end_ns - p.start_ns) as f64;
        assert!((d - want).abs() <= 0.01 * want, "{}: {d} vs {want}", p.name);
    }
    // The report: inner repeated 3 times, step 1 the slowest (80 ms against 30).
    let a = report_json(&trace, &[]);
    let inner = &a["phases"]["observed"][2];
    assert_eq!(inner["name"], "inner");
    assert_eq!(inner["iterations"]["slowest"], 1);
}

/// One rank's phases part truncated to half: the report is made from the
/// intact data (rank 0's phases, every rank's OpenMP and MPI rows), exits 0
/// as for any partial trace, says first that the trace is partial naming the
/// file, and its phase table says that rank 1 is left out; `--json` carries
/// the same problem. `--phase` cannot be computed without rank 1's phases:
/// an error naming the file.
#[test]
fn a_damaged_phases_part_leaves_its_rank_out_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_phase_program(dir.path(), "nested");
    let trace = dir.path().join("trace");
    run_ok(&mut recorded_run(&trace, &exe));
    let whole = report_json(&trace, &[]);
    let t = Trace::open(&trace).unwrap();
    let part = t
        .parts(hyscope_format::Table::Phases)
        .iter()
        .find(|p| p.rank == 1)
        .expect("rank 1 has a phases part")
        .path
        .clone();
    let file = part
        .strip_prefix(&trace)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    hyscope_testkit::truncate_to_half(&part);

    // The text report: exit 0, the problem first, the phase table of rank 0
    // saying that rank 1 is left out.
    let text = stdout(&run_ok(hyscope().arg("report").arg(&trace)));
    let first = text.lines().skip(1).find(|l| !l.trim().is_empty());
    assert_eq!(
        first.map(str::trim),
        Some("PARTIAL TRACE: the numbers below leave out what is listed here"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  ! rank 1, {file}: the phases of rank 1 cannot be read (corrupt or truncated Parquet file"
        )),
        "{text}"
    );
    let section = &text[text.find("\nPhases\n").expect("a Phases section")..];
    let section = &section[..section[1..].find("\n\n").unwrap_or(section.len())];
    assert!(
        section.contains(&format!(
            "  ! rank 1's phases are missing: {file} cannot be read"
        )) && section.contains("every number of this table leaves rank 1 out"),
        "{section}"
    );
    for name in ["setup", "solver", "step", "halo"] {
        assert!(section.contains(&format!(" {name} ")), "{section}");
    }

    // The JSON: the same problem, the ranks left out, rank 0's phases as
    // in the intact trace, and no efficiency across ranks.
    let a = report_json(&trace, &[]);
    let problems = a["integrity"]["problems"].as_array().unwrap();
    let problem = problems
        .iter()
        .find(|p| p["file"] == file.as_str())
        .unwrap_or_else(|| panic!("no problem names {file}: {problems:?}"));
    assert_eq!(problem["rank"], 1);
    assert_eq!(problem["data_lost"], true);
    assert!(
        problem["what"]
            .as_str()
            .unwrap()
            .contains("corrupt or truncated Parquet file"),
        "{problem}"
    );
    assert_eq!(
        a["phases_missing"],
        serde_json::json!([{"rank": 1, "file": file}])
    );
    let (phases, intact) = (
        a["phases"]["observed"].as_array().expect("phases observed"),
        whole["phases"]["observed"].as_array().unwrap(),
    );
    assert_eq!(phases.len(), intact.len());
    for (p, w) in phases.iter().zip(intact) {
        assert_eq!(p["name"], w["name"]);
        let whole0 = w["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rank"] == 0);
        assert_eq!(p["ranks"].as_array().unwrap(), &[whole0.unwrap().clone()]);
        assert!(p["mpi_parallel_efficiency"].is_null(), "{p}");
        assert!(w["mpi_parallel_efficiency"].is_f64(), "{w}");
    }
    // The OpenMP and MPI rows of both ranks are whole.
    assert_eq!(a["run"]["omp_events"], whole["run"]["omp_events"]);
    assert_eq!(a["run"]["mpi_events"], whole["run"]["mpi_events"]);

    // Restricted to a phase: rank 1's time in it is unknown.
    let out = hyscope()
        .args(["report", "--phase", "step"])
        .arg(&trace)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&file)
            && stderr(&out).contains("the phases of rank 1 cannot be read"),
        "{}",
        stderr(&out)
    );

    // The Perfetto export: rank 0's phases, none of rank 1's, and a note
    // naming the file in the export's metadata and on standard error.
    let json_out = dir.path().join("damaged.json");
    let out = hyscope()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(&json_out)
        .arg(&trace)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let note = format!("the phases of rank 1 cannot be read ({file}: corrupt or truncated");
    assert!(stderr(&out).contains(&note), "{}", stderr(&out));
    let export: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
    let notes = export["metadata"]["hyscope"]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().contains(&note)),
        "{notes:?}"
    );
    let phase_pids: std::collections::BTreeSet<i64> = export["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "phase")
        .map(|e| e["pid"].as_i64().unwrap())
        .collect();
    assert_eq!(phase_pids.len(), 1, "only rank 0's phases: {phase_pids:?}");
}

#[test]
fn a_killed_process_keeps_its_finished_phases() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_phase_program(dir.path(), "killed");
    let trace = dir.path().join("trace");
    let out = record_into(&trace).arg(&exe).output_within_limit().unwrap();
    assert_eq!(stdout(&out).trim(), "ready", "{}", stderr(&out));
    // `hyscope record` encoded the spool and the phase journal it left.
    let t = Trace::open(&trace).unwrap();
    assert_eq!(
        t.manifest.ranks[0].end,
        Some(hyscope_format::ProcessEnd::Killed)
    );
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    let got: Vec<(&str, i64)> = rows
        .iter()
        .map(|(_, p)| (p.name.as_str(), p.iteration))
        .collect();
    // "open" was still open when the process died: not a phase.
    assert_eq!(
        got,
        [
            ("before", NO_ITERATION),
            ("step", 0),
            ("step", 1),
            ("step", 2)
        ]
    );
    assert!(!trace.join("spool").exists());
}

#[test]
fn nvtx_ranges_are_phases_without_a_rebuild() {
    let header = Path::new("/usr/local/include/nvtx3/nvToolsExt.h");
    assert!(
        header.is_file(),
        "{} is missing: run scripts/install-deps.sh (it installs the NVTX headers)",
        header.display()
    );
    let dir = tempfile::tempdir().unwrap();
    // No hyscope header or library: only NVTX's own headers.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/phases/nested_nvtx.c");
    let text = std::fs::read_to_string(&src).unwrap();
    assert!(!text.contains("#include <hyscope.h>"));
    let exe = build_mpi(dir.path(), "nested_nvtx", &text);

    // Without hyscope: runs, no tool loaded, the same results.
    let plain = stdout(&run_ok(mpirun(&exe).env_remove("NVTX_INJECTION64_PATH")));
    let trace = dir.path().join("trace");
    let recorded = stdout(&run_ok(
        recorded_run(&trace, &exe).env_remove("NVTX_INJECTION64_PATH"),
    ));
    assert_eq!(lines(&plain, "result"), lines(&recorded, "result"));
    assert_eq!(lines(&plain, "result").len(), 2);
    assert_eq!(
        lines(&plain, "instances"),
        ["instances 0 0", "instances 1 0"]
    );
    // NVTX's dlopen of NVTX_INJECTION64_PATH found the preloaded library.
    assert_eq!(
        lines(&recorded, "instances"),
        ["instances 0 1", "instances 1 1"]
    );
    let (measured, steps) = measured(&recorded);
    assert_eq!(measured.len(), 12, "{measured:?}");

    let t = Trace::open(&trace).unwrap();
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    assert!(rows.iter().all(|(_, p)| p.source == phase_source::NVTX));
    for rank in [0, 1] {
        // The same phases as with hyscope.h (no time steps: NVTX has none).
        check_nested(&rows, rank, &measured, &steps, phase_source::NVTX, false);
        let of = |name: &str| -> Vec<&PhaseRecord> {
            rows.iter()
                .filter(|(r, p)| *r == rank && p.name == name)
                .map(|(_, p)| p)
                .collect()
        };
        let count = |name: &str| of(name).len();
        assert_eq!(
            ["overlap", "io:checkpoint", "io:written"].map(count),
            [1, 1, 1]
        );
        let (solver, step, halo) = (of("solver"), of("step"), of("halo"));
        // The start/end range: the starting thread's, begun in step 1 (two
        // ranges open around it), ended by another thread during step 2.
        let overlap = of("overlap")[0];
        assert_eq!((overlap.thread, overlap.depth), (0, 2));
        assert!(step[1].start_ns <= overlap.start_ns && overlap.start_ns <= halo[1].start_ns);
        assert!(halo[2].end_ns <= overlap.end_ns && overlap.end_ns <= step[2].end_ns);
        within_measured(
            overlap.end_ns - overlap.start_ns,
            measured[&(rank, "overlap".to_string())],
            &format!("rank {rank} overlap"),
        );
        // The domain's range and mark, named `domain:message`; the mark has no duration.
        let (ck, written) = (of("io:checkpoint")[0], of("io:written")[0]);
        assert_eq!((ck.depth, written.depth), (0, 1));
        assert!(solver[0].end_ns <= ck.start_ns);
        assert_eq!(written.start_ns, written.end_ns);
        assert!(ck.start_ns <= written.start_ns && written.end_ns <= ck.end_ns);
        within_measured(
            ck.end_ns - ck.start_ns,
            measured[&(rank, "io:checkpoint".to_string())],
            &format!("rank {rank} io:checkpoint"),
        );
    }

    // The report: the same table as with hyscope.h, source nvtx.
    let a = report_json(&trace, &[]);
    let phases = a["phases"]["observed"].as_array().expect("phases observed");
    assert!(phases.iter().all(|p| p["source"] == "nvtx"));
    check_report_times(phases, &measured, &["io:written"]);
    assert_eq!(phases.len(), 7);
}

#[test]
fn record_keeps_a_users_nvtx_tool() {
    // A user's NVTX_INJECTION64_PATH stays, with one warning; this test's
    // "tool" is a file that is not a library: NVTX ignores a tool it cannot load.
    let dir = tempfile::tempdir().unwrap();
    let exe = build_mpi(
        dir.path(),
        "one_range",
        "#include <nvtx3/nvToolsExt.h>\n#include <mpi.h>\n\
         int main(int c, char **v) { MPI_Init(&c, &v); nvtxRangePushA(\"r\"); \
         nvtxRangePop(); MPI_Finalize(); return 0; }\n",
    );
    let tool = dir.path().join("not-a-tool.so");
    std::fs::write(&tool, "").unwrap();
    let trace = dir.path().join("trace");
    let out = run_ok(recorded_run(&trace, &exe).env("NVTX_INJECTION64_PATH", &tool));
    let err = stderr(&out);
    assert_eq!(
        err.matches("NVTX_INJECTION64_PATH is set to").count(),
        1,
        "{err}"
    );
    let t = Trace::open(&trace).unwrap();
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    assert!(rows.is_empty(), "{rows:?}");
}

#[test]
fn nvtx_domains_keep_their_own_stacks() {
    // Pops of one domain leave another's ranges open (NVTX: one push/pop
    // stack per domain); a pop with nothing open and the end of a range
    // never started are refused with a warning, and the program runs on.
    let dir = tempfile::tempdir().unwrap();
    let exe = build_omp(
        dir.path(),
        "domains",
        r#"
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
int main(void) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("D");
    nvtxEventAttributes_t b = {0};
    b.version = NVTX_VERSION;
    b.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    b.messageType = NVTX_MESSAGE_TYPE_ASCII;
    b.message.ascii = "b";
    int levels[6];
    levels[0] = nvtxRangePushA("a");
    levels[1] = nvtxDomainRangePushEx(d, &b);
    levels[2] = nvtxRangePushA("c");
    levels[3] = nvtxRangePop();          /* c */
    levels[4] = nvtxRangePop();          /* a: D:b stays open */
    levels[5] = nvtxDomainRangePop(d);   /* D:b */
    int extra = nvtxRangePop();          /* nothing open */
    nvtxRangeEnd(12345);                 /* never started */
    nvtxRangeStartA("left open");
    printf("levels %d %d %d %d %d %d extra %s\n", levels[0], levels[1], levels[2],
           levels[3], levels[4], levels[5], extra < 0 ? "refused" : "accepted");
    return 0;
}
"#,
    );
    let plain = run_ok(Command::new(&exe).env_remove("NVTX_INJECTION64_PATH"));
    let trace = dir.path().join("trace");
    let mut cmd = record_into(&trace);
    cmd.arg(&exe).env_remove("NVTX_INJECTION64_PATH");
    let out = run_ok(&mut cmd);
    // Without a tool NVTX returns its "no tool" level for every call.
    assert!(stdout(&plain).starts_with("levels "), "{}", stdout(&plain));
    assert_eq!(
        stdout(&out).trim(),
        "levels 0 0 1 1 0 0 extra refused",
        "{}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(err.contains("nvtxRangePop without an open range"), "{err}");
    assert!(err.contains("nvtxRangeEnd of a range not started"), "{err}");
    assert!(
        err.contains("phases still open at exit, ended there: left open"),
        "{err}"
    );

    let t = Trace::open(&trace).unwrap();
    let rows: Vec<(u32, PhaseRecord)> = t.read_records(&ScanOptions::default()).unwrap();
    let got: Vec<(&str, u32)> = rows
        .iter()
        .map(|(_, p)| (p.name.as_str(), p.depth))
        .collect();
    assert_eq!(got, [("a", 0), ("D:b", 1), ("c", 2), ("left open", 0)]);
    let of = |n: &str| &rows.iter().find(|(_, p)| p.name == n).unwrap().1;
    // a ended before D:b, though D:b began inside it; c inside both.
    assert!(of("a").end_ns <= of("D:b").end_ns);
    assert!(of("D:b").start_ns <= of("c").start_ns && of("c").end_ns <= of("a").end_ns);
}

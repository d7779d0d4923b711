//! `hyscope record` with Open MPI at 2 ranks, in both positions:
//! `hyscope record -- mpirun -np 2 ./app` and `mpirun -np 2 hyscope record -- ./app`.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;

use hyscope_format::{MpiRecord, OmpKind, ScanOptions, Trace};
use record_support::*;

/// Both ranks wrote their part of the trace, with the OpenMP regions the program has.
fn check_trace(dir: &Path) {
    let trace = Trace::open(dir).unwrap();
    assert_eq!(trace.ranks(), vec![0, 1]);
    let ranks: Vec<u32> = trace.manifest.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, vec![0, 1]);
    assert!(trace.manifest.ranks.iter().all(|r| r.finished));
    // Both ranks convert the TSC with the node's one calibration.
    let hz: Vec<Option<f64>> = trace.manifest.ranks.iter().map(|r| r.tsc_hz).collect();
    assert_eq!(hz[0], hz[1], "{hz:?}");
    let rows = omp_rows(&trace);
    for rank in [0, 1] {
        assert_eq!(count_kind(&rows, rank, OmpKind::Parallel), 2, "rank {rank}");
        assert_eq!(
            count_kind(&rows, rank, OmpKind::ImplicitTask),
            4,
            "rank {rank}"
        );
    }
    // The MPI calls of the program, per rank.
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    for rank in [0, 1] {
        assert_mpi_src_calls(&mpi, rank);
    }
}

fn summary_lines(err: &str) -> usize {
    err.lines()
        .filter(|l| l.starts_with("hyscope: trace "))
        .count()
}

#[test]
fn record_in_front_of_mpirun() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // sum over 2 ranks of 2 regions x (1 + 2)
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
    assert_eq!(summary_lines(&err), 1, "{err}");
    assert!(err.contains(", 2 ranks, "), "{err}");
    check_trace(&dir);
    // The collector's own work at the end of MPI_Init, the slowest rank's,
    // is shown with what recording cost.
    let trace = Trace::open(&dir).unwrap();
    let init_ns = trace
        .manifest
        .ranks
        .iter()
        .map(|r| r.init_ns)
        .max()
        .unwrap();
    assert!(init_ns > 0);
    let shown = format!("MPI_Init +{}", hyscope_viewer::units::ns(init_ns as f64));
    assert!(err.contains(&shown), "no `{shown}` in {err}");
    // The report says it too, in its JSON the same seconds, counted in the
    // MPI_Init rows (which end after it).
    let report = run_ok(hyscope().arg("report").arg(&dir));
    let text = String::from_utf8_lossy(&report.stdout);
    let seconds = hyscope_analyzer::model::ns_to_s(init_ns as i64);
    let said = hyscope_viewer::report::collector_in_mpi_init(seconds);
    assert!(
        text.lines()
            .any(|l| l.contains("collector in MPI_Init") && l.contains(&said)),
        "no `{said}` in the report:\n{text}"
    );
    let json = run_ok(hyscope().args(["report", "--json"]).arg(&dir));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    // serde_json reads floats back to within an ulp or so, not bit for bit.
    let in_json = v["run"]["collector_init_s"].as_f64().unwrap();
    assert!(
        (in_json - seconds).abs() < 1e-12,
        "{in_json} s in the JSON, {seconds} s"
    );
    // The ring's nonblocking receives received what the MPI_Isend sent
    // (one double per rank), known at their completion in the MPI_Waitall
    // and counted for the MPI_Irecv that posted them; the wait received
    // nothing of its own. The text report says the same.
    let calls = v["mpi"]["observed"]["calls"].as_array().unwrap();
    let bytes = |call: &str, field: &str| {
        calls
            .iter()
            .find(|c| c["call"] == call)
            .unwrap_or_else(|| panic!("no {call} in {calls:?}"))[field]
            .as_u64()
            .unwrap()
    };
    assert_eq!(bytes("MPI_Isend", "bytes_sent"), 16);
    assert_eq!(bytes("MPI_Irecv", "bytes_recv"), 16);
    assert_eq!(bytes("MPI_Waitall", "bytes_recv"), 0);
    let irecv = text
        .lines()
        .find(|l| l.trim_start().starts_with("MPI_Irecv "))
        .unwrap_or_else(|| panic!("no MPI_Irecv row in\n{text}"));
    // ... sent, received: the row's last two cells.
    let cells: Vec<&str> = irecv.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 4..], ["0", "B", "16", "B"], "{irecv}");
}

#[test]
fn record_per_rank_under_mpirun() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "mpi_app", MPI_SRC);
    let dir = tmp.path().join("trace");
    let out = std::process::Command::new("mpirun")
        .args(mpirun_args(2))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .arg("record")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 12\n");
    // Only rank 0 prints the job's summary.
    assert_eq!(summary_lines(&err), 1, "{err}");
    assert!(err.contains(", 2 ranks, "), "{err}");
    check_trace(&dir);
}

#[test]
fn per_rank_default_names_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "agree", MPI_SRC);
    let out = std::process::Command::new("mpirun")
        .current_dir(tmp.path())
        .args(mpirun_args(2))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .args(["record", "--"])
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dirs = trace_dirs_in(tmp.path(), "hyscope-agree-");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    check_trace(&dirs[0]);
}

/// One rank of 2 OpenMP threads under `mpirun --bind-to core`: the manifest
/// holds the rank's one CPU and the host's CPU count, and the report names
/// the sharing. Under `--bind-to none` the rank may use every CPU: no finding.
#[test]
fn threads_bound_to_one_core_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "hybrid_app", MPI_SRC);
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    for bind in ["core", "none"] {
        let out_dir = tmp.path().join(format!("trace-{bind}"));
        run_ok(
            record_into(&out_dir)
                .arg("mpirun")
                .args(mpirun_args(1))
                .args(["--bind-to", bind, "-x", "OMP_NUM_THREADS=2"])
                .arg(&exe),
        );
        let trace = Trace::open(&out_dir).unwrap();
        let rank = &trace.manifest.ranks[0];
        assert_eq!(rank.node_cpus, host_cpus);
        let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
        let p = &a.run.placement[0];
        assert_eq!(p.threads, 2);
        let finding = a
            .findings
            .iter()
            .find(|f| f.title.starts_with("OpenMP threads share CPUs"));
        if bind == "core" {
            assert_eq!(rank.cores.len(), 1, "{:?}", rank.cores);
            assert!(p.threads_share_cpus());
            // On a host with a CPU to spare the binding is the fault.
            assert_eq!(p.bound_too_tightly(), host_cpus >= 2);
            let f = finding.expect("placement finding");
            assert_eq!(
                f.title,
                format!(
                    "OpenMP threads share CPUs: rank 0 runs 2 threads on CPU {}",
                    rank.cores[0]
                )
            );
            // The report's Run section names it too.
            let report = hyscope()
                .arg("report")
                .arg(&out_dir)
                .output_within_limit()
                .unwrap();
            let text = String::from_utf8_lossy(&report.stdout);
            let line = format!(
                "CPU placement          rank 0: 2 OpenMP threads on CPU {} (1 of {}'s {host_cpus}",
                rank.cores[0], rank.host
            );
            assert!(text.contains(&line), "{line}\n{text}");
        } else {
            assert_eq!(rank.cores.len() as u32, host_cpus, "{:?}", rank.cores);
            assert_eq!(finding.is_some(), host_cpus < 2);
        }
    }
}

/// The OpenMP runtime's own binding inside a wide mask: under
/// `OMP_PROC_BIND=master` both threads of the rank run on the primary's core
/// (their masks, read before `MPI_Finalize`, say so) and the finding names the
/// OpenMP setting (in profile mode too, with a gain from the threads' busy
/// totals); under `OMP_PROC_BIND=close` each has a core of its own.
#[test]
fn threads_pinned_together_by_omp_proc_bind_are_reported() {
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if host_cpus < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "hybrid_app", MPI_SRC);
    for (bind, mode) in [
        ("master", "trace"),
        ("close", "trace"),
        ("master", "profile"),
    ] {
        let out_dir = tmp.path().join(format!("trace-{bind}-{mode}"));
        run_ok(
            hyscope()
                .args(["record", "--mode", mode, "-o"])
                .arg(&out_dir)
                .arg("--")
                .arg("mpirun")
                .args(mpirun_args(1))
                .args(["--bind-to", "none", "-x", "OMP_NUM_THREADS=2"])
                .args([
                    "-x",
                    &format!("OMP_PROC_BIND={bind}"),
                    "-x",
                    "OMP_PLACES=cores",
                ])
                .arg(&exe),
        );
        let trace = Trace::open(&out_dir).unwrap();
        let rank = &trace.manifest.ranks[0];
        assert_eq!(rank.cores.len() as u32, host_cpus, "{:?}", rank.cores);
        let masks: Vec<&Vec<u32>> = rank.thread_cpus.iter().map(|t| &t.cpus).collect();
        assert_eq!(masks.len(), 2, "{:?}", rank.thread_cpus);
        assert!(
            masks.iter().all(|m| m.len() == 1),
            "one core each: {masks:?}"
        );
        let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
        let p = &a.run.placement[0];
        let finding = a
            .findings
            .iter()
            .find(|f| f.title.starts_with("OpenMP threads share CPUs"));
        if bind == "master" {
            assert_eq!(masks[0], masks[1], "the primary's place for both");
            assert!(p.pinned_together() && p.threads_share_cpus());
            let f = finding.expect("placement finding");
            assert_eq!(
                f.title,
                format!(
                    "OpenMP threads share CPUs: rank 0 runs 2 threads on CPU {}",
                    masks[0][0]
                )
            );
            assert!(
                f.what_to_do.contains("OMP_PROC_BIND=close"),
                "{}",
                f.what_to_do
            );
            // Profile mode estimates it from the threads' busy totals.
            assert!(f.cost_s > 0.0, "{f:?}");
            assert_eq!(f.what_to_do.contains("profile mode"), mode == "profile");
            let report = hyscope()
                .arg("report")
                .arg(&out_dir)
                .output_within_limit()
                .unwrap();
            let text = String::from_utf8_lossy(&report.stdout);
            assert!(text.contains("bound there by the OpenMP runtime"), "{text}");
        } else {
            assert_ne!(masks[0], masks[1], "a core each");
            assert!(!p.threads_share_cpus());
            assert!(finding.is_none(), "{finding:?}");
        }
    }
}

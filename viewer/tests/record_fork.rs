//! Processes that a program starts get identities of their own:
//! `tests/omp/spawn.c` forks one child that keeps running and forks and
//! execs another, each running a number of parallel regions it prints with
//! its pid. Recorded alone and as a 2-rank MPI job, every process's regions
//! are under its own id (none mixed into its parent's files), the children
//! say which rank started them, and the report lists them.

use crate::record_support;
use crate::tui_frame;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use hyscope_format::{OmpKind, Trace};
use record_support::*;

/// (role, pid, parent pid, regions) as the program printed them.
fn printed(out: &Output) -> Vec<(String, u32, u32, usize)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [role, "pid", pid, "ppid", ppid, "regions", n] => Some((
                    role.to_string(),
                    pid.parse().ok()?,
                    ppid.parse().ok()?,
                    n.parse().ok()?,
                )),
                _ => None,
            }
        })
        .collect()
}

/// Check the trace against what the processes printed; `ranks` is the
/// job's rank count. Returns the report's text.
fn check(trace_dir: &Path, out: &Output, ranks: u32) -> String {
    let procs = printed(out);
    assert_eq!(procs.len() as u32, 3 * ranks, "{procs:?}");
    let trace = Trace::open(trace_dir).unwrap();
    assert!(
        trace.problems().is_empty(),
        "the trace has problems: {:?}",
        trace.problems()
    );
    let infos: BTreeMap<u32, _> = trace.manifest.ranks.iter().map(|r| (r.pid, r)).collect();
    assert_eq!(infos.len(), procs.len(), "one id per process: {infos:?}");
    let rows = omp_rows(&trace);
    let parents: BTreeMap<u32, u32> = procs
        .iter()
        .filter(|p| p.0.starts_with("parent-"))
        .map(|p| (p.1, p.0["parent-".len()..].parse().unwrap()))
        .collect();
    for (role, pid, ppid, regions) in &procs {
        let info = infos
            .get(pid)
            .unwrap_or_else(|| panic!("{role} (pid {pid}) has no rank file"));
        assert_eq!(
            count_kind(&rows, info.rank, OmpKind::Parallel),
            *regions,
            "{role} (pid {pid}, id {})",
            info.rank
        );
        if role.starts_with("parent-") {
            assert!(info.rank < ranks, "{role} is a rank: {}", info.rank);
            assert!(info.child_of.is_none());
            assert_eq!(role, &format!("parent-{}", info.rank));
        } else {
            assert!(info.rank >= ranks, "{role} has an id after the ranks");
            let of = info.child_of.expect("a child says where it comes from");
            assert_eq!(of.parent_pid, *ppid, "{role}");
            assert_eq!(Some(&of.rank), parents.get(ppid), "{role}");
            assert_eq!(
                info.command.last().map(String::as_str) == Some("exec-child"),
                role == "exec-child"
            );
        }
    }
    let report = hyscope()
        .arg("report")
        .arg(trace_dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    assert!(
        text.contains(&format!("{ranks} (+ {} child processes)", 2 * ranks)),
        "{text}"
    );
    for (role, pid, ..) in procs.iter().filter(|p| !p.0.starts_with("parent-")) {
        let id = infos[pid].rank;
        assert!(
            text.contains(&format!("rank {id} is pid {pid}, started by rank")),
            "{role}: {text}"
        );
    }
    let json = hyscope()
        .args(["report", "--json"])
        .arg(trace_dir)
        .output_within_limit()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["run"]["children"].as_array().map(Vec::len),
        Some(2 * ranks as usize)
    );
    // The TUI's summary counts them the same way.
    let data = hyscope_viewer::tui::data::Data::open_blocking(trace_dir).expect("open trace");
    let mut app = hyscope_viewer::tui::app::App::new(data);
    let frame = tui_frame::render(&mut app, 120, 30);
    assert!(
        frame.contains(&format!("ranks {ranks} (+ {} child processes)", 2 * ranks)),
        "{frame}"
    );
    text
}

#[test]
fn forked_and_execed_children_of_an_openmp_program() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build_omp_test_program(dir.path(), "spawn");
    let out_dir = dir.path().join("trace");
    let out = run_ok(record_into(&out_dir).arg(&prog));
    check(&out_dir, &out, 1);
}

#[test]
fn children_of_mpi_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/omp/spawn.c");
    let text = std::fs::read_to_string(src).unwrap();
    let prog = build_mpi(dir.path(), "spawn", &format!("#define WITH_MPI 1\n{text}"));
    let out_dir = dir.path().join("trace");
    let out = run_ok(
        record_into(&out_dir)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&prog),
    );
    let text = check(&out_dir, &out, 2);
    assert!(text.contains("Open MPI"), "{text}");
}

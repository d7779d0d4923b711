//! A process that puts another program in its place (exec) keeps what each
//! program recorded: `tests/omp/exec.c` runs parallel regions and execs
//! itself (or `/bin/true`) through each of the C library's exec functions,
//! execs that fail, children made by `fork` and `vfork` that exec, an exec
//! while another thread is inside a parallel region, and MPI ranks that
//! exec; every program prints the regions it ran and how it ended. The
//! trace holds each program's regions exactly, under an id of its own, the
//! programs that exec'd end as `exec` with the path (never "ended without
//! warning"), and the report says which program each exec started.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use hyscope_format::{MpiRecord, OmpKind, ProcessEnd, RankInfo, ScanOptions, Trace, mpi_call};
use record_support::*;

/// What one program of a process printed when it ended.
#[derive(Debug)]
struct Printed {
    pid: u32,
    regions: usize,
    /// `exec HOW PATH`, `exit` or `crash`.
    end: String,
}

fn printed(out: &Output) -> Vec<Printed> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [
                    "image",
                    "pid",
                    pid,
                    "rank",
                    _,
                    "regions",
                    n,
                    "end",
                    end @ ..,
                ] => Some(Printed {
                    pid: pid.parse().ok()?,
                    regions: n.parse().ok()?,
                    end: end.join(" "),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The errno of each exec that failed, in order.
fn failed(out: &Output) -> Vec<i32> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("failed ")?
                .split(" errno ")
                .nth(1)?
                .parse()
                .ok()
        })
        .collect()
}

/// `tests/omp/exec.c` built into `dir` (with MPI when `mpi`).
fn program(dir: &Path, mpi: bool) -> PathBuf {
    if mpi {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/omp/exec.c");
        let text = std::fs::read_to_string(src).unwrap();
        build_mpi(dir, "exec", &format!("#define WITH_MPI 1\n{text}"))
    } else {
        build_omp_test_program(dir, "exec")
    }
}

/// `hyscope record` of `launcher` (e.g. `mpirun -np 2`) then the program
/// with `steps`, its directory first in `PATH` (for `execvp` and `execlp`).
fn record(dir: &Path, prog: &Path, launcher: &[String], steps: &[&str]) -> (PathBuf, Output) {
    record_with(dir, prog, launcher, steps, &[])
}

/// [`record`] with more variables in the environment.
fn record_with(
    dir: &Path,
    prog: &Path,
    launcher: &[String],
    steps: &[&str],
    env: &[(&str, &str)],
) -> (PathBuf, Output) {
    let trace = dir.join("trace");
    let path = std::env::var("PATH").unwrap_or_default();
    let out = record_into(&trace)
        .args(launcher)
        .arg(prog)
        .args(steps)
        .env(
            "PATH",
            format!("{}:{path}", prog.parent().unwrap().display()),
        )
        .envs(env.iter().copied())
        .output_within_limit()
        .unwrap();
    (trace, out)
}

/// Each program's rank file, by process (pid), in id order: the order the
/// programs of a process ran in.
fn programs_by_pid(trace: &Trace) -> BTreeMap<u32, Vec<RankInfo>> {
    let mut by: BTreeMap<u32, Vec<RankInfo>> = BTreeMap::new();
    for r in &trace.manifest.ranks {
        by.entry(r.pid).or_default().push(r.clone());
    }
    for v in by.values_mut() {
        v.sort_by_key(|r| r.rank);
    }
    by
}

fn report(trace: &Path, json: bool) -> Output {
    let mut cmd = hyscope();
    cmd.arg("report");
    if json {
        cmd.arg("--json");
    }
    run_ok(cmd.arg(trace))
}

/// The POP metrics of `report --json`.
fn pop(trace: &Path) -> serde_json::Value {
    let json: serde_json::Value = serde_json::from_slice(&report(trace, true).stdout).unwrap();
    json["pop"]["observed"].clone()
}

/// The value of the POP tree's node `name`.
fn pop_value(pop: &serde_json::Value, name: &str) -> f64 {
    fn find<'a>(n: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
        if n["name"] == name {
            return Some(n);
        }
        n["children"].as_array()?.iter().find_map(|c| find(c, name))
    }
    find(&pop["tree"], name)
        .and_then(|n| n["value"]["observed"].as_f64())
        .unwrap_or_else(|| panic!("{name} is not observed: {pop}"))
}

/// The additive model's loss `name`, in core-seconds.
fn pop_loss_s(pop: &serde_json::Value, name: &str) -> f64 {
    pop["additive"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .and_then(|l| l["seconds_core"].as_f64())
        .unwrap_or_else(|| panic!("no loss {name}: {pop}"))
}

/// The POP metrics' processes (`scope.processes`): each one's ids.
fn pop_processes(pop: &serde_json::Value) -> Vec<Vec<u64>> {
    serde_json::from_value(pop["scope"]["processes"].clone()).unwrap()
}

fn ids(v: &serde_json::Value) -> Vec<u64> {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// Check the trace against what the programs printed: per process, its
/// programs in the order they ran, each under an id of its own with exactly
/// the regions it printed and the end it printed; each program an exec
/// started named as such in the analysis. Returns the text report.
fn check(trace_dir: &Path, out: &Output) -> String {
    let trace = Trace::open(trace_dir).unwrap();
    assert!(
        trace.problems().is_empty(),
        "the trace has problems: {:?}",
        trace.problems()
    );
    let rows = omp_rows(&trace);
    let by_pid = programs_by_pid(&trace);
    let mut printed_by_pid: BTreeMap<u32, Vec<Printed>> = BTreeMap::new();
    for p in printed(out) {
        printed_by_pid.entry(p.pid).or_default().push(p);
    }
    assert_eq!(
        printed_by_pid.keys().collect::<Vec<_>>(),
        by_pid.keys().collect::<Vec<_>>(),
        "one process in the trace per process that printed:\n{by_pid:#?}"
    );
    let json: serde_json::Value = serde_json::from_slice(&report(trace_dir, true).stdout).unwrap();
    let children = json["run"]["children"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let execs = json["run"]["execs"].as_array().cloned().unwrap_or_default();
    let exec_of = |id: u32| {
        children
            .iter()
            .find(|c| c["rank"] == id)
            .map(|c| c["exec_of"].as_u64())
    };
    let text = String::from_utf8_lossy(&report(trace_dir, false).stdout).into_owned();
    for (pid, programs) in &by_pid {
        let said = &printed_by_pid[pid];
        assert_eq!(
            programs.len(),
            said.len(),
            "pid {pid}: one id per program it ran: {programs:#?} against {said:?}"
        );
        for (k, (info, p)) in programs.iter().zip(said).enumerate() {
            let id = info.rank;
            assert_eq!(
                count_kind(&rows, id, OmpKind::Parallel),
                p.regions,
                "pid {pid}, program {k} (id {id}): {p:?}"
            );
            assert!(info.exit_ns.is_some(), "id {id}: its end is stamped");
            match p.end.split_whitespace().collect::<Vec<_>>().as_slice() {
                ["exec", _how, path] => {
                    assert_eq!(
                        info.end,
                        Some(ProcessEnd::Exec {
                            path: path.to_string()
                        }),
                        "id {id}"
                    );
                    let next = programs.get(k + 1).map(|n| n.rank);
                    let e = execs
                        .iter()
                        .find(|e| e["rank"] == id)
                        .unwrap_or_else(|| panic!("id {id} is no exec in the analysis: {execs:?}"));
                    assert_eq!(e["next"].as_u64(), next.map(u64::from), "id {id}");
                    let line = match next {
                        Some(n) => format!(
                            "rank {id} (pid {pid}) exec'd {path}, which recorded as rank {n}; everything rank {id} recorded before is in the trace"
                        ),
                        None => format!(
                            "rank {id} (pid {pid}) exec'd {path}, which recorded nothing; everything rank {id} recorded before is in the trace"
                        ),
                    };
                    assert!(text.contains(&line), "{line}:\n{text}");
                }
                ["exit"] => assert_eq!(info.end, Some(ProcessEnd::Finished), "id {id}"),
                _ => {}
            }
            if k > 0 {
                // The same process after an exec: an id after the ranks, from
                // the same launcher rank, and the program it replaced.
                let first = &programs[0];
                let of = info
                    .child_of
                    .expect("a program after an exec says where it comes from");
                assert_eq!(
                    of.rank,
                    first.child_of.map_or(first.rank, |c| c.rank),
                    "id {id}"
                );
                assert_eq!(
                    exec_of(id),
                    Some(Some(u64::from(programs[k - 1].rank))),
                    "id {id}"
                );
                let line = format!(
                    "rank {id} is pid {pid}, the program rank {} exec'd: ",
                    programs[k - 1].rank
                );
                assert!(text.contains(&line), "{line}:\n{text}");
            }
        }
    }
    assert!(!text.contains("ended without warning"), "{text}");
    text
}

#[test]
fn each_program_of_a_process_keeps_its_own_events() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    // Every exec function, the variadic ones last (they pass at most six
    // steps on, through arguments past the registers).
    let steps = [
        "3", "execv", "4", "execve", "2", "execvp", "5", "execvpe", "1", "fexecve", "2",
        "execveat", "3", "execl", "1", "execlp", "2", "execle", "1",
    ];
    let (trace, out) = record(dir.path(), &prog, &[], &steps);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        printed(&out).len(),
        10,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = check(&trace, &out);
    assert!(text.contains("1 (+ 9 exec'd programs)"), "{text}");
    // POP: one process of 2 threads, whose programs ran one after the other.
    let p = pop(&trace);
    assert_eq!(p["cores"], 2, "{p}");
    assert_eq!(pop_processes(&p), [(0..10).collect::<Vec<u64>>()], "{p}");
    assert_eq!(pop_value(&p, "MPI load balance"), 1.0, "{p}");
    let json: serde_json::Value = serde_json::from_slice(&report(&trace, true).stdout).unwrap();
    // The findings' time lost per rank: the region's fork/join over the one
    // process that ran it (its programs' add up), not over 10 ranks.
    let region = &json["regions"]["observed"][0];
    assert_eq!(region["location"]["label"], "exec.c:70", "{region}");
    assert_eq!(region["instances"], 24, "{region}");
    let finding = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"] == "fork/join overhead of region exec.c:70 (24 instances)")
        .unwrap_or_else(|| panic!("{}", json["findings"]));
    assert_eq!(finding["cost_s"], region["fork_join_s"], "{finding}");
    // The programs ran one after the other: the host never ran more
    // threads than one of them (2), whatever its CPUs.
    let placement = json["run"]["placement"].as_array().unwrap();
    assert_eq!(placement.len(), 10, "{placement:?}");
    assert!(
        placement.iter().all(|p| p["host_threads"] == 2),
        "{placement:?}"
    );
}

/// A chain of single-thread programs (`OMP_THREAD_LIMIT=1`), each exec'd
/// by the one before: POP's one process of one core over the chain's whole
/// time line, from the first program's first event to the last one's last
/// (not three ranks at once: 3 cores, most of them idle, the MPI load
/// balance comparing the programs). With one thread and no MPI, the
/// useful time and the OpenMP runtime's loss make up the elapsed time
/// exactly.
#[test]
fn a_chain_of_programs_is_one_process_in_the_pop_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    let (trace_dir, out) = record_with(
        dir.path(),
        &prog,
        &[],
        &["3", "execv", "4", "execvp", "2"],
        &[("OMP_THREAD_LIMIT", "1")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = check(&trace_dir, &out);
    assert!(
        text.contains("ranks × threads        1 (+ 2 exec'd programs) × 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "one process per rank, its exec'd programs joined: rank 0 (programs 0, 1, 2)"
        ),
        "{text}"
    );
    // The chain's time line: from its first program's first event to its
    // last one's last, each program's rows ended at its exit (what the
    // runtime closes later is not the application's time).
    let trace = Trace::open(&trace_dir).unwrap();
    let exit: BTreeMap<u32, i64> = trace
        .manifest
        .ranks
        .iter()
        .map(|r| (r.rank, r.exit_ns.expect("its end is stamped")))
        .collect();
    let rows = omp_rows(&trace);
    let first = rows.iter().map(|(_, r)| r.start_ns).min().unwrap();
    let last = rows
        .iter()
        .map(|(id, r)| r.end_ns.min(exit[id]))
        .max()
        .unwrap();
    let p = pop(&trace_dir);
    assert_eq!(p["cores"], 1, "{p}");
    assert_eq!(pop_processes(&p), [[0, 1, 2]], "{p}");
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    assert_eq!((elapsed * 1e9).round() as i64, last - first, "{p}");
    for name in [
        "MPI parallel efficiency",
        "MPI load balance",
        "MPI communication efficiency",
        "OpenMP load balance",
    ] {
        assert_eq!(pop_value(&p, name), 1.0, "{name}: {p}");
    }
    let useful = p["useful_s"][0][0].as_f64().unwrap();
    assert_eq!(p["useful_s"].as_array().map(Vec::len), Some(1), "{p}");
    let pe = pop_value(&p, "Parallel efficiency");
    assert!((pe - useful / elapsed).abs() < 1e-12, "{p}");
    let runtime = pop_loss_s(&p, "OpenMP runtime");
    assert!((useful + runtime - elapsed).abs() < 1e-9, "{p}");
    for loss in ["MPI", "serial code (idle threads)", "other"] {
        assert!(pop_loss_s(&p, loss).abs() < 1e-9, "{loss}: {p}");
    }
    // The TUI's summary says the same.
    let data = hyscope_viewer::tui::data::Data::open_blocking(&trace_dir).expect("open trace");
    let mut app = hyscope_viewer::tui::app::App::new(data);
    let frame = crate::tui_frame::render(&mut app, 200, 40);
    assert!(frame.contains("ranks 1 (+ 2 exec'd programs)"), "{frame}");
    assert!(frame.contains("POP efficiency (1 cores"), "{frame}");
    assert!(
        frame.contains("one process per rank, its exec'd programs joined"),
        "{frame}"
    );
}

/// An exec that fails (nothing at the path; an executable file that is no
/// program, found and refused after the program's end was written): the
/// program goes on recording, every region once, and ends as it would have.
#[test]
fn an_exec_that_fails_loses_nothing_and_writes_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    let (trace_dir, out) = record(
        dir.path(),
        &prog,
        &[],
        &["2", "missing", "3", "noexec", "4"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(failed(&out), [libc::ENOENT, libc::ENOEXEC]);
    let text = check(&trace_dir, &out);
    assert!(!text.contains("exec'd"), "{text}");
    let trace = Trace::open(&trace_dir).unwrap();
    assert_eq!(trace.manifest.ranks.len(), 1);
    // The program's end is the exit's, after its last region.
    let exit = trace.manifest.ranks[0]
        .exit_ns
        .expect("the exit is stamped");
    let last = omp_rows(&trace)
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Parallel as u8)
        .map(|(_, r)| r.end_ns)
        .max()
        .unwrap();
    assert!(
        last <= exit,
        "the last region ends at {last}, after the exit at {exit}"
    );
    assert!(!trace_dir.join("spool").exists(), "spool/ is left");
}

/// A crash after a failed exec is told by its signal: the failed exec put
/// the crash handler's end note back.
#[test]
fn a_crash_after_a_failed_exec_is_told_by_its_signal() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    let (trace_dir, out) = record(dir.path(), &prog, &[], &["2", "noexec", "3", "crash"]);
    assert_eq!(failed(&out), [libc::ENOEXEC]);
    let trace = Trace::open(&trace_dir).unwrap();
    assert_eq!(trace.manifest.ranks.len(), 1, "{:#?}", trace.manifest.ranks);
    assert_eq!(
        trace.manifest.ranks[0].end,
        Some(ProcessEnd::Signal { signal: 11 }),
        "{}",
        stderr(&out)
    );
    assert_eq!(count_kind(&omp_rows(&trace), 0, OmpKind::Parallel), 5);
}

/// The exec comes while another thread's team is inside an endless parallel
/// region: nothing waits for it, and what that thread finished is kept. The
/// second program execs one that records nothing (`/bin/true`).
#[test]
fn an_exec_while_another_thread_is_inside_openmp() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    let (trace, out) = record(
        dir.path(),
        &prog,
        &[],
        &["2", "busy", "3", "execv", "1", "true"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = printed(&out);
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[0].regions, 5);
    assert_eq!(said[1].end, "exec true /bin/true");
    check(&trace, &out);
}

/// A child made by `fork` records, then execs: both its programs are kept,
/// the second as its exec; a child made by `vfork` execs at once (touching
/// nothing of its parent's, whose memory it shares): its program is a child
/// of the rank, and the parent's own regions are exact.
#[test]
fn children_made_by_fork_and_vfork_that_exec() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), false);
    let (trace_dir, out) = record(
        dir.path(),
        &prog,
        &[],
        &["2", "fork", "3", "4", "vfork", "5", "1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    check(&trace_dir, &out);
    let trace = Trace::open(&trace_dir).unwrap();
    let by_pid = programs_by_pid(&trace);
    assert_eq!(
        by_pid
            .values()
            .map(Vec::len)
            .collect::<Vec<_>>()
            .iter()
            .sum::<usize>(),
        4
    );
    let parent = trace
        .manifest
        .ranks
        .iter()
        .find(|r| r.rank == 0)
        .unwrap()
        .pid;
    let mut children = Vec::new();
    for (pid, programs) in by_pid.iter().filter(|(pid, _)| **pid != parent) {
        let of = programs[0].child_of.expect("a child");
        assert_eq!((of.rank, of.parent_pid), (0, parent), "pid {pid}");
        children.extend(programs.iter().map(|p| u64::from(p.rank)));
    }
    children.sort_unstable();
    // POP counts the rank alone: the children (and what they exec'd) ran
    // beside it, and are no ranks of the job.
    let p = pop(&trace_dir);
    assert_eq!(pop_processes(&p), [[0]], "{p}");
    assert_eq!(ids(&p["scope"]["child_processes"]), children, "{p}");
    assert_eq!(p["cores"], 2, "{p}");
}

/// MPI ranks that exec after `MPI_Finalize`: each rank's two programs, its
/// MPI calls in the first.
#[test]
fn mpi_ranks_that_exec_after_finalize() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), true);
    let mut launcher = vec!["mpirun".to_string()];
    launcher.extend(mpirun_args(2));
    let steps = ["init", "2", "finalize", "3", "execv", "1"];
    let (trace_dir, out) = record(dir.path(), &prog, &launcher, &steps);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    check(&trace_dir, &out);
    let trace = Trace::open(&trace_dir).unwrap();
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    for r in &trace.manifest.ranks {
        let calls = mpi.iter().filter(|(id, _)| *id == r.rank).count();
        assert_eq!(calls > 0, r.rank < 2, "id {}: {calls} MPI rows", r.rank);
    }
    // POP: the two ranks over MPI_Init to MPI_Finalize; the programs they
    // exec'd after it are outside (not ranks running beside them). Each
    // rank's time outside MPI from its rows: its window less its calls
    // inside it (the program calls MPI outside parallel regions only).
    let window = |rank: u32| {
        let rows = || {
            mpi.iter()
                .filter(move |(id, _)| *id == rank)
                .map(|(_, m)| m)
        };
        let init = rows()
            .filter(|m| m.call == mpi_call::MPI_Init)
            .map(|m| m.end_ns)
            .max()
            .unwrap();
        let fin = rows()
            .filter(|m| m.call == mpi_call::MPI_Finalize)
            .map(|m| m.start_ns)
            .min()
            .unwrap();
        let inside: i64 = rows()
            .filter(|m| m.call != mpi_call::REQUEST_COMPLETE)
            .filter(|m| m.start_ns >= init && m.end_ns <= fin)
            .map(|m| m.end_ns - m.start_ns)
            .sum();
        (init, fin, (fin - init - inside) as f64 / 1e9)
    };
    let (w0, w1) = (window(0), window(1));
    let t = (w0.1.max(w1.1) - w0.0.min(w1.0)) as f64 / 1e9;
    let (mean, max) = ((w0.2 + w1.2) / 2.0, w0.2.max(w1.2));
    let p = pop(&trace_dir);
    assert_eq!(pop_processes(&p), [[0], [1]], "{p}");
    assert_eq!(ids(&p["scope"]["outside_window"]), [2, 3], "{p}");
    assert_eq!(p["cores"], 4, "{p}");
    assert!(
        (p["elapsed_s"].as_f64().unwrap() - t).abs() < 1e-12,
        "{t}: {p}"
    );
    for (name, want) in [
        ("MPI parallel efficiency", mean / t),
        ("MPI load balance", mean / max),
        ("MPI communication efficiency", max / t),
    ] {
        assert!(
            (pop_value(&p, name) - want).abs() < 1e-9,
            "{name}: {want}: {p}"
        );
    }
    let text = String::from_utf8_lossy(&report(&trace_dir, false).stdout).into_owned();
    assert!(
        text.contains("not counted: ranks 2–3, exec'd after MPI_Finalize (outside the window)"),
        "{text}"
    );
    // The MPI memory model's ranks per node are the job's 2, not its 4 ids.
    let json: serde_json::Value = serde_json::from_slice(&report(&trace_dir, true).stdout).unwrap();
    assert_eq!(json["memory"]["observed"]["cores_per_node"], 2);
    assert_eq!(
        json["memory"]["observed"]["per_rank"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// A program that records, then execs a program that calls `MPI_Init`
/// (unsupported: the second program took an id of its own, and MPI makes
/// it the rank): the rank keeps both programs' regions, and no id is left
/// behind saying that it was still running.
#[test]
fn a_program_after_an_exec_that_calls_mpi_init_becomes_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), true);
    let mut launcher = vec!["mpirun".to_string()];
    launcher.extend(mpirun_args(2));
    let steps = ["2", "execv", "init", "1", "finalize"];
    let (trace_dir, out) = record(dir.path(), &prog, &launcher, &steps);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = Trace::open(&trace_dir).unwrap();
    let ids: Vec<(u32, Option<ProcessEnd>)> = trace
        .manifest
        .ranks
        .iter()
        .map(|r| (r.rank, r.end.clone()))
        .collect();
    assert_eq!(
        ids,
        [
            (0, Some(ProcessEnd::Finished)),
            (1, Some(ProcessEnd::Finished))
        ]
    );
    let rows = omp_rows(&trace);
    for rank in [0, 1] {
        assert_eq!(count_kind(&rows, rank, OmpKind::Parallel), 3, "rank {rank}");
    }
    let text = String::from_utf8_lossy(&report(&trace_dir, false).stdout).into_owned();
    assert!(!text.contains("PARTIAL TRACE"), "{text}");
}

/// An exec between `MPI_Init` and `MPI_Finalize`, which MPI does not
/// support: nothing waits in the collector (the job ends within the tests'
/// deadline), and each rank's first program is kept whole, ended by its
/// exec. (The launcher ends the job as it sees fit once a program after an
/// exec exits without `MPI_Finalize`: the others may be killed by then.)
#[test]
fn an_exec_between_mpi_init_and_finalize_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let prog = program(dir.path(), true);
    let mut launcher = vec!["mpirun".to_string()];
    launcher.extend(mpirun_args(2));
    let (trace_dir, out) = record(dir.path(), &prog, &launcher, &["init", "2", "execv", "1"]);
    let trace = Trace::open(&trace_dir).unwrap();
    let rows = omp_rows(&trace);
    let said = printed(&out);
    for rank in [0, 1] {
        let info = trace
            .manifest
            .ranks
            .iter()
            .find(|r| r.rank == rank)
            .unwrap();
        assert!(
            matches!(info.end, Some(ProcessEnd::Exec { .. })),
            "rank {rank}: {:?}\n{}",
            info.end,
            stderr(&out)
        );
        let first = said
            .iter()
            .find(|p| p.pid == info.pid)
            .expect("its first program printed");
        assert_eq!(first.regions, 2);
        assert_eq!(count_kind(&rows, rank, OmpKind::Parallel), 2, "rank {rank}");
    }
}

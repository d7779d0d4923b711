//! `mpirun -np N hyscope report` (the analysis split over N processes,
//! `viewer/src/report/parallel.rs`) prints byte for byte what one process
//! prints, JSON and text, under Open MPI's `mpirun` and MPICH's `mpiexec`,
//! with more processes than the trace has ranks too; on a synthetic trace
//! (OpenMP loops, barriers, messages) and on a recorded 4-rank hybrid job
//! (`tests/mpi/scale.c`, whose counts the report must hold). Without a
//! launcher no MPI library is loaded; under one without the library, process
//! 0 analyses alone and says so once.
//!
//! Needs `cargo build --workspace` (libhyscope.so, libhyscope_par.so) and,
//! for MPICH, `scripts/build-mpich.sh` (libhyscope_par-mpich.so), as
//! scripts/test.sh does.

use crate::record_support;
use hyscope_testkit::OutputWithin;

#[path = "../../analyzer/tests/common/synth.rs"]
mod synth;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use record_support::*;

/// The launchers' variables, removed so a test's "alone" is alone even when
/// the test itself runs under a launcher.
const LAUNCH_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "PMI_SIZE",
    "PMI_RANK",
    "SLURM_NTASKS",
    "SLURM_PROCID",
];

fn alone(args: &[&str], trace: &Path) -> Command {
    let mut cmd = hyscope();
    cmd.arg("report").args(args).arg(trace);
    for v in LAUNCH_VARS {
        cmd.env_remove(v);
    }
    cmd
}

fn under_open_mpi(np: u32, args: &[&str], trace: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(mpirun_args(np))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .arg("report")
        .args(args)
        .arg(trace);
    cmd
}

fn under_mpich(np: u32, args: &[&str], trace: &Path) -> Command {
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-n", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .arg("report")
        .args(args)
        .arg(trace);
    cmd
}

fn ok(mut cmd: Command) -> Output {
    let out = hyscope_testkit::output_within(&mut cmd, hyscope_testkit::LAUNCH_LIMIT);
    assert_eq!(out.status.code(), Some(0), "{cmd:?}: {}", stderr(&out));
    out
}

/// The report alone (JSON and text), then under `launch` with each process
/// count: the same bytes, and nothing on stderr that one process does not print.
fn same_under(trace: &Path, launch: &dyn Fn(u32, &[&str], &Path) -> Command, counts: &[u32]) {
    same_under_with(trace, launch, counts, &[]);
}

/// [`same_under`] with `extra` arguments to every report.
fn same_under_with(
    trace: &Path,
    launch: &dyn Fn(u32, &[&str], &Path) -> Command,
    counts: &[u32],
    extra: &[&str],
) {
    fn joined<'a>(args: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [args, extra].concat()
    }
    let with = |args: &[&'static str]| joined(args, extra);
    let json = ok(alone(&with(&["--json"]), trace));
    let text = ok(alone(&with(&[]), trace));
    assert!(!json.stdout.is_empty() && !text.stdout.is_empty());
    for &np in counts {
        for (args, want) in [(with(&["--json"]), &json), (with(&[]), &text)] {
            let args = &args[..];
            let out = ok(launch(np, args, trace));
            assert!(
                out.stdout == want.stdout,
                "{np} processes, {args:?}: the report differs from one process's\n{}",
                first_difference(&want.stdout, &out.stdout)
            );
            assert_eq!(
                comparable_stderr(&stderr(&out)),
                comparable_stderr(&stderr(want)),
                "{np} processes, {args:?}"
            );
        }
    }
}

/// `stderr` as two runs can be compared: the sizes of the peak-memory warning left out, each
/// process's own peak differs, whether it is printed does not. Without the
/// launcher's own warnings too: Open MPI's ssh launcher (the two-node tests)
/// now and then says `plm:rsh: Warning: setpgid(…) failed` when its child
/// has already started the agent, which is not the report's.
fn comparable_stderr(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.contains("plm:rsh: Warning: setpgid("))
        .map(|l| match l.split_once(") took ") {
            Some((head, _)) if l.starts_with("hyscope: warning: the analysis (") => head,
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    match a
        .lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
    {
        Some((i, (x, y))) => format!("line {}:\n  alone: {x}\n  mpi:   {y}", i + 1),
        None => format!(
            "{} lines alone, {} under MPI",
            a.lines().count(),
            b.lines().count()
        ),
    }
}

/// A synthetic hybrid trace of `ranks` ranks × 4 threads.
fn synthetic(dir: &Path, ranks: u32) -> PathBuf {
    let trace = dir.join(format!("synth-{ranks}"));
    synth::write_synth_trace(&trace, 200_000, ranks, 4);
    trace
}

const NP: u64 = 4;
const ROUNDS: u64 = 3;

/// `tests/mpi/scale.c` recorded with 4 ranks under Open MPI; the report
/// holds its counts (so the reports compared below are of real work).
fn recorded(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/scale.c");
    let exe = build_mpi(dir, "scale", &std::fs::read_to_string(src).unwrap());
    let trace = dir.join("trace");
    record_mpi_job(&trace, &exe, NP as u32);
    let v: serde_json::Value =
        serde_json::from_slice(&ok(alone(&["--json"], &trace)).stdout).unwrap();
    assert_eq!(v["run"]["ranks"], NP);
    let calls = v["mpi"]["observed"]["calls"].as_array().unwrap();
    let sendrecv = calls.iter().find(|c| c["call"] == "MPI_Sendrecv").unwrap();
    let ring = ROUNDS * 4 * NP * (NP + 1) / 2;
    assert_eq!(sendrecv["count"], NP * ROUNDS);
    assert_eq!(sendrecv["bytes_sent"], ring);
    assert_eq!(
        v["messages"]["messages"].as_array().unwrap().len() as u64,
        NP * ROUNDS
    );
    let fine = v["openmp"]["observed"]["fine_grain"].as_array().unwrap();
    assert_eq!(fine.len() as u64, NP);
    assert!(fine.iter().all(|f| f["regions"] == ROUNDS), "{fine:?}");
    trace
}

#[test]
fn open_mpi_reports_are_byte_identical_to_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let synth = synthetic(tmp.path(), 8);
    same_under(&synth, &under_open_mpi, &[1, 2, 4]);
    // A limit that fits about two of these ranks' rows at once: each process
    // decodes its ranks in several batches and hands each on as a message.
    same_under_with(&synth, &under_open_mpi, &[2, 3], &["--memory", "16M"]);
    let trace = recorded(tmp.path());
    // 6 processes for 4 ranks: two of them have none.
    same_under(&trace, &under_open_mpi, &[2, 4, 6]);
}

/// A peak above `--memory` (the process alone, with every rank's results,
/// is above 8 MiB; a rank's rows fit it): one warning with the peak and the limit, the same JSON
/// as under the default limit, where nothing is said.
#[test]
fn a_peak_above_the_memory_limit_is_said_once() {
    let tmp = tempfile::tempdir().unwrap();
    let synth = synthetic(tmp.path(), 8);
    let default = ok(alone(&["--json"], &synth));
    assert!(
        !stderr(&default).contains("at its peak"),
        "{}",
        stderr(&default)
    );
    let small = ok(alone(&["--json", "--memory", "8M"], &synth));
    let text = stderr(&small);
    let peaks: Vec<&str> = text.lines().filter(|l| l.contains("at its peak")).collect();
    assert_eq!(peaks.len(), 1, "{text}");
    assert!(
        peaks[0].starts_with("hyscope: warning: the analysis (")
            && peaks[0].contains("the results of 8 ranks")
            && peaks[0].ends_with("more than the limit of 8.00 MiB (--memory)"),
        "{}",
        peaks[0]
    );
    assert!(
        small.stdout == default.stdout,
        "the limit changed the result"
    );
}

#[test]
fn mpich_reports_are_byte_identical_to_one_process() {
    beside_hyscope(
        "libhyscope_par-mpich.so",
        "run scripts/build-mpich.sh before cargo test (scripts/test.sh does)",
    );
    let tmp = tempfile::tempdir().unwrap();
    let synth = synthetic(tmp.path(), 8);
    same_under(&synth, &under_mpich, &[1, 2, 4]);
    let trace = recorded(tmp.path());
    same_under(&trace, &under_mpich, &[2, 6]);
}

/// Over two nodes (simulated on this machine: `record_support::TwoNodes`),
/// the processes of each node sharing out its CPUs and exchanging the ranks'
/// results over TCP: the same bytes, under Open MPI. Not under MPICH: there
/// UCX's TCP transport, with both simulated nodes on this machine's one
/// address, hangs in `MPI_Finalize` after an eager `MPI_Isend` completed by
/// `MPI_Test` polls (a 10-line C program without hyscope does the same),
/// which the report's exchange does.
#[test]
fn reports_over_two_nodes_are_byte_identical_to_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let nodes = match TwoNodes::new(tmp.path()) {
        Ok(nodes) => nodes,
        Err(why) => {
            eprintln!("not run: two nodes cannot be simulated here: {why}");
            return;
        }
    };
    let synth = synthetic(tmp.path(), 8);
    let (var, value) = nodes.env();
    let open_mpi = |np, args: &[&str], trace: &Path| {
        let mut cmd = Command::new("mpirun");
        cmd.args(nodes.open_mpi_args(np))
            .env(var, value)
            .arg(env!("CARGO_BIN_EXE_hyscope"))
            .arg("report")
            .args(args)
            .arg(trace);
        cmd
    };
    same_under(&synth, &open_mpi, &[2, 4]);
}

#[test]
fn without_a_launcher_no_mpi_library_is_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = synthetic(tmp.path(), 3);
    let missing = tmp.path().join("no-such-libhyscope_par.so");
    let missing_arg = missing.display().to_string();
    let json = ok(alone(&["--json"], &trace));
    // Not launched: the library is never looked for, so its absence says nothing.
    let without = ok(alone(&["--json", "--mpi-lib", &missing_arg], &trace));
    assert_eq!(without.stdout, json.stdout);
    assert_eq!(stderr(&without), stderr(&json));
    assert!(!stderr(&without).contains(&missing_arg));
    // Launched but the library is missing: one warning, process 0 prints
    // the whole report alone, the others exit 0 without output.
    let out = ok(under_open_mpi(
        3,
        &["--json", "--mpi-lib", &missing_arg],
        &trace,
    ));
    assert_eq!(out.stdout, json.stdout);
    let err = stderr(&out);
    assert_eq!(err.matches("hyscope: warning:").count(), 1, "{err}");
    assert!(
        err.contains(&missing_arg)
            && err.contains("process 0 analyses the whole trace alone")
            && err.contains("other 2 processes exit without output"),
        "{err}"
    );
}

/// The CPUs this process may run on (the launcher's children inherit them).
fn own_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is writable and of the size passed.
    let e = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&mask), &mut mask) };
    assert_eq!(e, 0, "sched_getaffinity");
    // SAFETY: `mask` was filled above.
    unsafe { libc::CPU_COUNT(&mask) as usize }
}

/// More processes than the node has CPUs: those beyond them take no ranks
/// and open no trace (their own `HYSCOPE_TIMING` lines say what each process
/// was given and read), the others read every rank exactly once between
/// them, each only ranks of its own range, OpenMP and MPI rows alike (no
/// process, process 0 included, reads another's ranks' MPI rows: only their
/// message sides are handed on); and the report is still one process's,
/// byte for byte.
#[test]
fn processes_beyond_the_node_s_cpus_read_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let ranks = 8u32;
    let trace = synthetic(tmp.path(), ranks);
    let np = 6usize;
    let json = ok(alone(&["--json"], &trace));
    let mut cmd = under_open_mpi(np as u32, &["--json"], &trace);
    cmd.env("HYSCOPE_TIMING", "ranks");
    let out = ok(cmd);
    assert!(
        out.stdout == json.stdout,
        "the report differs from one process's"
    );
    let err = stderr(&out);
    let mut node_cpus = Vec::new();
    let mut threads = vec![None; np];
    let mut given: Vec<Option<(u32, u32)>> = vec![None; np];
    let mut idle = vec![false; np];
    let mut read: Vec<Vec<u32>> = vec![Vec::new(); np];
    let mut read_mpi: Vec<Vec<u32>> = vec![Vec::new(); np];
    for line in err.lines() {
        let Some(rest) = line.strip_prefix("hyscope: process ") else {
            continue;
        };
        let (p, what) = rest.split_once(": ").unwrap();
        let p: usize = p.parse().unwrap();
        let words: Vec<&str> = what.split(' ').collect();
        if what.contains(" on its node, whose processes may run on ") {
            let at = words.iter().position(|w| *w == "CPUs").unwrap();
            node_cpus.push(words[at - 1].parse::<usize>().unwrap());
            let at = words
                .iter()
                .position(|w| *w == "thread" || *w == "threads")
                .unwrap();
            assert!(threads[p].is_none(), "{err}");
            threads[p] = Some(words[at - 1].parse::<usize>().unwrap());
        } else if what.contains(" ranks to analyse with ") {
            assert_eq!(words[2], ranks.to_string(), "{line}");
            let n: u32 = words[0].parse().unwrap();
            if n > 0 {
                let first = words.iter().position(|w| *w == "(ranks").unwrap();
                let (a, b) = (words[first + 1], words[first + 3].trim_end_matches(')'));
                given[p] = Some((a.parse().unwrap(), b.parse().unwrap()));
            }
        } else if what.starts_with("no ranks ") {
            idle[p] = true;
        } else if let Some(r) = what.strip_prefix("rank ") {
            let rank = r.split(':').next().unwrap().parse().unwrap();
            if r.contains(" MPI rows ") {
                read_mpi[p].push(rank);
            } else {
                read[p].push(rank);
            }
        }
    }
    assert_eq!(node_cpus.len(), np, "one node line per process\n{err}");
    let cpus = node_cpus[0];
    assert!(node_cpus.iter().all(|&c| c == cpus), "{err}");
    assert!(cpus >= 1 && cpus <= own_cpus(), "{cpus} CPUs\n{err}");
    let threads: Vec<usize> = threads.into_iter().map(Option::unwrap).collect();
    let analysing = threads.iter().filter(|&&t| t > 0).count();
    assert_eq!(analysing, np.min(cpus), "{threads:?}\n{err}");
    assert!(threads[0] > 0, "process 0 analyses\n{err}");
    assert!(threads.iter().sum::<usize>() <= cpus, "{threads:?}\n{err}");
    for p in 1..np {
        if threads[p] == 0 {
            assert!(
                idle[p] && given[p].is_none() && read[p].is_empty(),
                "process {p}\n{err}"
            );
        } else {
            assert!(!idle[p], "process {p}\n{err}");
        }
    }
    for read in [&read, &read_mpi] {
        let mut all: Vec<u32> = read.concat();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..ranks).collect::<Vec<_>>(),
            "each rank read once\n{err}"
        );
        for p in 0..np {
            for r in &read[p] {
                let (a, b) = given[p].unwrap();
                assert!((a..=b).contains(r), "process {p} read rank {r}\n{err}");
            }
        }
    }
    if analysing > 1 {
        assert!(
            read_mpi[1..].iter().any(|r| !r.is_empty()),
            "another process than 0 read MPI rows\n{err}"
        );
    }
}

/// `-o FILE`: the report goes to the file, nothing to stdout, the same
/// bytes as on stdout; under `mpirun` process 0 writes it. A file in a
/// directory that does not exist is refused before any analysis, naming it.
#[test]
fn output_writes_the_report_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = synthetic(tmp.path(), 4);
    let json = ok(alone(&["--json"], &trace));
    let text = ok(alone(&[], &trace));
    for (args, want, np) in [
        (&["--json"][..], &json, 1),
        (&[][..], &text, 1),
        (&["--json"][..], &json, 2),
    ] {
        let file = tmp.path().join(format!("report-{np}-{}.out", args.len()));
        let file_arg = file.display().to_string();
        let args = [args, &["-o", &file_arg]].concat();
        let out = ok(if np == 1 {
            alone(&args, &trace)
        } else {
            under_open_mpi(np, &args, &trace)
        });
        assert!(out.stdout.is_empty(), "{args:?}: stdout not empty");
        assert!(
            std::fs::read(&file).unwrap() == want.stdout,
            "{np} processes, {args:?}: the file differs from stdout"
        );
    }
    let nowhere = tmp.path().join("no-such-dir").join("report.json");
    let out = alone(&["--json", "-o", &nowhere.display().to_string()], &trace)
        .output_within_limit()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("cannot write the report to") && err.contains("is not a directory"),
        "{err}"
    );
    assert!(!nowhere.exists());
}

//! Helpers shared by the `record_*` and `export_*` tests: real compilers, the
//! real `hyscope` binary and the real `libhyscope.so`.
//!
//! The collector must be built before these tests run: `cargo build --workspace`
//! (scripts/test.sh and the CI do that first). The tests never build it
//! themselves, so parallel test binaries never race on the target directory.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hyscope_format::{MpiRecord, OmpKind, OmpRecord, Record, ScanOptions, Trace, mpi_call};

mod located;
pub use located::{Located, allreduce_sites, report_regions};

pub const LLVM_LIB: &str = "/usr/lib/llvm-19/lib";

pub fn hyscope() -> Command {
    beside_hyscope(
        "libhyscope.so",
        "run `cargo build --workspace` before `cargo test`",
    );
    Command::new(env!("CARGO_BIN_EXE_hyscope"))
}

/// The library `name` next to the `hyscope` binary under test, where
/// `hyscope` looks for it; a test fails with `how` to build it when it is missing.
pub fn beside_hyscope(name: &str, how: &str) -> PathBuf {
    let lib = Path::new(env!("CARGO_BIN_EXE_hyscope"))
        .parent()
        .unwrap()
        .join(name);
    assert!(lib.is_file(), "{} is missing: {how}", lib.display());
    lib
}

/// `hyscope record -o <out> --`, ready for the command to record.
pub fn record_into(out: &Path) -> Command {
    let mut cmd = hyscope();
    cmd.arg("record").arg("-o").arg(out).arg("--");
    cmd
}

/// A small OpenMP program with known counts: `REGIONS` parallel regions of 2
/// threads, each with a `schedule(dynamic,25)` loop of 100 iterations and one
/// explicit barrier. Exits with the code given as its first argument; creates
/// the file named by its second argument (to prove whether it ran).
pub const OMP_SRC: &str = r#"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define REGIONS 3
int main(int argc, char **argv) {
    if (argc > 2) { FILE *f = fopen(argv[2], "w"); if (f) fclose(f); }
    double s = 0;
    for (int r = 0; r < REGIONS; r++) {
#pragma omp parallel num_threads(2)
        {
#pragma omp for schedule(dynamic, 25) reduction(+ : s)
            for (int i = 0; i < 100; i++) s += i;
#pragma omp barrier
        }
    }
    printf("sum %g\n", s);
    return argc > 1 ? atoi(argv[1]) : 0;
}
"#;
pub const OMP_REGIONS: usize = 3;

/// A small MPI+OpenMP program: 2 parallel regions of 2 threads, then a ring
/// exchange (`MPI_Sendrecv`-free: Isend/Irecv/Waitall) and one `MPI_Allreduce`.
pub const MPI_SRC: &str = r#"
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double s = 0;
    for (int r = 0; r < 2; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    double out = rank, in = -1, sum = 0;
    MPI_Request req[2];
    MPI_Irecv(&in, 1, MPI_DOUBLE, (rank + size - 1) % size, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, (rank + 1) % size, 7, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Allreduce(&s, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("sum %g\n", sum);
    MPI_Finalize();
    return 0;
}
"#;

fn run_checked(mut cmd: Command) {
    let out = cmd.output().expect("run compiler");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compile `src` as `dir/<name>` with `cmd` (clang-19, or an MPI wrapper
/// driving it) against libomp 19, with debug information and `extra` arguments.
fn build_c(cmd: Command, dir: &Path, name: &str, src: &str, extra: &[&str]) -> PathBuf {
    build_c_with(cmd, dir, name, src, &["-g", "-O1"], extra)
}

/// [`build_c`] with the compiler's `flags` (debug information, optimisation)
/// in place of `-g -O1`.
fn build_c_with(
    mut cmd: Command,
    dir: &Path,
    name: &str,
    src: &str,
    flags: &[&str],
    extra: &[&str],
) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    cmd.arg("-fopenmp")
        .args(flags)
        .args(extra)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
        .arg(format!("-L{LLVM_LIB}"));
    run_checked(cmd);
    exe
}

/// Build an OpenMP C program with clang-19 on libomp 19.
pub fn build_omp(dir: &Path, name: &str, src: &str) -> PathBuf {
    build_c(Command::new("clang-19"), dir, name, src, &[])
}

/// Build `tests/omp/<name>.c` (a test program with a known answer) with clang-19.
pub fn build_omp_test_program(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/omp/{name}.c"));
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    build_omp(dir, name, &text)
}

/// Build an MPI+OpenMP C program with Open MPI's mpicc driving clang-19.
pub fn build_mpi(dir: &Path, name: &str, src: &str) -> PathBuf {
    build_mpi_with(dir, name, src, &[])
}

/// [`build_mpi`] with more compiler arguments (e.g. `-I` for `hyscope.h`).
pub fn build_mpi_with(dir: &Path, name: &str, src: &str, extra: &[&str]) -> PathBuf {
    let mut cmd = Command::new("mpicc");
    cmd.env("OMPI_CC", "clang-19");
    build_c(cmd, dir, name, src, extra)
}

/// Build an MPI+OpenMP C program with Open MPI's mpicc driving clang-19 as
/// production binaries often are: optimised (`-O2`) and without debug
/// information (no `-g`: functions, no lines).
pub fn build_mpi_without_debug_info(dir: &Path, name: &str, src: &str) -> PathBuf {
    build_mpi_without_debug_info_with(dir, name, src, &[])
}

/// [`build_mpi_without_debug_info`] with more compiler arguments (e.g.
/// `-Wl,--build-id=none`).
pub fn build_mpi_without_debug_info_with(
    dir: &Path,
    name: &str,
    src: &str,
    extra: &[&str],
) -> PathBuf {
    let mut cmd = Command::new("mpicc");
    cmd.env("OMPI_CC", "clang-19");
    build_c_with(cmd, dir, name, src, &["-O2"], extra)
}

/// Build an MPI+OpenMP C program with MPICH's mpicc driving clang-19.
pub fn build_mpich(dir: &Path, name: &str, src: &str) -> PathBuf {
    let mut cmd = Command::new("mpicc.mpich");
    cmd.env("MPICH_CC", "clang-19");
    build_c(cmd, dir, name, src, &[])
}

/// Where `scripts/build-mpich.sh` puts the MPICH build of the collector
/// (next to `hyscope`); it may not be built.
pub fn mpich_collector() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_hyscope"))
        .parent()
        .unwrap()
        .join("libhyscope-mpich.so")
}

/// Build `tests/phases/<name>.c` (an MPI+OpenMP program with phases whose
/// durations it measures and prints) with `include/hyscope.h` on the path.
pub fn build_phase_program(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/phases/{name}.c"));
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let include = format!("-I{}/../include", env!("CARGO_MANIFEST_DIR"));
    build_mpi_with(dir, name, &text, &[&include])
}

/// `hyscope record --mode <mode> -o <dir>/<name> -- mpirun -np 2 <exe>
/// <args>` with passive OpenMP waits (a loaded machine's spinning threads
/// would otherwise widen every scatter), which must succeed; the trace's
/// directory. For comparisons of runs that differ by their arguments.
pub fn record_two_ranks_in_mode(
    dir: &Path,
    name: &str,
    mode: &str,
    exe: &Path,
    args: &[&str],
) -> PathBuf {
    let trace = dir.join(name);
    run_ok(
        hyscope()
            .env("OMP_WAIT_POLICY", "passive")
            .args(["record", "--mode", mode, "-o"])
            .arg(&trace)
            .arg("--")
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(exe)
            .args(args),
    );
    trace
}

/// `hyscope record -o <trace> -- mpirun -np <np> <exe>`, which must succeed.
pub fn record_mpi_job(trace: &Path, exe: &Path, np: u32) {
    let out = record_into(trace)
        .arg("mpirun")
        .args(mpirun_args(np))
        .arg(exe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `hyscope record -o <trace> -- mpirun -np 1 <a> <a's argument> : -np 1
/// <b> <b's argument>` (an MPMD job of one rank per program), which must
/// succeed; its output.
pub fn record_mpmd(trace: &Path, a: (&Path, &str), b: (&Path, &str)) -> Output {
    run_ok(
        record_into(trace)
            .arg("mpirun")
            .args(mpirun_args(1))
            .arg(a.0)
            .arg(a.1)
            .args([":", "-np", "1"])
            .arg(b.0)
            .arg(b.1),
    )
}

/// The MPI calls of a rank of [`MPI_SRC`], each as often as the program
/// makes it (and its two requests' completions), in `mpi` (a trace's rows).
pub fn assert_mpi_src_calls(mpi: &[(u32, MpiRecord)], rank: u32) {
    let calls = |c: u16| {
        mpi.iter()
            .filter(|(r, m)| *r == rank && m.call == c)
            .count()
    };
    for (call, n) in [
        (mpi_call::MPI_Init_thread, 1),
        (mpi_call::MPI_Irecv, 1),
        (mpi_call::MPI_Isend, 1),
        (mpi_call::MPI_Waitall, 1),
        (mpi_call::MPI_Allreduce, 1),
        (mpi_call::MPI_Finalize, 1),
        (mpi_call::REQUEST_COMPLETE, 2),
    ] {
        assert_eq!(calls(call), n, "rank {rank}: {}", mpi_call::name(call));
    }
}

/// Every row of the table of `R` in the trace at `dir`, with its rank.
pub fn trace_rows<R: Record>(dir: &Path) -> Vec<(u32, R)> {
    let trace = Trace::open(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    trace
        .read_records(&ScanOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// `exe` copied to `to` (its directory made first).
pub fn copy_to(exe: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(exe, to).unwrap();
    to.to_path_buf()
}

/// `mpirun` arguments for 2 ranks on this machine (as root too).
pub fn mpirun_args(np: u32) -> Vec<String> {
    let mut a = vec!["--oversubscribe".to_string()];
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        a.push("--allow-run-as-root".into());
    }
    a.extend(["-np".to_string(), np.to_string()]);
    // A session directory base of this run's own: parallel mpiruns race on
    // creating and removing a shared one ("mkdir … File exists"). Under one
    // parent, where those of test processes that have exited are removed.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let parent = std::env::temp_dir().join("hyscope-test-ompi");
    SWEPT.call_once(|| remove_exited_bases(&parent));
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = parent.join(format!("{}-{n}", std::process::id()));
    std::fs::create_dir_all(&base).expect("create the mpirun session base");
    a.extend([
        "--mca".into(),
        "orte_tmpdir_base".into(),
        base.display().to_string(),
    ]);
    a
}

/// Remove the session directory bases (`PID-N`) under `parent` whose test
/// process has exited.
fn remove_exited_bases(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name.split('-').next().unwrap_or("");
        if !pid.is_empty() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Run `cmd` (a `record` command) and check that it exited with 0, showing
/// its stderr otherwise.
/// Run `cmd` (a recorded job, a report) within the tests' deadline and
/// require exit code 0.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = hyscope_testkit::output_within(cmd, hyscope_testkit::LAUNCH_LIMIT);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(&out));
    out
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn omp_rows(trace: &Trace) -> Vec<(u32, OmpRecord)> {
    trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .expect("read omp table")
}

pub fn count_kind(rows: &[(u32, OmpRecord)], rank: u32, kind: OmpKind) -> usize {
    rows.iter()
        .filter(|(r, rec)| *r == rank && rec.kind == kind as u8)
        .count()
}

/// Two "nodes" on this machine: hosts 127.0.0.2 and 127.0.0.3, started
/// through `tests/mpi/node-agent.sh` in place of ssh, each in namespaces of
/// its own (hostname, boot id, `/dev/shm`), talking to the other over TCP,
/// on the one kernel and TSC of this machine (so the true clock offset
/// between them is 0).
pub struct TwoNodes {
    agent: PathBuf,
    hostfile: PathBuf,
    /// Each node's boot id (`HYSCOPE_FAKE_NODES`).
    nodes: PathBuf,
}

/// The hosts of [`TwoNodes`], rank `r` on `TWO_NODES[r % 2]`.
pub const TWO_NODES: [&str; 2] = ["127.0.0.2", "127.0.0.3"];

impl TwoNodes {
    /// Set up in `dir`; `Err` with the reason where this machine cannot make
    /// the namespaces (not root, or a container without `CAP_SYS_ADMIN`).
    pub fn new(dir: &Path) -> Result<TwoNodes, String> {
        let probe = Command::new("unshare")
            .args(["--uts", "--mount", "true"])
            .output()
            .map_err(|e| format!("cannot run unshare: {e}"))?;
        if !probe.status.success() {
            return Err(format!(
                "`unshare --uts --mount` is refused here: {}",
                stderr(&probe).trim()
            ));
        }
        let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/node-agent.sh");
        let hostfile = dir.join("two-nodes.hosts");
        let lines: Vec<String> = TWO_NODES.iter().map(|h| format!("{h} slots=2\n")).collect();
        std::fs::write(&hostfile, lines.concat()).unwrap();
        let nodes = dir.join("two-nodes");
        std::fs::create_dir_all(&nodes).unwrap();
        Ok(TwoNodes {
            agent: agent.canonicalize().unwrap(),
            hostfile,
            nodes,
        })
    }

    /// Arguments of `mpirun` (Open MPI) for `np` ranks placed round-robin
    /// on the two nodes.
    pub fn open_mpi_args(&self, np: u32) -> Vec<OsString> {
        self.open_mpi_args_mapped(np, "node")
    }

    /// [`TwoNodes::open_mpi_args`] with Open MPI's `--map-by` `mapping`
    /// (`slot`: the first node's 2 slots first).
    pub fn open_mpi_args_mapped(&self, np: u32, mapping: &str) -> Vec<OsString> {
        let mut a: Vec<OsString> = mpirun_args(np).into_iter().map(OsString::from).collect();
        a.extend([
            "--mca".into(),
            "plm_rsh_agent".into(),
            self.agent.clone().into(),
        ]);
        a.extend(["--hostfile".into(), self.hostfile.clone().into()]);
        a.extend(["--map-by".into(), mapping.into()]);
        // Each node sees all of this machine's cores: bound, the first rank
        // of every node would share core 0 with the others' (a time slice
        // per message, ≈ 4 ms, instead of ≈ 6 µs over TCP).
        a.extend(["--bind-to".into(), "none".into()]);
        a
    }

    /// Arguments of `mpiexec.mpich` (Hydra) for `np` ranks placed
    /// round-robin on the two nodes.
    pub fn mpich_args(&self, np: u32) -> Vec<OsString> {
        let hosts: Vec<String> = TWO_NODES.iter().map(|h| format!("{h}:1")).collect();
        let mut a: Vec<OsString> = vec!["-launcher".into(), "ssh".into(), "-launcher-exec".into()];
        a.push(self.agent.clone().into());
        a.extend(["-hosts".into(), hosts.join(",").into()]);
        a.extend(["-n".into(), np.to_string().into()]);
        a
    }

    /// `hyscope record -o <dir> -- <launcher> <launch_args>` across the two
    /// nodes, ready for the program and its arguments.
    pub fn record(&self, dir: &Path, launcher: &str, launch_args: Vec<OsString>) -> Command {
        let (var, value) = self.env();
        let mut cmd = record_into(dir);
        cmd.env(var, value).arg(launcher).args(launch_args);
        cmd
    }

    /// The variable the agent keeps each node's boot id under: set it on
    /// the launcher (or the `record` that runs it).
    pub fn env(&self) -> (&'static str, &Path) {
        ("HYSCOPE_FAKE_NODES", &self.nodes)
    }
}

/// Build `tests/mpi/<name>.c` with mpicc.
pub fn build_mpi_test_program(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/mpi/{name}.c"));
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    build_mpi(dir, name, &text)
}

/// Build `tests/mpi/<name>.c` with MPICH's mpicc, as `<name>_mpich`.
pub fn build_mpich_test_program(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/mpi/{name}.c"));
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    build_mpich(dir, &format!("{name}_mpich"), &text)
}

/// `hyscope report --json` of a trace.
pub fn report_json(trace: &Path) -> serde_json::Value {
    let out = run_ok(hyscope().args(["report", "--json"]).arg(trace));
    serde_json::from_slice(&out.stdout).expect("report --json is JSON")
}

/// The report's late-sender total (0 when there is none).
pub fn late_sender_s(report: &serde_json::Value) -> f64 {
    let kinds = report["wait_states"]["observed"]["by_kind"]
        .as_array()
        .expect("wait states observed");
    kinds
        .iter()
        .filter(|k| k["kind"] == "late_sender")
        .map(|k| k["seconds"].as_f64().unwrap())
        .sum()
}

/// The value of line `key <value>` the program printed.
pub fn printed(stdout: &str, key: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no `{key}` printed: {stdout}"))
        .trim()
        .parse()
        .unwrap()
}

/// The trace directories named `<prefix>…` in `dir` (default names made by
/// the ranks themselves).
pub fn trace_dirs_in(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

//! Shared helpers of the MPI end-to-end tests: build a program from
//! `tests/mpi/` with the real `mpicc`/`mpif90`, run it with the real `mpirun`
//! under `libhyscope.so`, read the trace back with `hyscope_format`.
#![allow(dead_code)]

pub mod ring;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hyscope_format::{MpiRecord, SampleRecord, ScanOptions, Trace, mpi_call};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The preload library cargo built for this test run (next to the test binary).
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps, deps.parent().unwrap()] {
        let p = dir.join("libhyscope.so");
        if p.exists() {
            return p;
        }
    }
    panic!("libhyscope.so not found next to {}", exe.display());
}

/// The MPICH build of the collector (`scripts/build-mpich.sh`), next to
/// `libhyscope.so`.
pub fn mpich_library() -> PathBuf {
    let lib = library();
    let dir = lib.parent().unwrap();
    [dir, dir.parent().unwrap()]
        .iter()
        .map(|d| d.join("libhyscope-mpich.so"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "libhyscope-mpich.so missing next to {}: run scripts/build-mpich.sh first",
                lib.display()
            )
        })
}

pub fn tmp() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compile `tests/mpi/<src>` with `compiler` (mpicc or mpif90), once per test binary.
pub fn build(src: &str, compiler: &str, extra: &[&str]) -> PathBuf {
    build_env(src, compiler, extra, &[])
}

/// [`build`] with environment variables for the compiler wrapper (e.g. `OMPI_CC`).
pub fn build_env(src: &str, compiler: &str, extra: &[&str], env: &[(&str, &str)]) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    // One program per source, compiler (MPI) and flags.
    let key = format!("{src} {compiler} {extra:?} {env:?}");
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let out = tmp().join(format!(
        "{}-{}-{}-{}",
        Path::new(src).file_stem().unwrap().to_string_lossy(),
        compiler.replace('.', "-"),
        built.len(),
        std::process::id()
    ));
    let st = Command::new(compiler)
        .args(["-g", "-O1", "-o"])
        .arg(&out)
        .arg(repo().join("tests/mpi").join(src))
        .args(extra)
        .envs(env.iter().copied())
        .status()
        .expect("run the MPI compiler");
    assert!(st.success(), "{compiler} {src} failed");
    built.insert(key, out.clone());
    out
}

pub use hyscope_testkit::{LAUNCH_LIMIT, output_within};

pub struct Run {
    pub code: Option<i32>,
    pub dir: PathBuf,
    pub stdout: String,
    pub stderr: String,
}

/// `--mca orte_tmpdir_base <a directory of this run's own>`: Open MPI's
/// `mpirun` creates and removes a session directory per user under its base,
/// and two of them starting or ending at once (the tests of a binary run in
/// parallel) race on it ("mkdir … File exists", orte_init failed).
pub fn own_session_dir() -> [String; 3] {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = tmp().join(format!("ompi-session-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the mpirun session base");
    [
        "--mca".into(),
        "orte_tmpdir_base".into(),
        dir.display().to_string(),
    ]
}

/// `mpirun -np <np>` the program under the collector; the trace goes to a fresh directory.
pub fn run(prog: &Path, np: u32, name: &str) -> Run {
    run_args(prog, np, name, &[])
}

/// `mpirun -np <np>` (as root, oversubscribed, with a session directory of
/// its own), with `lib` preloaded and the trace written to `dir` when `lib`
/// is given; the caller adds variables (`-x`) and the program.
pub fn mpirun(np: u32, lib: Option<&Path>, dir: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ])
    .args(own_session_dir());
    if let Some(lib) = lib {
        cmd.args(["-x", &format!("LD_PRELOAD={}", lib.display())])
            .args(["-x", &format!("HYSCOPE_OUTPUT={}", dir.display())]);
    }
    cmd
}

/// [`run`] with arguments for the program.
pub fn run_args(prog: &Path, np: u32, name: &str, args: &[&str]) -> Run {
    let dir = tmp().join(format!("trace-{name}-{np}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = mpirun(np, Some(&library()), &dir);
    cmd.arg(prog).args(args);
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    Run {
        code: out.status.code(),
        dir,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// [`run`] under MPICH: `mpiexec.mpich -n <np>` with [`mpich_library`]
/// preloaded (and `env` passed by `-genv`); the trace goes to a fresh directory.
pub fn run_mpich(prog: &Path, np: u32, name: &str, env: &[(&str, &str)]) -> Run {
    let dir = tmp().join(format!("trace-mpich-{name}-{np}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-n", &np.to_string()])
        .args([
            "-genv",
            "LD_PRELOAD",
            &mpich_library().display().to_string(),
        ])
        .args(["-genv", "HYSCOPE_OUTPUT", &dir.display().to_string()]);
    for (k, v) in env {
        cmd.args(["-genv", k, v]);
    }
    let out = output_within(cmd.arg(prog), LAUNCH_LIMIT);
    Run {
        code: out.status.code(),
        dir,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn mpi_rows(trace: &Trace) -> Vec<(u32, MpiRecord)> {
    trace
        .read_records::<MpiRecord>(&ScanOptions::default())
        .unwrap()
}

pub fn samples(trace: &Trace) -> Vec<(u32, SampleRecord)> {
    trace
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap()
}

/// Rows of `rank` with call `name`.
pub fn calls<'a>(rows: &'a [(u32, MpiRecord)], rank: u32, name: &str) -> Vec<&'a MpiRecord> {
    let code = mpi_call::code(name).unwrap();
    rows.iter()
        .filter(|(r, m)| *r == rank && m.call == code)
        .map(|(_, m)| m)
        .collect()
}

/// Call name → count for one rank.
pub fn histogram(rows: &[(u32, MpiRecord)], rank: u32) -> BTreeMap<&'static str, usize> {
    let mut h = BTreeMap::new();
    for (_, m) in rows.iter().filter(|(r, _)| *r == rank) {
        *h.entry(mpi_call::name(m.call)).or_insert(0) += 1;
    }
    h
}

/// The completion row of a request id (exactly one).
pub fn completion(rows: &[(u32, MpiRecord)], rank: u32, id: u64) -> MpiRecord {
    let c: Vec<_> = calls(rows, rank, "REQUEST_COMPLETE")
        .into_iter()
        .filter(|m| m.request_id == id)
        .collect();
    assert_eq!(
        c.len(),
        1,
        "rank {rank}: completions of request {id}: {c:?}"
    );
    *c[0]
}

/// The clock offsets of a job on this one node. Rank 0's are (0, 0). Where
/// the edges were not measured (`measured` false: the default
/// `HYSCOPE_CLOCK_SYNC=shared`) and every rank read one clock (the same
/// `clock_id`), every rank's are (0, 0): taken, not estimated. A measured
/// offset is an estimate of the true offset 0, off by at most half its round
/// trip (on a loaded machine the best one can reach milliseconds; the bound
/// follows it), plus `slack_ns` of rounding; with `measured`, every edge was.
pub fn check_clock_offsets(ranks: &[hyscope_format::RankInfo], measured: bool, slack_ns: i64) {
    let one_clock =
        ranks[0].clock_id.is_some() && ranks.iter().all(|r| r.clock_id == ranks[0].clock_id);
    for r in ranks {
        assert_eq!(
            r.clock_offsets.len(),
            2,
            "rank {}: {:?}",
            r.rank,
            r.clock_offsets
        );
        for o in &r.clock_offsets {
            if r.rank == 0 || (one_clock && !measured) {
                assert_eq!((o.offset_ns, o.rtt_ns), (0, 0), "rank {}: {o:?}", r.rank);
            } else {
                assert!(
                    (o.rtt_ns > 0 || !measured) && o.offset_ns.abs() <= o.rtt_ns / 2 + slack_ns,
                    "rank {}: {o:?}",
                    r.rank
                );
            }
        }
    }
}

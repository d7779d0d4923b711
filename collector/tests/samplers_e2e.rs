//! End to end: real programs under `LD_PRELOAD=libhyscope.so`; the trace has the
//! sampler's rows and the manifest its table. MPI cases run with the real `mpirun`.

use crate::mpi_common;
use hyscope_testkit::OutputWithin;

use std::path::{Path, PathBuf};
use std::process::Command;

use hyscope_format::{OmpKind, OmpRecord, SampleRecord, SamplerInfo, ScanOptions, Trace};

const LLVM_LIB: &str = "/usr/lib/llvm-19/lib";

/// The preload library of this build. `cargo test` leaves the fresh cdylib in
/// `deps/` (next to the test binary) and does not copy it up to the profile
/// directory, whose copy may be stale: prefer `deps/`.
fn preload_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    for dir in [deps, deps.parent().unwrap()] {
        let lib = dir.join("libhyscope.so");
        if lib.exists() {
            return lib;
        }
    }
    panic!("libhyscope.so not built next to {}", exe.display());
}

fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/programs")
        .join(name)
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("samplers")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The manifest's entry for the sampler `name`.
fn sampler<'a>(m: &'a hyscope_format::Manifest, name: &str) -> &'a SamplerInfo {
    m.samplers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no `{name}` sampler in the manifest"))
}

fn samples(trace: &Path) -> Vec<(u32, SampleRecord)> {
    let t = Trace::open(trace).unwrap();
    t.read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap()
}

fn values(rows: &[(u32, SampleRecord)], rank: u32, metric: &str, key: i64) -> Vec<(i64, f64)> {
    let mut v: Vec<(i64, f64)> = rows
        .iter()
        .filter(|(r, s)| *r == rank && s.metric == metric && s.key == key)
        .map(|(_, s)| (s.time_ns, s.value))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

#[test]
fn openmp_program_has_memory_samples_and_the_sampler_table() {
    let dir = scratch("omp");
    let exe = clang_openmp("omp_mem", &dir);
    let trace = dir.join("trace");
    let out = Command::new(&exe)
        .env("LD_PRELOAD", preload_lib())
        .env("HYSCOPE_OUTPUT", &trace)
        .env("HYSCOPE_SAMPLE_MS", "20")
        .env("OMP_NUM_THREADS", "2")
        .output_within_limit()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 64 MiB touched one byte per page: 16384 pages.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "16384");

    let rows = samples(&trace);
    let rss = values(&rows, 0, "mem.vmrss", -1);
    // ~300 ms at 20 ms: at least 5 samples, all positive; the peak holds the 64 MiB.
    assert!(rss.len() >= 5, "{} samples", rss.len());
    assert!(rss.iter().all(|&(_, v)| v > 0.0));
    let peak = rss.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(peak >= (64u64 << 20) as f64, "peak RSS {peak}");
    let hwm = values(&rows, 0, "mem.vmhwm", -1);
    // VmHWM is folded from per-thread RSS counters lazily by the kernel, so it may
    // dip at the end; its maximum still covers the peak.
    let hwm_max = hwm.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(hwm_max >= peak, "HWM {hwm:?} RSS {rss:?}");

    let m = Trace::open(&trace).unwrap().manifest.clone();
    let table: Vec<(&str, bool)> = m
        .samplers
        .iter()
        .map(|s| (s.name.as_str(), s.available))
        .collect();
    assert_eq!(
        table,
        vec![
            ("memory", true),
            ("rapl", false),
            ("rdma", false),
            ("mpi_t", false)
        ]
    );
    assert_eq!(m.samplers[3].reason, "no MPI_Init in this process");
    let rapl = &m.samplers[1];
    assert!(!rapl.reason.is_empty());
    assert!(rapl.ranks.is_empty());
    assert_eq!(m.metrics["mem.vmrss"].unit, "bytes");
    assert_eq!(m.metrics["mem.shm_mapped"].unit, "bytes");
    assert!(
        !m.metrics.contains_key("energy.pkg"),
        "no unit for a metric never written"
    );
    // No energy rows when RAPL is unavailable: never 0 J.
    assert!(rows.iter().all(|(_, s)| !s.metric.starts_with("energy.")));
}

/// Build `fixtures/programs/<name>.c` with clang and libomp into `dir`.
fn clang_openmp(name: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(name);
    let st = Command::new("clang-19")
        .args(["-fopenmp", "-O1"])
        .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
        .arg(format!("-L{LLVM_LIB}"))
        .arg(program(&format!("{name}.c")))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success());
    exe
}

fn mpicc(src: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(Path::new(src).file_stem().unwrap());
    let st = Command::new("mpicc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(program(src))
        .status()
        .unwrap();
    assert!(st.success(), "mpicc {src}");
    exe
}

fn mpirun(exe: &Path, np: u32, trace: &Path) {
    mpirun_env(exe, np, trace, &[]);
}

fn mpirun_env(exe: &Path, np: u32, trace: &Path, env: &[String]) {
    let mut cmd = mpi_common::mpirun(np, Some(&preload_lib()), trace);
    cmd.args(
        (!env.iter().any(|e| e.starts_with("HYSCOPE_SAMPLE_MS=")))
            .then_some(["-x", "HYSCOPE_SAMPLE_MS=10"])
            .into_iter()
            .flatten(),
    )
    .args(env.iter().flat_map(|e| ["-x".to_string(), e.clone()]))
    .arg(exe);
    let out = mpi_common::output_within(&mut cmd, mpi_common::LAUNCH_LIMIT);
    assert!(
        out.status.success(),
        "mpirun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One vader segment's mapping, bytes: `btl_vader_segment_size` as
/// `ompi_info` reports it, and one page.
fn vader_segment_bytes() -> f64 {
    let out = std::process::Command::new("ompi_info")
        .args(["--param", "btl", "vader", "--level", "9", "--parsable"])
        .output_within_limit()
        .expect("run ompi_info");
    let text = String::from_utf8_lossy(&out.stdout);
    let size: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("mca:btl:vader:param:btl_vader_segment_size:value:"))
        .expect("btl_vader_segment_size in ompi_info's output")
        .trim()
        .parse()
        .unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    size + page
}

/// Two ranks: RSS grows across MPI_Init; the unexpected queue of rank 1 holds
/// exactly the 5 messages rank 0 sent before rank 1 posted them, then 0.
#[test]
fn mpi_rss_across_init_and_unexpected_queue() {
    let dir = scratch("mpi");
    let exe = mpicc("mpi_unexpected.c", &dir);
    let trace = dir.join("trace");
    mpirun(&exe, 2, &trace);
    let t = Trace::open(&trace).unwrap();
    let m = t.manifest.clone();
    assert_eq!(m.ranks.len(), 2);
    for r in &m.ranks {
        let (b, a) = (r.rss_before_init.unwrap(), r.rss_after_init.unwrap());
        assert!(a > b, "rank {}: RSS {b} → {a}", r.rank);
    }
    // Open MPI's shared-memory transport: in MPI_Init a rank maps its own vader
    // segment, then its peer's (the same size: `btl_vader_segment_size` and a
    // page), and after MPI_Finalize none. The two mappings may come between
    // two samples (they do when the collector has loaded what MPI_Init would
    // spend 0.2 s loading between them: collector/src/mpi/keep_loaded.rs).
    // PMIx session stores are mapped meanwhile.
    let one = vader_segment_bytes();
    let rows = t
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap();
    for r in 0..2 {
        let vader = values(&rows, r, "mem.shm_vader", -1);
        let first = vader
            .iter()
            .map(|x| x.1)
            .find(|&v| v > 0.0)
            .expect("a vader segment");
        assert!(first == one || first == 2.0 * one, "rank {r}: {vader:?}");
        let max = vader.iter().map(|x| x.1).fold(0.0, f64::max);
        assert_eq!(max, 2.0 * one, "rank {r}: {vader:?}");
        assert_eq!(
            vader.last().unwrap().1,
            0.0,
            "unmapped at MPI_Finalize: {vader:?}"
        );
        let all = values(&rows, r, "mem.shm_mapped", -1);
        assert!(all.iter().map(|x| x.1).fold(0.0, f64::max) >= max);
        let session = values(&rows, r, "mem.shm_session", -1);
        assert!(session.iter().any(|x| x.1 > 0.0), "{session:?}");
    }
    let mpit = sampler(&m, "mpi_t");
    assert!(mpit.available, "{}", mpit.reason);
    assert!(
        mpit.reason
            .contains("pml_ob1_unexpected_msgq_length (2 peers"),
        "{}",
        mpit.reason
    );
    assert_eq!(
        m.metrics["mpi_t.pml_ob1_unexpected_msgq_length"].unit,
        "messages"
    );
    // RAPL is unavailable here; were it available, node 0's reader is rank 0.
    let rapl = sampler(&m, "rapl");
    assert!(!rapl.available);

    let rows = t
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap();
    let q = values(&rows, 1, "mpi_t.pml_ob1_unexpected_msgq_length", -1);
    let max = q.iter().map(|x| x.1).fold(0.0, f64::max);
    assert_eq!(max, 5.0, "{q:?}");
    let first5 = q.iter().position(|x| x.1 == 5.0).unwrap();
    assert!(q[first5..].iter().any(|x| x.1 == 0.0), "back to 0: {q:?}");
    assert_eq!(q.last().unwrap().1, 0.0);
    // Per peer: all from rank 0.
    let from0 = values(&rows, 1, "mpi_t.pml_ob1_unexpected_msgq_length", 0);
    assert_eq!(from0.iter().map(|x| x.1).fold(0.0, f64::max), 5.0);
    let from1 = values(&rows, 1, "mpi_t.pml_ob1_unexpected_msgq_length", 1);
    assert!(from1.iter().all(|x| x.1 == 0.0));
    // Rank 0 waits in MPI_Recv(tag 8 from rank 1) for the whole 1.8 s: one posted,
    // unmatched receive for peer 1, then none.
    let posted = values(&rows, 0, "mpi_t.pml_ob1_posted_recvq_length", 1);
    assert_eq!(
        posted.iter().map(|x| x.1).fold(0.0, f64::max),
        1.0,
        "{posted:?}"
    );
    assert_eq!(posted.last().unwrap().1, 0.0);
    // Rank 0 never had anything unexpected.
    let q0 = values(&rows, 0, "mpi_t.pml_ob1_unexpected_msgq_length", -1);
    assert!(!q0.is_empty() && q0.iter().all(|x| x.1 == 0.0));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// RAPL on a fixture powercap tree under MPI: one reader per node, elected with
/// MPI_Comm_split_type; it reports exactly the 12.5 J the counter moved.
#[test]
fn mpi_one_rapl_reader_per_node() {
    let dir = scratch("mpi-rapl");
    let exe = mpicc("mpi_rapl.c", &dir);
    let sys = dir.join("sys");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs-powercap"),
        &sys,
    );
    let pkg0 = sys.join("class/powercap/intel-rapl:0/energy_uj");
    let trace = dir.join("trace");
    mpirun_env(
        &exe,
        2,
        &trace,
        &[
            format!("HYSCOPE_SYSFS_ROOT={}", sys.display()),
            format!("RAPL_PKG0_FILE={}", pkg0.display()),
        ],
    );
    let t = Trace::open(&trace).unwrap();
    let rapl = sampler(&t.manifest, "rapl");
    assert!(rapl.available, "{}", rapl.reason);
    assert_eq!(rapl.ranks, vec![0]);
    assert!(
        rapl.reason.contains("one reader per node"),
        "{}",
        rapl.reason
    );
    assert_eq!(t.manifest.metrics["energy.pkg"].unit, "J");

    let rows = t
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap();
    assert!(
        rows.iter()
            .all(|(r, s)| *r == 0 || !s.metric.starts_with("energy.")),
        "only the node's reader writes energy"
    );
    let pkg0 = values(&rows, 0, "energy.pkg", 0);
    assert_eq!(pkg0.last().unwrap().1, 12.5, "{pkg0:?}");
    assert_eq!(pkg0.first().unwrap().1, 0.0, "{pkg0:?}");
    assert_eq!(values(&rows, 0, "energy.pkg", 1).last().unwrap().1, 0.0);
    assert_eq!(values(&rows, 0, "energy.ram", 0).last().unwrap().1, 0.0);
}

/// A forked child exits normally although the sampler thread exists only in its parent.
/// (A program whose stderr fills the pipe would block: this one writes little.)
#[test]
fn forked_child_exits_without_waiting_for_the_sampler() {
    let dir = scratch("fork");
    let exe = clang_openmp("omp_fork", &dir);
    let (status, out, err) = run_unless_it_hangs(
        Command::new(&exe)
            .env("LD_PRELOAD", preload_lib())
            .env("HYSCOPE_OUTPUT", dir.join("trace"))
            .env("OMP_NUM_THREADS", "2"),
        60,
    );
    assert!(status.success());
    assert_eq!(out.trim(), "child 7");
    // Neither a hang nor a caught panic (joining a thread that is not there).
    assert!(!err.contains("panicked"), "{err}");
    // The parent's one region is in the trace once: the child, which exits
    // through exit(), does not write the parent's buffered events again.
    let t = Trace::open(&dir.join("trace")).unwrap();
    let omp: Vec<OmpRecord> = t
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let count = |kind: OmpKind| omp.iter().filter(|r| r.kind == kind as u8).count();
    assert_eq!(count(OmpKind::Parallel), 1, "{omp:#?}");
    assert_eq!(count(OmpKind::ImplicitTask), 2, "{omp:#?}");
}

/// Run `cmd` (stdout and stderr piped: a program that writes little) and
/// return its status and output; a hang is the failure: killed after `secs`.
fn run_unless_it_hangs(cmd: &mut Command, secs: u64) -> (std::process::ExitStatus, String, String) {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the program did not end within {secs} s (it hangs)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status, out, err)
}

/// Many forks while the sampler ticks every millisecond and the writer
/// spools: a lock one of the parent's threads held at a fork would hang that
/// child's exit path (which takes them all). Every child comes back with its
/// exit code, and none writes the parent's events again: every OpenMP row is
/// the parent's, one region per fork.
#[test]
fn many_forks_while_the_collectors_threads_run() {
    const FORKS: usize = 500;
    let dir = scratch("forks");
    let exe = clang_openmp("omp_fork_many", &dir);
    let (status, out, err) = run_unless_it_hangs(
        Command::new(&exe)
            .arg(FORKS.to_string())
            .env("LD_PRELOAD", preload_lib())
            .env("HYSCOPE_OUTPUT", dir.join("trace"))
            .env("HYSCOPE_SAMPLE_MS", "1")
            .env("OMP_NUM_THREADS", "2"),
        120,
    );
    assert!(status.success(), "{err}");
    assert_eq!(out.trim(), format!("children {FORKS} exited {FORKS}"));
    assert!(!err.contains("panicked"), "{err}");
    let t = Trace::open(&dir.join("trace")).unwrap();
    let omp = t
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    let parallel: Vec<u32> = omp
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Parallel as u8)
        .map(|(rank, _)| *rank)
        .collect();
    assert_eq!(parallel.len(), FORKS);
    assert!(
        parallel.iter().all(|&rank| rank == 0),
        "a child wrote its parent's regions"
    );
}

/// `HYSCOPE_SAMPLE_MS=0`: no sampler thread, every sampler listed as disabled,
/// RSS around MPI_Init still taken.
#[test]
fn sampling_disabled() {
    let dir = scratch("disabled");
    let exe = mpicc("mpi_rapl.c", &dir);
    let sys = dir.join("sys");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs-powercap"),
        &sys,
    );
    let trace = dir.join("trace");
    mpirun_env(
        &exe,
        2,
        &trace,
        &[
            "HYSCOPE_SAMPLE_MS=0".into(),
            format!("HYSCOPE_SYSFS_ROOT={}", sys.display()),
            format!(
                "RAPL_PKG0_FILE={}",
                sys.join("class/powercap/intel-rapl:0/energy_uj").display()
            ),
        ],
    );
    let t = Trace::open(&trace).unwrap();
    let table: Vec<(&str, bool, &str)> = t
        .manifest
        .samplers
        .iter()
        .map(|s| (s.name.as_str(), s.available, s.reason.as_str()))
        .collect();
    let off = "sampling disabled (HYSCOPE_SAMPLE_MS=0)";
    assert_eq!(
        table,
        vec![
            ("memory", false, off),
            ("rapl", false, off),
            ("rdma", false, off),
            ("mpi_t", false, off)
        ]
    );
    let rows = t
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap();
    assert!(
        rows.iter()
            .all(|(_, s)| !s.metric.starts_with("energy.") && !s.metric.starts_with("mpi_t."))
    );
    for r in &t.manifest.ranks {
        assert!(r.rss_after_init.unwrap() > r.rss_before_init.unwrap());
    }
}

/// Run `omp_mem` with the collector, a sysfs tree with one RDMA device and
/// an `rdma` command running `script` (sh) first on PATH; it must run to its
/// end. Returns its stderr and the trace's `rdma` sampler entry.
fn run_with_fake_rdma(dir: &Path, script: &str) -> (String, SamplerInfo) {
    let sys = dir.join("sys");
    std::fs::create_dir_all(sys.join("class/infiniband/mlx5_0")).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("rdma");
    std::fs::write(&tool, format!("#!/bin/sh\n{script}\n")).unwrap();
    let mut perms = std::fs::metadata(&tool).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&tool, perms).unwrap();
    let exe = clang_openmp("omp_mem", dir);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_unless_it_hangs(
            Command::new(&exe)
                .env("LD_PRELOAD", preload_lib())
                .env("HYSCOPE_OUTPUT", dir.join("trace"))
                .env("HYSCOPE_SAMPLE_MS", "20")
                .env("HYSCOPE_SYSFS_ROOT", &sys)
                .env("PATH", path)
                .env("OMP_NUM_THREADS", "2"),
            60,
        )
    }));
    // A collector that ran the tool preloaded would start a chain of tools,
    // each probing for the next, that outlives the program: without the
    // device the next one stops.
    let _ = std::fs::remove_dir_all(&sys);
    let (status, out, err) = run.unwrap_or_else(|p| std::panic::resume_unwind(p));
    assert!(status.success(), "{err}");
    assert_eq!(out.trim(), "16384");
    let t = Trace::open(&dir.join("trace")).unwrap();
    (err, sampler(&t.manifest, "rdma").clone())
}

/// The `rdma` sampler end to end, with a fake `rdma` tool that prints the
/// recorded dumps of `fixtures/rdma` as if this process owned pid 4242's
/// resources: its samples are the counts the parser test knows.
#[test]
fn rdma_sampler_counts_this_process_resources() {
    let dir = scratch("rdma");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rdma");
    // rdma -j -d res show WHAT pid PID
    let script = format!(
        "exec sed \"s/\\\"pid\\\":4242,/\\\"pid\\\":$7,/g\" {}/res-$5.json",
        fixtures.display()
    );
    let (_, rdma) = run_with_fake_rdma(&dir, &script);
    assert!(rdma.available, "{}", rdma.reason);
    assert!(rdma.reason.contains("mlx5_0"), "{}", rdma.reason);
    let rows = samples(&dir.join("trace"));
    for (metric, expected) in [
        ("rdma.qps", 5.0),
        ("rdma.rc_connected", 3.0),
        ("rdma.cqs", 2.0),
        ("rdma.cqes", 4350.0),
        ("rdma.mrs", 3.0),
        ("rdma.mr_bytes", 1_118_208.0),
    ] {
        let v = values(&rows, 0, metric, -1);
        assert!(!v.is_empty(), "no {metric} sample");
        assert!(v.iter().all(|&(_, x)| x == expected), "{metric}: {v:?}");
    }
}

/// An `rdma` tool that never answers: the probe kills it after
/// `Rdma::TOOL_TIMEOUT` and says so, and the program runs on; one that
/// answers the probe and then hangs: sampling stops with one warning.
#[test]
fn a_hanging_rdma_tool_is_killed_and_the_program_runs_on() {
    let started = std::time::Instant::now();
    let (_, rdma) = run_with_fake_rdma(&scratch("rdma-hang"), "exec sleep 60");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(!rdma.available);
    assert!(
        rdma.reason.contains("did not answer within 2 s"),
        "{}",
        rdma.reason
    );

    let dir = scratch("rdma-hang-later");
    let answered = dir.join("answered");
    let script = format!(
        "[ -e {0} ] && exec sleep 60\ntouch {0}\necho '[]'",
        answered.display()
    );
    let (err, rdma) = run_with_fake_rdma(&dir, &script);
    assert!(rdma.available, "{}", rdma.reason);
    assert_eq!(
        err.matches("hyscope: `rdma res show qp` did not answer within 2 s; RDMA sampling stops")
            .count(),
        1,
        "{err}"
    );
}

/// Write `value` into the FIFO at `path` for each of its next `reads`
/// readers (polled, so that this never blocks when no reader comes); false
/// if one did not come within 20 s.
fn serve_fifo(path: &Path, value: &str, reads: usize) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    for _ in 0..reads {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path);
            if let Ok(mut f) = opened {
                if std::io::Write::write_all(&mut f, value.as_bytes()).is_err() {
                    return false;
                }
                break;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The reader reads this writer's value to its end before the next opens.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Run `program` (with `args`) with the collector, sampling every
/// `sample_ms`, and a RAPL zone whose `energy_uj` is a FIFO that answers its
/// first `answered` reads (the probe's, then the samples') and then nobody
/// writes, as a wedged driver's file would: the next read never returns.
/// The program must end; returns its status, output, the `hyscope:` lines
/// and the trace.
fn run_with_a_stuck_rapl_read(
    dir: &Path,
    program: &str,
    args: &[&str],
    answered: usize,
    sample_ms: &str,
) -> (std::process::ExitStatus, String, Vec<String>, Trace) {
    let sys = dir.join("sys");
    let zone = sys.join("class/powercap/intel-rapl:0");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs-powercap/class/powercap/intel-rapl:0"),
        &zone,
    );
    let energy = zone.join("energy_uj");
    std::fs::remove_file(&energy).unwrap();
    let c_path = std::ffi::CString::new(energy.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let exe = clang_openmp(program, dir);
    let fifo = energy.clone();
    let writer = std::thread::spawn(move || serve_fifo(&fifo, "1000\n", answered));
    let started = std::time::Instant::now();
    let (status, out, err) = run_unless_it_hangs(
        Command::new(&exe)
            .args(args)
            .env("LD_PRELOAD", preload_lib())
            .env("HYSCOPE_OUTPUT", dir.join("trace"))
            .env("HYSCOPE_SAMPLE_MS", sample_ms)
            .env("HYSCOPE_SYSFS_ROOT", &sys)
            .env("OMP_NUM_THREADS", "2"),
        60,
    );
    assert!(
        writer.join().unwrap(),
        "energy_uj was read fewer than {answered} times"
    );
    // The program's own time and one wait of 5 s, not more.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let warnings = err
        .lines()
        .filter(|l| l.starts_with("hyscope:"))
        .map(str::to_string)
        .collect();
    (
        status,
        out,
        warnings,
        Trace::open(&dir.join("trace")).unwrap(),
    )
}

/// A sampler whose read never returns, while the program runs (then its
/// exit and its forks wait for the samplers' lock) and in the last readings
/// at its exit: the program still ends, with its own output and exit code,
/// after one warning naming the sampler; the manifest's entry says sampling
/// stopped, and the OpenMP trace is whole.
#[test]
fn a_sampler_stuck_in_a_read_does_not_hang_the_program() {
    let (status, out, warnings, t) =
        run_with_a_stuck_rapl_read(&scratch("stuck-sampler"), "omp_mem", &[], 1, "5");
    assert!(status.success(), "{warnings:?}");
    assert_eq!(out.trim(), "16384");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("the `rapl` sampler's read has not returned for")
            && warnings[0].contains("sampling stops"),
        "{warnings:?}"
    );
    let rapl = sampler(&t.manifest, "rapl");
    assert!(rapl.available, "{}", rapl.reason);
    assert!(
        rapl.reason
            .ends_with("; stopped: a read did not return within 5 s"),
        "{}",
        rapl.reason
    );
    assert!(
        t.manifest.ranks[0]
            .warnings
            .iter()
            .any(|w| w.contains("`rapl`"))
    );
    // The application's end is stamped before the wait for the sampler
    // thread: the program's 0.3 s, not the collector's 5 s after it.
    let ran_ns = t.manifest.ranks[0].exit_ns.unwrap() - t.manifest.start_clock_ns;
    assert!(ran_ns < 3_000_000_000, "{ran_ns} ns");
    // Both regions, each with its team of two.
    let rows = t
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap();
    let count = |kind: OmpKind| rows.iter().filter(|(_, r)| r.kind == kind as u8).count();
    assert_eq!(
        (count(OmpKind::Parallel), count(OmpKind::ImplicitTask)),
        (2, 4)
    );

    // Forks: the first one after the read stuck waits for the samplers'
    // lock once, the others not at all; every child exits with its code.
    const FORKS: usize = 20;
    let (status, out, warnings, t) = run_with_a_stuck_rapl_read(
        &scratch("stuck-sampler-forks"),
        "omp_fork_many",
        &[&FORKS.to_string()],
        1,
        "5",
    );
    assert!(status.success(), "{warnings:?}");
    assert_eq!(out.trim(), format!("children {FORKS} exited {FORKS}"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let parallel = t
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Parallel as u8)
        .count();
    assert_eq!(parallel, FORKS);

    // The probe's read and the thread's first sample are answered (an
    // hour's interval: no other sample), the last readings at exit are not.
    let (status, out, warnings, t) =
        run_with_a_stuck_rapl_read(&scratch("stuck-sampler-exit"), "omp_mem", &[], 2, "3600000");
    assert!(status.success(), "{warnings:?}");
    assert_eq!(out.trim(), "16384");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("the `rapl` sampler's read has not returned for"),
        "{warnings:?}"
    );
    // The memory sampler's first tick and its last reading at exit, which
    // comes before RAPL's.
    let memory = t
        .read_records::<SampleRecord>(&ScanOptions::default())
        .unwrap()
        .iter()
        .filter(|(_, s)| s.metric == "mem.vmrss")
        .count();
    assert_eq!(memory, 2);
}

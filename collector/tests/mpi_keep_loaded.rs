//! The libraries Open MPI's `MPI_Init` loads and unloads again (libpsm2,
//! libpsm_infinipath: ≈ 0.1 s of sleeping constructor each, every time they
//! load) stay loaded under the collector, so that its MPI_T opens without
//! loading them a second time (collector/src/mpi/keep_loaded.rs) — only
//! the ones `MPI_Init` loads itself: with a component that links them
//! installed and let in by Open MPI's `pml`, `mtl` and `btl` settings.
//! Where they stay loaded, the collector opens MPI_T at the end of
//! `MPI_Init`, and in a thread beside the application only where MPI_T
//! would load them (collector/src/mpi/mpit_background.rs).
//! tests/mpi/loaded_after_init.c prints what is loaded right after MPI_Init,
//! and whether the collector's MPI_T thread runs; rank 1 with the sampler
//! off opens no MPI_T of its own, so what it sees is `MPI_Init`'s and the
//! collector's doing alone.

use crate::mpi_common;
use hyscope_testkit::OutputWithin;
use mpi_common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether this machine has what makes `MPI_Init` load the libraries: the
/// libraries themselves and Open MPI's psm and psm2 components (Debian's).
fn precondition() -> bool {
    let libs = Command::new("ldconfig")
        .arg("-p")
        .output_within_limit()
        .unwrap();
    let libs = String::from_utf8_lossy(&libs.stdout);
    let has_libs = libs.contains("libpsm2.so.2") && libs.contains("libpsm_infinipath.so.1");
    let components = [
        "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3",
        "/usr/lib/x86_64-linux-gnu/openmpi",
    ]
    .iter()
    .any(|d| {
        ["mca_mtl_psm2.so", "mca_mtl_psm.so"]
            .iter()
            .all(|c| Path::new(d).join(c).is_file())
    });
    has_libs && components
}

/// Rank 1's line: psm2 loaded, psm_infinipath loaded, the collector's
/// MPI_T thread running; and the trace.
struct AfterInit {
    psm2: bool,
    psm: bool,
    mpit_thread: bool,
    trace: PathBuf,
}

fn rank1(env: &[&str], preload: bool) -> (bool, bool) {
    let r = after_init(env, preload, false);
    (r.psm2, r.psm)
}

fn after_init(env: &[&str], preload: bool, sampling: bool) -> AfterInit {
    let prog = build("loaded_after_init.c", "mpicc", &[]);
    let dir = tmp().join(format!(
        "trace-keep-loaded-{}-{preload}-{sampling}",
        env.join("-").replace([',', '='], "_")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let lib = library();
    let mut cmd = mpirun(2, preload.then_some(lib.as_path()), &dir);
    if !sampling {
        cmd.args(["-x", "HYSCOPE_SAMPLE_MS=0"]);
    }
    for e in env {
        cmd.args(["-x", e]);
    }
    cmd.arg(&prog);
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("hyscope:"), "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("rank 1 "))
        .unwrap_or_else(|| panic!("no line of rank 1: {stdout}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    AfterInit {
        psm2: f[3] == "1",
        psm: f[5] == "1",
        mpit_thread: f[7] == "1",
        trace: dir,
    }
}

#[test]
fn libraries_mpi_init_unloads_stay_loaded_under_the_collector() {
    if !precondition() {
        // Not Debian's Open MPI with its psm components: the program runs
        // under the collector as it does without (what loads is its MPI's).
        rank1(&[], true);
        return;
    }
    // Open MPI alone: loaded by MPI_Init, unloaded before it returns.
    assert_eq!(rank1(&[], false), (false, false));
    // The collector keeps them.
    assert_eq!(rank1(&[], true), (true, true));
    // Settings that leave their components out of MPI_Init: not loaded for
    // it (ob1 opens no mtl; the btls named exclude ofi).
    assert_eq!(
        rank1(&["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp"], true),
        (false, false)
    );
    // One mtl named: its library only.
    assert_eq!(
        rank1(&["OMPI_MCA_mtl=psm2", "OMPI_MCA_btl=self,vader,tcp"], true),
        (true, false)
    );
}

/// The manifest's entry of the `mpi_t` sampler.
fn mpi_t_sampler(trace: &hyscope_format::Trace) -> &hyscope_format::SamplerInfo {
    trace
        .manifest
        .samplers
        .iter()
        .find(|s| s.name == "mpi_t")
        .expect("an mpi_t entry")
}

/// Whether the collector should open MPI_T in a thread of its own, from what
/// rank 1 saw after `MPI_Init`: where an installed Open MPI component links
/// a library that is not loaded (MPI_T would load it, asleep for ≈ 0.1 s).
fn mpit_thread_expected(r: &AfterInit) -> bool {
    let installed = |file: &str| {
        [
            "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3",
            "/usr/lib/x86_64-linux-gnu/openmpi",
        ]
        .iter()
        .any(|d| Path::new(d).join(file).is_file())
    };
    let psm2_missing = !r.psm2
        && ["mca_mtl_psm2.so", "mca_mtl_ofi.so", "mca_btl_ofi.so"]
            .iter()
            .any(|f| installed(f));
    let psm_missing = !r.psm
        && ["mca_mtl_psm.so", "mca_mtl_ofi.so", "mca_btl_ofi.so"]
            .iter()
            .any(|f| installed(f));
    psm2_missing || psm_missing
}

/// Where MPI_T loads nothing (the libraries kept loaded, or no component
/// that links them installed), the collector opens it at the end of
/// `MPI_Init`: no thread of its own competes with the application's for a
/// core afterwards. The `MPI_Init` row includes that work, and the rank's
/// `init_ns` says how long it took. Where MPI_T would load them, a thread
/// opens it beside the application, as the 0.2 s they take asleep would
/// otherwise be `MPI_Init`'s.
#[test]
fn mpi_t_opens_in_mpi_init_where_it_loads_nothing() {
    let default = after_init(&[], true, true);
    assert_eq!(
        default.mpit_thread,
        mpit_thread_expected(&default),
        "psm2 loaded {}, psm_infinipath loaded {}",
        default.psm2,
        default.psm
    );
    if precondition() {
        // Debian's Open MPI: MPI_Init loads both and the collector keeps them.
        assert!(!default.mpit_thread, "MPI_T opened in a thread of its own");
    }
    let trace = hyscope_format::Trace::open(&default.trace).unwrap();
    let rows = mpi_rows(&trace);
    for info in &trace.manifest.ranks {
        assert!(info.init_ns > 0, "rank {}: init_ns 0", info.rank);
        let init = calls(&rows, info.rank, "MPI_Init");
        assert_eq!(init.len(), 1, "rank {}", info.rank);
        let row = init[0].end_ns - init[0].start_ns;
        assert!(
            row >= info.init_ns as i64,
            "rank {}: the MPI_Init row ({row} ns) leaves out the collector's {} ns",
            info.rank,
            info.init_ns
        );
    }
    let mpit = mpi_t_sampler(&trace);
    assert!(mpit.available, "{}", mpit.reason);
    // Settings that leave the libraries out of MPI_Init: with Debian's psm
    // components installed, MPI_T would load them, so a thread does it. (Not
    // judged from the libraries this rank sees loaded: that thread may load
    // them before the program looks.)
    if precondition() {
        let slow = after_init(
            &["OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp"],
            true,
            true,
        );
        assert!(
            slow.mpit_thread,
            "MPI_T opened in MPI_Init, loading the libraries"
        );
    }
}

/// Where MPI_T opens in a thread of its own and has not opened 10 s after
/// `MPI_Finalize` was called (here an `MPI_T_init_thread` that sleeps
/// 120 s, tests/mpi/slow_mpi_t.c, preloaded before the collector),
/// `MPI_Finalize` goes on without it: the job ends, with the program's exit
/// code and output, one warning per rank, and the manifest says why the
/// `mpi_t` sampler has nothing. Where MPI_T opens at the end of `MPI_Init`
/// instead (without Debian's psm components, MPI_T loads nothing), a slow
/// one makes `MPI_Init` that much longer and loses nothing: that case runs
/// with a 2 s sleep.
#[test]
fn mpi_finalize_goes_on_without_an_mpi_t_that_does_not_open() {
    let prog = build("loaded_after_init.c", "mpicc", &[]);
    let slow = build("slow_mpi_t.c", "mpicc", &["-shared", "-fPIC", "-ldl"]);
    let background = precondition();
    let sleep_s = if background { 120 } else { 2 };
    let dir = tmp().join("trace-slow-mpi-t");
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = mpirun(2, None, &dir);
    cmd.args([
        "-x",
        &format!("LD_PRELOAD={}:{}", slow.display(), library().display()),
        "-x",
        &format!("HYSCOPE_OUTPUT={}", dir.display()),
        "-x",
        &format!("SLOW_MPI_T_S={sleep_s}"),
        "-x",
        "OMPI_MCA_pml=ob1",
        "-x",
        "OMPI_MCA_btl=self,vader,tcp",
    ])
    .arg(&prog);
    let start = std::time::Instant::now();
    let out = output_within(&mut cmd, LAUNCH_LIMIT);
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for r in 0..2 {
        assert!(stdout.contains(&format!("rank {r} ")), "{stdout}");
    }
    let trace = hyscope_format::Trace::open(&dir).unwrap();
    let mpit = mpi_t_sampler(&trace);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("hyscope:")).collect();
    if background {
        assert!(
            took < std::time::Duration::from_secs(60),
            "the job waited {took:?} for MPI_T's {sleep_s} s"
        );
        assert_eq!(warnings.len(), 2, "one per rank: {stderr}");
        for w in &warnings {
            assert_eq!(
                *w,
                "hyscope: MPI_T had not opened 10 s after MPI_Finalize was called; MPI_Finalize \
                 goes on without it (no mpi_t samples or MPI control variables in the trace)"
            );
        }
        assert!(!mpit.available);
        assert!(mpit.reason.contains("had not opened"), "{}", mpit.reason);
        for info in &trace.manifest.ranks {
            assert_eq!(info.warnings.len(), 1, "rank {}", info.rank);
        }
    } else {
        assert!(warnings.is_empty(), "{stderr}");
        assert!(mpit.available, "{}", mpit.reason);
    }
    // The trace is whole: each rank's MPI_Init and MPI_Finalize.
    let rows = mpi_rows(&trace);
    for r in 0..2 {
        assert_eq!(calls(&rows, r, "MPI_Init").len(), 1, "rank {r}");
        assert_eq!(calls(&rows, r, "MPI_Finalize").len(), 1, "rank {r}");
    }
}

//! Jobs that end badly keep what they recorded, and the trace says so:
//! `hyscope record -- mpirun -np 2 ./crash MODE` (tests/mpi/crash.c), where
//! rank 1 ends by `MPI_Abort`, SIGSEGV or SIGKILL after 100 iterations
//! (one parallel region and one `MPI_Allreduce` each, counts the program
//! prints) and 1.5 s of waiting; rank 0 waits for it in `MPI_Barrier` until
//! the launcher ends it. Also: a full disk (a 1 MiB tmpfs, as root).

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hyscope_format::{MpiRecord, OmpKind, ProcessEnd, SampleRecord, ScanOptions, Trace, mpi_call};
use record_support::*;

const ITERS: usize = 100;

fn crash_program(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/crash.c");
    build_mpi(dir, "crash", &std::fs::read_to_string(src).unwrap())
}

/// Record `crash MODE` at 2 ranks into `dir/trace`.
fn record(dir: &Path, prog: &Path, mode: &str) -> (PathBuf, Output) {
    let out = dir.join("trace");
    let mut cmd = record_into(&out);
    cmd.arg("mpirun").args(mpirun_args(2)).arg(prog).arg(mode);
    (out.clone(), cmd.output_within_limit().unwrap())
}

/// The "rank R regions N allreduce N" lines the program printed, sorted.
fn printed(out: &Output) -> Vec<String> {
    let mut l: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(str::to_string)
        .collect();
    l.sort();
    l
}

/// Per rank: parallel regions and MPI_Allreduce calls in the trace.
fn kept(dir: &Path) -> [(usize, usize); 2] {
    let trace = Trace::open(dir).unwrap();
    let omp = omp_rows(&trace);
    let mpi: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    [0, 1].map(|rank| {
        (
            count_kind(&omp, rank, OmpKind::Parallel),
            mpi.iter()
                .filter(|(r, m)| *r == rank && m.call == mpi_call::MPI_Allreduce)
                .count(),
        )
    })
}

fn report(dir: &Path) -> String {
    let out = hyscope()
        .arg("report")
        .arg(dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn end_of(dir: &Path, rank: u32) -> Option<ProcessEnd> {
    let trace = Trace::open(dir).unwrap();
    trace
        .manifest
        .ranks
        .iter()
        .find(|r| r.rank == rank)
        .and_then(|r| r.end.clone())
}

/// Every rank printed its 100 iterations, and the trace has all of them:
/// rank 1's were spooled by its handler (or were on disk for over a second
/// before SIGKILL), rank 0's by its SIGTERM handler when the launcher ended it.
fn check_all_kept(dir: &Path, out: &Output) {
    assert_eq!(
        printed(out),
        vec![
            format!("rank 0 regions {ITERS} allreduce {ITERS}"),
            format!("rank 1 regions {ITERS} allreduce {ITERS}"),
        ],
        "{}",
        stderr(out)
    );
    assert_eq!(kept(dir), [(ITERS, ITERS); 2], "{}", stderr(out));
    assert!(
        stderr(out).contains("recovered"),
        "record recovers the spools: {}",
        stderr(out)
    );
}

#[test]
fn mpi_abort_keeps_every_event_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = crash_program(tmp.path());
    let (dir, out) = record(tmp.path(), &prog, "abort");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    check_all_kept(&dir, &out);
    assert_eq!(end_of(&dir, 1), Some(ProcessEnd::Aborted { code: 3 }));
    let text = report(&dir);
    assert!(
        text.contains("rank 1 called MPI_Abort (error code 3)"),
        "{text}"
    );
    // The MPI calls are in the report, by source line (symbols resolved).
    assert!(text.contains("crash.c:"), "{text}");
}

#[test]
fn sigsegv_keeps_every_event_and_the_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = crash_program(tmp.path());
    // Without hyscope first: the status and output the job must keep.
    let plain = Command::new("mpirun")
        .args(mpirun_args(2))
        .arg(&prog)
        .arg("segv")
        .output_within_limit()
        .unwrap();
    let (dir, out) = record(tmp.path(), &prog, "segv");
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(out.status.code(), plain.status.code(), "{}", stderr(&out));
    assert_eq!(printed(&out), printed(&plain));
    check_all_kept(&dir, &out);
    assert_eq!(end_of(&dir, 1), Some(ProcessEnd::Signal { signal: 11 }));
    let text = report(&dir);
    assert!(
        text.contains("rank 1 crashed with signal 11 (SIGSEGV)"),
        "{text}"
    );
}

#[test]
fn sigkill_keeps_what_was_older_than_a_second() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = crash_program(tmp.path());
    let (dir, out) = record(tmp.path(), &prog, "kill");
    assert_ne!(out.status.code(), Some(0));
    // Everything rank 1 recorded was over a second old when it was killed:
    // the goal is 99 %; the writer spools the current blocks within 0.8 s.
    let [r0, r1] = kept(&dir);
    assert_eq!(r0, (ITERS, ITERS), "{}", stderr(&out));
    assert!(
        r1.0 * 100 >= ITERS * 99 && r1.1 * 100 >= ITERS * 99 && r1.0 <= ITERS && r1.1 <= ITERS,
        "rank 1 kept {r1:?} of {ITERS}: {}",
        stderr(&out)
    );
    assert_eq!(end_of(&dir, 1), Some(ProcessEnd::Killed));
    let trace = Trace::open(&dir).unwrap();
    // Its samples were spooled as they came: the memory readings of the
    // 1.5 s it waited are in the trace.
    let samples: Vec<(u32, SampleRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let rss = |rank: u32| {
        samples
            .iter()
            .filter(|(r, s)| *r == rank && s.metric == "mem.vmrss")
            .count()
    };
    assert!(
        rss(1) >= 2 && rss(0) >= 2,
        "rank 1 kept {} memory samples, rank 0 {}",
        rss(1),
        rss(0)
    );
    let r1info = trace.manifest.ranks.iter().find(|r| r.rank == 1).unwrap();
    // Its identity and clock offset come from the rank file written at MPI_Init.
    assert!(r1info.pid > 0 && !r1info.host.is_empty(), "{r1info:?}");
    assert!(!r1info.clock_offsets.is_empty(), "{r1info:?}");
    let text = report(&dir);
    assert!(text.contains("rank 1 ended without warning"), "{text}");
    // Both ranks called MPI_Init; what MPI_T offered was never written.
    assert!(!text.contains("no MPI_Init in this process"), "{text}");
    assert!(
        text.contains(
            "sampler `mpi_t` unavailable: not reported: the job ended before MPI_Finalize"
        ),
        "{text}"
    );
}

/// A small tmpfs for the trace, when this runs as root (else: skipped, saying why).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a small tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .ok()?;
        if !st.success() {
            eprintln!("skipped: cannot mount a tmpfs here (a container without the capability?)");
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// An OpenMP program that records ~1.6 M events (far more than 1 MiB of spool).
const MANY_SRC: &str = r#"
#include <omp.h>
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int r = 0; r < 200000; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    printf("sum %g\n", s);
    return 5;
}
"#;

#[test]
fn a_full_disk_is_one_warning_and_the_report_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("tiny"), "1m") else {
        return;
    };
    let prog = build_omp(tmp.path(), "many", MANY_SRC);
    let plain = Command::new(&prog).output_within_limit().unwrap();
    let dir = fs.0.join("trace");
    let out = record_into(&dir).arg(&prog).output_within_limit().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(out.stdout, plain.stdout);
    let err = stderr(&out);
    // One warning from the collector, and no other about writing.
    let full = err
        .lines()
        .filter(|l| l.starts_with("hyscope: the disk of the trace directory is full"))
        .count();
    assert_eq!(full, 1, "{err}");
    assert!(!err.contains("hyscope: cannot write"), "{err}");
    let text = report(&dir);
    assert!(text.contains("the disk was full"), "{text}");
    assert!(
        !text.contains("ran no OpenMP"),
        "no wrong diagnosis: {text}"
    );
}

/// A job run with `libhyscope.so` preloaded by hand, without `record`:
/// what the crashed ranks spooled stays in `spool/`, the report says it is
/// missing and how to get it, and `hyscope recover` puts every event in.
#[test]
fn a_job_run_without_record_is_completed_by_hyscope_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = crash_program(tmp.path());
    let dir = tmp.path().join("trace");
    let lib = beside_hyscope(
        "libhyscope.so",
        "run `cargo build --workspace` before `cargo test`",
    );
    let out = Command::new("mpirun")
        .args(mpirun_args(2))
        .args(["-x", &format!("LD_PRELOAD={}", lib.display())])
        .args(["-x", &format!("HYSCOPE_OUTPUT={}", dir.display())])
        .arg(&prog)
        .arg("segv")
        .output_within_limit()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let before = report(&dir);
    assert!(
        before.contains("PARTIAL TRACE") && before.contains("hyscope recover"),
        "{before}"
    );
    let rec = hyscope()
        .arg("recover")
        .arg(&dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(rec.status.code(), Some(0), "{}", stderr(&rec));
    assert!(stderr(&rec).contains("recovered"), "{}", stderr(&rec));
    assert_eq!(kept(&dir), [(ITERS, ITERS); 2], "{}", stderr(&out));
    assert_eq!(end_of(&dir, 1), Some(ProcessEnd::Signal { signal: 11 }));
    let after = report(&dir);
    assert!(!after.contains("left events in spool/"), "{after}");
    assert!(
        after.contains("rank 1 crashed with signal 11 (SIGSEGV)"),
        "{after}"
    );
    // Nothing left to do the second time.
    let again = hyscope()
        .arg("recover")
        .arg(&dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(
        stderr(&again).contains("nothing to recover"),
        "{}",
        stderr(&again)
    );
}

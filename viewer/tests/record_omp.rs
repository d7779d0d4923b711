//! `hyscope record` with an OpenMP-only program, the exit code, and the checks
//! made before the run (unwritable or existing output directory).

use crate::record_support;
use hyscope_testkit::OutputWithin;

use hyscope_analyzer::timeline::{State, TimelineIndex};
use hyscope_format::{OmpKind, OmpRecord, ScanOptions, Trace};
use hyscope_viewer::units;
use record_support::*;

#[test]
fn records_an_openmp_only_program() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let out_dir = tmp.path().join("trace");
    let out = record_into(&out_dir)
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 14850\n");

    let trace = Trace::open(&out_dir).unwrap();
    assert_eq!(trace.ranks(), vec![0]);
    let rows = omp_rows(&trace);
    assert!(!rows.is_empty());
    assert_eq!(count_kind(&rows, 0, OmpKind::Parallel), OMP_REGIONS);
    // One implicit task per thread per region.
    assert_eq!(count_kind(&rows, 0, OmpKind::ImplicitTask), 2 * OMP_REGIONS);
    // The chunks of each loop cover its 100 iterations exactly once.
    let iterations: u64 = rows
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Chunk as u8)
        .map(|(_, r)| r.count)
        .sum();
    assert_eq!(iterations, 100 * OMP_REGIONS as u64);

    // One summary line with the path and the counts, then the next command.
    let summary: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("hyscope: trace "))
        .collect();
    assert_eq!(summary.len(), 1, "stderr:\n{err}");
    let events = trace.manifest.ranks[0].events;
    assert!(
        summary[0].contains(&format!(
            "1 rank, {} events",
            events.omp + events.mpi + events.samples
        )),
        "{}",
        summary[0]
    );
    // The CPU time the writer took during the run (what trace mode costs a
    // full node) and the encoding at exit are recorded per rank and shown.
    let writer_ns = trace.manifest.ranks[0].writer_cpu_ns;
    let encode_ns = trace.manifest.ranks[0].encode_ns;
    // (This program's events fit in the buffers: all are spooled at exit, so
    // the writer thread may have had nothing to do during the run.)
    assert!(encode_ns > 0, "encode_ns = 0");
    let total = events.omp + events.mpi + events.samples;
    let writer = format!(
        "writer {} CPU ({}/event)",
        units::ns(writer_ns as f64),
        units::ns(writer_ns as f64 / total as f64)
    );
    assert_eq!(
        summary[0].contains(&writer),
        writer_ns > 0,
        "{}",
        summary[0]
    );
    assert!(
        summary[0].contains(&format!("encoding {} at exit", units::ns(encode_ns as f64))),
        "{}",
        summary[0]
    );
    // The spool was encoded into parts and removed.
    assert!(!out_dir.join("spool").exists(), "spool/ left behind");
    assert!(err.contains(&format!(
        "hyscope: next: hyscope report {}",
        out_dir.display()
    )));
}

/// The command `record` suggests runs as printed when pasted into a shell,
/// for a directory whose name has a space and a quote.
#[test]
fn the_suggested_command_is_quoted_for_the_shell() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_quoted", OMP_SRC);
    let out_dir = tmp.path().join("my trace's dir");
    let out = record_into(&out_dir)
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    let next = err
        .lines()
        .find_map(|l| l.strip_prefix("hyscope: next: "))
        .unwrap_or_else(|| panic!("no next command in:\n{err}"));
    // `hyscope report` is the command; the shell splits the rest into words.
    let words = std::process::Command::new("sh")
        .args(["-c", &format!("printf '%s\\n' {next}")])
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&words.stdout);
    let words: Vec<&str> = words.lines().collect();
    assert_eq!(
        words,
        ["hyscope", "report", out_dir.to_str().unwrap()],
        "{next}"
    );
}

/// With the OpenMP runtime's tool interface switched off, an OpenMP-only
/// program records nothing: `record` says so and leaves no directory.
#[test]
fn a_run_with_the_tool_interface_off_leaves_no_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_tool_off", OMP_SRC);
    let out_dir = tmp.path().join("trace");
    let out = record_into(&out_dir)
        .arg(&exe)
        .env("OMP_TOOL", "disabled")
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    assert!(err.contains("OMP_TOOL=disabled"), "{err}");
    assert!(err.contains("no trace written"), "{err}");
    assert!(
        !out_dir.exists(),
        "{:?}",
        std::fs::read_dir(&out_dir).map(|d| d.count())
    );
}

#[test]
fn default_output_name_is_program_date_time() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "named_app", OMP_SRC);
    let out = hyscope()
        .current_dir(tmp.path())
        .args(["record", "--"])
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dirs: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hyscope-"))
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    // hyscope-named_app-YYYYMMDD-HHMMSS
    let rest = dirs[0].strip_prefix("hyscope-named_app-").unwrap();
    assert_eq!(rest.len(), 15, "{rest}");
    assert!(rest[..8].bytes().all(|b| b.is_ascii_digit()) && &rest[8..9] == "-");
    assert!(rest[9..].bytes().all(|b| b.is_ascii_digit()));
    assert!(Trace::open(&tmp.path().join(&dirs[0])).is_ok());
}

#[test]
fn exit_code_of_the_program_is_preserved() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "exit3", OMP_SRC);
    let out_dir = tmp.path().join("trace");
    let out = record_into(&out_dir)
        .arg(&exe)
        .arg("3")
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // The trace is still complete.
    let trace = Trace::open(&out_dir).unwrap();
    assert_eq!(
        count_kind(&omp_rows(&trace), 0, OmpKind::Parallel),
        OMP_REGIONS
    );
}

#[test]
fn unwritable_output_directory_fails_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let marker = tmp.path().join("ran");
    // Directory permissions do not stop root, so use places nobody can write:
    // below a regular file, and in /proc.
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    for (dir, expect) in [
        (file.join("trace"), "is not a directory"),
        (
            "/proc/hyscope-unwritable".into(),
            "cannot create the output directory",
        ),
    ] {
        let out = record_into(&dir)
            .arg(&exe)
            .arg("0")
            .arg(&marker)
            .output_within_limit()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("hyscope: error: "), "{err}");
        assert!(
            err.contains(expect) && err.contains(&dir.display().to_string()),
            "{err}"
        );
        assert!(
            !marker.exists(),
            "the program ran although the output is unwritable"
        );
    }
}

#[test]
fn existing_output_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let marker = tmp.path().join("ran");
    let dir = tmp.path().join("old-trace");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), b"previous").unwrap();
    let out = record_into(&dir)
        .arg(&exe)
        .arg("0")
        .arg(&marker)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already exists; refusing to overwrite"),
        "{err}"
    );
    assert!(!marker.exists(), "the program ran");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1);
    assert_eq!(std::fs::read(dir.join("keep.txt")).unwrap(), b"previous");
}

#[test]
fn groups_and_dispatch_options_reach_the_collector() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let kinds_of = |dir: &std::path::Path| {
        let mut k: Vec<u8> = omp_rows(&Trace::open(dir).unwrap())
            .iter()
            .map(|(_, r)| r.kind)
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    // Only the `parallel` group: regions, implicit and initial tasks.
    let dir = tmp.path().join("parallel-only");
    let out = hyscope()
        .args(["record", "--groups", "parallel", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        kinds_of(&dir),
        vec![
            OmpKind::Parallel as u8,
            OmpKind::ImplicitTask as u8,
            OmpKind::InitialTask as u8
        ]
    );
    // Dispatch off: everything but loop chunks.
    let dir = tmp.path().join("no-chunks");
    let out = hyscope()
        .args(["record", "--dispatch", "off", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kinds = kinds_of(&dir);
    assert!(!kinds.contains(&(OmpKind::Chunk as u8)), "{kinds:?}");
    assert!(kinds.contains(&(OmpKind::Work as u8)), "{kinds:?}");
    // A bad option value is refused before the run: record_settings.rs.
}

#[test]
fn missing_program_leaves_no_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg(tmp.path().join("does-not-exist"))
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot find the program"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.exists());
}

/// A program that records a few thousand intervals, gives the writer time to
/// spool its full blocks, and is then killed (SIGKILL: no exit path runs).
const KILLED_SRC: &str = r#"
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    double s = 0;
    for (int r = 0; r < 4000; r++) {
        #pragma omp parallel for schedule(dynamic, 1) reduction(+:s)
        for (int i = 0; i < 16; i++) s += i;
    }
    printf("sum %.0f\n", s);
    fflush(stdout);
    usleep(1200000);
    kill(getpid(), SIGKILL);
    return 0;
}
"#;

#[test]
fn a_killed_programs_spooled_events_are_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "killed", KILLED_SRC);
    let out_dir = tmp.path().join("trace");
    let out = record_into(&out_dir)
        .arg(&exe)
        .env("OMP_NUM_THREADS", "2")
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128 + 9), "stderr:\n{err}");
    // The writer spools the threads' current blocks within 0.8 s and the
    // program waits 1.2 s before the kill: all of the run's 100 003
    // intervals are on disk but those the OMPT adapter still held back (the
    // last region's, a few; 99 993 recovered).
    let line = err
        .lines()
        .find(|l| l.contains("ended without warning (SIGKILL"))
        .unwrap_or_else(|| panic!("no recovery warning:\n{err}"));
    let recovered: u64 = line
        .split("recovered ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((99_003..=100_003).contains(&recovered), "{line}");
    assert!(
        !out_dir.join("spool").exists(),
        "the recovered spool stays behind"
    );
    let mut rows = 0;
    let mut chunks = 0;
    for part in std::fs::read_dir(out_dir.join("omp/rank=0")).unwrap() {
        let path = part.unwrap().path();
        let part = hyscope_format::PartFile {
            table: hyscope_format::Table::Omp,
            rank: 0,
            index: 0,
            bytes: std::fs::metadata(&path).unwrap().len(),
            path,
        };
        let part_rows = hyscope_format::read_part_records::<hyscope_format::OmpRecord>(
            &part,
            &Default::default(),
        )
        .unwrap();
        rows += part_rows.len() as u64;
        // schedule(dynamic, 1) over 16 iterations: every chunk is one of them.
        for r in part_rows.iter().filter(|r| r.kind == OmpKind::Chunk as u8) {
            assert_eq!(r.count, 1, "{r:?}");
            assert!(r.chunk_start < 16, "{r:?}");
            chunks += 1;
        }
    }
    assert_eq!(rows, recovered);
    assert!(chunks > 0);
}

#[test]
fn barrier_wait_is_split_by_arrival_on_libomp() {
    // tests/omp/barrier_imbalance.c: thread 1 spins 50 µs before each of 200
    // barriers, thread 0 arrives at once. libomp's wait events span each
    // barrier, so the analyzer splits it by the team's arrivals.
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "barrier_imbalance");
    let out_dir = tmp.path().join("trace");
    let out = run_ok(record_into(&out_dir).arg(&exe));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "barriers 400\n");

    let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
    let r = &a.regions.get().unwrap()[0];
    assert!(r.barrier.wait_from_arrivals, "{:?}", r.barrier);
    let thread = |t: u32| r.per_thread.iter().find(|x| x.thread == t).unwrap();
    let (t0, t1) = (thread(0), thread(1));
    for t in [t0, t1] {
        // 200 explicit barriers and the join barrier, matched across the team.
        assert_eq!(t.barrier.count, 201);
        assert!(
            (t.barrier.wait_s + t.barrier.sync_overhead_s - t.barrier.total_s).abs() < 1e-9,
            "{:?}",
            t.barrier
        );
    }
    // Thread 0 waits for thread 1's 50 µs at every barrier: 10 ms in all
    // (half of it at least, whatever else this machine runs); thread 1, the
    // last to arrive, only where thread 0 was held up longer than its spin.
    assert!(t0.barrier.wait_s > 5e-3, "{:?}", t0.barrier);
    assert!(
        t1.barrier.wait_s < t0.barrier.wait_s / 4.0,
        "{:?}",
        t1.barrier
    );
    assert!(r.barrier.sync_overhead_s > 0.0);

    // The timeline splits each barrier the same way: barrier wait until the
    // last arrival, OpenMP runtime after it. Over the whole run (nothing else
    // waits here) each thread's barrier wait is its wait in the report.
    let index = TimelineIndex::build(&Trace::open(&out_dir).unwrap()).unwrap();
    let (a0, a1) = index.span();
    let timeline = |t: u32| {
        let row = index.row_of(0, t).unwrap();
        let time = index.summary(row, a0, a1).time;
        (
            time[State::BarrierWait as usize] as f64 * 1e-9,
            time[State::OmpRuntime as usize] as f64 * 1e-9,
        )
    };
    let ((w0, rt0), (w1, rt1)) = (timeline(0), timeline(1));
    // The report's seconds are sums of per-instance ns conversions.
    assert!(
        (w0 - t0.barrier.wait_s).abs() < 1e-8,
        "{w0} vs {:?}",
        t0.barrier
    );
    assert!(
        (w1 - t1.barrier.wait_s).abs() < 1e-8,
        "{w1} vs {:?}",
        t1.barrier
    );
    assert!(
        w0 > 5e-3 && w1 < w0 / 4.0,
        "thread 0 {w0} s, thread 1 {w1} s"
    );
    // The synchronisation part shows as runtime (with fork/join on top).
    for (rt, t) in [(rt0, t0), (rt1, t1)] {
        assert!(
            rt >= t.barrier.sync_overhead_s - 1e-8,
            "{rt} vs {:?}",
            t.barrier
        );
    }

    let report = hyscope()
        .arg("report")
        .arg(&out_dir)
        .output_within_limit()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("barrier wait = until the team's last thread arrived"),
        "{text}"
    );
}

#[test]
fn tasks_run_at_a_barrier_count_as_busy() {
    // tests/omp/tasks_in_barrier.c: 40 tasks of 1 ms created in a `single`,
    // run by both threads at its barrier.
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "tasks_in_barrier");
    let out_dir = tmp.path().join("trace");
    let out = run_ok(record_into(&out_dir).arg(&exe));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tasks 40\n");

    let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
    let tasks = a.openmp.get().unwrap().tasks.get().unwrap().clone();
    assert_eq!(tasks.created, 40);
    assert!(tasks.run_s >= 40e-3, "{tasks:?}");
    let r = &a.regions.get().unwrap()[0];
    // No taskwait here: a thread's implicit task is its busy time plus its
    // barriers, and the tasks it ran are in the busy part.
    let busy: f64 = r.per_thread.iter().map(|t| t.busy_s).sum();
    for t in &r.per_thread {
        assert!(
            (t.busy_s + t.barrier.total_s - t.implicit_task_s).abs() < 1e-9,
            "{t:?}"
        );
    }
    assert!(
        busy >= tasks.run_s - 1e-9,
        "busy {busy}, tasks {}",
        tasks.run_s
    );
}

/// An OpenMP-only program under `OMP_PROC_BIND=master`: the threads' masks,
/// read by the sampler thread while the run lasts and at exit, show the
/// primary's CPU for both threads, and the report names the runtime's
/// binding. Without the sampler (`HYSCOPE_SAMPLE_MS=0`, as in any run
/// shorter than one interval) the exit reading alone must do: the initial
/// thread must still be bound then.
#[test]
fn omp_proc_bind_master_is_seen_in_an_openmp_only_run() {
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if host_cpus < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "barrier_imbalance");
    // A reading every 2 ms (the program runs ≈ 20 ms), and none.
    for sample_ms in ["2", "0"] {
        let out_dir = tmp.path().join(format!("trace-{sample_ms}"));
        run_ok(
            record_into(&out_dir)
                .env("OMP_NUM_THREADS", "2")
                .env("OMP_PROC_BIND", "master")
                .env("OMP_PLACES", "cores")
                .env("HYSCOPE_SAMPLE_MS", sample_ms)
                .arg(&exe),
        );
        let trace = Trace::open(&out_dir).unwrap();
        let rank = &trace.manifest.ranks[0];
        let masks: Vec<&Vec<u32>> = rank.thread_cpus.iter().map(|t| &t.cpus).collect();
        assert_eq!(masks.len(), 2, "{sample_ms} ms: {:?}", rank.thread_cpus);
        assert_eq!(masks[0].len(), 1, "{sample_ms} ms: {masks:?}");
        assert_eq!(masks[0], masks[1], "the primary's place for both");
        let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
        assert!(
            a.run.placement[0].pinned_together(),
            "{sample_ms} ms: {:?}",
            a.run.placement
        );
    }
}

/// Profile mode on real libomp, with serial code between regions
/// (`tests/omp/serial_gaps.c`: 20 regions where the worker spins 200 µs and
/// the primary 100 µs, 300 µs of serial code after each). The worker's
/// join-barrier ends come when it wakes for the next region, so its raw
/// barrier totals also hold the serial code (≥ 6 ms); the report must take
/// that out as trace mode does, and book the regions and the serial code
/// where they belong.
#[test]
fn profile_mode_books_regions_barriers_and_serial_code_as_trace_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp_test_program(tmp.path(), "serial_gaps");
    let out_dir = tmp.path().join("trace");
    run_ok(
        hyscope()
            .args(["record", "--mode", "profile", "-o"])
            .arg(&out_dir)
            .arg("--")
            .env("OMP_NUM_THREADS", "2")
            .arg(&exe),
    );
    let a = hyscope_analyzer::analyze(&out_dir, &Default::default()).unwrap();
    assert_eq!(a.run.mode, "profile");
    let regions = a.regions.get().unwrap();
    assert_eq!(regions.len(), 1, "{regions:?}");
    let r = &regions[0];
    assert_eq!((r.instances, r.team_size), (20, 2));
    assert!(
        r.fork_join_s > 0.0,
        "the primary's implicit tasks carry the region: {r:?}"
    );
    assert!(!r.per_thread_observed());
    let o = a.openmp.get().unwrap();
    let fg = &o.fine_grain[0];
    // Lower bounds from the spins: 20 × 200 µs in regions, 20 × 300 µs serial.
    assert!(fg.t_compute_s >= 4e-3, "{fg:?}");
    assert!(fg.t_seq_s >= 6e-3, "{fg:?}");
    // The worker's 20 late ends hold at least the 20 × 300 µs of serial
    // code after the regions, and exactly that excess is taken off the
    // barriers' raw totals (how long the threads really waited depends on
    // the machine's load; the bookkeeping does not).
    assert_eq!(a.run.clipped_join_waits, 20);
    assert!(a.run.clipped_join_wait_s >= 6e-3, "{:?}", a.run);
    let trace = Trace::open(&out_dir).unwrap();
    let rows: Vec<(u32, OmpRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let raw_barriers: f64 = rows
        .iter()
        .filter(|(_, r)| r.variant == OmpKind::Sync as u8 && r.flags == 9)
        .map(|(_, r)| r.chunk_start as f64 * 1e-9)
        .sum();
    assert!(
        (o.barrier.total_s - (raw_barriers - a.run.clipped_join_wait_s)).abs() < 1e-6,
        "raw {raw_barriers}, {:?}, {:?}",
        o.barrier,
        a.run
    );
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("worker join-barrier intervals from the totals")),
        "{:?}",
        a.warnings
    );
}

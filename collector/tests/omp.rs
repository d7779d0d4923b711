//! End-to-end OpenMP collection: real clang-19 programs (tests/omp/*.c) on the
//! real libomp, run under `LD_PRELOAD=libhyscope.so`, traces read back with
//! `hyscope_format::Trace`. Every count below is known from the program.

use hyscope_testkit::OutputWithin;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hyscope_format::{OmpKind, OmpRecord, ScanOptions, SymbolRecord, Trace};

const LLVM_LIB: &str = "/usr/lib/llvm-19/lib";

fn target_dir() -> PathBuf {
    // target/debug/deps/omp-<hash> → target/debug
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `libhyscope.so`, rebuilt first: `cargo test` builds this crate's rlib for the
/// test but does not refresh the cdylib the programs preload.
fn preload_lib() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "hyscope-collector", "--lib"]);
        if target_dir().ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "building libhyscope.so");
    });
    let lib = target_dir().join("libhyscope.so");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/omp")
        .join(format!("{name}.c"))
}

/// Build tests/omp/<name>.c with clang-19 -fopenmp into `dir`.
fn build(name: &str, dir: &Path) -> PathBuf {
    let exe = dir.join(name);
    let status = Command::new("clang-19")
        .args(["-fopenmp", "-g", "-O1"])
        .arg(format!("-Wl,-rpath,{LLVM_LIB}"))
        .arg(format!("-L{LLVM_LIB}"))
        .arg(source(name))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("clang-19 runs");
    assert!(status.success(), "building {name}");
    exe
}

/// Run `exe` under the collector with `HYSCOPE_OUTPUT=trace` and extra env.
fn run(exe: &Path, trace: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars() {
        if k.starts_with("HYSCOPE_") || k.starts_with("OMP_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("LD_PRELOAD", preload_lib())
        .env("HYSCOPE_OUTPUT", trace);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output_within_limit().expect("program runs");
    assert!(
        out.status.success(),
        "{} failed: {}\n{}",
        exe.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

struct Run {
    _dir: tempfile::TempDir,
    trace: Trace,
    omp: Vec<OmpRecord>,
    stdout: String,
    stderr: String,
}

fn record(name: &str, env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(name, dir.path());
    let trace_dir = dir.path().join("trace");
    let out = run(&exe, &trace_dir, env);
    let trace = Trace::open(&trace_dir).expect("trace opens");
    let mut omp: Vec<OmpRecord> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    omp.sort_by_key(|r| (r.start_ns, r.thread));
    Run {
        _dir: dir,
        trace,
        omp,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    fn of(&self, kind: OmpKind) -> Vec<OmpRecord> {
        self.omp
            .iter()
            .filter(|r| r.kind == kind as u8)
            .copied()
            .collect()
    }
    fn of_variant(&self, kind: OmpKind, variant: u8) -> Vec<OmpRecord> {
        self.of(kind)
            .into_iter()
            .filter(|r| r.variant == variant)
            .collect()
    }
    fn symbols(&self) -> Vec<SymbolRecord> {
        self.trace
            .read_records::<SymbolRecord>(&ScanOptions::default())
            .unwrap()
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }
}

fn inside(inner: &OmpRecord, outer: &OmpRecord) -> bool {
    inner.thread == outer.thread && inner.start_ns >= outer.start_ns && inner.end_ns <= outer.end_ns
}

/// 1-based line of the first line of `name`.c containing `needle` (after `after` lines).
fn line_of(name: &str, needle: &str, nth: usize) -> u32 {
    let text = std::fs::read_to_string(source(name)).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .map(|(i, _)| i as u32 + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in {name}.c"))
}

// ompt_sync_region_t values
const BARRIER_EXPLICIT: u8 = 3;
const TASKWAIT: u8 = 5;
const BARRIER_IMPLICIT_WORKSHARE: u8 = 8;
const BARRIER_IMPLICIT_PARALLEL: u8 = 9;
// ompt_mutex_t
const MUTEX_LOCK: u8 = 1;
const MUTEX_CRITICAL: u8 = 5;
// ompt_work_t
const LOOP_STATIC: u8 = 10;
const LOOP_DYNAMIC: u8 = 11;
const LOOP_GUIDED: u8 = 12;
const SINGLE_EXECUTOR: u8 = 3;
const SINGLE_OTHER: u8 = 4;

#[test]
fn parallel_regions_threads_nesting_and_if0() {
    let run = record("regions", &[]);
    assert_eq!(run.stdout, "sum=8 serial=1 inner=4\n");
    assert_eq!(run.stderr, "");

    // 4 regions x 2, one if(0) region, one outer region of 2 with an inner region of 2 per thread.
    let par = run.of(OmpKind::Parallel);
    let teams: Vec<u32> = par.iter().map(|r| r.team_size).collect();
    assert_eq!(par.len(), 8, "{par:#?}");
    let mut sorted = teams.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![1, 2, 2, 2, 2, 2, 2, 2]);
    let serial = par.iter().find(|r| r.team_size == 1).unwrap();
    assert_eq!(serial.requested_team_size, 1);
    assert!(
        par.iter()
            .filter(|r| r.team_size == 2)
            .all(|r| r.requested_team_size == 2)
    );

    // Implicit tasks: one per team member, indices 0..team, on distinct threads.
    let implicit = run.of(OmpKind::ImplicitTask);
    assert_eq!(implicit.len(), 4 * 2 + 1 + 2 + 2 * 2);
    for p in &par {
        let mine: Vec<&OmpRecord> = implicit
            .iter()
            .filter(|t| t.parallel_id == p.parallel_id)
            .collect();
        assert_eq!(mine.len() as u32, p.team_size, "region {:x}", p.parallel_id);
        let idx: BTreeSet<u64> = mine.iter().map(|t| t.count).collect();
        assert_eq!(idx, (0..p.team_size as u64).collect());
        let threads: BTreeSet<u32> = mine.iter().map(|t| t.thread).collect();
        assert_eq!(threads.len() as u32, p.team_size);
        // The primary thread's implicit task lies inside the region on the encountering thread.
        let primary = mine.iter().find(|t| t.count == 0).unwrap();
        assert!(inside(primary, p), "{primary:?} not inside {p:?}");
    }

    // Nesting: two regions are encountered by implicit tasks (not the initial task),
    // both of the same outer region, one on each of its threads.
    let task_region: BTreeMap<u64, u64> = implicit
        .iter()
        .map(|t| (t.task_id, t.parallel_id))
        .collect();
    let inner: Vec<&OmpRecord> = par
        .iter()
        .filter(|p| task_region.contains_key(&p.task_id))
        .collect();
    assert_eq!(inner.len(), 2);
    assert_ne!(inner[0].thread, inner[1].thread);
    let outer_ids: BTreeSet<u64> = inner.iter().map(|p| task_region[&p.task_id]).collect();
    assert_eq!(outer_ids.len(), 1);
    let outer = par
        .iter()
        .find(|p| outer_ids.contains(&p.parallel_id))
        .unwrap();
    assert_eq!(outer.team_size, 2);
    assert!(
        inner
            .iter()
            .all(|p| p.start_ns >= outer.start_ns && p.end_ns <= outer.end_ns)
    );

    // Implicit barriers: one per implicit task of the 7 regions with 2 threads,
    // none for the serialized region (docs/platform.md, "Quirks").
    let barriers = run.of_variant(OmpKind::Sync, BARRIER_IMPLICIT_PARALLEL);
    assert_eq!(barriers.len(), 14);
    assert!(barriers.iter().all(|b| b.parallel_id != serial.parallel_id));
    let waits = run.of_variant(OmpKind::SyncWait, BARRIER_IMPLICIT_PARALLEL);
    assert_eq!(waits.len(), 14);
    for w in &waits {
        assert!(
            barriers
                .iter()
                .any(|b| b.parallel_id == w.parallel_id && inside(w, b)),
            "wait {w:?} outside its barrier"
        );
    }
    for b in &barriers {
        let task = implicit
            .iter()
            .find(|t| t.task_id == b.task_id)
            .expect("barrier's task");
        assert!(inside(b, task), "barrier {b:?} outside its implicit task");
    }
    // libomp dispatches a barrier's begin and wait begin, and its wait end and
    // end, back to back: each pair shares one clock read, on the primary and
    // on the workers (whose ends come late, with their implicit task's end).
    // Every implicit task ends with its join barrier: a worker's late end comes
    // right after the barrier's, and the primary's takes the barrier's end
    // time too (the runtime's join work after it is fork/join overhead,
    // `hyscope_ompt::callbacks`).
    for w in &waits {
        assert!(
            barriers
                .iter()
                .any(|b| b.thread == w.thread && (b.start_ns, b.end_ns) == (w.start_ns, w.end_ns)),
            "wait {w:?} does not share its barrier's times"
        );
        let task = implicit
            .iter()
            .find(|t| t.task_id == w.task_id)
            .expect("wait's task");
        assert_eq!(task.end_ns, w.end_ns, "implicit task {task:?} vs {w:?}");
    }

    // Threads: the initial thread and the workers. The inner teams need one worker
    // each, but libomp may reuse one for both when the first inner region is over
    // before the second starts: 2 or 3 workers, each with exactly one thread row.
    let threads = run.of(OmpKind::Thread);
    let seen: BTreeSet<u32> = run.omp.iter().map(|r| r.thread).collect();
    assert_eq!(threads.len(), seen.len(), "{threads:#?}");
    assert!(seen.len() == 3 || seen.len() == 4, "{seen:?}");
    assert_eq!(threads.iter().filter(|t| t.variant == 1).count(), 1);
    assert_eq!(
        threads.iter().filter(|t| t.variant == 2).count(),
        seen.len() - 1
    );
    assert_eq!(run.of(OmpKind::InitialTask).len(), 1);
    let info = &run.trace.manifest.ranks[0];
    assert_eq!(info.threads as usize, seen.len());
    assert_eq!(info.dropped_events, 0);
    assert_eq!(info.events.omp, run.omp.len() as u64);

    // Code addresses resolve to the pragma lines.
    let symbols: BTreeMap<u64, SymbolRecord> =
        run.symbols().into_iter().map(|s| (s.address, s)).collect();
    let lines: BTreeSet<u32> = par
        .iter()
        .map(|p| {
            let s = &symbols[&p.codeptr];
            assert!(
                s.file.as_deref().unwrap().ends_with("tests/omp/regions.c"),
                "{s:?}"
            );
            assert!(s.module.ends_with("/regions"), "{s:?}");
            s.line.unwrap()
        })
        .collect();
    let expected: BTreeSet<u32> = [
        line_of(
            "regions",
            "#pragma omp parallel num_threads(2) reduction(+ : sum)",
            0,
        ),
        line_of("regions", "#pragma omp parallel if (0)", 0),
        line_of(
            "regions",
            "#pragma omp parallel num_threads(2) reduction(+ : inner)",
            0,
        ),
        line_of(
            "regions",
            "#pragma omp parallel num_threads(2) reduction(+ : inner)",
            1,
        ),
    ]
    .into();
    assert_eq!(lines, expected);

    // The manifest holds the capability table of libomp 19.
    let omp = run.trace.manifest.openmp.as_ref().expect("openmp info");
    assert_eq!(omp.capabilities["ompt_callback_dispatch"], 5);
    assert_eq!(omp.capabilities["ompt_callback_parallel_begin"], 5);
    assert!(omp.runtime_path.contains("llvm-19"), "{}", omp.runtime_path);
    assert!(omp.missing.is_empty(), "{:?}", omp.missing);
}

#[test]
fn loop_chunks_cover_every_iteration_once() {
    const N: u64 = 1000;
    let run = record("loops", &[]);
    assert_eq!(run.stdout, "loops ok=1\n");
    let implicit = run.of(OmpKind::ImplicitTask);
    let chunks = run.of(OmpKind::Chunk);
    for (variant, chunk) in [
        (LOOP_STATIC, None),
        (LOOP_DYNAMIC, Some(7)),
        (LOOP_GUIDED, Some(5)),
    ] {
        let loops = run.of_variant(OmpKind::Work, variant);
        assert_eq!(loops.len(), 2, "one loop per thread, variant {variant}");
        assert_ne!(loops[0].thread, loops[1].thread);
        let mut covered: Vec<(u64, u64)> = Vec::new();
        for l in &loops {
            // The loop is inside its thread's implicit task of the same region.
            assert!(
                implicit.iter().any(|t| t.parallel_id == l.parallel_id
                    && t.task_id == l.task_id
                    && inside(l, t)),
                "loop {l:?} outside its implicit task"
            );
            let mine: Vec<&OmpRecord> = chunks
                .iter()
                .filter(|c| c.thread == l.thread && c.codeptr == l.codeptr)
                .collect();
            // A thread may get no chunk at all when the other one takes every chunk.
            for c in &mine {
                assert!(inside(c, l), "chunk {c:?} outside loop {l:?}");
                assert_eq!(c.variant, 3, "ws_loop_chunk");
                assert_eq!(c.parallel_id, l.parallel_id);
                covered.push((c.chunk_start, c.count));
            }
        }
        covered.sort_unstable();
        let mut next = 0;
        for &(start, count) in &covered {
            assert_eq!(start, next, "gap or overlap at {start} (variant {variant})");
            next = start + count;
        }
        assert_eq!(next, N, "variant {variant}");
        match (variant, chunk) {
            (LOOP_STATIC, _) => assert_eq!(covered, vec![(0, 500), (500, 500)]),
            (LOOP_DYNAMIC, Some(c)) => {
                assert_eq!(covered.len(), 143);
                assert!(covered[..142].iter().all(|&(_, n)| n == c));
                assert_eq!(covered[142], (994, 6));
            }
            (_, Some(c)) => {
                assert!(covered[..covered.len() - 1].iter().all(|&(_, n)| n >= c));
                // Guided chunks shrink.
                assert!(covered[0].1 > covered[covered.len() - 2].1);
            }
            _ => unreachable!(),
        }
    }
    // Chunks resolve to the loop lines.
    let symbols: BTreeMap<u64, SymbolRecord> =
        run.symbols().into_iter().map(|s| (s.address, s)).collect();
    let dynamic = &run.of_variant(OmpKind::Work, LOOP_DYNAMIC)[0];
    let s = &symbols[&dynamic.codeptr];
    assert!(s.file.as_deref().unwrap().ends_with("tests/omp/loops.c"));
    assert_eq!(s.line, Some(line_of("loops", "schedule(dynamic, 7)", 0)));
}

#[test]
fn barriers_critical_locks_and_tasks() {
    let run = record("sync", &[]);
    assert_eq!(run.stdout, "crit=10 locked=6 tasks=20\n");

    // B = 3 explicit barriers per thread, each with its wait inside.
    let barriers = run.of_variant(OmpKind::Sync, BARRIER_EXPLICIT);
    assert_eq!(barriers.len(), 6);
    let waits = run.of_variant(OmpKind::SyncWait, BARRIER_EXPLICIT);
    assert_eq!(waits.len(), 6);
    for w in &waits {
        assert_eq!(barriers.iter().filter(|b| inside(w, b)).count(), 1, "{w:?}");
        // Back to back in libomp: one clock read per pair.
        assert_eq!(
            barriers
                .iter()
                .filter(|b| b.thread == w.thread && (b.start_ns, b.end_ns) == (w.start_ns, w.end_ns))
                .count(),
            1,
            "{w:?}"
        );
    }
    // Two `for` loops and one `single` end with a worksharing barrier on each thread.
    assert_eq!(
        run.of_variant(OmpKind::Sync, BARRIER_IMPLICIT_WORKSHARE)
            .len(),
        6
    );

    // K = 10 critical entries, L = 6 lock acquisitions: a wait then a hold each,
    // the hold starting where the wait ended.
    for (variant, n) in [(MUTEX_CRITICAL, 10), (MUTEX_LOCK, 6)] {
        let holds = run.of_variant(OmpKind::MutexHold, variant);
        let waits = run.of_variant(OmpKind::MutexWait, variant);
        assert_eq!(holds.len(), n, "holds of mutex kind {variant}");
        assert_eq!(waits.len(), n, "waits of mutex kind {variant}");
        for h in &holds {
            assert!(
                waits
                    .iter()
                    .any(|w| w.thread == h.thread && w.count == h.count && w.end_ns == h.start_ns),
                "hold {h:?} without its wait"
            );
            assert!(h.end_ns >= h.start_ns);
        }
        // Holds of one mutex do not overlap, up to one effect: libomp
        // dispatches `mutex_released` after the lock is free, so the next
        // owner can stamp its `acquired` before the previous owner stamps its
        // release (by nanoseconds, or by a time slice when that thread is
        // descheduled in between on a loaded machine, as when the test
        // groups run side by side: 2 of 10 seen). Mispaired holds would
        // overlap systematically: at most a third of the neighbours here.
        let mut hs = holds.clone();
        hs.sort_by_key(|h| h.start_ns);
        let overlaps = hs
            .windows(2)
            .filter(|w| w[0].end_ns > w[1].start_ns)
            .count();
        assert!(
            overlaps <= ((hs.len() - 1) / 3).max(1),
            "{overlaps} of {} holds overlap the next",
            hs.len()
        );
    }
    let lifetime = run.of(OmpKind::LockLifetime);
    assert_eq!(lifetime.len(), 2);
    assert_eq!(
        lifetime.iter().map(|l| l.flags).collect::<Vec<_>>(),
        vec![0, 1]
    );

    // M = 20 tasks, each created once and run to completion once, then one taskwait.
    let created = run.of(OmpKind::TaskCreate);
    assert_eq!(created.len(), 20);
    let runs = run.of(OmpKind::TaskRun);
    assert_eq!(runs.len(), 20);
    let created_ids: BTreeSet<u64> = created.iter().map(|c| c.task_id).collect();
    let run_ids: BTreeSet<u64> = runs.iter().map(|r| r.task_id).collect();
    assert_eq!(created_ids, run_ids);
    assert!(runs.iter().all(|r| r.variant == 1), "all complete");
    for r in &runs {
        let c = created.iter().find(|c| c.task_id == r.task_id).unwrap();
        assert!(r.start_ns >= c.start_ns);
    }
    assert_eq!(run.of_variant(OmpKind::Sync, TASKWAIT).len(), 1);
    let singles = run.of(OmpKind::Work);
    assert_eq!(
        singles
            .iter()
            .filter(|w| w.variant == SINGLE_EXECUTOR)
            .count(),
        1
    );
    assert_eq!(
        singles.iter().filter(|w| w.variant == SINGLE_OTHER).count(),
        1
    );
}

#[test]
fn profile_mode_writes_only_summaries() {
    let run = record("regions", &[("HYSCOPE_MODE", "profile")]);
    assert_eq!(run.stdout, "sum=8 serial=1 inner=4\n");
    assert!(run.omp.iter().all(|r| r.kind == OmpKind::Summary as u8));
    let total = |kind: OmpKind| -> u64 {
        run.omp
            .iter()
            .filter(|r| r.variant == kind as u8)
            .map(|r| r.count)
            .sum()
    };
    assert_eq!(total(OmpKind::Parallel), 8);
    assert_eq!(total(OmpKind::ImplicitTask), 15);
    assert_eq!(total(OmpKind::Sync), 14);
    assert_eq!(total(OmpKind::Chunk), 0, "profile mode records no chunks");
    assert_eq!(run.trace.manifest.mode, "profile");
    // A single interval's summed duration is its duration (nested ones may add up
    // to more than the span, e.g. an inner implicit task inside an outer one).
    for r in run.omp.iter().filter(|r| r.count == 1) {
        assert_eq!(r.chunk_start as i64, r.end_ns - r.start_ns, "{r:?}");
    }
    // Each region's rows keep its largest team: the 4 regions, the if(0) one,
    // the outer nested one and the inner ones (one row per encountering thread).
    let parallels: Vec<&OmpRecord> = run
        .omp
        .iter()
        .filter(|r| r.variant == OmpKind::Parallel as u8)
        .collect();
    let mut teams: Vec<(u64, u32)> = parallels.iter().map(|r| (r.count, r.team_size)).collect();
    teams.sort();
    assert_eq!(teams, [(1, 1), (1, 2), (1, 2), (1, 2), (4, 2)]);
    // The primary's implicit tasks carry their region's address: one row per
    // region and encountering thread, as many as its instances.
    for p in &parallels {
        assert!(
            run.omp
                .iter()
                .any(|r| r.variant == OmpKind::ImplicitTask as u8
                    && r.thread == p.thread
                    && r.codeptr == p.codeptr
                    && r.count == p.count),
            "no implicit-task row of {p:?}"
        );
    }
}

/// Format 1.11: each summary row's Σ of squared durations is in its own
/// column, as a Parquet reader sees it, exact (a single interval's is its
/// duration squared, more than one's between (Σd)²/n and (Σd)²), and the
/// row's `task_id`, `parallel_id` and `requested_team_size` are 0; the
/// records read the same sums. A trace-mode run has the column all null.
#[test]
fn profile_mode_sums_of_squares_have_their_own_column() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, UInt8Type, UInt32Type, UInt64Type};
    use arrow_array::{Array, RecordBatch};
    use hyscope_format::{SUMMARY_SUM_SQ_COLUMN, Table};

    let columns = |trace: &Trace| -> Vec<RecordBatch> {
        let names = [
            "kind",
            "count",
            "chunk_start",
            "task_id",
            "parallel_id",
            "requested_team_size",
            SUMMARY_SUM_SQ_COLUMN,
        ];
        let options = ScanOptions {
            columns: Some(names.iter().map(|n| n.to_string()).collect()),
            ..ScanOptions::default()
        };
        trace
            .scan(Table::Omp, &options)
            .map(Result::unwrap)
            .collect()
    };
    let run = record("regions", &[("HYSCOPE_MODE", "profile")]);
    let mut from_column = Vec::new();
    for b in columns(&run.trace) {
        let u64s = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_primitive::<UInt64Type>()
                .clone()
        };
        let (count, total, task, parallel) = (
            u64s("count"),
            u64s("chunk_start"),
            u64s("task_id"),
            u64s("parallel_id"),
        );
        let kind = b
            .column_by_name("kind")
            .unwrap()
            .as_primitive::<UInt8Type>();
        let requested = b
            .column_by_name("requested_team_size")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let sums = b
            .column_by_name(SUMMARY_SUM_SQ_COLUMN)
            .unwrap()
            .as_primitive::<Decimal128Type>();
        for i in 0..b.num_rows() {
            assert_eq!(kind.value(i), OmpKind::Summary as u8);
            assert_eq!(
                (task.value(i), parallel.value(i), requested.value(i)),
                (0, 0, 0)
            );
            assert!(sums.is_valid(i), "row {i}: no sum");
            let (n, d, sq) = (
                u128::from(count.value(i)),
                u128::from(total.value(i)),
                sums.value(i) as u128,
            );
            if n == 1 {
                assert_eq!(sq, d * d, "row {i}");
            } else {
                assert!(n * sq >= d * d && sq <= d * d, "row {i}: {n} {d} {sq}");
            }
            from_column.push((count.value(i), total.value(i), sq));
        }
    }
    assert_eq!(from_column.len(), run.omp.len());
    assert!(from_column.iter().any(|&(n, d, _)| n > 1 && d > 0));
    let mut from_records: Vec<(u64, u64, u128)> = run
        .omp
        .iter()
        .map(|r| (r.count, r.chunk_start, r.summary_sum_sq()))
        .collect();
    from_column.sort();
    from_records.sort();
    assert_eq!(from_column, from_records);

    let traced = record("regions", &[]);
    for b in columns(&traced.trace) {
        let sums = b.column_by_name(SUMMARY_SUM_SQ_COLUMN).unwrap();
        assert_eq!(sums.null_count(), b.num_rows());
    }
}

#[test]
fn groups_and_dispatch_switches() {
    let run = record("loops", &[("HYSCOPE_GROUPS", "parallel,work")]);
    let kinds: BTreeSet<u8> = run.omp.iter().map(|r| r.kind).collect();
    let allowed: BTreeSet<u8> = [
        OmpKind::Parallel,
        OmpKind::ImplicitTask,
        OmpKind::InitialTask,
        OmpKind::Work,
    ]
    .iter()
    .map(|k| *k as u8)
    .collect();
    assert!(kinds.is_subset(&allowed), "{kinds:?}");
    assert_eq!(run.of(OmpKind::Work).len(), 6);

    let run = record("loops", &[("HYSCOPE_DISPATCH", "0")]);
    assert!(run.of(OmpKind::Chunk).is_empty());
    assert_eq!(run.of(OmpKind::Work).len(), 6);
    assert!(!run.of(OmpKind::Sync).is_empty());
}

/// A bad value of a `HYSCOPE_*` variable: exactly one warning naming the
/// variable, the value and the value used; the program's output and exit
/// code are those of a run without the collector, and the trace is recorded
/// with the value used.
#[test]
fn bad_settings_warn_once_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build("loops", dir.path());
    let plain = Command::new(&exe).output_within_limit().unwrap();
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "loops ok=1\n");
    let all_kinds = run_kinds(&record("loops", &[]));
    for (i, (var, value, rest)) in BAD_VALUES.iter().enumerate() {
        let trace = dir.path().join(format!("trace{i}"));
        let out = run(&exe, &trace, &[(var, value)]);
        assert_eq!(out.stdout, plain.stdout, "{var}={value}");
        assert_eq!(out.status.code(), plain.status.code(), "{var}={value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.lines().collect::<Vec<_>>(),
            vec![format!("hyscope: {var}=`{value}` {rest}")],
            "{var}={value}"
        );
        let trace = Trace::open(&trace).unwrap();
        assert_eq!(trace.manifest.mode, "trace", "{var}={value}");
        let kinds: BTreeSet<u8> = trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap()
            .iter()
            .map(|(_, r)| r.kind)
            .collect();
        assert_eq!(kinds, all_kinds, "{var}={value}");
    }
    // An unknown group is left out; the others are recorded.
    let run = record("loops", &[("HYSCOPE_GROUPS", "work,bogus")]);
    assert_eq!(
        run.stderr.lines().collect::<Vec<_>>(),
        vec![
            "hyscope: HYSCOPE_GROUPS=`work,bogus` names unknown group `bogus` (known: thread, \
             parallel, work, chunk, sync, mutex, task, masked, reduction, cancel, flush, all); \
             using work"
        ]
    );
    assert_eq!(run.stdout, "loops ok=1\n");
    assert_eq!(run_kinds(&run), BTreeSet::from([OmpKind::Work as u8]));
}

include!("../../tests/settings/bad_values.rs");

fn run_kinds(run: &Run) -> BTreeSet<u8> {
    run.omp.iter().map(|r| r.kind).collect()
}

#[test]
fn unwritable_output_warns_once_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build("sync", dir.path());
    let plain = Command::new(&exe).output_within_limit().unwrap();
    // A regular file where the trace directory's parent should be.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"x").unwrap();
    let traced = Command::new(&exe)
        .env("LD_PRELOAD", preload_lib())
        .env("HYSCOPE_OUTPUT", blocker.join("trace"))
        .output_within_limit()
        .unwrap();
    assert_eq!(traced.stdout, plain.stdout);
    assert_eq!(traced.status.code(), plain.status.code());
    let stderr = String::from_utf8_lossy(&traced.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("hyscope: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("cannot write the trace"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// libomp 14 (Debian's `libomp5-14`, which conflicts with libomp 19 as a package,
/// so it is unpacked under target/ instead of installed).
fn libomp14_dir() -> PathBuf {
    let root = target_dir().join("libomp14");
    let lib = root.join("usr/lib/llvm-14/lib");
    if lib.join("libomp.so.5").exists() {
        return lib;
    }
    std::fs::create_dir_all(&root).unwrap();
    let status = Command::new("apt-get")
        .args(["download", "libomp5-14"])
        .current_dir(&root)
        .status()
        .expect("apt-get runs");
    assert!(status.success(), "apt-get download libomp5-14");
    let deb = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .expect("downloaded .deb");
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success(), "dpkg-deb -x");
    assert!(lib.join("libomp.so.5").exists());
    lib
}

#[test]
fn libomp14_records_missing_capabilities() {
    let lib14 = libomp14_dir();
    // sync.c uses only entry points libomp 14 has (clang-19's dynamic loops need libomp 19).
    let run = record("sync", &[("LD_LIBRARY_PATH", lib14.to_str().unwrap())]);
    assert_eq!(run.stdout, "crit=10 locked=6 tasks=20\n");
    let omp = run.trace.manifest.openmp.as_ref().unwrap();
    assert!(omp.runtime_path.contains("llvm-14"), "{}", omp.runtime_path);
    assert_eq!(
        omp.capabilities["ompt_callback_dispatch"], 1,
        "dispatch: never"
    );
    assert_eq!(omp.capabilities["ompt_callback_work"], 5);
    assert!(
        omp.missing.iter().any(|m| m.contains("no loop chunks")),
        "{:?}",
        omp.missing
    );
    assert!(
        omp.missing.iter().any(|m| m.contains("schedule kinds")),
        "{:?}",
        omp.missing
    );
    // The same constructs are there, loops only as generic `loop`.
    assert!(run.of(OmpKind::Chunk).is_empty());
    let loops = run.of(OmpKind::Work);
    assert_eq!(loops.iter().filter(|w| w.variant == 1).count(), 4);
    assert_eq!(
        loops
            .iter()
            .filter(|w| w.variant == 1)
            .map(|w| w.count)
            .collect::<BTreeSet<_>>(),
        [6, 10].into()
    );
    assert_eq!(run.of_variant(OmpKind::Sync, BARRIER_EXPLICIT).len(), 6);
    assert_eq!(run.of_variant(OmpKind::MutexHold, MUTEX_CRITICAL).len(), 10);
    assert_eq!(run.of(OmpKind::TaskRun).len(), 20);
}

#[test]
fn gcc_built_program_on_libomp_through_a_libgomp_shim() {
    // GCC's libgomp has no OMPT; libomp exports the GOMP ABI, so a `libgomp.so.1`
    // resolving to libomp first on the library path makes GCC-built code visible.
    let dir = tempfile::tempdir().unwrap();
    let shim = dir.path().join("shim");
    std::fs::create_dir(&shim).unwrap();
    std::os::unix::fs::symlink(format!("{LLVM_LIB}/libomp.so.5"), shim.join("libgomp.so.1"))
        .unwrap();
    let exe = dir.path().join("sync_gcc");
    let status = Command::new("gcc")
        .args(["-fopenmp", "-g", "-O1"])
        .arg(source("sync"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("gcc runs");
    assert!(status.success());
    let trace_dir = dir.path().join("trace");
    let out = run(
        &exe,
        &trace_dir,
        &[("LD_LIBRARY_PATH", shim.to_str().unwrap())],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "crit=10 locked=6 tasks=20\n"
    );
    let trace = Trace::open(&trace_dir).unwrap();
    let omp: Vec<OmpRecord> = trace
        .read_records::<OmpRecord>(&ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let count = |kind: OmpKind, variant: Option<u8>| {
        omp.iter()
            .filter(|r| r.kind == kind as u8 && variant.is_none_or(|v| r.variant == v))
            .count()
    };
    // What GCC-built code cannot show (docs/platform.md): explicit and worksharing
    // barriers both arrive as barrier_implementation (3 + 3 per thread), inlined
    // static loops have no work events, single has no executor.
    assert_eq!(count(OmpKind::Sync, Some(4)), 12);
    assert_eq!(count(OmpKind::Sync, Some(BARRIER_EXPLICIT)), 0);
    assert_eq!(count(OmpKind::Work, Some(LOOP_STATIC)), 0);
    assert_eq!(count(OmpKind::Work, Some(SINGLE_EXECUTOR)), 0);
    assert_eq!(count(OmpKind::Work, Some(SINGLE_OTHER)), 1);
    assert_eq!(count(OmpKind::Parallel, None), 1);
    assert_eq!(count(OmpKind::MutexHold, Some(MUTEX_CRITICAL)), 10);
    assert_eq!(count(OmpKind::MutexHold, Some(MUTEX_LOCK)), 6);
    assert_eq!(count(OmpKind::TaskCreate, None), 20);
    assert_eq!(count(OmpKind::TaskRun, None), 20);
    let info = trace.manifest.openmp.as_ref().unwrap();
    assert!(
        info.runtime_path.ends_with("llvm-19/lib/libomp.so.5"),
        "{}",
        info.runtime_path
    );
}

/// Regions recorded while the writer flushes the threads' current blocks
/// (those already filling at its previous 0.4 s round) and hands off blocks a
/// flush took part of: each region is in
/// the trace once, none is lost or written twice.
#[test]
fn partly_flushed_blocks_keep_every_event_once() {
    let run = record("slow_regions", &[("OMP_NUM_THREADS", "2")]);
    assert_eq!(run.stdout, "regions=6000\n");
    assert_eq!(run.stderr, "");
    let par = run.of(OmpKind::Parallel);
    let ids: BTreeSet<u64> = par.iter().map(|r| r.parallel_id).collect();
    assert_eq!((par.len(), ids.len()), (6000, 6000));
    let implicit = run.of(OmpKind::ImplicitTask);
    assert_eq!(implicit.len(), 2 * 6000);
    let pairs: BTreeSet<(u64, u64)> = implicit.iter().map(|r| (r.parallel_id, r.count)).collect();
    assert_eq!(pairs.len(), 2 * 6000);
    assert!(implicit.iter().all(|r| ids.contains(&r.parallel_id)));
    let mut kinds: std::collections::BTreeMap<(u8, u8), usize> = Default::default();
    for r in &run.omp {
        *kinds.entry((r.kind, r.variant)).or_default() += 1;
    }
    // Each region: a join barrier on both threads, and its wait.
    for kind in [OmpKind::Sync, OmpKind::SyncWait] {
        let n: usize = kinds
            .iter()
            .filter(|((k, _), _)| *k == kind as u8)
            .map(|(_, n)| n)
            .sum();
        assert_eq!(n, 2 * 6000, "{kind:?}: {kinds:?}");
    }
    // The run spans several flushes: more than one block's worth of time.
    let span = par.last().unwrap().end_ns - par.first().unwrap().start_ns;
    assert!(
        span > 1_200_000_000,
        "the regions took {span} ns, fewer than 3 flushes"
    );
}

/// A process of a job of more than 1,024 ranks (as its launcher says:
/// `PMI_SIZE`) writes the grouped layout, `<table>/block=<b>/rank=<r>/` and
/// `ranks/block=<b>/`; one of 1,024 ranks keeps the flat one. Both read back
/// alike.
#[test]
fn a_large_jobs_ranks_are_grouped_in_blocks() {
    for (size, grouped) in [("2000", true), ("1024", false)] {
        let dir = tempfile::tempdir().unwrap();
        let exe = build("regions", dir.path());
        let trace_dir = dir.path().join("trace");
        // Rank 1 first: rank 0 writes the manifest at its exit.
        for rank in ["1", "0"] {
            let out = run(&exe, &trace_dir, &[("PMI_RANK", rank), ("PMI_SIZE", size)]);
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "sum=8 serial=1 inner=4\n"
            );
            assert_eq!(String::from_utf8_lossy(&out.stderr), "");
        }
        for rank in [0, 1] {
            let (part_dir, rank_file) = if grouped {
                (
                    format!("omp/block=0/rank={rank}"),
                    format!("ranks/block=0/rank-{rank}.json"),
                )
            } else {
                (
                    format!("omp/rank={rank}"),
                    format!("ranks/rank-{rank}.json"),
                )
            };
            assert!(trace_dir.join(&part_dir).is_dir(), "{size}: {part_dir}");
            assert!(trace_dir.join(&rank_file).is_file(), "{size}: {rank_file}");
        }
        let trace = Trace::open(&trace_dir).unwrap();
        assert_eq!(trace.ranks(), vec![0, 1], "{size}");
        assert!(
            trace.problems().is_empty(),
            "{size}: {:?}",
            trace.problems()
        );
        let rows = trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .unwrap();
        for rank in [0, 1] {
            let parallel = rows
                .iter()
                .filter(|(r, o)| *r == rank && o.kind == OmpKind::Parallel as u8)
                .count();
            assert_eq!(parallel, 8, "{size}: rank {rank}");
        }
    }
}

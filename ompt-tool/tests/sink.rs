//! The adapter on its own: callbacks driven in the order libomp dispatches them,
//! intervals checked in a recording sink. (The real runtime is exercised
//! end to end in collector/tests/omp.rs.)

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

use hyscope_format::{OmpKind, OmpRecord};
use hyscope_ompt::callbacks::*;
use hyscope_ompt::ffi::*;

struct Recorder {
    rows: Mutex<Vec<OmpRecord>>,
    clock: AtomicI64,
    threads: AtomicU32,
}

thread_local! {
    static INDEX: Cell<Option<u32>> = const { Cell::new(None) };
    /// The counter handed over by `bind_parallel_depth` for this thread.
    static DEPTH: Cell<Option<&'static AtomicU32>> = const { Cell::new(None) };
}

/// "In parallel?" as a sink sees it through the bound counter (what the collector's MPI wrappers read).
fn bound_in_parallel() -> bool {
    DEPTH.with(|d| d.get().expect("counter bound").load(Ordering::Relaxed) > 0)
}

impl hyscope_ompt::Sink for Recorder {
    /// Every clock read advances time by 10 ns: intervals are fully ordered.
    fn now_ns(&self) -> i64 {
        self.clock.fetch_add(10, Ordering::SeqCst) + 10
    }
    fn record(&self, rec: OmpRecord) {
        self.rows.lock().unwrap().push(rec);
    }
    fn thread_index(&self) -> u32 {
        INDEX.with(|i| match i.get() {
            Some(v) => v,
            None => {
                let v = self.threads.fetch_add(1, Ordering::SeqCst);
                i.set(Some(v));
                v
            }
        })
    }
    fn bind_parallel_depth(&self, depth: &'static AtomicU32) {
        DEPTH.with(|d| d.set(Some(depth)));
    }
    fn warn(&self, _msg: &str) {}
    fn finalize(&self) {}
}

static RECORDER: Recorder = Recorder {
    rows: Mutex::new(Vec::new()),
    clock: AtomicI64::new(0),
    threads: AtomicU32::new(0),
};

fn rows_of(thread: u32) -> Vec<OmpRecord> {
    let mut rows: Vec<OmpRecord> = RECORDER
        .rows
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.thread == thread)
        .copied()
        .collect();
    rows.sort_by_key(|r| r.start_ns);
    rows
}

fn data() -> ompt_data_t {
    ompt_data_t { value: 0 }
}

fn setup() -> u32 {
    hyscope_ompt::set_sink(&RECORDER);
    use hyscope_ompt::Sink;
    RECORDER.thread_index()
}

/// The initial thread and its initial task begin, as libomp dispatches them.
unsafe fn start_initial_thread(thread: &mut ompt_data_t, task: &mut ompt_data_t) {
    unsafe {
        thread_begin(1, thread);
        implicit_task(OMPT_SCOPE_BEGIN, null_mut(), task, 1, 1, OMPT_TASK_INITIAL);
    }
}

/// ... and end.
unsafe fn end_initial_thread(thread: &mut ompt_data_t, task: &mut ompt_data_t) {
    unsafe {
        implicit_task(OMPT_SCOPE_END, null_mut(), task, 0, 1, OMPT_TASK_INITIAL);
        thread_end(thread);
    }
}

fn one(rows: &[OmpRecord], kind: OmpKind) -> OmpRecord {
    let v: Vec<&OmpRecord> = rows.iter().filter(|r| r.kind == kind as u8).collect();
    assert_eq!(v.len(), 1, "{kind:?}: {rows:#?}");
    *v[0]
}

#[test]
fn primary_thread_of_a_region_with_a_dynamic_loop() {
    let me = setup();
    let code = |a: usize| a as *const c_void;
    let (mut td, mut init, mut pd, mut t0) = (data(), data(), data(), data());
    let mut chunk_a = ompt_dispatch_chunk_t {
        start: 0,
        iterations: 7,
    };
    let mut chunk_b = ompt_dispatch_chunk_t {
        start: 14,
        iterations: 7,
    };
    unsafe {
        start_initial_thread(&mut td, &mut init);
        assert!(!hyscope_ompt::in_parallel());
        assert!(!bound_in_parallel());
        parallel_begin(
            &mut init,
            null(),
            &mut pd,
            2,
            0x8000_0002u32 as i32,
            code(0x1000),
        );
        implicit_task(OMPT_SCOPE_BEGIN, &mut pd, &mut t0, 2, 0, OMPT_TASK_IMPLICIT);
        assert!(hyscope_ompt::in_parallel());
        assert!(bound_in_parallel());
        work(11, OMPT_SCOPE_BEGIN, &mut pd, &mut t0, 100, code(0x2000));
        dispatch(
            &mut pd,
            &mut t0,
            OMPT_DISPATCH_WS_LOOP_CHUNK,
            ompt_data_t {
                ptr: (&raw mut chunk_a).cast(),
            },
        );
        dispatch(
            &mut pd,
            &mut t0,
            OMPT_DISPATCH_WS_LOOP_CHUNK,
            ompt_data_t {
                ptr: (&raw mut chunk_b).cast(),
            },
        );
        work(11, OMPT_SCOPE_END, &mut pd, &mut t0, 0, code(0x2000));
        sync_region(9, OMPT_SCOPE_BEGIN, &mut pd, &mut t0, code(0x1000));
        sync_region_wait(9, OMPT_SCOPE_BEGIN, &mut pd, &mut t0, code(0x1000));
        sync_region_wait(9, OMPT_SCOPE_END, &mut pd, &mut t0, code(0x1000));
        sync_region(9, OMPT_SCOPE_END, &mut pd, &mut t0, code(0x1000));
        implicit_task(OMPT_SCOPE_END, &mut pd, &mut t0, 2, 0, OMPT_TASK_IMPLICIT);
        parallel_end(&mut pd, &mut init, 0, code(0x1000));
        assert!(!hyscope_ompt::in_parallel());
        assert!(!bound_in_parallel());
        // A critical section, a task run to completion, a failed test_lock then a lock.
        mutex_acquire(5, 0, 0, 42, code(0x3000));
        mutex_acquired(5, 42, code(0x3000));
        mutex_released(5, 42, code(0x3000));
        let mut task = data();
        task_create(
            &mut init,
            null(),
            &mut task,
            OMPT_TASK_EXPLICIT,
            0,
            code(0x4000),
        );
        task_schedule(&mut init, 7, &mut task);
        task_schedule(&mut task, OMPT_TASK_COMPLETE, &mut init);
        mutex_acquire(2, 0, 0, 77, code(0x5000));
        mutex_acquire(1, 0, 0, 77, code(0x5000));
        mutex_acquired(1, 77, code(0x5000));
        mutex_released(1, 77, code(0x5000));
        end_initial_thread(&mut td, &mut init);
    }
    let rows = rows_of(me);
    let par = one(&rows, OmpKind::Parallel);
    assert_eq!(
        (par.team_size, par.requested_team_size, par.codeptr),
        (2, 2, 0x1000)
    );
    assert_eq!(par.flags, 0x8000_0002);
    let it = one(&rows, OmpKind::ImplicitTask);
    assert_eq!(
        (it.parallel_id, it.count, it.team_size),
        (par.parallel_id, 0, 2)
    );
    assert!(it.start_ns > par.start_ns && it.end_ns < par.end_ns);
    let initial = one(&rows, OmpKind::InitialTask);
    assert_eq!(par.task_id, initial.task_id);
    let w = one(&rows, OmpKind::Work);
    assert_eq!((w.variant, w.count, w.task_id), (11, 100, it.task_id));
    let chunks: Vec<&OmpRecord> = rows
        .iter()
        .filter(|r| r.kind == OmpKind::Chunk as u8)
        .collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!((chunks[0].chunk_start, chunks[0].count), (0, 7));
    assert_eq!((chunks[1].chunk_start, chunks[1].count), (14, 7));
    // A chunk ends where the next is dispatched; the last ends with the loop.
    assert_eq!(chunks[0].end_ns, chunks[1].start_ns);
    assert_eq!(chunks[1].end_ns, w.end_ns);
    assert!(
        chunks
            .iter()
            .all(|c| c.codeptr == 0x2000 && c.start_ns > w.start_ns)
    );
    let sync = one(&rows, OmpKind::Sync);
    let wait = one(&rows, OmpKind::SyncWait);
    assert_eq!((sync.variant, wait.variant), (9, 9));
    // libomp dispatches a barrier's begin and wait begin (and wait end and end)
    // back to back: the pairs share one clock read.
    assert_eq!((wait.start_ns, wait.end_ns), (sync.start_ns, sync.end_ns));
    assert!(wait.end_ns > wait.start_ns);
    // The primary's implicit task ends with its join barrier (the runtime's
    // join work after it is the region's fork/join overhead); the region's end
    // reads the clock (the team's release runs between).
    assert!(it.end_ns == sync.end_ns && par.end_ns > it.end_ns);
    // Mutexes: the failed test_lock wait is dropped; hold starts where the wait ends.
    let waits: Vec<&OmpRecord> = rows
        .iter()
        .filter(|r| r.kind == OmpKind::MutexWait as u8)
        .collect();
    let holds: Vec<&OmpRecord> = rows
        .iter()
        .filter(|r| r.kind == OmpKind::MutexHold as u8)
        .collect();
    assert_eq!(waits.len(), 2);
    assert_eq!(holds.len(), 2);
    for (w, h) in waits.iter().zip(&holds) {
        assert_eq!((w.variant, w.count), (h.variant, h.count));
        assert_eq!(w.end_ns, h.start_ns);
    }
    assert_eq!((holds[0].variant, holds[0].count), (5, 42));
    assert_eq!((holds[1].variant, holds[1].count), (1, 77));
    let created = one(&rows, OmpKind::TaskCreate);
    let run = one(&rows, OmpKind::TaskRun);
    assert_eq!(created.task_id, run.task_id);
    assert_eq!(created.count, initial.task_id);
    assert_eq!(run.variant, OMPT_TASK_COMPLETE as u8);
    let thread = one(&rows, OmpKind::Thread);
    assert_eq!(thread.variant, 1);
    assert!(
        rows.iter()
            .all(|r| r.start_ns >= thread.start_ns && r.end_ns <= thread.end_ns)
    );
}

#[test]
fn worker_join_barrier_ends_arrive_late_and_are_kept() {
    let me = setup();
    let (mut td, mut pd1, mut pd2, mut t1, mut t2) = (data(), data(), data(), data(), data());
    unsafe {
        thread_begin(2, &mut td);
        // Region 1: the worker's barrier end and implicit-task end only arrive when region 2 starts,
        // with no parallel data and team size 0.
        pd1.value = 0xA;
        implicit_task(
            OMPT_SCOPE_BEGIN,
            &mut pd1,
            &mut t1,
            2,
            1,
            OMPT_TASK_IMPLICIT,
        );
        sync_region(9, OMPT_SCOPE_BEGIN, &mut pd1, &mut t1, null());
        sync_region_wait(9, OMPT_SCOPE_BEGIN, &mut pd1, &mut t1, null());
        sync_region_wait(9, OMPT_SCOPE_END, null_mut(), &mut t1, null());
        sync_region(9, OMPT_SCOPE_END, null_mut(), &mut t1, null());
        implicit_task(
            OMPT_SCOPE_END,
            null_mut(),
            &mut t1,
            0,
            1,
            OMPT_TASK_IMPLICIT,
        );
        pd2.value = 0xB;
        implicit_task(
            OMPT_SCOPE_BEGIN,
            &mut pd2,
            &mut t2,
            2,
            1,
            OMPT_TASK_IMPLICIT,
        );
        implicit_task(
            OMPT_SCOPE_END,
            null_mut(),
            &mut t2,
            0,
            1,
            OMPT_TASK_IMPLICIT,
        );
        thread_end(&mut td);
    }
    let rows = rows_of(me);
    let tasks: Vec<&OmpRecord> = rows
        .iter()
        .filter(|r| r.kind == OmpKind::ImplicitTask as u8)
        .collect();
    assert_eq!(tasks.len(), 2);
    // Region ids and team sizes come from the begin, not from the late end.
    assert_eq!(
        (tasks[0].parallel_id, tasks[0].team_size, tasks[0].count),
        (0xA, 2, 1)
    );
    assert_eq!(tasks[1].parallel_id, 0xB);
    let wait = one(&rows, OmpKind::SyncWait);
    assert_eq!(wait.parallel_id, 0xA);
    assert!(wait.end_ns < tasks[1].start_ns);
    // The three late ends are dispatched back to back: one clock read.
    let sync = one(&rows, OmpKind::Sync);
    assert_eq!((sync.start_ns, sync.end_ns), (wait.start_ns, wait.end_ns));
    assert_eq!(tasks[0].end_ns, wait.end_ns);
    assert_eq!(one(&rows, OmpKind::Thread).variant, 2);
}

#[test]
fn only_back_to_back_callbacks_share_a_clock_read() {
    let me = setup();
    let (mut td, mut init, mut task) = (data(), data(), data());
    unsafe {
        start_initial_thread(&mut td, &mut init);
        // taskwait (5): both pairs back to back in libomp.
        sync_region(5, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(5, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(5, OMPT_SCOPE_END, null_mut(), &mut init, null());
        sync_region(5, OMPT_SCOPE_END, null_mut(), &mut init, null());
        // taskgroup (6): the construct's body runs between its begin and its
        // wait, and a free between the wait's end and its end.
        sync_region(6, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(6, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(6, OMPT_SCOPE_END, null_mut(), &mut init, null());
        sync_region(6, OMPT_SCOPE_END, null_mut(), &mut init, null());
        // An explicit barrier (3) whose wait begins after another callback
        // (here a task created in between): no sharing.
        sync_region(3, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        task_create(&mut init, null(), &mut task, OMPT_TASK_EXPLICIT, 0, null());
        sync_region_wait(3, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(3, OMPT_SCOPE_END, null_mut(), &mut init, null());
        sync_region(3, OMPT_SCOPE_END, null_mut(), &mut init, null());
        // `single`: the threads that skip it begin and end back to back; the
        // executor runs the block between.
        work(4, OMPT_SCOPE_BEGIN, null_mut(), &mut init, 1, null());
        work(4, OMPT_SCOPE_END, null_mut(), &mut init, 1, null());
        work(3, OMPT_SCOPE_BEGIN, null_mut(), &mut init, 1, null());
        work(3, OMPT_SCOPE_END, null_mut(), &mut init, 1, null());
        // A wait of another kind does not share the barrier's begin.
        sync_region(3, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(5, OMPT_SCOPE_BEGIN, null_mut(), &mut init, null());
        sync_region_wait(5, OMPT_SCOPE_END, null_mut(), &mut init, null());
        sync_region(3, OMPT_SCOPE_END, null_mut(), &mut init, null());
        end_initial_thread(&mut td, &mut init);
    }
    let rows = rows_of(me);
    let of = |kind: OmpKind, variant: u8| -> Vec<OmpRecord> {
        rows.iter()
            .filter(|r| r.kind == kind as u8 && r.variant == variant)
            .copied()
            .collect()
    };
    let (sync, wait) = (of(OmpKind::Sync, 5), of(OmpKind::SyncWait, 5));
    assert_eq!((sync.len(), wait.len()), (1, 2));
    assert_eq!(
        (wait[0].start_ns, wait[0].end_ns),
        (sync[0].start_ns, sync[0].end_ns)
    );
    let (sync, wait) = (of(OmpKind::Sync, 6), of(OmpKind::SyncWait, 6));
    assert!(wait[0].start_ns > sync[0].start_ns && wait[0].end_ns < sync[0].end_ns);
    let (sync, wait) = (of(OmpKind::Sync, 3), of(OmpKind::SyncWait, 3));
    assert_eq!((sync.len(), wait.len()), (2, 1));
    assert!(wait[0].start_ns > sync[0].start_ns && wait[0].end_ns == sync[0].end_ns);
    let (skipped, executed) = (of(OmpKind::Work, 4), of(OmpKind::Work, 3));
    assert_eq!(skipped[0].start_ns, skipped[0].end_ns);
    assert!(executed[0].end_ns > executed[0].start_ns);
    let other = of(OmpKind::SyncWait, 5)[1];
    assert!(other.start_ns > sync[1].start_ns && other.end_ns < sync[1].end_ns);
}

#[test]
fn configuration_from_values() {
    use hyscope_ompt::ToolConfig;
    let (all, w) = ToolConfig::from_values(None, None, None);
    assert!(w.is_empty());
    assert!(!all.profile);
    assert!(
        OmpKind::ALL
            .iter()
            .filter(|k| **k != OmpKind::Summary)
            .all(|k| all.records(*k))
    );
    let (c, w) = ToolConfig::from_values(Some("profile"), Some("parallel, sync,bogus"), Some("0"));
    assert!(c.profile);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("bogus"));
    assert!(c.records(OmpKind::Parallel) && c.records(OmpKind::SyncWait));
    assert!(
        !c.records(OmpKind::Work) && !c.records(OmpKind::Chunk) && !c.records(OmpKind::MutexHold)
    );
    let (c, _) = ToolConfig::from_values(None, Some("all"), Some("0"));
    assert!(c.records(OmpKind::Work) && !c.records(OmpKind::Chunk));
    // Profile mode never records chunks (the dispatch callback is not registered).
    let (c, _) = ToolConfig::from_values(Some("profile"), None, None);
    assert!(c.records(OmpKind::Work) && !c.records(OmpKind::Chunk));
}

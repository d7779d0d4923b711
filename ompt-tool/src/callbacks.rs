//! The OMPT entry points and one callback per host event.
//!
//! Every callback: find the thread's state and take the time before any other
//! work (so the tool's own work stays out of the interval; the time is the
//! previous callback's when libomp makes the two back to back, see [`enter`]),
//! then open or close an interval on the calling thread's stack. Ends are
//! matched to the innermost open interval of the same kind
//! (and variant, wait id or task), not blindly to the top, because libomp
//! delivers some ends late: a worker's join-barrier `sync_region_wait` end,
//! `sync_region` end and `implicit_task` end arrive only when it wakes for the
//! next region or at shutdown, with no parallel data and team size 0. We
//! record those as they come (raw truth); the analyzer clips a worker's wait at
//! the master's `parallel_end`. Every implicit task (the primary's too) ends
//! at its join barrier's end, see [`enter`].
//!
//! The primary thread's intervals that close between a region's join and the
//! next fork (its join barrier's ends, its implicit task's end,
//! `parallel_end`) are on the region's critical path; they are held back and
//! encoded at its next `implicit_task` or wait begin, where it has time to
//! spare (`ThreadState::close_held`). A worker's late join-barrier ends are on
//! it too, and the worker has no slack: its three intervals close together at
//! the wait's end, with one encoding call (`ThreadState::close_late_join`;
//! the barrier's and implicit task's end callbacks then only note it, see
//! [`enter_open`]). A mutex's wait, which ends where the thread acquires it,
//! is held back the same way until its release, out of the critical section.
//!
//! No OpenMP user API is called here (it can crash inside callbacks), no
//! panics: all pointers from the runtime are checked for null.
//!
//! # Safety (all callbacks)
//! Call them as the runtime does: every pointer is null or valid for the call.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

use hyscope_format::{OmpKind, OmpRecord};

use crate::ffi::*;
use crate::state::{EXPLICIT_TASK_BIT, ThreadState, current};
use crate::{FIRST_TEAM, GENERIC_LOOP_SEEN, runtime_info, sink};

/// A callback's identity for [`enter`]: OMPT callback id, endpoint and kind
/// (the sync region kind, where there is one). 0 is no callback.
#[inline(always)]
const fn event(callback: c_uint, endpoint: c_uint, kind: c_uint) -> u32 {
    (callback << 16) | ((endpoint & 0xff) << 8) | (kind & 0xff)
}

const NO_EVENT: u32 = 0;
/// `last_event` after a worker's late join-barrier wait end closed its
/// barrier and implicit task too (`ThreadState::close_late_join`); the
/// barrier's end callback then has nothing to close (no callback has
/// endpoint 0xfe).
const LATE_JOIN_WAIT: u32 = event(
    CB_SYNC_REGION_WAIT,
    0xfe,
    OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL,
);
/// `last_event` after that barrier end: the implicit task's end callback
/// then has nothing to close. Only `sync_region` passes `scoped` a
/// `closed_by`, so `scoped` always moves on to this one.
const LATE_JOIN_SYNC: u32 = event(CB_SYNC_REGION, 0xfe, OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL);
const CB_IMPLICIT_TASK: c_uint = 7;
const CB_WORK: c_uint = 20;
const CB_SYNC_REGION_WAIT: c_uint = 16;
const CB_SYNC_REGION: c_uint = 23;

/// Sync region kinds whose callbacks libomp dispatches in back-to-back pairs
/// (see [`enter`]): the barriers (1–4, 8–10) and taskwait (5), not taskgroup
/// (6), reduction (7) or kinds this version does not know.
#[inline(always)]
fn shares_time(kind: c_uint) -> bool {
    matches!(kind, 1..=5 | 8..=10)
}

/// The calling thread's state and the time of callback `this`.
///
/// The time is the clock's, except when `after` is the thread's previous
/// callback and libomp dispatches `this` immediately after it: then it is
/// that callback's time. Reading the TSC is half the cost of a callback on
/// these machines (docs/platform.md, "OpenMP runtimes and OMPT"), and what lies
/// between two back-to-back dispatches is only the tool's own work, which
/// would otherwise show up as runtime time in the interval between them.
/// What libomp 19 dispatches back to back, with nothing but `ompt_enabled`
/// checks and OMPT state updates between (read in Debian's 19.1.7 source):
/// - barriers and taskwait ([`shares_time`]): `sync_region` begin, then
///   `sync_region_wait` begin; `sync_region_wait` end, then `sync_region` end
///   (`__kmp_barrier_template`, `__kmp_join_barrier`, `__kmp_internal_join`,
///   `__kmpc_omp_taskwait_template`);
/// - a worker's late join-barrier ends: `sync_region_wait` end, `sync_region`
///   end, `implicit_task` end (`__ompt_implicit_task_end` in
///   kmp_wait_release.h, or its fallback in `__kmp_fork_barrier`);
/// - `work` begin and end of a `single` another thread executes
///   (`__kmpc_single`, `GOMP_single_start`).
///
/// One pair is not back to back and shares the time all the same: the
/// primary thread's join-barrier end and its `implicit_task` end. Between them
/// `__kmp_join_call` takes the fork/join lock (two locked atomic operations);
/// that is the runtime's join work, which the implicit task then leaves to
/// the region's fork/join overhead (region − implicit task, Mahéo 2015
/// §6.6.3) instead of booking it as the primary's busy time. A TSC read right
/// there costs ≈ 0.075 µs per region on these machines, any clock alike
/// (`rdtsc`, `rdtscp`, `lfence; rdtsc`, `clock_gettime`): it waits for those
/// locked operations, where a callback that reads no clock does not
/// (`benchmarks/ompt.md`).
///
/// Not back to back, so each reads the clock: a taskgroup's begin and wait
/// (the construct's body runs between) and its wait end and end (a free); the
/// primary thread's `parallel_end` after its `implicit_task` end (freeing the
/// team, the fork/join lock's release); `parallel_begin` and the implicit
/// tasks' begins (team set-up, waking the workers); a loop's `work` end and
/// the barrier after it (compiled code, e.g. lastprivate copies, between); a
/// static loop's `work` begin and its chunk (back to back in
/// `__kmpc_for_static_init`, but a `schedule(runtime)` loop that resolves to
/// static reports the same work type from `__kmp_dispatch_init`, whose first
/// chunk comes from a later call).
#[inline(always)]
fn enter(this: u32, after: u32) -> (i64, &'static mut ThreadState) {
    let st = current();
    (stamp(st, this, after), st)
}

/// [`enter`] of a thread's state already found: the time of callback `this`.
#[inline(always)]
fn stamp(st: &mut ThreadState, this: u32, after: u32) -> i64 {
    let t = if after != NO_EVENT && st.last_event == after {
        st.last_t
    } else {
        st.now()
    };
    st.last_event = this;
    st.last_t = t;
    t
}

/// [`enter`], unless the thread's previous callback was `closed_by`: then
/// the interval this callback would end is closed already
/// (`ThreadState::close_late_join`), and this callback only sets the
/// thread's previous callback to `then` and returns `None`. `closed_by` =
/// [`NO_EVENT`] is [`enter`] itself.
#[inline(always)]
fn enter_open(
    this: u32,
    after: u32,
    closed_by: u32,
    then: u32,
) -> Option<(i64, &'static mut ThreadState)> {
    // One lookup of the state for both (not `enter`'s own).
    let st = current();
    if closed_by != NO_EVENT && st.last_event == closed_by {
        st.last_event = then;
        return None;
    }
    Some((stamp(st, this, after), st))
}

/// `value` of a runtime-owned `ompt_data_t`, 0 for null.
#[inline]
fn data(p: *const ompt_data_t) -> u64 {
    if p.is_null() {
        0
    } else {
        // SAFETY: non-null pointers from the runtime point to live ompt_data_t.
        unsafe { (*p).value }
    }
}

#[inline]
fn set_data(p: *mut ompt_data_t, v: u64) {
    if !p.is_null() {
        // SAFETY: as in data().
        unsafe { (*p).value = v };
    }
}

static mut RESULT: ompt_start_tool_result_t = ompt_start_tool_result_t {
    initialize: Some(initialize),
    finalize: Some(finalize),
    tool_data: ompt_data_t { value: 0 },
};

/// The body of `ompt_start_tool`: remember the runtime's version and return
/// our initialize/finalize pair (the collector exports the C symbol).
///
/// # Safety
/// `runtime_version` is null or a NUL-terminated string (as the runtime passes it).
pub unsafe fn start_tool(
    omp_version: c_uint,
    runtime_version: *const c_char,
) -> *mut ompt_start_tool_result_t {
    let version = if runtime_version.is_null() {
        String::new()
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { CStr::from_ptr(runtime_version) }
            .to_string_lossy()
            .into_owned()
    };
    runtime_info(|r| {
        r.version = version;
        r.omp_version = omp_version;
    });
    &raw mut RESULT
}

type Lookup = unsafe extern "C" fn(*const c_char) -> ompt_interface_fn_t;

/// `ompt_initialize_t`: register every host callback and record what the runtime answered.
unsafe extern "C" fn initialize(
    lookup: ompt_function_lookup_t,
    _initial_device_num: c_int,
    _tool_data: *mut ompt_data_t,
) -> c_int {
    let Some(lookup) = lookup else { return 0 };
    register_all(lookup);
    1
}

fn register_all(lookup: Lookup) {
    // SAFETY: lookup is the runtime's function; the name is NUL-terminated.
    let f = unsafe { lookup(c"ompt_set_callback".as_ptr()) };
    let Some(f) = f else {
        if let Some(s) = sink() {
            s.warn(
                "the OpenMP runtime offers no ompt_set_callback; OpenMP events are not recorded",
            );
        }
        return;
    };
    // SAFETY: the runtime returns ompt_set_callback for this name.
    let set: ompt_set_callback_t = unsafe { std::mem::transmute(f) };
    let path = module_of(f as usize);
    let mut caps = std::collections::BTreeMap::new();
    for &(id, name) in HOST_CALLBACKS {
        let Some(cb) = callback_for(id) else { continue };
        // SAFETY: cb has the signature the runtime expects for event `id`.
        let result = unsafe { set(id, Some(cb)) };
        caps.insert(name.to_string(), result);
        if result > OMPT_SET_NEVER && !needed(id) {
            // Unregister what the configuration does not record (after probing it).
            // SAFETY: a null callback unregisters.
            unsafe { set(id, None) };
        }
    }
    runtime_info(|r| {
        r.capabilities = caps;
        r.path = path;
        r.started = true;
    });
}

/// Whether the configured groups need callback `id`.
fn needed(id: c_uint) -> bool {
    use crate::kind_enabled as on;
    let k = |kind: OmpKind| on(kind as u8);
    match id {
        // State: thread indices, region and task ids, in_parallel.
        1..=4 | 7 => true,
        5 | 6 | 18 | 19 => {
            k(OmpKind::TaskCreate) || k(OmpKind::TaskRun) || k(OmpKind::TaskDependence)
        }
        16 => k(OmpKind::SyncWait),
        23 => k(OmpKind::Sync),
        17 | 26 | 27 => k(OmpKind::MutexWait) || k(OmpKind::MutexHold),
        24 | 25 => k(OmpKind::LockLifetime),
        28 => false,
        // Chunks end at the latest with their loop.
        20 => k(OmpKind::Work) || k(OmpKind::Chunk),
        21 => k(OmpKind::Masked),
        29 => k(OmpKind::Flush),
        30 => k(OmpKind::Cancel),
        31 => k(OmpKind::Reduction),
        32 => k(OmpKind::Chunk),
        // omp_control_tool: pause/start/flush/end (`crate::apply_control`);
        // called only when the application asks.
        11 => true,
        _ => false,
    }
}

/// The file of the loaded object (library or program) holding `addr`, where
/// it is rather than the link the loader found it by; empty if none. An
/// address, not a pointer: it is only looked up, never read.
pub fn module_of(addr: usize) -> String {
    // SAFETY: dladdr only reads the loader's tables; info is plain data.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() {
            let name = CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned();
            return std::fs::canonicalize(&name)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or(name);
        }
    }
    String::new()
}

fn callback_for(id: c_uint) -> ompt_callback_t {
    macro_rules! cb {
        ($f:expr) => {
            // SAFETY: only erases the signature; the runtime calls it with the right one.
            Some(unsafe {
                std::mem::transmute::<*const (), unsafe extern "C" fn()>($f as *const ())
            })
        };
    }
    match id {
        1 => cb!(thread_begin),
        2 => cb!(thread_end),
        3 => cb!(parallel_begin),
        4 => cb!(parallel_end),
        5 => cb!(task_create),
        6 => cb!(task_schedule),
        7 => cb!(implicit_task),
        11 => cb!(control_tool),
        16 => cb!(sync_region_wait),
        17 => cb!(mutex_released),
        18 => cb!(dependences),
        19 => cb!(task_dependence),
        20 => cb!(work),
        21 => cb!(masked),
        23 => cb!(sync_region),
        24 => cb!(lock_init),
        25 => cb!(lock_destroy),
        26 => cb!(mutex_acquire),
        27 => cb!(mutex_acquired),
        28 => cb!(nest_lock),
        29 => cb!(flush),
        30 => cb!(cancel),
        31 => cb!(reduction),
        32 => cb!(dispatch),
        37 => cb!(error),
        _ => None,
    }
}

/// `ompt_finalize_t`: the runtime shuts down.
unsafe extern "C" fn finalize(_tool_data: *mut ompt_data_t) {
    if let Some(s) = sink() {
        s.finalize();
    }
}

// ---- threads -------------------------------------------------------------

pub unsafe extern "C" fn thread_begin(thread_type: c_uint, thread_data: *mut ompt_data_t) {
    let (t, st) = enter(event(1, 0, 0), NO_EVENT);
    set_data(thread_data, st.index as u64);
    let rec = st.rec(OmpKind::Thread, thread_type, t);
    st.push(rec);
}

pub unsafe extern "C" fn thread_end(_thread_data: *mut ompt_data_t) {
    let (t, st) = enter(event(2, 0, 0), NO_EVENT);
    st.release_held();
    st.close(t, |r| r.kind == OmpKind::Thread as u8);
}

// ---- parallel regions and implicit tasks ---------------------------------

pub unsafe extern "C" fn parallel_begin(
    encountering_task_data: *mut ompt_data_t,
    _encountering_task_frame: *const ompt_frame_t,
    parallel_data: *mut ompt_data_t,
    requested_parallelism: c_uint,
    flags: c_int,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(3, 0, 0), NO_EVENT);
    let id = st.new_id();
    set_data(parallel_data, id);
    let rec = st.open(OmpKind::Parallel as u8, 0, t);
    rec.parallel_id = id;
    rec.task_id = data(encountering_task_data);
    rec.requested_team_size = requested_parallelism;
    rec.flags = flags as u32;
    rec.codeptr = codeptr_ra as u64;
}

pub unsafe extern "C" fn parallel_end(
    parallel_data: *mut ompt_data_t,
    _encountering_task_data: *mut ompt_data_t,
    _flags: c_int,
    _codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(4, 0, 0), NO_EVENT);
    let id = data(parallel_data);
    let pred = |r: &OmpRecord| r.kind == OmpKind::Parallel as u8 && r.parallel_id == id;
    if st.primary_holds {
        // The encoding waits for this thread's slack (`ThreadState::close_held`).
        st.close_held(t, pred);
    } else {
        st.close_inline(t, pred);
    }
}

pub unsafe extern "C" fn implicit_task(
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    actual_parallelism: c_uint,
    index: c_uint,
    flags: c_int,
) {
    // The begin and the end apart (see `work`).
    if endpoint == OMPT_SCOPE_BEGIN {
        // SAFETY: as the callback's.
        unsafe { implicit_task_begin(parallel_data, task_data, actual_parallelism, index, flags) }
    } else {
        // SAFETY: as the callback's.
        unsafe { implicit_task_end(endpoint, task_data, index, flags) }
    }
}

/// [`implicit_task`]'s begin.
#[inline(never)]
unsafe fn implicit_task_begin(
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    actual_parallelism: c_uint,
    index: c_uint,
    flags: c_int,
) {
    let initial = flags & OMPT_TASK_INITIAL != 0;
    let (t, st) = enter(event(CB_IMPLICIT_TASK, OMPT_SCOPE_BEGIN, 0), NO_EVENT);
    let kind = if initial {
        OmpKind::InitialTask
    } else {
        OmpKind::ImplicitTask
    };
    let id = st.new_id();
    set_data(task_data, id);
    let pid = if initial { 0 } else { data(parallel_data) };
    let mut codeptr = 0;
    if !initial {
        let d = st.implicit_depth;
        d.store(d.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // The team size of a region is what its primary thread's implicit
        // task reports; and the primary's implicit task carries its
        // region's code address (OMPT gives it none), so that profile
        // mode's per-address totals give each region's fork/join overhead.
        if index == 0
            && let Some(p) = st.find(|r| r.kind == OmpKind::Parallel as u8 && r.parallel_id == pid)
        {
            p.team_size = actual_parallelism;
            codeptr = p.codeptr;
        }
    }
    let rec = st.open(kind as u8, 0, t);
    rec.parallel_id = pid;
    rec.task_id = id;
    rec.team_size = actual_parallelism;
    rec.count = index as u64;
    rec.flags = flags as u32;
    rec.codeptr = codeptr;
    if !initial {
        // A team of one (a serialized region) wakes no worker: there is
        // no slack for holding to use, only a copy per held interval
        // before the next fork encodes it on the same path.
        st.primary_holds = index == 0 && actual_parallelism > 1;
        if index == 0 && !FIRST_TEAM.load(Ordering::Relaxed) {
            FIRST_TEAM.store(true, Ordering::Release);
        }
    }
    // The primary's slack: the workers are released and wake later.
    st.release_held();
}

/// [`implicit_task`]'s end (any endpoint but the begin).
#[inline(never)]
unsafe fn implicit_task_end(
    endpoint: c_uint,
    task_data: *mut ompt_data_t,
    index: c_uint,
    flags: c_int,
) {
    let initial = flags & OMPT_TASK_INITIAL != 0;
    // An implicit task ends at its join barrier's end (see `enter`): a
    // worker's right after its late join-barrier ends, the primary's after the
    // runtime's join work.
    let after = if endpoint == OMPT_SCOPE_END && !initial {
        event(
            CB_SYNC_REGION,
            OMPT_SCOPE_END,
            OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL,
        )
    } else {
        NO_EVENT
    };
    // A worker's implicit task closed with its join barrier's wait
    // (`ThreadState::close_late_join`) has nothing left to close.
    let closed_by = if endpoint == OMPT_SCOPE_END {
        LATE_JOIN_SYNC
    } else {
        NO_EVENT
    };
    let this = event(CB_IMPLICIT_TASK, endpoint, 0);
    let Some((t, st)) = enter_open(this, after, closed_by, this) else {
        return;
    };
    let kind = if initial {
        OmpKind::InitialTask
    } else {
        OmpKind::ImplicitTask
    };
    let id = data(task_data);
    let k = kind as u8;
    let closed = if index == 0 && !initial && st.primary_holds {
        // The primary's implicit task ends after the join: held.
        st.close_held(t, |r| r.kind == k && r.task_id == id)
            .is_some()
            || st.close_held(t, |r| r.kind == k).is_some()
    } else {
        st.close_inline(t, |r| r.kind == k && r.task_id == id)
            .is_some()
            || st.close(t, |r| r.kind == k).is_some()
    };
    if closed && !initial {
        let d = st.implicit_depth;
        d.store(
            d.load(Ordering::Relaxed).saturating_sub(1),
            Ordering::Relaxed,
        );
    }
}

// ---- worksharing and chunks ----------------------------------------------

pub unsafe extern "C" fn work(
    work_type: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    count: u64,
    codeptr_ra: *const c_void,
) {
    // The begin and the end apart, each compiled with what its own path
    // needs: the end encodes the loop inline (`ThreadState::close_inline`),
    // and the begin, sharing its function, paid the end's register saves.
    // (As `extern "C"` functions taking the callback's arguments, which
    // makes the calls jumps, the halves cost ≈ 6 instructions more each
    // than the frame and the moves they spare.)
    if endpoint == OMPT_SCOPE_BEGIN || endpoint == OMPT_SCOPE_BEGINEND {
        // SAFETY: as the callback's.
        unsafe {
            work_begin(
                work_type,
                endpoint,
                parallel_data,
                task_data,
                count,
                codeptr_ra,
            )
        }
    } else {
        work_end(work_type, endpoint);
    }
}

/// [`work`]'s begin (or a begin-end).
#[inline(never)]
unsafe fn work_begin(
    work_type: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    count: u64,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(CB_WORK, endpoint, work_type), NO_EVENT);
    if work_type == OMPT_WORK_LOOP && !GENERIC_LOOP_SEEN.load(Ordering::Relaxed) {
        GENERIC_LOOP_SEEN.store(true, Ordering::Relaxed);
    }
    if endpoint == OMPT_SCOPE_BEGINEND {
        // Opened and closed at once (out of line: its record on the stack
        // would cost every begin a larger frame).
        work_instant(
            st,
            work_type,
            t,
            parallel_data,
            task_data,
            count,
            codeptr_ra,
        );
        return;
    }
    let rec = st.open(OmpKind::Work as u8, work_type as u8, t);
    rec.parallel_id = data(parallel_data);
    rec.task_id = data(task_data);
    rec.codeptr = codeptr_ra as u64;
    rec.count = count;
}

/// [`work`]'s begin-end: an interval of no length.
#[cold]
#[inline(never)]
fn work_instant(
    st: &mut ThreadState,
    work_type: c_uint,
    t: i64,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    count: u64,
    codeptr_ra: *const c_void,
) {
    let mut rec = st.rec(OmpKind::Work, work_type, t);
    rec.parallel_id = data(parallel_data);
    rec.task_id = data(task_data);
    rec.codeptr = codeptr_ra as u64;
    rec.count = count;
    st.emit(&rec);
}

/// [`work`]'s end (any endpoint but a begin).
#[inline(never)]
fn work_end(work_type: c_uint, endpoint: c_uint) {
    // A `single` another thread executes begins and ends back to back.
    let after = if endpoint == OMPT_SCOPE_END && work_type == OMPT_WORK_SINGLE_OTHER {
        event(CB_WORK, OMPT_SCOPE_BEGIN, work_type)
    } else {
        NO_EVENT
    };
    let (t, st) = enter(event(CB_WORK, endpoint, work_type), after);
    let v = work_type as u8;
    st.close_inline(t, |r| r.kind == OmpKind::Work as u8 && r.variant == v);
}

pub unsafe extern "C" fn dispatch(
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    kind: c_uint,
    instance: ompt_data_t,
) {
    let (t, st) = enter(event(32, 0, 0), NO_EVENT);
    // (first iteration, iterations, code address if the dispatch names its own)
    let (chunk_start, count, codeptr) = match kind {
        OMPT_DISPATCH_WS_LOOP_CHUNK
        | OMPT_DISPATCH_TASKLOOP_CHUNK
        | OMPT_DISPATCH_DISTRIBUTE_CHUNK => {
            // SAFETY: for chunk dispatches `instance.ptr` points to an ompt_dispatch_chunk_t.
            let chunk = unsafe { instance.ptr } as *const ompt_dispatch_chunk_t;
            if chunk.is_null() {
                (0, 0, None)
            } else {
                // SAFETY: checked for null; valid during the callback.
                let c = unsafe { *chunk };
                (c.start, c.iterations, None)
            }
        }
        // SAFETY: for iterations `instance.value` is the iteration number.
        OMPT_DISPATCH_ITERATION => (unsafe { instance.value }, 1, None),
        // SAFETY: for sections `instance.ptr` is the section's code address.
        OMPT_DISPATCH_SECTION => (0, 1, Some(unsafe { instance.ptr } as u64)),
        _ => (0, 0, None),
    };
    // The previous chunk of this loop ends where the next one is dispatched.
    if codeptr.is_none() && st.next_chunk(t, kind as u8, chunk_start, count) {
        return;
    }
    if st.top().is_some_and(|r| r.kind == OmpKind::Chunk as u8) {
        st.close(t, |r| r.kind == OmpKind::Chunk as u8);
    }
    // Chunks carry their loop's code address, so they resolve to the loop's line.
    let codeptr = codeptr.unwrap_or_else(|| {
        st.top()
            .filter(|r| r.kind == OmpKind::Work as u8)
            .map_or(0, |r| r.codeptr)
    });
    let rec = st.open(OmpKind::Chunk as u8, kind as u8, t);
    rec.parallel_id = data(parallel_data);
    rec.task_id = data(task_data);
    rec.chunk_start = chunk_start;
    rec.count = count;
    rec.codeptr = codeptr;
}

// ---- synchronisation -----------------------------------------------------

/// A begin/end pair as an interval; `(this, after)` as in [`enter`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scoped(
    kind: OmpKind,
    variant: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    codeptr_ra: *const c_void,
    this: u32,
    after: u32,
    closed_by: u32,
) {
    let Some((t, st)) = enter_open(this, after, closed_by, LATE_JOIN_SYNC) else {
        return;
    };
    if endpoint == OMPT_SCOPE_BEGIN {
        let rec = st.open(kind as u8, variant as u8, t);
        rec.parallel_id = data(parallel_data);
        rec.task_id = data(task_data);
        rec.codeptr = codeptr_ra as u64;
        if kind == OmpKind::SyncWait {
            // A thread about to wait has time to spare.
            st.release_held();
        }
    } else {
        // A worker's late join-barrier ends: all three at once (not the
        // primary's, which are held).
        if kind == OmpKind::SyncWait
            && variant == OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL
            && !st.primary_holds
            && st.close_late_join(t)
        {
            st.last_event = LATE_JOIN_WAIT;
            return;
        }
        let (k, v) = (kind as u8, variant as u8);
        let pred = |r: &OmpRecord| r.kind == k && r.variant == v;
        // The primary's join barrier ends: held, as the rest of its path to
        // the next fork (a worker's come when it wakes for the next region).
        if variant == OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL && st.primary_holds {
            st.close_held(t, pred);
        } else {
            st.close(t, pred);
        }
    }
}

pub unsafe extern "C" fn sync_region(
    kind: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    codeptr_ra: *const c_void,
) {
    // Its end follows the wait's end at once.
    let after = if endpoint == OMPT_SCOPE_END && shares_time(kind) {
        event(CB_SYNC_REGION_WAIT, OMPT_SCOPE_END, kind)
    } else {
        NO_EVENT
    };
    // A worker's join barrier closed with its wait
    // (`ThreadState::close_late_join`) has nothing left to close.
    let closed_by = if endpoint == OMPT_SCOPE_END && kind == OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL {
        LATE_JOIN_WAIT
    } else {
        NO_EVENT
    };
    scoped(
        OmpKind::Sync,
        kind,
        endpoint,
        parallel_data,
        task_data,
        codeptr_ra,
        event(CB_SYNC_REGION, endpoint, kind),
        after,
        closed_by,
    );
}

pub unsafe extern "C" fn sync_region_wait(
    kind: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    codeptr_ra: *const c_void,
) {
    // Its begin follows the region's begin at once.
    let after = if endpoint == OMPT_SCOPE_BEGIN && shares_time(kind) {
        event(CB_SYNC_REGION, OMPT_SCOPE_BEGIN, kind)
    } else {
        NO_EVENT
    };
    scoped(
        OmpKind::SyncWait,
        kind,
        endpoint,
        parallel_data,
        task_data,
        codeptr_ra,
        event(CB_SYNC_REGION_WAIT, endpoint, kind),
        after,
        NO_EVENT,
    );
}

pub unsafe extern "C" fn reduction(
    kind: c_uint,
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    codeptr_ra: *const c_void,
) {
    scoped(
        OmpKind::Reduction,
        kind,
        endpoint,
        parallel_data,
        task_data,
        codeptr_ra,
        event(31, endpoint, kind),
        NO_EVENT,
        NO_EVENT,
    );
}

pub unsafe extern "C" fn masked(
    endpoint: c_uint,
    parallel_data: *mut ompt_data_t,
    task_data: *mut ompt_data_t,
    codeptr_ra: *const c_void,
) {
    scoped(
        OmpKind::Masked,
        0,
        endpoint,
        parallel_data,
        task_data,
        codeptr_ra,
        event(21, endpoint, 0),
        NO_EVENT,
        NO_EVENT,
    );
}

// ---- mutual exclusion ----------------------------------------------------

pub unsafe extern "C" fn mutex_acquire(
    kind: c_uint,
    hint: c_uint,
    _impl: c_uint,
    wait_id: ompt_wait_id_t,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(26, 0, 0), NO_EVENT);
    // A thread waits for one mutex at a time: an older open wait is a failed test_lock.
    st.discard(|r| r.kind == OmpKind::MutexWait as u8);
    let mut rec = st.rec(OmpKind::MutexWait, kind, t);
    rec.count = wait_id;
    rec.flags = hint;
    rec.codeptr = codeptr_ra as u64;
    (rec.parallel_id, rec.task_id) = st.context();
    st.push(rec);
}

pub unsafe extern "C" fn mutex_acquired(
    kind: c_uint,
    wait_id: ompt_wait_id_t,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(27, 0, 0), NO_EVENT);
    // The thread holds the mutex now: the wait is held back and encoded
    // after the release (`mutex_released`), not inside the critical
    // section, where every instruction also delays the threads waiting.
    let wait = st.close_held(t, |r| {
        r.kind == OmpKind::MutexWait as u8 && r.count == wait_id
    });
    let mut rec = st.rec(OmpKind::MutexHold, kind, t);
    rec.count = wait_id;
    rec.codeptr = codeptr_ra as u64;
    (rec.parallel_id, rec.task_id) = st.context();
    if let Some((variant, flags)) = wait {
        rec.variant = variant;
        rec.flags = flags;
    }
    st.push(rec);
}

pub unsafe extern "C" fn mutex_released(
    _kind: c_uint,
    wait_id: ompt_wait_id_t,
    _codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(17, 0, 0), NO_EVENT);
    // The wait held back at `mutex_acquired` first: the order they closed.
    st.release_held();
    st.close(t, |r| {
        r.kind == OmpKind::MutexHold as u8 && r.count == wait_id
    });
}

pub unsafe extern "C" fn nest_lock(
    _endpoint: c_uint,
    _wait_id: ompt_wait_id_t,
    _codeptr_ra: *const c_void,
) {
}

pub unsafe extern "C" fn lock_init(
    kind: c_uint,
    _hint: c_uint,
    _impl: c_uint,
    wait_id: ompt_wait_id_t,
    codeptr_ra: *const c_void,
) {
    lock_lifetime(kind, wait_id, codeptr_ra, 0);
}

pub unsafe extern "C" fn lock_destroy(
    kind: c_uint,
    wait_id: ompt_wait_id_t,
    codeptr_ra: *const c_void,
) {
    lock_lifetime(kind, wait_id, codeptr_ra, 1);
}

fn lock_lifetime(kind: c_uint, wait_id: u64, codeptr_ra: *const c_void, flags: u32) {
    let (t, st) = enter(event(24 + flags, 0, 0), NO_EVENT);
    let mut rec = st.rec(OmpKind::LockLifetime, kind, t);
    rec.count = wait_id;
    rec.flags = flags;
    rec.codeptr = codeptr_ra as u64;
    (rec.parallel_id, rec.task_id) = st.context();
    st.emit(&rec);
}

// ---- tasks ----------------------------------------------------------------

pub unsafe extern "C" fn task_create(
    encountering_task_data: *mut ompt_data_t,
    _encountering_task_frame: *const ompt_frame_t,
    new_task_data: *mut ompt_data_t,
    flags: c_int,
    _has_dependences: c_int,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(5, 0, 0), NO_EVENT);
    if flags & OMPT_TASK_INITIAL != 0 {
        set_data(new_task_data, st.new_id());
        return;
    }
    let id = st.new_id() | EXPLICIT_TASK_BIT;
    set_data(new_task_data, id);
    let mut rec = st.rec(OmpKind::TaskCreate, 0, t);
    rec.task_id = id;
    rec.count = data(encountering_task_data);
    rec.flags = flags as u32;
    rec.codeptr = codeptr_ra as u64;
    rec.parallel_id = st.context().0;
    st.emit(&rec);
}

pub unsafe extern "C" fn task_schedule(
    prior_task_data: *mut ompt_data_t,
    prior_task_status: c_uint,
    next_task_data: *mut ompt_data_t,
) {
    let (t, st) = enter(event(6, 0, 0), NO_EVENT);
    let prior = data(prior_task_data);
    if prior & EXPLICIT_TASK_BIT != 0 && prior_task_status != OMPT_TASK_LATE_FULFILL {
        let status = prior_task_status as u8;
        if let Some(i) = st.find(|r| r.kind == OmpKind::TaskRun as u8 && r.task_id == prior) {
            i.variant = status;
        }
        st.close(t, |r| {
            r.kind == OmpKind::TaskRun as u8 && r.task_id == prior
        });
    }
    let next = data(next_task_data);
    if next & EXPLICIT_TASK_BIT != 0 {
        let mut rec = st.rec(OmpKind::TaskRun, 0, t);
        rec.task_id = next;
        rec.parallel_id = st.context().0;
        st.push(rec);
    }
}

pub unsafe extern "C" fn dependences(
    task_data: *mut ompt_data_t,
    _deps: *const ompt_dependence_t,
    ndeps: c_int,
) {
    let (t, st) = enter(event(18, 0, 0), NO_EVENT);
    let mut rec = st.rec(OmpKind::TaskDependence, 0, t);
    rec.task_id = data(task_data);
    rec.count = ndeps.max(0) as u64;
    rec.parallel_id = st.context().0;
    st.emit(&rec);
}

pub unsafe extern "C" fn task_dependence(
    src_task_data: *mut ompt_data_t,
    sink_task_data: *mut ompt_data_t,
) {
    let (t, st) = enter(event(19, 0, 0), NO_EVENT);
    let mut rec = st.rec(OmpKind::TaskDependence, 0, t);
    rec.task_id = data(sink_task_data);
    rec.count = data(src_task_data);
    rec.flags = 1;
    rec.parallel_id = st.context().0;
    st.emit(&rec);
}

// ---- instants --------------------------------------------------------------

pub unsafe extern "C" fn flush(_thread_data: *mut ompt_data_t, codeptr_ra: *const c_void) {
    instant(OmpKind::Flush, 0, codeptr_ra);
}

pub unsafe extern "C" fn cancel(
    task_data: *mut ompt_data_t,
    flags: c_int,
    codeptr_ra: *const c_void,
) {
    let (t, st) = enter(event(30, 0, 0), NO_EVENT);
    let mut rec = st.rec(OmpKind::Cancel, 0, t);
    rec.task_id = data(task_data);
    rec.flags = flags as u32;
    rec.codeptr = codeptr_ra as u64;
    rec.parallel_id = st.context().0;
    st.emit(&rec);
}

fn instant(kind: OmpKind, flags: u32, codeptr_ra: *const c_void) {
    let (t, st) = enter(event(29, 0, kind as c_uint), NO_EVENT);
    let mut rec: OmpRecord = st.rec(kind, 0, t);
    rec.flags = flags;
    rec.codeptr = codeptr_ra as u64;
    (rec.parallel_id, rec.task_id) = st.context();
    st.emit(&rec);
}

/// `omp_control_tool(command, modifier, arg)`: returns
/// `omp_control_tool_success` (0) or `omp_control_tool_ignored` (1) for a
/// command that changes nothing or that OpenMP does not define.
pub unsafe extern "C" fn control_tool(
    command: u64,
    _modifier: u64,
    _arg: *mut c_void,
    _codeptr_ra: *const c_void,
) -> c_int {
    match crate::Control::from_command(command) {
        Some(c) if crate::apply_control(c) => 0,
        _ => 1,
    }
}

pub unsafe extern "C" fn error(
    _severity: c_uint,
    _message: *const c_char,
    _length: usize,
    _codeptr_ra: *const c_void,
) {
}

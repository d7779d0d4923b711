//! Per-thread state: the stack of open intervals and the profile aggregates.
//!
//! The state is allocated once per thread and leaked; the thread's pointer to
//! it is a [`crate::thread_ptr`] slot (one load per callback, no destructor),
//! so callbacks that arrive after thread-local destructors ran (at exit,
//! docs/platform.md "Quirks") still find it and nothing can panic.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hyscope_format::{OmpKind, OmpRecord, spool::block::Stream};

use crate::clock::TscClock;
use crate::{kind_enabled, profile_mode, sink};

/// Open intervals per thread. Deeper nesting drops (and counts) the interval.
pub(crate) const STACK_CAP: usize = 64;
/// Profile aggregates per thread (open addressing); overflow writes raw intervals.
const PROFILE_CAP: usize = 1024;

/// Closed intervals a thread holds back at most ([`ThreadState::close_held`]).
const HELD_CAP: usize = 8;

/// Bit marking explicit task ids.
pub(crate) const EXPLICIT_TASK_BIT: u64 = 1 << 62;

#[derive(Clone, Copy, Default)]
struct Aggregate {
    used: bool,
    kind: u8,
    variant: u8,
    /// Largest team size of the intervals (parallel regions').
    team_size: u32,
    codeptr: u64,
    count: u64,
    first_start: i64,
    last_end: i64,
    total_ns: u64,
    /// Σ of the intervals' squared durations, ns² (their scatter, for
    /// comparisons: `OmpRecord::summary_sum_sq`).
    sum_sq: u128,
}

pub(crate) struct ThreadState {
    pub index: u32,
    /// The latest id [`ThreadState::new_id`] gave: `(index + 1) << 40` and
    /// the count in the low 40 bits (a count of 0 before the first).
    last_id: u64,
    stack: [OmpRecord; STACK_CAP],
    depth: usize,
    /// Implicit tasks of parallel regions open on this thread (leaked and
    /// shared with the sink, see [`crate::Sink::bind_parallel_depth`]; written
    /// only by this thread).
    pub implicit_depth: &'static AtomicU32,
    /// The sink's handle for this thread ([`crate::Sink::thread_handle`]).
    sink_handle: usize,
    /// The sink's spool stream for this thread ([`crate::Sink::omp_stream`]).
    stream: Option<&'static Stream<OmpRecord>>,
    /// The thread's previous callback (an [`crate::callbacks`] event code, 0
    /// before the first) and the time it took, for callbacks libomp
    /// dispatches right after it (see `callbacks::enter`).
    pub last_event: u32,
    pub last_t: i64,
    /// The TSC clock, once installed (see [`ThreadState::now`]).
    clock: Option<TscClock>,
    profile: Option<Box<Profile>>,
    /// Intervals closed on the primary thread's path from the join to the
    /// next fork, held until a callback where that thread has slack
    /// ([`ThreadState::close_held`]).
    held: [OmpRecord; HELD_CAP],
    held_len: usize,
    /// The thread's latest implicit task was its region's primary (index 0),
    /// whose intervals are held back ([`ThreadState::close_held`]): its join
    /// barrier's ends are held too. One load in the barrier callbacks, where
    /// the stack would take a search; a stale value after a nested region
    /// only decides whether an interval is held or encoded at once.
    pub primary_holds: bool,
    /// What [`ThreadState::open`] fills when the stack is full (dropped).
    spare: OmpRecord,
}

crate::thread_ptr! {
    /// The calling thread's [`ThreadState`].
    mod state_ptr: ThreadState = "hyscope_ompt_thread_state"
}

struct StatePtr(*mut ThreadState);
// SAFETY: states are leaked; only the exit path reads other threads' states.
unsafe impl Send for StatePtr {}

static STATES: Mutex<Vec<StatePtr>> = Mutex::new(Vec::new());
/// (thread index, kernel thread id) of every thread with a state, for
/// [`crate::thread_ids`] (apart from the state: the hot data keeps its layout).
static THREAD_IDS: Mutex<Vec<(u32, i32)>> = Mutex::new(Vec::new());
static THREADS: AtomicU32 = AtomicU32::new(0);
/// Intervals lost to a full stack.
pub(crate) static STACK_OVERFLOWS: AtomicU64 = AtomicU64::new(0);
/// Intervals whose end event never came before their enclosing task ended.
pub(crate) static UNTERMINATED: AtomicU64 = AtomicU64::new(0);

/// Threads the OMPT adapter has seen.
pub fn threads_seen() -> u32 {
    THREADS.load(Ordering::Relaxed)
}

/// The calling thread's state, created on first use.
#[inline]
pub(crate) fn current() -> &'static mut ThreadState {
    let p = state_ptr::get();
    if !p.is_null() {
        // SAFETY: leaked, and only this thread mutates it.
        return unsafe { &mut *p };
    }
    create()
}

#[cold]
fn create() -> &'static mut ThreadState {
    let index = sink().map_or_else(|| THREADS.load(Ordering::Relaxed), |s| s.thread_index());
    let implicit_depth: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    let (mut sink_handle, mut stream) = (0, None);
    if let Some(s) = sink() {
        s.bind_parallel_depth(implicit_depth);
        sink_handle = s.thread_handle();
        stream = s.omp_stream();
    }
    THREADS.fetch_add(1, Ordering::Relaxed);
    let state = Box::leak(Box::new(ThreadState {
        index,
        last_id: (index as u64 + 1) << 40,
        stack: [OmpRecord::default(); STACK_CAP],
        depth: 0,
        implicit_depth,
        sink_handle,
        stream,
        last_event: 0,
        last_t: 0,
        clock: TscClock::installed(),
        profile: profile_mode().then(|| {
            Box::new(Profile {
                table: [Aggregate::default(); PROFILE_CAP],
                last: [0; RECENT],
            })
        }),
        held: [OmpRecord::default(); HELD_CAP],
        held_len: 0,
        spare: OmpRecord::default(),
        primary_holds: false,
    }));
    let p: *mut ThreadState = state;
    state_ptr::set(p);
    STATES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(StatePtr(p));
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    THREAD_IDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((index, tid));
    state
}

/// See [`crate::hold_states_for_fork`].
pub(crate) fn hold_states_for_fork() -> Box<dyn std::any::Any> {
    Box::new(STATES.lock().unwrap_or_else(|e| e.into_inner()))
}

/// See [`crate::hold_leaves_for_fork`].
pub(crate) fn hold_thread_ids_for_fork() -> Box<dyn std::any::Any> {
    Box::new(THREAD_IDS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// See [`crate::thread_ids`].
pub(crate) fn thread_ids() -> Vec<(u32, i32)> {
    THREAD_IDS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

pub(crate) fn in_parallel() -> bool {
    let p = state_ptr::get();
    // SAFETY: as in current().
    !p.is_null() && unsafe { (*p).implicit_depth.load(Ordering::Relaxed) } > 0
}

impl ThreadState {
    /// An event's time: the installed clock, read inline (the TSC from this
    /// state's copy of its parameters), or the sink's.
    #[inline(always)]
    pub fn now(&mut self) -> i64 {
        match self.clock {
            Some(tsc) => tsc.read(),
            None => self.now_uncached(),
        }
    }

    /// [`ThreadState::now`] without a TSC copy: take one if the TSC has been
    /// installed since this state was made, else read the installed clock
    /// (`CLOCK_MONOTONIC`) or, before any, the sink's.
    #[cold]
    #[inline(never)]
    fn now_uncached(&mut self) -> i64 {
        self.clock = TscClock::installed();
        match (self.clock, crate::clock::read()) {
            (Some(tsc), _) => tsc.read(),
            (None, Some(t)) => t,
            (None, None) => sink().map_or(0, |s| s.now_ns()),
        }
    }

    /// A new process-unique id: `(index + 1) << 40 | n`, n = 1, 2, … in the
    /// low 40 bits (after 2^40 - 1 it wraps to 0). One add to the latest id,
    /// not the id rebuilt from the index and a count (≈ 6 instructions less
    /// per region and implicit task).
    #[inline]
    pub fn new_id(&mut self) -> u64 {
        const LOW: u64 = (1 << 40) - 1;
        let mut id = self.last_id.wrapping_add(1);
        if id & LOW == 0 {
            id = self.ids_wrapped();
        }
        self.last_id = id;
        id
    }

    /// [`ThreadState::new_id`] where the count's 40 bits are used up: the
    /// thread's ids start again from n = 0.
    #[cold]
    #[inline(never)]
    fn ids_wrapped(&self) -> u64 {
        (self.index as u64 + 1) << 40
    }

    /// A record of this thread with kind and start set.
    #[inline]
    pub fn rec(&self, kind: OmpKind, variant: u32, start_ns: i64) -> OmpRecord {
        OmpRecord {
            thread: self.index,
            kind: kind as u8,
            variant: variant as u8,
            start_ns,
            end_ns: start_ns,
            ..OmpRecord::default()
        }
    }

    /// Open an interval.
    #[inline]
    pub fn push(&mut self, rec: OmpRecord) {
        *self.open(rec.kind, rec.variant, rec.start_ns) = rec;
    }

    /// Open an interval of this thread with kind, variant and start set, the
    /// other fields 0, and return it for the caller to fill in: written in
    /// its stack entry, not built elsewhere and copied there (the copy of
    /// the 80-byte record was about 20 instructions of every open). A full
    /// stack drops (and counts) the interval: the caller fills a spare.
    #[inline(always)]
    pub fn open(&mut self, kind: u8, variant: u8, start_ns: i64) -> &mut OmpRecord {
        let thread = self.index;
        let entry = if self.depth < STACK_CAP {
            self.depth += 1;
            &mut self.stack[self.depth - 1]
        } else {
            STACK_OVERFLOWS.fetch_add(1, Ordering::Relaxed);
            &mut self.spare
        };
        *entry = OmpRecord {
            thread,
            kind,
            variant,
            start_ns,
            end_ns: start_ns,
            ..OmpRecord::default()
        };
        entry
    }

    /// The innermost open interval.
    #[inline]
    pub fn top(&mut self) -> Option<&mut OmpRecord> {
        self.depth.checked_sub(1).map(|i| &mut self.stack[i])
    }

    /// Innermost open interval matching `pred`.
    #[inline]
    pub fn find(&mut self, pred: impl Fn(&OmpRecord) -> bool) -> Option<&mut OmpRecord> {
        // The innermost first, as in `close` (a primary's region, just
        // opened, when its implicit task begins).
        let top = self.depth.wrapping_sub(1);
        if self.stack.get(top).is_some_and(&pred) {
            return Some(&mut self.stack[top]);
        }
        let i = (0..self.depth).rev().find(|&i| pred(&self.stack[i]))?;
        Some(&mut self.stack[i])
    }

    /// Close the innermost open interval matching `pred` at `end_ns`, emit it and
    /// return its (variant, flags). Loop chunks opened above it end with it (a
    /// chunk ends at the latest with its construct). Not the whole record: an
    /// 80-byte return value costs every caller its copy.
    #[inline]
    pub fn close(&mut self, end_ns: i64, pred: impl Fn(&OmpRecord) -> bool) -> Option<(u8, u32)> {
        // The innermost interval first (nearly always the one): one bounds
        // test for the empty stack too, and no search.
        let top = self.depth.wrapping_sub(1);
        if self.stack.get(top).is_some_and(&pred) {
            return Some(self.close_top(top, end_ns));
        }
        let i = (0..self.depth).rev().find(|&i| pred(&self.stack[i]))?;
        self.close_at(i, end_ns)
    }

    /// [`ThreadState::close`] with the innermost interval's encoding
    /// inlined in the caller, for the callbacks that close an interval in
    /// every region or loop (`parallel_end`, `implicit_task`'s end, `work`'s
    /// end): the call of the encoder, its register saves and its loads of
    /// the state cost ≈ 8 instructions per interval (`benchmarks/ompt.md`).
    #[inline(always)]
    pub fn close_inline(
        &mut self,
        end_ns: i64,
        pred: impl Fn(&OmpRecord) -> bool,
    ) -> Option<(u8, u32)> {
        let top = self.depth.wrapping_sub(1);
        if self.stack.get(top).is_some_and(&pred) {
            self.depth = top;
            let entry = &mut self.stack[top];
            entry.end_ns = end_ns;
            let done = (entry.variant, entry.flags);
            if kind_enabled(entry.kind) {
                store(
                    &mut self.profile,
                    self.stream,
                    self.sink_handle,
                    &self.stack[top],
                );
            }
            return Some(done);
        }
        // A loop's end with its last chunk above it (both end here): not
        // through the search (≈ 50 instructions a loop on a team).
        let chunk_above = top.checked_sub(1).is_some_and(|below| {
            self.stack
                .get(top)
                .is_some_and(|r| r.kind == OmpKind::Chunk as u8)
                && pred(&self.stack[below])
        });
        if chunk_above {
            return Some(self.close_with_chunk(top - 1, end_ns));
        }
        self.close_searching(end_ns, pred)
    }

    /// [`ThreadState::close`] of an interval below the top.
    #[inline(never)]
    fn close_searching(
        &mut self,
        end_ns: i64,
        pred: impl Fn(&OmpRecord) -> bool,
    ) -> Option<(u8, u32)> {
        let i = (0..self.depth).rev().find(|&i| pred(&self.stack[i]))?;
        self.close_at(i, end_ns)
    }

    /// [`ThreadState::close`] of stack entry `i`.
    #[inline(always)]
    fn close_at(&mut self, i: usize, end_ns: i64) -> Option<(u8, u32)> {
        if i + 1 == self.depth {
            return Some(self.close_top(i, end_ns));
        }
        if i + 2 == self.depth && self.stack[i + 1].kind == OmpKind::Chunk as u8 {
            return Some(self.close_with_chunk(i, end_ns));
        }
        self.close_nested(i, end_ns)
    }

    /// [`ThreadState::close`] of the innermost interval, entry `top` (=
    /// depth - 1): nothing above it to fix up. Emitted from the entry itself,
    /// not from a copy: the copy cost every close ten instructions, and
    /// callgrind shows fewer in all (`benchmarks/ompt.md`).
    #[inline(always)]
    fn close_top(&mut self, top: usize, end_ns: i64) -> (u8, u32) {
        self.depth = top;
        let entry = &mut self.stack[top];
        entry.end_ns = end_ns;
        let done = (entry.variant, entry.flags);
        emit_to(
            &mut self.profile,
            self.stream,
            self.sink_handle,
            &self.stack[top],
        );
        done
    }

    /// [`ThreadState::close`], but the interval is held back instead of
    /// encoded (trace mode) or added to its aggregate (profile mode), until
    /// [`ThreadState::release_held`].
    ///
    /// For the primary thread's callbacks after a region's join (barrier ends,
    /// implicit-task end, `parallel_end`): they lie on the region's critical
    /// path, while its callbacks between the fork and its join-barrier wait
    /// have ≈ 160 ns of slack, as the worker, woken later, arrives last
    /// (`benchmarks/ompt.md`). Encoding there instead saved
    /// 0.015–0.02 µs per region.
    #[inline]
    pub fn close_held(
        &mut self,
        end_ns: i64,
        pred: impl Fn(&OmpRecord) -> bool,
    ) -> Option<(u8, u32)> {
        let i = (0..self.depth).rev().find(|&i| pred(&self.stack[i]))?;
        if i + 1 != self.depth || self.held_len == HELD_CAP {
            return self.close_at(i, end_ns);
        }
        self.depth = i;
        let rec = &mut self.stack[i];
        rec.end_ns = end_ns;
        // Not held when its kind is not recorded now: an interval that ends
        // during an `omp_control_tool` pause must stay out of the trace even
        // if it is released after the pause.
        if crate::kind_enabled(rec.kind) {
            self.held[self.held_len] = *rec;
            self.held_len += 1;
        }
        Some((rec.variant, rec.flags))
    }

    /// Encode the intervals [`ThreadState::close_held`] held back, in the
    /// order they closed.
    #[inline]
    pub fn release_held(&mut self) {
        if self.held_len != 0 {
            self.release_held_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn release_held_now(&mut self) {
        // Their kinds were checked when they were held (`close_held`): the
        // recording may have been paused since, which must not drop them.
        // One push for all (`Stream::push_slice`), in the order they closed.
        let held = &self.held[..self.held_len.min(HELD_CAP)];
        // SAFETY: the sink handed this thread its own stream.
        if self.profile.is_none() && self.stream.is_some_and(|s| unsafe { s.push_slice(held) }) {
            self.held_len = 0;
            return;
        }
        for i in 0..self.held_len {
            store(
                &mut self.profile,
                self.stream,
                self.sink_handle,
                &self.held[i],
            );
        }
        self.held_len = 0;
    }

    /// A worker's late join-barrier ends, closed together at the wait's end.
    ///
    /// libomp dispatches them back to back when the worker wakes for the next
    /// region (wait end, barrier end, implicit-task end; `callbacks::enter`),
    /// and all three take the wait end's time. When the stack's top three
    /// are a worker's implicit task, its join barrier and that barrier's
    /// wait, all three close at `t` here and are encoded with one push
    /// (`Stream::push_all`): every callback of the worker from its wake to
    /// its arrival lies on the region's critical path, and one push costs
    /// about half of three. The barrier's and the implicit task's own end
    /// callbacks then have nothing left to close (`callbacks`).
    ///
    /// In profile mode the three go to their aggregates here, which spares
    /// the barrier's and the implicit task's end callbacks their searches.
    /// Only with all three kinds recorded; false (nothing done) otherwise,
    /// and the caller closes the wait as usual.
    #[inline]
    pub fn close_late_join(&mut self, t: i64) -> bool {
        const JOIN: u8 = crate::ffi::OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL as u8;
        const KINDS: u32 = 1 << OmpKind::SyncWait as u32
            | 1 << OmpKind::Sync as u32
            | 1 << OmpKind::ImplicitTask as u32;
        let d = self.depth;
        // Trace mode without a stream: the caller's usual closes hand each
        // interval to the sink.
        if d < 3 || (self.profile.is_none() && self.stream.is_none()) {
            return false;
        }
        let [task, sync, wait] = &mut self.stack[d - 3..d] else {
            return false;
        };
        let late_join = wait.kind == OmpKind::SyncWait as u8
            && wait.variant == JOIN
            && sync.kind == OmpKind::Sync as u8
            && sync.variant == JOIN
            && task.kind == OmpKind::ImplicitTask as u8
            && task.count != 0;
        if !late_join || !crate::kinds_enabled(KINDS) {
            return false;
        }
        self.depth = d - 3;
        wait.end_ns = t;
        sync.end_ns = t;
        task.end_ns = t;
        // SAFETY: the sink handed this thread its own stream.
        let pushed = self.profile.is_none()
            && self
                .stream
                .is_some_and(|s| unsafe { s.push_all([&*wait, &*sync, &*task]) });
        if !pushed {
            // Profile mode (three aggregates), no block or a full one (one
            // by one, which hands it off).
            for rec in [&*wait, &*sync, &*task] {
                emit_to(&mut self.profile, self.stream, self.sink_handle, rec);
            }
        }
        let depth = self.implicit_depth;
        depth.store(
            depth.load(Ordering::Relaxed).saturating_sub(1),
            Ordering::Relaxed,
        );
        true
    }

    /// [`ThreadState::close`] of entry `i` when a loop chunk is the only
    /// entry above it (a loop's `work` end: its last chunk ends with it): both
    /// end at `end_ns`, the chunk first, encoded with one push
    /// (`Stream::push_all`) in trace mode when both kinds are recorded.
    #[inline(never)]
    fn close_with_chunk(&mut self, i: usize, end_ns: i64) -> (u8, u32) {
        self.depth = i;
        let [rec, chunk] = &mut self.stack[i..i + 2] else {
            unreachable!("two entries")
        };
        rec.end_ns = end_ns;
        chunk.end_ns = end_ns;
        let kinds = 1 << OmpKind::Chunk as u32 | 1 << rec.kind;
        // SAFETY: the sink handed this thread its own stream.
        let pushed = self.profile.is_none()
            && crate::kinds_enabled(kinds)
            && self
                .stream
                .is_some_and(|s| unsafe { s.push_all([&*chunk, &*rec]) });
        if !pushed {
            // Profile mode, a kind not recorded, no block or a full one
            // (one by one hands it off).
            for r in [&*chunk, &*rec] {
                emit_to(&mut self.profile, self.stream, self.sink_handle, r);
            }
        }
        (rec.variant, rec.flags)
    }

    /// [`ThreadState::close`] of entry `i` below the top of the stack.
    #[cold]
    fn close_nested(&mut self, i: usize, end_ns: i64) -> Option<(u8, u32)> {
        let mut rec = self.stack[i];
        rec.end_ns = end_ns;
        // Remove entry i, closing chunks above it and keeping the other entries in order.
        // When a task, region or thread ends, constructs still open inside it never got
        // their end event (e.g. `single` in GCC-built code): drop them, keeping only
        // mutex holds (a lock may be held across constructs).
        let region_end = matches!(
            OmpKind::from_u8(rec.kind),
            Some(
                OmpKind::ImplicitTask | OmpKind::InitialTask | OmpKind::Parallel | OmpKind::Thread
            )
        );
        let mut w = i;
        for r in i + 1..self.depth {
            let above = self.stack[r];
            if above.kind == OmpKind::Chunk as u8 {
                let mut chunk = above;
                chunk.end_ns = end_ns;
                self.emit(&chunk);
            } else if region_end && above.kind != OmpKind::MutexHold as u8 {
                UNTERMINATED.fetch_add(1, Ordering::Relaxed);
            } else {
                self.stack[w] = above;
                w += 1;
            }
        }
        self.depth = w;
        self.emit(&rec);
        Some((rec.variant, rec.flags))
    }

    /// Drop (without emitting) the innermost open interval matching `pred`.
    pub fn discard(&mut self, pred: impl Fn(&OmpRecord) -> bool) {
        if let Some(i) = (0..self.depth).rev().find(|&i| pred(&self.stack[i])) {
            self.stack.copy_within(i + 1..self.depth, i);
            self.depth -= 1;
        }
    }

    /// (parallel region id, task id) of the innermost task this thread executes (0 = none).
    pub fn context(&self) -> (u64, u64) {
        (0..self.depth)
            .rev()
            .map(|i| &self.stack[i])
            .find(|r| {
                r.kind == OmpKind::ImplicitTask as u8
                    || r.kind == OmpKind::TaskRun as u8
                    || r.kind == OmpKind::InitialTask as u8
            })
            .map_or((0, 0), |r| (r.parallel_id, r.task_id))
    }

    /// Hand a finished interval to the sink (or the profile aggregates).
    #[inline]
    pub fn emit(&mut self, rec: &OmpRecord) {
        emit_to(&mut self.profile, self.stream, self.sink_handle, rec);
    }

    /// The loop chunk on top of the stack ends at `t` and the next chunk of the
    /// same loop starts there: emit the finished one and reuse its entry (same
    /// parallel region, task and code address), the hot path of dynamic loops.
    #[inline]
    pub fn next_chunk(&mut self, t: i64, variant: u8, chunk_start: u64, count: u64) -> bool {
        let Some(i) = self.depth.checked_sub(1) else {
            return false;
        };
        if self.stack[i].kind != OmpKind::Chunk as u8 {
            return false;
        }
        // As in close: emitted from the entry itself, not from a copy.
        self.stack[i].end_ns = t;
        emit_to(
            &mut self.profile,
            self.stream,
            self.sink_handle,
            &self.stack[i],
        );
        let top = &mut self.stack[i];
        top.variant = variant;
        top.start_ns = t;
        top.end_ns = t;
        top.chunk_start = chunk_start;
        top.count = count;
        true
    }
}

/// [`ThreadState::emit`] with the state's parts it needs, so that an interval
/// can be emitted straight from its stack entry (the stack is not borrowed).
#[inline(never)]
fn emit_to(
    profile: &mut Option<Box<Profile>>,
    stream: Option<&'static Stream<OmpRecord>>,
    sink_handle: usize,
    rec: &OmpRecord,
) {
    if !kind_enabled(rec.kind) {
        return;
    }
    store(profile, stream, sink_handle, rec);
}

/// [`emit_to`] without the check of the recorded kinds.
#[inline(always)]
fn store(
    profile: &mut Option<Box<Profile>>,
    stream: Option<&'static Stream<OmpRecord>>,
    sink_handle: usize,
    rec: &OmpRecord,
) {
    if let Some(profile) = profile.as_deref_mut()
        && aggregate(profile, rec)
    {
        return;
    }
    // SAFETY: the sink handed this thread its own stream.
    if let Some(stream) = stream
        && unsafe { stream.push(rec) }
    {
        return;
    }
    if let Some(s) = sink() {
        s.record_on(sink_handle, rec);
    }
}

/// Profile aggregates of one thread: an open-addressing table, and, per
/// hash, the slot the last interval of that hash hit (its home slot or one
/// probed after it): an interval of a construct seen before finds its
/// aggregate with one compare and no probing, unless another construct of
/// the same hash came in between. (A cache of the last slot per kind, which
/// LULESH's consecutive loops and regions of different sites always missed,
/// cost ≈ 25 instructions more per interval, `benchmarks/ompt.md`.)
struct Profile {
    table: [Aggregate; PROFILE_CAP],
    last: [u16; RECENT],
}

/// Entries of [`Profile::last`]: one per hash.
const RECENT: usize = PROFILE_CAP;

impl Aggregate {
    /// The code address first: it tells most aggregates apart (one per
    /// construct), so a miss (of [`Profile::last`] or a probe) costs one
    /// compare.
    #[inline]
    fn is(&self, rec: &OmpRecord) -> bool {
        self.codeptr == rec.codeptr
            && self.kind == rec.kind
            && self.variant == rec.variant
            && self.used
    }

    #[inline]
    fn add(&mut self, rec: &OmpRecord) {
        self.count += 1;
        // A branch, not a max: no store in the common case (the same team).
        if rec.team_size > self.team_size {
            self.team_size = rec.team_size;
        }
        self.first_start = self.first_start.min(rec.start_ns);
        self.last_end = self.last_end.max(rec.end_ns);
        let d = (rec.end_ns - rec.start_ns).max(0) as u64;
        self.total_ns += d;
        self.sum_sq += u128::from(d) * u128::from(d);
    }
}

/// Add an interval to its aggregate; false when the table is full.
#[inline]
fn aggregate(profile: &mut Profile, rec: &OmpRecord) -> bool {
    let key = rec.codeptr ^ ((rec.kind as u64) << 56) ^ ((rec.variant as u64) << 48);
    let home = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % PROFILE_CAP;
    let last = &mut profile.last[home % RECENT];
    let hit = &mut profile.table[*last as usize];
    if hit.is(rec) {
        hit.add(rec);
        return true;
    }
    let mut i = home;
    for _ in 0..PROFILE_CAP {
        let a = &mut profile.table[i];
        if !a.used {
            *a = Aggregate {
                used: true,
                kind: rec.kind,
                variant: rec.variant,
                team_size: 0,
                codeptr: rec.codeptr,
                count: 0,
                first_start: rec.start_ns,
                last_end: rec.end_ns,
                total_ns: 0,
                sum_sq: 0,
            };
        }
        if a.is(rec) {
            a.add(rec);
            *last = i as u16;
            return true;
        }
        i = (i + 1) % PROFILE_CAP;
    }
    false
}

/// Hand the intervals every thread still holds back
/// ([`ThreadState::close_held`]) to the sink, at exit. The calling thread's
/// stream takes them (the rows carry their thread's index), as for the
/// summaries: another thread's stream is its owner's alone.
pub(crate) fn release_all_held() {
    let Some(s) = sink() else { return };
    let states = STATES.lock().unwrap_or_else(|e| e.into_inner());
    for p in states.iter() {
        // SAFETY: states are leaked. At exit the owners are idle; a racing
        // owner could at worst hold an interval that is then written twice.
        let state = unsafe { &mut *p.0 };
        for rec in &state.held[..state.held_len.min(HELD_CAP)] {
            // Profile mode: into the thread's aggregates, which the exit
            // path writes next (`emit_all_summaries`).
            let aggregated = state
                .profile
                .as_deref_mut()
                .is_some_and(|profile| aggregate(profile, rec));
            if !aggregated {
                s.record(*rec);
            }
        }
        state.held_len = 0;
    }
}

/// [`ThreadState::release_held`] of the calling thread, if the adapter knows it.
pub(crate) fn release_held_of_this_thread() {
    let p = state_ptr::get();
    if !p.is_null() {
        // SAFETY: the calling thread's own leaked state.
        unsafe { (*p).release_held() };
    }
}

/// See [`crate::for_each_held`].
pub(crate) fn for_each_held(mut f: impl FnMut(&OmpRecord)) {
    let states = match STATES.try_lock() {
        Ok(s) => s,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for p in states.iter() {
        // SAFETY: states are leaked; read only (an owner racing with the
        // handler could at worst have its newest held interval left out).
        let state = unsafe { &*p.0 };
        // Profile mode: held intervals belong to aggregates, which a crash
        // loses; a few raw intervals alone would read as the whole profile.
        if state.profile.is_some() {
            continue;
        }
        // Their kinds were checked when they were held (`close_held`), as
        // `release_held_now` and `release_all_held` rely on.
        state.held[..state.held_len.min(HELD_CAP)]
            .iter()
            .for_each(&mut f);
    }
}

/// In a forked child: the intervals threads hold back are the parent's, which
/// writes them itself. Without blocking: after a fork by one of the
/// collector's own threads (followed by `exec`) the lock may be held.
pub(crate) fn forget_all_held() {
    if let Ok(states) = STATES.try_lock() {
        for p in states.iter() {
            // SAFETY: states are leaked; only the forking thread runs in the child.
            unsafe { (*p.0).held_len = 0 };
        }
    }
}

/// Emit the profile aggregates of every thread as [`OmpKind::Summary`] rows and
/// reset them. Summary rows with equal (thread, variant, flags, codeptr) add up.
pub(crate) fn emit_all_summaries() {
    let Some(s) = sink() else { return };
    let states = STATES.lock().unwrap_or_else(|e| e.into_inner());
    for p in states.iter() {
        // SAFETY: states are leaked. At exit the owners are idle; a racing owner
        // could at worst lose an update of its own aggregates.
        let state = unsafe { &mut *p.0 };
        let index = state.index;
        let Some(profile) = state.profile.as_deref_mut() else {
            continue;
        };
        for a in profile.table.iter_mut().filter(|a| a.used && a.count > 0) {
            s.record(summary_row(index, a));
            a.count = 0;
            a.total_ns = 0;
            a.sum_sq = 0;
            a.first_start = i64::MAX;
            a.last_end = i64::MIN;
        }
    }
}

/// Summary row: variant = the aggregated kind, flags = its variant, count = intervals,
/// start/end = first start and last end, chunk_start = summed duration in ns,
/// team_size = the largest team (parallel regions), the summed squared
/// durations through `set_summary_sum_sq` (the trace's column
/// `duration_sq_sum_ns2`, format 1.11).
fn summary_row(thread: u32, a: &Aggregate) -> OmpRecord {
    let mut row = OmpRecord {
        thread,
        kind: OmpKind::Summary as u8,
        variant: a.kind,
        start_ns: a.first_start,
        end_ns: a.last_end,
        codeptr: a.codeptr,
        count: a.count,
        chunk_start: a.total_ns,
        flags: a.variant as u32,
        team_size: a.team_size,
        ..OmpRecord::default()
    };
    row.set_summary_sum_sq(a.sum_sq);
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sink;

    /// A sink that keeps every interval (no stream: `emit` goes to `record`).
    struct Recorder(Mutex<Vec<OmpRecord>>);

    impl Sink for Recorder {
        fn now_ns(&self) -> i64 {
            0
        }
        fn record(&self, rec: OmpRecord) {
            self.0.lock().unwrap().push(rec);
        }
        fn thread_index(&self) -> u32 {
            7
        }
        fn warn(&self, _msg: &str) {}
        fn finalize(&self) {}
    }

    static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));

    /// Held by every test of this file while it runs: `release_all_held` and
    /// `forget_all_held` reach every thread's state, and the sink is global,
    /// so a test running beside another would take or drop the intervals the
    /// other holds.
    pub(super) static SERIAL: Mutex<()> = Mutex::new(());

    pub(super) fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// (kind, end) of what the sink got so far.
    fn recorded() -> Vec<(u8, i64)> {
        RECORDER
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.kind, r.end_ns))
            .collect()
    }

    /// A thread's ids: its index + 1 above bit 40, a count from 1 below it,
    /// which wraps to 0 after 2^40 - 1 without touching the index bits.
    #[test]
    fn ids_count_per_thread_and_wrap_below_the_index() {
        std::thread::spawn(|| {
            let st = current();
            let base = (st.index as u64 + 1) << 40;
            assert_eq!(
                [st.new_id(), st.new_id(), st.new_id()],
                [base | 1, base | 2, base | 3]
            );
            st.last_id = base | ((1 << 40) - 2);
            assert_eq!(st.new_id(), base | ((1 << 40) - 1));
            assert_eq!([st.new_id(), st.new_id()], [base, base | 1]);
        })
        .join()
        .unwrap();
    }

    /// Profile mode: intervals of many constructs, interleaved (as a
    /// program's loops and regions of different sites follow each other),
    /// each add to their own aggregate, whichever slot the cache of recent
    /// slots points at.
    #[test]
    fn interleaved_constructs_keep_their_own_aggregates() {
        let mut profile = Box::new(Profile {
            table: [Aggregate::default(); PROFILE_CAP],
            last: [0; RECENT],
        });
        let (kinds, sites) = (
            [OmpKind::Work, OmpKind::Parallel, OmpKind::ImplicitTask],
            300u64,
        );
        for round in 0..7i64 {
            for site in 0..sites {
                for (k, kind) in kinds.iter().enumerate() {
                    let rec = OmpRecord {
                        kind: *kind as u8,
                        variant: (site % 2) as u8,
                        codeptr: 0x40_1000 + 24 * site,
                        start_ns: 1_000 * round,
                        end_ns: 1_000 * round + site as i64 + k as i64,
                        ..OmpRecord::default()
                    };
                    assert!(aggregate(&mut profile, &rec));
                }
            }
        }
        let used: Vec<&Aggregate> = profile.table.iter().filter(|a| a.used).collect();
        assert_eq!(used.len(), kinds.len() * sites as usize);
        for a in used {
            let site = (a.codeptr - 0x40_1000) / 24;
            let k = kinds.iter().position(|k| *k as u8 == a.kind).unwrap() as u64;
            assert_eq!((a.count, a.variant), (7, (site % 2) as u8));
            assert_eq!(a.total_ns, 7 * (site + k), "{site} {k}");
        }
    }

    #[test]
    fn held_intervals_reach_the_sink_at_release_at_exit_and_never_twice() {
        let _serial = serial();
        crate::set_sink(&RECORDER);
        let st = current();
        let (par, imp) = (OmpKind::Parallel as u8, OmpKind::ImplicitTask as u8);
        st.push(st.rec(OmpKind::Parallel, 0, 10));
        st.push(st.rec(OmpKind::ImplicitTask, 0, 20));
        assert_eq!(st.close_held(30, |r| r.kind == imp), Some((0, 0)));
        assert_eq!(st.close_held(40, |r| r.kind == par), Some((0, 0)));
        assert!(recorded().is_empty(), "held, not yet encoded");
        st.release_held();
        assert_eq!(
            recorded(),
            [(imp, 30), (par, 40)],
            "in the order they closed"
        );
        st.release_held();
        assert_eq!(recorded().len(), 2, "released once");

        // The exit path hands over what a thread still holds.
        st.push(st.rec(OmpKind::Parallel, 0, 50));
        st.close_held(60, |r| r.kind == par);
        release_all_held();
        assert_eq!(recorded()[2..], [(par, 60)]);
        release_all_held();
        st.release_held();
        assert_eq!(recorded().len(), 3);

        // A forked child forgets its parent's held intervals.
        st.push(st.rec(OmpKind::Parallel, 0, 70));
        st.close_held(80, |r| r.kind == par);
        forget_all_held();
        st.release_held();
        release_all_held();
        assert_eq!(recorded().len(), 3);

        // A full hold queue: the next interval is encoded at once.
        for end in 0..HELD_CAP as i64 + 1 {
            st.push(st.rec(OmpKind::Parallel, 0, 100 + end));
            st.close_held(200 + end, |r| r.kind == par);
        }
        assert_eq!(recorded()[3..], [(par, 200 + HELD_CAP as i64)]);
        st.release_held();
        assert_eq!(recorded().len(), 4 + HELD_CAP);
        assert_eq!(st.depth, 0);
    }
}

#[cfg(test)]
mod late_join_tests {
    use std::sync::atomic::Ordering;

    use hyscope_format::spool::block::{Block, Stream};
    use hyscope_format::spool::decode_payload;
    use hyscope_format::{OmpKind, OmpRecord};

    use super::current;

    /// The calling thread's state (a fresh one on a thread of its own), given
    /// a stream with a block.
    fn with_a_block() -> (&'static mut super::ThreadState, *mut Block<OmpRecord>) {
        let st = current();
        let stream: &'static Stream<OmpRecord> = Box::leak(Box::new(Stream::new()));
        let block = Box::into_raw(Block::<OmpRecord>::new().unwrap());
        stream.install(block);
        st.stream = Some(stream);
        (st, block)
    }

    /// The records encoded into `block` so far: (kind, start, end).
    fn encoded(block: *mut Block<OmpRecord>) -> Vec<(u8, i64, i64)> {
        // SAFETY: the calling thread owns the block; len read with acquire.
        let bytes = unsafe {
            let b = &*block;
            b.bytes(b.published_len())
        };
        let mut back: Vec<OmpRecord> = Vec::new();
        assert_eq!(decode_payload(bytes, &mut back), Some(()));
        back.iter()
            .map(|r| (r.kind, r.start_ns, r.end_ns))
            .collect()
    }

    /// A loop's end with its last chunk still open above it: both end at the
    /// loop's end, the chunk first, in one push; the intervals a primary
    /// thread held back reach the block at their release, in the order they
    /// closed.
    #[test]
    fn a_loops_last_chunk_ends_with_it_and_held_intervals_keep_their_order() {
        let _serial = super::tests::serial();
        std::thread::spawn(|| {
            let (st, block) = with_a_block();
            let k = |kind: OmpKind| kind as u8;
            let work = st.open(k(OmpKind::Work), 1, 100);
            work.codeptr = 0x40;
            work.count = 64;
            work.flags = 3;
            let chunk = st.open(k(OmpKind::Chunk), 1, 110);
            chunk.codeptr = 0x40;
            chunk.count = 32;
            assert_eq!(st.close(200, |r| r.kind == k(OmpKind::Work)), Some((1, 3)));
            assert_eq!(st.depth, 0);
            let both = [(k(OmpKind::Chunk), 110, 200), (k(OmpKind::Work), 100, 200)];
            assert_eq!(encoded(block), both);

            st.open(k(OmpKind::Parallel), 0, 300);
            st.open(k(OmpKind::ImplicitTask), 0, 310);
            st.close_held(400, |r| r.kind == k(OmpKind::ImplicitTask));
            st.close_held(410, |r| r.kind == k(OmpKind::Parallel));
            assert_eq!(encoded(block), both, "held, not yet encoded");
            st.release_held();
            assert_eq!(st.held_len, 0);
            let mut all = both.to_vec();
            all.extend([
                (k(OmpKind::ImplicitTask), 310, 400),
                (k(OmpKind::Parallel), 300, 410),
            ]);
            assert_eq!(encoded(block), all);
        })
        .join()
        .unwrap();
    }

    /// The closes with the encoding inlined (`close_inline`): the innermost
    /// interval, a loop with its last chunk above it (both, the chunk first,
    /// as `close`), a task with an unterminated loop above it (the loop
    /// dropped, as `close`), and none on an empty or unmatched stack,
    /// without a panic.
    #[test]
    fn inlined_closes_end_what_close_ends() {
        let _serial = super::tests::serial();
        std::thread::spawn(|| {
            let (st, block) = with_a_block();
            let k = |kind: OmpKind| kind as u8;
            let is = |kind: OmpKind| move |r: &OmpRecord| r.kind == kind as u8;
            assert_eq!(st.close_inline(50, is(OmpKind::Work)), None, "empty stack");
            st.open(k(OmpKind::Work), 2, 100).flags = 5;
            st.open(k(OmpKind::Chunk), 2, 110);
            assert_eq!(st.close_inline(200, is(OmpKind::Work)), Some((2, 5)));
            assert_eq!(st.depth, 0);
            st.open(k(OmpKind::ImplicitTask), 0, 300);
            st.open(k(OmpKind::Work), 1, 310);
            st.open(k(OmpKind::Sync), 9, 320);
            assert_eq!(st.close_inline(330, is(OmpKind::Parallel)), None);
            assert_eq!(st.close_inline(340, is(OmpKind::Sync)), Some((9, 0)));
            assert_eq!(
                st.close_inline(350, is(OmpKind::ImplicitTask)),
                Some((0, 0))
            );
            assert_eq!(
                st.depth, 0,
                "the loop left open in the task dropped with it"
            );
            assert_eq!(
                encoded(block),
                [
                    (k(OmpKind::Chunk), 110, 200),
                    (k(OmpKind::Work), 100, 200),
                    (k(OmpKind::Sync), 320, 340),
                    (k(OmpKind::ImplicitTask), 300, 350),
                ]
            );
        })
        .join()
        .unwrap();
    }

    /// Profile mode holds the primary's join-time intervals back as trace
    /// mode does, and adds them to their aggregates at the release; a
    /// worker's late join-barrier ends go to their three aggregates at once.
    #[test]
    fn profile_mode_aggregates_held_and_late_join_intervals() {
        let _serial = super::tests::serial();
        std::thread::spawn(|| {
            let st = current();
            st.stream = None;
            st.profile = Some(Box::new(super::Profile {
                table: [super::Aggregate::default(); super::PROFILE_CAP],
                last: [0; super::RECENT],
            }));
            // (count, summed duration) of the aggregate of `kind`.
            let totals = |st: &super::ThreadState, kind: OmpKind| {
                let profile = st.profile.as_deref().unwrap();
                profile
                    .table
                    .iter()
                    .filter(|a| a.used && a.kind == kind as u8)
                    .fold((0, 0), |(n, ns), a| (n + a.count, ns + a.total_ns))
            };
            let k = |kind: OmpKind| kind as u8;
            st.open(k(OmpKind::Parallel), 0, 300);
            st.open(k(OmpKind::ImplicitTask), 0, 310);
            st.close_held(400, |r| r.kind == k(OmpKind::ImplicitTask));
            st.close_held(410, |r| r.kind == k(OmpKind::Parallel));
            assert_eq!(totals(st, OmpKind::Parallel), (0, 0), "held");
            st.release_held();
            assert_eq!(st.held_len, 0);
            assert_eq!(totals(st, OmpKind::Parallel), (1, 110));
            assert_eq!(totals(st, OmpKind::ImplicitTask), (1, 90));

            let late = |kind: OmpKind, start: i64| OmpRecord {
                kind: kind as u8,
                variant: if kind == OmpKind::ImplicitTask { 0 } else { 9 },
                start_ns: start,
                end_ns: start,
                count: 1,
                ..OmpRecord::default()
            };
            st.push(late(OmpKind::ImplicitTask, 100));
            st.push(late(OmpKind::Sync, 150));
            st.push(late(OmpKind::SyncWait, 160));
            st.implicit_depth.store(1, Ordering::Relaxed);
            assert!(st.close_late_join(500));
            assert_eq!(st.depth, 0);
            assert_eq!(totals(st, OmpKind::SyncWait), (1, 340));
            assert_eq!(totals(st, OmpKind::Sync), (1, 350));
            assert_eq!(totals(st, OmpKind::ImplicitTask), (2, 490));
            // Their squares too, as the summary row carries them: 90² + 400².
            let profile = st.profile.as_deref().unwrap();
            let a = profile
                .table
                .iter()
                .find(|a| a.used && a.kind == k(OmpKind::ImplicitTask));
            let row = super::summary_row(0, a.unwrap());
            assert_eq!(row.summary_sum_sq(), 90 * 90 + 400 * 400);
        })
        .join()
        .unwrap();
    }

    /// A worker's late join-barrier ends: its wait, barrier and implicit task
    /// close together at the wait's end, encoded into its stream with one
    /// push, and only when the stack's top three are exactly those.
    #[test]
    fn a_workers_late_join_ends_close_together_in_one_push() {
        let _serial = super::tests::serial();
        // A thread of its own: a fresh state, given a stream with a block.
        std::thread::spawn(|| {
            let (st, block) = with_a_block();
            let open = |kind: OmpKind, start: i64, index: u64| OmpRecord {
                kind: kind as u8,
                variant: if kind == OmpKind::ImplicitTask { 0 } else { 9 },
                start_ns: start,
                end_ns: start,
                parallel_id: 7,
                task_id: 8,
                count: index,
                ..OmpRecord::default()
            };
            let push_region = |st: &mut super::ThreadState, index: u64| {
                st.push(open(OmpKind::ImplicitTask, 100, index));
                st.push(open(OmpKind::Sync, 150, 0));
                st.push(open(OmpKind::SyncWait, 150, 0));
                st.implicit_depth.store(1, Ordering::Relaxed);
            };
            push_region(st, 1);
            assert!(st.close_late_join(500));
            assert_eq!(st.depth, 0);
            assert_eq!(st.implicit_depth.load(Ordering::Relaxed), 0);
            // SAFETY: this thread owns the block; len read with acquire.
            let bytes = unsafe {
                let b = &*block;
                b.bytes(b.published_len())
            };
            let mut back: Vec<OmpRecord> = Vec::new();
            assert_eq!(decode_payload(bytes, &mut back), Some(()));
            let got: Vec<(u8, i64, i64)> = back
                .iter()
                .map(|r| (r.kind, r.start_ns, r.end_ns))
                .collect();
            let k = |kind: OmpKind| kind as u8;
            assert_eq!(
                got,
                [
                    (k(OmpKind::SyncWait), 150, 500),
                    (k(OmpKind::Sync), 150, 500),
                    (k(OmpKind::ImplicitTask), 100, 500)
                ]
            );
            // The primary's (index 0): left to the usual closes.
            push_region(st, 0);
            assert!(!st.close_late_join(600));
            assert_eq!(st.depth, 3);
            // Not a join barrier on top (an explicit one, kind 3): the same.
            st.stack[1].variant = 3;
            st.stack[2].variant = 3;
            st.stack[0].count = 1;
            assert!(!st.close_late_join(600));
            assert_eq!(st.depth, 3);
        })
        .join()
        .unwrap();
    }
}

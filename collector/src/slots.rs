//! One slot per thread: everything the hot paths need about the calling
//! thread behind one thread-local pointer (its index, its event streams, its
//! OpenMP nesting as the OMPT adapter counts it, the MPI wrappers' state),
//! and the list of every thread's slot for the writer and the crash handler.
//!
//! Appending to a slot's streams (the hot path) and handing full blocks to
//! the writer is in `spooling/record.rs`; this module depends on no other
//! layer of the collector, so each of them may use it.

use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use hyscope_format::{MpiRecord, OmpRecord, spool::block::Stream};

use crate::diag::lock;

/// One thread's recording state. Leaked: lives until the process ends.
///
/// Everything a hot path needs about its thread is here, behind the one
/// thread-local pointer, so an MPI wrapper looks the slot up once and reads
/// the rest from it (the pointer is an initial-exec TLS slot, one `%fs` load;
/// a Rust `thread_local!` in a preloaded library costs a `__tls_get_addr`
/// call per access). Fields other
/// threads never touch are atomics only to make the slot `Sync` (the writer
/// reads `omp`/`mpi`); relaxed loads and stores are plain moves.
pub struct ThreadSlot {
    pub index: u32,
    pub(crate) omp: Stream<OmpRecord>,
    pub(crate) mpi: Stream<MpiRecord>,
    /// The OMPT adapter's count of open implicit tasks of this thread (null
    /// until the adapter sees the thread: then it is not in a parallel region).
    parallel_depth: AtomicPtr<AtomicU32>,
    /// Per-thread state of the MPI wrappers.
    pub mpi_thread: MpiThread,
    /// The slot registered before this one ([`SLOT_LIST`]).
    pub(crate) next: AtomicPtr<ThreadSlot>,
}

// SAFETY: the `bases` of the streams are touched only by the slot's own
// thread (the hot path); everything else other threads read is atomic.
unsafe impl Sync for ThreadSlot {}

hyscope_ompt::thread_ptr! {
    /// The calling thread's [`ThreadSlot`] (one `%fs` load, see `hyscope_ompt::thread_ptr`).
    mod slot_ptr: ThreadSlot = "hyscope_thread_slot"
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
pub(crate) static SLOTS: Mutex<Vec<&'static ThreadSlot>> = Mutex::new(Vec::new());
/// The same slots as a lock-free list (newest first), for the crash handler,
/// which may not take a lock.
pub(crate) static SLOT_LIST: AtomicPtr<ThreadSlot> = AtomicPtr::new(ptr::null_mut());

/// The calling thread's slot, created on first use (one thread-local lookup).
#[inline]
pub fn slot() -> &'static ThreadSlot {
    let p = slot_ptr::get();
    if !p.is_null() {
        // SAFETY: slots are leaked, never freed.
        return unsafe { &*p };
    }
    new_slot()
}

#[cold]
#[inline(never)]
fn new_slot() -> &'static ThreadSlot {
    let slot: &'static ThreadSlot = Box::leak(Box::new(ThreadSlot {
        index: NEXT_THREAD.fetch_add(1, Ordering::Relaxed),
        omp: Stream::new(),
        mpi: Stream::new(),
        parallel_depth: AtomicPtr::new(ptr::null_mut()),
        mpi_thread: MpiThread::new(),
        next: AtomicPtr::new(ptr::null_mut()),
    }));
    let p = slot as *const ThreadSlot as *mut ThreadSlot;
    slot_ptr::set(p);
    lock(&SLOTS).push(slot);
    let mut head = SLOT_LIST.load(Ordering::Acquire);
    loop {
        slot.next.store(head, Ordering::Relaxed);
        match SLOT_LIST.compare_exchange_weak(head, p, Ordering::Release, Ordering::Acquire) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    slot
}

/// Index of the calling thread: the same numbering as `OmpRecord::thread`
/// (order of first recording, which the OMPT adapter makes the order of
/// `thread_begin`, 0 = initial thread). Threads unknown to OpenMP get new indices.
#[inline]
pub fn thread_index() -> u32 {
    slot().index
}

/// Threads that have an index so far.
pub fn threads_seen() -> u32 {
    NEXT_THREAD.load(Ordering::Relaxed)
}

/// True when the calling thread is inside an OpenMP parallel region (as OMPT reported it).
#[inline]
pub fn in_parallel() -> bool {
    slot().in_parallel()
}

/// The OMPT adapter created its state for the calling thread (see
/// [`hyscope_ompt::Sink::bind_parallel_depth`]).
pub fn bind_parallel_depth(depth: &'static AtomicU32) {
    slot().parallel_depth.store(
        depth as *const AtomicU32 as *mut AtomicU32,
        Ordering::Relaxed,
    );
}

impl ThreadSlot {
    /// True when this (the calling) thread is inside an OpenMP parallel region.
    #[inline]
    pub fn in_parallel(&self) -> bool {
        let d = self.parallel_depth.load(Ordering::Relaxed);
        // SAFETY: the adapter's counter is leaked, never freed.
        !d.is_null() && unsafe { &*d }.load(Ordering::Relaxed) > 0
    }

    /// This thread's OpenMP stream, which the OMPT adapter pushes into inline
    /// (`hyscope_ompt::Sink::omp_stream`); only this thread may push.
    pub fn omp_stream(&self) -> &Stream<OmpRecord> {
        &self.omp
    }
}

/// Per-thread state of the wrappers, kept in the thread's
/// [`ThreadSlot`] so that a wrapper needs one thread-local lookup.
/// Written only by its thread (atomics for `Sync`; relaxed = plain moves).
/// Defined beside the slot that holds it; used by `mpi` alone.
pub struct MpiThread {
    /// Inside a wrapper: MPI calls the library makes internally are not recorded.
    pub(crate) inside: AtomicBool,
    /// Request counter: ids are `thread << 40 | n`, unique without contention.
    pub(crate) next_req: AtomicU64,
    /// This thread's peer counters (null until its first message).
    pub(crate) peers: AtomicPtr<PeerCounts>,
    /// Its open run of unsuccessful polls (`mpi::polls`).
    pub poll: OpenPoll,
}

impl MpiThread {
    pub const fn new() -> MpiThread {
        MpiThread {
            inside: AtomicBool::new(false),
            next_req: AtomicU64::new(0),
            peers: AtomicPtr::new(std::ptr::null_mut()),
            poll: OpenPoll::new(),
        }
    }
}

impl Default for MpiThread {
    fn default() -> Self {
        MpiThread::new()
    }
}

/// The open run of unsuccessful polls of one thread. Written by its thread;
/// read and taken by a flushing thread ([`take_poll_run`]);
/// extended by `mpi::polls`.
pub struct OpenPoll {
    /// `generation << 32 | polls`; 0 polls: no run is open.
    pub(crate) word: AtomicU64,
    /// `generation << 32 | in_parallel << 16 | call`.
    pub(crate) meta: AtomicU64,
    pub(crate) callsite: AtomicU64,
    /// The request set (or a probe's source, tag and communicator).
    pub(crate) a: AtomicU64,
    pub(crate) b: AtomicU64,
    /// The record's `peer << 32 | tag` and `comm_id`.
    pub(crate) peer_tag: AtomicU64,
    pub(crate) comm_id: AtomicU64,
    pub(crate) start_ns: AtomicI64,
    pub(crate) end_ns: AtomicI64,
}

impl OpenPoll {
    pub const fn new() -> OpenPoll {
        OpenPoll {
            word: AtomicU64::new(0),
            meta: AtomicU64::new(0),
            callsite: AtomicU64::new(0),
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
            peer_tag: AtomicU64::new(0),
            comm_id: AtomicU64::new(0),
            start_ns: AtomicI64::new(0),
            end_ns: AtomicI64::new(0),
        }
    }

    /// The run's record (its fields as they are now) standing for `polls`.
    pub(crate) fn record(&self, thread: u32, polls: u32) -> MpiRecord {
        let meta = self.meta.load(Ordering::Relaxed);
        let peer_tag = self.peer_tag.load(Ordering::Relaxed);
        MpiRecord {
            thread,
            call: meta as u16,
            start_ns: self.start_ns.load(Ordering::Relaxed),
            end_ns: self.end_ns.load(Ordering::Relaxed),
            peer: (peer_tag >> 32) as u32 as i32,
            tag: peer_tag as u32 as i32,
            comm_id: self.comm_id.load(Ordering::Relaxed),
            root: hyscope_format::NO_RANK,
            in_parallel: (meta >> 16) & 1 == 1,
            callsite: self.callsite.load(Ordering::Relaxed),
            calls: polls,
            ..MpiRecord::default()
        }
    }
}

impl Default for OpenPoll {
    fn default() -> Self {
        OpenPoll::new()
    }
}

/// What [`take_poll_run`] found in a thread's slot.
pub enum TakenRun {
    Nothing,
    /// The run, to be written by the caller.
    Run(MpiRecord),
    /// A run whose owner was opening the next one while it was taken: its
    /// polls cannot be told apart from the next run's fields; lost.
    Lost(u64),
}

/// Take the open run of any thread's `slot` (flush at `MPI_Finalize` or
/// exit, crash spooling; async-signal-safe: atomics only).
pub fn take_poll_run(slot: &ThreadSlot) -> TakenRun {
    let p = &slot.mpi_thread.poll;
    let word = p.word.swap(0, Ordering::Acquire);
    let polls = word as u32;
    if polls == 0 {
        return TakenRun::Nothing;
    }
    let rec = p.record(slot.index, polls);
    // The seqlock's reader side (see `mpi::polls::begin`).
    std::sync::atomic::fence(Ordering::Acquire);
    if p.meta.load(Ordering::Relaxed) >> 32 != word >> 32 {
        return TakenRun::Lost(polls.into());
    }
    TakenRun::Run(rec)
}

/// In a forked child: the open runs are the parent's to write.
pub fn forget_poll_run(slot: &ThreadSlot) {
    slot.mpi_thread.poll.word.store(0, Ordering::Relaxed);
}

/// Per-thread connection counters (issue 5): messages and bytes per world
/// rank, written only by their thread with plain loads and stores (a locked
/// add cost ~40 ns per message here), summed over threads at MPI_Finalize.
/// Leaked, so the counts of threads that ended are still there.
pub(crate) struct PeerCounts {
    pub(crate) messages: Box<[AtomicU64]>,
    pub(crate) bytes: Box<[AtomicU64]>,
}

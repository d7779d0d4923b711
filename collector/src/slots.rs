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
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

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
}

impl MpiThread {
    pub const fn new() -> MpiThread {
        MpiThread {
            inside: AtomicBool::new(false),
            next_req: AtomicU64::new(0),
            peers: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl Default for MpiThread {
    fn default() -> Self {
        MpiThread::new()
    }
}

/// Per-thread connection counters (issue 5): messages and bytes per world
/// rank, written only by their thread with plain loads and stores (a locked
/// add cost ~40 ns per message here), summed over threads at MPI_Finalize.
/// Leaked, so the counts of threads that ended are still there.
pub(crate) struct PeerCounts {
    pub(crate) messages: Box<[AtomicU64]>,
    pub(crate) bytes: Box<[AtomicU64]>,
}

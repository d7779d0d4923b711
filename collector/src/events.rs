//! Per-thread event buffers and the writer that turns them into Parquet parts.
//!
//! Hot path ([`record_omp`], [`record_mpi`]): one thread-local pointer load,
//! a copy of a fixed-size record into the thread's current block and a
//! release store of the block's length. No lock, no allocation, no I/O.
//!
//! A full block is handed to the writer thread (one short mutex per
//! [`BLOCK_RECORDS`] events) and the thread takes a free block. Blocks are
//! allocated lazily up to `HYSCOPE_BUFFER_MB`; when none is free the event is
//! dropped and counted, so the application never waits for the disk.
//!
//! Every thread's slot (index and current blocks) is leaked on purpose: OMPT
//! callbacks still arrive after thread-local destructors ran at exit
//! (platform-facts, "Quirks"), and the exit flush must still find the
//! records of threads that ended. The thread-local is a `const` `Cell` of a
//! raw pointer, which has no destructor and so stays readable to the end.
//!
//! Flushing a thread's partly filled block from another thread
//! ([`flush_all`]): under the writer lock, copy `[taken, len)` and advance
//! `taken`. The owner only appends past `len`; the writer writes only
//! `[taken, len)` of a handed-off block, also under the lock, so nothing is
//! written twice.

use std::cell::{Cell, UnsafeCell};
use std::collections::BTreeSet;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use hyscope_format::manifest::EventCounts;
use hyscope_format::schema::{MpiRecord, OmpRecord, SampleRecord, Table};
use hyscope_format::writer::{PartWriter, WriterOptions};

use crate::session;

/// Records per block.
pub const BLOCK_RECORDS: usize = 1024;
/// Sample rows kept before they are handed to the writer.
const SAMPLE_BATCH: usize = 4096;

struct Block<T> {
    len: AtomicUsize,
    /// Rows already written by a flush of the still-current block (writer lock only).
    taken: AtomicUsize,
    data: UnsafeCell<[MaybeUninit<T>; BLOCK_RECORDS]>,
}

// SAFETY: slots below `len` are written once by the owner before the release
// store of `len` and only read afterwards; see the module documentation.
unsafe impl<T: Send> Sync for Block<T> {}

impl<T: Copy> Block<T> {
    fn new() -> Box<Block<T>> {
        Box::new(Block {
            len: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            data: UnsafeCell::new([const { MaybeUninit::uninit() }; BLOCK_RECORDS]),
        })
    }

    /// Rows `[from, to)`. SAFETY: rows below the `len` observed with acquire are initialised.
    unsafe fn rows(&self, from: usize, to: usize) -> &[T] {
        let base = self.data.get() as *const T;
        // SAFETY: guaranteed by the caller (to <= len, from <= to).
        unsafe { std::slice::from_raw_parts(base.add(from), to - from) }
    }
}

/// One thread's recording state. Leaked: lives until the process ends.
///
/// Everything a hot path needs about its thread is here, behind the one
/// thread-local pointer: in a preloaded shared library each distinct
/// thread-local costs a `__tls_get_addr` call (~5–10 ns here), so an MPI
/// wrapper looks the slot up once and reads the rest from it. Fields other
/// threads never touch are atomics only to make the slot `Sync` (the writer
/// reads `omp`/`mpi`); relaxed loads and stores are plain moves.
pub struct ThreadSlot {
    pub index: u32,
    omp: AtomicPtr<Block<OmpRecord>>,
    mpi: AtomicPtr<Block<MpiRecord>>,
    /// The OMPT adapter's count of open implicit tasks of this thread (null
    /// until the adapter sees the thread: then it is not in a parallel region).
    parallel_depth: AtomicPtr<AtomicU32>,
    /// Per-thread state of the MPI wrappers.
    pub mpi_thread: crate::mpi::MpiThread,
}

thread_local! {
    static SLOT: Cell<*const ThreadSlot> = const { Cell::new(ptr::null()) };
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
static SLOTS: Mutex<Vec<&'static ThreadSlot>> = Mutex::new(Vec::new());
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Set once anything was recorded: the exit path then writes the rank's files.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The calling thread's slot, created on first use (one thread-local lookup).
#[inline]
pub fn slot() -> &'static ThreadSlot {
    let p = SLOT.with(|s| s.get());
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
        omp: AtomicPtr::new(ptr::null_mut()),
        mpi: AtomicPtr::new(ptr::null_mut()),
        parallel_depth: AtomicPtr::new(ptr::null_mut()),
        mpi_thread: crate::mpi::MpiThread::new(),
    }));
    SLOT.with(|s| s.set(slot));
    lock(&SLOTS).push(slot);
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

    /// Append one MPI call to this (the calling) thread's buffer.
    #[inline]
    pub fn record_mpi(&self, rec: MpiRecord) {
        if !push(&self.mpi, rec) {
            push_slow(&self.mpi, rec, &MPI_POOL, Full::Mpi);
        }
    }
}

/// Events lost so far (no free buffer, or the trace could not be written).
pub fn dropped_events() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Whether anything was recorded in this process.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Mark the process as one whose trace files must be written at exit.
pub fn mark_active() {
    ACTIVE.store(true, Ordering::Relaxed);
}

/// Append one OpenMP interval to the calling thread's buffer.
#[inline]
pub fn record_omp(rec: OmpRecord) {
    let slot = slot();
    if !push(&slot.omp, rec) {
        push_slow(&slot.omp, rec, &OMP_POOL, Full::Omp);
    }
}

/// Append one MPI call to the calling thread's buffer.
#[inline]
pub fn record_mpi(rec: MpiRecord) {
    slot().record_mpi(rec);
}

/// Record one value of a sampled metric (sampler threads; not a hot path).
pub fn record_sample(time_ns: i64, metric: &str, key: i64, value: f64) {
    mark_active();
    let full = {
        let mut samples = lock(&SAMPLES);
        samples.push(SampleRecord {
            time_ns,
            metric: metric.to_string(),
            key,
            value,
        });
        if samples.len() >= SAMPLE_BATCH {
            Some(std::mem::take(&mut *samples))
        } else {
            None
        }
    };
    if let Some(rows) = full {
        hand_off(Full::Samples(rows));
    }
}

#[inline]
fn push<T: Copy>(current: &AtomicPtr<Block<T>>, rec: T) -> bool {
    let b = current.load(Ordering::Relaxed);
    if b.is_null() {
        return false;
    }
    // SAFETY: a current block is owned by this thread until it hands it off.
    let block = unsafe { &*b };
    let n = block.len.load(Ordering::Relaxed);
    if n >= BLOCK_RECORDS {
        return false;
    }
    // SAFETY: slot n is beyond len, so no reader looks at it yet.
    unsafe { (*block.data.get())[n].write(rec) };
    block.len.store(n + 1, Ordering::Release);
    true
}

#[cold]
#[inline(never)]
fn push_slow<T: Copy>(
    current: &AtomicPtr<Block<T>>,
    rec: T,
    pool: &Pool<T>,
    full: fn(*mut Block<T>) -> Full,
) {
    mark_active();
    let old = current.load(Ordering::Relaxed);
    // SAFETY: as in push.
    if !old.is_null() && unsafe { &*old }.len.load(Ordering::Relaxed) >= BLOCK_RECORDS {
        current.store(ptr::null_mut(), Ordering::Release);
        hand_off(full(old));
    }
    if current.load(Ordering::Relaxed).is_null() {
        match pool.take() {
            Some(b) => current.store(b, Ordering::Release),
            None => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
    if !push(current, rec) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Free blocks of one record type, allocated lazily up to the memory budget.
struct Pool<T> {
    free: Mutex<Vec<SendPtr<Block<T>>>>,
    /// Length of `free` (written under its lock; read without it as a hint,
    /// so that a thread finding no block and no budget drops its event
    /// without taking the lock: a writer that falls behind must not make
    /// every recorded call slower).
    free_len: AtomicUsize,
}

struct SendPtr<T>(*mut T);
// SAFETY: the pointee is only used by one owner at a time (see module docs).
unsafe impl<T> Send for SendPtr<T> {}

static OMP_POOL: Pool<OmpRecord> = Pool {
    free: Mutex::new(Vec::new()),
    free_len: AtomicUsize::new(0),
};
static MPI_POOL: Pool<MpiRecord> = Pool {
    free: Mutex::new(Vec::new()),
    free_len: AtomicUsize::new(0),
};
/// Bytes of blocks allocated so far, against `HYSCOPE_BUFFER_MB`.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

impl<T: Copy> Pool<T> {
    fn take(&self) -> Option<*mut Block<T>> {
        let size = std::mem::size_of::<Block<T>>();
        if self.free_len.load(Ordering::Relaxed) == 0
            && ALLOCATED.load(Ordering::Relaxed) + size > session::config().buffer_bytes
        {
            return None; // nothing free and no budget left: drop without locking
        }
        {
            let mut free = lock(&self.free);
            if let Some(p) = free.pop() {
                self.free_len.store(free.len(), Ordering::Relaxed);
                return Some(p.0);
            }
        }
        self.allocate()
    }

    fn put(&self, b: *mut Block<T>) {
        let mut free = lock(&self.free);
        free.push(SendPtr(b));
        self.free_len.store(free.len(), Ordering::Relaxed);
    }

    /// A new block within the memory budget, its pages touched (so page faults
    /// happen here, not while recording).
    fn allocate(&self) -> Option<*mut Block<T>> {
        let size = std::mem::size_of::<Block<T>>();
        let budget = session::config().buffer_bytes;
        let before = ALLOCATED.fetch_add(size, Ordering::Relaxed);
        if before + size > budget {
            ALLOCATED.fetch_sub(size, Ordering::Relaxed);
            return None;
        }
        let b = Box::into_raw(Block::new());
        // SAFETY: b is a fresh allocation; zeroing MaybeUninit slots is fine.
        unsafe { std::ptr::write_bytes((*b).data.get(), 0, 1) };
        Some(b)
    }

    /// Keep a few free blocks ready (writer thread), so recording threads rarely allocate.
    fn top_up(&self, n: usize) {
        while lock(&self.free).len() < n {
            match self.allocate() {
                Some(b) => self.put(b),
                None => break,
            }
        }
    }

    fn give_back(&self, b: *mut Block<T>) {
        // SAFETY: the block was handed off; nobody else references it.
        let block = unsafe { &*b };
        block.len.store(0, Ordering::Relaxed);
        block.taken.store(0, Ordering::Relaxed);
        self.put(b);
    }
}

/// Work handed to the writer.
enum Full {
    Omp(*mut Block<OmpRecord>),
    Mpi(*mut Block<MpiRecord>),
    Samples(Vec<SampleRecord>),
}
// SAFETY: handed-off blocks belong to the writer alone.
unsafe impl Send for Full {}

struct Queue {
    items: Mutex<Vec<Full>>,
    ready: Condvar,
}

static QUEUE: Queue = Queue {
    items: Mutex::new(Vec::new()),
    ready: Condvar::new(),
};
static SAMPLES: Mutex<Vec<SampleRecord>> = Mutex::new(Vec::new());
static WRITER_STARTED: OnceLock<bool> = OnceLock::new();

fn hand_off(item: Full) {
    lock(&QUEUE.items).push(item);
    QUEUE.ready.notify_one();
    WRITER_STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("hyscope-writer".into())
            .spawn(writer_loop)
            .map_err(|e| session::warn(&format!("cannot start the writer thread: {e}")))
            .is_ok()
    });
}

fn writer_loop() {
    loop {
        {
            let mut q = lock(&QUEUE.items);
            while q.is_empty() {
                q = match QUEUE.ready.wait_timeout(q, Duration::from_secs(1)) {
                    Ok((q, _)) => q,
                    Err(p) => p.into_inner().0,
                };
            }
        }
        // Take the items only under the writer lock (lock order WRITER, then
        // QUEUE, as in flush_all): a flush then either finds them still queued
        // or waits until they are written, so none is written after the flush
        // closed the parts and the symbols were resolved.
        let mut writer = lock(&WRITER);
        let items = std::mem::take(&mut *lock(&QUEUE.items));
        let mpi = items.iter().any(|i| matches!(i, Full::Mpi(_)));
        writer.write_items(items);
        drop(writer);
        // Allocating (and touching) blocks is the writer's job, not the
        // recording threads'.
        OMP_POOL.top_up(4);
        if mpi {
            MPI_POOL.top_up(4);
        }
    }
}

/// The Parquet writers of this rank (created on first use).
struct Writer {
    omp: Option<PartWriter>,
    mpi: Option<PartWriter>,
    samples: Option<PartWriter>,
    broken: bool,
    counts: EventCounts,
    /// Distinct code addresses seen (OMP codeptr, MPI call sites), for the symbols table.
    addresses: BTreeSet<u64>,
    scratch: Vec<OmpRecord>,
    scratch_mpi: Vec<MpiRecord>,
    /// CPU time spent in writes, ns (see [`writer_cpu_ns`]).
    cpu_ns: u64,
}

static WRITER: Mutex<Writer> = Mutex::new(Writer {
    omp: None,
    mpi: None,
    samples: None,
    broken: false,
    counts: EventCounts {
        omp: 0,
        mpi: 0,
        samples: 0,
    },
    addresses: BTreeSet::new(),
    scratch: Vec::new(),
    scratch_mpi: Vec::new(),
    cpu_ns: 0,
});

impl Writer {
    /// Write handed-off work: the rows of all blocks of a table in one batch
    /// (fewer, larger writes), then recycle the blocks.
    fn write_items(&mut self, items: Vec<Full>) {
        let cpu = thread_cpu_ns();
        self.write_items_untimed(items);
        self.cpu_ns += thread_cpu_ns().saturating_sub(cpu);
    }

    fn write_items_untimed(&mut self, items: Vec<Full>) {
        // Reuse the row buffer between writes (no fresh pages per batch).
        let mut omp = std::mem::take(&mut self.scratch);
        omp.clear();
        let mut mpi = std::mem::take(&mut self.scratch_mpi);
        mpi.clear();
        for item in items {
            match item {
                Full::Omp(b) => {
                    // SAFETY: handed off; the owner no longer touches it.
                    let block = unsafe { &*b };
                    let (from, to) = (
                        block.taken.load(Ordering::Relaxed),
                        block.len.load(Ordering::Acquire),
                    );
                    // SAFETY: from <= to <= len.
                    omp.extend_from_slice(unsafe { block.rows(from, to) });
                    OMP_POOL.give_back(b);
                }
                Full::Mpi(b) => {
                    // SAFETY: as above.
                    let block = unsafe { &*b };
                    let (from, to) = (
                        block.taken.load(Ordering::Relaxed),
                        block.len.load(Ordering::Acquire),
                    );
                    // SAFETY: from <= to <= len.
                    mpi.extend_from_slice(unsafe { block.rows(from, to) });
                    MPI_POOL.give_back(b);
                }
                Full::Samples(rows) => self.write_samples(&rows),
            }
        }
        self.write_omp(&mut omp);
        self.write_mpi(&mut mpi);
        self.scratch = omp;
        self.scratch_mpi = mpi;
    }

    fn writer(&mut self, table: Table) -> Option<&mut PartWriter> {
        if self.broken {
            return None;
        }
        let slot = match table {
            Table::Omp => &mut self.omp,
            Table::Mpi => &mut self.mpi,
            _ => &mut self.samples,
        };
        if slot.is_none() {
            let Some(dir) = session::trace_dir() else {
                self.broken = true;
                return None;
            };
            match PartWriter::create(&dir, table, session::rank(), WriterOptions::default()) {
                Ok(w) => *slot = Some(w),
                Err(e) => {
                    session::warn(&format!("cannot write the trace ({e}); events are dropped"));
                    self.broken = true;
                    return None;
                }
            }
        }
        slot.as_mut()
    }

    fn write_omp(&mut self, rows: &mut [OmpRecord]) {
        if rows.is_empty() {
            return;
        }
        note_addresses(&mut self.addresses, rows.iter().map(|r| r.codeptr));
        let n = rows.len() as u64;
        let result = self.writer(Table::Omp).map(|w| w.write_omp(rows));
        self.account(result, n, |c| &mut c.omp);
    }

    fn write_mpi(&mut self, rows: &mut [MpiRecord]) {
        if rows.is_empty() {
            return;
        }
        note_addresses(&mut self.addresses, rows.iter().map(|r| r.callsite));
        let n = rows.len() as u64;
        let result = self.writer(Table::Mpi).map(|w| w.write_mpi(rows));
        self.account(result, n, |c| &mut c.mpi);
    }

    fn write_samples(&mut self, rows: &[SampleRecord]) {
        if rows.is_empty() {
            return;
        }
        let n = rows.len() as u64;
        let result = self.writer(Table::Samples).map(|w| w.write_records(rows));
        self.account(result, n, |c| &mut c.samples);
    }

    fn account(
        &mut self,
        result: Option<Result<(), hyscope_format::FormatError>>,
        n: u64,
        counter: fn(&mut EventCounts) -> &mut u64,
    ) {
        match result {
            Some(Ok(())) => *counter(&mut self.counts) += n,
            Some(Err(e)) => {
                session::warn(&format!("cannot write the trace ({e}); events are dropped"));
                self.broken = true;
                DROPPED.fetch_add(n, Ordering::Relaxed);
            }
            None => {
                DROPPED.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    fn close_parts(&mut self) {
        for w in [&mut self.omp, &mut self.mpi, &mut self.samples]
            .into_iter()
            .flatten()
        {
            if let Err(e) = w.flush() {
                session::warn(&format!("cannot close a trace part ({e})"));
            }
        }
    }
}

/// Write every buffered event of every thread and close the open parts, so
/// that everything recorded so far is in complete part files. Safe to call
/// from any thread, e.g. in `MPI_Finalize` or at exit, and more than once.
pub fn flush_all() {
    // The writer lock first: see writer_loop.
    let mut w = lock(&WRITER);
    let items = std::mem::take(&mut *lock(&QUEUE.items));
    let samples = std::mem::take(&mut *lock(&SAMPLES));
    let slots: Vec<&'static ThreadSlot> = lock(&SLOTS).clone();
    let cpu = thread_cpu_ns();
    w.write_items_untimed(items);
    w.write_samples(&samples);
    for slot in slots {
        let b = slot.omp.load(Ordering::Acquire);
        if !b.is_null() {
            // SAFETY: see the module documentation: [taken, len) is stable and ours to copy.
            let block = unsafe { &*b };
            let (from, to) = (
                block.taken.load(Ordering::Relaxed),
                block.len.load(Ordering::Acquire),
            );
            if to > from {
                // SAFETY: from < to <= len.
                let mut rows = unsafe { block.rows(from, to) }.to_vec();
                block.taken.store(to, Ordering::Relaxed);
                w.write_omp(&mut rows);
            }
        }
        let b = slot.mpi.load(Ordering::Acquire);
        if !b.is_null() {
            // SAFETY: as above.
            let block = unsafe { &*b };
            let (from, to) = (
                block.taken.load(Ordering::Relaxed),
                block.len.load(Ordering::Acquire),
            );
            if to > from {
                // SAFETY: from < to <= len.
                let mut rows = unsafe { block.rows(from, to) }.to_vec();
                block.taken.store(to, Ordering::Relaxed);
                w.write_mpi(&mut rows);
            }
        }
    }
    w.close_parts();
    w.cpu_ns += thread_cpu_ns().saturating_sub(cpu);
}

/// CPU time spent encoding and writing the trace so far, ns.
pub fn writer_cpu_ns() -> u64 {
    lock(&WRITER).cpu_ns
}

/// CPU time of the calling thread, ns (a syscall: per batch, never per event).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// True once writing the trace failed (the warning was given; nothing more is written).
pub fn output_failed() -> bool {
    lock(&WRITER).broken
}

/// Rows written so far per table.
pub fn written_counts() -> EventCounts {
    lock(&WRITER).counts
}

/// Add non-zero addresses to the set, skipping runs of the same address (the
/// common case: one thread repeating one construct) to keep the set cheap.
fn note_addresses(set: &mut BTreeSet<u64>, addresses: impl Iterator<Item = u64>) {
    let mut last = 0;
    for a in addresses {
        if a != 0 && a != last {
            set.insert(a);
            last = a;
        }
    }
}

/// Distinct code addresses written so far (OpenMP codeptrs and MPI call sites).
pub fn seen_addresses() -> Vec<u64> {
    lock(&WRITER).addresses.iter().copied().collect()
}

/// Lock, ignoring poisoning: a panic elsewhere must not stop recording.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

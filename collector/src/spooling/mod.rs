//! Per-thread event buffers, the writer thread that spools them, and the
//! final encoding into Parquet parts.
//!
//! Hot path ([`record_omp`], [`record_mpi`]; the OMPT adapter pushes into
//! the thread's OpenMP stream itself, [`ThreadSlot::omp_stream`]): one
//! thread-local pointer load, the record encoded into the thread's current
//! block as the spool encodes it (the fields that changed since the thread's
//! previous record of that kind, as varints: ~7 bytes instead of the record's
//! 80, see `hyscope_format::spool` and `hyscope_format::spool::block`) and a
//! release store of the block's length. No lock, no allocation, no I/O.
//!
//! A full block is handed to the writer thread (one short mutex per
//! [`hyscope_format::spool::block::BLOCK_BYTES`] of events, ~36 000 of them) and the thread takes a free
//! block. Each block is one spool frame: the writer appends its bytes to the
//! spool file as they are, so during the run it only copies bytes to the
//! page cache. Blocks are allocated lazily up to `HYSCOPE_BUFFER_MB`; when
//! none is free the event is dropped and counted, so the application never
//! waits for the disk.
//!
//! Every thread's slot (index and current blocks) is leaked on purpose: OMPT
//! callbacks still arrive after thread-local destructors ran at exit
//! (docs/platform.md, "Quirks"), and the exit flush must still find the
//! records of threads that ended. The thread's pointer to its slot is a
//! `hyscope_ompt::thread_ptr` slot, which has no destructor and so stays
//! readable to the end.
//!
//! Encoding Parquet during the run cost ~195 ns of CPU per event, taken from
//! the application's threads (they share the cores). [`flush_all`] — at
//! `MPI_Finalize` and at exit — drains the buffers into the spool (`spool/`
//! in the trace) and encodes the spool into the ordinary Parquet parts.
//!
//! Flushing a thread's partly filled block from another thread
//! ([`flush_all`]): under the writer lock, decode the block's bytes up to
//! `len`, spool the rows from `taken` on and advance `taken`. The owner only
//! writes past `len`; the writer spools only rows from `taken` on of a
//! handed-off block, also under the lock, so nothing is written twice.
//!
//! The free blocks are in `pool.rs`; what the crash handler and `MPI_Abort`
//! write, and the process's end note, in `emergency.rs`.

use std::collections::BTreeSet;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStringExt;

use hyscope_format::manifest::{EventCounts, ProcessEnd};
use hyscope_format::schema::{MpiRecord, OmpRecord, SampleRecord, Table};
use hyscope_format::spool::block::{Block, Stream};
use hyscope_format::spool::samples::SampleSpool;
use hyscope_format::spool::to_parquet::{
    EndNote, Unspool, end_note_name, maps_file_name, note_addresses, spool_file_name,
    spool_to_parts,
};
use hyscope_format::spool::{
    FRAME_HEADER_LEN, RECORD_ROOM, SpoolRecord, SpoolWriter, decode_payload, file_header,
    tail_frame_header,
};
use hyscope_format::writer::WriterOptions;

use crate::lifecycle;

mod emergency;
mod pool;

pub use emergency::*;
use pool::*;

/// Sample rows kept before they are handed to the writer.
const SAMPLE_BATCH: usize = 4096;

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
    omp: Stream<OmpRecord>,
    mpi: Stream<MpiRecord>,
    /// The OMPT adapter's count of open implicit tasks of this thread (null
    /// until the adapter sees the thread: then it is not in a parallel region).
    parallel_depth: AtomicPtr<AtomicU32>,
    /// Per-thread state of the MPI wrappers.
    pub mpi_thread: crate::mpi::MpiThread,
    /// The slot registered before this one ([`SLOT_LIST`]).
    next: AtomicPtr<ThreadSlot>,
}

// SAFETY: the `bases` of the streams are touched only by the slot's own
// thread (the hot path); everything else other threads read is atomic.
unsafe impl Sync for ThreadSlot {}

hyscope_ompt::thread_ptr! {
    /// The calling thread's [`ThreadSlot`] (one `%fs` load, see `hyscope_ompt::thread_ptr`).
    mod slot_ptr: ThreadSlot = "hyscope_thread_slot"
}

static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
static SLOTS: Mutex<Vec<&'static ThreadSlot>> = Mutex::new(Vec::new());
/// The same slots as a lock-free list (newest first), for the crash handler,
/// which may not take a lock.
static SLOT_LIST: AtomicPtr<ThreadSlot> = AtomicPtr::new(ptr::null_mut());
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Set once anything was recorded: the exit path then writes the rank's files.
static ACTIVE: AtomicBool = AtomicBool::new(false);

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
        mpi_thread: crate::mpi::MpiThread::new(),
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

    /// Append one OpenMP interval to this (the calling) thread's buffer.
    #[inline]
    pub fn record_omp(&self, rec: &OmpRecord) {
        // SAFETY: called on the slot's own thread (see the callers).
        if !unsafe { self.omp.push(rec) } {
            push_slow(&self.omp, rec, &OMP_POOL, Full::Omp);
        }
    }

    /// Append one MPI call to this (the calling) thread's buffer.
    #[inline]
    pub fn record_mpi(&self, rec: MpiRecord) {
        // SAFETY: called on the slot's own thread (the MPI wrappers).
        if !unsafe { self.mpi.push(&rec) } {
            push_slow(&self.mpi, &rec, &MPI_POOL, Full::Mpi);
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

/// Mark the process as one whose trace files must be written at exit, and
/// start its writer thread (which spools the events continuously).
pub fn mark_active() {
    ACTIVE.store(true, Ordering::Relaxed);
    ensure_writer();
}

/// Append one OpenMP interval to the calling thread's buffer.
#[inline]
pub fn record_omp(rec: OmpRecord) {
    slot().record_omp(&rec);
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

#[cold]
#[inline(never)]
fn push_slow<T: SpoolRecord>(
    stream: &Stream<T>,
    rec: &T,
    pool: &Pool<T>,
    full: fn(*mut Block<T>) -> Full,
) {
    mark_active();
    let old = stream.own_current();
    if !old.is_null() {
        stream.install(ptr::null_mut());
        hand_off(full(old));
    }
    match pool.take() {
        Some(b) => {
            // A new block is a new frame: its first records are encoded against the default.
            // SAFETY: the bases belong to this (the owning) thread.
            unsafe { stream.reset_bases() };
            stream.install(b);
        }
        None => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    // SAFETY: as in push (same thread).
    if !unsafe { stream.push(rec) } {
        DROPPED.fetch_add(1, Ordering::Relaxed);
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
/// The process whose writer thread runs (a forked child starts its own).
static WRITER_PID: AtomicU32 = AtomicU32::new(0);

/// How often the writer thread spools the rows of the threads' current
/// blocks, so that a process killed without warning (SIGKILL) loses at most
/// about this much of its events.
const FLUSH_EVERY: Duration = Duration::from_millis(400);

/// Who may write to the spool files: the holder of the writer lock while the
/// gate is open (it is busy while it writes), or, once and for good, the
/// crash handler ([`emergency_flush`]), which closes it. The handler waits
/// for a busy writer to finish its frame, so no frame is written twice or
/// cut by the other.
static GATE: AtomicU32 = AtomicU32::new(GATE_OPEN);
const GATE_OPEN: u32 = 0;
const GATE_BUSY: u32 = 1;
const GATE_CLOSED: u32 = 2;

/// Enter the gate (writer lock held); false once the crash handler closed it.
fn gate_enter() -> bool {
    GATE.compare_exchange(GATE_OPEN, GATE_BUSY, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

fn gate_leave() {
    let _ = GATE.compare_exchange(GATE_BUSY, GATE_OPEN, Ordering::Release, Ordering::Relaxed);
}

/// True once the crash handler (or `MPI_Abort`) spooled everything: the
/// spools are final and nothing more is written to them.
pub fn spool_closed() -> bool {
    GATE.load(Ordering::Acquire) == GATE_CLOSED
}

/// Register [`forget_parents_events`] to run in the child of every `fork`.
pub fn install_fork_handler() {
    // SAFETY: registering a plain extern "C" function with no preconditions.
    unsafe { libc::pthread_atfork(None, None, Some(forget_parents_events)) };
}

/// In a forked child, right after `fork`: everything buffered so far is the
/// parent's, which writes it itself; the child would write it again at its
/// exit (every row twice in the trace). Mark the rows in the threads' current
/// blocks as spooled, drop the queued blocks and the intervals the OMPT
/// adapter holds back, without blocking: a lock
/// another thread of the parent held at the fork stays held in the child, so
/// `try_lock` only (then that part is left as it was; the child's exit flush
/// would wait on the same lock anyway).
extern "C" fn forget_parents_events() {
    fn skip<T>(stream: &Stream<T>) {
        let b = stream.current();
        if !b.is_null() {
            // SAFETY: blocks are never freed; only this thread runs in the child now.
            let block = unsafe { &*b };
            block.set_taken(block.rows());
        }
    }
    if let Ok(slots) = SLOTS.try_lock() {
        for slot in slots.iter() {
            skip(&slot.omp);
            skip(&slot.mpi);
            crate::mpi::polls::forget(slot);
        }
    }
    if let Ok(mut items) = QUEUE.items.try_lock() {
        // The parent's blocks: not spooled here, and not given back (the pools'
        // locks may be held); the child loses their memory, the parent writes them.
        let parents = std::mem::take(&mut *items);
        std::mem::forget(parents);
    }
    if let Ok(mut samples) = SAMPLES.try_lock() {
        samples.clear();
    }
    hyscope_ompt::forget_parents_held();
    // The parent's losses are the parent's to report.
    DROPPED.store(0, Ordering::Relaxed);
}

fn hand_off(item: Full) {
    lock(&QUEUE.items).push(item);
    QUEUE.ready.notify_one();
    ensure_writer();
}

/// Start this process's writer thread unless it runs.
fn ensure_writer() {
    let pid = std::process::id();
    let running = WRITER_PID.load(Ordering::Relaxed);
    if running == pid
        || WRITER_PID
            .compare_exchange(running, pid, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    if let Err(e) = std::thread::Builder::new()
        .name("hyscope-writer".into())
        .spawn(writer_loop)
    {
        lifecycle::warn(&format!("cannot start the writer thread: {e}"));
    }
}

fn writer_loop() {
    crate::guarded(lifecycle::on_recording_start);
    let mut flushed = std::time::Instant::now();
    loop {
        {
            let mut q = lock(&QUEUE.items);
            let wait = FLUSH_EVERY.saturating_sub(flushed.elapsed());
            if q.is_empty() && !wait.is_zero() {
                q = match QUEUE.ready.wait_timeout(q, wait) {
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
        if !gate_enter() {
            return; // the crash handler wrote everything
        }
        let items = std::mem::take(&mut *lock(&QUEUE.items));
        let mpi = items.iter().any(|i| matches!(i, Full::Mpi(_)));
        writer.write_items(items);
        crate::phases::spool();
        if flushed.elapsed() >= FLUSH_EVERY {
            // The rows of the threads' current blocks too, and the samples
            // taken since: bounded delay to disk.
            let cpu = thread_cpu_ns();
            let samples = std::mem::take(&mut *lock(&SAMPLES));
            writer.write_samples(&samples);
            writer.flush_streams();
            writer.cpu_ns += thread_cpu_ns().saturating_sub(cpu);
            flushed = std::time::Instant::now();
        }
        gate_leave();
        drop(writer);
        // Allocating (and touching) blocks is the writer's job, not the
        // recording threads'.
        OMP_POOL.top_up(4);
        if mpi {
            MPI_POOL.top_up(4);
        }
    }
}

/// This rank's output: the spools of the event tables and the samples' part
/// writer (created on first use).
struct Writer {
    omp: Option<SpoolWriter<OmpRecord>>,
    mpi: Option<SpoolWriter<MpiRecord>>,
    samples: Option<SampleSpool>,
    /// The process the spools belong to: a forked child starts its own.
    pid: u32,
    broken: bool,
    /// Rows in Parquet parts so far.
    counts: EventCounts,
    /// Distinct code addresses seen (OMP codeptr, MPI call sites), for the symbols table.
    addresses: BTreeSet<u64>,
    /// CPU time of the writer thread, ns (see [`writer_cpu_ns`]).
    cpu_ns: u64,
    /// Wall time of the final encodings, ns (see [`encode_ns`]).
    encode_ns: u64,
}

static WRITER: Mutex<Writer> = Mutex::new(Writer {
    omp: None,
    mpi: None,
    samples: None,
    pid: 0,
    broken: false,
    counts: EventCounts {
        omp: 0,
        mpi: 0,
        samples: 0,
    },
    addresses: BTreeSet::new(),
    cpu_ns: 0,
    encode_ns: 0,
});

impl Writer {
    /// Write handed-off work (writer thread), timing it.
    fn write_items(&mut self, items: Vec<Full>) {
        let cpu = thread_cpu_ns();
        self.write_items_untimed(items);
        self.cpu_ns += thread_cpu_ns().saturating_sub(cpu);
    }

    /// Spool each block as one frame (one thread's rows in order: small
    /// deltas), then recycle the blocks.
    fn write_items_untimed(&mut self, items: Vec<Full>) {
        self.check_pid();
        for item in items {
            match item {
                Full::Omp(b) => self.spool_full_block(b, |w| &mut w.omp, "omp", &OMP_POOL),
                Full::Mpi(b) => self.spool_full_block(b, |w| &mut w.mpi, "mpi", &MPI_POOL),
                Full::Samples(rows) => self.write_samples(&rows),
            }
        }
    }

    /// Spool one handed-off block of a table and recycle it.
    fn spool_full_block<T: Unspool>(
        &mut self,
        b: *mut Block<T>,
        spool_of: fn(&mut Writer) -> &mut Option<SpoolWriter<T>>,
        table: &str,
        pool: &Pool<T>,
    ) {
        // SAFETY: handed off; the owner no longer touches it.
        let block = unsafe { &*b };
        let broken = self.broken;
        let (result, rows) = spool_block(spool_of(self), broken, table, block);
        self.account_spool(result, rows);
        pool.give_back(b);
    }

    /// Forget output state inherited from a parent process (after `fork`):
    /// its files belong to the parent. (Done here, lazily, because the
    /// parent's writer thread may hold the writer lock at the fork; the
    /// parent's buffered rows are dropped at the fork, `forget_parents_events`.)
    fn check_pid(&mut self) {
        let pid = std::process::id();
        if self.pid != pid {
            if self.pid != 0 {
                self.samples = None;
                self.omp = None;
                self.mpi = None;
                // What the parent wrote is counted in the parent's rank file.
                self.counts = EventCounts::default();
                self.addresses.clear();
                self.cpu_ns = 0;
                self.encode_ns = 0;
                self.broken = false;
            }
            self.pid = pid;
        }
    }

    /// Spool every thread's open run of folded polls (`mpi::polls`): a
    /// thread that ended, or that never records again, still has one.
    fn write_open_polls(&mut self) {
        let slots: Vec<&'static ThreadSlot> = lock(&SLOTS).clone();
        let mut rows = Vec::new();
        for slot in slots {
            match crate::mpi::polls::take(slot) {
                crate::mpi::polls::TakenRun::Run(r) => rows.push(r),
                crate::mpi::polls::TakenRun::Lost(n) => {
                    DROPPED.fetch_add(n, Ordering::Relaxed);
                }
                crate::mpi::polls::TakenRun::Nothing => {}
            }
        }
        if rows.is_empty() {
            return;
        }
        self.check_pid();
        let broken = self.broken;
        let result = spool(&mut self.mpi, broken, "mpi", &rows);
        self.account_spool(result, rows.len());
    }

    /// Spool the rows of every thread's current blocks not spooled yet.
    fn flush_streams(&mut self) {
        let slots: Vec<&'static ThreadSlot> = lock(&SLOTS).clone();
        for slot in slots {
            self.flush_stream(&slot.omp, "omp", |w| &mut w.omp);
            self.flush_stream(&slot.mpi, "mpi", |w| &mut w.mpi);
        }
    }

    /// Spool the rows of a thread's current block not spooled yet (flush).
    fn flush_stream<T: Unspool>(
        &mut self,
        stream: &Stream<T>,
        table: &str,
        spool_of: fn(&mut Writer) -> &mut Option<SpoolWriter<T>>,
    ) {
        let b = stream.current();
        if b.is_null() {
            return;
        }
        // SAFETY: see the module documentation: bytes below len are stable.
        let block = unsafe { &*b };
        if block.rows() <= block.taken() {
            return; // nothing new (rows only grows, and is counted before len is published)
        }
        let (rows, decoded) = current_rows(block);
        let taken = block.taken();
        if rows.len() > taken {
            self.check_pid();
            let broken = self.broken;
            let result = spool(spool_of(self), broken, table, &rows[taken..]);
            self.account_spool(result, rows.len() - taken);
            block.set_taken(rows.len());
        }
        if !decoded {
            lifecycle::warn("a buffer of recorded events could not be decoded; it is dropped");
        }
    }

    fn account_spool(&mut self, result: Option<Result<(), String>>, n: usize) {
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                output_failed_with(&e);
                self.broken = true;
                DROPPED.fetch_add(n as u64, Ordering::Relaxed);
            }
            None => {
                DROPPED.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }

    fn write_samples(&mut self, rows: &[SampleRecord]) {
        if rows.is_empty() {
            return;
        }
        self.check_pid();
        let n = rows.len() as u64;
        let result = self.samples_spool().map(|w| w.append(rows));
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                output_failed_with(&e.to_string());
                self.broken = true;
                DROPPED.fetch_add(n, Ordering::Relaxed);
            }
            None => {
                DROPPED.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// The samples' spool, created on first use (in `spool/`, beside the
    /// events': a process that dies keeps its samples too).
    fn samples_spool(&mut self) -> Option<&mut SampleSpool> {
        if self.broken {
            return None;
        }
        if self.samples.is_none() {
            let Some(dir) = lifecycle::trace_dir().map(|d| d.join("spool")) else {
                self.broken = true;
                return None;
            };
            let path = dir.join(spool_file_name(
                "samples",
                lifecycle::rank(),
                std::process::id(),
            ));
            let created = std::fs::create_dir_all(&dir)
                .map_err(|e| hyscope_format::FormatError::io(&dir, e))
                .and_then(|_| SampleSpool::create(&path));
            match created {
                Ok(w) => self.samples = Some(w),
                Err(e) => {
                    output_failed_with(&e.to_string());
                    self.broken = true;
                    return None;
                }
            }
        }
        self.samples.as_mut()
    }

    /// Encode both spools into Parquet parts and remove them; close the samples part.
    fn encode_spools(&mut self) {
        let started = std::time::Instant::now();
        if let Some(w) = self.omp.take() {
            let n = encode_spool(w, &mut self.addresses, self.broken);
            self.counts.omp += n;
        }
        if let Some(w) = self.mpi.take() {
            let n = encode_spool(w, &mut self.addresses, self.broken);
            self.counts.mpi += n;
        }
        crate::phases::encode();
        if let Some(w) = self.samples.take() {
            self.counts.samples += encode_sample_spool(w, self.broken);
        }
        self.encode_ns += started.elapsed().as_nanos() as u64;
    }
}

/// Encode the samples' spool into a part and remove it; the rows encoded.
fn encode_sample_spool(spool: SampleSpool, broken: bool) -> u64 {
    let path = spool.path().to_path_buf();
    drop(spool);
    let Some(dir) = lifecycle::trace_dir().filter(|_| !broken) else {
        return 0;
    };
    match hyscope_format::spool::samples::to_part(
        &path,
        &dir,
        lifecycle::rank(),
        WriterOptions::default(),
    ) {
        Ok((rows, _)) => {
            let _ = std::fs::remove_file(&path);
            rows
        }
        Err(e) => {
            output_failed_with(&e.to_string());
            0
        }
    }
}

/// Append rows to a table's spool, creating it on first use. None when the
/// output is unusable (already reported).
fn spool<R: Unspool>(
    spool: &mut Option<SpoolWriter<R>>,
    broken: bool,
    table: &str,
    rows: &[R],
) -> Option<Result<(), String>> {
    if rows.is_empty() {
        return Some(Ok(()));
    }
    Some(open_spool(spool, broken, table)?.and_then(|w| w.append(rows).map_err(|e| e.to_string())))
}

/// The table's spool, created on first use. None when the output is unusable
/// (already reported).
fn open_spool<'a, R: Unspool>(
    spool: &'a mut Option<SpoolWriter<R>>,
    broken: bool,
    table: &str,
) -> Option<Result<&'a mut SpoolWriter<R>, String>> {
    if broken {
        return None;
    }
    if spool.is_none() {
        let dir = lifecycle::trace_dir()?.join("spool");
        let path = dir.join(spool_file_name(
            table,
            lifecycle::rank(),
            std::process::id(),
        ));
        match create_spool(&dir, &path) {
            Ok(w) => *spool = Some(w),
            Err(e) => return Some(Err(e)),
        }
    }
    spool.as_mut().map(Ok)
}

/// A new spool file in `dir` (created if missing). The ranks of a job share
/// `dir` and none removes it (see [`encode_spool`]), so it stays while they run.
fn create_spool<R: SpoolRecord>(dir: &Path, path: &Path) -> Result<SpoolWriter<R>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    SpoolWriter::create(path).map_err(|e| e.to_string())
}

/// Spool a handed-off block: its bytes as they are when no flush took rows
/// from it (the common case), else the rows after those. Returns the result
/// and the rows concerned.
fn spool_block<T: Unspool>(
    spool_slot: &mut Option<SpoolWriter<T>>,
    broken: bool,
    table: &str,
    block: &Block<T>,
) -> (Option<Result<(), String>>, usize) {
    let taken = block.taken();
    let len = block.published_len();
    let rows = block.rows();
    if taken == 0 {
        if rows == 0 {
            return (Some(Ok(())), 0);
        }
        let result = open_spool(spool_slot, broken, table).map(|r| {
            r.and_then(|w| {
                // SAFETY: handed off: the owner no longer writes; len was read with acquire.
                w.append_encoded(rows as u32, unsafe { block.bytes(len) })
                    .map_err(|e| e.to_string())
            })
        });
        return (result, rows);
    }
    let (all, _) = current_rows(block);
    let rest = all.get(taken..).unwrap_or(&[]);
    (spool(spool_slot, broken, table, rest), rest.len())
}

/// Decode the published records of a block (and whether all of it decoded).
fn current_rows<T: SpoolRecord>(block: &Block<T>) -> (Vec<T>, bool) {
    let len = block.published_len();
    let mut rows = Vec::new();
    // SAFETY: len was read with acquire; the owner writes only past it.
    let ok = decode_payload(unsafe { block.bytes(len) }, &mut rows).is_some();
    (rows, ok)
}

/// Encode one spool into parts of its table (on as many threads as the rank
/// ran OpenMP threads, within its CPUs), note its code addresses, and remove
/// it. Returns the rows written; rows that could not be encoded are dropped
/// (counted, and the spool file is kept for `hyscope` to retry).
fn encode_spool<R: Unspool>(
    spool: SpoolWriter<R>,
    addresses: &mut BTreeSet<u64>,
    broken: bool,
) -> u64 {
    let (path, spooled) = (spool.path().to_path_buf(), spool.rows());
    drop(spool); // close the file
    if broken {
        return 0;
    }
    let Some(dir) = lifecycle::trace_dir() else {
        return 0;
    };
    let mut note = |rows: &[R]| note_addresses(addresses, rows);
    match spool_to_parts::<R>(
        &path,
        &dir,
        lifecycle::rank(),
        encoder_threads(),
        WriterOptions::default(),
        &mut note,
    ) {
        Ok(stats) => {
            if let Err(e) = std::fs::remove_file(&path) {
                lifecycle::warn(&format!("cannot remove {} ({e})", path.display()));
            }
            // The `spool/` directory stays: other ranks of the job may be
            // about to create their spool in it, and no rank can tell when
            // the last one is done. `hyscope record` removes it after the job.
            DROPPED.fetch_add(spooled.saturating_sub(stats.rows), Ordering::Relaxed);
            stats.rows
        }
        Err(e) => {
            lifecycle::warn(&format!(
                "cannot encode the trace ({e}); the raw events stay in {}",
                path.display()
            ));
            DROPPED.fetch_add(spooled, Ordering::Relaxed);
            0
        }
    }
}

/// Threads for the final encoding: the OpenMP threads the rank ran (its fair
/// share of the node when every rank encodes at once), at most its CPUs.
fn encoder_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (threads_seen() as usize).clamp(1, cpus.min(8))
}

/// Write every buffered event of every thread into the spools, encode them
/// into Parquet parts and close the open parts, so that everything recorded
/// so far is in complete part files. Safe to call from any thread, e.g. in
/// `MPI_Finalize` or at exit, and more than once.
pub fn flush_all() {
    // Before anything is written under this process's id.
    lifecycle::claim_identity();
    // The writer lock first: see writer_loop.
    let mut w = lock(&WRITER);
    if !gate_enter() {
        return; // the crash handler spooled everything; `hyscope record` encodes it
    }
    let items = std::mem::take(&mut *lock(&QUEUE.items));
    let samples = std::mem::take(&mut *lock(&SAMPLES));
    w.write_items_untimed(items);
    w.write_samples(&samples);
    w.write_open_polls();
    w.flush_streams();
    w.encode_spools();
    gate_leave();
}

/// CPU time the writer thread spent so far (spooling events, writing samples), ns.
pub fn writer_cpu_ns() -> u64 {
    lock(&WRITER).cpu_ns
}

/// Wall time spent encoding spools into Parquet parts so far, ns.
pub fn encode_ns() -> u64 {
    lock(&WRITER).encode_ns
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

/// Distinct code addresses written so far (OpenMP codeptrs and MPI call sites).
pub fn seen_addresses() -> Vec<u64> {
    lock(&WRITER).addresses.iter().copied().collect()
}

/// Lock, ignoring poisoning: a panic elsewhere must not stop recording.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The trace cannot be written (the first error): one warning, and the
/// rank's info and end note say so (a full disk by name).
fn output_failed_with(error: &str) {
    let disk_full = hyscope_format::is_disk_full_message(error);
    if disk_full {
        DISK_FULL.store(true, Ordering::Relaxed);
        lifecycle::warn(&format!(
            "the disk of the trace directory is full ({error}); events from now on are dropped"
        ));
    } else {
        lifecycle::warn(&format!(
            "cannot write the trace ({error}); events are dropped"
        ));
    }
    lifecycle::with_rank_info(|r| {
        r.disk_full |= disk_full;
        r.write_error.get_or_insert_with(|| error.to_string());
    });
    write_end_note(ProcessEnd::Running);
}

/// Writing the trace failed because the disk was full.
static DISK_FULL: AtomicBool = AtomicBool::new(false);

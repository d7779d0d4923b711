//! The writer thread: it takes the full blocks the recording threads hand
//! off, appends them to this process's spools (`spool/` in the trace), spools
//! the rows of the threads' current blocks that are older than one
//! [`FLUSH_EVERY`] (so every row is on disk within two), and at
//! [`flush_all`] encodes the spools into Parquet parts. Also the fork
//! handler (a forked child forgets its parent's pending output) and what
//! is said when the trace cannot be written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use hyscope_format::spool::block::TAKEN_LEN_UNKNOWN;
use hyscope_format::spool::block::{Block, Stream};
use hyscope_format::spool::to_parquet::{Unspool, note_addresses, spool_file_name, spool_to_parts};
use hyscope_format::spool::{DecodeCursor, SpoolRecord, SpoolWriter};
use hyscope_format::{
    EventCounts, MpiRecord, OmpRecord, ProcessEnd, SampleRecord, spool::samples::SampleSpool,
};

use super::end_note::{self, write_end_note};
use super::losses::{DISK_FULL, DROPPED};
use super::pending::{self, Pending};
use super::pool::{MPI_POOL, OMP_POOL, Pool};
use crate::diag::{Held, guarded, hold, lock, warn};
use crate::slots::{SLOTS, ThreadSlot, threads_seen};
use crate::state;

/// What the writer thread runs besides the event tables, given once by the
/// layer above (`state::init`) so that the writer does not depend on it.
pub struct Companions {
    /// Once, when the thread starts, before it writes anything.
    pub at_start: fn(),
    /// After each batch of handed-off blocks (the phases' journal).
    pub each_round: fn(),
    /// In [`flush_all`], after the event tables are encoded (the phases' journal).
    pub at_encode: fn(),
}

static COMPANIONS: OnceLock<Companions> = OnceLock::new();

/// Give the writer its [`Companions`] (the first call counts).
pub fn set_companions(companions: Companions) {
    let _ = COMPANIONS.set(companions);
}

/// Run one of the companions, if they were given.
fn companion(which: fn(&Companions) -> fn()) {
    if let Some(c) = COMPANIONS.get() {
        which(c)();
    }
}

/// [`end_note::prepare`]: the crash handler's paths and this process's end
/// note (`running`), at the start of recording and again when MPI_Init
/// confirms the rank. A process killed later leaves the note for `hyscope
/// record`, which tells from it how the process ended. False when the trace
/// directory is unusable (said once).
pub fn prepare_emergency() -> bool {
    match end_note::prepare() {
        Ok(ready) => ready,
        Err(e) => {
            // The trace cannot be written at all: one warning, nothing more tried.
            output_failed_with(&e);
            lock(&WRITER).broken = true;
            false
        }
    }
}

/// Work handed to the writer.
pub(super) enum Full {
    Omp(*mut Block<OmpRecord>),
    Mpi(*mut Block<MpiRecord>),
    Samples(Vec<SampleRecord>),
}
// SAFETY: handed-off blocks belong to the writer alone.
unsafe impl Send for Full {}

pub(super) struct Queue {
    pub(super) items: Mutex<Vec<Full>>,
    ready: Condvar,
}

pub(super) static QUEUE: Queue = Queue {
    items: Mutex::new(Vec::new()),
    ready: Condvar::new(),
};
pub(super) static SAMPLES: Mutex<Vec<SampleRecord>> = Mutex::new(Vec::new());
/// The process whose writer thread runs (a forked child starts its own).
static WRITER_PID: AtomicU32 = AtomicU32::new(0);

/// How often the writer thread spools the rows of the threads' current
/// blocks, so that a process killed without warning (SIGKILL) loses at most
/// about this much of its events.
const FLUSH_EVERY: Duration = Duration::from_millis(400);

/// Who may write to the spool files: the holder of the writer lock while the
/// gate is open (it is busy while it writes), or, once and for good, the
/// crash handler (`emergency_flush`), which closes it. The handler waits
/// for a busy writer to finish its frame, so no frame is written twice or
/// cut by the other.
pub(super) static GATE: AtomicU32 = AtomicU32::new(GATE_OPEN);
pub(super) const GATE_OPEN: u32 = 0;
const GATE_BUSY: u32 = 1;
pub(super) const GATE_CLOSED: u32 = 2;

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

/// The writer's lock, the outermost of the spooling's, to hold across a
/// `fork` (see `forking`).
pub fn hold_writer_for_fork() -> Held {
    hold(&WRITER)
}

/// The locks of the buffers on their way to the writer (the queue, the
/// samples, the pools' free lists), to hold across a `fork`: each is taken
/// alone, or under the writer's.
pub fn hold_buffers_for_fork() -> [Held; 4] {
    [
        hold(&QUEUE.items),
        hold(&SAMPLES),
        OMP_POOL.hold_for_fork(),
        MPI_POOL.hold_for_fork(),
    ]
}

/// In a forked child, right after `fork` (once `forking` let go of the
/// locks it held across it): everything buffered so far is the parent's,
/// which writes it itself; the child would write it again at its exit
/// (every row twice in the trace). Mark the rows in the threads' current
/// blocks as spooled, drop the queued blocks and the intervals the OMPT
/// adapter holds back. (`try_lock`: a fork made by one of the collector's
/// own threads, which holds no lock across it, is followed by `exec`.)
pub fn forget_parents_events() {
    fn skip<T>(stream: &Stream<T>) {
        let b = stream.current();
        if !b.is_null() {
            // SAFETY: blocks are never freed; only this thread runs in the child now.
            let block = unsafe { &*b };
            block.set_taken(block.rows(), TAKEN_LEN_UNKNOWN);
        }
    }
    if let Ok(slots) = SLOTS.try_lock() {
        for slot in slots.iter() {
            skip(&slot.omp);
            skip(&slot.mpi);
            crate::slots::forget_poll_run(slot);
        }
    }
    if let Ok(mut items) = QUEUE.items.try_lock() {
        // The parent's blocks: not spooled here, and not given back (the pools'
        // locks may be held); the child loses their memory, the parent writes them.
        let parents = std::mem::take(&mut *items);
        std::mem::forget(parents);
    }
    pending::forget_all();
    if let Ok(mut samples) = SAMPLES.try_lock() {
        samples.clear();
    }
    hyscope_ompt::forget_parents_held();
    // The parent's losses are the parent's to report.
    DROPPED.store(0, Ordering::Relaxed);
}

impl Full {
    /// The block, as [`pending`] keeps it (None for samples).
    pub(super) fn pending(&self) -> Option<Pending> {
        match *self {
            Full::Omp(b) => Some(Pending::Omp(b)),
            Full::Mpi(b) => Some(Pending::Mpi(b)),
            Full::Samples(_) => None,
        }
    }
}

pub(super) fn hand_off(item: Full) {
    // Readable by the crash handler's path before the lock is taken: a
    // handler that ends the process on this thread may come while it is held.
    if let Some(p) = item.pending() {
        pending::note(p);
    }
    {
        let mut items = lock(&QUEUE.items);
        items.push(item);
        signal_in_handoff_for_tests();
    }
    QUEUE.ready.notify_one();
    ensure_writer();
}

/// `HYSCOPE_TEST_SIGNAL_IN_HANDOFF` (tests only): the first hand-off raises
/// that signal at its own thread while it holds the queue's lock, so that a
/// test program's handler (an `exit` or an exec) runs with a collector lock
/// held, every time. Unset: one load of a setting read once.
fn signal_in_handoff_for_tests() {
    static RAISED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(sig) = crate::settings::settings().test_signal_in_handoff
        && !RAISED.swap(true, Ordering::Relaxed)
    {
        // SAFETY: raising a signal at the calling thread.
        unsafe { libc::raise(sig) };
    }
}

/// Start this process's writer thread unless it runs.
pub(super) fn ensure_writer() {
    let pid = std::process::id();
    let running = WRITER_PID.load(Ordering::Relaxed);
    if running == pid
        || WRITER_PID
            .compare_exchange(running, pid, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    if let Err(e) = crate::threads::spawn("hyscope-writer", writer_loop) {
        warn(&format!("cannot start the writer thread: {e}"));
    }
}

fn writer_loop() {
    guarded(|| companion(|c| c.at_start));
    let mut flushed = std::time::Instant::now();
    loop {
        {
            let mut q = lock(&QUEUE.items);
            let wait = FLUSH_EVERY.saturating_sub(flushed.elapsed());
            if q.is_empty() && !wait.is_zero() {
                q = q.wait_timeout(&QUEUE.ready, wait);
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
        companion(|c| c.each_round);
        if flushed.elapsed() >= FLUSH_EVERY {
            // The rows of the threads' current blocks too, and the samples
            // taken since: bounded delay to disk.
            let cpu = thread_cpu_ns();
            let samples = std::mem::take(&mut *lock(&SAMPLES));
            writer.write_samples(&samples);
            writer.flush_streams(false);
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
    /// Where the flushes stopped decoding each thread's current block (by
    /// the block's address), so that a flush decodes only the rows recorded
    /// since the last one rather than the whole block again.
    omp_cursors: Cursors<OmpRecord>,
    mpi_cursors: Cursors<MpiRecord>,
    /// The threads' current blocks at the last periodic flush (addresses):
    /// the next one spools only these (see [`Writer::flush_streams`]).
    current_at_last_flush: BTreeSet<usize>,
}

type Cursors<T> = BTreeMap<usize, DecodeCursor<T>>;

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
    omp_cursors: BTreeMap::new(),
    mpi_cursors: BTreeMap::new(),
    current_at_last_flush: BTreeSet::new(),
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
            let written = item.pending();
            match item {
                Full::Omp(b) => self.spool_full_block(b, Writer::omp_of, "omp", &OMP_POOL),
                Full::Mpi(b) => self.spool_full_block(b, Writer::mpi_of, "mpi", &MPI_POOL),
                Full::Samples(rows) => self.write_samples(&rows),
            }
            if let Some(p) = written {
                pending::forget(p);
            }
        }
    }

    fn omp_of(&mut self) -> (&mut Option<SpoolWriter<OmpRecord>>, &mut Cursors<OmpRecord>) {
        (&mut self.omp, &mut self.omp_cursors)
    }

    fn mpi_of(&mut self) -> (&mut Option<SpoolWriter<MpiRecord>>, &mut Cursors<MpiRecord>) {
        (&mut self.mpi, &mut self.mpi_cursors)
    }

    /// Spool one handed-off block of a table and recycle it.
    fn spool_full_block<T: Unspool>(
        &mut self,
        b: *mut Block<T>,
        table_of: TableOf<T>,
        table: &str,
        pool: &Pool<T>,
    ) {
        // SAFETY: handed off; the owner no longer touches it.
        let block = unsafe { &*b };
        let broken = self.broken;
        let (spool_slot, cursors) = table_of(self);
        let cursor = cursors.remove(&(b as usize));
        let (result, rows) = spool_block(spool_slot, broken, table, block, cursor);
        self.account_spool(result, rows);
        pool.give_back(b);
    }

    /// Forget output state inherited from a parent process (after `fork`):
    /// its files belong to the parent. (Done here, lazily, on the writer's
    /// next use in the child; the parent's buffered rows are dropped at the
    /// fork, `forget_parents_events`.)
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
                self.omp_cursors.clear();
                self.mpi_cursors.clear();
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
            match crate::slots::take_poll_run(slot) {
                crate::slots::TakenRun::Run(r) => rows.push(r),
                crate::slots::TakenRun::Lost(n) => {
                    DROPPED.fetch_add(n, Ordering::Relaxed);
                }
                crate::slots::TakenRun::Nothing => {}
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
    /// Spool the rows of the threads' current blocks that are not spooled
    /// yet: every such row when `all` (at [`flush_all`]); otherwise (the
    /// periodic flush) only those of blocks that were already current at the
    /// last periodic flush. A busy thread fills its block between two
    /// flushes and hands it off whole, spooled as it is; taking its rows
    /// early would make the writer write them twice (the block's bytes once
    /// when taken, again in a tail frame when handed off: [`as_they_are`]).
    /// A quiet thread's rows still reach the disk within two flush periods.
    fn flush_streams(&mut self, all: bool) {
        let slots: Vec<&'static ThreadSlot> = lock(&SLOTS).clone();
        let last = std::mem::take(&mut self.current_at_last_flush);
        let mut now = BTreeSet::new();
        for slot in slots {
            let omp = slot.omp.current() as usize;
            let mpi = slot.mpi.current() as usize;
            if all || last.contains(&omp) {
                self.flush_stream(&slot.omp, "omp", Writer::omp_of);
            }
            if all || last.contains(&mpi) {
                self.flush_stream(&slot.mpi, "mpi", Writer::mpi_of);
            }
            now.extend([omp, mpi].into_iter().filter(|&b| b != 0));
        }
        self.current_at_last_flush = now;
    }

    /// Spool the rows of a thread's current block not spooled yet (flush).
    fn flush_stream<T: Unspool>(&mut self, stream: &Stream<T>, table: &str, table_of: TableOf<T>) {
        let b = stream.current();
        if b.is_null() {
            return;
        }
        // SAFETY: see the module documentation: bytes below len are stable.
        let block = unsafe { &*b };
        let (rows, len) = block.published();
        let taken = block.taken();
        if rows <= taken {
            return; // nothing new (rows and len are published together)
        }
        self.check_pid();
        let broken = self.broken;
        let (spool_slot, cursors) = table_of(self);
        let cursor = cursors.remove(&(b as usize));
        if let Some(take) = as_they_are(block, rows, len) {
            // SAFETY: len was read with acquire; the owner writes only past it.
            let bytes = unsafe { block.bytes(len) };
            let result = append_as_they_are(spool_slot, broken, table, take, bytes);
            block.set_taken(rows, len);
            // The cursor stopped at the rows taken before: of no further use.
            self.account_spool(result, rows - taken);
            return;
        }
        let (new, cursor) = untaken_rows(block, cursor);
        let spooled = match new {
            Some(rows) if !rows.is_empty() => {
                let result = spool(spool_slot, broken, table, &rows);
                block.set_taken(block.taken() + rows.len(), cursor.len());
                Some((result, rows.len()))
            }
            Some(_) => None,
            None => {
                warn("a buffer of recorded events could not be decoded; it is dropped");
                None
            }
        };
        cursors.insert(b as usize, cursor);
        if let Some((result, n)) = spooled {
            self.account_spool(result, n);
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
            let Some(dir) = state::spool_dir() else {
                self.broken = true;
                return None;
            };
            let path = dir.join(spool_file_name(
                "samples",
                state::rank(),
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
        companion(|c| c.at_encode);
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
    let Some(dir) = state::trace_dir().filter(|_| !broken) else {
        return 0;
    };
    match hyscope_format::spool::samples::to_part(
        &path,
        &dir,
        state::rank(),
        state::writer_options(),
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
        let dir = state::spool_dir()?;
        let path = dir.join(spool_file_name(table, state::rank(), std::process::id()));
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

/// A table's spool and the decoding cursors of its blocks, in the writer.
type TableOf<T> = fn(&mut Writer) -> (&mut Option<SpoolWriter<T>>, &mut Cursors<T>);

/// Spool a handed-off block: its bytes as they are when no flush took rows
/// from it (the common case), else the rows after those (decoded from where
/// the last flush stopped, `cursor`). Returns the result and the rows concerned.
fn spool_block<T: Unspool>(
    spool_slot: &mut Option<SpoolWriter<T>>,
    broken: bool,
    table: &str,
    block: &Block<T>,
    cursor: Option<DecodeCursor<T>>,
) -> (Option<Result<(), String>>, usize) {
    let taken = block.taken();
    let (rows, len) = block.published();
    if rows <= taken {
        return (Some(Ok(())), 0);
    }
    if let Some(take) = as_they_are(block, rows, len) {
        // SAFETY: handed off: the owner no longer writes; len was read with acquire.
        let bytes = unsafe { block.bytes(len) };
        let result = append_as_they_are(spool_slot, broken, table, take, bytes);
        return (result, rows - taken);
    }
    let rest = untaken_rows(block, cursor).0.unwrap_or_default();
    (spool(spool_slot, broken, table, &rest), rest.len())
}

/// How a block's rows not spooled yet go to the spool without being decoded
/// ([`as_they_are`]).
#[derive(Clone, Copy)]
enum AsTheyAre {
    /// No flush took any: the block's bytes are a frame of `rows` records.
    Frame { rows: u32 },
    /// A flush took the first `skip`: the block's bytes again as a tail
    /// frame, whose first `skip` records the reader drops.
    Tail { skip: u32, rows: u32 },
}

/// Whether the rows of `block` after its taken ones (of `rows` published in
/// `len` bytes) go to the spool as they are: always when no flush took any;
/// after a flush took some, when the bytes not taken are at least a quarter
/// of the block's, so that the tail frame rewrites at most three bytes per
/// new one. Decoding and re-encoding them instead (their records are
/// delta-encoded from the block's start) costs the writer ≈ 25 ns of CPU per
/// record, taken from the application's cores wherever it fills them. A few
/// new rows after many taken ones are decoded, from where the last decoding
/// stopped: rewriting the block for them at every flush would grow a quiet
/// thread's spool by a block every flush period.
fn as_they_are<T>(block: &Block<T>, rows: usize, len: usize) -> Option<AsTheyAre> {
    let (taken, taken_len) = (block.taken(), block.taken_len());
    let rows = u32::try_from(rows).ok()?;
    if taken == 0 {
        return Some(AsTheyAre::Frame { rows });
    }
    let new_bytes = len.saturating_sub(taken_len);
    (taken_len != TAKEN_LEN_UNKNOWN && new_bytes * 4 >= len).then_some(AsTheyAre::Tail {
        skip: u32::try_from(taken).ok()?,
        rows,
    })
}

/// Append a block's `bytes` as [`as_they_are`] chose.
fn append_as_they_are<T: Unspool>(
    spool_slot: &mut Option<SpoolWriter<T>>,
    broken: bool,
    table: &str,
    take: AsTheyAre,
    bytes: &[u8],
) -> Option<Result<(), String>> {
    open_spool(spool_slot, broken, table).map(|r| {
        r.and_then(|w| {
            match take {
                AsTheyAre::Frame { rows } => w.append_encoded(rows, bytes),
                AsTheyAre::Tail { skip, rows } => w.append_tail(skip, rows, bytes),
            }
            .map_err(|e| e.to_string())
        })
    })
}

/// The published rows of a block that no flush took yet, decoded from where
/// `cursor` stopped when it stopped where the taken rows end (else from the
/// block's start, skipping the taken rows), and the cursor after them. None
/// when the bytes do not decode.
fn untaken_rows<T: SpoolRecord>(
    block: &Block<T>,
    cursor: Option<DecodeCursor<T>>,
) -> (Option<Vec<T>>, DecodeCursor<T>) {
    let taken_len = block.taken_len();
    let (mut cursor, skip) = match cursor {
        Some(c) if taken_len != TAKEN_LEN_UNKNOWN && c.len() == taken_len => (c, 0),
        _ if block.taken() == 0 => (DecodeCursor::new(), 0),
        _ => (DecodeCursor::new(), block.taken()),
    };
    let len = block.published_len();
    let mut rows = Vec::new();
    // SAFETY: len was read with acquire; the owner writes only past it.
    if cursor
        .decode_more(unsafe { block.bytes(len) }, &mut rows)
        .is_none()
    {
        return (None, cursor);
    }
    rows.drain(..skip.min(rows.len()));
    (Some(rows), cursor)
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
    let Some(dir) = state::trace_dir() else {
        return 0;
    };
    let mut note = |rows: &[R]| note_addresses(addresses, rows);
    match spool_to_parts::<R>(
        &path,
        &dir,
        state::rank(),
        encoder_threads(),
        state::writer_options(),
        &mut note,
    ) {
        Ok(stats) => {
            if let Err(e) = std::fs::remove_file(&path) {
                warn(&format!("cannot remove {} ({e})", path.display()));
            }
            // The `spool/` directory stays: other ranks of the job may be
            // about to create their spool in it, and no rank can tell when
            // the last one is done. `hyscope record` removes it after the job.
            DROPPED.fetch_add(spooled.saturating_sub(stats.rows), Ordering::Relaxed);
            stats.rows
        }
        Err(e) => {
            warn(&format!(
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
    state::claim_identity();
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
    w.flush_streams(true);
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

/// The trace cannot be written (the first error): one warning, and the
/// rank's info and end note say so (a full disk by name).
fn output_failed_with(error: &str) {
    let disk_full = hyscope_format::is_disk_full_message(error);
    if disk_full {
        DISK_FULL.store(true, Ordering::Relaxed);
        warn(&format!(
            "the disk of the trace directory is full ({error}); events from now on are dropped"
        ));
    } else {
        warn(&format!(
            "cannot write the trace ({error}); events are dropped"
        ));
    }
    state::with_rank_info(|r| {
        r.disk_full |= disk_full;
        r.write_error.get_or_insert_with(|| error.to_string());
    });
    write_end_note(ProcessEnd::Running);
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::spool::block::Stream;

    /// (kind of take, skip) for a block of `n` pushed records after a flush
    /// took `taken` of them (their bytes known or not).
    fn take_after(n: usize, taken: usize, known: bool) -> Option<(bool, u32)> {
        let stream = Stream::<OmpRecord>::new();
        let block = Block::<OmpRecord>::new().unwrap();
        stream.install(&*block as *const Block<OmpRecord> as *mut Block<OmpRecord>);
        let mut len_at_taken = 0;
        for i in 0..n {
            if i == taken {
                len_at_taken = block.published_len();
            }
            let rec = OmpRecord {
                kind: 6,
                start_ns: 1_000 * i as i64,
                end_ns: 1_000 * i as i64 + 700,
                ..OmpRecord::default()
            };
            // SAFETY: this thread owns the stream and the block outlives it.
            assert!(unsafe { stream.push(&rec) });
        }
        if taken > 0 {
            let len = if known {
                len_at_taken
            } else {
                TAKEN_LEN_UNKNOWN
            };
            block.set_taken(taken, len);
        }
        let (rows, len) = block.published();
        assert_eq!(rows, n);
        as_they_are(&*block, rows, len).map(|t| match t {
            AsTheyAre::Frame { rows } => {
                assert_eq!(rows as usize, n);
                (false, 0)
            }
            AsTheyAre::Tail { skip, rows } => {
                assert_eq!(rows as usize, n);
                (true, skip)
            }
        })
    }

    #[test]
    fn blocks_go_to_the_spool_undecoded_unless_a_few_rows_follow_many_taken() {
        // No flush took any: the bytes are a frame.
        assert_eq!(take_after(100, 0, true), Some((false, 0)));
        // Half the block is new: a tail frame skipping the taken rows.
        assert_eq!(take_after(100, 50, true), Some((true, 50)));
        // Somewhat more than a quarter new (the first record, coded against
        // the default one, is the longest).
        assert_eq!(take_after(100, 70, true), Some((true, 70)));
        // Fewer new rows: decoded from where the last decoding stopped.
        assert_eq!(take_after(100, 90, true), None);
        // Taken bytes not known (a forked child's parent rows): decoded.
        assert_eq!(take_after(100, 50, false), None);
    }
}

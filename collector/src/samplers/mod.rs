//! Samplers: what is not an event (energy, memory, MPI_T queues, RDMA resources).
//!
//! Every data source is a [`Sampler`] with the same small interface (the
//! Caliper "service" idea): a name, a [`Sampler::probe`] that says whether it
//! can run here and why, the metrics it writes, and [`Sampler::sample`].
//! One thread per process ([`start`]) calls every available sampler each
//! `HYSCOPE_SAMPLE_MS` and writes the `samples` table through
//! `spooling::record_sample`. The manifest lists every sampler, available or
//! not, with the reason (`Manifest::samplers`) and the unit of every metric.
//!
//! | sampler | reads | metrics (unit) | who |
//! |---|---|---|---|
//! | `memory` | `/proc/self/status`, `/proc/self/maps` (every 10th tick) | `mem.vmrss`, `mem.vmhwm`, `mem.vmpin`, `mem.shm_mapped`, `mem.shm_vader`, `mem.shm_session` (bytes) | every rank |
//! | `rapl` | perf `power` PMU (perf-event2), else powercap `energy_uj` | `energy.pkg`/`.cores`/`.ram`/`.gpu`/`.psys` (J, cumulative; key = package) | one rank per node |
//! | `rdma` | `rdma -j -d res show qp/cq/mr pid <pid>`, every 5 s | `rdma.qps`, `rdma.rc_connected`, `rdma.cqs`, `rdma.cqes`, `rdma.mrs` (count), `rdma.mr_bytes` (bytes) | every rank |
//! | `mpi_t` | MPI_T pvars bound after MPI_Init | `mpi_t.<pvar>` (messages or bytes; key = peer rank, -1 = sum) | every rank |
//!
//! Adding a source is adding a module with a [`Sampler`] and one `register` line
//! in [`start`]. `HYSCOPE_SAMPLE_MS=0` disables the thread (every sampler is then
//! listed as disabled). `HYSCOPE_SYSFS_ROOT` redirects sysfs (tests).
//!
//! The MPI layer calls [`on_mpi_init_begin`], [`on_mpi_init_end`] and
//! [`on_mpi_finalize_begin`] (RSS before/after MPI_Init, the RAPL election,
//! MPI_T close), and [`add_mpit`] once MPI_T is open (at the end of `MPI_Init`
//! or in a thread beside the application: `mpi::mpit_background`); an `atexit` handler calls [`stop`] before the session's
//! final flush.
//!
//! Every read after the probes is the sampler thread's: the reads the
//! application's `MPI_Init`, `MPI_Finalize` and exit need (the elected RAPL
//! reader's first, MPI_T's last, everyone's last) are [`Job`]s the thread
//! does while the caller waits. The thread holds the samplers' lock while it
//! reads; every other thread waits for that lock, and for its job, at most
//! [`LOCK_LIMIT`] ([`state_within`], [`on_thread`]): a read that never
//! returns (a wedged driver's sysfs file, an MPI_T read waiting on a lock)
//! must not hang the application's `fork`, `MPI_Init`, `MPI_Finalize` or
//! exit. Past the limit, sampling stops with one warning naming the sampler,
//! which the manifest's entry for it repeats; the samples read until then
//! are kept.

pub mod memory;
pub mod mpit;
mod node;
pub mod rapl;
pub mod rdma;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyscope_format::{MetricInfo, SamplerInfo};

use crate::{clock, diag, settings, spooling, state};

/// Where a sampler writes: `(time_ns, metric, key, value)`.
pub type Emit<'a> = dyn FnMut(i64, &str, i64, f64) + 'a;

/// Outcome of probing a sampler: what it reads, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Available(String),
    Unavailable(String),
}

/// One metric a sampler writes, with its unit (goes to `Manifest::metrics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricDef {
    pub name: String,
    pub unit: String,
    pub description: String,
}

impl MetricDef {
    pub fn new(name: &str, unit: &str, description: &str) -> MetricDef {
        MetricDef {
            name: name.into(),
            unit: unit.into(),
            description: description.into(),
        }
    }
}

/// A data source of the sampler thread.
pub trait Sampler: Send {
    /// Short name used in the manifest (`rapl`, `memory`, `mpi_t`, `rdma`).
    fn name(&self) -> &'static str;
    /// Open what it needs; say whether it can run here and why (not).
    fn probe(&mut self) -> Probe;
    /// Metrics it writes (valid after a successful probe).
    fn metrics(&self) -> Vec<MetricDef>;
    /// Read once and emit the values, all stamped `now_ns`.
    fn sample(&mut self, now_ns: i64, emit: &mut Emit<'_>);
    /// Ranks that read it, when not just this one (RAPL: one per node).
    fn ranks(&self) -> Option<Vec<u32>> {
        None
    }
    /// For per-node sources (RAPL): whether this process is its node's reader,
    /// and the readers of the whole job. Others ignore it.
    fn elect(&mut self, _leader: bool, _readers: &[u32]) {}
    /// Release what it holds (MPI_T before MPI_Finalize).
    fn close(&mut self) {}
    /// A reading of everything, including what is read only now and then:
    /// at the end of MPI_Init, at the start of MPI_Finalize and at exit, the
    /// moments MPI's shared-memory segments appear, are all mapped, and go
    /// (a run shorter than the memory sampler's maps period would else never
    /// see them).
    fn full_sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        self.sample(now_ns, emit);
    }
}

struct Active {
    sampler: Box<dyn Sampler>,
}

struct State {
    samplers: Vec<Active>,
    stop: bool,
    thread: Option<JoinHandle<()>>,
    /// Jobs for the sampler thread, with their numbers ([`on_thread`]).
    jobs: Vec<(u64, Job)>,
    /// The last job's number.
    last_job: u64,
}

/// Reads the application's threads need at a given moment, done by the
/// sampler thread ([`on_thread`]).
enum Job {
    /// At the end of `MPI_Init`: the node's RAPL reader is elected; the
    /// reader's first row marks the end of `MPI_Init` (energy since its
    /// start), the others stop reading RAPL.
    Elect {
        leader: bool,
        readers: Vec<u32>,
        now: i64,
    },
    /// Before `MPI_Finalize`: MPI_T's last reading, MPI_T closed (never
    /// after `MPI_Finalize`), a round of the others.
    Finalize { now: i64 },
    /// At exit: every sampler's last reading, after which the thread leaves.
    Last { now: i64 },
    /// Before an exec: every sampler's reading at the program's end, as at
    /// exit; the thread goes on (the exec may fail).
    Exec { now: i64 },
    /// When the process starts recording: every sampler's first reading
    /// (the thread's own first tick came before, and was not kept).
    First { now: i64 },
}

static STATE: Mutex<State> = Mutex::new(State {
    samplers: Vec::new(),
    stop: false,
    thread: None,
    jobs: Vec::new(),
    last_job: 0,
});
/// The number of the last job the sampler thread finished.
static JOBS_DONE: AtomicU64 = AtomicU64::new(0);
static WAKE: Condvar = Condvar::new();
/// The process that started the sampler thread (0 before [`start`]).
static OWNER_PID: AtomicU32 = AtomicU32::new(0);

/// How long a thread other than the sampler's waits for the samplers' lock
/// (module documentation). A sample takes microseconds (`/proc/self/status`)
/// to a few milliseconds (`/proc/self/maps`); the `rdma` tool is killed
/// after its own 2 s, well within this, and so is a sampler thread a loaded
/// machine leaves waiting for a core.
pub const LOCK_LIMIT: Duration = Duration::from_secs(5);

/// Set once a wait for the samplers' lock, or for a job, gave up
/// ([`give_up`]): later waits do not wait, and the sampler thread reads no
/// further sampler and does no further job, and leaves (a read that returns
/// late reaches no other, MPI_T's least of all once `MPI_Finalize` may have
/// begun).
static STUCK: AtomicBool = AtomicBool::new(false);
/// The sampler the sampler thread is reading ([`NAMES`] index, [`NONE`] between reads).
static READING: AtomicU8 = AtomicU8::new(NONE);
/// When that read began (`clock::now_ns`).
static READING_SINCE: AtomicI64 = AtomicI64::new(0);
/// Every sampler's name, in registration order ([`READING`]'s codes, the
/// manifest's entries when sampling is off).
const NAMES: [&str; 4] = ["memory", "rapl", "rdma", "mpi_t"];
const NONE: u8 = u8::MAX;

/// The samplers' lock, to hold across a `fork` (see `forking`), unless the
/// sampler thread has kept it for [`LOCK_LIMIT`]: the child then finds it
/// held, and its own waits for it give up in turn.
pub(crate) fn hold_for_fork() -> Option<crate::diag::Held> {
    state_within().map(|g| Box::new(g) as crate::diag::Held)
}

/// The samplers' lock, waiting as long as it takes: only for [`start`],
/// before the sampler thread exists, and for that thread itself.
fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The samplers' lock for any thread but the sampler's: `None` when the
/// sampler thread has held it for [`LOCK_LIMIT`] (or did before), after
/// which sampling stops with one warning ([`give_up`]).
fn state_within() -> Option<MutexGuard<'static, State>> {
    within(Instant::now() + LOCK_LIMIT, || match STATE.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    })
}

/// `ready()`'s first `Some`, looked for every 50 µs until `deadline`; past
/// it, or once sampling is stuck, `None` ([`give_up`]).
fn within<T>(deadline: Instant, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(t) = ready() {
            return Some(t);
        }
        if STUCK.load(Ordering::Relaxed) || Instant::now() >= deadline {
            give_up();
            return None;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// Stop sampling because the sampler thread did not let go of its lock:
/// one warning naming the sampler it is reading, the same in its manifest entry.
#[cold]
fn give_up() {
    if STUCK.swap(true, Ordering::Relaxed) {
        return;
    }
    let Some(&name) = NAMES.get(READING.load(Ordering::Relaxed) as usize) else {
        // Between reads: the thread itself is kept from running (or stuck
        // reading the threads' CPU masks); no sampler to name.
        diag::warn(&format!(
            "the sampler thread has held its lock for over {} s; sampling stops \
             (the samples read before are kept)",
            LOCK_LIMIT.as_secs()
        ));
        return;
    };
    let since = READING_SINCE.load(Ordering::Relaxed);
    let secs = (clock::now_ns() - since).max(0) as f64 / 1e9;
    let why = format!(
        "the `{name}` sampler's read has not returned for {secs:.1} s; sampling stops \
         (the samples read before are kept)"
    );
    diag::warn(&why);
    state::with_manifest(|m| {
        if let Some(info) = m.samplers.iter_mut().find(|x| x.name == name) {
            info.reason = format!(
                "{}; stopped: a read did not return within {} s",
                info.reason,
                LOCK_LIMIT.as_secs()
            );
        }
    });
}

/// The sampling interval from `HYSCOPE_SAMPLE_MS`: `0` → None (no sampler
/// thread; RSS around MPI_Init is still taken).
pub fn interval() -> Option<Duration> {
    match settings::settings().sample_ms {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

fn record(t: i64, metric: &str, key: i64, value: f64) {
    spooling::record_sample(t, metric, key, value);
}

/// Probe `s`, state the result in the manifest, keep it if available.
fn register(st: &mut State, mut s: Box<dyn Sampler>) {
    let probe = s.probe();
    let (available, reason) = match probe {
        Probe::Available(r) => (true, r),
        Probe::Unavailable(r) => (false, r),
    };
    let info = SamplerInfo {
        name: s.name().to_string(),
        available,
        reason,
        ranks: if available {
            s.ranks().unwrap_or_else(|| vec![state::rank()])
        } else {
            Vec::new()
        },
    };
    let metrics = if available { s.metrics() } else { Vec::new() };
    publish(info, &metrics);
    if available {
        st.samplers.retain(|a| a.sampler.name() != s.name());
        st.samplers.push(Active { sampler: s });
    }
}

/// Put (or replace) a sampler's entry and its metrics in the manifest draft.
fn publish(info: SamplerInfo, metrics: &[MetricDef]) {
    state::with_manifest(|m| {
        m.samplers.retain(|x| x.name != info.name);
        m.samplers.push(info);
        for d in metrics {
            m.metrics.insert(
                d.name.clone(),
                MetricInfo {
                    unit: d.unit.clone(),
                    description: d.description.clone(),
                },
            );
        }
    });
}

fn sample_all(st: &mut State, full: bool) {
    // A process that records nothing else (a shell or launcher the preload leaked
    // into) must not leave a trace behind just because it was sampled.
    if !spooling::is_active() {
        return;
    }
    let now = clock::now_ns();
    let mut emit = record;
    for a in &mut st.samplers {
        if STUCK.load(Ordering::Relaxed) {
            break;
        }
        reading(a, |s| {
            if full {
                s.full_sample(now, &mut emit)
            } else {
                s.sample(now, &mut emit)
            }
        });
    }
}

/// `f` on `a`'s sampler, marked as its read ([`READING`]) for [`give_up`]'s
/// warning.
fn reading<R>(a: &mut Active, f: impl FnOnce(&mut dyn Sampler) -> R) -> R {
    let code = NAMES
        .iter()
        .position(|&n| n == a.sampler.name())
        .map_or(NONE, |i| i as u8);
    READING_SINCE.store(clock::now_ns(), Ordering::Relaxed);
    READING.store(code, Ordering::Relaxed);
    let r = f(a.sampler.as_mut());
    READING.store(NONE, Ordering::Relaxed);
    r
}

/// Do `job` (on the sampler thread, or on the caller's where there is none).
fn run_job(st: &mut State, job: Job) {
    let mut emit = record;
    match job {
        Job::Elect {
            leader,
            readers,
            now,
        } => {
            if let Some(a) = st.samplers.iter_mut().find(|a| a.sampler.name() == "rapl") {
                a.sampler.elect(leader, &readers);
                if leader {
                    reading(a, |s| s.sample(now, &mut emit));
                }
            }
            if !leader {
                st.samplers.retain(|a| a.sampler.name() != "rapl");
            }
            // MPI_Init has mapped the shared-memory transport's segment.
            if spooling::is_active()
                && let Some(a) = st
                    .samplers
                    .iter_mut()
                    .find(|a| a.sampler.name() == "memory")
            {
                reading(a, |s| s.full_sample(now, &mut emit));
            }
        }
        Job::Finalize { now } => {
            if let Some(pos) = st.samplers.iter().position(|a| a.sampler.name() == "mpi_t") {
                let mut a = st.samplers.remove(pos);
                reading(&mut a, |s| s.sample(now, &mut emit));
                // Not when `MPI_Finalize` may have begun meanwhile (the
                // caller gave up waiting): MPI_T's handles then stay open.
                if !STUCK.load(Ordering::Relaxed) {
                    a.sampler.close();
                }
            }
            if !st.stop {
                sample_all(st, true);
            }
        }
        Job::Last { now } => {
            full_readings(st, now);
            st.stop = true;
            st.samplers.clear();
        }
        Job::Exec { now } | Job::First { now } => full_readings(st, now),
    }
}

/// Every sampler's full reading at `now`: the program's first (when it
/// starts recording) or last (its exit or exec).
fn full_readings(st: &mut State, now: i64) {
    if spooling::is_active() {
        let mut emit = record;
        for a in &mut st.samplers {
            if STUCK.load(Ordering::Relaxed) {
                break;
            }
            reading(a, |s| s.full_sample(now, &mut emit));
        }
    }
}

/// Whether this process's sampler thread runs (a forked child has a copy
/// of the state, not the thread).
fn thread_runs(st: &State) -> bool {
    st.thread.is_some() && !st.stop && OWNER_PID.load(Ordering::Relaxed) == std::process::id()
}

/// Queue `job` for the sampler thread (the caller wakes it): its number,
/// which `JOBS_DONE` reaches once it is done.
fn queue(st: &mut State, job: Job) -> u64 {
    st.last_job += 1;
    st.jobs.push((st.last_job, job));
    st.last_job
}

/// Have the sampler thread do `job` and wait for it, at most
/// [`LOCK_LIMIT`] in all (then sampling stops, [`give_up`]); where the
/// thread does not run, do it here. Whether it was done.
fn on_thread(job: Job) -> bool {
    let deadline = Instant::now() + LOCK_LIMIT;
    let number = {
        let Some(mut st) = state_within() else {
            return false;
        };
        if !thread_runs(&st) {
            run_job(&mut st, job);
            return true;
        }
        queue(&mut st, job)
    };
    WAKE.notify_all();
    within(deadline, || {
        (JOBS_DONE.load(Ordering::Acquire) >= number).then_some(())
    })
    .is_some()
}

/// Probe every sampler and start the sampler thread (idempotent).
/// Called once from session init.
pub fn start() {
    let mut st = state();
    if st.thread.is_some() || st.stop {
        return;
    }
    OWNER_PID.store(std::process::id(), Ordering::Relaxed);
    let Some(every) = interval() else {
        for name in NAMES {
            publish(
                SamplerInfo {
                    name: name.into(),
                    available: false,
                    reason: "sampling disabled (HYSCOPE_SAMPLE_MS=0)".into(),
                    ranks: Vec::new(),
                },
                &[],
            );
        }
        st.stop = true;
        return;
    };
    register(&mut st, Box::new(memory::Memory::new()));
    // Under an MPI launcher the node's reader is elected at MPI_Init; until then
    // every rank reads (to follow wraps) but none writes.
    let mut r = rapl::Rapl::new(rapl::sysfs_root(), !crate::settings::launched_by_mpi());
    r.reader_ranks = vec![state::rank()];
    register(&mut st, Box::new(r));
    register(&mut st, Box::new(rdma::Rdma::new(rapl::sysfs_root())));
    // Replaced at MPI_Init by what MPI_T offers.
    mpit_unavailable("no MPI_Init in this process");
    let spawned = crate::threads::spawn("hyscope-sampler", move || run(every));
    match spawned {
        Ok(h) => {
            st.thread = Some(h);
            // atexit handlers run last-registered first: this one, registered after
            // the session's, stops the thread before the session's final flush.
            // SAFETY: registering a plain extern "C" function.
            unsafe { libc::atexit(stop_at_exit) };
        }
        Err(e) => diag::warn(&format!(
            "cannot start the sampler thread ({e}); no samples"
        )),
    }
}

extern "C" fn stop_at_exit() {
    crate::diag::guarded(|| {
        // The application ends here, before any wait for the sampler thread.
        state::stamp_exit();
        stop();
    });
}

fn run(every: Duration) {
    let mut st = state();
    let mut next_tick = Instant::now();
    loop {
        // Once a caller gave up waiting (`STUCK`), no job is done late:
        // `Finalize`'s MPI_T calls after `MPI_Finalize` crash Open MPI.
        for (number, job) in std::mem::take(&mut st.jobs) {
            if STUCK.load(Ordering::Relaxed) {
                return;
            }
            run_job(&mut st, job);
            JOBS_DONE.store(number, Ordering::Release);
        }
        if st.stop || STUCK.load(Ordering::Relaxed) {
            return;
        }
        if Instant::now() >= next_tick {
            sample_all(&mut st, false);
            // OpenMP threads are bound at their first fork: their masks, read
            // while the run lasts (a thread gone by exit keeps its reading).
            crate::state::sample_thread_cpus();
            next_tick = Instant::now() + every;
        }
        if st.jobs.is_empty() {
            let wait = next_tick.saturating_duration_since(Instant::now());
            st = WAKE
                .wait_timeout(st, wait)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

/// Take a last sample, stop the thread and close every sampler. Call before
/// the final flush of the buffers (session exit path).
pub fn stop() {
    // A forked child has a copy of this state but not the thread (nor, maybe, a
    // usable lock): joining would wait forever. It only leaves.
    let owner = OWNER_PID.load(Ordering::Relaxed);
    if owner != 0 && owner != std::process::id() {
        return;
    }
    let now = clock::now_ns();
    // The last readings, on the thread; one stuck in a read is left behind
    // (the process's exit ends it), with the samples read before.
    if !on_thread(Job::Last { now }) {
        return;
    }
    let handle = match state_within() {
        Some(mut st) => {
            st.stop = true;
            st.thread.take()
        }
        None => return,
    };
    WAKE.notify_all();
    // It has done its last job and leaves.
    if let Some(h) = handle {
        let _ = h.join();
    }
}

/// Before an exec puts another program in this process's place: every
/// sampler's reading at the program's end, as at exit ([`stop`]): without
/// it, what the counters (RAPL's energy) moved since the last period's
/// readings would be missing from the program's series. The thread goes
/// on: the exec may fail and the program run on. Nothing in a forked
/// child, which has no sampler thread of its own.
pub fn sample_before_exec() {
    if OWNER_PID.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    on_thread(Job::Exec {
        now: clock::now_ns(),
    });
}

/// When the process starts recording (the writer thread's start): every
/// sampler's first reading. The thread's own first tick, at the library's
/// start, comes before anything is recorded and is not kept (a process that
/// records nothing leaves no trace); the next is a period away
/// (`HYSCOPE_SAMPLE_MS`): a counter read only at the program's end would
/// give it no energy.
///
/// Handed to the thread without waiting for it: this runs on the writer
/// thread as it starts, and the readings' samples go to the writer (a
/// reading stuck in a wedged driver's file must not hold the writer up
/// either). Skipped when the samplers' lock is busy: the thread is then
/// reading already.
pub fn first_readings() {
    if OWNER_PID.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    let Ok(mut st) = STATE.try_lock() else {
        return;
    };
    if !thread_runs(&st) || STUCK.load(Ordering::Relaxed) {
        return; // its own first tick comes after this, and is kept
    }
    queue(
        &mut st,
        Job::First {
            now: clock::now_ns(),
        },
    );
    drop(st);
    WAKE.notify_all();
}

/// Just before `PMPI_Init`: RSS without the MPI runtime.
pub fn on_mpi_init_begin() {
    if interval().is_some() {
        // MPI_T opens at the end of MPI_Init, after the job's first manifest is
        // written, and what it found reaches the manifest at MPI_Finalize: a
        // job that ends before then must not read "no MPI_Init".
        mpit_unavailable(MPIT_NOT_REPORTED);
    }
    let rss = memory::current_rss();
    state::with_rank_info(|r| r.rss_before_init = rss);
    if let Some(v) = rss {
        record(clock::now_ns(), "mem.vmrss", -1, v as f64);
    }
}

/// Just after `PMPI_Init` succeeded: RSS with the MPI runtime and the node's
/// RAPL reader (the MPI_T performance variables follow: `mpi::mpit_background`).
pub fn on_mpi_init_end() {
    let rss = memory::current_rss();
    state::with_rank_info(|r| r.rss_after_init = rss);
    if let Some(v) = rss {
        record(clock::now_ns(), "mem.vmrss", -1, v as f64);
    }
    crate::diag::guarded(|| {
        // Sampling disabled (the same setting on every rank, so no rank is left
        // alone in the collective election).
        if interval().is_none() {
            return;
        }
        let (leader, readers) = match node::elect() {
            Ok(x) => x,
            Err(e) => {
                diag::warn(&format!(
                    "node leader election failed ({e}); rank 0 reads RAPL"
                ));
                let me = state::rank();
                (me == 0, vec![0])
            }
        };
        // The election above was the collective part; a stuck sampler
        // thread leaves this rank without its RAPL reading.
        on_thread(Job::Elect {
            leader,
            readers: readers.clone(),
            now: clock::now_ns(),
        });
        let rapl_info =
            state::with_manifest(|m| m.samplers.iter().find(|x| x.name == "rapl").cloned());
        if let Some(mut info) = rapl_info.filter(|i| i.available) {
            info.ranks = readers.clone();
            info.reason = format!(
                "{}; one reader per node (MPI_Comm_split_type SHARED)",
                info.reason
            );
            publish(info, &[]);
        }
        mpit_unavailable("MPI_T was still being opened after MPI_Init when the trace was written");
    });
}

/// The `mpi_t` sampler's status from `MPI_Init` until MPI_T says what it offers.
pub const MPIT_NOT_REPORTED: &str =
    "not reported: the job ended before MPI_Finalize, where the ranks say whether MPI_T opened";

/// The `mpi_t` sampler's manifest entry while it has no MPI_T, or when
/// MPI_T was not opened in time (`mpi::mpit_background`): `reason` says why.
pub fn mpit_unavailable(reason: &str) {
    publish(
        SamplerInfo {
            name: "mpi_t".into(),
            available: false,
            reason: reason.into(),
            ranks: Vec::new(),
        },
        &[],
    );
}

/// Whether the sampler thread runs (`HYSCOPE_SAMPLE_MS` is not 0 and it was started).
pub fn sampling() -> bool {
    state_within().is_some_and(|st| st.thread.is_some() && !st.stop)
}

/// The `mpi_t` sampler, opened after the real MPI_Init (`mpi::mpit_background`). Closed at once when sampling has stopped meanwhile.
pub fn add_mpit(mut m: mpit::MpiT) {
    let Some(mut st) = state_within().filter(|st| !st.stop) else {
        m.close();
        return;
    };
    register(&mut st, Box::new(m));
}

/// Just before `PMPI_Finalize`: the last MPI_T reads, then MPI_T is closed
/// (never after MPI_Finalize).
pub fn on_mpi_finalize_begin() {
    crate::diag::guarded(|| {
        // A stuck sampler thread: it reads no other (`STUCK`), and MPI_T's
        // handles stay open (freeing them is the thread's job).
        on_thread(Job::Finalize {
            now: clock::now_ns(),
        });
    });
}

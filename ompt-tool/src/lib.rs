//! # hyscope-ompt
//!
//! The OMPT adapter: `ompt_start_tool` logic, capability probing, and the
//! callbacks of LLVM's OpenMP runtime turned into intervals ([`OmpRecord`]s)
//! on a per-thread stack, exactly as documented on
//! [`hyscope_format::OmpKind`].
//!
//! The crate does not store anything itself: every finished interval goes to
//! a [`Sink`] (the collector's buffers in `libhyscope.so`, or a recording
//! sink in tests), set once with [`set_sink`]; where the sink hands out a
//! per-thread spool stream ([`Sink::omp_stream`]) the interval is encoded
//! into it inline. The collector exports the C symbol `ompt_start_tool` and
//! forwards to [`start_tool`].
//!
//! The hot path's two shared pieces live here too, because the callbacks use
//! them inline: [`clock`] (the calibrated clock the collector installs) and
//! [`thread_ptr!`] (a per-thread pointer in initial-exec TLS).
//!
//! Ids: parallel regions and tasks get process-unique ids
//! `(thread_index + 1) << 40 | n` (n counts per thread), stored in the
//! runtime's `ompt_data_t` of the region or task; explicit tasks have bit 62
//! set as well, which is how a task switch tells them from implicit tasks.
//!
//! ## Raw truth, and what the analyzer must normalise
//!
//! Intervals are recorded exactly when libomp dispatches the callbacks
//! (docs/platform.md, "Quirks"):
//! - A worker's join-barrier `sync_wait`/`sync` (variant 9, implicit parallel)
//!   and its `implicit_task` end when the worker wakes for the next region or at
//!   shutdown. Clip them at the `parallel` end of the same `parallel_id` (on the
//!   encountering thread), otherwise serial time is booked as barrier wait.
//! - An implicit task ends at the end of its join barrier (`sync`/`sync_wait`
//!   variant 9) where libomp 19 reports one: the primary's `implicit_task` end
//!   is dispatched only after the runtime took its fork/join lock, and that
//!   join work belongs to the region's fork/join overhead, not to the task
//!   (`callbacks::enter`). Without a join barrier (serialized regions,
//!   `HYSCOPE_GROUPS` without `sync`, libomp < 19) it is the dispatch time.
//! - Serialized regions (`if(0)`, team size 1) have no implicit barrier.
//! - The initial thread's `thread`/`initial_task` intervals, and workers' last
//!   ones, end during process shutdown.
//! - Chunks (`chunk`) end at the next dispatch or at the loop's end on that
//!   thread, so they include the scheduling cost of getting the next chunk.
//!   `chunk_start` is the loop variable's first value as the runtime reports it.
//! - Profile mode: several `summary` rows with the same (thread, variant,
//!   flags, codeptr) can appear (one per flush at exit); add them up.
//!
//! What is deliberately not recorded: `nest_lock` re-acquisitions of an
//! already owned nest lock (the outer acquire/release pair is recorded),
//! `error` (registered, so the capability table lists it); `control_tool` applies
//! `omp_control_tool` (`apply_control`).

pub mod callbacks;
pub mod clock;
pub mod ffi;
mod state;
mod tls;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use hyscope_format::settings::{self, Mode, Settings};
use hyscope_format::{OmpKind, OmpRecord, OpenMpInfo, spool::block::Stream};

pub use state::threads_seen;

/// Where finished intervals go.
pub trait Sink: Sync {
    /// The collector's clock, ns.
    fn now_ns(&self) -> i64;
    /// Store one finished interval (called on the thread it belongs to, except
    /// for profile summaries written at exit). Must not block or allocate.
    fn record(&self, rec: OmpRecord);
    /// An opaque handle to the calling thread's storage, asked once per thread
    /// when the adapter first sees it, and passed back to [`Sink::record_on`]
    /// (every interval for a sink without [`Sink::omp_stream`], otherwise
    /// only when the stream's block is full), so that the sink need not look
    /// up its own per-thread state.
    fn thread_handle(&self) -> usize {
        0
    }
    /// Store one finished interval of the thread whose handle this is (called
    /// on that thread). Must not block or allocate.
    fn record_on(&self, _handle: usize, rec: &OmpRecord) {
        self.record(*rec);
    }
    /// The calling thread's spool stream, asked once per thread like
    /// [`Sink::thread_handle`]: the adapter then encodes each interval into it
    /// inline ([`hyscope_format::spool::block::Stream::push`]) and calls
    /// [`Sink::record_on`] only when that finds no room (the sink hands the
    /// full block off and takes a new one). Only that thread pushes into it.
    /// `None` (the default): every interval goes to `record_on`.
    fn omp_stream(&self) -> Option<&'static Stream<OmpRecord>> {
        None
    }
    /// Index of the calling thread (first call happens in `thread_begin`).
    fn thread_index(&self) -> u32;
    /// The calling thread's count of open implicit tasks (> 0: inside a
    /// parallel region), handed over once when the adapter first sees the
    /// thread, right after [`Sink::thread_index`]. A sink may keep it with its
    /// own per-thread state and answer "in parallel?" without asking the
    /// adapter (one thread-local lookup less on the MPI wrappers' hot path).
    fn bind_parallel_depth(&self, _depth: &'static AtomicU32) {}
    /// Report a problem once (`hyscope: ...` on stderr).
    fn warn(&self, msg: &str);
    /// The runtime shut the tool down (OMPT finalize): flush everything.
    fn finalize(&self);
    /// The application called `omp_control_tool` (after the adapter applied
    /// it: while paused or ended, no interval is emitted).
    fn control(&self, _command: Control) {}
}

/// An `omp_control_tool` command (OpenMP 5.2 §19.2 `omp_control_tool`,
/// `ompt_control_tool_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// `omp_control_tool_start` (1): resume after a pause.
    Start,
    /// `omp_control_tool_pause` (2): record nothing until `Start`.
    Pause,
    /// `omp_control_tool_flush` (3): write what is buffered.
    Flush,
    /// `omp_control_tool_end` (4): record nothing from now on.
    End,
}

impl Control {
    pub fn from_command(command: u64) -> Option<Control> {
        match command {
            1 => Some(Control::Start),
            2 => Some(Control::Pause),
            3 => Some(Control::Flush),
            4 => Some(Control::End),
            _ => None,
        }
    }
}

/// Recording as `omp_control_tool` left it: running, paused or ended.
static CONTROL: AtomicU32 = AtomicU32::new(RUNNING);
const RUNNING: u32 = 0;
const PAUSED: u32 = 1;
const ENDED: u32 = 2;
/// The recorded kinds while paused or ended (the emitted kinds are none then).
static KINDS_BEFORE_PAUSE: AtomicU32 = AtomicU32::new(0);

/// Apply an `omp_control_tool` command: pause and end empty the recorded
/// kinds, the one test every emitted interval already passes
/// (`kind_enabled`), so a pause costs the hot path nothing; start restores
/// them. Then the sink hears of it. False: the command changes nothing
/// (start while running, anything after end but flush).
pub(crate) fn apply_control(command: Control) -> bool {
    let changed = match command {
        Control::Pause => CONTROL
            .compare_exchange(RUNNING, PAUSED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok_and(|_| {
                KINDS_BEFORE_PAUSE.store(KINDS.swap(0, Ordering::AcqRel), Ordering::Release);
                true
            }),
        Control::Start => CONTROL
            .compare_exchange(PAUSED, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok_and(|_| {
                KINDS.store(
                    KINDS_BEFORE_PAUSE.load(Ordering::Acquire),
                    Ordering::Release,
                );
                true
            }),
        Control::End => match CONTROL.swap(ENDED, Ordering::AcqRel) {
            RUNNING => {
                KINDS_BEFORE_PAUSE.store(KINDS.swap(0, Ordering::AcqRel), Ordering::Release);
                true
            }
            PAUSED => true,
            _ => false,
        },
        Control::Flush => true,
    };
    if changed && let Some(s) = sink() {
        s.control(command);
    }
    changed
}

static SINK: OnceLock<&'static dyn Sink> = OnceLock::new();

/// Set the sink (once per process; later calls are ignored).
pub fn set_sink(sink: &'static dyn Sink) {
    let _ = SINK.set(sink);
}

#[inline]
pub(crate) fn sink() -> Option<&'static dyn Sink> {
    SINK.get().copied()
}

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    /// `HYSCOPE_MODE=profile`: aggregate per (kind, variant, codeptr, thread)
    /// and write [`OmpKind::Summary`] rows at exit instead of intervals; no
    /// loop chunks.
    pub profile: bool,
    /// Bit `1 << kind` set for every [`OmpKind`] to record.
    pub kinds: u32,
}

impl Default for ToolConfig {
    fn default() -> Self {
        ToolConfig::from_settings(&Settings::from_lookup(|_| None).0)
    }
}

impl ToolConfig {
    /// From the collector's validated settings: `HYSCOPE_MODE`,
    /// `HYSCOPE_GROUPS` and `HYSCOPE_DISPATCH`.
    pub fn from_settings(settings: &Settings) -> ToolConfig {
        let profile = settings.mode == Mode::Profile;
        let mut kinds = settings.groups;
        // Profile mode records no loop chunks: their totals per loop say
        // nothing the loop's own `work` summary does not (the chunks of a loop
        // tile its time), and the dispatch callback is by far the most
        // frequent one, so not registering it is most of profile mode's saving.
        if profile || !settings.dispatch {
            kinds &= !(1 << OmpKind::Chunk as u32);
        }
        ToolConfig { profile, kinds }
    }

    /// From the three variables' values, with the warnings for those not valid.
    pub fn from_values(
        mode: Option<&str>,
        groups: Option<&str>,
        dispatch: Option<&str>,
    ) -> (ToolConfig, Vec<String>) {
        let given = [
            (settings::MODE.var, mode),
            (settings::GROUPS.var, groups),
            (settings::DISPATCH.var, dispatch),
        ];
        let (settings, warnings) = Settings::from_lookup(|var| {
            given
                .iter()
                .find(|(v, _)| *v == var)
                .and_then(|(_, x)| x.map(str::to_string))
        });
        (ToolConfig::from_settings(&settings), warnings)
    }

    pub fn records(&self, kind: OmpKind) -> bool {
        self.kinds & (1 << kind as u32) != 0
    }
}

static KINDS: AtomicU32 = AtomicU32::new(u32::MAX);
static PROFILE: AtomicBool = AtomicBool::new(false);
/// A loop `work` event without a schedule (libomp < 19) was seen.
pub(crate) static GENERIC_LOOP_SEEN: AtomicBool = AtomicBool::new(false);
/// The runtime has started a team: its initialisation, and the creation of
/// the first team's threads, are over ([`first_team_started`]).
pub(crate) static FIRST_TEAM: AtomicBool = AtomicBool::new(false);

/// Whether the OpenMP runtime has started its first team (a primary thread's
/// implicit task began). Until then the runtime's start-up may still call
/// the dynamic loader (`dlsym`), which waits while another thread is in
/// `dlopen`: the collector holds back its own `dlopen`-heavy work until this
/// is true (`collector/src/mpi/mpit_background.rs`).
pub fn first_team_started() -> bool {
    FIRST_TEAM.load(Ordering::Acquire)
}

/// Apply a configuration (before the runtime starts calling back).
pub fn configure(config: &ToolConfig) {
    KINDS.store(config.kinds, Ordering::Relaxed);
    PROFILE.store(config.profile, Ordering::Relaxed);
}

#[inline]
pub(crate) fn kind_enabled(kind: u8) -> bool {
    KINDS.load(Ordering::Relaxed) & (1 << kind) != 0
}

/// Whether every kind of `mask` (bit `1 << kind`) is recorded.
#[inline]
pub(crate) fn kinds_enabled(mask: u32) -> bool {
    KINDS.load(Ordering::Relaxed) & mask == mask
}

#[inline]
pub(crate) fn profile_mode() -> bool {
    PROFILE.load(Ordering::Relaxed)
}

/// What the runtime told us at start and initialisation.
#[derive(Default)]
pub(crate) struct RuntimeInfo {
    pub version: String,
    pub omp_version: u32,
    pub path: String,
    pub capabilities: BTreeMap<String, i32>,
    pub started: bool,
}

static RUNTIME: Mutex<RuntimeInfo> = Mutex::new(RuntimeInfo {
    version: String::new(),
    omp_version: 0,
    path: String::new(),
    capabilities: BTreeMap::new(),
    started: false,
});

pub(crate) fn runtime_info<R>(f: impl FnOnce(&mut RuntimeInfo) -> R) -> R {
    f(&mut RUNTIME.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The OpenMP part of the manifest, once the runtime initialised the tool.
pub fn openmp_info() -> Option<OpenMpInfo> {
    runtime_info(|r| {
        if !r.started {
            return None;
        }
        let mut missing = Vec::new();
        for (name, &result) in r.capabilities.iter() {
            if result <= ffi::OMPT_SET_NEVER {
                let what = match name.as_str() {
                    "ompt_callback_dispatch" => "no loop chunks",
                    "ompt_callback_work" => "no worksharing constructs",
                    "ompt_callback_sync_region" => "no barriers or taskwaits",
                    "ompt_callback_sync_region_wait" => "no barrier wait times",
                    "ompt_callback_mutex_acquire" | "ompt_callback_mutex_acquired" => {
                        "no mutex waits"
                    }
                    "ompt_callback_reduction" => "no reductions",
                    "ompt_callback_masked" => "no masked/master constructs",
                    _ => "not reported",
                };
                let how = if result == ffi::OMPT_SET_ERROR {
                    "error"
                } else {
                    "never"
                };
                missing.push(format!("{what} ({name}: {how})"));
            }
        }
        if GENERIC_LOOP_SEEN.load(Ordering::Relaxed) {
            missing.push(
                "no loop schedule kinds (work callbacks report ompt_work_loop only)".to_string(),
            );
        }
        Some(OpenMpInfo {
            runtime_version: r.version.clone(),
            runtime_path: r.path.clone(),
            ompt_version: r.omp_version,
            capabilities: r.capabilities.clone(),
            missing,
        })
    })
}

/// True when the calling thread is inside an OpenMP parallel region (it runs an
/// implicit task of a region, serialized regions included).
#[inline]
pub fn in_parallel() -> bool {
    state::in_parallel()
}

/// Called by the collector's exit path before its final flush: hand the
/// intervals threads hold back to the sink and, in profile mode, the
/// aggregates of every thread as summary rows (and reset them, so a later
/// call adds only what came in between).
pub fn before_exit_flush() {
    state::release_all_held();
    if profile_mode() {
        state::emit_all_summaries();
    }
    static REPORTED: AtomicBool = AtomicBool::new(false);
    if let Some(s) = sink().filter(|_| !REPORTED.swap(true, Ordering::Relaxed)) {
        let overflows = state::STACK_OVERFLOWS.load(Ordering::Relaxed);
        if overflows > 0 {
            s.warn(&format!(
                "{overflows} OpenMP intervals nested deeper than {} were not recorded",
                state::STACK_CAP
            ));
        }
        let open = state::UNTERMINATED.load(Ordering::Relaxed);
        if open > 0 {
            s.warn(&format!(
                "{open} OpenMP intervals had no end event from the runtime and were not recorded"
            ));
        }
    }
}

/// Encode the intervals the calling thread holds back (see
/// `ThreadState::close_held`), for the collector's flushes that do not run the
/// exit path (before and after `MPI_Finalize`): the thread that calls them is
/// the one whose last region's intervals are held.
pub fn release_held_of_this_thread() {
    state::release_held_of_this_thread();
}

/// (thread index, kernel thread id) of every thread the adapter has seen, in
/// the order they first called back: whose affinity the collector reads.
pub fn thread_ids() -> Vec<(u32, i32)> {
    state::thread_ids()
}

/// The lock of the threads' states, to hold across a `fork` (the
/// collector's `forking` says where it comes in its lock order): whoever
/// holds it may hand intervals to the sink.
pub fn hold_states_for_fork() -> Box<dyn std::any::Any> {
    state::hold_states_for_fork()
}

/// The locks of the thread ids and of the runtime's description, taken by
/// no one who holds another lock, to hold across a `fork`.
pub fn hold_leaves_for_fork() -> [Box<dyn std::any::Any>; 2] {
    [
        state::hold_thread_ids_for_fork(),
        Box::new(RUNTIME.lock().unwrap_or_else(|p| p.into_inner())),
    ]
}

/// Called in a forked child right after `fork` (see the collector's fork
/// handler): forget the intervals the parent's threads held back.
pub fn forget_parents_held() {
    state::forget_all_held();
}

/// Every interval the threads hold back (`ThreadState::close_held`), for a
/// crash handler: no allocation, and no waiting (when another thread holds
/// the list of thread states, nothing).
pub fn for_each_held(f: impl FnMut(&OmpRecord)) {
    state::for_each_held(f);
}

pub use callbacks::{module_of, start_tool};

//! MPI_T opened where it costs the application least.
//!
//! Open MPI's `MPI_T_init_thread` registers every component of every framework
//! again, including the ones `MPI_Init` had closed. Where that loads nothing
//! new ([`super::keep_loaded::mpi_t_opens_quickly`]: Debian's Open MPI, whose
//! slow libraries the collector keeps loaded from `MPI_Init` on, and MPICH)
//! it takes 5–8 ms of CPU, mostly `dlopen` of components and their variables'
//! registration; [`begin`] then does the MPI_T work at once, at the end of
//! `MPI_Init` on the application's thread: the performance variables of the
//! `mpi_t` sampler, and on rank 0 the control variables of the manifest (read
//! while the sampler holds MPI_T, so they cost no second initialisation).
//! A thread beside the application would take the same CPU out of the
//! application's own time wherever its threads occupy every core: LULESH
//! with 8 ranks on 2 cores ran ≈ 10 % slower by its own timer that way
//! (`benchmarks/log.md`). `MPI_Init` returns that much later instead, and its
//! row ends there (`RankInfo::init_ns` says how much of it is the collector's).
//!
//! Where MPI_T would load libraries `MPI_Init` did not (`OMPI_MCA_pml=ob1`
//! with the `psm` components installed, say), it takes ≈ 0.2 s, nearly all
//! of it asleep (libpsm2 and libpsm_infinipath calibrate their timers when
//! they are loaded): one short-lived thread per process does the MPI_T work
//! after `MPI_Init` returns, and `MPI_Finalize` waits for it before the
//! sampler's last read, since MPI_T must be released before the real
//! `MPI_Finalize`: a job shorter than the initialisation waits there for
//! the rest of it, for at most [`FINISH_WAIT`]. An MPI_T that has not opened
//! by then (a component stuck in its constructor) is left to its thread, and
//! `MPI_Finalize` goes on with one warning: the job ends rather than hangs,
//! without the `mpi_t` sampler and the control variables, which the
//! manifest says; what that thread opens later it neither reads nor
//! closes (`MPI_T_finalize` after `MPI_Finalize` crashes Open MPI).
//!
//! `MPI_T_init_thread` holds the dynamic loader's lock while those libraries
//! load (their constructors run under it), and any thread that calls the
//! loader meanwhile (`dlsym`, `dladdr`) waits for it. An OpenMP runtime
//! starting up does: LLVM's libomp looks its tool up with `dlsym` at its
//! first construct, which in most MPI+OpenMP programs comes right after
//! `MPI_Init`; so a rank's first parallel region took 0.22 s instead of
//! 0.01 s. The thread therefore waits until the runtime has started its first
//! team (`hyscope_ompt::first_team_started`), for at most
//! [`FIRST_TEAM_WAIT`], and not at all when no LLVM or Intel OpenMP runtime
//! is loaded or once `MPI_Finalize` needs the result.
//!
//! MPI_T is initialised with `MPI_THREAD_MULTIPLE` by the sampler
//! (`samplers::mpit`), which already reads the variables from its own thread
//! while the application calls MPI.

use std::ffi::CStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::job;
use crate::{diag, samplers};

static WORKER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

/// `MPI_Finalize` waits for the MPI_T work: it starts at once.
static FINISHING: AtomicBool = AtomicBool::new(false);

/// What became of the background MPI_T work's results. Changed under the
/// lock only, so that the work either hands them over before `MPI_Finalize`
/// goes on, or drops them once it has gone on ([`FINISH_WAIT`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Handover {
    Pending,
    Done,
    Abandoned,
}

static HANDOVER: Mutex<Handover> = Mutex::new(Handover::Pending);

/// The longest `MPI_Finalize` waits for the MPI_T work: far beyond the 0.2 s
/// it takes where it loads libraries, short of a batch job's time limit.
const FINISH_WAIT: Duration = Duration::from_secs(10);

/// How often `MPI_Finalize` looks whether the MPI_T work is done.
const FINISH_POLL: Duration = Duration::from_millis(1);

/// The longest the MPI_T work waits for the OpenMP runtime's first team: a
/// program whose first parallel region comes later has its runtime started
/// by then, or calls no OpenMP at all.
const FIRST_TEAM_WAIT: Duration = Duration::from_secs(1);

/// How often the waiting thread looks.
const FIRST_TEAM_POLL: Duration = Duration::from_millis(5);

fn worker() -> std::sync::MutexGuard<'static, Option<JoinHandle<()>>> {
    WORKER.lock().unwrap_or_else(|p| p.into_inner())
}

/// After `MPI_Init` (and the samplers' election): the MPI_T work, here when
/// MPI_T opens quickly, else in the background (module documentation), or
/// here too when no thread can be started.
pub fn begin() {
    let pvars = samplers::sampling();
    // Without sampling, only rank 0 reads MPI_T (the control variables).
    if !pvars && super::world_rank() != 0 {
        return;
    }
    if super::keep_loaded::mpi_t_opens_quickly() {
        open_now(pvars);
        return;
    }
    let spawned = crate::threads::spawn("hyscope-mpit", move || diag::guarded(|| open(pvars)));
    match spawned {
        Ok(h) => *worker() = Some(h),
        Err(_) => open_now(pvars),
    }
}

/// Before the real `MPI_Finalize`: wait until the MPI_T work is done, for
/// at most [`FINISH_WAIT`] (module documentation).
pub fn finish() {
    FINISHING.store(true, Ordering::Release);
    let Some(h) = worker().take() else { return };
    let start = Instant::now();
    while !h.is_finished() {
        if start.elapsed() >= FINISH_WAIT {
            let mut handover = handover();
            if *handover == Handover::Done {
                // Handed over just now: the thread is returning.
                break;
            }
            *handover = Handover::Abandoned;
            drop(handover);
            let waited = FINISH_WAIT.as_secs();
            diag::warn(&format!(
                "MPI_T had not opened {waited} s after MPI_Finalize was called; MPI_Finalize \
                 goes on without it (no mpi_t samples or MPI control variables in the trace)"
            ));
            samplers::mpit_unavailable(&format!(
                "MPI_T had not opened {waited} s after MPI_Finalize was called"
            ));
            return;
        }
        std::thread::sleep(FINISH_POLL);
    }
    let _ = h.join();
}

fn handover() -> std::sync::MutexGuard<'static, Handover> {
    HANDOVER.lock().unwrap_or_else(|p| p.into_inner())
}

/// The background thread's MPI_T work, handed over unless `MPI_Finalize`
/// went on without it. Its MPI_T calls are made before the lock is taken,
/// so that a stuck one never holds `MPI_Finalize` up beyond [`FINISH_WAIT`].
fn open(pvars: bool) {
    wait_for_openmp_start();
    let (mpit, cvars) = open_mpi_t(pvars);
    let mut handover = handover();
    if *handover == Handover::Abandoned {
        // Neither read nor closed (module documentation).
        std::mem::forget(mpit);
        return;
    }
    hand_over(mpit, cvars);
    *handover = Handover::Done;
}

/// The MPI_T work on the calling thread.
fn open_now(pvars: bool) {
    let (mpit, cvars) = open_mpi_t(pvars);
    hand_over(mpit, cvars);
}

/// The sampler's MPI_T, and on rank 0 the control variables: with the
/// sampler's MPI_T open, those cost no second initialisation (without
/// sampling, rank 0 pays it here).
fn open_mpi_t(pvars: bool) -> (Option<samplers::mpit::MpiT>, Option<Cvars>) {
    let mpit = pvars.then(samplers::mpit::MpiT::open);
    (mpit, job::rank0_control_variables())
}

type Cvars = std::collections::BTreeMap<String, String>;

/// The control variables to the manifest, the sampler's MPI_T to the samplers.
fn hand_over(mpit: Option<samplers::mpit::MpiT>, cvars: Option<Cvars>) {
    job::record_control_variables(cvars);
    if let Some(m) = mpit {
        samplers::add_mpit(m);
    }
}

/// Until the OpenMP runtime has started its first team (see the module's
/// documentation), `MPI_Finalize` is called, or [`FIRST_TEAM_WAIT`] passed.
fn wait_for_openmp_start() {
    if !llvm_openmp_loaded() {
        return;
    }
    let start = Instant::now();
    while !hyscope_ompt::first_team_started()
        && !FINISHING.load(Ordering::Acquire)
        && start.elapsed() < FIRST_TEAM_WAIT
    {
        std::thread::sleep(FIRST_TEAM_POLL);
    }
}

/// Whether LLVM's (`libomp`) or Intel's (`libiomp5`) OpenMP runtime is
/// loaded: the ones that start the OMPT tool with the loader's help. GCC's
/// libgomp starts when it is loaded, and calls no tool.
fn llvm_openmp_loaded() -> bool {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        found: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid entry; its name is null or a
        // NUL-terminated string; `found` is the bool below.
        unsafe {
            let name = (*info).dlpi_name;
            if name.is_null() {
                return 0;
            }
            let name = CStr::from_ptr(name).to_bytes();
            let file = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
            if file.starts_with(b"libomp.so") || file.starts_with(b"libiomp5.so") {
                *found.cast::<bool>() = true;
                return 1;
            }
        }
        0
    }
    let mut found = false;
    // SAFETY: the callback only reads the entries and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut found).cast()) };
    found
}

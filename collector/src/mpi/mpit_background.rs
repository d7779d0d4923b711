//! MPI_T opened off the application's critical path.
//!
//! Open MPI's `MPI_T_init_thread` registers every component of every framework
//! again, including the ones `MPI_Init` had closed: on Debian's Open MPI 4.1 that
//! is ≈ 0.2 s per process, nearly all of it asleep (libpsm2 and libpsm_infinipath
//! calibrate their timers when they are loaded, with or without their hardware).
//! Done in `MPI_Init`, every rank of every recorded job paid it before the
//! application started. So one short-lived thread per process does the MPI_T
//! work after `MPI_Init` returns: the performance variables of the `mpi_t`
//! sampler, and on rank 0 the control variables of the manifest (read while the
//! sampler holds MPI_T, so they cost no second initialisation). `MPI_Finalize`
//! waits for the thread before the sampler's last read, since MPI_T must be
//! released before the real `MPI_Finalize`: a job shorter than the
//! initialisation waits there for the rest of it. Where `MPI_Init` loads
//! those libraries itself, [`super::keep_loaded`] keeps them loaded from
//! then on, and the initialisation takes milliseconds.
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

/// The longest the MPI_T work waits for the OpenMP runtime's first team: a
/// program whose first parallel region comes later has its runtime started
/// by then, or calls no OpenMP at all.
const FIRST_TEAM_WAIT: Duration = Duration::from_secs(1);

/// How often the waiting thread looks.
const FIRST_TEAM_POLL: Duration = Duration::from_millis(5);

fn worker() -> std::sync::MutexGuard<'static, Option<JoinHandle<()>>> {
    WORKER.lock().unwrap_or_else(|p| p.into_inner())
}

/// After `MPI_Init` (and the samplers' election): start the MPI_T work in the
/// background, or do it here when no thread can be started.
pub fn begin() {
    let pvars = samplers::sampling();
    let spawned = std::thread::Builder::new()
        .name("hyscope-mpit".into())
        .spawn(move || diag::guarded(|| open(pvars)));
    match spawned {
        Ok(h) => *worker() = Some(h),
        Err(_) => open(pvars),
    }
}

/// Before the real `MPI_Finalize`: wait until the MPI_T work is done.
pub fn finish() {
    FINISHING.store(true, Ordering::Release);
    let handle = worker().take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

fn open(pvars: bool) {
    wait_for_openmp_start();
    let mpit = pvars.then(samplers::mpit::MpiT::open);
    // With the sampler's MPI_T open, the control variables cost no second
    // initialisation (without sampling, rank 0 pays it here, in the background).
    job::read_control_variables();
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

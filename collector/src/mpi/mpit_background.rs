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
//! initialisation waits there for the rest of it.
//!
//! MPI_T is initialised with `MPI_THREAD_MULTIPLE` by the sampler
//! (`samplers::mpit`), which already reads the variables from its own thread
//! while the application calls MPI.

use std::sync::Mutex;
use std::thread::JoinHandle;

use super::job;
use crate::{diag, samplers};

static WORKER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

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
    let handle = worker().take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

fn open(pvars: bool) {
    let mpit = pvars.then(samplers::mpit::MpiT::open);
    // With the sampler's MPI_T open, the control variables cost no second
    // initialisation (without sampling, rank 0 pays it here, in the background).
    job::read_control_variables();
    if let Some(m) = mpit {
        samplers::add_mpit(m);
    }
}

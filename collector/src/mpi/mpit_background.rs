//! MPI_T opened off the application's critical path.
//!
//! Open MPI's `MPI_T_init_thread` registers every component of every framework
//! again, including the ones `MPI_Init` had closed: on Debian's Open MPI 4.1 that
//! is ≈ 0.2 s per process, much of it calibrating timers (libpsm2 and
//! libpsm_infinipath, when they are loaded, with or without their hardware).
//! Done in `MPI_Init`, every rank of every recorded job paid it before the
//! application started. So one short-lived thread per process does the MPI_T
//! work after `MPI_Init` returns: on rank 0 the control variables of the
//! manifest at once, and the performance variables of the `mpi_t` sampler
//! only once the job has run for [`PVARS_AFTER`]: a shorter job has little
//! to sample, and with every rank of a node opening MPI_T at once on cores the
//! application uses, it paid ≈ 0.2 s per 4 ranks on 2 cores. Rank 0 so
//! initialises MPI_T twice in a longer job: holding it from the control
//! variables to the sampler's opening made Open MPI leave a rank's
//! shared-memory segment mapped after `MPI_Finalize` (`samplers_e2e`), a
//! change of the application's memory the collector must not make.
//! `MPI_Finalize` wakes the thread and waits for it before
//! the sampler's last read, since MPI_T must be released before the real
//! `MPI_Finalize`: a job shorter than the control variables' reading waits
//! there for the rest of it.
//!
//! MPI_T is initialised with `MPI_THREAD_MULTIPLE` by the sampler
//! (`samplers::mpit`), which already reads the variables from its own thread
//! while the application calls MPI.

use std::sync::{Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::job;
use crate::{diag, samplers};

/// How long after `MPI_Init` the sampler's performance variables are opened.
pub const PVARS_AFTER: Duration = Duration::from_secs(1);

static WORKER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);
/// Set by [`finish`]: `MPI_Finalize` has begun.
static FINALIZING: Mutex<bool> = Mutex::new(false);
static WAKE: Condvar = Condvar::new();

fn worker() -> std::sync::MutexGuard<'static, Option<JoinHandle<()>>> {
    WORKER.lock().unwrap_or_else(|p| p.into_inner())
}

fn finalizing() -> std::sync::MutexGuard<'static, bool> {
    FINALIZING.lock().unwrap_or_else(|p| p.into_inner())
}

/// After `MPI_Init` (and the samplers' election): start the MPI_T work in the
/// background, or do the control variables here when no thread can be started.
pub fn begin() {
    let pvars = samplers::sampling();
    let spawned = std::thread::Builder::new()
        .name("hyscope-mpit".into())
        .spawn(move || diag::guarded(|| open(pvars)));
    match spawned {
        Ok(h) => *worker() = Some(h),
        Err(_) => job::read_control_variables(),
    }
}

/// Before the real `MPI_Finalize`: wake the MPI_T work and wait until it is done.
pub fn finish() {
    *finalizing() = true;
    WAKE.notify_all();
    let handle = worker().take();
    if let Some(h) = handle {
        let _ = h.join();
    }
}

/// Wait until the job has run for `d` (true) or `MPI_Finalize` began (false).
fn runs_for(d: Duration) -> bool {
    let deadline = std::time::Instant::now() + d;
    let mut done = finalizing();
    loop {
        if *done {
            return false;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        done = WAKE
            .wait_timeout(done, left)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

fn open(pvars: bool) {
    job::read_control_variables();
    if pvars {
        if runs_for(PVARS_AFTER) {
            samplers::add_mpit(samplers::mpit::MpiT::open());
        } else {
            samplers::mpit_not_opened(&format!(
                "the job reached MPI_Finalize within {} s of MPI_Init: MPI_T's performance variables are opened after that",
                PVARS_AFTER.as_secs_f64()
            ));
        }
    }
}

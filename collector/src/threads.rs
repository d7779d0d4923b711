//! The collector's own threads (writer, sampler, MPI_T opener, RDMA tool
//! reader), started with every asynchronous signal blocked.
//!
//! A signal sent to the process (SIGTERM from the launcher or the batch
//! system, SIGUSR1, SIGALRM, …) goes to any thread that does not block it.
//! Without the mask it could land on one of these threads: the application's
//! handler would then run on a thread the application does not know, even
//! while every thread of its own blocks the signal to take it later, and a
//! handler that calls `exit` there would wait for a lock that very thread
//! holds. With it, the signal goes where it would without hyscope.
//!
//! The faults stay unblocked: they belong to the thread that caused them, and
//! the crash handler must see them (a blocked fault kills the process
//! without running any handler).

use std::io;
use std::thread::{Builder, JoinHandle};

/// Signals a thread raises by what it executes.
const FAULTS: [libc::c_int; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGSYS,
];

/// Start one of the collector's threads, named `name`, with every signal but
/// the faults blocked (it inherits the mask from this thread, which keeps
/// its own).
pub(crate) fn spawn<F, T>(name: &str, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: sigset_t is plain data; the libc calls fill it and set this
    // thread's mask, restored below whatever the spawn returned.
    unsafe {
        let mut blocked: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut blocked);
        for sig in FAULTS {
            libc::sigdelset(&mut blocked, sig);
        }
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &blocked, &mut before);
        let spawned = Builder::new().name(name.into()).spawn(move || {
            crate::diag::mark_collector_thread();
            f()
        });
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        spawned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked_here(sig: libc::c_int) -> bool {
        // SAFETY: reading this thread's mask into a zeroed set.
        unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            libc::sigismember(&mask, sig) == 1
        }
    }

    #[test]
    fn a_collector_thread_blocks_the_process_signals_and_not_the_faults() {
        let (term, usr1, segv, marked) = spawn("hyscope-test", || {
            (
                blocked_here(libc::SIGTERM),
                blocked_here(libc::SIGUSR1),
                blocked_here(libc::SIGSEGV),
                crate::diag::is_collector_thread(),
            )
        })
        .unwrap()
        .join()
        .unwrap();
        assert!(term && usr1 && !segv && marked);
        // The caller's own mask is as it was.
        assert!(!blocked_here(libc::SIGTERM) && !blocked_here(libc::SIGUSR1));
    }
}

//! A `fork` with the collector loaded.
//!
//! `fork` copies the calling thread only: a lock that another thread (the
//! writer, the sampler, an OpenMP or MPI thread) holds at that instant stays
//! held in the child for good, and the child's first use of it, at the
//! latest its exit flush, waits forever. So, as the C library does for
//! `malloc`, the forking thread takes every lock of the collector just
//! before the fork ([`prepare`]) and lets go of them on both sides right
//! after it; the child then forgets its parent's pending output
//! (`spooling::forget_parents_events`). A fork waits at most for the holders'
//! current step: a writer's round (milliseconds), a sampler's tick (at most
//! `samplers::LOCK_LIMIT`: a sampler stuck in a read is left holding its
//! lock, and sampling stops), or, while another thread runs the exit path,
//! the encoding of the trace.
//!
//! [`take_all`] takes the locks in the collector's lock order, outermost
//! first: a thread that holds one of them takes only locks listed after it
//! (the writer holds its lock while it takes the queue's, the samples',
//! the journal's; the sampler holds the samplers' while it records samples
//! and reads the threads' CPUs). A new lock goes into the list where that
//! stays true, or the fork can deadlock.
//!
//! The collector's own threads take nothing (`diag::mark_collector_thread`):
//! the `rdma` sampler's command may be started by `fork` and `exec` while its
//! thread holds the samplers' lock.

use std::cell::RefCell;

use crate::diag::{self, Held};
use crate::{lifecycle, mpi, nvtx, phases, samplers, slots, spooling, state, symbols};

thread_local! {
    /// The locks the forking thread holds across its fork.
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// Run [`prepare`], [`parent`] and [`child`] around every `fork` of the
/// process. Once: a second [`prepare`] would wait for the locks the first took.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering plain extern "C" functions with no preconditions.
    ONCE.call_once(|| unsafe {
        libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
    });
}

/// Every lock of the collector, in its lock order (see the module's documentation).
fn take_all() -> Vec<Held> {
    let mut held = vec![lifecycle::hold_for_fork()];
    held.extend(samplers::hold_for_fork());
    held.push(spooling::hold_writer_for_fork());
    held.extend(phases::hold_for_fork());
    held.push(hyscope_ompt::hold_states_for_fork());
    held.extend(spooling::hold_buffers_for_fork());
    held.push(diag::hold(&slots::SLOTS));
    held.push(symbols::hold_for_fork());
    held.push(nvtx::hold_for_fork());
    held.push(mpi::hold_for_fork());
    held.extend(state::hold_for_fork());
    held.extend(hyscope_ompt::hold_leaves_for_fork());
    held.extend(diag::hold_warnings());
    held
}

extern "C" fn prepare() {
    if diag::is_collector_thread() {
        return;
    }
    diag::guarded(|| {
        let held = take_all();
        HELD.with(|h| *h.borrow_mut() = held);
    });
}

/// Let go of the locks [`prepare`] took, innermost first.
fn release() {
    let held = HELD.with(|h| std::mem::take(&mut *h.borrow_mut()));
    held.into_iter().rev().for_each(drop);
}

extern "C" fn parent() {
    diag::guarded(release);
}

extern "C" fn child() {
    diag::guarded(|| {
        release();
        spooling::forget_parents_events();
        state::note_forked_child();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Another thread holds every lock of the collector when this one forks:
    /// the fork waits for it, and the child finds every lock free (taking
    /// them all again returns). Without the handlers the child would wait
    /// forever: its alarm ends it, and the test fails.
    #[test]
    fn a_forked_child_finds_every_lock_free() {
        install();
        let (taken, wait_taken) = mpsc::channel();
        let holder = std::thread::spawn(move || {
            let held = take_all();
            taken.send(held.len()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let locks = wait_taken.recv().unwrap();
        assert!(locks >= 14, "{locks} locks");
        // SAFETY: the child only takes and drops locks, then leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: plain libc calls in the child.
            unsafe { libc::alarm(10) };
            let ok = take_all().len() == locks;
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        holder.join().unwrap();
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child did not find every lock free (status {status:#x})"
        );
    }
}

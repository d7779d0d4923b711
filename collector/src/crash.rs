//! Fatal signals: spool every recorded event before the process dies.
//!
//! A handler for the signals that end a process by default: the faults
//! (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) and the launcher's and the
//! terminal's requests (SIGTERM, SIGINT; `mpirun` sends SIGTERM to every rank
//! when one fails). It runs [`spooling::emergency_flush`] (async-signal-safe),
//! then hands the signal on exactly as if hyscope were not there: to the
//! handler installed before it (the application's, or the MPI library's
//! stack-trace printer), or, when there was none, back to the default action
//! and raised again, so the exit status is the signal's. For SIGTERM and
//! SIGINT the flush happens only when the process will die of it (no
//! handler of the application's): a program that handles them runs on and
//! keeps recording.
//!
//! Installed at start and again after `MPI_Init`, in front of the handlers
//! the MPI library installs there (Open MPI's for SIGSEGV, SIGBUS, SIGFPE and
//! SIGABRT), which become the previous handlers.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use hyscope_format::ProcessEnd;

use crate::spooling;

/// The signals handled; the first five are faults.
const SIGNALS: [c_int; 7] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGINT,
];

fn is_fault(sig: c_int) -> bool {
    SIGNALS[..5].contains(&sig)
}

/// The action installed before ours, per entry of [`SIGNALS`] (written by
/// [`install`] before ours is in place, read by the handler).
struct Previous([UnsafeCell<Option<libc::sigaction>>; SIGNALS.len()]);
// SAFETY: written only by install (at start and after MPI_Init, before the
// handler for that signal is installed); the handler only reads.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous([const { UnsafeCell::new(None) }; SIGNALS.len()]);
/// The events were flushed once; later signals only pass on.
static FLUSHED: AtomicBool = AtomicBool::new(false);

/// Put the handler in front of whatever handles each signal now (no-op for
/// a signal it already handles).
pub fn install() {
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: plain sigaction calls with zeroed, then filled structures.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0
                || current.sa_sigaction == on_signal as *const () as usize
            {
                continue;
            }
            *PREVIOUS.0[i].get() = Some(current);
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_signal as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut ours.sa_mask);
            for &other in &SIGNALS {
                libc::sigaddset(&mut ours.sa_mask, other);
            }
            libc::sigaction(sig, &ours, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: errno is thread-local; restored before returning.
    let errno = unsafe { *libc::__errno_location() };
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    // SAFETY: see Previous.
    let previous = unsafe { *PREVIOUS.0[i].get() };
    let to_default = previous.is_none_or(|p| p.sa_sigaction == libc::SIG_DFL);
    if (is_fault(sig) || to_default) && !FLUSHED.swap(true, Ordering::AcqRel) {
        spooling::emergency_flush(ProcessEnd::Signal { signal: sig });
    }
    // SAFETY: restoring this thread's errno.
    unsafe { *libc::__errno_location() = errno };
    pass_on(sig, previous, info, context);
}

/// Hand the signal to what would have had it without hyscope.
fn pass_on(
    sig: c_int,
    previous: Option<libc::sigaction>,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let Some(prev) = previous.filter(|p| p.sa_sigaction != libc::SIG_DFL) else {
        default_and_raise(sig);
        return;
    };
    if prev.sa_sigaction == libc::SIG_IGN {
        // A fault the kernel raised cannot be ignored: returning would fault again.
        // SAFETY: info is the kernel's siginfo for this delivery.
        if is_fault(sig) && !info.is_null() && unsafe { (*info).si_code } > 0 {
            default_and_raise(sig);
        }
        return;
    }
    if prev.sa_flags & libc::SA_RESETHAND != 0 {
        // As its delivery would have: the next one takes the default action.
        set_default(sig);
    }
    // SAFETY: the previous handler as installed, called with the arguments
    // its flags ask for.
    unsafe {
        if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(prev.sa_sigaction);
            f(sig, info, context);
        } else {
            let f: extern "C" fn(c_int) = std::mem::transmute(prev.sa_sigaction);
            f(sig);
        }
    }
}

fn set_default(sig: c_int) {
    // SAFETY: a zeroed sigaction with SIG_DFL.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
    }
}

/// The default action, as if hyscope had no handler: the signal is blocked
/// while its handler runs, so the raise takes effect when it returns.
fn default_and_raise(sig: c_int) {
    set_default(sig);
    // SAFETY: raising a signal at ourselves.
    unsafe { libc::raise(sig) };
}

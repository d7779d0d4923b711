//! What every layer of the collector uses to stay harmless: warnings (one
//! `hyscope:` line each, kept for the rank file), [`guarded`] (a panic
//! becomes a warning) and [`lock`] (a poisoned lock is still usable, and
//! each thread counts the collector locks it holds, so that the exit path
//! never waits for one its own thread holds: [`locks_held_here`]).
//!
//! The lowest layer: it imports nothing of the collector but the settings,
//! whose warnings are printed first.

use std::any::Any;
use std::cell::Cell;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::settings;

static WARNINGS: OnceLock<Mutex<Vec<String>>> = OnceLock::new();

/// Every distinct warning given so far, the settings' first.
fn warnings() -> &'static Mutex<Vec<String>> {
    WARNINGS.get_or_init(|| {
        let warnings = settings::settings_and_warnings().1.clone();
        for w in &warnings {
            print_warning(w);
        }
        Mutex::new(warnings)
    })
}

/// Print the settings' warnings now (once), before anything else is said.
pub(crate) fn init() {
    warnings();
}

/// Print `hyscope: msg` once per distinct message and keep it for `RankInfo::warnings`.
pub fn warn(msg: &str) {
    let new = keep(&mut lock(warnings()), msg);
    if new {
        print_warning(msg);
    }
}

/// Keep `msg` among the warnings given unless it is there: whether it is new.
fn keep(given: &mut Vec<String>, msg: &str) -> bool {
    let new = !given.iter().any(|m| m == msg);
    if new {
        given.push(msg.to_string());
    }
    new
}

/// [`warn`] from a thread that may hold the warnings' lock itself (see
/// [`locks_held_here`]): printed always, kept for the rank file when the
/// lock is free.
pub(crate) fn warn_without_waiting(msg: &str) {
    let Some(list) = WARNINGS.get() else {
        // No warning given yet: nobody holds the lock, `warn` makes it.
        warn(msg);
        return;
    };
    if let Ok(mut w) = list.try_lock()
        && !keep(&mut w, msg)
    {
        return;
    }
    print_warning(msg);
}

fn print_warning(msg: &str) {
    // One write: the ranks of a job share stderr, and a line written in
    // pieces interleaves with theirs ("hyscope: hyscope: ...").
    let line = format!("hyscope: {msg}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The warnings given so far, for the rank file.
pub(crate) fn given() -> Vec<String> {
    lock(warnings()).clone()
}

/// In a forked child that takes an id of its own: the parent's warnings are
/// the parent's (without blocking: the lock may have been held at the fork).
pub(crate) fn forget_given() {
    if let Ok(mut w) = warnings().try_lock() {
        w.clear();
    }
}

/// Run `f`, turning a panic into a warning: the collector never takes the application down.
pub(crate) fn guarded(f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        let _ = std::panic::catch_unwind(|| {
            warn("internal error (see above); recording may be incomplete")
        });
    }
}

/// Lock, ignoring poisoning: a panic elsewhere must not stop recording.
/// Counted in this thread's [`locks_held_here`] from before it waits until
/// after it lets go (a signal that lands in between finds it counted).
pub(crate) fn lock<T>(m: &Mutex<T>) -> Locked<'_, T> {
    LOCKS_HELD.with(|c| c.set(c.get() + 1));
    Locked {
        guard: ManuallyDrop::new(m.lock().unwrap_or_else(|p| p.into_inner())),
    }
}

thread_local! {
    /// The collector locks this thread holds (or waits for): see [`lock`].
    static LOCKS_HELD: Cell<u32> = const { Cell::new(0) };
}

/// How many of the collector's locks the calling thread holds (or waits
/// for). Not zero at exit means the exit runs in a signal handler that
/// interrupted the collector inside one of its locked sections (an
/// `exit()` or an exec in a SIGTERM handler): the exit path must not take
/// any lock then, or it waits for its own thread forever
/// (`lifecycle::end_program` spools as after a crash instead).
pub(crate) fn locks_held_here() -> u32 {
    LOCKS_HELD.with(|c| c.get())
}

/// A collector lock held, counted in [`locks_held_here`] while it lives.
pub(crate) struct Locked<'a, T> {
    guard: ManuallyDrop<MutexGuard<'a, T>>,
}

impl<'a, T> Locked<'a, T> {
    /// Wait on `cv` for at most `d` (the lock let go meanwhile, still
    /// counted: a thread waiting for it is a thread inside the collector).
    pub(crate) fn wait_timeout(mut self, cv: &Condvar, d: Duration) -> Self {
        // SAFETY: taken once; `self` is forgotten below, so never dropped twice.
        let guard = unsafe { ManuallyDrop::take(&mut self.guard) };
        std::mem::forget(self);
        let guard = match cv.wait_timeout(guard, d) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        };
        Locked {
            guard: ManuallyDrop::new(guard),
        }
    }
}

impl<T> Deref for Locked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for Locked<'_, T> {
    fn drop(&mut self) {
        // SAFETY: dropped once, here; the count goes down once the lock is free.
        unsafe { ManuallyDrop::drop(&mut self.guard) };
        LOCKS_HELD.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// A lock held across a `fork` by the forking thread (see `forking`).
pub(crate) type Held = Box<dyn Any>;

/// Take `m` to hold it across a `fork`.
pub(crate) fn hold<T: 'static>(m: &'static Mutex<T>) -> Held {
    Box::new(lock(m))
}

/// The warnings' lock, to hold across a `fork` (none before the first warning).
pub(crate) fn hold_warnings() -> Option<Held> {
    WARNINGS.get().map(hold)
}

thread_local! {
    static COLLECTOR_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Mark the calling thread as one of the collector's own (the writer, the
/// sampler): a `fork` it makes (the `rdma` sampler spawns a command) is
/// followed by `exec` at once, and it may hold the collector's locks, so
/// `forking` leaves them alone.
pub(crate) fn mark_collector_thread() {
    COLLECTOR_THREAD.with(|c| c.set(true));
}

/// Run `f`, which may fork (it spawns a command), as the collector's own
/// thread: the caller may hold collector locks, which `forking` would
/// otherwise wait for on this very thread.
pub(crate) fn as_collector_thread<R>(f: impl FnOnce() -> R) -> R {
    let was = COLLECTOR_THREAD.with(|c| c.replace(true));
    let r = f();
    COLLECTOR_THREAD.with(|c| c.set(was));
    r
}

/// True on the collector's own threads ([`mark_collector_thread`]).
pub(crate) fn is_collector_thread() -> bool {
    COLLECTOR_THREAD.with(|c| c.get())
}

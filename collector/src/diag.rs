//! What every layer of the collector uses to stay harmless: warnings (one
//! `hyscope:` line each, kept for the rank file), [`guarded`] (a panic
//! becomes a warning) and [`lock`] (a poisoned lock is still usable).
//!
//! The lowest layer: it imports nothing of the collector but the settings,
//! whose warnings are printed first.

use std::any::Any;
use std::cell::Cell;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};

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
    let mut w = lock(warnings());
    if w.iter().any(|m| m == msg) {
        return;
    }
    w.push(msg.to_string());
    drop(w);
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
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

//! The time stamp of every event, read inline on the hot path.
//!
//! The collector chooses and calibrates the clock (`collector/src/clock`) and
//! installs it here: the TSC, converted to ns with the node's calibration, or
//! `CLOCK_MONOTONIC`. OMPT callbacks and MPI wrappers then read it without a
//! call through the sink's vtable (and its `OnceLock` check) per time stamp.
//! Until a clock is installed [`read`] returns `None`, and callers ask the sink
//! (which is how a test sink keeps its own time).

use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};

const UNSET: u8 = 0;
const MONOTONIC: u8 = 1;
const TSC: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNSET);
static TSC0: AtomicU64 = AtomicU64::new(0);
static NS0: AtomicI64 = AtomicI64::new(0);
/// ns per tick in 32.32 fixed point.
static MULT: AtomicU64 = AtomicU64::new(0);

/// From now on, time stamps are `ns0 + (tsc - tsc0) * mult / 2^32`.
pub fn install_tsc(tsc0: u64, ns0: i64, mult: u64) {
    TSC0.store(tsc0, Ordering::Relaxed);
    NS0.store(ns0, Ordering::Relaxed);
    MULT.store(mult, Ordering::Relaxed);
    MODE.store(TSC, Ordering::Release);
}

/// From now on, time stamps are `CLOCK_MONOTONIC`.
pub fn install_monotonic() {
    MODE.store(MONOTONIC, Ordering::Release);
}

/// The installed clock's time in ns, `None` before one is installed.
#[inline(always)]
pub fn read() -> Option<i64> {
    match MODE.load(Ordering::Acquire) {
        TSC => Some(tsc_ns()),
        MONOTONIC => Some(monotonic_ns()),
        _ => None,
    }
}

/// `CLOCK_MONOTONIC` in ns.
#[inline]
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The time stamp counter (on other architectures: `CLOCK_MONOTONIC`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The time stamp counter (on other architectures: `CLOCK_MONOTONIC`).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub fn rdtsc() -> u64 {
    monotonic_ns() as u64
}

#[inline(always)]
fn tsc_ns() -> i64 {
    let d = rdtsc().wrapping_sub(TSC0.load(Ordering::Relaxed)) as i64;
    let mult = MULT.load(Ordering::Relaxed) as i128;
    NS0.load(Ordering::Relaxed) + ((d as i128 * mult) >> 32) as i64
}

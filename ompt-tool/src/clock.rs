//! The time stamp of every event, read inline on the hot path.
//!
//! The collector chooses and calibrates the clock (`collector/src/clock`) and
//! installs it here: the TSC, converted to ns with the node's calibration, or
//! `CLOCK_MONOTONIC`. OMPT callbacks and MPI wrappers then read it without a
//! call through the sink's vtable (and its `OnceLock` check) per time stamp.
//! Until a clock is installed [`read`] returns `None`, and callers ask the sink
//! (which is how a test sink keeps its own time). OMPT callbacks read the TSC
//! through their thread's copy of its parameters ([`TscClock`]), which saves
//! 7–12 instructions a callback (callgrind, `tests/omp/ab-ompt.sh`).

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
    TscClock::params().read()
}

/// The installed TSC clock's parameters, copied next to a thread's other hot
/// data (`state::ThreadState`): read from there, a time stamp takes no load
/// through the GOT per parameter (this library is position-independent, and
/// its statics are reached through the GOT), only the `rdtsc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TscClock {
    tsc0: u64,
    ns0: i64,
    mult: u64,
}

impl TscClock {
    /// The installed clock when it is the TSC.
    pub fn installed() -> Option<TscClock> {
        (MODE.load(Ordering::Acquire) == TSC).then(TscClock::params)
    }

    /// The parameters [`install_tsc`] stored.
    #[inline(always)]
    fn params() -> TscClock {
        TscClock {
            tsc0: TSC0.load(Ordering::Relaxed),
            ns0: NS0.load(Ordering::Relaxed),
            mult: MULT.load(Ordering::Relaxed),
        }
    }

    /// The time in ns: exactly what [`read`] gives at the same tick.
    #[inline(always)]
    pub fn read(&self) -> i64 {
        self.at(rdtsc())
    }

    /// Ticks since calibration, scaled; a tick before it (TSC skew between
    /// cores right at calibration) counts as the calibration's instant.
    #[inline(always)]
    fn at(&self, tsc: u64) -> i64 {
        let ticks = tsc.saturating_sub(self.tsc0) as u128;
        self.ns0 + ((ticks * self.mult as u128) >> 32) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_scale_from_the_calibration_point_and_never_go_before_it() {
        // 2.5 GHz: 0.4 ns per tick.
        let clock = TscClock {
            tsc0: 1_000_000,
            ns0: 5_000,
            mult: (0.4 * (1u64 << 32) as f64) as u64,
        };
        assert_eq!(clock.at(1_000_000), 5_000);
        assert_eq!(clock.at(1_000_000 + 2_500_000_000), 5_000 + 999_999_999);
        assert_eq!(clock.at(999_000), 5_000, "skewed tick before calibration");
        // Days of uptime do not overflow.
        let week = 7 * 86_400 * 2_500_000_000u64;
        assert!(clock.at(1_000_000 + week) > 604_799_000_000_000);
    }
}

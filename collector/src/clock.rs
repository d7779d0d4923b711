//! The collector's one clock: nanoseconds on the node's monotonic time line.
//!
//! `clock_gettime(CLOCK_MONOTONIC)` costs ~25 ns on these VMs (platform-facts,
//! "OpenMP runtimes and OMPT"), most of the 30 ns budget per event. Where the
//! TSC is constant and invariant we read it instead and convert with a
//! calibration against `CLOCK_MONOTONIC` taken once at start, anchored so that
//! both clocks agree at the calibration point. `HYSCOPE_CLOCK=monotonic`
//! forces the system clock.

use std::sync::Once;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};

use hyscope_format::manifest::ClockInfo;

const UNINIT: u8 = 0;
const MONOTONIC: u8 = 1;
const TSC: u8 = 2;

static MODE: AtomicU8 = AtomicU8::new(UNINIT);
static TSC0: AtomicU64 = AtomicU64::new(0);
static NS0: AtomicI64 = AtomicI64::new(0);
/// ns per tick in 32.32 fixed point.
static MULT: AtomicU64 = AtomicU64::new(0);
static INIT: Once = Once::new();
static INFO: std::sync::OnceLock<ClockInfo> = std::sync::OnceLock::new();

/// Monotonic nanoseconds (TSC-based where that is cheaper and safe).
#[inline]
pub fn now_ns() -> i64 {
    match MODE.load(Ordering::Acquire) {
        TSC => tsc_ns(),
        MONOTONIC => monotonic_ns(),
        _ => {
            init();
            now_ns()
        }
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

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn rdtsc() -> u64 {
    monotonic_ns() as u64
}

#[inline]
fn tsc_ns() -> i64 {
    let d = rdtsc().wrapping_sub(TSC0.load(Ordering::Relaxed)) as i64;
    let mult = MULT.load(Ordering::Relaxed) as i128;
    NS0.load(Ordering::Relaxed) + ((d as i128 * mult) >> 32) as i64
}

/// What the clock is, for the manifest.
pub fn info() -> ClockInfo {
    init();
    INFO.get().cloned().unwrap_or_default()
}

/// Choose and calibrate the clock (idempotent; ~5 ms the first time when the TSC is used).
pub fn init() {
    INIT.call_once(|| {
        let mono_cost = read_cost(monotonic_ns);
        let want_tsc = std::env::var("HYSCOPE_CLOCK").map_or(true, |v| v != "monotonic");
        if want_tsc && cfg!(target_arch = "x86_64") && tsc_invariant() {
            let (t0, n0) = paired_sample();
            let deadline = n0 + 5_000_000;
            while monotonic_ns() < deadline {
                std::hint::spin_loop();
            }
            let (t1, n1) = paired_sample();
            if t1 > t0 && n1 > n0 {
                let mult = (((n1 - n0) as u128) << 32) / (t1 - t0) as u128;
                TSC0.store(t0, Ordering::Relaxed);
                NS0.store(n0, Ordering::Relaxed);
                MULT.store(mult as u64, Ordering::Relaxed);
                let tsc_cost = read_cost(tsc_ns);
                if tsc_cost < mono_cost {
                    let hz = (t1 - t0) as f64 * 1e9 / (n1 - n0) as f64;
                    let _ = INFO.set(ClockInfo {
                        source: "tsc".into(),
                        tsc_hz: Some(hz),
                        read_cost_ns: tsc_cost,
                    });
                    MODE.store(TSC, Ordering::Release);
                    return;
                }
            }
        }
        let _ = INFO.set(ClockInfo {
            source: "clock_monotonic".into(),
            tsc_hz: None,
            read_cost_ns: mono_cost,
        });
        MODE.store(MONOTONIC, Ordering::Release);
    });
}

/// A (tsc, monotonic) pair with the tightest bracketing of five tries.
fn paired_sample() -> (u64, i64) {
    let mut best = (u64::MAX, 0u64, 0i64);
    for _ in 0..5 {
        let a = rdtsc();
        let n = monotonic_ns();
        let b = rdtsc();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, n);
        }
    }
    (best.1, best.2)
}

fn read_cost(f: fn() -> i64) -> f64 {
    const N: i64 = 2000;
    let start = monotonic_ns();
    let mut sink = 0i64;
    for _ in 0..N {
        sink = sink.wrapping_add(std::hint::black_box(f()));
    }
    std::hint::black_box(sink);
    (monotonic_ns() - start) as f64 / N as f64
}

/// Constant and non-stop TSC, as the kernel reports it.
fn tsc_invariant() -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    text.lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|l| {
            let flags: Vec<&str> = l.split_whitespace().collect();
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_tracks_clock_monotonic() {
        let a = now_ns();
        let m0 = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = now_ns();
        let m1 = monotonic_ns();
        assert!(b > a);
        // Same time line as CLOCK_MONOTONIC within 200 µs over 20 ms.
        assert!(
            ((b - a) - (m1 - m0)).abs() < 200_000,
            "{} vs {}",
            b - a,
            m1 - m0
        );
        assert!((b - m1).abs() < 1_000_000);
        let info = info();
        assert!(info.source == "tsc" || info.source == "clock_monotonic");
    }
}

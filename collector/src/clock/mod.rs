//! The collector's one clock: nanoseconds on the node's monotonic time line.
//!
//! `clock_gettime(CLOCK_MONOTONIC)` costs ~25 ns on these VMs (docs/platform.md,
//! "OpenMP runtimes and OMPT"), most of the 30 ns budget per event. Where the
//! TSC is constant and invariant we read it instead and convert with a
//! calibration against `CLOCK_MONOTONIC`, anchored so that both clocks agree at
//! the calibration point. The ranks an MPI launcher starts on a node share one
//! calibration (`clock/shared.rs`): the first one measures it, the others use its
//! numbers, so the ranks of a node agree to the nanosecond.
//! `HYSCOPE_CLOCK=monotonic` forces the system clock.

use std::sync::Once;

use hyscope_format::{ClockInfo, settings::Clock};
use hyscope_ompt::clock as hot;
pub use hyscope_ompt::clock::monotonic_ns;
use hyscope_ompt::clock::rdtsc;

mod shared;

static INIT: Once = Once::new();
static INFO: std::sync::OnceLock<ClockInfo> = std::sync::OnceLock::new();

/// Monotonic nanoseconds (TSC-based where that is cheaper and safe). The
/// clock chosen is installed in `hyscope_ompt::clock`, which the OMPT
/// callbacks read inline.
#[inline(always)]
pub fn now_ns() -> i64 {
    match hot::read() {
        Some(t) => t,
        None => first_now_ns(),
    }
}

/// [`now_ns`] before the clock is chosen (kept out of the inlined hot path).
#[cold]
#[inline(never)]
fn first_now_ns() -> i64 {
    init();
    hot::read().unwrap_or_else(monotonic_ns)
}

/// What the clock is, for the manifest.
pub fn info() -> ClockInfo {
    init();
    INFO.get().cloned().unwrap_or_default()
}

/// Choose and calibrate the clock (idempotent; ~5 ms the first time when the
/// TSC is used and no fresh calibration of this node can be shared).
pub fn init() {
    INIT.call_once(|| {
        let mono_cost = read_cost(monotonic_ns);
        let want_tsc = crate::settings::settings().clock != Clock::Monotonic;
        if want_tsc && cfg!(target_arch = "x86_64") && tsc_invariant() {
            // The first process of a node (and launcher) decides and
            // calibrates; the others take its calibration (shared.rs), so the
            // ranks of a node never mix clocks or rates.
            let decide = || {
                (read_cost(|| rdtsc() as i64) < mono_cost)
                    .then(Calibration::measure)
                    .flatten()
            };
            // Only ranks have others to agree with: a lone process calibrates
            // alone and leaves no file behind.
            let (cal, shared) = if crate::settings::launched_by_mpi() {
                shared::calibration(decide)
            } else {
                (decide(), false)
            };
            if let Some(cal) = cal {
                hot::install_tsc(cal.tsc0, cal.ns0, cal.mult);
                let _ = INFO.set(ClockInfo {
                    source: "tsc".into(),
                    tsc_hz: Some(cal.hz()),
                    read_cost_ns: read_cost(now_ns),
                    shared_calibration: shared,
                    id: identity(&[
                        "tsc",
                        &cal.tsc0.to_string(),
                        &cal.ns0.to_string(),
                        &cal.mult.to_string(),
                    ]),
                });
                return;
            }
        }
        let _ = INFO.set(ClockInfo {
            source: "clock_monotonic".into(),
            tsc_hz: None,
            read_cost_ns: mono_cost,
            shared_calibration: false,
            id: identity(&["clock_monotonic", &time_namespace()]),
        });
        hot::install_monotonic();
    });
}

/// A TSC-to-ns mapping: `ns0 + (tsc - tsc0) * mult / 2^32`.
/// Names the function from ticks to nanoseconds this process reads: two
/// processes with the same id read the same nanoseconds at the same instant
/// (one boot of one machine, and the same TSC calibration's numbers or the
/// same CLOCK_MONOTONIC), so their offset is 0 by construction and the
/// job's clock synchronisation need not measure it (`mpi/job.rs`). None when
/// the boot cannot be identified.
fn identity(parts: &[&str]) -> Option<String> {
    use std::hash::{Hash, Hasher};
    let boot = shared::boot_id();
    if boot.is_empty() {
        return None;
    }
    // Same build in every rank of a job, so the same hasher.
    let mut h = std::hash::DefaultHasher::new();
    boot.hash(&mut h);
    parts.hash(&mut h);
    Some(format!("{:016x}", h.finish()))
}

/// The time namespace, which may shift CLOCK_MONOTONIC (containers); empty
/// where the kernel has none.
fn time_namespace() -> String {
    std::fs::read_link("/proc/self/ns/time")
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Calibration {
    pub tsc0: u64,
    pub ns0: i64,
    /// ns per tick in 32.32 fixed point.
    pub mult: u64,
}

impl Calibration {
    /// Two (tsc, CLOCK_MONOTONIC) pairs 5 ms apart; `None` if the TSC did not advance.
    fn measure() -> Option<Calibration> {
        let (t0, n0) = paired_sample();
        let deadline = n0 + 5_000_000;
        while monotonic_ns() < deadline {
            std::hint::spin_loop();
        }
        let (t1, n1) = paired_sample();
        (t1 > t0 && n1 > n0).then(|| Calibration {
            tsc0: t0,
            ns0: n0,
            mult: ((((n1 - n0) as u128) << 32) / (t1 - t0) as u128) as u64,
        })
    }

    /// The time of TSC value `tsc`, ns.
    pub fn ns(&self, tsc: u64) -> i64 {
        let d = tsc.wrapping_sub(self.tsc0) as i64;
        self.ns0 + ((d as i128 * self.mult as i128) >> 32) as i64
    }

    /// The TSC frequency this mapping stands for, Hz.
    pub fn hz(&self) -> f64 {
        (1u128 << 32) as f64 * 1e9 / self.mult as f64
    }

    /// How far this mapping is from CLOCK_MONOTONIC now, ns (its rate error
    /// makes it drift away over time).
    pub fn error_now(&self) -> i64 {
        let (tsc, mono) = paired_sample();
        (self.ns(tsc) - mono).abs()
    }
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

/// ns per call of `f`: the fastest of ten rounds of 200 calls, so that a
/// preemption (4 ranks on 2 cores) does not make the cheaper clock look dearer.
fn read_cost(f: fn() -> i64) -> f64 {
    const N: i64 = 200;
    let mut best = f64::INFINITY;
    for _ in 0..10 {
        let start = monotonic_ns();
        let mut sink = 0i64;
        for _ in 0..N {
            sink = sink.wrapping_add(std::hint::black_box(f()));
        }
        std::hint::black_box(sink);
        best = best.min((monotonic_ns() - start) as f64 / N as f64);
    }
    best
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

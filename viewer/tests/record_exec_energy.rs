//! Energy per phase across an exec chain, on a fixture RAPL tree whose
//! package counter advances at a known power.
//!
//! This machine has no RAPL: the RAPL sampler reads a copy of the fixture
//! powercap tree (`collector/tests/fixtures/sysfs-powercap`, through
//! `HYSCOPE_SYSFS_ROOT`), whose package-0 `energy_uj` a thread of this test
//! rewrites every millisecond while the job runs, as [`WATTS`] × the time
//! since the thread started (`CLOCK_MONOTONIC`, atomically: a new file
//! renamed over the old one). The counter's other zones stay still.
//!
//! The program (below) runs phases (`hyscope.h`) and execs itself: the
//! first program runs phase `a` (300 ms) and `both` (200 ms), then execs the
//! second, which runs `b` (200 ms) and `both` (300 ms). Each program has a
//! sampler of its own, whose counter starts again at its start, and reads
//! it at its start and its end only ([`SAMPLE_MS`]): the first program's
//! end is its exec, where the collector takes the samplers' last readings
//! as at an exit (`samplers::sample_before_exec`). Known
//! answer: the report's energy of each phase is [`WATTS`] × its time, the
//! time of `both` being its two programs' intervals added up (one process),
//! each within [`TOLERANCE`].

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use record_support::*;
use serde_json::Value;

/// The package's power while the job runs.
const WATTS: f64 = 20.0;

/// How far a phase's energy may be from [`WATTS`] × its time, relative: the
/// counter moves in 1 ms steps (≤ 20 mJ per end of an interval, against
/// 4–10 J) and the rewriting thread may be late by a scheduling slice on a
/// loaded 2-core machine; the power being constant, the analysis's linear
/// reading between samples adds nothing: 3 %.
///
/// The samplers read every [`SAMPLE_MS`], longer than the programs run:
/// each program's counter is read at its start and at its end (its exit,
/// or its exec) only, so a program whose end is not read has no energy.
const TOLERANCE: f64 = 0.03;

const SAMPLE_MS: &str = "5000";

const SRC: &str = r#"
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin(long long from, int ms) {
  while (now_ns() - from < (long long)ms * 1000000LL)
    sink += 1;
}

/* Spins 50 ms outside any phase first (the samplers' first readings are
 * taken meanwhile), then the steps: NAME:MS runs phase NAME for MS ms (one
 * parallel region in it, the rest spinning); `exec` execs this program with
 * the steps after it. */
int main(int argc, char **argv) {
  spin(now_ns(), 50);
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    return 2;
  self[len] = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "exec") == 0) {
      argv[i] = argv[0];
      execv(self, argv + i);
      return 3;
    }
    char name[64];
    int ms;
    if (sscanf(argv[i], "%63[^:]:%d", name, &ms) != 2)
      return 4;
    hyscope_phase_begin(name);
    long long from = now_ns();
#pragma omp parallel num_threads(2)
    sink += 1;
    spin(from, ms);
    hyscope_phase_end(name);
    printf("phase %s pid %d ms %d\n", name, (int)getpid(), ms);
    fflush(stdout);
  }
  return 0;
}
"#;

/// The fixture powercap tree, copied under `dir`; returns the root and
/// package 0's counter.
fn powercap_tree(dir: &Path) -> (PathBuf, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dst = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &dst);
            } else {
                std::fs::copy(e.path(), &dst).unwrap();
            }
        }
    }
    let sys = dir.join("sys");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../collector/tests/fixtures/sysfs-powercap"),
        &sys,
    );
    let pkg0 = sys.join("class/powercap/intel-rapl:0/energy_uj");
    (sys, pkg0)
}

/// Rewrites `counter` every millisecond as [`WATTS`] × the time since it
/// started (µJ, from the fixture's first value) until dropped.
struct Advancing {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Advancing {
    fn start(counter: &Path) -> Advancing {
        let base: u64 = std::fs::read_to_string(counter)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, counter) = (stop.clone(), counter.to_path_buf());
        let tmp = counter.with_extension("new");
        let t0 = Instant::now();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let uj = base + (WATTS * t0.elapsed().as_micros() as f64) as u64;
                std::fs::write(&tmp, format!("{uj}\n")).unwrap();
                std::fs::rename(&tmp, &counter).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Advancing {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Advancing {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn energy_per_phase_across_an_exec() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        "#define _GNU_SOURCE\n#include \"{}/../include/hyscope.h\"\n{SRC}",
        env!("CARGO_MANIFEST_DIR")
    );
    let prog = build_omp(dir.path(), "phases_exec", &src);
    let (sys, pkg0) = powercap_tree(dir.path());
    let trace = dir.path().join("trace");
    let out = {
        let _advancing = Advancing::start(&pkg0);
        record_into(&trace)
            .arg(&prog)
            .args(["a:300", "both:200", "exec", "b:200", "both:300"])
            .env("HYSCOPE_SYSFS_ROOT", &sys)
            .env("HYSCOPE_SAMPLE_MS", SAMPLE_MS)
            .output_within_limit()
            .unwrap()
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let pids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    assert_eq!(pids.len(), 4, "{stdout}");
    assert!(
        pids[0] == pids[3],
        "the second program is the same process: {stdout}"
    );

    let json: Value =
        serde_json::from_slice(&run_ok(hyscope().arg("report").arg("--json").arg(&trace)).stdout)
            .unwrap();
    // Two programs, each with its own package counter, one process.
    let rapl = json["energy"]["observed"]["domains"]
        .as_array()
        .unwrap_or_else(|| panic!("energy measured: {}", json["energy"]));
    let pkg_ranks: Vec<u64> = rapl
        .iter()
        .filter(|d| d["metric"] == "energy.pkg" && d["package"] == 0)
        .map(|d| d["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(pkg_ranks, [0, 1], "{rapl:?}");
    assert_eq!(
        json["pop"]["observed"]["scope"]["processes"],
        serde_json::json!([[0, 1]])
    );
    let phases = json["phases"]["observed"].as_array().unwrap();
    let phase = |name: &str| {
        phases
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("phase {name}: {phases:?}"))
    };
    for (name, ms) in [("a", 300.0), ("b", 200.0), ("both", 500.0)] {
        let p = phase(name);
        let time = p["time_s"].as_f64().unwrap();
        // The programs spun that long inside (a region and the phase's
        // own ends on top).
        assert!(
            time >= ms / 1e3 && time < ms / 1e3 + 0.05,
            "{name}: {time} s, {p}"
        );
        let joules = p["energy_j"]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no energy: {p}"));
        let want = WATTS * time;
        assert!(
            (joules - want).abs() <= TOLERANCE * want,
            "{name}: {joules} J over {time} s, want {want} J ({WATTS} W): {p}"
        );
    }
}

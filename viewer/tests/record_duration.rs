//! The run's duration ends where the application ends, not after the
//! collector's encoding at exit: a program that measures its own run time
//! and records ~1 M OpenMP events (whose encoding at exit takes a good part
//! of a second in a debug build).

use crate::record_support;
use hyscope_testkit::OutputWithin;

use record_support::*;

const SRC: &str = r#"
#include <omp.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(void) {
    double start = now(), s = 0;
    for (int r = 0; r < 100000; r++) {
#pragma omp parallel num_threads(2) reduction(+ : s)
        s += omp_get_thread_num() + 1;
    }
    printf("sum %g\nseconds %.6f\n", s, now() - start);
    return 0;
}
"#;

#[test]
fn duration_ends_at_the_applications_end() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = build_omp(tmp.path(), "timed", SRC);
    let dir = tmp.path().join("trace");
    let out = run_ok(record_into(&dir).arg(&prog));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let measured: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("seconds "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no time printed: {text}"));
    let json = hyscope()
        .args(["report", "--json"])
        .arg(&dir)
        .output_within_limit()
        .unwrap();
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let duration = v["run"]["duration_s"].as_f64().unwrap();
    // The trace starts with the runtime's start (at the first region, just
    // after main's first clock read) and ends at exit, right after main.
    assert!(
        (duration - measured).abs() < 0.05 + 0.05 * measured,
        "duration {duration} s, the program measured {measured} s; {}",
        stderr(&out)
    );
}

//! `hyscope report A B`'s noise column on real recordings of a program
//! with a known answer (`tests/mpi/late_sender.c`: 20 exchanges, rank 0
//! sleeping DELAY_MS before each send, rank 1 waiting for it in
//! `MPI_Recv`). Recorded twice with the same delay, no difference is
//! beyond the runs' own scatter; recorded with 150 ms in place of 10 ms,
//! the `MPI_Recv` time and the late-sender wait are. The margins hold on a
//! loaded machine: the same-input differences came out at most 0.55 of
//! their threshold over 7 pairs on a shared 2-core machine; the changed
//! ones at 1.6 × theirs, a ratio bounded by √(calls) rather than by the
//! delay (rank 0's receives are short, rank 1's wait the delay: the
//! scatter grows with it), so a slower machine does not bring it down.

use crate::record_support;

use std::path::Path;

use hyscope_testkit::compare_line as line;

use record_support::*;
use serde_json::Value;

/// `hyscope report A B`, as JSON and as text.
fn compare(a: &Path, b: &Path) -> (Value, String) {
    let json = run_ok(hyscope().args(["report", "--json"]).arg(a).arg(b));
    let text = run_ok(hyscope().arg("report").arg(a).arg(b));
    (
        serde_json::from_slice(&json.stdout).expect("report --json is JSON"),
        String::from_utf8(text.stdout).unwrap(),
    )
}

/// The row of `section`, `item`, `metric`.
fn row<'a>(c: &'a Value, section: &str, item: &str, metric: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == section && r["item"] == item && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {section} {item} {metric} row in {c:#}"))
}

#[test]
fn same_input_is_within_noise_and_a_known_change_beyond() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "late_sender");
    let record = |name: &str, delay_ms: &str| {
        let dir = tmp.path().join(name);
        run_ok(
            record_into(&dir)
                .arg("mpirun")
                .args(mpirun_args(2))
                .arg(&exe)
                .args(["send", delay_ms]),
        );
        dir
    };
    let (a, again, slower) = (
        record("a", "10"),
        record("again", "10"),
        record("slower", "150"),
    );

    // The same input twice: every difference with an estimate within noise.
    let (c, text) = compare(&a, &again);
    for r in c["rows"].as_array().unwrap() {
        assert_ne!(r["noise"]["verdict"], "beyond_noise", "{r:#}\n{text}");
    }
    assert_eq!(c["noise"]["beyond_noise"], 0, "{text}");
    let recv = row(&c, "mpi", "MPI_Recv", "total_s");
    assert_eq!(recv["noise"]["verdict"], "within_noise", "{recv:#}");
    // 20 receives on each of 2 ranks, in each run.
    assert_eq!(recv["noise"]["values_a"], 40, "{recv:#}");
    assert_eq!(recv["noise"]["values"], "calls", "{recv:#}");
    assert!(
        line(&text, "MPI_Recv", "time").ends_with("within"),
        "{text}"
    );
    assert!(text.contains("beyond noise: 0 of the "), "{text}");
    // One duration per run: said so, not weighed.
    let duration = row(&c, "run", "job", "duration_s");
    assert_eq!(
        duration["noise"]["verdict"], "too_few_values",
        "{duration:#}"
    );
    assert!(
        line(&text, "run", "duration").ends_with("too few"),
        "{text}"
    );

    // 140 ms more before each of the 20 sends.
    let (c, text) = compare(&a, &slower);
    for (section, item, metric, name) in [
        ("mpi", "MPI_Recv", "total_s", "time"),
        ("wait", "late sender", "time_s", "time"),
    ] {
        let r = row(&c, section, item, metric);
        assert_eq!(r["noise"]["verdict"], "beyond_noise", "{r:#}\n{text}");
        assert!(r["delta"].as_f64().unwrap() > 2.0, "{r:#}");
        let l = line(
            &text,
            &hyscope_analyzer::compare::label(section, item),
            name,
        );
        assert!(l.ends_with("beyond"), "{l}");
    }
    let beyond = c["noise"]["beyond_noise"].as_u64().unwrap();
    assert!(beyond >= 2, "{text}");
    assert!(
        text.contains(&format!("beyond noise: {beyond} of the ")),
        "{text}"
    );
}

/// An MPI+OpenMP program whose region instances last what its arguments
/// say: `regions N EXTRA_MS` runs N instances of a parallel region of 2
/// threads whose static loop of 2 iterations sleeps 2, 12, 22, 32, 2, …
/// ms (+ EXTRA_MS) on each thread, after a first region that starts the
/// team's threads (which takes from 1 to 100 ms on a loaded machine): a
/// region's and a loop's instances scatter by √125 ≈ 11 ms, which a
/// loaded machine's late wake-ups do not outweigh (on a shared 2-core
/// machine at a load of 8, they added 0.2 s to one run's 40 instances,
/// where the same-input test allows 0.34 s). Recorded with
/// `OMP_WAIT_POLICY=passive`: threads waiting at a barrier sleep instead
/// of spinning on the cores the other ranks' sleepers wake up on.
const REGIONS_SRC: &str = r#"#include <mpi.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>
static void msleep(double ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000 * (long)(ms / 1000)) * 1e6)};
    nanosleep(&ts, NULL);
}
int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int n = atoi(argv[1]);
    double extra = atof(argv[2]);
    int started = 0;
#pragma omp parallel num_threads(2) reduction(+ : started)
    started += 1;
    for (int k = 0; k < n; k++) {
        double d = 10.0 * (k % 4) + 2.0 + extra;
#pragma omp parallel num_threads(2)
        {
#pragma omp for schedule(static)
            for (int i = 0; i < 2; i++) msleep(d);
        }
    }
    MPI_Finalize();
    return 0;
}
"#;

/// `regions.c:<line>` of the last line of [`REGIONS_SRC`] holding `what`.
fn regions_label(what: &str) -> String {
    let lines: Vec<&str> = REGIONS_SRC.lines().collect();
    let line = lines.iter().rposition(|l| l.contains(what)).unwrap() + 1;
    format!("regions.c:{line}")
}

/// The words of the text's line of `label` and `metric` (item words first).
fn words<'a>(text: &'a str, label: &str, metric: &str) -> Vec<&'a str> {
    line(text, label, metric).split_whitespace().collect()
}

/// Regions and loops are weighed against their instances' scatter, in
/// trace mode and (from the `summary` rows' sums of squares) in profile
/// mode: the same run twice within noise, each instance 40 ms slower
/// beyond it; three times the instances, each as long, read as three times
/// the time, +80 instances (exact) and a time per instance within noise,
/// in the row after the count. (Whether three times the time is beyond
/// noise depends on the late wake-ups of a loaded machine, which widen the
/// scatter: it came out at 2.9 times its threshold over 8 runs at a load
/// of 8, and under it once beside the TUI's test; the time per instance
/// held, at most 0.07 of its threshold.) A profile-mode fork/join has no scatter: `—`, and why
/// under the table.
#[test]
fn regions_and_loops_have_a_noise_verdict_and_a_time_per_instance() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "regions", REGIONS_SRC);
    let record = |name: &str, mode: &str, args: [&str; 2]| {
        record_two_ranks_in_mode(tmp.path(), name, mode, &exe, &args)
    };
    let a = record("a", "trace", ["20", "0"]);
    let again = record("again", "trace", ["20", "0"]);
    let slower = record("slower", "trace", ["20", "40"]);
    let thrice = record("thrice", "trace", ["60", "0"]);
    let (region, lp) = (
        regions_label("#pragma omp parallel"),
        regions_label("#pragma omp for"),
    );
    let (region_row, loop_row) = (format!("region {region}"), format!("loop {lp}"));

    let (c, text) = compare(&a, &again);
    for (section, item) in [("region", &region), ("loop", &lp)] {
        let r = row(&c, section, item, "time_s");
        assert_eq!(r["noise"]["verdict"], "within_noise", "{r:#}\n{text}");
        // 20 instances on each of 2 ranks, in each run.
        assert_eq!(r["noise"]["values_a"], 40, "{r:#}");
        assert_eq!(r["noise"]["values"], "instances", "{r:#}");
    }
    assert!(
        line(&text, &region_row, "time").ends_with("within"),
        "{text}"
    );
    assert_eq!(
        words(&text, &region_row, "instances")[2..],
        ["instances", "40", "40", "0", "1.00", "exact"],
        "{text}"
    );
    assert!(
        !text.split_whitespace().any(|w| w == "time/instance"),
        "the same counts: {text}"
    );
    // Every shown row has a verdict.
    assert!(!text.contains("`—` on "), "{text}");

    let (c, text) = compare(&a, &slower);
    for (section, item, name) in [("region", &region, &region_row), ("loop", &lp, &loop_row)] {
        let r = row(&c, section, item, "time_s");
        assert_eq!(r["noise"]["verdict"], "beyond_noise", "{r:#}\n{text}");
        // 40 instances, each 40 ms longer.
        let delta = r["delta"].as_f64().unwrap();
        assert!((1.2..2.4).contains(&delta), "{r:#}");
        assert!(line(&text, name, "time").ends_with("beyond"), "{text}");
    }

    let (c, text) = compare(&a, &thrice);
    for (section, item, name) in [("region", &region, &region_row), ("loop", &lp, &loop_row)] {
        let time = row(&c, section, item, "time_s");
        let ratio = time["ratio"].as_f64().unwrap();
        assert!((2.0..4.0).contains(&ratio), "{time:#}\n{text}");
        assert_eq!(
            words(&text, name, "instances")[2..],
            ["instances", "40", "120", "+80", "3.00", "exact"],
            "{text}"
        );
        let per = row(&c, section, item, "time_per_instance_s");
        assert_eq!(per["noise"]["verdict"], "within_noise", "{per:#}\n{text}");
        assert_eq!(
            (&per["noise"]["values_a"], &per["noise"]["values_b"]),
            (&Value::from(40), &Value::from(120)),
            "{per:#}"
        );
        // Each instance 2 to 32 ms, 17 ms on average.
        for side in ["a", "b"] {
            let s = per[side].as_f64().unwrap();
            assert!((0.015..0.025).contains(&s), "{per:#}");
        }
        // In the row after the count, within noise.
        let lines: Vec<&str> = text.lines().collect();
        let count = lines
            .iter()
            .position(|l| l.trim_start().starts_with(name.as_str()) && l.contains(" instances "))
            .unwrap();
        let next = lines[count + 1].trim_start();
        assert!(next.starts_with(name.as_str()), "{text}");
        assert!(
            next.contains(" time/instance ") && next.ends_with("within"),
            "{next}"
        );
    }

    let pa = record("pa", "profile", ["20", "0"]);
    let pslower = record("pslower", "profile", ["20", "40"]);
    let (c, text) = compare(&pa, &pslower);
    for (section, item) in [("region", &region), ("loop", &lp)] {
        let r = row(&c, section, item, "time_s");
        assert_eq!(r["noise"]["verdict"], "beyond_noise", "{r:#}\n{text}");
        assert_eq!(r["noise"]["values_a"], 40, "{r:#}");
    }
    let fj = row(&c, "region", &region, "fork_join_s");
    assert_eq!(fj["noise"]["verdict"], "not_estimated", "{fj:#}");
    assert!(
        line(&text, &region_row, "fork/join").ends_with('—'),
        "{text}"
    );
    assert!(
        // This region's and the first one's (which starts the threads).
        text.contains("`—` on 2 rows: profile mode: a region's fork/join is its time less"),
        "{text}"
    );
}

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
        line(&text, "mpi MPI_Recv", "time").ends_with("within"),
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
        line(&text, "run job", "duration").ends_with("too few"),
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
        let l = line(&text, &format!("{section} {item}"), name);
        assert!(l.ends_with("beyond"), "{l}");
    }
    let beyond = c["noise"]["beyond_noise"].as_u64().unwrap();
    assert!(beyond >= 2, "{text}");
    assert!(
        text.contains(&format!("beyond noise: {beyond} of the ")),
        "{text}"
    );
}

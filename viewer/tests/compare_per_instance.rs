//! `hyscope report A B`'s rows per instance on real recordings of a
//! program with a known answer (`tests/phases/per_instance.c`: N instances
//! of an `MPI_Pcontrol` phase on each of 2 ranks, each holding a parallel
//! region of 2 threads that sleeps 2, 12, 22, 32, 2, … ms, then a barrier).
//! Recorded with N = 8 and N = 24: three times the instances, each as
//! long. The phase's instances differ, so its time and its MPI time follow
//! per instance; the region's instances differ, so its time and its
//! fork/join overhead (Mahéo 2015 §6.6.3) follow per instance: in trace
//! mode each with a verdict weighed against the instances' (or
//! repetitions', or ranks') scatter, in profile mode the fork/join without
//! one (`—`), and why.

use crate::record_support;

use std::path::Path;

use hyscope_testkit::compare_line as line;

use record_support::*;
use serde_json::Value;

const SRC: &str = include_str!("../../tests/phases/per_instance.c");

/// `hyscope report A B`, as JSON and as text.
fn compare(a: &Path, b: &Path) -> (Value, String) {
    let json = run_ok(hyscope().args(["report", "--json"]).arg(a).arg(b));
    let text = run_ok(hyscope().arg("report").arg(a).arg(b));
    (
        serde_json::from_slice(&json.stdout).expect("report --json is JSON"),
        String::from_utf8(text.stdout).unwrap(),
    )
}

/// The row of `section`, `item`, `metric`, if any.
fn find<'a>(c: &'a Value, section: &str, item: &str, metric: &str) -> Option<&'a Value> {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["section"] == section && r["item"] == item && r["metric"] == metric)
}

/// The row of `section`, `item`, `metric`.
fn row<'a>(c: &'a Value, section: &str, item: &str, metric: &str) -> &'a Value {
    find(c, section, item, metric)
        .unwrap_or_else(|| panic!("no {section} {item} {metric} row in {c:#}"))
}

/// The words of the text's lines from the one of `label` and `metric` on,
/// `n` of them.
fn lines_from(text: &str, label: &str, metric: &str, n: usize) -> Vec<Vec<String>> {
    let first = line(text, label, metric);
    text.lines()
        .skip_while(|l| *l != first)
        .take(n)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// A verdict weighed against the values' scatter (not `too few`, not `—`).
fn weighed(r: &Value) {
    let v = &r["noise"]["verdict"];
    assert!(v == "within_noise" || v == "beyond_noise", "{r:#}");
}

#[test]
fn phases_and_regions_compare_per_instance_where_their_instances_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "per_instance", SRC);
    let record = |name: &str, mode: &str, n: &str| {
        record_two_ranks_in_mode(tmp.path(), name, mode, &exe, &[n])
    };
    let lines: Vec<&str> = SRC.lines().collect();
    let at = lines
        .iter()
        .rposition(|l| l.trim() == "#pragma omp parallel num_threads(2)")
        .unwrap();
    let region = format!("per_instance.c:{}", at + 1);
    let region_label = format!("region {region}");
    let phase = "Pcontrol 2";
    let phase_label = format!("phase {phase}");

    let a = record("a", "trace", "8");
    let thrice = record("thrice", "trace", "24");

    // The same trace twice: the same instances, no row per instance.
    let (c, text) = compare(&a, &a);
    assert_eq!(row(&c, "phase", phase, "instances")["a"], 16.0, "{text}");
    for metric in ["time_per_instance_s", "mpi_per_instance_s"] {
        assert!(find(&c, "phase", phase, metric).is_none(), "{text}");
    }
    assert!(
        find(&c, "region", &region, "fork_join_per_instance_s").is_none(),
        "{text}"
    );

    let (c, text) = compare(&a, &thrice);
    println!("{text}");
    // The phase: 8 and 24 instances on each of 2 ranks, exact; then its
    // time (the slowest rank's, over that rank's 8 and 24 instances) and
    // its MPI time (over all 16 and 48) per instance, in the rows after.
    let phase_rows = lines_from(&text, &phase_label, "instances", 3);
    assert_eq!(
        phase_rows[0][3..],
        ["instances", "16", "48", "+32", "3.00", "exact"],
        "{text}"
    );
    assert_eq!(phase_rows[1][3], "time/instance", "{text}");
    assert_eq!(phase_rows[2][3], "MPI/instance", "{text}");
    let time = row(&c, "phase", phase, "time_s");
    let ratio = time["ratio"].as_f64().unwrap();
    assert!((2.0..4.0).contains(&ratio), "{time:#}\n{text}");
    let per = row(&c, "phase", phase, "time_per_instance_s");
    // 17 ms of sleep on average, and the barrier: as long in both runs.
    for side in ["a", "b"] {
        let s = per[side].as_f64().unwrap();
        assert!((0.015..0.045).contains(&s), "{per:#}");
    }
    assert_eq!(per["noise"]["verdict"], "within_noise", "{per:#}\n{text}");
    assert_eq!(per["noise"]["values"], "repetitions", "{per:#}");
    assert_eq!(
        (&per["noise"]["values_a"], &per["noise"]["values_b"]),
        (&Value::from(8), &Value::from(24)),
        "{per:#}"
    );
    assert!(phase_rows[1].last().unwrap() == "within", "{text}");
    let mpi = row(&c, "phase", phase, "mpi_per_instance_s");
    weighed(mpi);
    assert_eq!(mpi["noise"]["values"], "ranks", "{mpi:#}");
    for side in ["a", "b"] {
        // A barrier's share of an instance: more than nothing, less than
        // the instance.
        let m = mpi[side].as_f64().unwrap();
        assert!(
            m > 0.0 && m < per[side].as_f64().unwrap(),
            "{mpi:#}\n{per:#}"
        );
        let total = row(&c, "phase", phase, "mpi_s")[side].as_f64().unwrap();
        let n = row(&c, "phase", phase, "instances")[side].as_f64().unwrap();
        assert!((m - total / n).abs() < 1e-12, "{mpi:#}");
    }

    // The region: its time and fork/join per instance after its count.
    let region_rows = lines_from(&text, &region_label, "instances", 3);
    assert_eq!(
        region_rows[0][2..],
        ["instances", "16", "48", "+32", "3.00", "exact"],
        "{text}"
    );
    assert_eq!(region_rows[1][2], "time/instance", "{text}");
    assert_eq!(region_rows[2][2], "fork/join/instance", "{text}");
    let fj = row(&c, "region", &region, "fork_join_per_instance_s");
    weighed(fj);
    assert_eq!(fj["noise"]["values"], "instances", "{fj:#}");
    assert_eq!(
        (&fj["noise"]["values_a"], &fj["noise"]["values_b"]),
        (&Value::from(16), &Value::from(48)),
        "{fj:#}"
    );
    let time = row(&c, "region", &region, "time_per_instance_s");
    for side in ["a", "b"] {
        let f = fj[side].as_f64().unwrap();
        let total = row(&c, "region", &region, "fork_join_s")[side]
            .as_f64()
            .unwrap();
        let n = row(&c, "region", &region, "instances")[side]
            .as_f64()
            .unwrap();
        assert!((f - total / n).abs() < 1e-12, "{fj:#}");
        // The overhead is part of each instance's time.
        assert!(
            f > 0.0 && f < time[side].as_f64().unwrap(),
            "{fj:#}\n{time:#}"
        );
    }

    // Profile mode keeps a region's fork/join as a difference of two
    // totals, not per instance: no scatter to weigh it against, and why.
    let pa = record("pa", "profile", "8");
    let pthrice = record("pthrice", "profile", "24");
    let (c, text) = compare(&pa, &pthrice);
    println!("{text}");
    let fj = row(&c, "region", &region, "fork_join_per_instance_s");
    assert_eq!(fj["noise"]["verdict"], "not_estimated", "{fj:#}");
    let why = fj["noise"]["why"].as_str().unwrap();
    assert!(why.starts_with("profile mode: "), "{fj:#}");
    assert!(
        line(&text, &region_label, "fork/join/instance").ends_with('—'),
        "{text}"
    );
    assert!(text.contains(&format!(": {why}")), "{text}");
}

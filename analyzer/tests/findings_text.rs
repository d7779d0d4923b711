//! The words of the findings and of the OpenMP pass's notes: the figures they
//! quote (idle threads, times) and what they say where a trace has no OpenMP.

use crate::common;

use std::path::Path;

use common::*;

/// The viewer's time formatter, the one every view writes times with.
#[allow(dead_code)]
#[path = "../../viewer/src/units.rs"]
mod units;

/// The recorded 2 ranks × 2 threads trace of `real_trace.rs`.
fn fixture() -> hyscope_analyzer::Analysis {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hybrid-2x2");
    hyscope_analyzer::analyze(&dir, &Default::default()).unwrap()
}

/// Every `<number> <unit>` time in `text` (units ns, µs, ms, s), as written.
fn times(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = Vec::new();
    for w in words.windows(2) {
        let number = w[0].trim_start_matches(|c: char| !c.is_ascii_digit());
        let unit = w[1].trim_end_matches(|c: char| !c.is_alphanumeric() && c != 'µ');
        if !number.is_empty()
            && number.parse::<f64>().is_ok()
            && ["ns", "µs", "ms", "s"].contains(&unit)
        {
            out.push(format!("{number} {unit}"));
        }
    }
    out
}

/// A time as written, back in nanoseconds.
fn to_ns(time: &str) -> f64 {
    let (number, unit) = time.split_once(' ').unwrap();
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        _ => 1e9,
    };
    number.parse::<f64>().unwrap() * scale
}

#[test]
fn master_only_mpi_idles_all_threads_but_the_master() {
    let a = fixture();
    assert_eq!(a.run.threads_per_rank, vec![2, 2]);
    let f = a
        .findings
        .iter()
        .find(|f| f.title.contains("master-only"))
        .expect("a master-only finding");
    // P − 1 = 1 thread idle while the master is in MPI, as POP's loss counts.
    assert!(
        f.what_to_do
            .starts_with("1 thread per rank idle during master-only MPI"),
        "{}",
        f.what_to_do
    );
}

/// A time in a finding or a warning reads as the report's own times do
/// (`viewer/src/units.rs`): `400 ns`, never `0.4 µs`; `1.078 s`, never
/// `1078.487 ms`.
#[test]
fn times_in_findings_and_warnings_are_written_by_the_one_formatter() {
    let a = fixture();
    let texts: Vec<&str> = a
        .findings
        .iter()
        .flat_map(|f| [f.title.as_str(), f.what_to_do.as_str()])
        .chain(a.warnings.iter().map(String::as_str))
        .collect();
    let mut checked = 0;
    for text in texts {
        for t in times(text) {
            assert_eq!(units::ns(to_ns(&t)), t, "in: {text}");
            checked += 1;
        }
    }
    // The barrier synchronisation findings (one per region) and the clipped
    // join-barrier warning each quote a time.
    assert!(checked >= 5, "{checked} times checked");
}

#[test]
fn a_program_without_openmp_is_not_diagnosed_as_libgomp() {
    let mut b = Builder::new(2, 1, 1);
    b.manifest.openmp = None;
    b.call(0, hyscope_format::mpi_call::MPI_Barrier, 0, 10, -1, 0, 1);
    b.call(1, hyscope_format::mpi_call::MPI_Barrier, 0, 10, -1, 0, 1);
    let (_d, a) = b.analyze();
    for reason in [a.regions.reason(), a.loops.reason(), a.openmp.reason()] {
        let reason = reason.expect("not observable");
        assert!(
            reason.starts_with("no OpenMP events: the program ran no OpenMP, or"),
            "{reason}"
        );
        assert!(!reason.contains("did not use"), "{reason}");
    }
}

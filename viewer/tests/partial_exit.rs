//! One rule for how the subcommands end on a trace that is not whole
//! (`hyscope_viewer::partial`): a partial trace (one rank left out for a
//! flipped byte) gives status 0 and one `hyscope: partial trace` line naming
//! the first loss; a trace whose every rank is damaged gives status 2 and
//! one `hyscope: error:` line naming the file and the problem. Checked for
//! `report`, `report A B` (the damaged trace as either side) and `export`,
//! on the recorded fixture (`damage_support`).

use crate::damage_support::copy_fixture;
use crate::record_support::{hyscope, stderr};
use hyscope_testkit::OutputWithin;

use std::path::Path;

/// Flip one byte inside the first column chunk's data of rank `rank`'s
/// first OpenMP part.
fn flip(trace: &Path, rank: u32) {
    let part = trace.join(format!("omp/rank={rank}/part-0.parquet"));
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&part, bytes).unwrap();
}

/// `hyscope ARGS`: its status and its stderr lines.
fn run(args: &[&std::ffi::OsStr]) -> (Option<i32>, Vec<String>) {
    let out = hyscope().args(args).output_within_limit().unwrap();
    let err = stderr(&out);
    (out.status.code(), err.lines().map(str::to_string).collect())
}

/// The lines of `err` that start with `prefix`.
fn starting<'a>(err: &'a [String], prefix: &str) -> Vec<&'a str> {
    err.iter()
        .map(String::as_str)
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn a_partial_trace_exits_0_with_one_line_and_a_dead_one_2_with_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let one = tmp.path().join("one");
    let all = tmp.path().join("all");
    for t in [&whole, &one, &all] {
        copy_fixture(t);
    }
    flip(&one, 0);
    flip(&all, 0);
    flip(&all, 1);
    let file = "omp/rank=0/part-0.parquet";
    let problem = "corrupt or truncated Parquet file: checksum mismatch in bytes ";
    let json = tmp.path().join("out.json");
    let os = |p: &Path| p.as_os_str().to_owned();
    let perfetto = |t: &Path| {
        vec![
            "export".into(),
            "--format".into(),
            "perfetto".into(),
            "-o".into(),
            os(&json),
            os(t),
        ]
    };

    // One rank left out: status 0, one line naming the damaged trace, the
    // rank, the file and the problem.
    let report_line = format!(
        "hyscope: partial trace {}: rank 0, {file}: a part of rank 0's `omp` table cannot be read ({problem}",
        one.display()
    );
    let export_line = format!(
        "hyscope: partial trace {}: rank 0 left out: {file} cannot be read ({problem}",
        one.display()
    );
    let cases: Vec<(&str, Vec<std::ffi::OsString>, &str)> = vec![
        ("report", vec!["report".into(), os(&one)], &report_line),
        (
            "report A B",
            vec!["report".into(), os(&whole), os(&one)],
            &report_line,
        ),
        (
            "report B A",
            vec!["report".into(), os(&one), os(&whole)],
            &report_line,
        ),
        ("export", perfetto(&one), &export_line),
    ];
    for (what, args, want) in &cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, err) = run(&args);
        assert_eq!(code, Some(0), "{what}: {err:#?}");
        let lines = starting(&err, "hyscope: partial trace ");
        assert_eq!(lines.len(), 1, "{what}: {err:#?}");
        assert!(lines[0].starts_with(*want), "{what}: {}", lines[0]);
        assert!(
            starting(&err, "hyscope: error").is_empty(),
            "{what}: {err:#?}"
        );
    }
    // The undamaged trace: no such line.
    let (code, err) = run(&[std::ffi::OsStr::new("report"), whole.as_os_str()]);
    assert_eq!(code, Some(0), "{err:#?}");
    assert!(
        starting(&err, "hyscope: partial trace").is_empty(),
        "{err:#?}"
    );

    // Every rank damaged: nothing to analyse, status 2, the first file and
    // its problem in one error line, no partial line.
    let error = format!("hyscope: error: {}: {problem}", all.join(file).display());
    let cases: Vec<(&str, Vec<std::ffi::OsString>)> = vec![
        ("report", vec!["report".into(), os(&all)]),
        ("report A B", vec!["report".into(), os(&whole), os(&all)]),
        ("report B A", vec!["report".into(), os(&all), os(&whole)]),
        ("export", perfetto(&all)),
    ];
    for (what, args) in &cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, err) = run(&args);
        assert_eq!(code, Some(2), "{what}: {err:#?}");
        let lines = starting(&err, "hyscope: error");
        assert_eq!(lines.len(), 1, "{what}: {err:#?}");
        assert!(lines[0].starts_with(&error), "{what}: {}", lines[0]);
        assert!(
            starting(&err, "hyscope: partial trace").is_empty(),
            "{what}: {err:#?}"
        );
    }
}

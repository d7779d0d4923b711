//! Damaged and incomplete traces, made from a recorded one: each case gives
//! its exact outcome in `report`, `report --json` and both exports — an error
//! naming the file, or exit 0 with the problem listed first — and never a
//! panic or an abort. Every command runs under a 4 GiB address-space limit
//! (`ulimit -v`), so a count taken from a damaged file that sizes memory
//! fails the test instead of swapping the machine.

use crate::damage_support;
use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;
use std::process::Output;

use damage_support::*;
use hyscope_format::{
    OmpRecord, PartWriter, ScanOptions, Table, Trace, WriterOptions, read_part_records,
};
use record_support::stderr;

/// Address space allowed to each command, KiB.
const LIMIT_KIB: u64 = 4 << 20;

/// `hyscope ARGS` under the address-space limit.
fn limited(args: &[&str], trace: &Path) -> Output {
    record_support::hyscope(); // checks the build is complete
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .args(args)
        .arg(trace)
        .output_within_limit()
        .unwrap()
}

enum Expect {
    /// Exit 0; the report's first section has this title and lists each
    /// text; `in_exports`: the exports say them too (the reader's problems;
    /// the analysis' own are in the report only).
    Listed {
        partial: bool,
        texts: &'static [&'static str],
        in_exports: bool,
    },
    /// Every command fails, naming this file of the trace with this message.
    Error {
        file: &'static str,
        message: &'static str,
    },
}

struct Run {
    report: Output,
    json: Output,
    perfetto: Output,
    otf2: Output,
}

fn run_all(trace: &Path, scratch: &Path) -> Run {
    let perfetto = scratch.join("out.json");
    let otf2 = scratch.join("otf2");
    Run {
        report: limited(&["report"], trace),
        json: limited(&["report", "--json"], trace),
        perfetto: limited(
            &[
                "export",
                "--format",
                "perfetto",
                "-o",
                perfetto.to_str().unwrap(),
            ],
            trace,
        ),
        otf2: limited(
            &["export", "--format", "otf2", "-o", otf2.to_str().unwrap()],
            trace,
        ),
    }
}

fn check(name: &str, damage: impl FnOnce(&Path), expect: Expect) -> Option<serde_json::Value> {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    copy_fixture(&trace);
    damage(&trace);
    let run = run_all(&trace, tmp.path());
    let all = [
        ("report", &run.report),
        ("report --json", &run.json),
        ("export perfetto", &run.perfetto),
        ("export otf2", &run.otf2),
    ];
    for (cmd, out) in &all {
        let err = stderr(out);
        assert!(
            out.status.code().is_some()
                && !err.contains("panicked")
                && !err.contains("memory allocation"),
            "{name}: `{cmd}` crashed ({:?}):\n{err}",
            out.status
        );
    }
    match expect {
        Expect::Error { file, message } => {
            for (cmd, out) in &all {
                let err = stderr(out);
                assert_ne!(out.status.code(), Some(0), "{name}: `{cmd}` succeeded");
                assert!(
                    err.contains(file) && err.contains(message),
                    "{name}: `{cmd}` does not say `{file}` and `{message}`:\n{err}"
                );
            }
            None
        }
        Expect::Listed {
            partial,
            texts,
            in_exports,
        } => {
            for (cmd, out) in &all {
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{name}: `{cmd}`:\n{}",
                    stderr(out)
                );
            }
            let report = String::from_utf8_lossy(&run.report.stdout).into_owned();
            let title = if partial {
                "PARTIAL TRACE: the numbers below leave out what is listed here"
            } else {
                "Trace notices"
            };
            // The problems come first: right after the report's title line.
            let first = report
                .lines()
                .skip(1)
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            assert_eq!(first.trim(), title, "{name}:\n{report}");
            let json: serde_json::Value = serde_json::from_slice(&run.json.stdout).unwrap();
            let problems = json["integrity"]["problems"].as_array().unwrap();
            let listed: Vec<String> = problems
                .iter()
                .map(|p| p["what"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                problems.iter().any(|p| p["data_lost"] == true),
                partial,
                "{name}: {listed:?}"
            );
            for t in texts {
                assert!(report.contains(t), "{name}: report lacks `{t}`:\n{report}");
                // `rank R, FILE: WHAT`: the JSON and the exports say WHAT.
                let what = t.split_once(": ").map_or(*t, |(_, w)| w);
                assert!(
                    listed.iter().any(|w| w.contains(what)),
                    "{name}: report --json lacks `{what}`: {listed:?}"
                );
                // The exports: a notice on a line of its own; the losses in
                // one line naming the first (`hyscope_viewer::partial`).
                if in_exports && (!partial || std::ptr::eq(t, &texts[0])) {
                    for out in [&run.perfetto, &run.otf2] {
                        let err = stderr(out);
                        let lines: Vec<&str> = err
                            .lines()
                            .filter(|l| l.starts_with("hyscope: partial trace "))
                            .collect();
                        assert_eq!(lines.len(), usize::from(partial), "{name}:\n{err}");
                        assert!(
                            err.contains(what) && lines.iter().all(|l| l.contains(what)),
                            "{name}: export lacks `{what}`:\n{err}"
                        );
                    }
                }
            }
            // Lost data is never diagnosed as a missing runtime.
            if partial {
                assert!(!report.contains("ran no OpenMP"), "{name}:\n{report}");
            }
            Some(json)
        }
    }
}

fn rm(path: &Path) {
    if path.is_dir() {
        std::fs::remove_dir_all(path).unwrap();
    } else {
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn an_undamaged_copy_has_no_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    copy_fixture(&trace);
    let json = limited(&["report", "--json"], &trace);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["integrity"]["problems"], serde_json::json!([]));
    assert_eq!(v["run"]["omp_events"], OMP_ROWS.iter().sum::<u64>());
    assert_eq!(v["run"]["mpi_events"], MPI_ROWS.iter().sum::<u64>());
}

#[test]
fn absurd_counts_in_the_manifest_and_rank_files() {
    let json = check(
        "world_size u32::MAX",
        |t| edit_json(&t.join("manifest.json"), |m| m["world_size"] = 4294967295u64.into()),
        Expect::Listed {
            partial: false,
            texts: &["manifest.json: world_size 4294967295 is more than the 16777216 ranks hyscope reads; taken as 2, the ranks present"],
            in_exports: true,
        },
    )
    .unwrap();
    assert_eq!(json["run"]["ranks"], 2);

    // Ranks missing: the report's memory follows the 2 ranks present.
    let json = check(
        "world_size 100000",
        |t| edit_json(&t.join("manifest.json"), |m| m["world_size"] = 100000.into()),
        Expect::Listed {
            partial: true,
            texts: &["the job had 100000 ranks but 99998 of them (2–99999) left no rank file, manifest entry or data"],
            in_exports: true,
        },
    )
    .unwrap();
    assert_eq!(json["run"]["ranks"], 2);

    let json = check(
        "threads u32::MAX",
        |t| edit_json(&t.join("ranks/rank-1.json"), |r| r["threads"] = 4294967295u64.into()),
        Expect::Listed {
            partial: false,
            texts: &["rank 1, ranks/rank-1.json: claims 4294967295 OpenMP threads (more than 65536); the count is ignored"],
            in_exports: false,
        },
    )
    .unwrap();
    // The rows tell: 2 threads.
    assert_eq!(json["run"]["threads_per_rank"], serde_json::json!([2, 2]));

    let json = check(
        "rank file claims rank u32::MAX",
        |t| edit_json(&t.join("ranks/rank-1.json"), |r| r["rank"] = 4294967295u64.into()),
        Expect::Listed {
            partial: false,
            texts: &["rank 1, ranks/rank-1.json: claims rank 4294967295 but is named for rank 1; not merged"],
            in_exports: true,
        },
    )
    .unwrap();
    assert_eq!(json["run"]["ranks"], 2);
}

#[test]
fn absurd_clock_offsets_are_ignored_with_a_message() {
    let json = check(
        "clock offsets ±i64::MAX",
        |t| {
            edit_json(&t.join("ranks/rank-1.json"), |r| {
                r["clock_offsets"][0]["offset_ns"] = i64::MAX.into();
                r["clock_offsets"][1]["offset_ns"] = i64::MIN.into();
            })
        },
        Expect::Listed {
            partial: false,
            texts: &["rank 1, ranks/rank-1.json: clock offset 9223372036854775807 ns at local time 4344869618876 ns is out of range"],
            in_exports: false,
        },
    )
    .unwrap();
    let d = json["run"]["duration_s"].as_f64().unwrap();
    assert!(d > 2.0 && d < 3.0, "duration {d} s");
}

#[test]
fn missing_files_against_the_manifest_and_rank_files() {
    check(
        "omp/rank=1 deleted",
        |t| rm(&t.join("omp/rank=1")),
        Expect::Listed {
            partial: true,
            texts: &[
                "rank 1, omp/rank=1: ranks/rank-1.json lists 3297 OpenMP rows but omp/rank=1 has no part: 3297 missing",
            ],
            in_exports: true,
        },
    );
    check(
        "mpi/ deleted",
        |t| rm(&t.join("mpi")),
        Expect::Listed {
            partial: true,
            texts: &[
                "rank 0, mpi/rank=0: ranks/rank-0.json lists 23 MPI rows but mpi/rank=0 has no part: 23 missing",
                "rank 1, mpi/rank=1: ranks/rank-1.json lists 23 MPI rows but mpi/rank=1 has no part: 23 missing",
            ],
            in_exports: true,
        },
    );
    // The job manifest lists rank 1 (with the counts of its end, 2048 OpenMP
    // rows then), nothing else of it is left.
    check(
        "rank 1 missing",
        |t| {
            for d in ["omp", "mpi", "samples", "symbols"] {
                rm(&t.join(d).join("rank=1"));
            }
            rm(&t.join("ranks/rank-1.json"));
        },
        Expect::Listed {
            partial: true,
            texts: &[
                "rank 1, omp/rank=1: manifest.json lists 2048 OpenMP rows but omp/rank=1 has no part: 2048 missing",
            ],
            in_exports: true,
        },
    );
    check(
        "part renamed beyond u32",
        |t| {
            let dir = t.join("omp/rank=0");
            std::fs::rename(
                dir.join("part-0.parquet"),
                dir.join("part-4294967296.parquet"),
            )
            .unwrap();
        },
        Expect::Listed {
            partial: true,
            texts: &[
                "rank 0, omp/rank=0/part-4294967296.parquet: not named `part-<k>.parquet` (k below 2^32): not read",
                // The recording's second part of rank 0 (6 rows) is still read.
                "rank 0, omp/rank=0: ranks/rank-0.json lists 3297 OpenMP rows but its 1 part(s) hold 6: 3291 missing",
            ],
            in_exports: true,
        },
    );
    check(
        "part left open",
        |t| std::fs::write(t.join("mpi/rank=0/part-7.parquet.tmp"), b"PAR1").unwrap(),
        Expect::Listed {
            partial: true,
            texts: &[
                "rank 0, mpi/rank=0/part-7.parquet.tmp: a part its writer has not closed (still recording, or the process ended while writing it): its rows are not read",
            ],
            in_exports: true,
        },
    );
}

#[test]
fn lost_openmp_data_is_not_a_missing_runtime() {
    // A crashed job: no `openmp` section in the manifest, and no OpenMP rows.
    for (name, damage) in [
        ("omp/ deleted", (|t: &Path| rm(&t.join("omp"))) as fn(&Path)),
        ("nothing but a draft manifest", |t: &Path| {
            for d in ["omp", "mpi", "samples", "symbols", "ranks"] {
                rm(&t.join(d));
            }
            edit_json(&t.join("manifest.json"), |m| {
                m["ranks"] = serde_json::json!([])
            });
        }),
    ] {
        let json = check(
            name,
            |t| {
                damage(t);
                edit_json(&t.join("manifest.json"), |m| {
                    m.as_object_mut().unwrap().remove("openmp");
                });
            },
            Expect::Listed {
                partial: true,
                texts: &[],
                in_exports: true,
            },
        )
        .unwrap();
        let regions = json["regions"].to_string();
        assert!(
            regions.contains(
                "no OpenMP events in what the trace kept: it is partial (see its problems)"
            ),
            "{name}: {regions}"
        );
    }
}

#[test]
fn times_outside_the_run_are_clipped_with_a_message() {
    let json = check(
        "two rows outside the run",
        |t| {
            let trace = Trace::open(t).unwrap();
            let part = trace.parts(Table::Omp)[0].clone();
            assert_eq!(part.rank, 0);
            let mut rows: Vec<OmpRecord> =
                read_part_records(&part, &ScanOptions::default()).unwrap();
            rows[0].end_ns = 1_000_000_000_000_000_000; // 31 years after boot
            rows[1].start_ns = 0; // an hour before the run
            rm(&part.path);
            let mut w = PartWriter::create(t, Table::Omp, 0, WriterOptions::default()).unwrap();
            w.write_records(&rows).unwrap();
            w.finish().unwrap();
            // The trace files as the recording left them, 3 s after its start
            // (the run's end is bounded by when they were written).
            let start_unix_ns = trace.manifest.start_unix_ns as u64;
            let written = std::time::UNIX_EPOCH
                + std::time::Duration::from_nanos(start_unix_ns + 3_000_000_000);
            for f in ["manifest.json", "ranks/rank-0.json", "ranks/rank-1.json"] {
                let file = std::fs::File::options()
                    .write(true)
                    .open(t.join(f))
                    .unwrap();
                file.set_modified(written).unwrap();
            }
        },
        Expect::Listed {
            partial: true,
            texts: &["rank 0, omp/rank=0: 2 OpenMP rows have times outside the run ("],
            in_exports: false,
        },
    )
    .unwrap();
    // From 60 s before the start to 60 s after the files were written, at most.
    let d = json["run"]["duration_s"].as_f64().unwrap();
    assert!(d > 2.0 && d <= 123.0, "duration {d} s");
}

/// A rank with a damaged `omp`, `mpi` or `samples` part is left out of the
/// report whole (`hyscope_analyzer::damaged_parts`): exit 0, the file and
/// the rank listed first; the run header counts rank 0's events only. The
/// timeline index leaves it out by the same rule (its list is the
/// analysis's, though it reads no samples and a few columns of the rest),
/// and so do the exports: exit 0, one `hyscope:` line naming the rank and
/// the file, no event of rank 1 (Perfetto `pid` 2).
#[test]
fn a_flipped_byte_in_a_part_leaves_its_rank_out() {
    for table in ["omp", "mpi", "samples"] {
        let file = format!("{table}/rank=1/part-0.parquet");
        let tmp = tempfile::tempdir().unwrap();
        let trace = tmp.path().join("trace");
        copy_fixture(&trace);
        let path = trace.join(&file);
        let mut bytes = std::fs::read(&path).unwrap();
        // Inside the first column chunk's data (after the 4-byte magic).
        bytes[40] ^= 0x10;
        std::fs::write(&path, bytes).unwrap();
        let run = run_all(&trace, tmp.path());
        for (cmd, out) in [
            ("report", &run.report),
            ("report --json", &run.json),
            ("export perfetto", &run.perfetto),
            ("export otf2", &run.otf2),
        ] {
            assert_eq!(
                out.status.code(),
                Some(0),
                "{file}: `{cmd}`:\n{}",
                stderr(out)
            );
        }
        let report = String::from_utf8_lossy(&run.report.stdout);
        let said = format!(
            "! rank 1, {file}: a part of rank 1's `{table}` table cannot be read (corrupt or truncated Parquet file: checksum mismatch in bytes 0.."
        );
        assert!(report.contains(&said), "{file}:\n{report}");
        assert!(
            report.contains("1 of 2 ranks analysed (rank 1 left out"),
            "{file}:\n{report}"
        );
        let json: serde_json::Value = serde_json::from_slice(&run.json.stdout).unwrap();
        assert_eq!(json["ranks_left_out"][0]["rank"], 1, "{file}");
        assert_eq!(json["ranks_left_out"][0]["file"], file.as_str());
        // The run header: rank 0's events (the rank files' counts), of 1 of 2 ranks.
        assert_eq!(json["run"]["omp_events"], OMP_ROWS[0], "{file}");
        assert_eq!(json["run"]["mpi_events"], MPI_ROWS[0], "{file}");
        assert!(
            report.contains(" MPI, ")
                && report.contains(" samples — 1 of 2 ranks, rank 1 left out"),
            "{file}:\n{report}"
        );
        // The timeline index: the analysis's list, the same rule.
        let index = hyscope_analyzer::timeline::TimelineIndex::build(&Trace::open(&trace).unwrap())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let listed: Vec<hyscope_analyzer::model::LeftOutPart> =
            serde_json::from_value(json["ranks_left_out"].clone()).unwrap();
        assert_eq!(index.left_out(), &listed[..], "{file}");
        assert!(index.rows().iter().all(|r| r.rank == 0), "{file}");
        let says = listed[0].says();
        for (cmd, out) in [
            ("export perfetto", &run.perfetto),
            ("export otf2", &run.otf2),
        ] {
            let err = stderr(out);
            assert!(
                err.contains(&format!(
                    "hyscope: partial trace {}: {says}; this export has the rest",
                    trace.display()
                )),
                "{file}: `{cmd}` does not name the rank and file:\n{err}"
            );
        }
        let perfetto: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("out.json")).unwrap()).unwrap();
        let of_rank1 = perfetto["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["pid"] == 2 && e["ph"] != "M")
            .count();
        assert_eq!(of_rank1, 0, "{file}: rank 1's events exported");
    }
}

/// A damaged `symbols` part is still an error naming it (no rank is left
/// out for its code labels: every view would label its addresses apart).
#[test]
fn a_flipped_byte_in_a_symbols_part_is_an_error_naming_it() {
    let file = "symbols/rank=1/part-0.parquet";
    check(
        file,
        |t| {
            let path = t.join(file);
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[40] ^= 0x10;
            std::fs::write(&path, bytes).unwrap();
        },
        Expect::Error {
            file,
            message: "checksum mismatch in bytes 0..",
        },
    );
}

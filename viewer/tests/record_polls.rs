//! Folded polls end to end with real `mpirun`: `tests/mpi/polls.c` spins on
//! `MPI_Test`, `MPI_Iprobe`, `MPI_Testany`, `MPI_Testsome` and `MPI_Testall`
//! until a message rank 1 sends after a nap arrives, then polls two requests
//! in turns of up to 3 polls from one call site, and prints how many polls
//! of each loop found nothing. The trace holds a few rows per loop whose
//! `calls` add up to exactly those counts plus the successful polls (rows of
//! their own, `calls` 1); `hyscope report` (text and `--json`), the
//! Perfetto export and the OTF2 export (read back by `otf2-print`) say the
//! same. With `kill`, rank 0 dies by SIGKILL in a last polling loop: what
//! the writer spooled before is kept; with `segv`, by SIGSEGV: the crash
//! handler spools the open run too, and every poll is kept.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hyscope_format::mpi_call;
use hyscope_format::{MpiRecord, ScanOptions, Trace};
use record_support::*;
use serde_json::Value;

fn polls_program(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/polls.c");
    build_mpi(dir, "polls", &std::fs::read_to_string(src).unwrap())
}

/// The `<key> <n>` lines the program printed.
fn printed(stdout: &[u8]) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// `hyscope export --format <format> -o <out> <trace>`; returns `out`.
fn export(trace: &Path, format: &str, out: &Path) -> PathBuf {
    run_ok(
        hyscope()
            .args(["export", "--format", format, "-o"])
            .arg(out)
            .arg(trace),
    );
    out.to_path_buf()
}

/// Rank 0's rows of `call`, in time order.
fn rows_of(rows: &[(u32, MpiRecord)], call: u16) -> Vec<MpiRecord> {
    let mut v: Vec<MpiRecord> = rows
        .iter()
        .filter(|(rank, r)| *rank == 0 && r.call == call)
        .map(|(_, r)| *r)
        .collect();
    v.sort_by_key(|r| r.start_ns);
    v
}

fn sum_calls<'a>(rows: impl IntoIterator<Item = &'a MpiRecord>) -> u64 {
    rows.into_iter().map(|r| u64::from(r.calls)).sum()
}

/// Whether a row of a poll call is its loop's successful poll (a
/// `REQUEST_COMPLETE` of rank 0 at its end, or for `MPI_Iprobe` none
/// needed: the row with `bytes_recv` from the probed status).
fn successful(rows: &[(u32, MpiRecord)], r: &MpiRecord) -> bool {
    if r.call == mpi_call::MPI_Iprobe {
        return r.calls == 1 && r.bytes_recv == 4;
    }
    rows.iter().any(|(rank, c)| {
        *rank == 0
            && c.call == mpi_call::REQUEST_COMPLETE
            && c.start_ns == r.end_ns
            && c.callsite == r.callsite
    })
}

#[test]
fn polling_loops_fold_into_few_rows_with_exact_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let prog = polls_program(tmp.path());
    let dir = tmp.path().join("trace");
    let out = run_ok(
        record_into(&dir)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&prog),
    );
    let counts = printed(&out.stdout);
    let trace = Trace::open(&dir).unwrap();
    let rows: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();

    // Every loop but the interleaved one: its unsuccessful polls in rows
    // that add up to the program's count, one successful poll of its own
    // (calls 1, after every folded row), and few rows: a run spans at most
    // 0.1 s, the loop ~0.15 s.
    let single_loops = [
        ("iprobe", mpi_call::MPI_Iprobe),
        ("testany", mpi_call::MPI_Testany),
        ("testsome", mpi_call::MPI_Testsome),
        ("testall", mpi_call::MPI_Testall),
    ];
    for (key, call) in single_loops {
        let polls = rows_of(&rows, call);
        let (ok, failed): (Vec<MpiRecord>, Vec<MpiRecord>) =
            polls.iter().partition(|r| successful(&rows, r));
        assert_eq!(ok.len(), 1, "{key}: one successful poll: {polls:?}");
        assert_eq!(ok[0].calls, 1, "{key}");
        assert_eq!(sum_calls(&failed), counts[key], "{key}: {failed:?}");
        assert!(
            counts[key] > 100 && failed.len() <= 20,
            "{key}: {} polls in {} rows",
            counts[key],
            failed.len()
        );
        assert!(failed.iter().all(|f| f.end_ns <= ok[0].start_ns), "{key}");
    }

    // MPI_Test: the first loop's call site, and `poll_three`'s.
    let tests = rows_of(&rows, mpi_call::MPI_Test);
    let first_site = tests[0].callsite;
    let (first, three): (Vec<MpiRecord>, Vec<MpiRecord>) =
        tests.iter().partition(|r| r.callsite == first_site);
    let (ok, failed): (Vec<MpiRecord>, Vec<MpiRecord>) =
        first.iter().partition(|r| successful(&rows, r));
    assert_eq!(ok.len(), 1, "{first:?}");
    assert_eq!(sum_calls(&failed), counts["test"]);
    assert!(failed.len() <= 20, "{} rows", failed.len());

    // Two requests in turns of up to 3 polls from one call site: a run
    // never mixes them, so while both are pending no row stands for more
    // than 3 polls; once the first completed, the other's turns follow one
    // another and fold together.
    let (ok, failed): (Vec<MpiRecord>, Vec<MpiRecord>) =
        three.iter().partition(|r| successful(&rows, r));
    assert_eq!(ok.len(), 2, "two successful polls: {ok:?}");
    assert!(ok.iter().all(|r| r.calls == 1));
    assert_eq!(
        sum_calls(&failed),
        counts["interleaved_a"] + counts["interleaved_b"]
    );
    let both_pending: Vec<&MpiRecord> = failed
        .iter()
        .filter(|r| r.end_ns <= ok[0].start_ns)
        .collect();
    assert!(!both_pending.is_empty());
    assert!(
        both_pending.iter().all(|r| r.calls <= 3),
        "{:?}",
        both_pending.iter().map(|r| r.calls).max()
    );
    assert!(both_pending.iter().any(|r| r.calls == 3));

    // The report: calls = the program's polls + the successful ones, and
    // the folded ones (rows of more than one poll) with their rows.
    let expect = |call: u16| {
        let polls = rows_of(&rows, call);
        let folded: Vec<&MpiRecord> = polls.iter().filter(|r| r.calls > 1).collect();
        (
            sum_calls(&polls),
            sum_calls(folded.iter().copied()),
            folded.len() as u64,
        )
    };
    let test_calls = counts["test"] + counts["interleaved_a"] + counts["interleaved_b"] + 3;
    assert_eq!(expect(mpi_call::MPI_Test).0, test_calls);
    let json: Value =
        serde_json::from_slice(&run_ok(hyscope().args(["report", "--json"]).arg(&dir)).stdout)
            .unwrap();
    let stats = json["mpi"]["observed"]["calls"].as_array().unwrap();
    let text = String::from_utf8(run_ok(hyscope().arg("report").arg(&dir)).stdout).unwrap();
    for (name, printed_polls) in [
        ("MPI_Test", test_calls - 3),
        ("MPI_Iprobe", counts["iprobe"]),
        ("MPI_Testany", counts["testany"]),
        ("MPI_Testsome", counts["testsome"]),
        ("MPI_Testall", counts["testall"]),
    ] {
        let (calls, folded, folded_rows) = expect(mpi_call::code(name).unwrap());
        let s = stats.iter().find(|s| s["call"] == name).unwrap();
        assert_eq!(s["count"].as_u64(), Some(calls), "{name}");
        // Rank 1 makes none of these calls: each count is rank 0's polls
        // and its successful ones.
        let successful = if name == "MPI_Test" { 3 } else { 1 };
        assert_eq!(calls, printed_polls + successful, "{name}");
        assert_eq!(s["folded_polls"].as_u64(), Some(folded), "{name}");
        assert_eq!(s["folded_rows"].as_u64(), Some(folded_rows), "{name}");
        let line = format!(
            "{name}: {calls} calls, {folded} unsuccessful polls folded into {folded_rows} records"
        );
        assert!(text.contains(&line), "no `{line}` in\n{text}");
    }

    // Perfetto: one event per folded row, the count as an argument.
    let json_out = export(&dir, "perfetto", &tmp.path().join("trace.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
    let folded_args: Vec<u64> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["args"]["polls_folded"].as_u64())
        .collect();
    let folded_rows: Vec<u64> = rows
        .iter()
        .filter(|(_, r)| r.calls > 1)
        .map(|(_, r)| u64::from(r.calls))
        .collect();
    assert_eq!(folded_args.len(), folded_rows.len());
    assert_eq!(
        folded_args.iter().sum::<u64>(),
        folded_rows.iter().sum::<u64>()
    );

    // OTF2: one Enter per folded row with the attribute `polls_folded`.
    let otf2 = export(&dir, "otf2", &tmp.path().join("otf2"));
    let print = std::process::Command::new("otf2-print")
        .arg(otf2.join("traces.otf2"))
        .output_within_limit()
        .unwrap();
    assert!(print.status.success(), "{}", stderr(&print));
    let attrs: Vec<u64> = String::from_utf8_lossy(&print.stdout)
        .lines()
        .filter_map(|l| l.split("(\"polls_folded\"").nth(1))
        .map(|rest| {
            let n = rest.rsplit("; ").next().unwrap().trim_end_matches(')');
            n.parse().unwrap()
        })
        .collect();
    assert_eq!(attrs.len(), folded_rows.len());
    assert_eq!(attrs.iter().sum::<u64>(), folded_rows.iter().sum::<u64>());
}

/// Record `polls MODE` (rank 0 dies in its last polling loop); the
/// program's printed counts, the polls of that loop the trace kept, the
/// loop's rows, and the job's stderr.
fn record_dying(mode: &str) -> (BTreeMap<String, u64>, u64, Vec<MpiRecord>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let prog = polls_program(tmp.path());
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg("mpirun")
        .args(mpirun_args(2))
        .arg(&prog)
        .arg(mode)
        .output_within_limit()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let counts = printed(&out.stdout);
    let trace = Trace::open(&dir).unwrap();
    let rows: Vec<(u32, MpiRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    // The last loop's rows: MPI_Test rows of rank 0 after the interleaved
    // loop's last successful poll.
    let tests = rows_of(&rows, mpi_call::MPI_Test);
    let last_ok = tests
        .iter()
        .filter(|r| successful(&rows, r))
        .map(|r| r.end_ns)
        .max()
        .unwrap();
    let last: Vec<MpiRecord> = tests.into_iter().filter(|r| r.start_ns > last_ok).collect();
    let kept = sum_calls(&last);
    (counts, kept, last, stderr(&out))
}

#[test]
fn a_crash_in_a_polling_loop_keeps_every_poll() {
    let (counts, kept, rows, err) = record_dying("segv");
    assert_eq!(kept, counts["killed_loop"], "{rows:?}\n{err}");
    assert!(rows.len() <= 10, "{} rows", rows.len());
}

#[test]
fn a_killed_polling_loop_keeps_what_was_spooled() {
    let (counts, kept, killed, err) = record_dying("kill");
    let polled = counts["killed_loop"];
    // Runs are cut every 0.1 s and the writer spools every 0.4 s: of the
    // 1.5 s loop, what was older than that at the kill is in the trace,
    // never more polls than the program made.
    eprintln!("kept {kept} of {polled} polls of the killed loop");
    assert!(kept <= polled, "kept {kept} of {polled}");
    let span_ns = killed.last().map_or(0, |l| l.end_ns) - killed.first().map_or(0, |f| f.start_ns);
    assert!(
        span_ns >= 300_000_000,
        "the kept rows span {span_ns} ns of the 1.5 s loop ({kept} of {polled} polls): {err}"
    );
    assert!(killed.iter().all(|r| r.calls >= 1));
}

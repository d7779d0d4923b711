//! `hyscope report A B`, the comparison of two traces, as a user reads it:
//! synthetic traces whose difference is known (written with the real
//! format writer by `hyscope_testkit`'s builder), compared by the real
//! binary. Each run is named, a partial trace is said so before any
//! number, runs that do not compare as they stand are said so, every
//! number is written in its unit, and what only one run has is listed.

use std::path::Path;

use hyscope_testkit::compare_line as line;

use hyscope_format::mpi_call as c;
use hyscope_testkit::late_sender::late_sender;
use hyscope_testkit::trace::{Builder, MS};

/// `hyscope report A B`'s standard output (it must succeed).
fn compare(a: &Builder, b: &Builder) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("A"), dir.path().join("B"));
    for (path, builder) in [(&pa, a), (&pb, b)] {
        std::fs::create_dir(path).unwrap();
        builder.write(path);
    }
    report(&pa, &pb)
}

fn report(a: &Path, b: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hyscope"))
        .arg("report")
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// B's sender is 200 ms later and sends 3 MiB more: the comparison says
/// +200 ms of late-sender wait and of `MPI_Recv`, 1.00 MiB → 4.00 MiB,
/// each written by `units` (no raw seconds or byte counts), and names the
/// two runs with their commands.
#[test]
fn known_differences_in_their_units_with_their_signs() {
    let a = late_sender("./k 100 1048576", 100, 1 << 20, true);
    let b = late_sender("./k 300 4194304", 300, 4 << 20, true);
    let text = compare(&a, &b);
    assert!(text.contains("A = "), "{text}");
    assert!(
        text.contains(": ./k 100 1048576 (2 ranks × 1 thread"),
        "{text}"
    );
    assert!(
        text.contains(": ./k 300 4194304 (2 ranks × 1 thread"),
        "{text}"
    );
    assert!(!text.contains("1 threads"), "{text}");
    let wait = line(&text, "MPI late sender", "time");
    for s in ["100.00 ms", "300.00 ms", "+200.00 ms", "3.00"] {
        assert!(wait.contains(s), "{wait}");
    }
    let recv = line(&text, "MPI_Recv", "time");
    assert!(
        recv.contains("101.00 ms") && recv.contains("301.00 ms"),
        "{recv}"
    );
    assert!(recv.contains(" +200.00 ms"), "{recv}");
    let bytes = line(&text, "point-to-point messages", "bytes");
    for s in ["1.00 MiB", "4.00 MiB", "+3.00 MiB", "4.00"] {
        assert!(bytes.contains(s), "{bytes}");
    }
    assert!(!text.contains("1048576.0"), "{text}");
    let count = line(&text, "MPI_Allreduce", "count");
    assert!(!count.contains(".000"), "{count}");
    let pop = line(&text, "POP MPI parallel efficiency", "efficiency");
    assert!(pop.contains(" %") && pop.contains(" pp"), "{pop}");
    // Same program, same ranks, whole traces: nothing to warn of.
    assert!(!text.contains("Not comparable"), "{text}");
}

/// A trace that lost a rank's events is said so, for that run, before any
/// number of the comparison.
#[test]
fn a_partial_trace_is_named_before_any_number() {
    let a = late_sender("./k 100 1048576", 100, 1 << 20, true);
    let mut b = late_sender("./k 100 1048576", 100, 1 << 20, true);
    b.manifest.ranks[1].dropped_events = 7;
    let text = compare(&a, &b);
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{text}"))
    };
    let table = at("B − A");
    assert!(at("B: PARTIAL TRACE") < table, "{text}");
    assert!(at("rank 1 dropped 7 events") < table, "{text}");
    assert!(at("B is a partial trace") < table, "{text}");
    assert!(!text.contains("A: PARTIAL TRACE"), "{text}");
}

/// Another program, another rank count: said before the numbers.
#[test]
fn runs_that_do_not_compare_as_they_stand_are_said_so() {
    let a = late_sender("./k 100 1048576", 100, 1 << 20, true);
    let mut b = Builder::new(3, 1, 1);
    b.manifest.command = vec!["/tmp/p3".into()];
    b.call(0, c::MPI_Send, 0, MS, 1, 100, 1);
    b.call(1, c::MPI_Recv, 0, MS, 0, 100, 2);
    let text = compare(&a, &b);
    let table = text.find("B − A").unwrap();
    for s in [
        "different programs: A ran `./k 100 1048576`, B ran `/tmp/p3`",
        "different rank counts: A has 2 ranks, B 3",
    ] {
        let at = text
            .find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{text}"));
        assert!(at < table, "{text}");
    }
}

/// What one run has and the other has not is listed, not dropped.
#[test]
fn what_only_one_run_has_is_listed() {
    let a = late_sender("./k 100 1048576", 100, 1 << 20, true);
    let b = late_sender("./k 100 1048576", 100, 1 << 20, false);
    let text = compare(&a, &b);
    let only = text
        .find("Only in A")
        .unwrap_or_else(|| panic!("no Only in A in\n{text}"));
    assert!(text[only..].contains("MPI_Allreduce"), "{text}");
    assert!(!text.contains("Only in B"), "{text}");
}

/// 2 ranks against 3, the same exchange between ranks 0 and 1: the text
/// says that what sums over ranks is per rank, in the title, the caveat
/// and each such row's metric; the run's duration stays a total.
#[test]
fn different_rank_counts_are_compared_per_rank() {
    let a = late_sender("./k 100 1048576", 100, 1 << 20, false);
    let mut b = Builder::new(3, 1, 1);
    b.manifest.command = vec!["./k".into(), "100".into(), "1048576".into()];
    b.call(0, c::MPI_Send, 100 * MS, 101 * MS, 1, 1 << 20, 1);
    b.call(1, c::MPI_Recv, 0, 101 * MS, 0, 1 << 20, 2);
    let text = compare(&a, &b);
    assert!(
        text.contains("Differences (B − A), per rank where summed over ranks (A / 2 ranks, B / 3)"),
        "{text}"
    );
    assert!(text.contains("compared per rank"), "{text}");
    // 1 Recv of 101 ms over 2 ranks, then over 3: 50.50 ms, 33.67 ms a rank.
    let recv = line(&text, "MPI_Recv", "time/rank");
    assert!(
        recv.contains("50.50 ms") && recv.contains("33.67 ms"),
        "{recv}"
    );
    line(&text, "run", "duration");
    assert!(!text.contains("duration/rank"), "{text}");
}

/// The words of the line of `item` and `metric`, the item's words first.
fn words<'a>(text: &'a str, item: &str, metric: &str) -> Vec<&'a str> {
    line(text, item, metric).split_whitespace().collect()
}

/// 2 ranks meeting in `calls` `MPI_Allreduce`s of 10, 11, 12, 13 ms
/// (repeated), rank 1 entering the first one `late_ms` after rank 0.
fn allreduces(calls: usize, late_ms: i64) -> Builder {
    let mut b = Builder::new(2, 1, 1);
    b.manifest.command = vec!["./k".into()];
    for i in 0..calls {
        let t = 30 * i as i64 * MS;
        let d = (10 + i as i64 % 4) * MS;
        let late = if i == 0 { late_ms * MS } else { 0 };
        b.collective(0, c::MPI_Allreduce, t, t + d + late, -1, 3);
        b.collective(1, c::MPI_Allreduce, t + late, t + d + late, -1, 3);
    }
    b
}

/// Twice the calls, each as long: the time doubles (beyond noise), the
/// count is exact, and the time per call, in the row after the count, is
/// the same (within noise). A wait at N×N is named once, as MPI's.
#[test]
fn twice_the_calls_reads_as_twice_the_calls_not_slower_calls() {
    let text = compare(&allreduces(8, 5), &allreduces(16, 20));
    let time = words(&text, "MPI_Allreduce", "time");
    assert_eq!(time[time.len() - 1], "beyond", "{text}");
    // 189 ms and 388 ms: twice the calls, and the later first call.
    assert_eq!(time[time.len() - 2], "2.05", "{text}");
    assert_eq!(
        words(&text, "MPI_Allreduce", "count")[1..],
        ["count", "16", "32", "+16", "2.00", "exact"],
        "{text}"
    );
    let per = words(&text, "MPI_Allreduce", "time/call");
    // 11.5 ms a call on rank 0 and 1 alike, but for the late first call.
    assert_eq!(per[per.len() - 1], "within", "{text}");
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let count = lines
        .iter()
        .position(|l| l.starts_with("MPI_Allreduce") && l.contains(" count "))
        .unwrap();
    assert!(lines[count + 1].contains(" time/call "), "{text}");
    // The wait state: rank 1 waits for rank 0's first call, 5 then 20 ms.
    let wait = words(&text, "MPI wait at N×N", "time");
    assert_eq!(
        wait[..7],
        ["MPI", "wait", "at", "N×N", "time", "5.00", "ms"],
        "{text}"
    );
    assert!(!text.contains("wait wait"), "{text}");
    assert!(!text.contains("mpi MPI_"), "{text}");
}

/// Profile-mode traces of a format before 1.10 carry no sums of squares:
/// their regions' and loops' times say `—`, and why, under the table;
/// every other row has a verdict.
#[test]
fn older_profile_traces_say_why_their_regions_have_no_noise_estimate() {
    use hyscope_format::{OmpKind, OmpRecord};
    let old = |ms: i64| {
        let mut b = Builder::new(1, 2, 1);
        b.manifest.command = vec!["./k".into()];
        b.manifest.mode = "profile".into();
        b.manifest.format_version = "1.9".into();
        b.symbol(0x4010, "k.c", 33);
        b.symbol(0x4020, "k.c", 35);
        let summary =
            |thread: u32, kind: OmpKind, flags: u32, codeptr: u64, total: i64| OmpRecord {
                thread,
                kind: OmpKind::Summary as u8,
                variant: kind as u8,
                end_ns: 1_000 * MS,
                codeptr,
                count: 20,
                chunk_start: total as u64,
                flags,
                team_size: 2,
                ..OmpRecord::default()
            };
        b.omp(0, summary(0, OmpKind::Parallel, 0, 0x4010, 20 * ms * MS));
        b.omp(
            0,
            summary(
                0,
                OmpKind::ImplicitTask,
                0,
                0x4010,
                20 * (ms * MS - 100_000),
            ),
        );
        for thread in 0..2 {
            b.omp(0, summary(thread, OmpKind::Work, 10, 0x4020, 20 * ms * MS));
        }
        b
    };
    let text = compare(&old(5), &old(7));
    for item in ["region k.c:33", "loop k.c:35"] {
        let time = words(&text, item, "time");
        assert_eq!(time[time.len() - 1], "—", "{text}");
    }
    assert!(
        text.contains("`—` on 2 rows: recorded in profile mode before format 1.10 (this trace: 1.9), whose totals keep no sums of squares"),
        "{text}"
    );
    assert!(
        text.contains("`—` on 1 row: profile mode: a region's fork/join"),
        "{text}"
    );
    assert!(
        text.contains("; 3 whose scatter the traces do not keep (`—`)"),
        "{text}"
    );
}

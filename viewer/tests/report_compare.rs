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
    let wait = line(&text, "wait late sender", "time");
    for s in ["100.00 ms", "300.00 ms", "+200.00 ms", "3.00"] {
        assert!(wait.contains(s), "{wait}");
    }
    let recv = line(&text, "mpi MPI_Recv", "time");
    assert!(
        recv.contains("101.00 ms") && recv.contains("301.00 ms"),
        "{recv}"
    );
    assert!(recv.contains(" +200.00 ms"), "{recv}");
    let bytes = line(&text, "messages point-to-point", "bytes");
    for s in ["1.00 MiB", "4.00 MiB", "+3.00 MiB", "4.00"] {
        assert!(bytes.contains(s), "{bytes}");
    }
    assert!(!text.contains("1048576.0"), "{text}");
    let count = line(&text, "mpi MPI_Allreduce", "count");
    assert!(!count.contains(".000"), "{count}");
    let pop = line(&text, "pop MPI parallel efficiency", "efficiency");
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
    assert!(text[only..].contains("mpi MPI_Allreduce"), "{text}");
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
    let recv = line(&text, "mpi MPI_Recv", "time/rank");
    assert!(
        recv.contains("50.50 ms") && recv.contains("33.67 ms"),
        "{recv}"
    );
    line(&text, "run job", "duration");
    assert!(!text.contains("duration/rank"), "{text}");
}

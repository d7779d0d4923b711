//! Point-to-point messages however they are written, and communicators, end
//! to end with real `mpirun`: recorded, analysed by `hyscope report --json`
//! and exported to OTF2 read back by `otf2-print`, against answers the
//! programs know (`tests/mpi/late_sender.c`, `tests/mpi/two_comms.c`).

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use record_support::*;
use serde_json::Value;

/// `hyscope export --format otf2` of a trace, then `otf2-print` of the
/// events (and with `-G`, of the global definitions).
fn otf2_print(trace: &Path, out: &Path) -> (String, String) {
    run_ok(
        hyscope()
            .args(["export", "--format", "otf2", "-o"])
            .arg(out)
            .arg(trace),
    );
    let archive = out.join("traces.otf2");
    let print = |args: &[&str]| {
        let p = Command::new("otf2-print")
            .args(args)
            .arg(&archive)
            .output_within_limit()
            .unwrap();
        let err = stderr(&p);
        assert!(p.status.success() && !err.contains("warning"), "{err}");
        String::from_utf8(p.stdout).unwrap()
    };
    (print(&[]), print(&["-G"]))
}

/// Lines of `otf2-print` output starting with the record name `kind`.
fn records<'a>(text: &'a str, kind: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.split_whitespace().next() == Some(kind))
        .collect()
}

#[test]
fn late_sender_through_every_way_of_writing_an_exchange() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "late_sender");
    // Variant → the OTF2 send and receive records of its 2 × 20 exchanges.
    let variants = [
        ("send", "MPI_SEND", "MPI_RECV"),
        ("sendrecv", "MPI_SEND", "MPI_RECV"),
        ("replace", "MPI_SEND", "MPI_RECV"),
        ("isend", "MPI_ISEND", "MPI_IRECV"),
    ];
    for (variant, send, recv) in variants {
        let dir = tmp.path().join(format!("trace-{variant}"));
        let out = run_ok(
            record_into(&dir)
                .arg("mpirun")
                .args(mpirun_args(2))
                .arg(&exe)
                .arg(variant),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The program's own measure: rank 0 slept 20 × 10 ms, and the
        // late-sender total it timed from both ranks' clock readings.
        let slept = printed(&stdout, "slept_s");
        let delay = printed(&stdout, "late_sender_total_s");
        assert!(
            slept > 0.19,
            "{variant}: 20 × 10 ms slept, {slept} s measured"
        );
        let reported = late_sender_s(&report_json(&dir));
        let error = (reported - delay).abs() / delay;
        eprintln!(
            "{variant}: late sender {reported:.6} s reported, {delay:.6} s measured ({:+.3} %)",
            (reported - delay) / delay * 100.0
        );
        assert!(
            error <= 0.05,
            "{variant}: late sender {reported} s reported, {delay} s measured ({:.1} %)",
            error * 100.0
        );

        let (events, _) = otf2_print(&dir, &tmp.path().join(format!("otf2-{variant}")));
        assert_eq!(records(&events, send).len(), 40, "{variant}: {send}");
        assert_eq!(records(&events, recv).len(), 40, "{variant}: {recv}");
        if variant.starts_with("send") || variant == "replace" {
            // Each rank's receives name the other rank (the status resolved
            // the Sendrecv's wildcards), tag 3, 8 doubles.
            for line in records(&events, recv) {
                assert!(line.contains("Tag: 3, Length: 64"), "{variant}: {line}");
            }
        }
    }
}

/// The report's communicator entry named `name`.
fn communicator<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["mpi"]["observed"]["communicators"]
        .as_array()
        .expect("communicators")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no communicator {name}: {report:#}"))
}

#[test]
fn two_communicators_keep_their_messages_and_collectives() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "two_comms");
    let dir = tmp.path().join("trace");
    run_ok(
        record_into(&dir)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&exe),
    );
    const SPLIT: &str = "MPI_Comm_split #1 of MPI_COMM_WORLD";

    // The report: per communicator, messages and bytes sent on it exactly,
    // and its collectives (calls counted on each member rank).
    let report = report_json(&dir);
    let world = communicator(&report, "MPI_COMM_WORLD");
    assert_eq!(
        (world["messages"].as_u64(), world["bytes"].as_u64()),
        (Some(3), Some(3 * 16))
    );
    assert_eq!(world["collectives"], serde_json::json!({"MPI_Barrier": 2}));
    let split = communicator(&report, SPLIT);
    assert_eq!(
        (split["messages"].as_u64(), split["bytes"].as_u64()),
        (Some(5), Some(5 * 64))
    );
    assert_eq!(
        split["collectives"],
        serde_json::json!({"MPI_Allreduce": 4})
    );
    // Key -rank reversed the order: world rank 1 is the split's rank 0.
    assert_eq!(split["size"], 2);
    assert_eq!(split["members"], serde_json::json!([1, 0]));
    // Every receive found its send: none is left unmatched.
    assert_eq!(report["wait_states"]["observed"]["unmatched_messages"], 0);

    // OTF2: both communicators defined, messages and collectives on their
    // own, peers as ranks in it.
    let (events, defs) = otf2_print(&dir, &tmp.path().join("otf2"));
    let comms = records(&defs, "COMM");
    assert_eq!(comms.len(), 2, "{defs}");
    assert!(comms.iter().any(|l| l.contains(SPLIT)), "{comms:?}");
    let on = |kind: &str, comm: &str| -> BTreeMap<String, usize> {
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for line in records(&events, kind) {
            if line.contains(&format!("\"{comm}\"")) {
                // The peer field: `Receiver: N` / `Sender: N` (or `Root: N`).
                let peer = line
                    .split(", ")
                    .find(|f| f.contains("Receiver: ") || f.contains("Sender: "))
                    .unwrap_or("")
                    .to_string();
                *by.entry(peer).or_default() += 1;
            }
        }
        by
    };
    let count = |m: &BTreeMap<String, usize>| m.values().sum::<usize>();
    let world_sends = on("MPI_SEND", "MPI_COMM_WORLD");
    let split_sends = on("MPI_SEND", SPLIT);
    assert_eq!(
        (count(&world_sends), count(&split_sends)),
        (3, 5),
        "{events}"
    );
    let world_recvs = on("MPI_RECV", "MPI_COMM_WORLD");
    let split_recvs = on("MPI_RECV", SPLIT);
    assert_eq!((count(&world_recvs), count(&split_recvs)), (3, 5));
    // Rank 0 sends to world rank 1: rank 1 of world, rank 0 of the split.
    assert!(
        world_sends.keys().all(|k| k.contains("Receiver: 1")),
        "{world_sends:?}"
    );
    assert!(
        split_sends.keys().all(|k| k.contains("Receiver: 0")),
        "{split_sends:?}"
    );
    assert!(
        world_recvs.keys().all(|k| k.contains("Sender: 0")),
        "{world_recvs:?}"
    );
    assert!(
        split_recvs.keys().all(|k| k.contains("Sender: 1")),
        "{split_recvs:?}"
    );
    assert_eq!(count(&on("MPI_COLLECTIVE_END", SPLIT)), 4);
    assert_eq!(count(&on("MPI_COLLECTIVE_END", "MPI_COMM_WORLD")), 2);
}

//! Recording at scale: a 64-rank hybrid job (2 OpenMP threads per rank) on
//! one oversubscribed node, recorded with `hyscope record` under Open MPI
//! and under MPICH, analysed with `hyscope report --json`: every count and
//! byte of `tests/mpi/scale.c` is in the report, every rank has both clock
//! offsets (measured along the binomial tree, within their bound), and the
//! trace has no problem.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;
use std::process::Command;

use hyscope_format::Trace;
use record_support::*;

const NP: u64 = 64;
/// Rounds of the program (`R` in scale.c).
const ROUNDS: u64 = 3;

fn source() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/scale.c");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn report(trace: &Path) -> serde_json::Value {
    let out = hyscope()
        .args(["report", "--json"])
        .arg(trace)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What the program must have done, checked in its output, the report and the trace.
fn check(trace: &Path, stdout: &str, flavour: &str) {
    // Each rank receives (prev + 1) ints per round and prints it.
    for rank in 0..NP {
        let prev = (rank + NP - 1) % NP;
        let line = format!(
            "rank {rank}: received {} bytes, allreduce total {}, bcast 0",
            ROUNDS * (prev + 1) * 4,
            ROUNDS * NP * 3
        );
        assert!(stdout.lines().any(|l| l == line), "{line}\n{stdout}");
    }
    let v = report(trace);
    let run = &v["run"];
    assert_eq!(run["ranks"], NP);
    assert_eq!(run["mpi_flavour"], flavour);
    assert_eq!(run["dropped_events"], 0);
    assert_eq!(
        run["threads_per_rank"],
        serde_json::json!(vec![2; NP as usize])
    );
    assert_eq!(v["integrity"]["problems"], serde_json::json!([]));
    let calls = v["mpi"]["observed"]["calls"].as_array().unwrap();
    let call = |name: &str| -> (u64, u64, u64) {
        let c = calls
            .iter()
            .find(|c| c["call"] == name)
            .unwrap_or_else(|| panic!("no {name} in {calls:?}"));
        (
            c["count"].as_u64().unwrap(),
            c["bytes_sent"].as_u64().unwrap(),
            c["bytes_recv"].as_u64().unwrap(),
        )
    };
    // Σ over ranks of (rank + 1) ints, each round.
    let ring = ROUNDS * 4 * NP * (NP + 1) / 2;
    assert_eq!(call("MPI_Sendrecv"), (NP * ROUNDS, ring, ring));
    // One double per call (sent and received by every rank).
    assert_eq!(
        call("MPI_Allreduce"),
        (NP * ROUNDS, NP * ROUNDS * 8, NP * ROUNDS * 8)
    );
    // The root sends 8 ints to each other rank; each of them receives 8 ints.
    let bcast = (NP - 1) * 32;
    assert_eq!(call("MPI_Bcast"), (NP, bcast, bcast));
    assert_eq!(call("MPI_Barrier"), (NP, 0, 0));
    assert_eq!(call("MPI_Init_thread").0, NP);
    assert_eq!(call("MPI_Finalize").0, NP);
    // Every ring message matched, with its size.
    let messages = &v["messages"];
    assert_eq!(messages["unmatched_sends"], 0);
    assert_eq!(messages["unmatched_recvs"], 0);
    let list = messages["messages"].as_array().unwrap();
    assert_eq!(list.len() as u64, NP * ROUNDS);
    let bytes: u64 = list.iter().map(|m| m["bytes"].as_u64().unwrap()).sum();
    assert_eq!(bytes, ring);
    // One parallel region per round on every rank.
    let fine = v["openmp"]["observed"]["fine_grain"].as_array().unwrap();
    assert_eq!(fine.len() as u64, NP);
    assert!(fine.iter().all(|f| f["regions"] == ROUNDS), "{fine:?}");

    // Both clock offsets of every rank, each within its bound: one node,
    // one clock, so the true offset is 0 (plus a nanosecond of rounding per
    // tree edge, at most 6 edges for 64 ranks).
    let trace = Trace::open(trace).unwrap();
    assert_eq!(trace.manifest.ranks.len() as u64, NP);
    for r in &trace.manifest.ranks {
        assert_eq!(
            r.clock_offsets.len(),
            2,
            "rank {}: {:?}",
            r.rank,
            r.clock_offsets
        );
        // One node: where every rank read one clock (the same `clock_id`,
        // the shared calibration) the offsets are taken, not measured: (0, 0);
        // otherwise a measured offset estimates 0 within half its round trip.
        let one_clock = trace.manifest.ranks[0].clock_id.is_some()
            && trace
                .manifest
                .ranks
                .iter()
                .all(|x| x.clock_id == trace.manifest.ranks[0].clock_id);
        for o in &r.clock_offsets {
            if r.rank == 0 || one_clock {
                assert_eq!((o.offset_ns, o.rtt_ns), (0, 0), "rank {}", r.rank);
            } else {
                assert!(
                    o.offset_ns.abs() <= o.rtt_ns / 2 + 6,
                    "rank {}: {o:?}",
                    r.rank
                );
            }
        }
        assert!(r.warnings.is_empty(), "rank {}: {:?}", r.rank, r.warnings);
    }
}

fn run_recorded(trace: &Path, launcher: &mut Command) -> String {
    let mut cmd = record_into(trace);
    cmd.arg(launcher.get_program()).args(launcher.get_args());
    let out = run_ok(&mut cmd);
    let err = stderr(&out);
    // The summary line: every rank, and no collector warning.
    assert!(
        err.contains(&format!("{NP} ranks")) && err.contains(" 0 warnings"),
        "{err}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sixty_four_ranks_under_open_mpi_are_recorded_and_analysed_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "scale", &source());
    let trace = tmp.path().join("trace");
    let mut mpirun = Command::new("mpirun");
    mpirun.args(mpirun_args(NP as u32)).arg(&exe);
    let stdout = run_recorded(&trace, &mut mpirun);
    check(&trace, &stdout, "openmpi");
}

#[test]
fn sixty_four_ranks_under_mpich_are_recorded_and_analysed_exactly() {
    let lib = mpich_collector();
    assert!(
        lib.is_file(),
        "{} is missing: run scripts/build-mpich.sh before cargo test (scripts/test.sh does)",
        lib.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpich(tmp.path(), "scale", &source());
    let trace = tmp.path().join("trace");
    let mut mpiexec = Command::new("mpiexec.mpich");
    mpiexec.args(["-n", &NP.to_string()]).arg(&exe);
    let stdout = run_recorded(&trace, &mut mpiexec);
    check(&trace, &stdout, "mpich");
}

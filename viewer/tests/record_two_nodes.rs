//! A job on two nodes, simulated on this machine (`tests/mpi/node-agent.sh`
//! as the launchers' ssh: each node in namespaces of its own, with its own
//! hostname, boot id and `/dev/shm`, the nodes talking over TCP), recorded
//! under Open MPI and MPICH and analysed, against answers known exactly:
//!
//! - each rank is on the node the launcher put it on, and the trace names
//!   both nodes;
//! - the nodes do not share a clock calibration, so the collector measures
//!   their clock offsets at `MPI_Init` and `MPI_Finalize`. Both nodes run on
//!   this machine's one kernel and TSC, so the true offset is 0: every
//!   offset measured must lie within its own error bound (half its round
//!   trip) of 0;
//! - the late-sender total of `tests/mpi/late_sender.c`, which the program
//!   times itself with `CLOCK_MONOTONIC` (one clock for both nodes here),
//!   must be what the report finds, within the report's own clock error for
//!   each of the 40 receives and 5 % for the rest.
//!
//! Where this machine cannot make the namespaces (not root, a container
//! without `CAP_SYS_ADMIN`), the tests say why and check nothing.

use crate::record_support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hyscope_format::Trace;
use record_support::*;

/// Slack on a measured offset beyond half its round trip: each node
/// calibrates the TSC against `CLOCK_MONOTONIC` over 5 ms, so the two rates
/// differ by parts per million (2 ppm measured on a quiet host, tens under
/// load), which over a run of seconds under load reaches a hundred
/// microseconds. A wrong sign or unit would be off by far more.
const CALIBRATION_SLACK_NS: i64 = 1_000_000;

fn two_nodes(dir: &Path) -> Option<TwoNodes> {
    match TwoNodes::new(dir) {
        Ok(nodes) => Some(nodes),
        Err(why) => {
            eprintln!("not run: two nodes cannot be simulated here: {why}");
            None
        }
    }
}

/// The checks of the module documentation on a recorded `late_sender isend`.
fn check_two_node_run(dir: &Path, stdout: &str, flavour: &str) {
    let trace = Trace::open(dir).unwrap();
    let m = &trace.manifest;
    let mut hosts = m.hosts.clone();
    hosts.sort();
    assert_eq!(hosts, TWO_NODES, "{flavour}: the trace's hosts");
    let mut ranks = m.ranks.clone();
    ranks.sort_by_key(|r| r.rank);
    assert_eq!(ranks.len(), 2, "{flavour}");
    for r in &ranks {
        assert_eq!(
            r.host,
            TWO_NODES[r.rank as usize % 2],
            "{flavour}: rank {}",
            r.rank
        );
    }
    assert_ne!(
        ranks[0].clock_id, ranks[1].clock_id,
        "{flavour}: two nodes, two clocks"
    );
    // Rank 0 is the reference; rank 1 was measured against it at Init and
    // Finalize.
    let offsets = &ranks[1].clock_offsets;
    assert_eq!(offsets.len(), 2, "{flavour}: {offsets:?}");
    for o in offsets {
        assert!(
            o.rtt_ns > 0,
            "{flavour}: a measured offset has a round trip: {o:?}"
        );
        assert!(
            o.offset_ns.abs() <= o.rtt_ns / 2 + CALIBRATION_SLACK_NS,
            "{flavour}: the true offset is 0, outside the bound of {o:?}"
        );
    }
    eprintln!("{flavour}: rank 1's offsets {offsets:?}");

    let report = report_json(dir);
    // Corrected unless the least-drift line through the two measurements
    // is 0 at both ends (e.g. -27 and +27 ns): the true offset here is 0,
    // and then nothing is shifted.
    let shifted = hyscope_format::least_drift(&offsets[0], &offsets[1]) != (0, 0);
    assert_eq!(
        report["run"]["clock_corrected"], shifted,
        "{flavour}: {offsets:?}"
    );
    let clock_error = report["run"]["clock_error_s"].as_f64().unwrap();
    let bound_ns = offsets.iter().map(|o| o.rtt_ns / 2).max().unwrap();
    assert!(
        (clock_error * 1e9).round() as i64 >= bound_ns,
        "{flavour}: the report's clock error {clock_error} s is below the offsets' {bound_ns} ns"
    );
    // Every message of the 20 exchanges matched across the nodes.
    let messages = report["messages"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 40, "{flavour}");
    assert_eq!(report["messages"]["unmatched_sends"], 0, "{flavour}");
    assert_eq!(report["messages"]["unmatched_recvs"], 0, "{flavour}");

    let slept = printed(stdout, "slept_s");
    assert!(
        slept > 0.19,
        "{flavour}: 20 × 10 ms slept, {slept} s measured"
    );
    let measured = printed(stdout, "late_sender_total_s");
    let reported = late_sender_s(&report);
    let allowed = 0.05 * measured + 40.0 * clock_error;
    eprintln!(
        "{flavour}: late sender {reported:.6} s reported, {measured:.6} s measured, \
         clock error ± {clock_error:.6} s"
    );
    assert!(
        (reported - measured).abs() <= allowed,
        "{flavour}: late sender {reported} s reported, {measured} s measured \
         (allowed ± {allowed} s)"
    );
}

/// `tests/mpi/late_sender.c` built for each MPI: (flavour, launcher, its
/// arguments for 2 ranks on the two nodes, program).
fn late_sender_jobs(
    dir: &Path,
    nodes: &TwoNodes,
) -> Vec<(&'static str, &'static str, Vec<OsString>, PathBuf)> {
    beside_hyscope(
        "libhyscope-mpich.so",
        "run scripts/build-mpich.sh before cargo test (scripts/test.sh does)",
    );
    vec![
        (
            "Open MPI",
            "mpirun",
            nodes.open_mpi_args(2),
            build_mpi_test_program(dir, "late_sender"),
        ),
        (
            "MPICH",
            "mpiexec.mpich",
            nodes.mpich_args(2),
            build_mpich_test_program(dir, "late_sender"),
        ),
    ]
}

#[test]
fn jobs_on_two_nodes_measure_their_offsets_and_their_late_senders() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(nodes) = two_nodes(tmp.path()) else {
        return;
    };
    for (flavour, launcher, args, exe) in late_sender_jobs(tmp.path(), &nodes) {
        let dir = tmp.path().join(format!("trace-{launcher}"));
        let out = run_ok(nodes.record(&dir, launcher, args).arg(&exe).arg("isend"));
        check_two_node_run(&dir, &String::from_utf8_lossy(&out.stdout), flavour);
    }
}

/// Eight ranks, four per node, two threads each on this machine's two cores:
/// some clock ping-pongs wait for a core. The ranks of a node share one clock
/// (one calibration, one clock id), so the report's clock error is half the
/// round trip of that node's best measurements, not of its worst, and every
/// measurement still holds the true offset, 0.
#[test]
fn ranks_of_one_node_share_its_best_clock_measurements() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(nodes) = two_nodes(tmp.path()) else {
        return;
    };
    let exe = build_mpi_test_program(tmp.path(), "scale");
    let dir = tmp.path().join("trace");
    run_ok(
        nodes
            .record(&dir, "mpirun", nodes.open_mpi_args(8))
            .env("OMP_NUM_THREADS", "2")
            .arg(&exe),
    );
    let trace = Trace::open(&dir).unwrap();
    let second: Vec<_> = trace
        .manifest
        .ranks
        .iter()
        .filter(|r| r.host == TWO_NODES[1])
        .collect();
    assert_eq!(second.len(), 4);
    assert!(second.iter().all(|r| r.clock_id == second[0].clock_id));
    let (mut first_rtt, mut last_rtt) = (i64::MAX, i64::MAX);
    for r in &second {
        let o = &r.clock_offsets;
        assert_eq!(o.len(), 2, "rank {}: {o:?}", r.rank);
        for m in o {
            assert!(
                m.offset_ns.abs() <= m.rtt_ns / 2 + CALIBRATION_SLACK_NS,
                "rank {}: the true offset is 0, outside the bound of {m:?}",
                r.rank
            );
        }
        first_rtt = first_rtt.min(o[0].rtt_ns);
        last_rtt = last_rtt.min(o[1].rtt_ns);
        eprintln!("rank {}: {o:?}", r.rank);
    }
    let report = report_json(&dir);
    let error_ns = (report["run"]["clock_error_s"].as_f64().unwrap() * 1e9).round() as i64;
    assert_eq!(error_ns, first_rtt.max(last_rtt) / 2);
    // Every message of the ring matched across the nodes.
    assert_eq!(report["messages"]["unmatched_sends"], 0);
    assert_eq!(report["messages"]["unmatched_recvs"], 0);
    assert_eq!(
        report["messages"]["messages"].as_array().unwrap().len(),
        8 * 3
    );
    // The ring's `MPI_Sendrecv` sends to rank + 1 and receives from rank − 1:
    // two peers, two connections, for every rank.
    let per_rank = report["memory"]["observed"]["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), 8);
    for r in per_rank {
        assert_eq!(r["peers_observed"], 2, "{r}");
    }
}

/// `mpirun -np 2 hyscope record -- ./app` with no `-o`: each rank names the
/// trace directory itself, from its node's launcher daemon's start time, and
/// here the second node's daemon starts 1.5 s after the first's. Every rank
/// must still write into one directory (agreed in `.hyscope-jobs/`), and
/// rank 0's summary must count both ranks; under Open MPI and under MPICH.
#[test]
fn ranks_started_apart_on_two_nodes_name_one_trace_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(nodes) = two_nodes(tmp.path()) else {
        return;
    };
    let (var, value) = nodes.env();
    for (flavour, launcher, args, exe) in late_sender_jobs(tmp.path(), &nodes) {
        let cwd = tmp.path().join(format!("cwd-{launcher}"));
        std::fs::create_dir(&cwd).unwrap();
        let mut cmd = std::process::Command::new(launcher);
        cmd.current_dir(&cwd)
            .env(var, value)
            .env("HYSCOPE_FAKE_NODE_DELAY", format!("{}=1.5", TWO_NODES[1]))
            .args(args)
            .arg(env!("CARGO_BIN_EXE_hyscope"))
            .args(["record", "--"])
            .arg(&exe)
            .arg("isend");
        let out = run_ok(&mut cmd);
        let traces = trace_dirs_in(&cwd, "hyscope-");
        assert_eq!(traces.len(), 1, "{flavour}: {traces:?}\n{}", stderr(&out));
        let trace = Trace::open(&traces[0]).unwrap();
        assert_eq!(trace.ranks(), vec![0, 1], "{flavour}");
        assert!(
            stderr(&out).contains(", 2 ranks,"),
            "{flavour}: rank 0's summary: {}",
            stderr(&out)
        );
    }
}

/// `tests/mpi/ring_16k.c` on 4 ranks placed by slot (0 and 1 on the first
/// node, 2 and 3 on the second): of its 24 messages of 16 KiB, the 12 that
/// stay on a node go by the shared-memory transport's eager limit and the 12
/// between the nodes by the network's, each as the manifest gives them
/// (with Open MPI's defaults and TCP: rendezvous within a node, eager
/// between); the memory model charges network buffers for the peer on the
/// other node only.
#[test]
fn messages_within_a_node_take_its_eager_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(nodes) = two_nodes(tmp.path()) else {
        return;
    };
    let exe = build_mpi_test_program(tmp.path(), "ring_16k");
    let dir = tmp.path().join("trace");
    let out = run_ok(
        nodes
            .record(&dir, "mpirun", nodes.open_mpi_args_mapped(4, "slot"))
            .arg(&exe),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (messages, within) = (
        printed(&stdout, "messages") as u64,
        printed(&stdout, "within_node") as u64,
    );
    assert_eq!((messages, within), (24, 12), "{stdout}");
    let trace = Trace::open(&dir).unwrap();
    // Within a node: Open MPI's shared-memory transport's limit, as the
    // manifest gives it. Between the nodes: the network transport's the
    // report names (TCP here; the fastest network the machine has).
    let limits = &trace.manifest.mpi.as_ref().unwrap().eager_limits;
    let report = report_json(&dir);
    let mpi = &report["mpi"]["observed"];
    let shm = limits["vader"];
    let net = mpi["eager_limit"]["observed"][0].as_u64().unwrap();
    assert!(limits.values().any(|&l| l == net), "{limits:?}");
    if net != shm {
        assert_eq!(mpi["eager_limit_within_host"][0], shm, "{limits:?}");
    }
    const BYTES: u64 = 16 * 1024;
    let eager = u64::from(BYTES <= shm) * within + u64::from(BYTES <= net) * (messages - within);
    assert_eq!(mpi["eager_messages"], eager, "limits {limits:?}");
    assert_eq!(
        mpi["rendezvous_messages"],
        messages - eager,
        "limits {limits:?}"
    );
    // The memory model splits each rank's 2 peers the same way: every
    // rank sent ROUNDS = 3 messages to each, so the peers on its node (by
    // the trace's hosts) are the program's own count (by
    // MPI_COMM_TYPE_SHARED) over 3. Only those to the other node cost
    // network buffers, and between these nodes Open MPI talks TCP (its tcp
    // BTL): each connection its endpoint cache (btl_tcp_endpoint_cache as
    // the run had it) and no queue pair, where the model charged Open MPI's
    // openib receive queues before; the node's shared memory costs each
    // process its segment.
    let memory = &report["memory"]["observed"];
    let ranks = memory["per_rank"].as_array().unwrap();
    let sum = |key: &str| ranks.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("intra_node_connections"), within / 3, "{memory:#}");
    assert_eq!(sum("inter_node_connections"), (messages - within) / 3);
    assert_eq!(
        memory["network_transport"], "TCP (Open MPI ob1, tcp BTL)",
        "{memory:#}"
    );
    let cvars = &trace.manifest.mpi.as_ref().unwrap().control_variables;
    let cvar = |k: &str| cvars[k].trim().parse::<f64>().unwrap();
    let per_connection = cvar("btl_tcp_endpoint_cache") * cvar("btl_tcp_links");
    assert_eq!(memory["bytes_per_connection"], per_connection, "{memory:#}");
    for r in ranks {
        assert_eq!(r["inter_node_connections"], 1, "{r:#}");
        assert_eq!(r["network_buffer_bytes"], per_connection, "{r:#}");
        assert_eq!(
            r["shm_buffer_bytes"], memory["shm_bytes_per_process"],
            "{r:#}"
        );
    }
    let rc = memory["qp_table"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["transport"] == "RC")
        .unwrap();
    assert_eq!(rc["observed_per_node"], 2.0, "{rc:#}");
}

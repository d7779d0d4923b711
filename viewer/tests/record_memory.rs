//! The MPI memory model on real runs of 2 ranks on one node (Open MPI and
//! MPICH): each rank's one peer is on its node, so it talks through the
//! node's shared memory and the model charges no network buffer and no
//! queue pair, only the shared-memory transport's buffers per process: Open
//! MPI's vader segment of the size the run reports through MPI_T, UCX's
//! shared-memory transport under Debian's MPICH (device `ch4:ucx`).

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;

use hyscope_format::Trace;
use record_support::*;
use serde_json::Value;

/// Ranks 0 and 1 ping-pong 64 times (more than the 16 sends after which
/// Open MPI's vader gives a peer a fast box): each rank has exactly one
/// peer, the other.
const PAIR_SRC: &str = r#"
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 64; i++) {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            x++;
            MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("round trips %d\n", x);
    MPI_Finalize();
    return 0;
}
"#;

/// The run's control variable `name`, which the collector must have read.
fn cvar(trace: &Path, name: &str) -> f64 {
    let t = Trace::open(trace).unwrap();
    let mpi = t
        .manifest
        .mpi
        .expect("the manifest describes the MPI library");
    mpi.control_variables
        .get(name)
        .unwrap_or_else(|| panic!("{name} not recorded: {:?}", mpi.control_variables))
        .parse()
        .unwrap()
}

/// `hyscope report --json [extra] TRACE`'s memory footprint.
fn footprint(trace: &Path, extra: &[&str]) -> Value {
    let out = run_ok(hyscope().args(["report", "--json"]).args(extra).arg(trace));
    let v: Value = serde_json::from_slice(&out.stdout).expect("report --json is JSON");
    v["memory"]["observed"].clone()
}

/// The network model of the projection `m` at one rank per node (one
/// connection to another node per rank), by what the trace says the run
/// used: over Open MPI's tcp BTL its endpoint cache per connection and no
/// queue pair; over UCX on a node without RDMA device (as here) no network
/// buffers or queue pairs; else the transport's own model; never Open
/// MPI's openib defaults for another transport.
fn network(trace: &Path, m: &Value) {
    let manifest = Trace::open(trace).unwrap().manifest;
    let mpi = manifest.mpi.unwrap();
    let rdma = manifest
        .samplers
        .iter()
        .find(|s| s.name == "rdma")
        .expect("the rdma sampler's probe is recorded");
    let no_device = rdma.reason.starts_with("no RDMA device");
    let transport = m["network_transport"].as_str().unwrap();
    let p = &m["projections"][0];
    // The TCP model's buffers per connection, where it applies.
    let tcp: Option<f64> = if mpi.flavour == "mpich" {
        assert!(
            mpi.components.contains(&"ucx".to_string()) || !mpi.library_version.contains("ch4:ucx"),
            "{mpi:?}"
        );
        if mpi.library_version.contains("MPICH Device:\tch4:ucx") && no_device {
            assert_eq!(
                transport,
                "TCP (MPICH ch4:ucx: no RDMA device on rank 0's node)"
            );
            Some(0.0)
        } else {
            None
        }
    } else {
        // The PML and BTLs Open MPI selected, from the process's mappings.
        assert!(
            mpi.components.iter().any(|c| c.starts_with("pml_")),
            "{mpi:?}"
        );
        if mpi.components.contains(&"pml_ob1".to_string())
            && mpi.components.contains(&"btl_tcp".to_string())
            && !mpi.components.contains(&"btl_openib".to_string())
        {
            assert_eq!(transport, "TCP (Open MPI ob1, tcp BTL)");
            // btl_tcp_endpoint_cache as the run had it (MPI_T), else Open
            // MPI's default 30 KiB, per tcp BTL link.
            let cvar = |k: &str, d: f64| {
                mpi.control_variables
                    .get(k)
                    .map_or(d, |v| v.trim().parse::<f64>().unwrap())
            };
            Some(cvar("btl_tcp_endpoint_cache", 30_720.0) * cvar("btl_tcp_links", 1.0))
        } else {
            None
        }
    };
    assert!(
        !transport.contains("openib") || mpi.components.contains(&"btl_openib".to_string()),
        "{transport}"
    );
    if let Some(per_connection) = tcp {
        assert_eq!(m["network_not_modelled"], Value::Null, "{m:#}");
        assert_eq!(m["bytes_per_connection"], per_connection, "{m:#}");
        assert_eq!(p["network_buffer_bytes_per_rank"], per_connection, "{p:#}");
        assert_eq!(p["qp_bytes_per_rank"], 0.0, "{p:#}");
    } else if m["network_not_modelled"].is_string() {
        assert_eq!(p["network_buffer_bytes_per_rank"], Value::Null, "{p:#}");
        assert_eq!(p["total_bytes_per_rank"], Value::Null, "{p:#}");
    } else {
        assert!(
            p["network_buffer_bytes_per_rank"].as_f64().unwrap() > 0.0,
            "{p:#}"
        );
    }
}

/// The footprint of a one-node pair whose shared-memory transport maps
/// `shm` bytes per process: no network buffer, no queue pair, now or
/// projected at the run's 2 ranks per node.
fn check_one_node(trace: &Path, shm: f64) {
    let host = &Trace::open(trace).unwrap().manifest.ranks[0].host;
    let m = footprint(trace, &[]);
    assert_eq!(m["shm_bytes_per_process"], shm, "{m:#}");
    let ranks = m["per_rank"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    for r in ranks {
        assert_eq!(r["host"], host.as_str(), "{r:#}");
        assert_eq!(r["peers_observed"], 1, "{r:#}");
        assert_eq!(r["intra_node_connections"], 1, "{r:#}");
        assert_eq!(r["inter_node_connections"], 0, "{r:#}");
        // No peer on another node: no network buffers, whatever the transport.
        assert_eq!(r["network_buffer_bytes"], 0.0, "{r:#}");
        assert_eq!(r["shm_buffer_bytes"], shm, "{r:#}");
        assert_eq!(r["buffer_bytes_observed"], shm, "{r:#}");
    }
    for q in m["qp_table"].as_array().unwrap() {
        if q["transport"] != "UD" {
            assert_eq!(q["observed_per_node"], 0.0, "{q:#}");
        }
    }
    assert_eq!(m["projection_ranks_per_node"], 2);
    assert_eq!(
        m["projection_ranks_per_node_source"],
        format!("as recorded: 2 on {host}")
    );
    let projections = m["projections"].as_array().unwrap();
    assert!(!projections.is_empty());
    for p in projections {
        assert_eq!(p["intra_node_connections_per_rank"], 1.0, "{p:#}");
        assert_eq!(p["inter_node_connections_per_rank"], 0.0, "{p:#}");
        assert_eq!(p["network_buffer_bytes_per_rank"], 0.0, "{p:#}");
        assert_eq!(p["qp_bytes_per_rank"], 0.0, "{p:#}");
        assert_eq!(p["total_bytes_per_rank"], shm, "{p:#}");
    }

    // At one rank per node, as the user may say where the projection is
    // asked for, the peer is on another node: the network transport the run
    // used between nodes decides its buffers (`network`), no segment.
    let m = footprint(trace, &["--ranks-per-node", "1", "--project", "1024"]);
    assert_eq!(m["projection_ranks_per_node"], 1);
    assert_eq!(
        m["projection_ranks_per_node_source"],
        format!("given (recorded: 2 on {host})")
    );
    let p = &m["projections"][0];
    assert_eq!(p["inter_node_connections_per_rank"], 1.0, "{p:#}");
    assert_eq!(p["shm_bytes_per_rank"], 0.0, "{p:#}");
    network(trace, &m);

    // The text report states the assumption and shows the split.
    let out = run_ok(hyscope().arg("report").arg(trace));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "projected at C = 2 rank(s) per node (as recorded: 2 on {host})"
        )),
        "{text}"
    );
    assert!(text.contains("network buffers (model)"), "{text}");
    assert!(
        text.contains(&m["network_transport"].as_str().unwrap().to_string()),
        "{text}"
    );
    // Over TCP no queue pairs: the QP counts per node are said to be
    // InfiniBand's, not the run's.
    if m["network_not_modelled"].is_null() && m["network_queue_pairs"] == false {
        assert!(
            text.contains("no queue pairs (the QP counts per node are InfiniBand's"),
            "{text}"
        );
    }
    assert!(text.contains("net buffers/rank"), "{text}");
}

#[test]
fn open_mpi_pair_on_one_node_costs_no_network_buffers() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "pair", PAIR_SRC);
    let trace = tmp.path().join("trace");
    let out = run_ok(
        record_into(&trace)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&exe),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "round trips 64\n");
    // The vader segment the run mapped per process (4 MiB by default).
    let segment = cvar(&trace, "btl_vader_segment_size");
    assert!(segment >= (2 << 20) as f64, "{segment}");
    check_one_node(&trace, segment);
    // The segments were measured too, though the run is shorter than the
    // memory sampler's maps period: it reads the maps at the end of
    // MPI_Init and at the start of MPI_Finalize. Each process maps its own
    // segment and its peer's.
    for r in footprint(&trace, &[])["per_rank"].as_array().unwrap() {
        let mapped = r["shm_mapped"].as_f64().unwrap_or(0.0);
        assert!(
            mapped >= segment,
            "shm measured {mapped} < {segment}: {r:#}"
        );
    }
}

#[test]
fn mpich_pair_on_one_node_costs_no_network_buffers() {
    beside_hyscope("libhyscope-mpich.so", "run scripts/build-mpich.sh");
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpich(tmp.path(), "pair_mpich", PAIR_SRC);
    let trace = tmp.path().join("trace");
    let mut cmd = record_into(&trace);
    cmd.args(["mpiexec.mpich", "-n", "2"]).arg(&exe);
    let out = cmd.output_within_limit().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "round trips 64\n");
    let version = Trace::open(&trace)
        .unwrap()
        .manifest
        .mpi
        .unwrap()
        .library_version;
    let shm = if version.contains("MPICH Device:\tch4:ucx") {
        // UCX 1.13's mm transport: a FIFO of 64 × 128 B and 512 receive
        // buffers of 8256 B.
        4_235_264.0
    } else {
        // MPICH's POSIX iqueue: its cells per process, as MPICH reports them.
        cvar(&trace, "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_NUM_CELLS")
            * cvar(&trace, "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE")
    };
    check_one_node(&trace, shm);
}

/// A trace that does not say which PML Open MPI selected (format before
/// 1.8: no `components`; this machine's Debian settings `pml ^ucx`, `btl
/// ^uct,openib,ofi` leave the choice to Open MPI): every view says the
/// network buffers are not modelled, and the JSON has nulls, where the
/// model charged Open MPI's openib receive queues before.
#[test]
fn open_mpi_trace_without_its_components_says_not_modelled() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi(tmp.path(), "pair", PAIR_SRC);
    let trace = tmp.path().join("trace");
    run_ok(
        record_into(&trace)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&exe),
    );
    // The manifest as an older collector wrote it.
    let path = trace.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mpi = manifest["mpi"].as_object_mut().unwrap();
    assert!(mpi.remove("components").is_some());
    mpi.remove("environment");
    let pml = mpi["control_variables"]["pml"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if ["ob1", "ucx", "cm"].contains(&pml.as_str()) {
        eprintln!("pml set to {pml}: the trace still tells the transport; nothing to check");
        return;
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let statement =
        "network buffers: not modelled for Open MPI (which PML it selected is not recorded)";
    let m = footprint(&trace, &["--ranks-per-node", "1", "--project", "1024"]);
    assert_eq!(m["network_not_modelled"], statement, "{m:#}");
    assert_eq!(m["bytes_per_connection"], Value::Null, "{m:#}");
    let p = &m["projections"][0];
    for k in [
        "network_buffer_bytes_per_rank",
        "qp_bytes_per_rank",
        "total_bytes_per_rank",
    ] {
        assert_eq!(p[k], Value::Null, "{k}: {p:#}");
    }
    // On one node the ranks have no connection to another: none, known.
    for r in m["per_rank"].as_array().unwrap() {
        assert_eq!(r["network_buffer_bytes"], 0.0, "{r:#}");
    }
    let out = run_ok(
        hyscope()
            .args(["report", "--ranks-per-node", "1", "--project", "1024"])
            .arg(&trace),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(statement), "{text}");
    assert!(
        !text.contains("81.79 MB") && !text.contains("78.00 MiB"),
        "{text}"
    );
}

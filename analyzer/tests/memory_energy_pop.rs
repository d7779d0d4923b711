//! Memory footprint, energy, POP metrics, findings, compare and bad input.

use crate::common;

use common::*;
use hyscope_analyzer::{AnalyzeOptions, Observable};
use hyscope_format::{PhaseRecord, SampleRecord, mpi_call as c};

/// 4 ranks on 2 hosts (2 per host) in a ring: r sends to r+1.
fn ring(alltoall: bool) -> Builder {
    let mut b = Builder::new(4, 1, 2);
    // One program on every rank: its call sites are one location each.
    for (site, line) in [(1, 10), (2, 11), (3, 12)] {
        b.symbol(site, "ring.c", line);
    }
    for r in 0..4u32 {
        let to = (r + 1) % 4;
        let from = (r + 3) % 4;
        b.call(r, c::MPI_Send, 0, 10 * US, to as i32, 1000, 1);
        b.call(r, c::MPI_Recv, 0, 20 * US, from as i32, 1000, 2);
        if alltoall {
            b.collective(r, c::MPI_Alltoall, 30 * US, 40 * US, -1, 3);
        }
    }
    b.manifest.ranks[0].rss_before_init = Some(100 << 20);
    b.manifest.ranks[0].rss_after_init = Some(150 << 20);
    b.samples[0].push(SampleRecord {
        time_ns: 5,
        metric: "mpi.connections".into(),
        key: -1,
        value: 2.0,
    });
    b.samples[0].push(SampleRecord {
        time_ns: 5,
        metric: "mem.vmhwm".into(),
        key: -1,
        value: 3e8,
    });
    b
}

/// Buffers per connection: 32 eager-RDMA slots of 12 KiB and Open MPI's
/// per-peer receive queue (its queue pairs are counted apart, [`QP_BYTES`]).
const BYTES_PER_CONNECTION: f64 = (32 * 12288 + 128 * 256) as f64;
/// Memory per queue pair: 512 WQEs × 64 B + 128 B inline.
const QP_BYTES: f64 = (512 * 64 + 128) as f64;
/// Shared memory per process on a node with other ranks: Open MPI 4.1's
/// vader segment (the synthetic trace records no control variables).
const VADER_SEGMENT: f64 = (4 << 20) as f64;

#[test]
fn queue_pairs_follow_table_3_4() {
    let (_d, a) = ring(false).analyze();
    let m = a.memory.get().expect("memory");
    assert_eq!((m.nodes, m.cores_per_node, m.hcas_per_node), (2, 2, 1));
    let row = |t: &str| m.qp_table.iter().find(|r| r.transport == t).unwrap();
    // Fully connected: RC (N−1)·C²·H = 4, XRC (N−1)·C·H = 2, 4 vrails (N−1)·H = 1, UD C·H = 2.
    assert_eq!(row("RC").full_per_node, 4.0);
    assert_eq!(row("XRC").full_per_node, 2.0);
    assert_eq!(row("RC, 4 shared vrails").full_per_node, 1.0);
    assert_eq!(row("RC, 16 shared vrails").full_per_node, 4.0);
    assert_eq!(row("UD").full_per_node, 2.0);
    // Observed ring: each node has 2 ranks with one remote peer each.
    assert_eq!(row("RC").observed_per_node, 2.0);
    assert_eq!(row("XRC").observed_per_node, 2.0);
    assert_eq!(row("RC, 4 shared vrails").observed_per_node, 1.0);
    assert_eq!(m.bytes_per_connection, Some(BYTES_PER_CONNECTION));
    let r0 = &m.per_rank[0];
    assert_eq!(r0.peers_observed, 2);
    assert_eq!(r0.connections_measured, Some(2));
    assert_eq!(r0.mpi_init_delta, Some(50 << 20));
    assert_eq!(r0.rss_peak, Some(300_000_000));
    assert!(
        m.pattern.starts_with("constant neighbourhood"),
        "{}",
        m.pattern
    );
    // Of each rank's 2 peers one is on its node (shared memory), one on the
    // other node (network buffers, a queue pair).
    assert_eq!(
        (r0.intra_node_connections, r0.inter_node_connections),
        (1, 1)
    );
    let shared = (2048 * 1024 + 12288 * 1024 + 65536 * 1024) as f64;
    assert_eq!(r0.network_buffer_bytes, Some(BYTES_PER_CONNECTION + shared));
    assert_eq!(r0.shm_buffer_bytes, VADER_SEGMENT);
    let p = m.projections.iter().find(|p| p.ranks == 32_768).unwrap();
    assert_eq!(p.connections_per_rank, 2.0);
    assert_eq!(p.nodes, 16_384);
    // At the recorded 2 ranks per node the neighbourhood keeps its split.
    assert_eq!(m.projection_ranks_per_node, 2);
    assert_eq!(
        (
            p.intra_node_connections_per_rank,
            p.inter_node_connections_per_rank
        ),
        (1.0, 1.0)
    );
    assert_eq!(
        p.buffer_bytes_per_rank,
        Some(VADER_SEGMENT + BYTES_PER_CONNECTION + shared)
    );
    assert_eq!(p.qp_bytes_per_rank, Some(QP_BYTES));
    assert!(close(
        p.total_bytes_per_rank.unwrap(),
        p.buffer_bytes_per_rank.unwrap() + p.qp_bytes_per_rank.unwrap() + p.group_bytes_per_rank,
        1e-12
    ));
}

#[test]
fn alltoall_forces_full_connection_in_the_projection() {
    let (_d, a) = ring(true).analyze();
    let m = a.memory.get().unwrap();
    assert!(m.pattern.starts_with("grows with N"), "{}", m.pattern);
    assert_eq!(m.full_connection_calls.len(), 1);
    assert_eq!(m.full_connection_calls[0].call, "MPI_Alltoall");
    assert_eq!(m.full_connection_calls[0].ranks, vec![0, 1, 2, 3]);
    let p = m.projections.iter().find(|p| p.ranks == 1_048_576).unwrap();
    assert_eq!(p.connections_per_rank, 1_048_575.0);
    // RC fully connected at 2 ranks per node: (N−1)·C² with N = 524 288.
    assert_eq!(p.qp_rc_per_node, 524_287.0 * 4.0);
    let opts = AnalyzeOptions {
        memory_per_core: Some(4 << 30),
        ..AnalyzeOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    ring(true).write(dir.path());
    let a = hyscope_analyzer::analyze(dir.path(), &opts).unwrap();
    let m = a.memory.get().unwrap();
    let p = m.projections.iter().find(|p| p.ranks == 1_048_576).unwrap();
    assert_eq!(p.exceeds_memory_per_core, Some(true));
    assert!(a.findings.iter().any(|f| f.category == "memory"));
}

#[test]
fn energy_not_measured_carries_the_reason() {
    let (_d, a) = ring(false).analyze();
    match &a.energy {
        Observable::NotObservable(r) => {
            assert!(r.starts_with("not measured: "), "{r}");
            assert!(r.contains("energy-psys reads 0"), "{r}");
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn energy_from_package_counters() {
    let mut b = Builder::new(1, 1, 1);
    b.call(0, c::MPI_Barrier, 0, 1_000, -1, 0, 1);
    b.call(
        0,
        c::MPI_Barrier,
        10_000 * MS - 1_000,
        10_000 * MS,
        -1,
        0,
        1,
    );
    for (t, j) in [(0, 0.0), (5_000 * MS, 40.0), (10_000 * MS, 100.0)] {
        b.samples[0].push(SampleRecord {
            time_ns: t,
            metric: "energy.pkg".into(),
            key: 0,
            value: j,
        });
    }
    let (_d, a) = b.analyze();
    let e = a.energy.get().expect("energy");
    assert!(close(e.total_joules, 100.0, 1e-12));
    assert!(close(e.avg_power_w, 10.0, 1e-9));
    assert!(close(e.edp_js, 1000.0, 1e-9));
    assert_eq!(e.domains.len(), 1);
    assert_eq!(e.domains[0].package, 0);
}

/// `ranks` ranks on `hosts` hosts over 1 s (a barrier at each end), with a
/// package counter sampled every 500 ms on each rank in `sampled`: 10 W for
/// the first 500 ms, then 30 W (0, 5, 20 J).
fn energy_trace(ranks: u32, hosts: u32, sampled: &[u32]) -> Builder {
    let mut b = Builder::new(ranks, 1, hosts);
    for r in 0..ranks {
        b.call(r, c::MPI_Barrier, 0, 1_000, -1, 0, 1);
        b.call(r, c::MPI_Barrier, 1_000 * MS - 1_000, 1_000 * MS, -1, 0, 1);
    }
    for &r in sampled {
        for (t, j) in [(0, 0.0), (500 * MS, 5.0), (1_000 * MS, 20.0)] {
            b.samples[r as usize].push(SampleRecord {
                time_ns: t,
                metric: "energy.pkg".into(),
                key: 0,
                value: j,
            });
        }
    }
    b
}

fn phase(name: &str, start_ms: i64, end_ms: i64, depth: u32) -> PhaseRecord {
    PhaseRecord::api(0, name, start_ms * MS, end_ms * MS, depth)
}

#[test]
fn energy_per_phase_over_its_intervals() {
    // Two hosts, each rank samples its own package.
    let mut b = energy_trace(2, 2, &[0, 1]);
    b.phases[0] = vec![phase("solver", 400, 600, 0), phase("io", 100, 200, 0)];
    b.phases[1] = vec![phase("solver", 600, 700, 0)];
    let (_d, a) = b.analyze();
    let phases = a.phases.get().expect("phases");
    let of = |n: &str| phases.iter().find(|p| p.name == n).unwrap();
    // solver: rank 0 400–600 ms = 0.1 s at 10 W + 0.1 s at 30 W = 4 J;
    // rank 1 600–700 ms at 30 W = 3 J. Its time is the slowest rank's: 0.2 s.
    let solver = of("solver");
    assert!(close(solver.energy_j.unwrap(), 7.0, 1e-9), "{solver:?}");
    assert!(close(solver.edp_js.unwrap(), 7.0 * 0.2, 1e-9));
    // io: 0.1 s at 10 W on rank 0's host only.
    assert!(close(of("io").energy_j.unwrap(), 1.0, 1e-9));
    // The job's total is the same integration over the whole series.
    assert!(close(a.energy.get().unwrap().total_joules, 40.0, 1e-12));
    // compare matches the phases' energy by name (here against itself).
    let cmp = hyscope_analyzer::compare(&a, &a);
    let solver_energy = cmp
        .rows
        .iter()
        .find(|r| r.section == "phase" && r.item == "solver" && r.metric == "energy_j")
        .expect("a solver energy row");
    assert!(close(solver_energy.a, 7.0, 1e-9) && solver_energy.delta == 0.0);
}

#[test]
fn energy_of_a_phase_on_a_shared_package_counts_its_time_once() {
    // One host, one package sampled by rank 0: the phase's intervals on both
    // ranks overlap (100–300 and 200–400 ms), so the package counts 100–400.
    let mut b = energy_trace(2, 1, &[0]);
    b.phases[0] = vec![phase("solver", 100, 300, 0)];
    b.phases[1] = vec![phase("solver", 200, 400, 0)];
    let (_d, a) = b.analyze();
    let solver = &a.phases.get().expect("phases")[0];
    assert!(close(solver.energy_j.unwrap(), 3.0, 1e-9), "{solver:?}");
}

#[test]
fn phases_without_energy_counters_have_no_energy() {
    let mut b = energy_trace(1, 1, &[]);
    b.phases[0] = vec![phase("solver", 100, 300, 0)];
    let (_d, a) = b.analyze();
    let solver = &a.phases.get().expect("phases")[0];
    assert_eq!((solver.energy_j, solver.edp_js), (None, None));
}

/// 1 rank, 2 threads, 100 µs: MPI 0–10 µs, serial 10–20 µs, region 20–100 µs;
/// master barrier 99–100, worker barrier 80–100 (all waiting).
fn pop_trace() -> Builder {
    let mut b = Builder::new(1, 2, 1);
    b.call(0, c::MPI_Barrier, 0, 10 * US, -1, 0, 1);
    b.parallel(0, 1, 0x100, 2, 20 * US, 100 * US);
    b.implicit_task(0, 1, 0, 20 * US, 100 * US);
    b.implicit_task(0, 1, 1, 20 * US, 100 * US);
    b.barrier(0, 1, 0, 9, (99 * US, 100 * US), Some((99 * US, 100 * US)));
    b.barrier(0, 1, 1, 9, (80 * US, 100 * US), Some((80 * US, 100 * US)));
    b
}

#[test]
fn pop_multiplicative_and_additive() {
    let (_d, a) = pop_trace().analyze();
    let p = a.pop.get().expect("pop");
    assert_eq!(p.cores, 2);
    // Useful: master 79 (region) + 10 (serial) = 89 µs, worker 60 µs.
    assert!(close(p.useful_s[0][0], 89e-6, 1e-9));
    assert!(close(p.useful_s[0][1], 60e-6, 1e-9));
    let pe = p.tree.value.get().copied().unwrap();
    assert!(close(pe, 0.745, 1e-9), "{pe}");
    let mpi = &p.tree.children[0];
    assert!(close(*mpi.value.get().unwrap(), 0.9, 1e-9));
    assert!(close(*mpi.children[0].value.get().unwrap(), 1.0, 1e-9));
    assert!(close(*mpi.children[1].value.get().unwrap(), 0.9, 1e-9));
    assert!(mpi.children[1].children[0].value.get().is_none());
    let omp = &p.tree.children[1];
    assert!(close(*omp.value.get().unwrap(), 0.745 / 0.9, 1e-9));
    assert!(close(
        *omp.children[0].value.get().unwrap(),
        74.5 / 89.0,
        1e-9
    ));
    let loss = |n: &str| {
        p.additive
            .iter()
            .find(|l| l.name.starts_with(n))
            .unwrap()
            .fraction
    };
    assert!(close(loss("MPI"), 0.1, 1e-9));
    assert!(close(loss("OpenMP runtime"), 0.105, 1e-9));
    assert!(close(loss("serial"), 0.05, 1e-9));
    assert!(loss("other").abs() < 1e-9);
    // Fine-grain model: T_compute 80, T_comm 10, T_seq 10 → bound 1 + 80/20 = 5.
    let fg = &a.openmp.get().unwrap().fine_grain[0];
    assert!(close(fg.speedup_bound.unwrap(), 5.0, 1e-9));
    assert!(close(fg.idle_mpi_core_s, 10e-6, 1e-9));
    assert!(close(fg.idle_serial_core_s, 10e-6, 1e-9));
}

#[test]
fn findings_are_ranked_and_compare_diffs() {
    let (_d, a) = pop_trace().analyze();
    assert!(!a.findings.is_empty());
    for w in a.findings.windows(2) {
        assert!(w[0].cost_s >= w[1].cost_s);
    }
    let mut b2 = pop_trace();
    b2.omp[0].iter_mut().for_each(|r| {
        if r.kind == hyscope_format::OmpKind::Parallel as u8 {
            r.end_ns = 110 * US;
        }
    });
    let (_d2, b) = b2.analyze();
    let cmp = hyscope_analyzer::compare(&a, &b);
    let row = cmp
        .rows
        .iter()
        .find(|r| r.section == "region" && r.metric == "time_s")
        .unwrap();
    assert!(close(row.a, 80e-6, 1e-9));
    assert!(close(row.b, 90e-6, 1e-9));
    assert!(close(row.delta, 10e-6, 1e-6));
}

#[test]
fn findings_name_the_phase_their_code_runs_in() {
    // pop_trace's region (20–100 µs) begins inside "inner", nested in "compute".
    let mut b = pop_trace();
    let us = |name: &str, start, end, depth| PhaseRecord::api(0, name, start * US, end * US, depth);
    b.phases[0] = vec![
        us("exchange", 0, 15, 0),
        us("compute", 15, 100, 0),
        us("inner", 18, 100, 1),
    ];
    let (_d, a) = b.analyze();
    let region: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.category == "region")
        .collect();
    assert!(!region.is_empty(), "{:?}", a.findings);
    for f in &region {
        assert_eq!(f.phase.as_deref(), Some("inner"), "{f:?}");
        assert!(f.title.ends_with(" (phase inner)"), "{}", f.title);
    }
    // A finding without a code location names no phase; without phases none does.
    assert!(
        a.findings
            .iter()
            .filter(|f| f.location.is_none())
            .all(|f| f.phase.is_none())
    );
    let (_d, plain) = pop_trace().analyze();
    assert!(plain.findings.iter().all(|f| f.phase.is_none()));
}

#[test]
fn bad_input_errors_name_the_file() {
    let err = hyscope_analyzer::analyze(
        std::path::Path::new("/nonexistent/trace"),
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/nonexistent/trace"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    pop_trace().write(dir.path());
    let part = dir.path().join("omp/rank=0/part-0.parquet");
    std::fs::write(&part, b"PAR1 not really parquet PAR1").unwrap();
    let err = hyscope_analyzer::analyze(dir.path(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("part-0.parquet"), "{err}");

    std::fs::write(dir.path().join("manifest.json"), b"{ not json").unwrap();
    let err = hyscope_analyzer::analyze(dir.path(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("manifest.json"), "{err}");
}

#[test]
fn analysis_round_trips_through_json() {
    let (_d, a) = pop_trace().analyze();
    let text = serde_json::to_string(&a).unwrap();
    let back: hyscope_analyzer::Analysis = serde_json::from_str(&text).unwrap();
    assert_eq!(back.run, a.run);
    assert!(text.contains("\"not_observable\":\"not measured: "));
}

#[test]
fn mpi_init_and_finalize_are_outside_the_application_window() {
    let mut b = pop_trace();
    b.call(0, c::MPI_Init_thread, -100 * US, 0, -1, 0, 5);
    b.call(0, c::MPI_Finalize, 100 * US, 300 * US, -1, 0, 6);
    let (_d, a) = b.analyze();
    let p = a.pop.get().unwrap();
    assert!(close(p.elapsed_s, 100e-6, 1e-9));
    assert!(close(*p.tree.value.get().unwrap(), 0.745, 1e-9));
    let fg = &a.openmp.get().unwrap().fine_grain[0];
    assert!(close(fg.t_comm_s, 10e-6, 1e-9));
    assert!(close(fg.speedup_bound.unwrap(), 5.0, 1e-9));
    // The profile still lists them.
    assert!(
        a.mpi
            .get()
            .unwrap()
            .calls
            .iter()
            .any(|x| x.call == "MPI_Finalize")
    );
}

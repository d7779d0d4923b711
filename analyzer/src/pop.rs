//! POP efficiency metrics for hybrid MPI+OpenMP runs.
//!
//! Notation: R ranks, P_r threads on rank r, C = Σ P_r cores, T = elapsed time
//! of the job. For every (rank r, thread t), the useful time u_rt is the time
//! spent computing: not in MPI, not in the OpenMP runtime (barriers, lock
//! waits, taskwait, fork/join) and not idle outside parallel regions
//! (worker threads during serial code and master-only MPI).
//!
//! Multiplicative model (each node = product of its children):
//! - Parallel efficiency PE = Σ u_rt / (C · T)
//!   - MPI parallel efficiency MPI_PE = mean_r(o_r) / T, with o_r the time rank r's
//!     master thread spends outside MPI
//!     - MPI load balance = mean_r(o_r) / max_r(o_r)
//!     - MPI communication efficiency = max_r(o_r) / T
//!       (serialisation and transfer need an ideal-network replay: not observable)
//!   - OpenMP parallel efficiency OMP_PE = PE / MPI_PE
//!     - OpenMP load balance = Σ_r mean_t(u_rt) / Σ_r max_t(u_rt)
//!     - OpenMP runtime and serialisation efficiency = OMP_PE / OMP load balance
//!
//! Additive model: 1 = PE + L_mpi + L_omp + L_serial + L_other, fractions of C · T:
//! - L_mpi = (Σ MPI time of all threads + Σ_r (P_r − 1) · MPI time of the master outside parallel regions) / (C · T)
//! - L_omp = (Σ OpenMP runtime time of all threads + Σ fork/join) / (C · T)
//! - L_serial = Σ_r (P_r − 1) · T_seq,r / (C · T)  (idle threads during serial code)
//! - L_other = the rest (ranks finishing early, unattributed time).

use hyscope_format::MpiRecord;

use crate::model::ns_to_s;
use crate::model::*;
use crate::omp::{OmpResult, inside};
use crate::trace_data::{TraceData, WindowMpi};

/// The MPI time of a rank's application window `(w0, w1)` ([`WindowMpi`]),
/// from its `rows` and its master's parallel regions (sorted, disjoint),
/// where the rows are read.
pub fn window_mpi(rows: &[MpiRecord], (w0, w1): (i64, i64), regions: &[(i64, i64)]) -> WindowMpi {
    let mut out = WindowMpi::default();
    for m in rows {
        if m.call == hyscope_format::mpi_call::REQUEST_COMPLETE || m.start_ns < w0 || m.end_ns > w1
        {
            continue;
        }
        let d = (m.end_ns - m.start_ns).max(0);
        out.all += d;
        if m.in_parallel || inside(regions, m.start_ns) {
            *out.in_parallel.entry(m.thread).or_default() += d;
        } else {
            out.outside += d;
            if m.thread == 0 {
                out.master_outside += d;
            }
        }
    }
    out
}

/// The MPI level of the tree from each rank's time outside MPI (`o_r`) in
/// an elapsed time `t`: (MPI parallel efficiency, MPI load balance, MPI
/// communication efficiency). Also used per phase (`crate::phases`).
pub fn mpi_efficiencies(outside_mpi: &[f64], t: f64) -> (f64, f64, f64) {
    let r = outside_mpi.len().max(1) as f64;
    let mean_o = outside_mpi.iter().sum::<f64>() / r;
    let max_o = outside_mpi.iter().cloned().fold(0.0, f64::max);
    let mpi_lb = if max_o > 0.0 { mean_o / max_o } else { 1.0 };
    (mean_o / t, mpi_lb, max_o / t)
}

pub fn analyze_pop(data: &TraceData, _run: &RunFacts, omp: &OmpResult) -> Observable<Pop> {
    // Elapsed time of the application windows (MPI_Init end → MPI_Finalize start).
    let active = data.ranks.iter().filter(|r| r.app_end_ns > r.app_start_ns);
    let t0 = active.clone().map(|r| r.app_start_ns).min().unwrap_or(0);
    let t1 = active.map(|r| r.app_end_ns).max().unwrap_or(0);
    let t = ns_to_s(t1 - t0);
    if t <= 0.0 || data.ranks.is_empty() {
        return Observable::not("empty trace: no elapsed time");
    }
    let mut useful: Vec<Vec<f64>> = Vec::new();
    let mut outside_mpi: Vec<f64> = Vec::new();
    let (mut l_mpi, mut l_omp, mut l_serial) = (0.0, 0.0, 0.0);
    let mut cores = 0u32;
    for (rd, ro) in data.ranks.iter().zip(&omp.ranks) {
        let p = ro.threads.max(1) as usize;
        cores += p as u32;
        let total = rd.app_end_ns - rd.app_start_ns;
        let w = &rd.mpi_window;
        let mpi_in: Vec<i64> = (0..p as u32)
            .map(|t| w.in_parallel.get(&t).copied().unwrap_or(0))
            .collect();
        let (master_out, mpi_all) = (w.master_outside, w.all);
        let seq = (total - ro.region_ns.min(total) - master_out).max(0);
        let mut u = Vec::with_capacity(p);
        for (th, mpi) in mpi_in.iter().enumerate() {
            let busy = ro.busy_ns.get(th).copied().unwrap_or(0);
            let serial = if th == 0 { seq } else { 0 };
            u.push(ns_to_s((busy + serial - mpi).max(0)));
        }
        outside_mpi.push(ns_to_s((total - master_out - mpi_in[0]).max(0)));
        useful.push(u);
        l_mpi += ns_to_s(mpi_all) + ns_to_s(master_out) * (p - 1) as f64;
        l_omp += ro.runtime_ns.iter().map(|&x| ns_to_s(x)).sum::<f64>() + ns_to_s(ro.fork_join_ns);
        l_serial += ns_to_s(seq) * (p - 1) as f64;
    }
    let ct = cores as f64 * t;
    let sum_u: f64 = useful.iter().flatten().sum();
    let pe = sum_u / ct;
    let (mpi_pe, mpi_lb, mpi_ce) = mpi_efficiencies(&outside_mpi, t);
    let omp_pe = if mpi_pe > 0.0 { pe / mpi_pe } else { 0.0 };
    let (mut s_mean, mut s_max) = (0.0, 0.0);
    for u in &useful {
        s_mean += u.iter().sum::<f64>() / u.len().max(1) as f64;
        s_max += u.iter().cloned().fold(0.0, f64::max);
    }
    let omp_lb = if s_max > 0.0 { s_mean / s_max } else { 1.0 };
    let obs = Observable::Observed;
    let node = |name: &str, v: Observable<f64>, f: &str, ch: Vec<PopNode>| PopNode {
        name: name.into(),
        value: v,
        formula: f.into(),
        children: ch,
    };
    let tree = node(
        "Parallel efficiency",
        obs(pe),
        "Σ useful / (cores × elapsed)",
        vec![
            node(
                "MPI parallel efficiency",
                obs(mpi_pe),
                "mean over ranks of time outside MPI / elapsed",
                vec![
                    node(
                        "MPI load balance",
                        obs(mpi_lb),
                        "mean(outside MPI) / max(outside MPI)",
                        vec![],
                    ),
                    node(
                        "MPI communication efficiency",
                        obs(mpi_ce),
                        "max(outside MPI) / elapsed",
                        vec![
                            node(
                                "Serialisation efficiency",
                                Observable::not(
                                    "needs a replay on an ideal network (Dimemas); not computed",
                                ),
                                "max(outside MPI on an ideal network) / ideal elapsed",
                                vec![],
                            ),
                            node(
                                "Transfer efficiency",
                                Observable::not(
                                    "needs a replay on an ideal network (Dimemas); not computed",
                                ),
                                "ideal elapsed / elapsed",
                                vec![],
                            ),
                        ],
                    ),
                ],
            ),
            node(
                "OpenMP parallel efficiency",
                obs(omp_pe),
                "parallel efficiency / MPI parallel efficiency",
                vec![
                    node(
                        "OpenMP load balance",
                        obs(omp_lb),
                        "Σ_rank mean_thread(useful) / Σ_rank max_thread(useful)",
                        vec![],
                    ),
                    node(
                        "OpenMP runtime and serialisation efficiency",
                        obs(if omp_lb > 0.0 { omp_pe / omp_lb } else { 0.0 }),
                        "OpenMP parallel efficiency / OpenMP load balance",
                        vec![],
                    ),
                ],
            ),
        ],
    );
    let other = (1.0 - pe - (l_mpi + l_omp + l_serial) / ct).max(0.0);
    let loss = |name: &str, s: f64, f: &str| PopLoss {
        name: name.into(),
        fraction: s / ct,
        seconds_core: s,
        formula: f.into(),
    };
    let additive = vec![
        loss(
            "MPI",
            l_mpi,
            "(Σ MPI time + Σ (P − 1) × master MPI outside parallel) / (C × T)",
        ),
        loss(
            "OpenMP runtime",
            l_omp,
            "(Σ barrier, lock wait, taskwait, activation/release + Σ fork/join) / (C × T)",
        ),
        loss(
            "serial code (idle threads)",
            l_serial,
            "Σ (P − 1) × T_seq / (C × T)",
        ),
        loss(
            "other",
            other * ct,
            "1 − PE − the losses above (ranks finishing early, unattributed)",
        ),
    ];
    Observable::Observed(Pop {
        tree,
        additive,
        useful_s: useful,
        cores,
        elapsed_s: t,
    })
}

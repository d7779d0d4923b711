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
//!
//! POP's processes are the job's ranks, each observed over the whole
//! elapsed time T (the POP Centre of Excellence's definitions: load balance
//! and parallel efficiency compare the processes that ran at the same
//! time). The programs a rank's process ran one after the other, each put
//! in the place of the one before by an exec, are that one process: their
//! intervals are joined on its time line (its window runs from its first
//! program's start to its last one's end, or is the MPI program's
//! `MPI_Init`–`MPI_Finalize`), their threads are its P_r cores (the most of
//! any of them) and their useful time adds up, thread by thread. A child
//! process a rank started (`fork`) is not a rank of the job and is left
//! out, said in [`PopScope`] (`crate::processes::Processes`, the one rule
//! every per-rank figure reads).

use std::collections::BTreeMap;

use hyscope_format::MpiRecord;

use crate::model::ns_to_s;
use crate::model::*;
use crate::omp::{OmpResult, RankOmp, inside};
use crate::processes::Processes;
use crate::trace_data::{RankData, TraceData, WindowMpi};

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

/// One of the job's ranks as POP counts it: its process's programs, in
/// the order they ran, and the window they are measured in.
struct Process<'a> {
    programs: Vec<(&'a RankData, &'a RankOmp)>,
    /// Empty (start = end) when no program of it has events.
    window: (i64, i64),
}

/// A program's application window, if it has events in it.
fn window_of(rd: &RankData) -> Option<(i64, i64)> {
    (rd.app_end_ns > rd.app_start_ns).then_some((rd.app_start_ns, rd.app_end_ns))
}

fn union(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

/// The job's ranks, each its programs joined on its process's time line
/// ([`Processes`]): the window is the MPI program's (`MPI_Init` to
/// `MPI_Finalize`; programs exec'd after it are outside) or, without MPI,
/// from the first program's first event to the last one's last; what is
/// left out goes to `scope`.
fn processes<'a>(
    data: &'a TraceData,
    run: &RunFacts,
    omp: &'a OmpResult,
    scope: &mut PopScope,
) -> Vec<Process<'a>> {
    let procs = Processes::of(&run.children);
    let mut by: BTreeMap<u32, Vec<(&RankData, &RankOmp)>> = BTreeMap::new();
    for (rd, ro) in data.ranks.iter().zip(&omp.ranks) {
        if procs.in_job_rank(rd.rank) {
            by.entry(procs.process_of(rd.rank))
                .or_default()
                .push((rd, ro));
        } else {
            scope.child_processes.push(rd.rank);
        }
    }
    let mut out = Vec::with_capacity(by.len());
    for (_, mut programs) in by {
        programs.sort_by_key(|(rd, _)| rd.rank);
        let with_mpi = programs
            .iter()
            .filter(|(rd, _)| rd.mpi_spans.init_end.is_some())
            .filter_map(|(rd, _)| window_of(rd))
            .reduce(union);
        let window = with_mpi
            .or_else(|| {
                programs
                    .iter()
                    .filter_map(|(rd, _)| window_of(rd))
                    .reduce(union)
            })
            .unwrap_or((0, 0));
        let (inside, outside): (Vec<_>, Vec<_>) = programs
            .into_iter()
            .partition(|(rd, _)| window_of(rd).is_none_or(|w| w.0 >= window.0 && w.1 <= window.1));
        scope
            .outside_window
            .extend(outside.iter().map(|(rd, _)| rd.rank));
        scope
            .processes
            .push(inside.iter().map(|(rd, _)| rd.rank).collect());
        out.push(Process {
            programs: inside,
            window,
        });
    }
    // Ids are taken as programs start: another rank's may come between.
    scope.outside_window.sort_unstable();
    out
}

pub fn analyze_pop(data: &TraceData, run: &RunFacts, omp: &OmpResult) -> Observable<Pop> {
    let mut scope = PopScope::default();
    let processes = processes(data, run, omp, &mut scope);
    // Elapsed time of the ranks' windows (MPI_Init end → MPI_Finalize start).
    let active = processes.iter().filter(|p| p.window.1 > p.window.0);
    let t0 = active.clone().map(|p| p.window.0).min().unwrap_or(0);
    let t1 = active.map(|p| p.window.1).max().unwrap_or(0);
    let t = ns_to_s(t1 - t0);
    if t <= 0.0 || processes.is_empty() {
        return Observable::not("empty trace: no elapsed time");
    }
    let mut useful: Vec<Vec<f64>> = Vec::new();
    let mut outside_mpi: Vec<f64> = Vec::new();
    let (mut l_mpi, mut l_omp, mut l_serial) = (0.0, 0.0, 0.0);
    let mut cores = 0u32;
    for proc in &processes {
        let programs = &proc.programs;
        let p = programs
            .iter()
            .map(|(_, ro)| ro.threads.max(1))
            .max()
            .unwrap_or(1) as usize;
        cores += p as u32;
        let total = proc.window.1 - proc.window.0;
        // Its programs' times, thread by thread (a program's thread t ran
        // on the process's t-th core, as the others' did before or after).
        let (mut master_out, mut mpi_all, mut region_ns) = (0, 0, 0);
        let (mut mpi_in, mut busy) = (vec![0i64; p], vec![0i64; p]);
        for (rd, ro) in programs {
            let w = &rd.mpi_window;
            master_out += w.master_outside;
            mpi_all += w.all;
            region_ns += ro.region_ns;
            l_omp +=
                ro.runtime_ns.iter().map(|&x| ns_to_s(x)).sum::<f64>() + ns_to_s(ro.fork_join_ns);
            for th in 0..p {
                mpi_in[th] += w.in_parallel.get(&(th as u32)).copied().unwrap_or(0);
                busy[th] += ro.busy_ns.get(th).copied().unwrap_or(0);
            }
        }
        // Serial code: the process's window outside its parallel regions
        // and its master's MPI (between its programs too: the exec and the
        // next program's start are the process's serial time).
        let seq = (total - region_ns.min(total) - master_out).max(0);
        let mut u = Vec::with_capacity(p);
        for th in 0..p {
            let serial = if th == 0 { seq } else { 0 };
            u.push(ns_to_s((busy[th] + serial - mpi_in[th]).max(0)));
        }
        outside_mpi.push(ns_to_s((total - master_out - mpi_in[0]).max(0)));
        useful.push(u);
        l_mpi += ns_to_s(mpi_all) + ns_to_s(master_out) * (p - 1) as f64;
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
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omp::OmpResult;
    use crate::trace_data::{MpiSpans, RankData};

    /// A program `rank` with one OpenMP thread whose window is `(w0, w1)`
    /// (ns), 50 ns of parallel regions: 40 busy, 5 in the runtime, 5 of
    /// fork/join.
    fn program(rank: u32, (w0, w1): (i64, i64), mpi: bool) -> (RankData, RankOmp) {
        let rd = RankData {
            rank,
            first_ns: w0,
            last_ns: w1,
            app_start_ns: w0,
            app_end_ns: w1,
            mpi_spans: MpiSpans {
                init_end: mpi.then_some(w0),
                finalize_start: mpi.then_some(w1),
                whole: mpi.then_some((w0, w1)),
            },
            ..RankData::default()
        };
        let ro = RankOmp {
            rank,
            threads: 1,
            region_ns: 50,
            fork_join_ns: 5,
            busy_ns: vec![40],
            runtime_ns: vec![5],
            ..RankOmp::default()
        };
        (rd, ro)
    }

    fn analyse(programs: Vec<(RankData, RankOmp)>, children: Vec<ChildProcess>) -> Pop {
        let (ranks, omp): (Vec<RankData>, Vec<RankOmp>) = programs.into_iter().unzip();
        let data = TraceData {
            ranks,
            ..TraceData::default()
        };
        let omp = OmpResult {
            regions: Observable::not("-"),
            loops: Observable::not("-"),
            overhead: Observable::not("-"),
            serialized_regions: 0,
            clipped_join_waits: 0,
            clipped_join_wait_s: 0.0,
            ranks: omp,
        };
        let run = RunFacts {
            ranks: data.ranks.len() as u32,
            children,
            ..RunFacts::default()
        };
        analyze_pop(&data, &run, &omp)
            .get()
            .cloned()
            .expect("observed")
    }

    fn exec(rank: u32, of: u32) -> ChildProcess {
        ChildProcess {
            rank,
            of_rank: 0,
            exec_of: Some(of),
            ..ChildProcess::default()
        }
    }

    fn value(p: &Pop, path: &[usize]) -> f64 {
        let mut n = &p.tree;
        for &i in path {
            n = &n.children[i];
        }
        *n.value.get().expect("observed")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Three single-thread programs of one process, each exec'd by the one
    /// before, 10 ns apart: one process of one core over 300 ns, with the
    /// useful time of the three (3 × 40 busy + 150 serial, the gaps
    /// between the programs included), never three ranks at once (which
    /// read 3 cores and 250 / 900 = 27.8 %).
    #[test]
    fn the_programs_of_one_process_are_its_time_line() {
        let p = analyse(
            vec![
                program(0, (0, 100), false),
                program(1, (110, 200), false),
                program(2, (210, 300), false),
            ],
            vec![exec(1, 0), exec(2, 1)],
        );
        assert_eq!(p.cores, 1);
        assert!(close(p.elapsed_s, 300e-9), "{}", p.elapsed_s);
        assert_eq!(p.scope.processes, vec![vec![0, 1, 2]]);
        assert_eq!(p.useful_s.len(), 1);
        assert!(close(p.useful_s[0][0], 270e-9), "{:?}", p.useful_s);
        assert!(close(value(&p, &[]), 0.9), "{}", value(&p, &[]));
        // No MPI, one process: the MPI level and the OpenMP load balance are 1.
        for path in [&[0][..], &[0, 0], &[0, 1], &[1, 0]] {
            assert!(close(value(&p, path), 1.0), "{path:?}: {}", value(&p, path));
        }
        let loss = |n: &str| p.additive.iter().find(|l| l.name == n).unwrap().fraction;
        assert!(close(loss("OpenMP runtime"), 0.1));
        assert!(close(loss("serial code (idle threads)"), 0.0));
        assert!(loss("other").abs() < 1e-12, "{}", loss("other"));
        assert_eq!(
            p.scope.lines(),
            ["one process per rank, its exec'd programs joined: rank 0 (programs 0, 1, 2)"]
        );
    }

    /// MPI ranks 0 and 1; rank 0's process exec'd a program (id 2) after
    /// `MPI_Finalize` and forked a child (id 3) during the run: POP counts
    /// the two ranks over their MPI window, and says what it leaves out.
    #[test]
    fn programs_after_finalize_and_child_processes_are_not_ranks() {
        let child = ChildProcess {
            rank: 3,
            of_rank: 0,
            ..ChildProcess::default()
        };
        let p = analyse(
            vec![
                program(0, (0, 100), true),
                program(1, (0, 100), true),
                program(2, (150, 1000), false),
                program(3, (20, 60), false),
            ],
            vec![exec(2, 0), child],
        );
        assert_eq!(p.cores, 2);
        assert!(close(p.elapsed_s, 100e-9), "{}", p.elapsed_s);
        assert_eq!(p.scope.processes, vec![vec![0], vec![1]]);
        assert_eq!(p.scope.outside_window, vec![2]);
        assert_eq!(p.scope.child_processes, vec![3]);
        // Each rank: 40 busy + 50 serial over 100 ns.
        assert!(close(value(&p, &[]), 0.9), "{}", value(&p, &[]));
        assert!(close(value(&p, &[0, 0]), 1.0));
        assert_eq!(
            p.scope.lines(),
            [
                "not counted: rank 2, exec'd after MPI_Finalize (outside the window)",
                "not counted: rank 3, child processes (not ranks of the job)",
            ]
        );
    }
}

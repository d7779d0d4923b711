//! The fine-grain hybrid model.

use super::*;
use crate::model::*;
use crate::trace_data::TraceData;

/// Fine-grain model per rank (Didelot 2014 ch. 5, Mahéo 2015 §3.3.1, eq. 3.1–3.2):
/// T_compute = time inside parallel regions, T_comm = MPI time of the master
/// outside them, T_seq = the rest; bound = 1 + T_compute / (T_seq + T_comm).
/// Idle threads: (P − 1) × T_seq and (P − 1) × T_comm core-seconds (master-only style).
pub fn fine_grain(data: &TraceData, ranks: &[RankOmp]) -> Vec<FineGrainModel> {
    data.ranks
        .iter()
        .zip(ranks)
        .map(|(rd, ro)| {
            let (w0, w1) = (rd.app_start_ns, rd.app_end_ns);
            let total = w1 - w0;
            let comm = rd.mpi_window.outside;
            // Profile mode keeps no region instances: their summed time.
            let compute: i64 = if ro.regions.is_empty() {
                ro.region_ns.min(total)
            } else {
                ro.regions
                    .iter()
                    .map(|(s, e)| ((*e).min(w1) - (*s).max(w0)).max(0))
                    .sum()
            };
            let seq = (total - compute - comm).max(0);
            let p = ro.threads.max(1);
            let denom = (seq + comm) as f64;
            FineGrainModel {
                rank: rd.rank,
                threads: p,
                t_total_s: ns_to_s(total),
                t_compute_s: ns_to_s(compute),
                t_comm_s: ns_to_s(comm),
                t_seq_s: ns_to_s(seq),
                fork_join_s: ns_to_s(ro.fork_join_ns),
                speedup_bound: (denom > 0.0).then(|| 1.0 + compute as f64 / denom),
                regions: ro.region_count,
                idle_serial_core_s: ns_to_s(seq) * (p - 1) as f64,
                idle_mpi_core_s: ns_to_s(comm) * (p - 1) as f64,
            }
        })
        .collect()
}

/// Whether t lies in one of the sorted, disjoint intervals.
pub fn inside(intervals: &[(i64, i64)], t: i64) -> bool {
    let i = intervals.partition_point(|iv| iv.1 < t);
    intervals.get(i).is_some_and(|iv| iv.0 <= t)
}

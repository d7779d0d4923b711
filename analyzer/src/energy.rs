//! Energy from the RAPL samples (Carretero 2015 §4: RAPL gives an energy
//! estimate per package). "Not measured" with the sampler's reason otherwise.

use hyscope_format::metrics;
use std::collections::BTreeMap;

use crate::model::ns_to_s;
use crate::model::*;
use crate::omp::OmpResult;
use crate::trace_data::TraceData;

pub fn analyze_energy(data: &TraceData, run: &RunFacts, omp: &OmpResult) -> Observable<Energy> {
    // Cumulative joules per (rank, metric, package): last − first sample.
    let mut domains = Vec::new();
    for rd in &data.ranks {
        let mut series: BTreeMap<(String, i64), (i64, f64, i64, f64)> = BTreeMap::new();
        for s in rd
            .samples
            .iter()
            .filter(|s| crate::aligned::series::is_energy(&s.metric))
        {
            let e = series
                .entry((s.metric.clone(), s.key))
                .or_insert((s.time_ns, s.value, s.time_ns, s.value));
            if s.time_ns < e.0 {
                (e.0, e.1) = (s.time_ns, s.value);
            }
            if s.time_ns >= e.2 {
                (e.2, e.3) = (s.time_ns, s.value);
            }
        }
        let host = data
            .manifest
            .ranks
            .iter()
            .find(|r| r.rank == rd.rank)
            .map(|r| r.host.clone())
            .unwrap_or_default();
        for ((metric, key), (t0, v0, t1, v1)) in series {
            let joules = (v1 - v0).max(0.0);
            let secs = ns_to_s(t1 - t0);
            domains.push(EnergyDomain {
                host: host.clone(),
                rank: rd.rank,
                metric,
                package: key,
                joules,
                avg_power_w: if secs > 0.0 { joules / secs } else { 0.0 },
            });
        }
    }
    let sampler_reason = || {
        let s: Vec<String> = data
            .manifest
            .samplers
            .iter()
            .filter(|s| s.name.contains("rapl") || s.name.contains("energy"))
            .map(|s| {
                if s.available {
                    format!("{}: {}", s.name, s.reason)
                } else {
                    s.reason.clone()
                }
            })
            .collect();
        if s.is_empty() {
            "no energy sampler in the trace".to_string()
        } else {
            s.join("; ")
        }
    };
    if domains.is_empty() {
        return Observable::not(format!("not measured: {}", sampler_reason()));
    }
    // Package energy when there is any (cores and DRAM are inside or beside it),
    // else whatever domain there is (psys).
    let pick = |m: &str| {
        domains
            .iter()
            .filter(|d| d.metric == m)
            .map(|d| d.joules)
            .sum::<f64>()
    };
    let total = [metrics::ENERGY_PKG, metrics::ENERGY_PSYS]
        .iter()
        .map(|m| pick(m))
        .find(|j| *j > 0.0)
        .unwrap_or_else(|| domains.iter().map(|d| d.joules).sum::<f64>());
    if total <= 0.0 {
        return Observable::not(format!(
            "not measured: the energy counters read 0 J ({})",
            sampler_reason()
        ));
    }
    let dur = run.duration_s.max(1e-12);
    // Phases: energy shared in proportion of the time each phase takes on the
    // ranks' master threads (average-power attribution).
    let (mut comp, mut mpi, mut serial) = (0.0, 0.0, 0.0);
    if let Some(o) = omp.overhead.get() {
        for f in &o.fine_grain {
            comp += f.t_compute_s;
            mpi += f.t_comm_s;
            serial += f.t_seq_s;
        }
    }
    let sum = comp + mpi + serial;
    let phases = if sum > 0.0 {
        [
            ("OpenMP compute", comp),
            ("MPI (outside parallel)", mpi),
            ("serial", serial),
        ]
        .into_iter()
        .map(|(p, s)| EnergyPhase {
            phase: p.to_string(),
            seconds: s / run.ranks.max(1) as f64,
            joules: total * s / sum,
        })
        .collect()
    } else {
        Vec::new()
    };
    Observable::Observed(Energy {
        domains,
        total_joules: total,
        avg_power_w: total / dur,
        phases,
        edp_js: total * dur,
    })
}

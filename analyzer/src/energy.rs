//! Energy from the RAPL samples (Carretero 2015 §4: RAPL gives an energy
//! estimate per package). "Not measured" with the sampler's reason otherwise.

use hyscope_format::metrics;
use std::collections::BTreeMap;

use crate::model::ns_to_s;
use crate::model::*;
use crate::omp::OmpResult;
use crate::trace_data::TraceData;

/// One cumulative energy counter of one rank: (global time, joules) in
/// time order (on rank 0's clock, as the phases are once loaded).
pub(crate) struct EnergySeries {
    pub rank: u32,
    pub host: String,
    pub metric: String,
    pub package: i64,
    pub points: Vec<(i64, f64)>,
}

/// Every rank's energy counters.
pub(crate) fn energy_series(data: &TraceData) -> Vec<EnergySeries> {
    let clocks = crate::aligned::Clocks::from_manifest(&data.manifest);
    let mut out = Vec::new();
    for rd in &data.ranks {
        let mut by: BTreeMap<(String, i64), Vec<(i64, f64)>> = BTreeMap::new();
        for s in rd
            .samples
            .iter()
            .filter(|s| crate::aligned::series::is_energy(&s.metric))
        {
            by.entry((s.metric.clone(), s.key))
                .or_default()
                .push((clocks.to_global(rd.rank, s.time_ns).ns(), s.value));
        }
        let host = data
            .manifest
            .ranks
            .iter()
            .find(|r| r.rank == rd.rank)
            .map(|r| r.host.clone())
            .unwrap_or_default();
        for ((metric, package), mut points) in by {
            points.sort_by_key(|p| p.0);
            out.push(EnergySeries {
                rank: rd.rank,
                host: host.clone(),
                metric,
                package,
                points,
            });
        }
    }
    out
}

impl EnergySeries {
    /// The counter's reading at `t`: linear between samples (the average
    /// power of each sampling period), held at the first and last sample
    /// outside them.
    fn at(&self, t: i64) -> f64 {
        let p = &self.points;
        let i = p.partition_point(|x| x.0 <= t);
        match (i.checked_sub(1).map(|k| p[k]), p.get(i)) {
            (Some(a), Some(b)) if b.0 > a.0 => {
                a.1 + (b.1 - a.1) * (t - a.0) as f64 / (b.0 - a.0) as f64
            }
            (Some(a), _) => a.1,
            (None, Some(b)) => b.1,
            (None, None) => 0.0,
        }
    }

    /// Joules counted between `t0` and `t1` (never negative).
    pub fn joules_in(&self, t0: i64, t1: i64) -> f64 {
        (self.at(t1) - self.at(t0)).max(0.0)
    }

    /// Joules over the whole series.
    pub fn joules(&self) -> f64 {
        match (self.points.first(), self.points.last()) {
            (Some(a), Some(b)) => self.joules_in(a.0, b.0),
            _ => 0.0,
        }
    }
}

/// Which counters make the job's energy: package energy when there is any
/// (cores and DRAM are inside or beside it), else psys, else every counter.
pub(crate) fn counted(series: &[EnergySeries]) -> Vec<&EnergySeries> {
    for m in [metrics::ENERGY_PKG, metrics::ENERGY_PSYS] {
        let of: Vec<&EnergySeries> = series.iter().filter(|s| s.metric == m).collect();
        if of.iter().map(|s| s.joules()).sum::<f64>() > 0.0 {
            return of;
        }
    }
    series.iter().collect()
}

pub fn analyze_energy(data: &TraceData, run: &RunFacts, omp: &OmpResult) -> Observable<Energy> {
    let series = energy_series(data);
    let domains: Vec<EnergyDomain> = series
        .iter()
        .map(|s| {
            let joules = s.joules();
            let secs = match (s.points.first(), s.points.last()) {
                (Some(a), Some(b)) => ns_to_s(b.0 - a.0),
                _ => 0.0,
            };
            EnergyDomain {
                host: s.host.clone(),
                rank: s.rank,
                metric: s.metric.clone(),
                package: s.package,
                joules,
                avg_power_w: if secs > 0.0 { joules / secs } else { 0.0 },
            }
        })
        .collect();
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
    let total: f64 = counted(&series).iter().map(|s| s.joules()).sum();
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
            seconds: s / crate::processes::Processes::of(&run.children).for_means(run) as f64,
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

//! The rows of the phases, matched by name: their time, the MPI time inside
//! them, and their energy and EDP where both runs measured energy.

use super::diff::Diff;
use super::noise::Spread;
use super::per_count::Per;
use super::row::{AS_IS, SUMMED};
use super::value::{Items, counted, observed, one, total};
use crate::model::{Analysis, CompareUnit::*};

/// The index of a phase's slowest rank's instances among its values, after
/// the metrics: what its time, that rank's, is per instance of.
const SLOWEST_RANKS_INSTANCES: usize = 3;

/// Phases by name: their time (the slowest rank's; its scatter that of
/// its repetitions), the MPI time inside them (summed over ranks; its
/// scatter that of the ranks' MPI times) and their instances (over every
/// rank and thread). Where the instances differ, each per instance: the
/// time over the slowest rank's instances (whose intervals it sums), the
/// MPI time over all of them.
pub(super) fn times(d: &mut Diff, a: &Analysis, b: &Analysis) {
    let phases = |x: &Analysis| -> Items {
        observed(&x.phases, |v| {
            v.iter()
                .map(|p| {
                    let time = match &p.iterations {
                        Some(it) => {
                            Spread::of_values("repetitions", it.times_s.iter().map(|t| t.1))
                        }
                        None => Spread::One,
                    };
                    let mpi = Spread::of_values("ranks", p.ranks.iter().map(|r| r.inside.mpi_s));
                    let slowest = p
                        .ranks
                        .iter()
                        .max_by(|x, y| x.time_s.total_cmp(&y.time_s))
                        .map_or(0, |r| r.instances);
                    (
                        p.name.clone(),
                        vec![
                            total(p.time_s, time),
                            total(p.inside.mpi_s, mpi),
                            counted(p.instances as f64),
                            counted(slowest as f64),
                        ],
                    )
                })
                .collect()
        })
    };
    d.section(
        "phase",
        "phases",
        none_is_empty(phases(a)),
        none_is_empty(phases(b)),
        &[
            ("time_s", Seconds, AS_IS),
            ("mpi_s", Seconds, SUMMED),
            ("instances", Count, SUMMED),
        ],
        Some(&Per {
            count: 2,
            totals: &[
                (0, SLOWEST_RANKS_INSTANCES, "time_per_instance_s"),
                (1, 2, "mpi_per_instance_s"),
            ],
        }),
    );
}

/// Their energy and EDP, where both runs measured energy (the energy
/// section says when only one did).
pub(super) fn energy(d: &mut Diff, a: &Analysis, b: &Analysis) {
    if a.energy.get().is_none() || b.energy.get().is_none() {
        return;
    }
    let energy = |x: &Analysis| -> Items {
        observed(&x.phases, |v| {
            v.iter()
                .filter_map(|p| Some((p.name.clone(), vec![one(p.energy_j?), one(p.edp_js?)])))
                .collect()
        })
    };
    d.section(
        "phase",
        "phase energy",
        none_is_empty(energy(a)),
        none_is_empty(energy(b)),
        &[("energy_j", Joules, AS_IS), ("edp_js", JouleSeconds, AS_IS)],
        None,
    );
}

/// No phases is no section, not a difference worth a caveat.
fn none_is_empty(x: Items) -> Items {
    x.or_else(|_| Ok(Vec::new()))
}

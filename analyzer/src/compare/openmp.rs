//! The rows of the OpenMP parallel regions and loops, matched by code
//! location: their times sum their instances' (whose scatter the OpenMP
//! pass keeps), their imbalance is one ratio per run.

use super::diff::Diff;
use super::noise::Spread;
use super::per_count::Per;
use super::row::{AS_IS, SUMMED};
use super::value::{Items, counted, observed, scattered, total};
use crate::model::{Analysis, CompareUnit::*};

/// Each region's time, fork/join overhead and instances.
pub(super) fn regions(d: &mut Diff, a: &Analysis, b: &Analysis) {
    let regions = |x: &Analysis| -> Items {
        observed(&x.regions, |v| {
            v.iter()
                .map(|r| {
                    let n = r.instances;
                    let v = vec![
                        scattered(r.time_s, "instances", n, &r.time_scatter),
                        scattered(r.fork_join_s, "instances", n, &r.fork_join_scatter),
                        counted(n as f64),
                    ];
                    (r.location.label.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "region",
        "OpenMP parallel regions",
        regions(a),
        regions(b),
        &[
            ("time_s", Seconds, SUMMED),
            ("fork_join_s", Seconds, SUMMED),
            ("instances", Count, SUMMED),
        ],
        Some(&Per {
            count: 2,
            totals: &[
                (0, 2, "time_per_instance_s"),
                (1, 2, "fork_join_per_instance_s"),
            ],
        }),
    );
}

/// Each loop's time, instances and imbalance.
pub(super) fn loops(d: &mut Diff, a: &Analysis, b: &Analysis) {
    let loops = |x: &Analysis| -> Items {
        observed(&x.loops, |v| {
            v.iter()
                .map(|l| {
                    let v = vec![
                        scattered(l.time_s, "instances", l.instances, &l.time_scatter),
                        counted(l.instances as f64),
                        total(l.imbalance, Spread::One),
                    ];
                    (l.location.label.clone(), v)
                })
                .collect()
        })
    };
    d.section(
        "loop",
        "OpenMP loops",
        loops(a),
        loops(b),
        &[
            ("time_s", Seconds, SUMMED),
            ("instances", Count, SUMMED),
            ("imbalance", Ratio, AS_IS),
        ],
        Some(&Per {
            count: 1,
            totals: &[(0, 1, "time_per_instance_s")],
        }),
    );
}

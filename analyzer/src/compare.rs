//! Compare two analyses: per metric and per region, loop, call and phase,
//! the difference (B − A and B / A); what only one run has; and why the two
//! may not compare as they stand ([`caveats`]: different programs, rank,
//! thread or host counts, recording modes, partial traces, a section
//! measured in one run only). Each difference says whether it is larger
//! than the runs' own variability ([`noise`]); runs of different rank
//! counts compare what sums over ranks per rank. Where an item's count
//! (calls, instances, messages) differs between the runs, its times are
//! compared per count too, so a change in the count is not read as a
//! change in the time of each ([`per_count`]). Items are named by
//! [`label`].
//!
//! This module assembles the sections in their order; each section's
//! rows are built in a module of its own ([`whole_run`], [`phases`],
//! [`openmp`], [`mpi`]) on the same rule ([`diff`]).

mod caveats;
mod diff;
mod label;
mod mpi;
mod noise;
mod openmp;
mod per_count;
mod phases;
mod row;
mod value;
mod whole_run;

pub use caveats::{caveats, caveats_between};
pub use label::label;

use crate::model::*;
use diff::Diff;

pub fn compare(a: &Analysis, b: &Analysis) -> Comparison {
    let per_rank = a.run.ranks != b.run.ranks && a.run.ranks > 0 && b.run.ranks > 0;
    let mut d = Diff {
        rows: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        caveats: caveats(a, b),
        per_rank: per_rank.then(|| (1.0 / a.run.ranks as f64, 1.0 / b.run.ranks as f64)),
    };
    whole_run::duration(&mut d, a, b);
    whole_run::pop(&mut d, a, b);
    phases::times(&mut d, a, b);
    phases::energy(&mut d, a, b);
    openmp::regions(&mut d, a, b);
    openmp::loops(&mut d, a, b);
    mpi::calls(&mut d, a, b);
    mpi::waits(&mut d, a, b);
    mpi::messages(&mut d, a, b);
    whole_run::energy(&mut d, a, b);
    Comparison {
        a: a.trace_dir.clone(),
        b: b.trace_dir.clone(),
        side_a: caveats::side(a),
        side_b: caveats::side(b),
        noise: summary(&d.rows),
        caveats: d.caveats,
        rows: d.rows,
        per_rank,
        only_in_a: d.only_in_a,
        only_in_b: d.only_in_b,
    }
}

/// How many of the rows (those where either run has a value) have each
/// noise verdict.
fn summary(rows: &[CompareRow]) -> NoiseSummary {
    let mut summary = NoiseSummary::default();
    for r in rows.iter().filter(|r| r.a != 0.0 || r.b != 0.0) {
        *match r.noise.verdict {
            NoiseVerdict::BeyondNoise => &mut summary.beyond_noise,
            NoiseVerdict::WithinNoise => &mut summary.within_noise,
            NoiseVerdict::TooFewValues => &mut summary.too_few_values,
            NoiseVerdict::Exact => &mut summary.exact,
            NoiseVerdict::NotEstimated => &mut summary.not_estimated,
        } += 1;
    }
    summary
}

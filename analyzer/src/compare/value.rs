//! A run's value of a compared metric and what its noise is estimated
//! from ([`Spread`]); the values of a section's items.

use super::noise::Spread;
use crate::model::{Observable, Scatter};

/// A run's value of a metric, and what its noise is estimated from.
#[derive(Debug, Clone)]
pub(super) struct Value {
    pub(super) v: f64,
    pub(super) spread: Spread,
}

/// Per item of a section (a region, a loop, a call…): its name and the
/// values of the section's metrics (then any values its per-count rows
/// divide by, [`super::per_count::Per`]); `Err` with why where the section
/// was not observed in that run.
pub(super) type Items = Result<Vec<(String, Vec<Value>)>, String>;

/// One value per run: a duration, an efficiency, energy.
pub(super) fn one(v: f64) -> Value {
    Value {
        v,
        spread: Spread::One,
    }
}

/// A count or bytes: exact, not a measured time.
pub(super) fn counted(v: f64) -> Value {
    Value {
        v,
        spread: Spread::Exact,
    }
}

/// A total of values whose scatter is `spread`.
pub(super) fn total(v: f64, spread: Spread) -> Value {
    Value { v, spread }
}

/// The total of values whose scatter is `s` (or why it is not known),
/// `n` of them where `s` does not say (below 2).
pub(super) fn scattered(
    v: f64,
    of: &'static str,
    n: u64,
    s: &Observable<Option<Scatter>>,
) -> Value {
    match s {
        Observable::Observed(s) => total(v, Spread::sum(of, s.map_or(n.min(1), |s| s.values), *s)),
        Observable::NotObservable(why) => total(v, Spread::Not(why.clone())),
    }
}

/// An observed section's items, or why it was not observed.
pub(super) fn observed<T>(
    x: &Observable<T>,
    f: impl FnOnce(&T) -> Vec<(String, Vec<Value>)>,
) -> Items {
    match x {
        Observable::Observed(v) => Ok(f(v)),
        Observable::NotObservable(why) => Err(why.clone()),
    }
}

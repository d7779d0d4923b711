//! Whether a difference between two runs is larger than the runs' own
//! variability.
//!
//! A compared time is a total: the sum of an item's values in a run (its
//! calls, instances, messages, repetitions; where nothing finer is kept,
//! its ranks). Taking those values as independent draws, a total of n
//! values with sample standard deviation s varies from run to run by
//! √n·s, so B − A has the standard error √(n_A·s_A² + n_B·s_B²) — Welch's
//! unequal-variance test on the two totals, with Welch–Satterthwaite's
//! degrees of freedom (variance of a total n·s², estimated from n − 1).
//! A difference is beyond noise when |B − A| exceeds the two-sided
//! p < 0.001 quantile of Student's t times that error: strict, because a
//! comparison tests dozens of rows at once. What this cannot see: a
//! change that shifts every value of a run alike (another load on the
//! machine during one run) is not in either run's scatter, so it reads as
//! a real difference; and values that differ for a reason that repeats
//! in both runs (rank 0's calls always longer) widen the scatter, which
//! errs towards "within noise". Below two values a run has no scatter to
//! estimate, and the verdict says so.
//!
//! A mean per call (a total over its count, where the counts differ) is
//! the same total scaled by 1 / count: its error is √(n·s²) / count, which
//! for n = count is Welch's test on the two means, s_A²/n_A + s_B²/n_B.

use crate::model::{Noise, NoiseVerdict, Scatter};

/// What a run's value of a metric is, for its noise.
#[derive(Debug, Clone)]
pub(crate) enum Spread {
    /// A sum of `values` values (`of`: calls, instances…) with sample
    /// standard deviation `sd`, in the metric's unit.
    Sum {
        of: &'static str,
        values: u64,
        sd: f64,
    },
    /// One value per run (a duration, an efficiency, a ratio, energy):
    /// nothing to estimate its scatter from.
    One,
    /// A count or bytes: exact.
    Exact,
    /// Measured values whose scatter the analysis does not have: why.
    Not(String),
}

impl Spread {
    /// A total of `values` values of scatter `s` (None: fewer than 2).
    pub(crate) fn sum(of: &'static str, values: u64, s: Option<Scatter>) -> Spread {
        Spread::Sum {
            of,
            values,
            sd: s.map_or(0.0, |s| s.sd),
        }
    }

    /// A total of the values `v` (seconds).
    pub(crate) fn of_values(of: &'static str, v: impl Iterator<Item = f64> + Clone) -> Spread {
        let n = v.clone().count();
        if n < 2 {
            return Spread::sum(of, n as u64, None);
        }
        let mean = v.clone().sum::<f64>() / n as f64;
        let ss: f64 = v.map(|x| (x - mean).powi(2)).sum();
        Spread::Sum {
            of,
            values: n as u64,
            sd: (ss / (n - 1) as f64).sqrt(),
        }
    }
}

/// The noise of `delta` = B − A, where A's value was scaled by `scale_a`
/// and B's by `scale_b` (1 / ranks when compared per rank).
pub(crate) fn noise(delta: f64, (a, scale_a): (Spread, f64), (b, scale_b): (Spread, f64)) -> Noise {
    let (of, na, sa, nb, sb) = match (a, b) {
        (Spread::Not(why), _) | (_, Spread::Not(why)) => {
            return Noise {
                verdict: NoiseVerdict::NotEstimated,
                why: Some(why),
                ..Noise::default()
            };
        }
        (Spread::Exact, _) | (_, Spread::Exact) => {
            return Noise {
                verdict: NoiseVerdict::Exact,
                why: Some("counted without error: no scatter of measured values, any difference is what the runs did".into()),
                ..Noise::default()
            };
        }
        (Spread::One, _) | (_, Spread::One) => {
            return Noise {
                verdict: NoiseVerdict::TooFewValues,
                why: Some("one value per run: no scatter to weigh the difference against".into()),
                ..Noise::default()
            };
        }
        (
            Spread::Sum {
                of,
                values: na,
                sd: sa,
            },
            Spread::Sum {
                values: nb, sd: sb, ..
            },
        ) => (of, na, sa, nb, sb),
    };
    let mut n = Noise {
        values: of.into(),
        values_a: na,
        values_b: nb,
        ..Noise::default()
    };
    if na < 2 || nb < 2 {
        n.verdict = NoiseVerdict::TooFewValues;
        n.why = Some(format!(
            "{na} and {nb} {of}: too few to estimate either run's scatter"
        ));
        return n;
    }
    let va = na as f64 * (sa * scale_a).powi(2);
    let vb = nb as f64 * (sb * scale_b).powi(2);
    let se = (va + vb).sqrt();
    let den = va * va / (na - 1) as f64 + vb * vb / (nb - 1) as f64;
    let df = if den > 0.0 {
        (va + vb).powi(2) / den
    } else {
        (na + nb - 2) as f64
    };
    let threshold = t_999(df);
    n.standard_error = Some(se);
    n.degrees_of_freedom = Some(df);
    n.threshold = Some(threshold);
    let beyond = if se > 0.0 {
        let t = delta.abs() / se;
        n.t = Some(t);
        t > threshold
    } else {
        // Every value alike in both runs: any difference is not scatter.
        delta != 0.0
    };
    n.verdict = if beyond {
        NoiseVerdict::BeyondNoise
    } else {
        NoiseVerdict::WithinNoise
    };
    n
}

/// Student's t quantile at 0.9995 (two-sided p = 0.001) for `df` degrees
/// of freedom: the table for the fewest (rounded down: the stricter),
/// then the Cornish–Fisher expansion around the normal quantile, within
/// 0.01 of the exact value from 10 on.
fn t_999(df: f64) -> f64 {
    const TABLE: [f64; 10] = [
        636.62, 31.599, 12.924, 8.610, 6.869, 5.959, 5.408, 5.041, 4.781, 4.587,
    ];
    if !df.is_finite() || df < 1.0 {
        return TABLE[0];
    }
    if df < 10.0 {
        return TABLE[df as usize - 1];
    }
    let z: f64 = 3.290_527;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expansion meets the exact quantiles (R's `qt(0.9995, df)`).
    #[test]
    fn t_quantiles() {
        for (df, exact) in [
            (1.0, 636.62),
            (3.5, 12.924),
            (10.0, 4.587),
            (20.0, 3.850),
            (30.0, 3.646),
            (120.0, 3.373),
            (1e9, 3.2905),
        ] {
            assert!((t_999(df) - exact).abs() < 0.01, "{df}: {}", t_999(df));
        }
    }

    fn sum(values: u64, sd: f64) -> (Spread, f64) {
        (
            Spread::Sum {
                of: "calls",
                values,
                sd,
            },
            1.0,
        )
    }

    /// 100 calls of sd 1 ms a run: the total varies by 10 ms, B − A by
    /// 14.1 ms; 30 ms is within p < 0.001's 3.3 errors, 60 ms beyond.
    #[test]
    fn welch_on_totals() {
        let n = noise(0.030, sum(100, 1e-3), sum(100, 1e-3));
        assert_eq!(n.verdict, NoiseVerdict::WithinNoise, "{n:?}");
        assert!((n.standard_error.unwrap() - 0.014142).abs() < 1e-5);
        assert!((n.degrees_of_freedom.unwrap() - 198.0).abs() < 1e-6);
        let n = noise(-0.060, sum(100, 1e-3), sum(100, 1e-3));
        assert_eq!(n.verdict, NoiseVerdict::BeyondNoise, "{n:?}");
        // Per rank, both totals / 4: the error too.
        let quarter = |(s, _): (Spread, f64)| (s, 0.25);
        let n = noise(0.015, quarter(sum(100, 1e-3)), quarter(sum(100, 1e-3)));
        assert_eq!(n.verdict, NoiseVerdict::BeyondNoise, "{n:?}");
        assert!((n.standard_error.unwrap() - 0.0035355).abs() < 1e-6);
    }

    /// One call in a run, or one value per run: said so, never a verdict.
    #[test]
    fn too_few_values_are_said_so() {
        let n = noise(5.0, sum(1, 0.0), sum(100, 1e-3));
        assert_eq!(n.verdict, NoiseVerdict::TooFewValues);
        assert!(n.why.unwrap().contains("1 and 100 calls"));
        let n = noise(5.0, (Spread::One, 1.0), (Spread::One, 1.0));
        assert_eq!(n.verdict, NoiseVerdict::TooFewValues);
        assert!(n.standard_error.is_none());
        let n = noise(5.0, (Spread::Not("not kept".into()), 1.0), sum(9, 1.0));
        assert_eq!(n.verdict, NoiseVerdict::NotEstimated);
        assert_eq!(n.why.as_deref(), Some("not kept"));
        let n = noise(5.0, (Spread::Exact, 1.0), (Spread::Exact, 1.0));
        assert_eq!(n.verdict, NoiseVerdict::Exact);
    }

    /// 100 calls of sd 1 ms in A, 50 in B: the means per call differ by
    /// √(1/100 + 1/50) ms ≈ 0.173 ms of error (Welch on the means), the
    /// totals scaled by 1 / count; 0.5 ms per call is within p < 0.001's
    /// 3.3 errors, 1 ms beyond.
    #[test]
    fn welch_on_means_per_call() {
        let per = |n: u64| (sum(n, 1e-3).0, 1.0 / n as f64);
        let n = noise(0.5e-3, per(100), per(50));
        assert!(
            (n.standard_error.unwrap() - 1.7321e-4).abs() < 1e-8,
            "{n:?}"
        );
        assert_eq!(n.verdict, NoiseVerdict::WithinNoise, "{n:?}");
        let n = noise(1e-3, per(100), per(50));
        assert_eq!(n.verdict, NoiseVerdict::BeyondNoise, "{n:?}");
    }
}

//! Loop schedule tuning: reconstruct the cost of each iteration, simulate
//! OpenMP schedules with the dispatch cost (measured, or assumed) and team size, recommend.
//!
//! The simulator follows libomp's algorithms: `static` gives thread i the
//! i-th of P nearly equal blocks (the first n mod P threads one iteration more);
//! `static,c` deals chunks of c round robin; `dynamic,c` hands the next chunk
//! to the first free thread through one shared counter (a dispatch costs `d`
//! and is serialised on that counter); `guided,c` hands out
//! max(c, ⌈remaining / 2P⌉) iterations per dispatch (libomp's guided_iterative).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::{CostProfile, Recommendation, SimulatedSchedule};

/// A schedule to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sched {
    Static,
    StaticChunk(u64),
    Dynamic(u64),
    Guided(u64),
}

impl Sched {
    /// As written in `schedule(...)` and `OMP_SCHEDULE`.
    pub fn text(self) -> String {
        match self {
            Sched::Static => "static".into(),
            Sched::StaticChunk(c) => format!("static,{c}"),
            Sched::Dynamic(c) => format!("dynamic,{c}"),
            Sched::Guided(c) => format!("guided,{c}"),
        }
    }
    fn simplicity(self) -> u32 {
        match self {
            Sched::Static => 0,
            Sched::StaticChunk(_) => 1,
            Sched::Dynamic(_) => 2,
            Sched::Guided(_) => 3,
        }
    }
}

/// Above this many chunks the simulation uses the fine-grain limit instead of
/// dealing every chunk (keeps the tuner O(1 M) per candidate).
const MAX_SIMULATED_CHUNKS: u64 = 1 << 20;

/// The cost of a loop's iteration space, piecewise constant over bins.
#[derive(Debug, Clone)]
pub struct LoopModel {
    pub trip: u64,
    pub team: u32,
    /// Cost of one dispatch (ns).
    pub dispatch_ns: f64,
    /// Prefix sums of bin costs: prefix[k] = cost of iterations [0, k·w).
    prefix: Vec<f64>,
    bin_width: f64,
}

impl LoopModel {
    /// `bin_cost_per_iter[k]` = cost (ns) of one iteration in bin k, bins of equal width over [0, trip).
    pub fn new(trip: u64, team: u32, dispatch_ns: f64, bin_cost_per_iter: &[f64]) -> LoopModel {
        let bins = bin_cost_per_iter.len().max(1);
        let bin_width = trip.max(1) as f64 / bins as f64;
        let mut prefix = Vec::with_capacity(bins + 1);
        prefix.push(0.0);
        let mut acc = 0.0;
        for k in 0..bins {
            acc += bin_cost_per_iter.get(k).copied().unwrap_or(0.0).max(0.0) * bin_width;
            prefix.push(acc);
        }
        LoopModel {
            trip: trip.max(1),
            team: team.max(1),
            dispatch_ns: dispatch_ns.max(0.0),
            prefix,
            bin_width,
        }
    }

    fn cum(&self, i: f64) -> f64 {
        let x = (i / self.bin_width).clamp(0.0, (self.prefix.len() - 1) as f64);
        let k = (x.floor() as usize).min(self.prefix.len() - 2);
        let frac = x - k as f64;
        self.prefix[k] + (self.prefix[k + 1] - self.prefix[k]) * frac
    }

    /// Cost (ns) of iterations [a, b).
    pub fn cost(&self, a: u64, b: u64) -> f64 {
        self.cum(b as f64) - self.cum(a as f64)
    }

    pub fn total(&self) -> f64 {
        *self.prefix.last().unwrap_or(&0.0)
    }

    /// Simulate a schedule: (loop time ns, max/mean thread busy, chunks).
    pub fn simulate(&self, s: Sched) -> (f64, f64, u64) {
        let p = self.team as u64;
        let n = self.trip;
        let d = self.dispatch_ns;
        let mut busy = vec![0.0f64; p as usize];
        let chunks;
        match s {
            Sched::Static => {
                let base = n / p;
                let extra = n % p;
                let mut start = 0;
                for (t, b) in busy.iter_mut().enumerate() {
                    let len = base + u64::from((t as u64) < extra);
                    *b = self.cost(start, start + len) + d;
                    start += len;
                }
                chunks = p.min(n);
            }
            Sched::StaticChunk(c) => {
                let c = c.max(1);
                let nc = n.div_ceil(c);
                chunks = nc;
                if nc > MAX_SIMULATED_CHUNKS {
                    let share = self.total() / p as f64;
                    busy.iter_mut().for_each(|b| *b = share + d);
                } else {
                    for k in 0..nc {
                        let a = k * c;
                        busy[(k % p) as usize] += self.cost(a, (a + c).min(n));
                    }
                    busy.iter_mut().for_each(|b| *b += d);
                }
            }
            Sched::Dynamic(c) | Sched::Guided(c) => {
                let c = c.max(1);
                let guided = matches!(s, Sched::Guided(_));
                let approx = !guided && n.div_ceil(c) > MAX_SIMULATED_CHUNKS;
                if approx {
                    // Fine-grain limit: perfectly balanced, plus the dispatches,
                    // bounded below by the shared counter's throughput.
                    let nc = n.div_ceil(c);
                    let t = (self.total() + nc as f64 * d) / p as f64;
                    let t = t.max(nc as f64 * d);
                    return (t, 1.0, nc);
                }
                let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
                    (0..p as usize).map(|t| Reverse((0u64, t))).collect();
                // Times in ns as f64 carried beside the integer heap key (ps resolution).
                let mut free = vec![0.0f64; p as usize];
                let mut counter_free = 0.0f64;
                let mut next = 0u64;
                let mut nc = 0u64;
                while next < n {
                    let Reverse((_, t)) = heap.pop().expect("team >= 1");
                    let remaining = n - next;
                    let len = if guided {
                        c.max(remaining.div_ceil(2 * p)).min(remaining)
                    } else {
                        c.min(remaining)
                    };
                    let grab = free[t].max(counter_free);
                    counter_free = grab + d;
                    let work = self.cost(next, next + len);
                    free[t] = grab + d + work;
                    busy[t] += d + work;
                    next += len;
                    nc += 1;
                    heap.push(Reverse(((free[t] * 1000.0) as u64, t)));
                }
                chunks = nc;
                let t = free.iter().cloned().fold(0.0, f64::max);
                let mean = busy.iter().sum::<f64>() / p as f64;
                let max = busy.iter().cloned().fold(0.0, f64::max);
                return (t, if mean > 0.0 { max / mean } else { 1.0 }, chunks);
            }
        }
        let max = busy.iter().cloned().fold(0.0, f64::max);
        let mean = busy.iter().sum::<f64>() / p as f64;
        (max, if mean > 0.0 { max / mean } else { 1.0 }, chunks)
    }

    /// The candidate schedules: static, and static,c / dynamic,c / guided,c for
    /// c = 1, 2, 4, … up to ⌈n/P⌉.
    pub fn candidates(&self) -> Vec<Sched> {
        let mut out = vec![Sched::Static];
        let max_c = self.trip.div_ceil(self.team as u64).max(1);
        let mut c = 1u64;
        while c <= max_c {
            out.push(Sched::StaticChunk(c));
            out.push(Sched::Dynamic(c));
            out.push(Sched::Guided(c));
            c *= 2;
        }
        out
    }
}

/// Shape of a cost profile in words, from a least-squares line through the bins.
pub fn shape_of(bins: &[f64]) -> String {
    let n = bins.len();
    if n < 2 {
        return "unknown".into();
    }
    let mean = bins.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return "unknown".into();
    }
    let var = bins.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / n as f64;
    let cv = var.sqrt() / mean;
    if cv < 0.1 {
        return "uniform".into();
    }
    let xm = (n as f64 - 1.0) / 2.0;
    let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = (0..n).map(|i| (i as f64 - xm) * (bins[i] - mean)).sum();
    let slope = sxy / sxx;
    let fitted_var = slope * slope * sxx / n as f64;
    let r2 = if var > 0.0 { fitted_var / var } else { 0.0 };
    let rising = bins.windows(2).all(|w| w[1] >= w[0] * 0.98);
    let falling = bins.windows(2).all(|w| w[1] <= w[0] * 1.02);
    if r2 > 0.8 {
        if slope > 0.0 {
            "triangular (cost grows with the iteration)".into()
        } else {
            "triangular (cost falls with the iteration)".into()
        }
    } else if rising {
        // Typically a step profile from a few per-thread static ranges.
        "increasing".into()
    } else if falling {
        "decreasing".into()
    } else {
        "irregular".into()
    }
}

/// How a recommendation's rule begins when the loop's threads took turns on
/// CPUs (`TuneInput::threads_took_turns`): no schedule is advised.
pub const THREADS_TOOK_TURNS: &str = "the team's threads took turns on CPUs";

/// Everything the tuner knows about one loop, averaged over its instances.
#[derive(Debug, Clone)]
pub struct TuneInput {
    pub label: String,
    /// Measured mean loop time per instance (ns).
    pub measured_ns: f64,
    pub instances: u64,
    /// Σ loop time over all ranks and instances (s) and its share of the run.
    pub time_s: f64,
    pub share_of_run: f64,
    /// Ranks the loop ran on (the gain in wall time is per rank).
    pub ranks: u32,
    pub trip: u64,
    pub team: u32,
    pub dispatch_ns: f64,
    /// `dispatch_ns` was measured (gaps between chunks), not assumed.
    pub dispatch_measured: bool,
    /// The schedule in use, if identified.
    pub current: Option<Sched>,
    pub current_text: String,
    /// Measured max/mean thread busy time.
    pub imbalance: f64,
    /// Scheduling overhead / loop time.
    pub scheduling_share: f64,
    pub profile: CostProfile,
    /// Where the team's threads took turns on CPUs in the run
    /// (`RankPlacement::turns_text` of a rank the loop ran on), none where
    /// each had a CPU: the simulation gives every thread a core.
    pub threads_took_turns: Option<String>,
}

/// Simulate every candidate and pick a recommendation.
pub fn tune(input: &TuneInput) -> (Vec<SimulatedSchedule>, Recommendation) {
    let model = LoopModel::new(
        input.trip,
        input.team,
        input.dispatch_ns,
        &input.profile.bins_ns,
    );
    let baseline_sim = input
        .current
        .map(|c| model.simulate(c).0)
        .unwrap_or(input.measured_ns);
    // Calibrate on the current schedule: loop entry/exit costs the simulator does
    // not model stay in every prediction (additive); when the simulation of the
    // current schedule overshoots the measurement, scale instead.
    let fixed = (input.measured_ns - baseline_sim).max(0.0);
    let scale = if baseline_sim > input.measured_ns && baseline_sim > 0.0 {
        input.measured_ns / baseline_sim
    } else {
        1.0
    };
    let measured = input.measured_ns.max(1.0);
    let mut sims: Vec<(Sched, SimulatedSchedule)> = model
        .candidates()
        .into_iter()
        .map(|s| {
            let (t, imb, chunks) = model.simulate(s);
            let predicted = t * scale + fixed;
            (
                s,
                SimulatedSchedule {
                    schedule: s.text(),
                    predicted_s: predicted * 1e-9,
                    speedup: measured / predicted.max(1.0),
                    imbalance: imb,
                    chunks,
                },
            )
        })
        .collect();
    // Best: fastest; within 1 % prefer the simpler schedule, then the larger chunk
    // (less sensitive to the dispatch cost).
    let best_t = sims
        .iter()
        .map(|(_, s)| s.predicted_s)
        .fold(f64::INFINITY, f64::min);
    let best = sims
        .iter()
        .filter(|(_, s)| s.predicted_s <= best_t * 1.01)
        .min_by_key(|(sc, _)| {
            let c = match sc {
                Sched::Static => u64::MAX,
                Sched::StaticChunk(c) | Sched::Dynamic(c) | Sched::Guided(c) => *c,
            };
            (sc.simplicity(), Reverse(c))
        })
        .map(|(sc, s)| (*sc, s.clone()))
        .expect("static is always a candidate");
    sims.sort_by(|a, b| a.1.predicted_s.total_cmp(&b.1.predicted_s));

    let share_pct = input.share_of_run * 100.0;
    let (sched, sim, rule) = if let Some(turns) = &input.threads_took_turns {
        // Threads that take turns on a CPU finish the loop's work in the
        // same time whatever the schedule: the measured imbalance is the
        // first thread done while the others still wait for the CPU.
        let cur = input.current.unwrap_or(Sched::Static);
        (
            cur,
            SimulatedSchedule {
                schedule: cur.text(),
                predicted_s: measured * 1e-9,
                speedup: 1.0,
                imbalance: input.imbalance,
                chunks: model.simulate(cur).2,
            },
            format!(
                "{THREADS_TOOK_TURNS} ({turns}): the loop's time is its work over those CPUs whatever the schedule; with a core per thread the simulation predicts {} {:.2}× — give each thread a core (the placement finding), then record again",
                best.1.schedule, best.1.speedup
            ),
        )
    } else if matches!(input.current, Some(Sched::Static)) && input.imbalance <= 1.05 {
        // Mahéo 2015 §6.6.2: balanced under static → keep static.
        let s = model.simulate(Sched::Static).0 * scale + fixed;
        (
            Sched::Static,
            SimulatedSchedule {
                schedule: "static".into(),
                predicted_s: s * 1e-9,
                speedup: measured / s.max(1.0),
                imbalance: input.imbalance,
                chunks: input.team as u64,
            },
            "Mahéo 2015 §6.6.2: balanced under static (max/mean ≤ 1.05) — keep static".to_string(),
        )
    } else if best.1.speedup < 1.05 {
        let cur = input.current.unwrap_or(best.0);
        let (t, imb, chunks) = model.simulate(cur);
        (
            cur,
            SimulatedSchedule {
                schedule: cur.text(),
                predicted_s: (t * scale + fixed) * 1e-9,
                speedup: measured / (t * scale + fixed).max(1.0),
                imbalance: imb,
                chunks,
            },
            "no simulated schedule gains 5 % or more — keep the current one".to_string(),
        )
    } else if matches!(input.current, Some(Sched::Dynamic(c)) if c <= 4)
        && input.scheduling_share > 0.1
    {
        (
            best.0,
            best.1.clone(),
            format!(
                "Mahéo 2015 §6.6.2: small-chunk dynamic with {:.0} % of the loop in scheduling → larger chunk (simulated)",
                input.scheduling_share * 100.0
            ),
        )
    } else {
        let mut rule = format!(
            "simulation of {} schedules with {} dispatch cost ({:.0} ns) and team size {}",
            sims.len(),
            if input.dispatch_measured {
                "the measured"
            } else {
                "an assumed"
            },
            input.dispatch_ns,
            input.team
        );
        // Say why the advice is not the top of the simulated list.
        if let Some((_, fastest)) = sims.first()
            && fastest.schedule != best.1.schedule
        {
            rule.push_str(&format!(
                "; within 1 % of the fastest ({} {:.2}×) the simpler schedule and the larger chunk (less sensitive to the dispatch cost)",
                fastest.schedule, fastest.speedup
            ));
        }
        (best.0, best.1.clone(), rule)
    };
    let keep = Some(sched) == input.current;
    let clause = if keep {
        format!("keep schedule({})", sched.text())
    } else {
        format!("schedule({})", sched.text())
    };
    let mut evidence = format!(
        "{}: {} — predicted {:.2}× on this loop, {:.0} % of run time; {} cost, imbalance {} under {}",
        input.label,
        clause,
        sim.speedup,
        share_pct,
        input.profile.shape,
        crate::units::imbalance(input.imbalance),
        input.current_text
    );
    if let Sched::StaticChunk(c) = sched
        && sim.imbalance > 1.2
    {
        // Mahéo 2015 §6.6.2 (MC, chunk 25600): a large static chunk can win on max time with strong imbalance.
        evidence.push_str(&format!(
            "; note: static,{c} leaves imbalance {}",
            crate::units::imbalance(sim.imbalance)
        ));
    }
    let gain = input.time_s * (1.0 - 1.0 / sim.speedup.max(1e-9)) / input.ranks.max(1) as f64;
    let rec = Recommendation {
        clause,
        omp_schedule: sched.text(),
        predicted_s: sim.predicted_s,
        predicted_speedup: sim.speedup,
        predicted_gain_s: gain.max(0.0),
        evidence,
        rule,
    };
    (sims.into_iter().map(|(_, s)| s).collect(), rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triangular(n: usize) -> Vec<f64> {
        (0..n).map(|i| (i as f64 + 0.5) * 10.0).collect()
    }

    #[test]
    fn static_blocks_of_triangular_cost() {
        // Cost i·10 ns per iteration over 4 bins of 25 iterations each, 4 threads:
        // static gives each thread one bin; the last holds 7/16 of the total.
        let m = LoopModel::new(100, 4, 0.0, &[1.0, 3.0, 5.0, 7.0]);
        let (t, imb, chunks) = m.simulate(Sched::Static);
        assert_eq!(chunks, 4);
        assert!((t - 175.0).abs() < 1e-9);
        assert!((imb - 1.75).abs() < 1e-9);
        assert!((m.total() - 400.0).abs() < 1e-9);
    }

    #[test]
    fn dynamic_one_without_dispatch_cost_is_balanced() {
        let m = LoopModel::new(1000, 4, 0.0, &[1.0; 10]);
        let (t, _, chunks) = m.simulate(Sched::Dynamic(1));
        assert_eq!(chunks, 1000);
        assert!((t - 250.0).abs() < 1e-6);
    }

    #[test]
    fn dispatch_cost_serialises_small_chunks() {
        // 1000 iterations of 1 ns and 100 ns per dispatch: the shared counter bounds
        // dynamic,1 at 1000 × 100 ns.
        let m = LoopModel::new(1000, 4, 100.0, &[1.0; 10]);
        let (t, _, _) = m.simulate(Sched::Dynamic(1));
        assert!((100_000.0..100_200.0).contains(&t), "{t}");
    }

    #[test]
    fn guided_chunk_sizes_follow_libomp() {
        // n = 100, P = 2: chunks 25, 19, 14, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1 (⌈rem/4⌉).
        let m = LoopModel::new(100, 2, 0.0, &[1.0]);
        let (_, _, chunks) = m.simulate(Sched::Guided(1));
        let mut rem = 100u64;
        let mut expect = 0;
        while rem > 0 {
            rem -= rem.div_ceil(4).min(rem);
            expect += 1;
        }
        assert_eq!(chunks, expect);
    }

    /// A triangular loop under plain static, 2 threads, no dispatch cost:
    /// every round-robin schedule balances it to within 1 %, so the advice is
    /// the largest static chunk among them, and the rule says which schedule
    /// simulated fastest and why it was not chosen.
    #[test]
    fn advice_within_one_percent_names_the_fastest() {
        let bins = triangular(32);
        let model = LoopModel::new(4000, 2, 0.0, &bins);
        let measured = model.simulate(Sched::Static).0;
        let input = TuneInput {
            label: "t.c:1".into(),
            measured_ns: measured,
            instances: 1,
            time_s: measured * 1e-9,
            share_of_run: 0.5,
            ranks: 1,
            trip: 4000,
            team: 2,
            dispatch_ns: 0.0,
            dispatch_measured: true,
            current: Some(Sched::Static),
            current_text: "static".into(),
            imbalance: model.simulate(Sched::Static).1,
            scheduling_share: 0.0,
            threads_took_turns: None,
            profile: CostProfile {
                shape: shape_of(&bins),
                bins_ns: bins,
                source: "test".into(),
            },
        };
        let (sims, rec) = tune(&input);
        let fastest = &sims[0];
        let chosen = sims
            .iter()
            .find(|s| s.schedule == rec.omp_schedule)
            .unwrap();
        assert!(chosen.predicted_s <= fastest.predicted_s * 1.01);
        assert!(rec.omp_schedule.starts_with("static,"), "{rec:?}");
        // No static chunk larger than the chosen one is within 1 %.
        let chunk = |s: &str| {
            s.strip_prefix("static,")
                .and_then(|c| c.parse::<u64>().ok())
        };
        let c = chunk(&rec.omp_schedule).unwrap();
        assert!(sims.iter().all(|s| {
            chunk(&s.schedule).is_none_or(|k| k <= c || s.predicted_s > fastest.predicted_s * 1.01)
        }));
        assert_ne!(fastest.schedule, rec.omp_schedule, "{sims:?}");
        assert!(
            rec.rule
                .contains(&format!("within 1 % of the fastest ({} ", fastest.schedule)),
            "{}",
            rec.rule
        );
        assert_eq!(rec.clause, format!("schedule({})", rec.omp_schedule));
    }

    #[test]
    fn triangular_shape_is_recognised() {
        assert!(shape_of(&triangular(32)).starts_with("triangular (cost grows"));
        assert_eq!(shape_of(&[5.0; 32]), "uniform");
    }
}

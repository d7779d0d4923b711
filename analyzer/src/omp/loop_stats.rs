//! A loop's statistics and schedule advice from its accumulated instances.

use super::loops::LoopAcc;
use super::*;
use crate::model::*;
use crate::trace_data::TraceData;
use crate::tuner::{self, Sched, TuneInput};

pub(super) fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable(mid);
    Some(*m)
}

pub(super) fn build_loop(
    data: &TraceData,
    codeptr: u64,
    mut a: LoopAcc,
    total_rank_s: f64,
    dispatch_cap: Option<i32>,
    profile_mode: bool,
    placement: &[RankPlacement],
) -> LoopStats {
    let location = data.location(codeptr);
    let variant = a
        .variants
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(v, _)| *v)
        .unwrap_or(1);
    let schedule: Observable<String> = match variant {
        10 => Observable::Observed("static".into()),
        11 => Observable::Observed("dynamic".into()),
        12 => Observable::Observed("guided".into()),
        13 => Observable::Observed("other".into()),
        _ => Observable::not(
            "the runtime reports only ompt_work_loop, without the schedule kind (libomp < 19)",
        ),
    };
    // The mean trip count: the simulation stands for the mean instance.
    let trip = {
        let n: u64 = a.trips.values().sum();
        let s: u128 = a.trips.iter().map(|(t, k)| *t as u128 * *k as u128).sum();
        if n > 0 {
            (s as f64 / n as f64).round() as u64
        } else {
            0
        }
    };
    // libomp reports a static loop with one dispatch per thread at its
    // start, of the thread's first chunk: under plain static its whole
    // block, under a compile-time schedule(static,c) its first c
    // iterations only, the rest never reported. Those rows then cover
    // less than the iteration space: the loop is static,c, and where each
    // thread's time went is unknown (a schedule(runtime) loop under
    // OMP_SCHEDULE=static,c is dispatched chunk by chunk and is whole).
    let trip_iters: u64 = a.trips.iter().map(|(t, n)| t * n).sum();
    let first_chunks_only = variant == 10 && a.any_chunks && a.chunk_iters < trip_iters;
    let per_thread: Vec<LoopThreadStats> = a
        .per_thread
        .iter()
        .map(|(&(rank, thread), t)| LoopThreadStats {
            rank,
            thread,
            time_s: ns_to_s(t.time),
            busy_s: ns_to_s(t.busy),
            iterations: (!first_chunks_only && (a.any_chunks || t.iterations > 0))
                .then_some(t.iterations),
            chunks: (a.any_chunks && !first_chunks_only).then_some(t.chunks),
        })
        .collect();
    let imbalance = team_imbalance(per_thread.iter().map(|t| (t.rank, t.busy_s)));
    let no_chunks = || -> String {
        match dispatch_cap {
            Some(1) => "no chunk events: the runtime never dispatches (ompt_callback_dispatch = never, libomp < 15)".into(),
            _ => "no chunk (dispatch) events recorded for this loop".into(),
        }
    };
    let mut gaps = std::mem::take(&mut a.gaps);
    let dispatch = median(&mut gaps).filter(|g| *g > 0);
    let time_s = ns_to_s(a.time);
    let share = time_s / total_rank_s;
    let instances = a.instances.max(1);
    let measured_ns = a.time as f64 / instances as f64;
    let team = a.team.max(1);
    let mean_chunk = (a.chunks > 0).then(|| a.chunk_iters as f64 / a.chunks as f64);
    let mode_chunk = a
        .chunk_sizes
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(s, _)| *s)
        .unwrap_or(1);
    let current: Option<Sched> = match variant {
        10 => {
            // One chunk per thread is plain static; more is static,c.
            if first_chunks_only || (a.any_chunks && a.chunks > a.instances * team as u64) {
                Some(Sched::StaticChunk(mode_chunk))
            } else {
                Some(Sched::Static)
            }
        }
        11 => Some(Sched::Dynamic(mode_chunk)),
        12 => Some(Sched::Guided(
            a.chunk_sizes.keys().next().copied().unwrap_or(1),
        )),
        _ => None,
    };
    let current_text = current.map_or_else(|| "the current schedule".to_string(), |s| s.text());
    let (cost_profile, simulations, recommendation) = if first_chunks_only {
        let why = format!(
            "the runtime reports only each thread's first chunk of this schedule({current_text}) loop, so where each thread's time went is unknown: compile it with schedule(runtime) and record it with OMP_SCHEDULE={current_text} (chunks reported one by one) to tune it"
        );
        (
            Observable::not(why.clone()),
            Observable::not(why.clone()),
            Observable::not(why),
        )
    } else if a.profile_ok && trip > 0 {
        let bins: Vec<f64> = a
            .bin_cost
            .iter()
            .zip(&a.bin_iters)
            .map(|(c, n)| if *n > 0.0 { c / n } else { 0.0 })
            .collect();
        // Bins never touched (e.g. trip count varies) take the mean.
        let touched: Vec<f64> = bins.iter().cloned().filter(|b| *b > 0.0).collect();
        let mean = touched.iter().sum::<f64>() / touched.len().max(1) as f64;
        let bins: Vec<f64> = bins
            .into_iter()
            .map(|b| if b > 0.0 { b } else { mean })
            .collect();
        let profile = CostProfile {
            shape: tuner::shape_of(&bins),
            bins_ns: bins,
            source: if a.profile_from_chunks {
                "chunk intervals".into()
            } else {
                "per-thread static ranges".into()
            },
        };
        let input = TuneInput {
            label: location.label.clone(),
            measured_ns,
            instances,
            time_s,
            share_of_run: share,
            ranks: a.ranks.len().max(1) as u32,
            trip,
            team,
            // Without a measured gap, 100 ns: the order of libomp's atomic chunk
            // grab (platform facts: empty callback ~20 ns, FOR construct ~0.9 µs per loop).
            dispatch_ns: dispatch.map_or(100.0, |d| d as f64),
            dispatch_measured: dispatch.is_some(),
            current,
            current_text,
            imbalance,
            scheduling_share: if a.time > 0 {
                a.gap_total as f64 / (a.time as f64 * team as f64)
            } else {
                0.0
            },
            profile: profile.clone(),
            threads_took_turns: placement
                .iter()
                .find(|p| a.ranks.contains(&p.rank) && p.threads_take_turns())
                .map(RankPlacement::turns_text),
        };
        let (sims, rec) = tuner::tune(&input);
        (
            Observable::Observed(profile),
            Observable::Observed(sims),
            Observable::Observed(rec),
        )
    } else {
        let why = if profile_mode {
            "profile mode records totals only (no trip counts, no chunks): re-record with --mode trace".to_string()
        } else if trip == 0 {
            "trip count not reported by the runtime".to_string()
        } else {
            format!("cost per iteration not reconstructible: {}", no_chunks())
        };
        (
            Observable::not(why.clone()),
            Observable::not(why.clone()),
            Observable::not(why),
        )
    };
    LoopStats {
        region: (a.region_codeptr != 0).then(|| data.location(a.region_codeptr)),
        location,
        schedule,
        instances: a.instances,
        trip_count: trip,
        team_size: team,
        time_s,
        time_scatter: a
            .time_sq
            .observed(a.time_n, a.time, &data.manifest.format_version),
        share_of_run: share,
        per_thread,
        imbalance,
        chunks: if first_chunks_only {
            // static,c deals ⌈trip / c⌉ chunks per instance.
            let c = mode_chunk.max(1);
            Observable::Observed(a.trips.iter().map(|(t, n)| t.div_ceil(c) * n).sum())
        } else if a.any_chunks {
            Observable::Observed(a.chunks)
        } else {
            Observable::not(no_chunks())
        },
        mean_chunk_iterations: match mean_chunk {
            Some(m) => Observable::Observed(m),
            None => Observable::not(no_chunks()),
        },
        dispatch_cost_s: match dispatch {
            Some(d) => Observable::Observed(ns_to_s(d)),
            None if a.any_chunks => Observable::not(
                "chunk intervals are back to back (each chunk ends at the next dispatch): the dispatch cost is inside them",
            ),
            None => Observable::not(no_chunks()),
        },
        scheduling_overhead_s: if a.any_chunks {
            Observable::Observed(ns_to_s(a.gap_total))
        } else {
            Observable::not(no_chunks())
        },
        cost_profile,
        simulations,
        recommendation,
    }
}

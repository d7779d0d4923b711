//! Barriers: the team's last arrival, and how a barrier splits into waiting
//! for it and synchronisation after it (Mahéo 2015 §6.7).

/// The team's last arrival at each barrier of a region instance: the k-th
/// barrier of every thread is the same barrier (all threads of a team meet
/// the same barriers in the same order), so its last arrival is the latest
/// start among them. A thread waits from its arrival to that last arrival;
/// the rest of its barrier time, the release (and the last thread's gather),
/// is synchronisation overhead: Mahéo 2015 §6.7's decomposition (barrier =
/// overhead + idling for the last thread), measured from arrivals because
/// libomp's wait events span the whole barrier. The report
/// ([`arrival_idle_of`]) and the timeline (`timeline::build`) both split
/// barriers with it.
///
/// `barriers` are (thread, start, end), clipped to the region, by thread then
/// start. Fills `last` with the last arrival of each k-th barrier; false when
/// the instance does not have the same number of barriers on each of its
/// `team` threads (a truncated trace, GCC code whose worksharing barriers
/// libomp reports differently).
pub(crate) fn last_arrivals(barriers: &[(u32, i64, i64)], team: u32, last: &mut Vec<i64>) -> bool {
    last.clear();
    // Each thread's barriers are a run of `n`: thread j's k-th is at j * n + k.
    let threads = barriers.chunk_by(|a, b| a.0 == b.0).count();
    // A team of one thread is its own last arrival: it waits for nobody,
    // and its barriers are synchronisation overhead only.
    if team < 1 || threads != team as usize || !barriers.len().is_multiple_of(threads) {
        return false;
    }
    let n = barriers.len() / threads;
    if barriers
        .chunks(n)
        .any(|run| run.iter().any(|b| b.0 != run[0].0))
    {
        return false;
    }
    last.extend((0..n).map(|k| {
        (0..threads)
            .map(|j| barriers[j * n + k].1)
            .max()
            .unwrap_or(0)
    }));
    true
}

/// Whether a region instance's barriers are split by the team's arrivals
/// ([`last_arrivals`]) rather than by the runtime's own wait events: when the
/// waits (`wait_ns`, Σ of the barriers' `sync_region_wait`) cover the barriers
/// (`barrier_ns`) whole, as libomp dispatches them, or are absent.
pub(crate) fn split_by_arrivals(wait_ns: i64, barrier_ns: i64) -> bool {
    !(wait_ns > 0 && wait_ns < barrier_ns)
}

/// Each thread's idling at a region instance's barriers: from its arrival to
/// the team's last arrival ([`last_arrivals`]); time it spent running
/// explicit tasks (`task_runs`, merged) before the last arrival is work, not
/// idling. Fills `idle` with (thread, ns) (`last` is scratch); false when the
/// barriers do not match across the team.
pub(super) fn arrival_idle_of(
    barriers: &[(u32, i64, i64)],
    task_runs: &[(u32, i64, i64)],
    team: u32,
    last: &mut Vec<i64>,
    idle: &mut Vec<(u32, i64)>,
) -> bool {
    idle.clear();
    if !last_arrivals(barriers, team, last) {
        return false;
    }
    let n = last.len();
    idle.extend(barriers.chunks(n).map(|run| (run[0].0, 0)));
    for (k, &last) in last.iter().enumerate() {
        for (j, (th, ns)) in idle.iter_mut().enumerate() {
            let (_, start, end) = barriers[j * n + k];
            let until = last.clamp(start, end.max(start));
            *ns += (until - start) - overlap(task_runs, *th, start, until);
        }
    }
    true
}

/// Sort (thread, start, end) intervals and merge each thread's overlapping
/// ones (a task run inside another task's taskwait) into disjoint runs.
pub(super) fn merge_runs(runs: &mut Vec<(u32, i64, i64)>) {
    runs.sort_unstable();
    let mut w = 0;
    for i in 0..runs.len() {
        let r = runs[i];
        if w > 0 && runs[w - 1].0 == r.0 && r.1 <= runs[w - 1].2 {
            runs[w - 1].2 = runs[w - 1].2.max(r.2);
        } else {
            runs[w] = r;
            w += 1;
        }
    }
    runs.truncate(w);
}

/// ns of `thread`'s merged `runs` inside [start, end).
pub(super) fn overlap(runs: &[(u32, i64, i64)], thread: u32, start: i64, end: i64) -> i64 {
    let first = runs.partition_point(|r| (r.0, r.2) <= (thread, start));
    runs[first..]
        .iter()
        .take_while(|r| r.0 == thread && r.1 < end)
        .map(|r| (r.2.min(end) - r.1.max(start)).max(0))
        .sum()
}

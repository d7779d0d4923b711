//! The analysis per phase: the named phase intervals of the `phases` table
//! (`hyscope.h`, `MPI_Pcontrol` levels, `omp_control_tool` pauses), each
//! phase's time per rank, its repetitions (time steps) with their spread,
//! and the per-interval metrics restricted to its windows: OpenMP region
//! time, fork/join overhead and synchronisation wait (summed while loading,
//! [`omp_in_windows`], because the OpenMP rows are not kept), MPI time and
//! calls, and the POP MPI efficiencies ([`crate::pop::mpi_efficiencies`]).

use std::collections::{BTreeMap, HashMap};

use hyscope_format::{MpiRecord, OmpKind, OmpRecord, PhaseRecord, mpi_call, phase_source};

use crate::model::*;
use crate::trace_data::{PhaseMpi, PhaseOmp, TraceData};

fn overlap(a: (i64, i64), b: (i64, i64)) -> i64 {
    (a.1.min(b.1) - a.0.max(b.0)).max(0)
}

/// A rank's phase intervals by start, to find those around a time quickly.
struct Windows {
    /// Indices into the intervals, by start.
    order: Vec<usize>,
    starts: Vec<i64>,
    longest: i64,
}

impl Windows {
    fn new(windows: &[(i64, i64)]) -> Windows {
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| windows[i].0);
        Windows {
            starts: order.iter().map(|&i| windows[i].0).collect(),
            order,
            longest: windows.iter().map(|w| w.1 - w.0).max().unwrap_or(0),
        }
    }

    /// The intervals that start before `before` and may reach `from`.
    fn candidates(&self, from: i64, before: i64) -> &[usize] {
        let end = self.starts.partition_point(|&s| s < before);
        let begin = self
            .starts
            .partition_point(|&s| s < from.saturating_sub(self.longest));
        &self.order[begin..end.max(begin)]
    }
}

/// The OpenMP time of `rows` (one rank, rank 0's clock) inside each of
/// `windows` (that rank's phase intervals on the same clock).
pub fn omp_in_windows(rows: &[OmpRecord], windows: &[(i64, i64)]) -> Vec<PhaseOmp> {
    let mut out = vec![PhaseOmp::default(); windows.len()];
    if windows.is_empty() {
        return out;
    }
    let index = Windows::new(windows);
    const PARALLEL: u8 = OmpKind::Parallel as u8;
    const TASK: u8 = OmpKind::ImplicitTask as u8;
    const WAIT: u8 = OmpKind::SyncWait as u8;
    let regions: std::collections::HashMap<u64, (i64, i64)> = rows
        .iter()
        .filter(|r| r.kind == PARALLEL)
        .map(|r| (r.parallel_id, (r.start_ns, r.end_ns)))
        .collect();
    for r in rows {
        let sign = match r.kind {
            PARALLEL => 1,
            TASK if r.count == 0 => -1,
            WAIT => 0,
            _ => continue,
        };
        let mut span = (r.start_ns, r.end_ns);
        if sign == 0
            && let Some(&(s, e)) = regions.get(&r.parallel_id)
        {
            span = (span.0.max(s), span.1.min(e).max(span.0.max(s)));
        }
        // Windows that start before the row ends and may reach its start.
        for &i in index.candidates(r.start_ns, r.end_ns.max(r.start_ns + 1)) {
            let o = overlap(span, windows[i]);
            if o == 0 {
                continue;
            }
            let p = &mut out[i];
            match sign {
                1 => {
                    p.region_ns += o;
                    p.fork_join_ns += o;
                }
                -1 => p.fork_join_ns -= o,
                _ => p.sync_wait_ns += o,
            }
        }
    }
    for p in &mut out {
        p.fork_join_ns = p.fork_join_ns.max(0);
    }
    out
}

/// Per (code address, phase interval): the time of the `(address, start,
/// end)` items (one rank's, on its phases' clock) at that address whose
/// start lies in that interval of `windows` (the rank's phase intervals,
/// `depths` their depths), counted in the deepest interval holding it:
/// where each construct or call runs, for the findings.
pub fn code_in_windows(
    items: impl Iterator<Item = (u64, i64, i64)>,
    windows: &[(i64, i64)],
    depths: &[u32],
) -> HashMap<(u64, usize), i64> {
    let mut out = HashMap::new();
    if windows.is_empty() {
        return out;
    }
    let index = Windows::new(windows);
    for (code, start, end) in items {
        if code == 0 {
            continue;
        }
        let deepest = index
            .candidates(start, start.saturating_add(1))
            .iter()
            .filter(|&&i| windows[i].1 >= start)
            .max_by_key(|&&i| (depths.get(i).copied().unwrap_or(0), windows[i].0));
        if let Some(&i) = deepest {
            *out.entry((code, i)).or_default() += (end - start).max(0);
        }
    }
    out
}

/// The parallel regions and worksharing constructs of OpenMP rows, as
/// [`code_in_windows`] items.
pub fn omp_constructs(rows: &[OmpRecord]) -> impl Iterator<Item = (u64, i64, i64)> + '_ {
    const PARALLEL: u8 = OmpKind::Parallel as u8;
    const WORK: u8 = OmpKind::Work as u8;
    rows.iter()
        .filter(|r| matches!(r.kind, PARALLEL | WORK))
        .map(|r| (r.codeptr, r.start_ns, r.end_ns))
}

/// Name the phase each finding with a code location occurs in: the phase
/// (by name) where its construct spent the most time over all ranks, if any
/// ([`code_in_windows`]); the title says it too, so every view shows it.
pub fn name_findings(findings: &mut [Finding], data: &TraceData) {
    let mut by_code: HashMap<u64, BTreeMap<&str, i64>> = HashMap::new();
    for rd in &data.ranks {
        // The OpenMP constructs and MPI calls by code address (summed while loading).
        for (&(code, i), &ns) in &rd.phase_code {
            if let Some(p) = rd.phases.get(i) {
                *by_code
                    .entry(data.canon(rd.rank, code))
                    .or_default()
                    .entry(p.name.as_str())
                    .or_default() += ns;
            }
        }
    }
    for f in findings {
        let Some(loc) = &f.location else { continue };
        let Some(names) = by_code.get(&loc.address) else {
            continue;
        };
        if let Some((name, _)) = names
            .iter()
            .max_by_key(|(n, ns)| (**ns, std::cmp::Reverse(**n)))
        {
            f.title = format!("{} (phase {name})", f.title);
            f.phase = Some(name.to_string());
        }
    }
}

/// What the phase analysis reads of one rank's MPI rows (where the rows
/// are): the MPI time inside each of `phases` (the rank's, sorted), and the
/// calls' time by call site and phase ([`code_in_windows`]), which
/// [`name_findings`] adds to the OpenMP constructs'.
pub fn mpi_in_phases(
    rows: &[MpiRecord],
    phases: &[PhaseRecord],
) -> (Vec<PhaseMpi>, HashMap<(u64, usize), i64>) {
    let calls = || rows.iter().filter(|m| m.call != mpi_call::REQUEST_COMPLETE);
    let per_phase = phases
        .iter()
        .map(|rec| {
            let w = (rec.start_ns, rec.end_ns);
            let mut p = PhaseMpi::default();
            for m in calls() {
                let o = overlap((m.start_ns, m.end_ns), w);
                p.mpi_ns += o;
                if m.thread == 0 {
                    p.master_mpi_ns += o;
                }
                if m.start_ns >= w.0 && m.start_ns <= w.1 {
                    p.mpi_calls += 1;
                }
            }
            p
        })
        .collect();
    let windows: Vec<(i64, i64)> = phases.iter().map(|p| (p.start_ns, p.end_ns)).collect();
    let depths: Vec<u32> = phases.iter().map(|p| p.depth).collect();
    let code = code_in_windows(
        calls().map(|m| (m.callsite, m.start_ns, m.end_ns)),
        &windows,
        &depths,
    );
    (per_phase, code)
}

/// One instance of a phase on one rank, with its metrics.
struct Instance<'a> {
    rank: u32,
    /// The process it ran in (`crate::processes::Processes`): a rank's
    /// programs (exec) are one rank of the phase's table, one after the
    /// other, never ranks that ran at the same time.
    process: u32,
    /// Whether that process is one of the job's ranks (not a child process).
    in_job_rank: bool,
    rec: &'a PhaseRecord,
    omp: PhaseOmp,
    mpi_ns: i64,
    master_mpi_ns: i64,
    mpi_calls: u64,
}

/// Per phase name, in order of first appearance (rank, thread, start).
pub fn analyze_phases(data: &TraceData, run: &RunFacts) -> Observable<Vec<PhaseStats>> {
    let mut by_name: BTreeMap<&str, Vec<Instance>> = BTreeMap::new();
    let mut first: BTreeMap<&str, (i64, u32)> = BTreeMap::new();
    let procs = crate::processes::Processes::of(&run.children);
    for rd in &data.ranks {
        for (i, rec) in rd.phases.iter().enumerate() {
            let PhaseMpi {
                mpi_ns,
                master_mpi_ns,
                mpi_calls,
            } = rd.phase_mpi.get(i).copied().unwrap_or_default();
            let e = first
                .entry(rec.name.as_str())
                .or_insert((rec.start_ns, rec.depth));
            if rec.start_ns < e.0 {
                *e = (rec.start_ns, e.1.min(rec.depth));
            }
            by_name
                .entry(rec.name.as_str())
                .or_default()
                .push(Instance {
                    rank: rd.rank,
                    process: procs.process_of(rd.rank),
                    in_job_rank: procs.in_job_rank(rd.rank),
                    rec,
                    omp: rd.phase_omp.get(i).copied().unwrap_or_default(),
                    mpi_ns,
                    master_mpi_ns,
                    mpi_calls,
                });
        }
    }
    if by_name.is_empty() && !data.phases_missing.is_empty() {
        return Observable::not("the recorded phases cannot be read: their files are damaged");
    }
    if by_name.is_empty() {
        return Observable::not(
            "no phases recorded (annotate with hyscope.h, NVTX ranges, MPI_Pcontrol levels or omp_control_tool)",
        );
    }
    let series = crate::energy::energy_series(data);
    let counters = crate::energy::counted(&series);
    let hosts: HashMap<u32, &str> = data
        .manifest
        .ranks
        .iter()
        .map(|r| (r.rank, r.host.as_str()))
        .collect();
    let mut out: Vec<PhaseStats> = by_name
        .iter()
        .map(|(name, inst)| {
            let mut p = phase_stats(name, inst, data, run);
            p.energy_j = phase_energy(inst, &counters, &hosts);
            p.edp_js = p.energy_j.map(|j| j * p.time_s);
            p
        })
        .collect();
    out.sort_by_key(|p| first.get(p.name.as_str()).map(|f| f.0));
    // POP's efficiencies compare every rank's time: without some ranks'
    // phases they would describe another job.
    if !data.phases_missing.is_empty() {
        for p in &mut out {
            p.mpi_parallel_efficiency = None;
            p.mpi_load_balance = None;
            p.mpi_communication_efficiency = None;
        }
    }
    Observable::Observed(out)
}

fn phase_stats(name: &str, inst: &[Instance], data: &TraceData, run: &RunFacts) -> PhaseStats {
    let mut ranks: BTreeMap<u32, PhaseRank> = BTreeMap::new();
    let mut outside_mpi: BTreeMap<u32, i64> = BTreeMap::new();
    for x in inst {
        let d = x.rec.end_ns - x.rec.start_ns;
        let r = ranks.entry(x.process).or_insert_with(|| PhaseRank {
            rank: x.process,
            ..PhaseRank::default()
        });
        r.instances += 1;
        r.time_s += ns_to_s(d);
        r.inside.add(&PhaseInside {
            omp_region_s: ns_to_s(x.omp.region_ns),
            omp_fork_join_s: ns_to_s(x.omp.fork_join_ns),
            omp_sync_wait_s: ns_to_s(x.omp.sync_wait_ns),
            mpi_s: ns_to_s(x.mpi_ns),
            mpi_calls: x.mpi_calls,
        });
        // POP's MPI level compares the job's ranks (as `crate::pop`).
        if x.in_job_rank {
            *outside_mpi.entry(x.process).or_default() += (d - x.master_mpi_ns).max(0);
        }
    }
    let ranks: Vec<PhaseRank> = ranks.into_values().collect();
    let time_s = ranks.iter().map(|r| r.time_s).fold(0.0, f64::max);
    let mean_time_s = ranks.iter().map(|r| r.time_s).sum::<f64>() / ranks.len().max(1) as f64;
    let mut inside = PhaseInside::default();
    for r in &ranks {
        inside.add(&r.inside);
    }
    let outside: Vec<f64> = outside_mpi.values().map(|&n| ns_to_s(n)).collect();
    let mpi = (time_s > 0.0 && !outside.is_empty())
        .then(|| crate::pop::mpi_efficiencies(&outside, time_s));
    let min_depth = inst.iter().map(|x| x.rec.depth).min().unwrap_or(0);
    let parent = enclosing(inst, data);
    let mut sources: Vec<&str> = inst
        .iter()
        .map(|x| phase_source::name(x.rec.source))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let elapsed = run.duration_s;
    PhaseStats {
        name: name.to_string(),
        source: sources.join(", "),
        depth: min_depth,
        parent,
        instances: inst.len() as u64,
        time_s,
        mean_rank_time_s: mean_time_s,
        share: if elapsed > 0.0 { time_s / elapsed } else { 0.0 },
        inside,
        mpi_parallel_efficiency: mpi.map(|m| m.0),
        mpi_load_balance: mpi.map(|m| m.1),
        mpi_communication_efficiency: mpi.map(|m| m.2),
        iterations: iterations(inst),
        energy_j: None,
        edp_js: None,
        ranks,
    }
}

/// The joules the job's energy counters ([`crate::energy::counted`]) count
/// inside a phase's intervals: each counter over the union of the intervals
/// of the ranks on its host (a package counts whatever runs on it), read
/// between samples at the sampling period's average power. None without
/// energy counters, or when they count nothing.
fn phase_energy(
    inst: &[Instance],
    counters: &[&crate::energy::EnergySeries],
    hosts: &HashMap<u32, &str>,
) -> Option<f64> {
    if counters.iter().map(|c| c.joules()).sum::<f64>() <= 0.0 {
        return None;
    }
    let mut windows: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for x in inst {
        windows
            .entry(hosts.get(&x.rank).copied().unwrap_or_default())
            .or_default()
            .push((x.rec.start_ns, x.rec.end_ns));
    }
    for w in windows.values_mut() {
        w.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(w.len());
        for &(a, b) in w.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *w = merged;
    }
    Some(
        counters
            .iter()
            .map(|c| {
                windows
                    .get(c.host.as_str())
                    .map_or(0.0, |w| w.iter().map(|&(a, b)| c.joules_in(a, b)).sum())
            })
            .sum(),
    )
}

/// The name of the phase that encloses the first instance (same rank and
/// thread, one level up), if any.
fn enclosing(inst: &[Instance], data: &TraceData) -> Option<String> {
    let x = inst
        .iter()
        .min_by_key(|x| (x.rec.depth, x.rank, x.rec.start_ns))?;
    if x.rec.depth == 0 {
        return None;
    }
    let rd = data.ranks.iter().find(|r| r.rank == x.rank)?;
    rd.phases
        .iter()
        .find(|p| encloses(p, x.rec))
        .map(|p| p.name.clone())
}

/// Whether `outer` is the phase `inner` was begun in: one thread's, one
/// depth out, around it (the report's parent, the GUI's tooltip).
pub fn encloses(outer: &PhaseRecord, inner: &PhaseRecord) -> bool {
    outer.thread == inner.thread
        && outer.depth + 1 == inner.depth
        && outer.start_ns <= inner.start_ns
        && outer.end_ns >= inner.end_ns
}

/// A repeated phase's repetitions: by time step when the phases carry one
/// (`hyscope_iteration`), else by order on each rank and thread; a step's time is its slowest rank's.
fn iterations(inst: &[Instance]) -> Option<PhaseIterations> {
    let stepped = inst.iter().all(|x| x.rec.iteration >= 0);
    let mut steps: BTreeMap<i64, i64> = BTreeMap::new();
    let mut order: BTreeMap<(u32, u32), i64> = BTreeMap::new();
    let mut sorted: Vec<&Instance> = inst.iter().collect();
    sorted.sort_by_key(|x| (x.process, x.rec.thread, x.rec.start_ns));
    for x in sorted {
        let key = if stepped {
            x.rec.iteration
        } else {
            let n = order.entry((x.process, x.rec.thread)).or_default();
            *n += 1;
            *n - 1
        };
        let d = x.rec.end_ns - x.rec.start_ns;
        let s = steps.entry(key).or_default();
        *s = (*s).max(d);
    }
    if steps.len() < 2 {
        return None;
    }
    let times: Vec<f64> = steps.values().map(|&d| ns_to_s(d)).collect();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
    let (slowest, max) = steps
        .iter()
        .map(|(&k, &d)| (k, ns_to_s(d)))
        .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
    Some(PhaseIterations {
        by_time_step: stepped,
        count: times.len() as u64,
        mean_s: mean,
        min_s: min,
        max_s: max,
        spread: if mean > 0.0 { (max - min) / mean } else { 0.0 },
        slowest,
        times_s: steps.iter().map(|(&k, &d)| (k, ns_to_s(d))).collect(),
    })
}

/// Each rank's phase intervals on global time (rank 0's clock), for the
/// phase row the timelines draw above each rank.
#[derive(Debug, Clone, Default)]
pub struct PhaseLanes {
    by_rank: BTreeMap<u32, Vec<PhaseRecord>>,
    /// The parts that could not be read: their ranks' phase rows are left
    /// out ([`crate::damaged_parts::whole_ranks`]).
    problems: Vec<crate::damaged_parts::DamagedPart>,
}

impl PhaseLanes {
    /// The `phases` table of the index's trace with its clocks (empty when
    /// the trace has none). A rank whose phases cannot be read goes without
    /// its phase row, and [`PhaseLanes::problem`] names its file; so does a
    /// rank the index leaves out ([`crate::timeline::TimelineIndex::left_out`]).
    pub fn read(index: &crate::timeline::TimelineIndex) -> PhaseLanes {
        let (rows, problems) = crate::damaged_parts::read_phase_rows(
            index.trace(),
            &hyscope_format::ScanOptions::default(),
        );
        let mut by_rank: BTreeMap<u32, Vec<PhaseRecord>> = BTreeMap::new();
        // A rank left out of the index is left out whole: no phase row.
        for (rank, mut p) in rows.into_iter().filter(|(r, _)| !index.is_left_out(*r)) {
            if let Some(m) = index.clocks().map(rank) {
                p.start_ns = m.to_global(p.start_ns);
                p.end_ns = m.to_global(p.end_ns);
            }
            by_rank.entry(rank).or_default().push(p);
        }
        for v in by_rank.values_mut() {
            v.sort_by_key(|p| (p.start_ns, p.depth));
        }
        PhaseLanes { by_rank, problems }
    }

    /// What the viewers say when phases could not be read: `phases of rank 0
    /// not shown: <file>: <problem>` (None when every rank's were read).
    pub fn problem(&self) -> Option<String> {
        if self.problems.is_empty() {
            return None;
        }
        let text: Vec<String> = self
            .problems
            .iter()
            .map(|d| {
                format!(
                    "phases of rank {} not shown: {}: {}",
                    d.rank,
                    d.path.display(),
                    d.problem
                )
            })
            .collect();
        Some(text.join("; "))
    }

    pub fn is_empty(&self) -> bool {
        self.by_rank.is_empty()
    }

    /// One window per repetition of the phase `name`, in time order: the
    /// k-th repetition from its earliest start to its latest end over the
    /// ranks. What a viewer zooms to, one repetition at a time: back-to-back
    /// repetitions (a `step` per time step) are separate windows, though
    /// their union is one interval.
    pub fn windows(&self, name: &str) -> Vec<(i64, i64)> {
        let mut windows: Vec<(i64, i64)> = Vec::new();
        for phases in self.by_rank.values() {
            let mut own: Vec<(i64, i64)> = phases
                .iter()
                .filter(|p| p.name == name)
                .map(|p| (p.start_ns, p.end_ns.max(p.start_ns)))
                .collect();
            own.sort_unstable();
            for (k, (a, b)) in own.into_iter().enumerate() {
                match windows.get_mut(k) {
                    Some(w) => *w = (w.0.min(a), w.1.max(b)),
                    None => windows.push((a, b)),
                }
            }
        }
        windows.sort_unstable();
        windows
    }

    /// Whether `rank` has phases (its timeline gets a phase row).
    pub fn has(&self, rank: u32) -> bool {
        self.by_rank.contains_key(&rank)
    }

    /// The phase intervals of `rank` that overlap `[t0, t1)`.
    pub fn in_window(&self, rank: u32, t0: i64, t1: i64) -> impl Iterator<Item = &PhaseRecord> {
        self.by_rank
            .get(&rank)
            .into_iter()
            .flatten()
            .filter(move |p| p.start_ns < t1 && p.end_ns > t0)
    }

    /// For each of `columns` equal cells of `[t0, t1)`, the innermost phase of
    /// `rank` at the cell's middle (the deepest; the latest begun among equals).
    pub fn cells(&self, rank: u32, t0: i64, t1: i64, columns: usize) -> Vec<Option<&PhaseRecord>> {
        let width = (t1 - t0).max(1) as f64 / columns.max(1) as f64;
        let phases: Vec<&PhaseRecord> = self.in_window(rank, t0, t1).collect();
        (0..columns)
            .map(|c| {
                let mid = t0 + ((c as f64 + 0.5) * width) as i64;
                phases
                    .iter()
                    .filter(|p| p.start_ns <= mid && mid < p.end_ns.max(p.start_ns + 1))
                    .max_by_key(|p| (p.depth, p.start_ns))
                    .copied()
            })
            .collect()
    }
}

/// A stable colour index for a phase name (the same name, the same colour in
/// every view), in `0..n`.
pub fn name_hue(name: &str, n: usize) -> usize {
    // FNV-1a: stable across runs and builds, unlike the std hasher.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h as usize % n.max(1)
}

/// The names of a trace's phases in order of first start (empty when it has
/// none; the ranks whose phases cannot be read left out): what the viewers'
/// phase filters offer.
pub fn phase_names(trace: &hyscope_format::Trace) -> Vec<String> {
    // The ranks whose phases can be read (a damaged part is named by the
    // timelines' phase rows and the analysis's integrity).
    let (rows, _) =
        crate::damaged_parts::read_phase_rows(trace, &hyscope_format::ScanOptions::default());
    names_by_first_start(rows.iter().map(|(_, p)| p))
}

/// The distinct names of `phases`, in order of first start.
fn names_by_first_start<'a>(phases: impl Iterator<Item = &'a PhaseRecord>) -> Vec<String> {
    let mut first: BTreeMap<&str, i64> = BTreeMap::new();
    for p in phases {
        let e = first.entry(p.name.as_str()).or_insert(p.start_ns);
        *e = (*e).min(p.start_ns);
    }
    let mut names: Vec<(&str, i64)> = first.into_iter().collect();
    names.sort_by_key(|&(n, t)| (t, n));
    names.into_iter().map(|(n, _)| n.to_string()).collect()
}

/// "its phases: a, b, c" (names in order of first start), or "the trace has
/// no phases": what an unknown phase name is answered with.
pub fn names_sentence<'a>(phases: impl Iterator<Item = &'a PhaseRecord>) -> String {
    let names = names_by_first_start(phases);
    if names.is_empty() {
        return "the trace has no phases".to_string();
    }
    format!("its phases: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_data::RankData;

    /// Two ranks, each with `step` twice back to back, rank 1 lagging by
    /// 5: one window per step over both ranks, not their union.
    #[test]
    fn a_phase_repeated_back_to_back_has_a_window_per_repetition() {
        let step = |a, b| PhaseRecord::api(0, "step", a, b, 1);
        let lanes = PhaseLanes {
            by_rank: BTreeMap::from([
                (
                    0,
                    vec![
                        step(100, 200),
                        step(200, 300),
                        PhaseRecord::api(0, "solver", 100, 300, 0),
                    ],
                ),
                (1, vec![step(205, 305), step(105, 205)]),
            ]),
            problems: Vec::new(),
        };
        assert_eq!(lanes.windows("step"), [(100, 205), (200, 305)]);
        assert_eq!(lanes.windows("solver"), [(100, 300)]);
        assert!(lanes.windows("halo").is_empty());
    }

    /// MPI ranks 0 and 1; rank 0's process exec'd a program (id 2) and
    /// rank 1 forked a child (id 3), each with a `step`: rank 0's process
    /// ran its two steps one after the other (200 ns, two repetitions), and
    /// the MPI efficiencies compare the job's two ranks (outside MPI 200
    /// and 100 − 20 ns), not the child.
    #[test]
    fn a_process_s_programs_are_one_rank_of_the_phase() {
        let rank = |rank: u32, (a, b): (i64, i64), master_mpi_ns: i64| RankData {
            rank,
            phases: vec![PhaseRecord::api(0, "step", a, b, 0)],
            phase_mpi: vec![PhaseMpi {
                mpi_ns: master_mpi_ns,
                master_mpi_ns,
                mpi_calls: 1,
            }],
            ..RankData::default()
        };
        let data = TraceData {
            ranks: vec![
                rank(0, (0, 100), 0),
                rank(1, (0, 100), 20),
                rank(2, (200, 300), 0),
                rank(3, (10, 50), 0),
            ],
            ..TraceData::default()
        };
        let child = |rank: u32, of_rank: u32, exec_of: Option<u32>| ChildProcess {
            rank,
            of_rank,
            exec_of,
            ..ChildProcess::default()
        };
        let run = RunFacts {
            ranks: 4,
            children: vec![child(2, 0, Some(0)), child(3, 1, None)],
            duration_s: 300e-9,
            ..RunFacts::default()
        };
        let phases = analyze_phases(&data, &run);
        let step = &phases.get().expect("observed")[0];
        let ns = |s: f64| (s * 1e9).round() as i64;
        let per_rank: Vec<(u32, u64, i64)> = step
            .ranks
            .iter()
            .map(|r| (r.rank, r.instances, ns(r.time_s)))
            .collect();
        assert_eq!(per_rank, [(0, 2, 200), (1, 1, 100), (3, 1, 40)]);
        assert_eq!(ns(step.time_s), 200);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(step.mpi_parallel_efficiency, 0.7), "{step:?}");
        assert!(close(step.mpi_load_balance, 0.7), "{step:?}");
        assert!(close(step.mpi_communication_efficiency, 1.0), "{step:?}");
        assert_eq!(step.iterations.as_ref().map(|i| i.count), Some(2));
    }

    fn row(kind: OmpKind, start: i64, end: i64, count: u64) -> OmpRecord {
        OmpRecord {
            kind: kind as u8,
            parallel_id: 1,
            start_ns: start,
            end_ns: end,
            count,
            ..OmpRecord::default()
        }
    }

    #[test]
    fn omp_time_is_cut_to_each_window() {
        let rows = [
            row(OmpKind::Parallel, 100, 200, 0),
            row(OmpKind::ImplicitTask, 110, 190, 0),
            row(OmpKind::ImplicitTask, 110, 195, 1),
            row(OmpKind::SyncWait, 180, 190, 0),
            // A worker's join wait outlasting its region counts within it only.
            row(OmpKind::SyncWait, 195, 400, 0),
            row(OmpKind::Chunk, 120, 130, 0),
        ];
        // The whole run, its second half, and one outside.
        let w = omp_in_windows(&rows, &[(0, 1000), (150, 1000), (300, 400)]);
        assert_eq!(
            w[0],
            PhaseOmp {
                region_ns: 100,
                fork_join_ns: 20,
                sync_wait_ns: 15
            }
        );
        assert_eq!(
            w[1],
            PhaseOmp {
                region_ns: 50,
                fork_join_ns: 10,
                sync_wait_ns: 15
            }
        );
        assert_eq!(w[2], PhaseOmp::default());
    }
}

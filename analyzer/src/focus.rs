//! The analysis restricted to one phase (`hyscope report --phase NAME`, the
//! viewers' phase filter): the run as if only the time in which the phase
//! runs existed.
//!
//! A rank's row is kept when it starts inside one of that rank's intervals of
//! the phase (any thread), as the per-phase table counts. The intervals of
//! every rank (rank 0's clock) merged make the windows, the same for every
//! rank; the gaps between them are cut out of the time axis ([`Focus::map`]),
//! so that times of different ranks stay comparable (message waits,
//! collective arrivals) and durations, elapsed times and the POP metrics
//! describe the phase alone: a rank outside the phase while
//! another is inside it counts as idle. A row that outlasts its window ends
//! with it. Cumulative counters (RAPL energy) lose the increments made outside
//! the rank's intervals.
//!
//! Messages and collectives are matched on the whole run first (the k-th send
//! of an envelope is the k-th receive, which a cut would shift) and kept when
//! every row they name is kept.

use std::collections::HashMap;

use hyscope_format::{MpiRecord, PhaseRecord, SampleRecord};

use crate::aligned::GlobalNs;
use crate::aligned::RankSides;
use crate::aligned::sides::OUTSIDE_FOCUS;
use crate::model::FocusInfo;

/// The phase's windows on rank 0's clock and how time is compacted.
#[derive(Debug, Clone)]
pub struct Focus {
    pub phase: String,
    /// Sorted, disjoint, non-empty.
    windows: Vec<(i64, i64)>,
    /// Each rank's own intervals of the phase, merged the same way.
    own: HashMap<u32, Vec<(i64, i64)>>,
    /// Length of all windows before window k.
    before: Vec<i64>,
    /// Phase intervals merged into the windows.
    instances: u64,
}

impl Focus {
    /// The windows of the phase named `phase` among the `(rank, phase)`
    /// rows (rank 0's clock); None when no interval has that name.
    pub fn new<'a>(
        phase: &str,
        phases: impl Iterator<Item = (u32, &'a PhaseRecord)>,
    ) -> Option<Focus> {
        let mut own: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
        let mut all = Vec::new();
        for (rank, p) in phases.filter(|(_, p)| p.name == phase) {
            let span = (p.start_ns, p.end_ns.max(p.start_ns));
            own.entry(rank).or_default().push(span);
            all.push(span);
        }
        if all.is_empty() {
            return None;
        }
        let instances = all.len() as u64;
        let windows = merged(all);
        let own = own.into_iter().map(|(r, v)| (r, merged(v))).collect();
        let mut before = Vec::with_capacity(windows.len());
        let mut total = 0i64;
        for &(s, e) in &windows {
            before.push(total);
            total += e - s;
        }
        Some(Focus {
            phase: phase.to_string(),
            windows,
            own,
            before,
            instances,
        })
    }

    /// Index of the last window starting at or before `t`.
    fn window_at(&self, t: i64) -> Option<usize> {
        window_at(&self.windows, t)
    }

    /// Whether `t` (rank 0's clock) lies inside one of `rank`'s intervals.
    pub fn keep(&self, rank: u32, t: i64) -> bool {
        self.own_window(rank, t).is_some()
    }

    /// The index of `rank`'s interval that holds `t`.
    fn own_window(&self, rank: u32, t: i64) -> Option<usize> {
        let own = self.own.get(&rank)?;
        window_at(own, t).filter(|&k| t <= own[k].1)
    }

    /// `t` on the compacted time axis: the first window's start plus the
    /// time spent inside windows before `t`. Monotone; a time between two
    /// windows maps to the end of the earlier one.
    pub fn map(&self, t: i64) -> i64 {
        let origin = self.windows[0].0;
        match self.window_at(t) {
            None => origin,
            Some(k) => {
                let (s, e) = self.windows[k];
                origin + self.before[k] + (t.min(e) - s)
            }
        }
    }

    /// An interval that starts inside a window, compacted: it ends with its
    /// window at the latest.
    pub fn map_interval(&self, start: &mut i64, end: &mut i64) {
        let k = self.window_at(*start);
        let e = k.map_or(*end, |k| (*end).min(self.windows[k].1));
        *start = self.map(*start);
        *end = self.map(e.max(*start)).max(*start);
    }

    /// The compacted time axis: from the first window's start for the time
    /// inside the windows. Every rank's window under the focus, so that a
    /// rank outside the phase while another is inside it counts as idle.
    pub fn span(&self) -> (i64, i64) {
        let origin = self.windows[0].0;
        (origin, origin + self.total_ns())
    }

    /// Time inside the windows, ns.
    pub fn total_ns(&self) -> i64 {
        self.windows.iter().map(|w| w.1 - w.0).sum()
    }

    /// What the report says about the restriction.
    pub fn info(&self, run_duration_s: f64) -> FocusInfo {
        FocusInfo {
            phase: self.phase.clone(),
            instances: self.instances,
            windows: self.windows.len() as u64,
            time_s: self.total_ns() as f64 * 1e-9,
            run_duration_s,
        }
    }

    /// Keep `rank`'s phase rows that lie inside one of its intervals (the
    /// phase and the phases nested in it, not a phase around it), compacted.
    pub fn phases(&self, rank: u32, rows: &mut Vec<PhaseRecord>) {
        rows.retain(|p| {
            let k = self.own_window(rank, p.start_ns);
            k.is_some() && k == self.own_window(rank, p.end_ns)
        });
        for p in rows {
            self.map_interval(&mut p.start_ns, &mut p.end_ns);
        }
    }

    /// Keep `rank`'s MPI rows (sorted, rank 0's clock) that start inside its
    /// intervals, compacted; returns each old row's new index.
    pub fn mpi(&self, rank: u32, rows: &mut Vec<MpiRecord>) -> Vec<Option<usize>> {
        let mut index = Vec::with_capacity(rows.len());
        let mut kept = 0usize;
        rows.retain(|r| {
            let keep = self.keep(rank, r.start_ns);
            index.push(keep.then_some(kept));
            kept += usize::from(keep);
            keep
        });
        for r in rows.iter_mut() {
            self.map_interval(&mut r.start_ns, &mut r.end_ns);
        }
        index
    }

    /// Keep `rank`'s samples inside its intervals, compacted. A cumulative
    /// series (`cumulative(metric)`) is lowered by what it gained outside
    /// them, so that its last minus first value counts the intervals only.
    pub fn samples(
        &self,
        rank: u32,
        rows: &mut Vec<SampleRecord>,
        cumulative: impl Fn(&str) -> bool,
    ) {
        rows.sort_by_key(|s| s.time_ns);
        // Per series: (previous time, previous value, what was gained outside).
        let mut series: HashMap<(String, i64), (i64, f64, f64)> = HashMap::new();
        for s in rows.iter_mut() {
            if !cumulative(&s.metric) {
                continue;
            }
            let e = series
                .entry((s.metric.clone(), s.key))
                .or_insert((s.time_ns, s.value, 0.0));
            let k = self.own_window(rank, s.time_ns);
            if k.is_none() || k != self.own_window(rank, e.0) {
                e.2 += s.value - e.1;
            }
            e.0 = s.time_ns;
            e.1 = s.value;
            s.value -= e.2;
        }
        rows.retain(|s| self.keep(rank, s.time_ns));
        for s in rows.iter_mut() {
            s.time_ns = self.map(s.time_ns);
        }
    }

    fn at(&self, t: GlobalNs) -> GlobalNs {
        GlobalNs(self.map(t.0))
    }

    /// A rank's message sides and collective calls under the focus, given
    /// each old row's new index ([`Focus::mpi`]): rows renumbered (a row
    /// left out becomes [`OUTSIDE_FOCUS`], so that its message or instance,
    /// matched over the whole run, is dropped) and times compacted as the
    /// rows' are.
    pub fn sides(&self, sides: &mut RankSides, index: &[Option<usize>]) {
        let rank = sides.rank;
        let new = |row: usize| index.get(row).copied().flatten().unwrap_or(OUTSIDE_FOCUS);
        let interval = |start: &mut GlobalNs, end: &mut GlobalNs| {
            let (mut s, mut e) = (start.ns(), end.ns());
            self.map_interval(&mut s, &mut e);
            (*start, *end) = (GlobalNs(s), GlobalNs(e));
        };
        for s in &mut sides.sends {
            s.row = new(s.row);
            interval(&mut s.time, &mut s.end);
        }
        for r in &mut sides.recvs {
            r.row = new(r.row);
            r.post_row = new(r.post_row);
            r.posted = self.at(r.posted);
            r.time = self.at(r.time);
            // A wait that started outside the focus is not waited in it.
            r.waiter = r.waiter.filter(|w| self.keep(rank, w.from.ns()));
            if let Some(w) = &mut r.waiter {
                interval(&mut w.from, &mut w.to);
            }
        }
        for c in &mut sides.collectives {
            c.row = new(c.row);
            interval(&mut c.start, &mut c.end);
        }
    }
}

/// Sorted, disjoint intervals covering `spans`.
pub fn merged(mut spans: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    spans.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Index of the last of the sorted `windows` starting at or before `t`.
fn window_at(windows: &[(i64, i64)], t: i64) -> Option<usize> {
    windows.partition_point(|w| w.0 <= t).checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, start: i64, end: i64) -> PhaseRecord {
        PhaseRecord {
            thread: 0,
            name: name.into(),
            start_ns: start,
            end_ns: end,
            depth: 0,
            source: 0,
            iteration: hyscope_format::NO_ITERATION,
        }
    }

    #[test]
    fn windows_merge_and_time_compacts() {
        let ps = [
            (0, phase("step", 100, 200)),
            (0, phase("io", 200, 300)),
            (0, phase("step", 300, 400)),
            (1, phase("step", 350, 450)),
        ];
        let f = Focus::new("step", ps.iter().map(|(r, p)| (*r, p))).unwrap();
        assert_eq!(f.windows, vec![(100, 200), (300, 450)]);
        assert_eq!(f.total_ns(), 250);
        assert!(f.keep(0, 100) && f.keep(0, 200) && !f.keep(0, 250) && !f.keep(0, 449));
        assert!(f.keep(1, 449) && !f.keep(1, 320) && !f.keep(1, 451) && !f.keep(2, 360));
        assert_eq!(f.map(50), 100);
        assert_eq!(f.map(150), 150);
        assert_eq!(f.map(250), 200);
        assert_eq!(f.map(300), 200);
        assert_eq!(f.map(400), 300);
        assert_eq!(f.map(1000), 350);
        let (mut s, mut e) = (180, 320);
        f.map_interval(&mut s, &mut e);
        assert_eq!((s, e), (180, 200));
        assert!(Focus::new("nope", ps.iter().map(|(r, p)| (*r, p))).is_none());
        // A phase around the focus is not kept; one inside it is.
        let mut rows = vec![phase("solver", 50, 500), phase("halo", 120, 150)];
        f.phases(0, &mut rows);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].name.as_str(), rows[0].start_ns, rows[0].end_ns),
            ("halo", 120, 150)
        );
    }

    #[test]
    fn cumulative_samples_lose_what_was_gained_between_windows() {
        let ps = [phase("step", 100, 200), phase("step", 300, 400)];
        let f = Focus::new("step", ps.iter().map(|p| (0, p))).unwrap();
        let sample = |t: i64, v: f64, metric: &str| SampleRecord {
            time_ns: t,
            metric: metric.into(),
            key: -1,
            value: v,
        };
        // 1 J per ns of time: 100 J inside each window, 100 J between them.
        let mut rows: Vec<SampleRecord> = [100, 150, 200, 250, 300, 350, 400]
            .iter()
            .map(|&t| sample(t, t as f64, "energy"))
            .chain([sample(250, 7.0, "level")])
            .collect();
        f.samples(0, &mut rows, |m| m == "energy");
        let energy: Vec<(i64, f64)> = rows
            .iter()
            .filter(|s| s.metric == "energy")
            .map(|s| (s.time_ns, s.value))
            .collect();
        assert_eq!(
            energy,
            vec![
                (100, 100.0),
                (150, 150.0),
                (200, 200.0),
                (200, 200.0),
                (250, 250.0),
                (300, 300.0)
            ]
        );
        assert!(rows.iter().all(|s| s.metric != "level"), "outside a window");
    }
}

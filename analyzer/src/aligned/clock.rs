//! Global time: each rank's clock mapped to rank 0's, with the offsets the
//! collector measured at `MPI_Init` and `MPI_Finalize` and linear drift
//! between them. The only clock mapping of the project.

use std::collections::HashMap;

use hyscope_format::{ClockOffset, Manifest};
use serde::{Deserialize, Serialize};

/// Nanoseconds on rank 0's clock (global time). A rank-local reading is a
/// plain `i64`; only [`Clocks::to_global`] turns one into the other.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct GlobalNs(pub i64);

impl GlobalNs {
    pub fn ns(self) -> i64 {
        self.0
    }
}

impl std::ops::Sub for GlobalNs {
    type Output = i64;
    fn sub(self, rhs: GlobalNs) -> i64 {
        self.0 - rhs.0
    }
}

/// Maps a rank's local clock to rank 0's: `global = local − offset(local)`, the
/// offset interpolated linearly between the measurements (drift), extrapolated
/// beyond them with the same slope. With the collector's two measurements (at
/// `MPI_Init` and `MPI_Finalize`) the line is the one with the least drift
/// within both measurements' error bounds (`hyscope_format::least_drift`):
/// on a loaded node each is off by up to half a round trip of milliseconds,
/// and the line through the two values would stretch a short run's times by
/// up to a percent where real clocks drift by parts per million.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClockMap {
    points: Vec<ClockOffset>,
}

impl ClockMap {
    pub fn new(offsets: &[ClockOffset]) -> ClockMap {
        let mut points = offsets.to_vec();
        points.sort_by_key(|p| p.local_ns);
        points.dedup_by_key(|p| p.local_ns);
        if let [a, b] = points.as_mut_slice() {
            (a.offset_ns, b.offset_ns) = hyscope_format::least_drift(a, b);
        }
        ClockMap { points }
    }

    /// The measurements as the map uses them (offsets on its line): what a
    /// cache of global times depends on.
    pub fn points(&self) -> &[ClockOffset] {
        &self.points
    }

    pub fn is_identity(&self) -> bool {
        self.points.iter().all(|p| p.offset_ns == 0)
    }

    pub fn offset(&self, local: i64) -> i64 {
        match self.points.as_slice() {
            [] => 0,
            [p] => p.offset_ns,
            pts => {
                // Segment containing `local` (first or last segment outside the range).
                let i = pts
                    .windows(2)
                    .position(|w| local < w[1].local_ns)
                    .unwrap_or(pts.len() - 2);
                let (a, b) = (pts[i], pts[i + 1]);
                let span = (b.local_ns - a.local_ns) as f64;
                let slope = (b.offset_ns - a.offset_ns) as f64 / span;
                a.offset_ns + (slope * (local - a.local_ns) as f64).round() as i64
            }
        }
    }

    /// Rank-local ns → global ns, as a plain number (for bulk rewriting of rows).
    pub fn to_global(&self, local: i64) -> i64 {
        local - self.offset(local)
    }

    /// Global ns → the rank-local reading that maps to it (within 1 ns: the
    /// inverse of [`ClockMap::to_global`], for filtering rows by a global
    /// window before mapping them).
    pub fn to_local(&self, global: i64) -> i64 {
        // The offset changes by nanoseconds per second: two fixed-point steps
        // converge.
        let mut local = global + self.offset(global);
        for _ in 0..2 {
            local = global + self.offset(local);
        }
        local
    }

    /// The largest |offset| over the measurements (a bound for widening
    /// rank-local windows).
    pub fn max_abs_offset(&self) -> i64 {
        self.points
            .iter()
            .map(|p| p.offset_ns.abs())
            .max()
            .unwrap_or(0)
    }
}

/// Every rank's [`ClockMap`], from the manifest (a rank without offsets is on
/// rank 0's clock already).
///
/// Ranks of one clock id (`RankInfo::clock_id`: one boot of one node and one
/// calibration) read one clock, so their offset to rank 0 is the same at any
/// instant. Each rank measured it on its own, and on a loaded node some of
/// those ping-pongs waited milliseconds while another rank's took
/// microseconds: every rank of a clock takes its clock's best measurements,
/// the first and the last with the smallest round trip among its ranks'
/// first and last ones.
#[derive(Debug, Clone, Default)]
pub struct Clocks {
    maps: HashMap<u32, ClockMap>,
    /// Half the worst round trip of the measurements the maps use, ns: how
    /// far apart two ranks' global times may be from the truth.
    pub error_ns: i64,
}

/// The best first and last measurement of one clock (see [`Clocks`]).
#[derive(Default)]
struct Best {
    first: Option<ClockOffset>,
    last: Option<ClockOffset>,
}

impl Best {
    fn offer(slot: &mut Option<ClockOffset>, o: ClockOffset) {
        if slot.is_none_or(|b| o.rtt_ns < b.rtt_ns) {
            *slot = Some(o);
        }
    }

    fn points(&self) -> Vec<ClockOffset> {
        self.first.into_iter().chain(self.last).collect()
    }
}

impl Clocks {
    pub fn from_manifest(m: &Manifest) -> Clocks {
        let sorted = |offsets: &[ClockOffset]| {
            let mut points = offsets.to_vec();
            points.sort_by_key(|p| p.local_ns);
            points
        };
        // By host too: one clock id on two hosts would be a damaged manifest.
        let mut best: HashMap<(&str, &str), Best> = HashMap::new();
        for r in &m.ranks {
            let (Some(id), points) = (r.clock_id.as_deref(), sorted(&r.clock_offsets)) else {
                continue;
            };
            let b = best.entry((r.host.as_str(), id)).or_default();
            if let Some(&first) = points.first() {
                Best::offer(&mut b.first, first);
            }
            if let [_, .., last] = points[..] {
                Best::offer(&mut b.last, last);
            }
        }
        let maps: HashMap<u32, ClockMap> = m
            .ranks
            .iter()
            .map(|r| {
                let group = r.clock_id.as_deref().map(|id| (r.host.as_str(), id));
                let map = match group.and_then(|g| best.get(&g)) {
                    Some(b) if !r.clock_offsets.is_empty() => ClockMap::new(&b.points()),
                    _ => ClockMap::new(&r.clock_offsets),
                };
                (r.rank, map)
            })
            .collect();
        let error_ns = maps
            .values()
            .flat_map(|m| m.points().iter().map(ClockOffset::error_ns))
            .max()
            .unwrap_or(0);
        Clocks { maps, error_ns }
    }

    /// The map of a rank, None when it is the identity.
    pub fn map(&self, rank: u32) -> Option<&ClockMap> {
        self.maps.get(&rank).filter(|m| !m.is_identity())
    }

    /// Whether any rank's clock is shifted.
    pub fn corrected(&self) -> bool {
        self.maps.values().any(|m| !m.is_identity())
    }

    pub fn to_global(&self, rank: u32, local: i64) -> GlobalNs {
        GlobalNs(self.map(rank).map_or(local, |m| m.to_global(local)))
    }

    pub fn to_local(&self, rank: u32, global: GlobalNs) -> i64 {
        self.map(rank).map_or(global.0, |m| m.to_local(global.0))
    }

    /// The largest |offset| of any rank.
    pub fn max_abs_offset(&self) -> i64 {
        self.maps
            .values()
            .map(ClockMap::max_abs_offset)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off(local_ns: i64, offset_ns: i64) -> ClockOffset {
        ClockOffset {
            local_ns,
            offset_ns,
            rtt_ns: 0,
        }
    }

    #[test]
    fn drift_is_linear_and_inverts() {
        // 50 µs of drift over 2 s.
        let m = ClockMap::new(&[off(1_000_000_000, 1000), off(3_000_000_000, 51_000)]);
        assert_eq!(m.to_global(1_000_000_000), 999_999_000);
        assert_eq!(m.to_global(2_000_000_000), 2_000_000_000 - 26_000);
        assert_eq!(m.to_global(3_000_000_000), 3_000_000_000 - 51_000);
        // Extrapolated with the same slope.
        assert_eq!(m.offset(5_000_000_000), 101_000);
        for local in [0, 1_234_567_891, 2_999_999_999, 7_000_000_000] {
            let g = m.to_global(local);
            assert!((m.to_local(g) - local).abs() <= 1, "{local}");
        }
        assert!(ClockMap::new(&[off(5, 0)]).is_identity());
        assert_eq!(ClockMap::new(&[]).to_global(42), 42);
    }

    fn measured(local_ns: i64, offset_ns: i64, rtt_ns: i64) -> ClockOffset {
        ClockOffset {
            local_ns,
            offset_ns,
            rtt_ns,
        }
    }

    #[test]
    fn measurements_within_each_other_s_bounds_give_no_drift() {
        // A rank of a loaded node (the truth: offset 0), measured 0.3 s apart
        // with round trips of 3.8 and 4.8 ms: +0.99 and −1.85 ms, a slope of
        // 0.93 % through the two values. Their bounds overlap: one offset,
        // the mean, and the run's times are not stretched.
        let m = ClockMap::new(&[
            measured(11_677_338_149_293, 994_447, 3_778_893),
            measured(11_677_642_403_953, -1_845_291, 4_771_727),
        ]);
        for local in [11_677_338_149_293, 11_677_500_000_000, 11_677_642_403_953] {
            assert_eq!(m.offset(local), -425_422, "{local}");
        }
        // The mean is moved into the overlap of the two bounds: [-10, 10] and
        // [90 − 100, 90 + 100] overlap on [-10, 10]; the mean 45 becomes 10.
        let m = ClockMap::new(&[measured(0, 0, 20), measured(1_000, 90, 200)]);
        assert_eq!((m.offset(0), m.offset(1_000)), (10, 10));
    }

    #[test]
    fn measurements_apart_give_the_least_drift_between_their_bounds() {
        // 0 ± 100 at 1 s and 1,000 ± 200 at 2 s: the line from 100 to 800.
        let m = ClockMap::new(&[
            measured(1_000_000_000, 0, 200),
            measured(2_000_000_000, 1_000, 400),
        ]);
        assert_eq!(m.offset(1_000_000_000), 100);
        assert_eq!(m.offset(2_000_000_000), 800);
        assert_eq!(m.offset(1_500_000_000), 450);
        // Falling the same way round.
        let m = ClockMap::new(&[
            measured(1_000_000_000, 0, 200),
            measured(2_000_000_000, -1_000, 400),
        ]);
        assert_eq!(
            (m.offset(1_000_000_000), m.offset(2_000_000_000)),
            (-100, -800)
        );
    }

    /// Ranks of one clock take its best measurements at each end: a loaded
    /// rank's millisecond round trips do not widen the job's error bound.
    #[test]
    fn ranks_of_one_clock_share_its_best_measurements() {
        use hyscope_format::RankInfo;
        let rank = |rank: u32, clock: Option<&str>, offsets: Vec<ClockOffset>| RankInfo {
            rank,
            clock_id: clock.map(str::to_string),
            clock_offsets: offsets,
            ..RankInfo::default()
        };
        let exact = vec![measured(10, 0, 0), measured(2_000, 0, 0)];
        let manifest = Manifest {
            ranks: vec![
                rank(0, Some("a"), exact.clone()),
                rank(2, Some("a"), exact),
                // Node b: rank 1 measured 25 ± 5,000 then −156 ± 5,500;
                // rank 3 waited: −2,000,000 ± 14,000,000, then −31 ± 5,400.
                rank(
                    1,
                    Some("b"),
                    vec![measured(100, 25, 10_000), measured(3_000, -156, 11_000)],
                ),
                rank(
                    3,
                    Some("b"),
                    vec![
                        measured(120, -2_000_000, 28_000_000),
                        measured(3_100, -31, 10_800),
                    ],
                ),
                // No clock id (an older trace): its own measurements.
                rank(
                    5,
                    None,
                    vec![measured(90, 7_000, 30_000), measured(3_050, 7_000, 30_000)],
                ),
            ],
            ..Manifest::default()
        };
        let clocks = Clocks::from_manifest(&manifest);
        let node_b = ClockMap::new(&[measured(100, 25, 10_000), measured(3_100, -31, 10_800)]);
        assert_eq!(clocks.maps[&1], node_b);
        assert_eq!(clocks.maps[&3], node_b);
        assert!(clocks.map(0).is_none() && clocks.map(2).is_none());
        assert_eq!(
            clocks.maps[&5],
            ClockMap::new(&manifest.ranks[4].clock_offsets)
        );
        assert_eq!(
            clocks.error_ns, 15_000,
            "rank 5's own bound, not rank 3's 14 ms"
        );
        let without_5 = Manifest {
            ranks: manifest.ranks[..4].to_vec(),
            ..Manifest::default()
        };
        assert_eq!(Clocks::from_manifest(&without_5).error_ns, 5_400);
    }
}

//! The coarse overview of a timeline: each rank's time per [`State`] (its
//! threads summed) in a few hundred bins of the whole run, for a viewer to
//! draw before the level-of-detail index is ready.
//!
//! It comes from the index's own reading pass and sweep (`build::for_each_rank`,
//! `build::sweep`): the same intervals, barrier split and priority layers, so
//! a bin holds exactly what the index gives for the same bounds
//! ([`RankCells::rank_query`] of both agree on the bins' bounds). Only the
//! segments are not kept: each is added to the bins it overlaps, and the
//! result is `ranks × bins` sums, small enough to cache beside the index and
//! read back in milliseconds.
//!
//! Bins have a power-of-two width in nanoseconds and are aligned on multiples
//! of it (bin `i` is `[i << shift, (i + 1) << shift)`), so the grid needs no
//! span known in advance: a row starts at 1 ns per bin and, whenever its bins
//! would exceed the limit, halves their number by merging neighbours (exact:
//! sums of sums). The ranks' grids are merged the same way.
//!
//! A window's cell narrower than a bin gets the bin's time in proportion to
//! the overlap: what the overview knows, which a viewer labels as coarse.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hyscope_format::{FormatError, Trace};
use rayon::prelude::*;

use super::build::{for_each_rank, sweep};
use super::groups::{RankCells, RankRows, rank_rows_of};
use super::{CellSummary, RowInfo, STATES, State, cell_bounds, empty_cells};
use crate::model::LeftOutPart;

/// Sums per state in aligned power-of-two bins, at most `limit` of them.
#[derive(Debug, Clone)]
pub(super) struct Bins {
    shift: u32,
    /// Index of the first bin (at `shift`).
    first: i64,
    time: Vec<[u64; STATES]>,
    limit: usize,
}

impl Bins {
    pub(super) fn new(limit: usize) -> Bins {
        Bins {
            shift: 0,
            first: 0,
            time: Vec::new(),
            limit: limit.max(2),
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.time.len()
    }

    #[cfg(test)]
    pub(super) fn sums(&self) -> &[[u64; STATES]] {
        &self.time
    }

    /// `[start, end)` of the `i`-th bin held.
    #[cfg(test)]
    pub(super) fn bounds(&self, i: usize) -> (i64, i64) {
        let a = (self.first + i as i64) << self.shift;
        (a, a + (1i64 << self.shift))
    }

    fn last(&self) -> i64 {
        self.first + self.time.len() as i64 - 1
    }

    /// Twice as wide bins, half as many.
    fn coarsen(&mut self) {
        self.shift += 1;
        if self.time.is_empty() {
            return;
        }
        let first = self.first >> 1;
        let mut time = vec![[0u64; STATES]; ((self.last() >> 1) - first + 1) as usize];
        for (j, t) in self.time.iter().enumerate() {
            let to = &mut time[(((self.first + j as i64) >> 1) - first) as usize];
            for s in 0..STATES {
                to[s] += t[s];
            }
        }
        self.first = first;
        self.time = time;
    }

    fn coarsen_to(&mut self, shift: u32) {
        while self.shift < shift {
            self.coarsen();
        }
    }

    /// Bins `[lo, hi]` (global ns) exist, coarsening until they fit the limit.
    fn cover(&mut self, lo: i64, hi: i64) {
        loop {
            let (a, b) = (lo >> self.shift, hi >> self.shift);
            let (a, b) = if self.time.is_empty() {
                (a, b)
            } else {
                (a.min(self.first), b.max(self.last()))
            };
            if (b - a + 1) as u64 > self.limit as u64 {
                self.coarsen();
                continue;
            }
            if self.time.is_empty() {
                self.first = a;
                self.time = vec![[0; STATES]; (b - a + 1) as usize];
            } else {
                if a < self.first {
                    let mut t = vec![[0; STATES]; (self.first - a) as usize];
                    t.append(&mut self.time);
                    self.time = t;
                    self.first = a;
                }
                let len = (b - self.first + 1) as usize;
                if len > self.time.len() {
                    self.time.resize(len, [0; STATES]);
                }
            }
            return;
        }
    }

    /// Add the segment `[s, e)` in `state`.
    pub(super) fn add(&mut self, s: i64, e: i64, state: State) {
        if e <= s {
            return;
        }
        self.cover(s, e - 1);
        let mut t = s;
        while t < e {
            let i = t >> self.shift;
            let end = (((i as i128 + 1) << self.shift).min(e as i128)) as i64;
            self.time[(i - self.first) as usize][state as usize] += (end - t) as u64;
            t = end;
        }
    }

    /// Add another's sums (coarsening both to the wider grid).
    pub(super) fn merge(&mut self, mut other: Bins) {
        if other.time.is_empty() {
            return;
        }
        loop {
            let k = self.shift.max(other.shift);
            self.coarsen_to(k);
            other.coarsen_to(k);
            let lo = other.first << k;
            let hi = ((other.last() as i128 + 1) << k) as i64 - 1;
            self.cover(lo, hi);
            if self.shift == other.shift {
                break;
            }
        }
        for (j, t) in other.time.iter().enumerate() {
            let to = &mut self.time[(other.first + j as i64 - self.first) as usize];
            for s in 0..STATES {
                to[s] += t[s];
            }
        }
    }
}

/// Bins at most in an overview of `ranks` ranks: about a million sums in
/// all (84 MB, ≈ 9 MB on disk), 256 at 4,096 ranks, never fewer than 64
/// across the run nor more than 2,048.
pub fn bins_limit(ranks: usize) -> usize {
    ((1usize << 20) / ranks.max(1)).clamp(64, 2048)
}

/// A thread's bins, filled step by step from the sweep of its intervals
/// (`build::sweep`), and the span of its segments.
pub(super) struct ThreadSweep {
    bins: Bins,
    current: Option<(i64, State)>,
    span: Option<(i64, i64)>,
}

impl ThreadSweep {
    pub(super) fn new(limit: usize) -> ThreadSweep {
        ThreadSweep {
            bins: Bins::new(limit),
            current: None,
            span: None,
        }
    }

    /// The row's state becomes `state` at `t` (None: the row ends).
    pub(super) fn step(&mut self, t: i64, state: Option<State>) {
        if let Some((from, s)) = self.current {
            self.bins.add(from, t, s);
        }
        self.current = state.map(|s| (t, s));
        let start = self.span.map_or(t, |x| x.0);
        self.span = Some((start, t));
    }
}

/// The overview of the ranks read so far: rank by rank, then one grid.
pub(super) struct Partial {
    rows: Vec<RowInfo>,
    per_rank: HashMap<u32, Bins>,
    span: Option<(i64, i64)>,
    limit: usize,
    /// Ranks left out for a damaged part ([`crate::damaged_parts`]).
    left_out: Vec<LeftOutPart>,
}

impl Partial {
    pub(super) fn new(limit: usize) -> Partial {
        Partial {
            rows: Vec::new(),
            per_rank: HashMap::new(),
            span: None,
            limit,
            left_out: Vec::new(),
        }
    }

    /// The ranks the reading pass left out.
    pub(super) fn set_left_out(&mut self, parts: Vec<LeftOutPart>) {
        self.left_out = parts;
    }

    /// Add a rank's threads (in thread order).
    pub(super) fn add_rank(&mut self, rank: u32, host: &str, threads: Vec<(u32, ThreadSweep)>) {
        let mut rank_bins = Bins::new(self.limit);
        for (thread, t) in threads {
            self.rows.push(RowInfo {
                rank,
                thread,
                host: host.to_string(),
            });
            rank_bins.merge(t.bins);
            if let Some((a, b)) = t.span {
                self.span = Some(self.span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
        }
        self.per_rank.insert(rank, rank_bins);
    }

    /// Ranks added so far.
    pub(super) fn ranks(&self) -> usize {
        self.per_rank.len()
    }

    /// The overview of the ranks added so far (they stay for more).
    pub(super) fn snapshot(&self) -> Overview {
        Overview {
            left_out: self.left_out.clone(),
            ..Overview::assemble(
                self.rows.clone(),
                self.per_rank.clone(),
                self.span.unwrap_or((0, 0)),
                self.limit,
            )
        }
    }

    pub(super) fn finish(self) -> Overview {
        Overview {
            left_out: self.left_out,
            ..Overview::assemble(
                self.rows,
                self.per_rank,
                self.span.unwrap_or((0, 0)),
                self.limit,
            )
        }
    }
}

/// Each rank's time per state in bins of the whole run (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    rows: Vec<RowInfo>,
    ranks: Vec<RankRows>,
    span: (i64, i64),
    shift: u32,
    first: i64,
    bins: usize,
    /// `time[pos * bins + i]`: the rank at display position `pos`, bin `i`.
    time: Vec<[u64; STATES]>,
    /// Ranks left out for a damaged part (none in a cached overview: one
    /// with ranks left out is not cached).
    left_out: Vec<LeftOutPart>,
}

impl Overview {
    /// One pass over the trace's `omp` and `mpi` tables, rank by rank (a
    /// rank's parts and threads in parallel), with `progress(parts_done, parts_total)`.
    pub fn build(
        trace: &Trace,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Overview, FormatError> {
        let ranks = trace.ranks();
        Overview::build_ranks(trace, &ranks, bins_limit(ranks.len()), progress)
    }

    /// The overview of `ranks` only, with at most `limit` bins.
    pub(super) fn build_ranks(
        trace: &Trace,
        ranks: &[u32],
        limit: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Overview, FormatError> {
        let mut partial = Partial::new(limit);
        let left_out = for_each_rank(trace, ranks, progress, |r| {
            let clock = r.clock;
            let threads: Vec<(u32, ThreadSweep)> = r
                .threads
                .into_par_iter()
                .map(|(thread, ivs)| {
                    let mut t = ThreadSweep::new(limit);
                    sweep(ivs, clock, |at, state| t.step(at, state));
                    (thread, t)
                })
                .collect();
            partial.add_rank(r.rank, &r.host, threads);
        })?;
        partial.set_left_out(left_out);
        Ok(partial.finish())
    }

    /// The overview of rows and each rank's bins: one grid for all ranks.
    fn assemble(
        mut rows: Vec<RowInfo>,
        mut per_rank: HashMap<u32, Bins>,
        span: (i64, i64),
        limit: usize,
    ) -> Overview {
        rows.sort_by(|a, b| (&a.host, a.rank, a.thread).cmp(&(&b.host, b.rank, b.thread)));
        let ranks = rank_rows_of(&rows);
        let mut grid = Bins::new(limit);
        for b in per_rank.values() {
            let mut covers = Bins::new(limit);
            covers.shift = b.shift;
            covers.first = b.first;
            covers.time = vec![[0; STATES]; b.time.len()];
            grid.merge(covers);
        }
        let bins = grid.time.len();
        let mut time = vec![[0u64; STATES]; ranks.len() * bins];
        for (pos, r) in ranks.iter().enumerate() {
            let Some(mut b) = per_rank.remove(&r.rank) else {
                continue;
            };
            b.coarsen_to(grid.shift);
            for (j, t) in b.time.iter().enumerate() {
                time[pos * bins + (b.first + j as i64 - grid.first) as usize] = *t;
            }
        }
        Overview {
            rows,
            ranks,
            span,
            shift: grid.shift,
            first: grid.first,
            bins,
            time,
            left_out: Vec::new(),
        }
    }

    /// Number of bins.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// Width of a bin (ns).
    pub fn bin_ns(&self) -> i64 {
        1i64 << self.shift.min(62)
    }

    /// `[start, end)` of bin `i` (rank 0's clock).
    pub fn bin_bounds(&self, i: usize) -> (i64, i64) {
        let a = (self.first + i as i64) << self.shift;
        (a, a + self.bin_ns())
    }

    /// The summed time per state of the rank at display position `pos` in bin `i`.
    pub fn bin(&self, pos: usize, i: usize) -> [u64; STATES] {
        self.time
            .get(pos * self.bins + i)
            .copied()
            .unwrap_or([0; STATES])
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.time.capacity() * std::mem::size_of::<[u64; STATES]>()
            + self.rows.capacity() * std::mem::size_of::<RowInfo>()
    }
}

impl Overview {
    /// For `columns` cells of `[t0, t1)`: (cell, bin, share of the bin in the
    /// cell, None when whole) for every bin overlapping a cell. The same for
    /// every rank: computed once per query of a rank.
    fn cells_bins(&self, t0: i64, t1: i64, columns: usize) -> Vec<(usize, usize, Option<f64>)> {
        let mut out = Vec::with_capacity(columns * 2);
        if self.bins == 0 {
            return out;
        }
        let width = self.bin_ns() as i128;
        let last = self.first + self.bins as i64 - 1;
        for c in 0..columns {
            let (a, b) = cell_bounds(t0, t1, columns, c);
            if b <= a {
                continue;
            }
            let (lo, hi) = (
                (a >> self.shift).max(self.first),
                ((b - 1) >> self.shift).min(last),
            );
            for i in lo..=hi {
                let bin_a = (i as i128) << self.shift;
                let overlap = (b as i128).min(bin_a + width) - (a as i128).max(bin_a);
                if overlap > 0 {
                    let share = (overlap != width).then(|| overlap as f64 / width as f64);
                    out.push((c, (i - self.first) as usize, share));
                }
            }
        }
        out
    }
}

impl RankCells for Overview {
    fn rows(&self) -> &[RowInfo] {
        &self.rows
    }

    fn rank_rows(&self) -> &[RankRows] {
        &self.ranks
    }

    fn span(&self) -> (i64, i64) {
        self.span
    }

    fn left_out(&self) -> &[LeftOutPart] {
        &self.left_out
    }

    /// Each cell gets every bin it overlaps, in proportion to the overlap
    /// (exact for cells on bin bounds).
    fn rank_query(&self, pos: usize, t0: i64, t1: i64, columns: usize) -> Vec<CellSummary> {
        let mut out = empty_cells(t0, t1, columns);
        if pos >= self.ranks.len() || self.bins == 0 {
            return out;
        }
        let row = &self.time[pos * self.bins..(pos + 1) * self.bins];
        for (c, i, share) in self.cells_bins(t0, t1, columns) {
            let cell = &mut out[c].time;
            let t = &row[i];
            match share {
                None => cell.iter_mut().zip(t).for_each(|(to, &v)| *to += v),
                Some(f) => cell
                    .iter_mut()
                    .zip(t)
                    .for_each(|(to, &v)| *to += (v as f64 * f) as u64),
            }
        }
        out
    }
}

/// The file format of the overview cache: bumped whenever it or what the
/// overview means changes (older files are rebuilt without a warning).
const MAGIC: &[u8; 8] = b"HYTLOVW1";
const MAGIC_FAMILY: &[u8; 7] = b"HYTLOVW";

impl Overview {
    /// Where the overview of `trace` is cached, if there is a cache directory.
    pub fn cache_path(trace: &Trace) -> Option<PathBuf> {
        super::cache::cache_file(trace, "overview")
    }
}

/// The cached overview in `file` if it is up to date (None: absent, stale or
/// of another version), or the warning naming a damaged file.
pub(super) fn load_cached(file: &Path, key: &str) -> Result<Option<Overview>, String> {
    match load(file, key) {
        Ok(o) => Ok(Some(o)),
        Err(Problem::Absent) => Ok(None),
        Err(Problem::Damaged(why)) => Err(damaged_warning(file, &why)),
    }
}

fn damaged_warning(file: &Path, why: &str) -> String {
    format!(
        "hyscope: the timeline overview cache {} is unreadable ({why}); rebuilt",
        file.display()
    )
}

/// Why a cache file was not used.
enum Problem {
    /// Missing, stale (another trace state) or from another version: rebuilt quietly.
    Absent,
    /// Present for this trace but unreadable.
    Damaged(String),
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

pub(super) fn save(o: &Overview, path: &Path, key: &str) -> std::io::Result<()> {
    let mut p = Vec::with_capacity(o.time.len() * STATES + o.rows.len() * 16);
    put(&mut p, o.rows.len() as u64);
    for r in &o.rows {
        put(&mut p, u64::from(r.rank));
        put(&mut p, u64::from(r.thread));
        put(&mut p, r.host.len() as u64);
        p.extend_from_slice(r.host.as_bytes());
    }
    put(&mut p, zigzag(o.span.0));
    put(&mut p, zigzag(o.span.1));
    put(&mut p, u64::from(o.shift));
    put(&mut p, zigzag(o.first));
    put(&mut p, o.bins as u64);
    for t in &o.time {
        for &v in t {
            put(&mut p, v);
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        w.write_all(MAGIC)?;
        w.write_all(&(key.len() as u64).to_le_bytes())?;
        w.write_all(key.as_bytes())?;
        w.write_all(&(p.len() as u64).to_le_bytes())?;
        w.write_all(&p)?;
        w.write_all(&crc32fast::hash(&p).to_le_bytes())?;
        w.flush()?;
    }
    std::fs::rename(&tmp, path)
}

/// Reads the varints of a payload, every read checked.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn get(&mut self) -> Result<u64, Problem> {
        let mut v = 0u64;
        for k in 0..10 {
            let byte = *self
                .b
                .get(self.at)
                .ok_or_else(|| Problem::Damaged("truncated".into()))?;
            self.at += 1;
            v |= u64::from(byte & 0x7f) << (7 * k);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Problem::Damaged("bad number".into()))
    }

    /// A count of items of at least `min_bytes` each, checked against what is left.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Problem> {
        let n = self.get()?;
        let left = (self.b.len() - self.at) as u64;
        if n.saturating_mul(min_bytes.max(1) as u64) > left {
            return Err(Problem::Damaged("a count larger than the file".into()));
        }
        Ok(n as usize)
    }
}

fn damaged(e: impl std::fmt::Display) -> Problem {
    Problem::Damaged(e.to_string())
}

fn load(path: &Path, key: &str) -> Result<Overview, Problem> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Problem::Absent),
        Err(e) => return Err(damaged(e)),
    };
    let mut all = Vec::new();
    f.read_to_end(&mut all).map_err(damaged)?;
    if all.len() < 8 || &all[..7] != MAGIC_FAMILY {
        return Err(Problem::Damaged("not a timeline overview".into()));
    }
    if &all[..8] != MAGIC {
        return Err(Problem::Absent);
    }
    let mut at: usize = 8;
    let mut chunk = |n: usize| -> Result<&[u8], Problem> {
        let s = all
            .get(at..at.checked_add(n).ok_or_else(|| damaged("bad length"))?)
            .ok_or_else(|| damaged("truncated"))?;
        at += n;
        Ok(s)
    };
    let len = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize;
    let key_len = len(chunk(8)?);
    if chunk(key_len)? != key.as_bytes() {
        return Err(Problem::Absent);
    }
    let payload_len = len(chunk(8)?);
    let payload = chunk(payload_len)?;
    let crc = u32::from_le_bytes(chunk(4)?.try_into().expect("4 bytes"));
    if crc32fast::hash(payload) != crc {
        return Err(damaged("checksum mismatch"));
    }
    if at != all.len() {
        return Err(damaged("trailing bytes"));
    }
    let mut c = Cursor { b: payload, at: 0 };
    let n = c.count(3)?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let rank = u32::try_from(c.get()?).map_err(damaged)?;
        let thread = u32::try_from(c.get()?).map_err(damaged)?;
        let host_len = c.count(1)?;
        let host = String::from_utf8_lossy(&c.b[c.at..c.at + host_len]).into_owned();
        c.at += host_len;
        rows.push(RowInfo { rank, thread, host });
    }
    let span = (unzigzag(c.get()?), unzigzag(c.get()?));
    let shift = c.get()?;
    if shift > 62 {
        return Err(damaged("bad bin width"));
    }
    let first = unzigzag(c.get()?);
    let bins = c.count(0)?;
    let ranks = rank_rows_of(&rows);
    let cells = ranks
        .len()
        .checked_mul(bins)
        .filter(|&n| n.saturating_mul(STATES) <= c.b.len() - c.at)
        .ok_or_else(|| damaged("more bins than the file holds"))?;
    let mut time = Vec::with_capacity(cells);
    for _ in 0..cells {
        let mut t = [0u64; STATES];
        for v in &mut t {
            *v = c.get()?;
        }
        time.push(t);
    }
    if c.at != c.b.len() {
        return Err(damaged("trailing bytes"));
    }
    let sorted = rows
        .windows(2)
        .all(|w| (&w[0].host, w[0].rank, w[0].thread) < (&w[1].host, w[1].rank, w[1].thread));
    let lo = (first as i128) << shift;
    let hi = (first as i128 + bins as i128) << shift;
    if !sorted || lo < i64::MIN as i128 || hi > i64::MAX as i128 {
        return Err(damaged("inconsistent rows or bins"));
    }
    Ok(Overview {
        rows,
        ranks,
        span,
        shift: shift as u32,
        first,
        bins,
        time,
        left_out: Vec::new(),
    })
}

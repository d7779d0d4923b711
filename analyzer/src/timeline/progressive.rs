//! Opening a timeline for a viewer: the coarse overview as early as
//! possible, then the index.
//!
//! With both caches up to date, the overview is read first (milliseconds to
//! a second), then the index. Without the overview's cache, the index and the
//! overview are built in one reading pass (`build::for_each_rank`, one sweep
//! per thread feeding both the index's row and the overview's bins), and the
//! overview of the ranks read so far is handed to the viewer as the pass
//! goes, so its rows fill in long before the index is complete. Each overview
//! handed over is exactly [`Overview`] of the ranks it holds (the last one is
//! the whole trace's, equal to [`Overview::build`]); the index is exactly
//! [`TimelineIndex::build`]'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hyscope_format::{FormatError, Trace};
use rayon::prelude::*;

use super::build::{flatten_with, for_each_rank};
use super::overview::{Partial, ThreadSweep};
use super::{Overview, RankCells, RowData, RowInfo, TimelineIndex, bins_limit, cache};

/// An overview handed to the viewer while the timeline opens.
#[derive(Debug)]
pub struct OverviewUpdate {
    pub overview: Overview,
    /// Ranks it holds, of `ranks` in the trace (all of them once complete).
    pub ranks_loaded: usize,
    pub ranks: usize,
    /// Read from the cache file.
    pub cached: bool,
    /// A cache file that could not be read (named, with the problem).
    pub warning: Option<String>,
}

impl OverviewUpdate {
    /// Whether it holds every rank of the trace.
    pub fn complete(&self) -> bool {
        self.ranks_loaded >= self.ranks
    }
}

/// The index and the overview of `trace` in one reading pass. After a rank,
/// when `every` has passed since the last one (and after the first rank),
/// `publish` gets the overview of the ranks read so far; at the end, the
/// whole trace's. `progress(parts_done, parts_total)` as parts are read.
pub fn build_with_overview(
    trace: &Trace,
    progress: &(dyn Fn(usize, usize) + Sync),
    every: Duration,
    publish: &mut dyn FnMut(OverviewUpdate),
) -> Result<TimelineIndex, FormatError> {
    let ranks = trace.ranks();
    let limit = bins_limit(ranks.len());
    let mut partial = Partial::new(limit);
    let mut rows: Vec<(RowInfo, RowData)> = Vec::new();
    let mut last: Option<Instant> = None;
    let update = |overview, ranks_loaded| OverviewUpdate {
        overview,
        ranks_loaded,
        ranks: ranks.len(),
        cached: false,
        warning: None,
    };
    let left_out = for_each_rank(trace, &ranks, progress, |r| {
        let clock = r.clock;
        let built: Vec<(u32, RowData, ThreadSweep)> = r
            .threads
            .into_par_iter()
            .map(|(thread, ivs)| {
                let mut bins = ThreadSweep::new(limit);
                let data = flatten_with(ivs, clock, |t, state| bins.step(t, state));
                (thread, data, bins)
            })
            .collect();
        let mut threads = Vec::with_capacity(built.len());
        for (thread, data, bins) in built {
            rows.push((
                RowInfo {
                    rank: r.rank,
                    thread,
                    host: r.host.clone(),
                },
                data,
            ));
            threads.push((thread, bins));
        }
        partial.add_rank(r.rank, &r.host, threads);
        let loaded = partial.ranks();
        if loaded < ranks.len() && last.is_none_or(|t| t.elapsed() >= every) {
            publish(update(partial.snapshot(), loaded));
            last = Some(Instant::now());
        }
    })?;
    super::build::some_rank_left(trace, &left_out)?;
    // The ranks left out count as read: the overview is complete.
    let mut gone: Vec<u32> = left_out.iter().map(|p| p.rank).collect();
    gone.dedup();
    let loaded = partial.ranks() + gone.len();
    partial.set_left_out(left_out.clone());
    publish(update(partial.finish(), loaded));
    Ok(TimelineIndex::from_parts(trace, rows, left_out))
}

impl TimelineIndex {
    /// Open the timeline of `trace` for a viewer: `publish` gets the coarse
    /// overview as soon as there is one (see the module doc), then the index
    /// is returned, with whether it came from the cache. `cache`: read and
    /// write the caches ([`super::cache_dir`]); a cache that cannot be
    /// written is not an error, a damaged overview cache is named in the
    /// update's warning.
    pub fn open_progressive(
        trace: &Trace,
        cache: bool,
        progress: &(dyn Fn(usize, usize) + Sync),
        every: Duration,
        publish: &mut dyn FnMut(OverviewUpdate),
    ) -> Result<(TimelineIndex, bool), FormatError> {
        let files = if cache {
            cache::cache_file(trace, "idx").zip(Overview::cache_path(trace))
        } else {
            None
        };
        open_progressive_at(trace, files, progress, every, publish)
    }

    /// [`TimelineIndex::open_progressive`] with its caches in the directory
    /// `dir` instead of [`super::cache_dir`]'s.
    pub fn open_progressive_in(
        trace: &Trace,
        dir: &Path,
        progress: &(dyn Fn(usize, usize) + Sync),
        every: Duration,
        publish: &mut dyn FnMut(OverviewUpdate),
    ) -> Result<(TimelineIndex, bool), FormatError> {
        let files = (
            cache::cache_file_in(dir, trace, "idx"),
            cache::cache_file_in(dir, trace, "overview"),
        );
        open_progressive_at(trace, Some(files), progress, every, publish)
    }
}

/// [`TimelineIndex::open_progressive`] with the cache files (index,
/// overview), None: no cache.
pub(super) fn open_progressive_at(
    trace: &Trace,
    files: Option<(PathBuf, PathBuf)>,
    progress: &(dyn Fn(usize, usize) + Sync),
    every: Duration,
    publish: &mut dyn FnMut(OverviewUpdate),
) -> Result<(TimelineIndex, bool), FormatError> {
    let key = files.as_ref().map(|_| cache::key(trace));
    let (index_file, overview_file) = files.unzip();
    // The key (sizes and modification times) does not see a part that rotted
    // in place: before either cache is used, every part is checked as the
    // build checks it ([`crate::damaged_parts::check_ranks`], its checksums
    // only, no decoding). A damaged part makes both caches stale: they are
    // removed and the build leaves its rank out, naming the file.
    let mut sound: Option<bool> = None;
    let mut still_sound = || {
        *sound.get_or_insert_with(|| {
            let at = Instant::now();
            let ok = crate::damaged_parts::check_ranks(trace).is_empty();
            if crate::timing::enabled() {
                crate::timing::say(&format!(
                    "timeline caches: every part's checksums verified in {:.1} ms ({})",
                    at.elapsed().as_secs_f64() * 1e3,
                    if ok { "sound" } else { "damaged: rebuilt" }
                ));
            }
            if !ok {
                for f in index_file.iter().chain(&overview_file) {
                    let _ = std::fs::remove_file(f);
                }
            }
            ok
        })
    };
    let mut warning = None;
    let mut have_overview = false;
    if let (Some(f), Some(k)) = (&overview_file, &key) {
        match super::overview::load_cached(f, k) {
            Ok(Some(_)) if !still_sound() => {}
            Ok(Some(overview)) => {
                let ranks = overview.rank_rows().len();
                publish(OverviewUpdate {
                    overview,
                    ranks_loaded: ranks,
                    ranks,
                    cached: true,
                    warning: None,
                });
                have_overview = true;
            }
            Ok(None) => {}
            Err(w) => warning = Some(w),
        }
    }
    // A damaged overview cache is rebuilt with the index, even when the
    // index's cache is good: the update names the file, and the next open
    // reads both again.
    if warning.is_none()
        && let (Some(f), Some(k)) = (&index_file, &key)
        && let Ok(index) = cache::load(trace, f, k)
        && still_sound()
    {
        return Ok((index, true));
    }
    let index = if have_overview {
        TimelineIndex::build_with_progress(trace, progress)?
    } else {
        build_with_overview(trace, progress, every, &mut |mut u| {
            u.warning = warning.take();
            // A trace with ranks left out is read again at each open: the
            // caches would not say which (nor see a part damaged since).
            if u.complete()
                && u.overview.left_out().is_empty()
                && let (Some(f), Some(k)) = (&overview_file, &key)
            {
                let _ = super::overview::save(&u.overview, f, k);
            }
            publish(u);
        })?
    };
    if let (Some(f), Some(k), true) = (&index_file, &key, index.left_out().is_empty()) {
        let _ = cache::save(&index, f, k);
    }
    Ok((index, false))
}

//! What the TUI shows: the manifest (read at start, cheap), then the
//! analyzer's results, the timeline index and the sampled series, each
//! computed on its own background thread so the first frame waits for none.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyscope_analyzer::{AnalyzeOptions, RunWindow};
use hyscope_format::{Manifest, Trace};

use crate::aggregate::Source;
use crate::loading::{Coarse, Latest, Loading, open_timeline};
use crate::samples::{self, Series};
use hyscope_analyzer::timeline::{Overview, RankCells, TimelineIndex};

pub use hyscope_analyzer::Analysis;
use hyscope_analyzer::model::Comparison;

/// The second trace of `hyscope tui A B` (B): its analysis only, restricted
/// to the phase the first one is (as `report --phase P A B`), and its
/// comparison with the first ([`hyscope_analyzer::compare()`]), computed
/// once both analyses are there.
pub struct Other {
    pub dir: PathBuf,
    pub analysis: Loading<Box<Analysis>>,
    /// B's phase names: a phase B does not have is said so, not analysed.
    pub phase_names: Vec<String>,
    /// The phase A is restricted to that B does not have: no comparison.
    pub missing_phase: Option<String>,
    comparison: Option<Comparison>,
}

impl Other {
    fn open(dir: &Path, blocking: bool) -> anyhow::Result<Other> {
        let trace = Trace::open(dir)?;
        let d = dir.to_path_buf();
        Ok(Other {
            dir: d.clone(),
            analysis: if blocking {
                Loading::from_result(load_analysis(dir, None))
            } else {
                Loading::spawn(move || load_analysis(&d, None))
            },
            phase_names: hyscope_analyzer::phases::phase_names(&trace),
            missing_phase: None,
            comparison: None,
        })
    }

    /// Analyse B again restricted to `phase` (None: the whole run), unless
    /// B has no phase of that name.
    fn set_phase(&mut self, phase: Option<&str>) {
        self.comparison = None;
        self.missing_phase = phase
            .filter(|p| !self.phase_names.iter().any(|x| x == p))
            .map(str::to_string);
        if self.missing_phase.is_some() {
            return;
        }
        let dir = self.dir.clone();
        let p = phase.map(str::to_string);
        self.analysis = Loading::spawn(move || load_analysis(&dir, p.as_deref()));
    }

    /// The comparison of `a` (A's analysis) with B's, once both are there.
    fn compare(&mut self, a: Option<&Analysis>) {
        if self.missing_phase.is_some() {
            return;
        }
        if let (None, Some(a), Some(b)) = (&self.comparison, a, self.analysis.ready()) {
            self.comparison = Some(hyscope_analyzer::compare(a, b));
        }
    }
}

pub struct Data {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub analysis: Loading<Box<Analysis>>,
    pub timeline: Loading<Arc<TimelineIndex>>,
    /// The coarse overview of the timeline, shown until the index is loaded
    /// (read from its cache before the index, or of the ranks read so far
    /// while the index is built).
    pub overview: Latest<Arc<Coarse>>,
    /// Sampled metrics over time (memory, queues, energy charts).
    pub series: Loading<Vec<Series>>,
    /// The phase the analysis is restricted to (`p` in the TUI), if any.
    pub phase: Option<String>,
    /// The trace's phase names in order of first start, for cycling through them.
    pub phase_names: Vec<String>,
    /// The run's window, from the first analysis loaded (kept while a phase
    /// is analysed again: the whole run's window does not change).
    window: Option<RunWindow>,
    /// The trace compared with this one (`hyscope tui A B`), if any.
    pub other: Option<Other>,
}

impl Data {
    /// Open the trace (manifest only) and start the loader threads; `cache`:
    /// load the timeline index from the on-disk cache when it is up to date
    /// (and save it there after a build).
    pub fn open(dir: &Path, cache: bool) -> anyhow::Result<Data> {
        let trace = Trace::open(dir)?;
        let phase_names = hyscope_analyzer::phases::phase_names(&trace);
        let (a, s) = (dir.to_path_buf(), dir.to_path_buf());
        let (tx, rx) = std::sync::mpsc::channel();
        let t = trace.clone();
        let timeline = Loading::spawn(move || {
            open_timeline(&t, cache, &|_, _| {}, tx).map(|(index, _)| Arc::new(index))
        });
        Ok(Data {
            dir: dir.to_path_buf(),
            manifest: trace.manifest,
            analysis: Loading::spawn(move || load_analysis(&a, None)),
            timeline,
            overview: Latest::new(rx),
            series: Loading::spawn(move || samples::load_series(&s)),
            phase: None,
            phase_names,
            window: None,
            other: None,
        }
        .with_window())
    }

    /// Compare this trace (A) with the one in `dir` (B): B's analysis is
    /// started on its own thread (`blocking`: computed before returning,
    /// for the render tests); the Differences tab shows the comparison.
    pub fn compare_with(&mut self, dir: &Path, blocking: bool) -> anyhow::Result<()> {
        let mut other = Other::open(dir, blocking)?;
        if self.phase.is_some() {
            other.set_phase(self.phase.as_deref());
        }
        other.compare(self.analysis());
        self.other = Some(other);
        Ok(())
    }

    /// The comparison of the two traces, once both are analysed.
    pub fn comparison(&self) -> Option<&Comparison> {
        self.other.as_ref()?.comparison.as_ref()
    }

    /// Why there is no comparison (yet): B still analysed, its analysis
    /// failed, B without the phase A is restricted to, or A's analysis
    /// not there.
    pub fn comparison_status(&self) -> String {
        let Some(o) = &self.other else {
            return "no second trace: `hyscope tui A B` compares A with B".into();
        };
        if let Some(p) = &o.missing_phase {
            return format!(
                "{} has no phase \"{p}\": p / P for another phase or the whole run",
                o.dir.display()
            );
        }
        match &o.analysis {
            Loading::Pending(_) => format!("analysing {}…", o.dir.display()),
            Loading::Failed(e) => format!("analysis of {} failed: {e}", o.dir.display()),
            Loading::Ready(_) if self.analysis().is_none() => self.analysis_status(),
            Loading::Ready(_) => String::new(),
        }
    }

    /// Open the trace and load everything before returning (render tests).
    pub fn open_blocking(dir: &Path) -> anyhow::Result<Data> {
        let trace = Trace::open(dir)?;
        let phase_names = hyscope_analyzer::phases::phase_names(&trace);
        let (tx, rx) = std::sync::mpsc::channel();
        let timeline = open_timeline(&trace, false, &|_, _| {}, tx).map(|(i, _)| Arc::new(i));
        let mut overview = Latest::new(rx);
        overview.poll();
        Ok(Data {
            dir: dir.to_path_buf(),
            manifest: trace.manifest,
            analysis: Loading::from_result(load_analysis(dir, None)),
            timeline: Loading::from_result(timeline),
            overview,
            series: Loading::from_result(samples::load_series(dir)),
            phase: None,
            phase_names,
            window: None,
            other: None,
        }
        .with_window())
    }

    /// Restrict the analysis to `phase` (None: the whole run): analysed
    /// again in the background, every table follows.
    pub fn set_phase(&mut self, phase: Option<String>) {
        let dir = self.dir.clone();
        let p = phase.clone();
        self.analysis = Loading::spawn(move || load_analysis(&dir, p.as_deref()));
        if let Some(o) = &mut self.other {
            o.set_phase(phase.as_deref());
        }
        self.phase = phase;
    }

    /// Restrict to the next (`by` = 1) or previous (-1) phase name, through
    /// "the whole run" after the last.
    pub fn cycle_phase(&mut self, by: isize) {
        let names = &self.phase_names;
        if names.is_empty() {
            return;
        }
        // Position 0 is the whole run, k + 1 the k-th name.
        let n = names.len() as isize + 1;
        let at = self
            .phase
            .as_ref()
            .and_then(|p| names.iter().position(|x| x == p))
            .map_or(0, |k| k as isize + 1);
        let next = (at + by).rem_euclid(n);
        let phase = (next > 0).then(|| names[next as usize - 1].clone());
        self.set_phase(phase);
    }

    /// Take what the loader threads finished. True when something changed.
    pub fn poll(&mut self) -> bool {
        // Every one polled, none skipped by a short circuit.
        let changed = [
            self.analysis.poll(),
            self.overview.poll(),
            self.timeline.poll(),
            self.series.poll(),
            self.other.as_mut().is_some_and(|o| o.analysis.poll()),
        ];
        self.window = self.window.or_else(|| self.analysed_window());
        let a = self.analysis.ready().map(|a| a.as_ref());
        if let Some(o) = &mut self.other {
            o.compare(a);
        }
        changed.contains(&true)
    }

    fn with_window(mut self) -> Data {
        self.window = self.analysed_window();
        self
    }

    fn analysed_window(&self) -> Option<RunWindow> {
        self.analysis()
            .map(|a| a.run.window)
            .filter(|w| !w.is_empty())
    }

    /// The run's window ([`hyscope_analyzer::run_window`]: the report's
    /// duration), once the analysis has given it.
    pub fn run_window(&self) -> Option<RunWindow> {
        self.window
    }

    /// The time span a view opens on: the run's window, else (before the
    /// analysis, or without one) the timeline's span.
    pub fn home_span(&self) -> Option<(i64, i64)> {
        match (self.window, self.cells()) {
            (Some(w), _) => Some((w.start_ns, w.end_ns)),
            (None, Some(t)) => Some(t.span()),
            (None, None) => None,
        }
    }

    pub fn analysis(&self) -> Option<&Analysis> {
        self.analysis.ready().map(|a| a.as_ref())
    }

    pub fn analysis_status(&self) -> String {
        match &self.analysis {
            Loading::Pending(_) => match &self.phase {
                Some(p) => format!("analysing phase {p}…"),
                None => "analysing the trace…".into(),
            },
            Loading::Ready(_) => String::new(),
            Loading::Failed(e) => format!("analysis failed: {e}"),
        }
    }

    pub fn timeline(&self) -> Option<&TimelineIndex> {
        self.timeline_arc().map(|t| t.as_ref())
    }

    /// The coarse overview (the last one loaded).
    pub fn overview(&self) -> Option<&Overview> {
        self.coarse().map(|c| c.overview.as_ref())
    }

    /// The coarse overview and how many ranks it holds.
    pub fn coarse(&self) -> Option<&Arc<Coarse>> {
        self.overview.ready()
    }

    /// What the aggregated lines are computed from: the index when it is
    /// loaded, else the coarse overview.
    pub fn source(&self) -> Option<Source> {
        match (self.timeline_arc(), self.coarse()) {
            (Some(ix), _) => Some(Source::Index(Arc::clone(ix))),
            (None, Some(c)) => Some(Source::Coarse(Arc::clone(&c.overview))),
            (None, None) => None,
        }
    }

    /// What the timeline's lines are drawn from: the index when it is
    /// loaded, else the coarse overview.
    pub fn cells(&self) -> Option<&dyn RankCells> {
        match self.timeline() {
            Some(ix) => Some(ix),
            None => self.overview().map(|o| o as &dyn RankCells),
        }
    }

    /// The index, shareable with a worker thread.
    pub fn timeline_arc(&self) -> Option<&Arc<TimelineIndex>> {
        self.timeline.ready()
    }

    /// Series of metrics whose name starts with `prefix`, of the ranks not
    /// left out for a damaged part ([`Data::left_out`]).
    pub fn series(&self, prefix: &str) -> Vec<&Series> {
        let left_out = self.left_out();
        match &self.series {
            Loading::Ready(s) => s
                .iter()
                .filter(|x| x.metric.starts_with(prefix) && !left_out.contains(&x.rank))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The ranks left out for a damaged part, by the one rule
    /// (`hyscope_analyzer::damaged_parts`): as the timeline's reading pass
    /// found them, and as the analysis did once it is there.
    pub fn left_out(&self) -> Vec<u32> {
        let timeline = self.cells().map_or(&[][..], |c| c.left_out());
        let analysis = self.analysis().map_or(&[][..], |a| &a.ranks_left_out[..]);
        let mut ranks: Vec<u32> = timeline.iter().chain(analysis).map(|p| p.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Time origin of the timeline's ruler and of the charts: the start of
    /// the run's window, else of the timeline, else the first sample.
    pub fn origin(&self) -> i64 {
        if let Some((t0, _)) = self.home_span() {
            return t0;
        }
        match &self.series {
            Loading::Ready(s) => s
                .iter()
                .filter_map(|x| x.points.first().map(|p| p.0))
                .min()
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// The run's duration as the report gives it (its window's length, or
    /// the phase's time under a focus), else the timeline's span.
    pub fn duration_ns(&self) -> Option<f64> {
        if let Some(a) = self.analysis() {
            return Some(a.run.duration_s * 1e9);
        }
        self.home_span().map(|(a, b)| (b - a) as f64)
    }

    /// Why the timeline index could not be built (the damaged file named),
    /// if it could not: the timeline then shows this, never the coarse
    /// overview of the ranks read before the failure.
    pub fn timeline_failure(&self) -> Option<&str> {
        match &self.timeline {
            Loading::Failed(e) => Some(e),
            _ => None,
        }
    }

    pub fn timeline_status(&self) -> String {
        match &self.timeline {
            Loading::Pending(_) => "building the timeline index…".into(),
            Loading::Ready(_) => String::new(),
            Loading::Failed(e) => format!("timeline unavailable: {e}"),
        }
    }

    /// The overview cache's warning (a damaged file, named), if any.
    pub fn overview_warning(&self) -> Option<&str> {
        self.coarse().and_then(|c| c.warning.as_deref())
    }
}

fn load_analysis(dir: &Path, phase: Option<&str>) -> Result<Box<Analysis>, String> {
    let options = AnalyzeOptions {
        phase: phase.map(str::to_string),
        ..AnalyzeOptions::default()
    };
    crate::loading::in_background(|| hyscope_analyzer::analyze(dir, &options))
        .map(Box::new)
        .map_err(|e| format!("{e}"))
}

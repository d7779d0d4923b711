//! What the TUI shows: the manifest (read at start, cheap), the analyzer's
//! results and its timeline index (both computed on a background thread so the
//! first frame does not wait for them).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, TryRecvError};

use hyscope_format::{Manifest, Trace};

use super::series::Series;
use super::timeline::TimelineIndex;

pub use hyscope_analyzer::Analysis;

pub enum Loading<T> {
    Pending(String),
    Ready(T),
    Failed(String),
}

/// Results arriving from the loader thread.
pub enum Loaded {
    Analysis(Result<Box<Analysis>, String>),
    Timeline(Result<Box<TimelineIndex>, String>),
    Series(Result<Vec<Series>, String>),
}

pub struct Data {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub analysis: Loading<Box<Analysis>>,
    pub timeline: Loading<Arc<TimelineIndex>>,
    /// Sampled metrics over time (memory, queues, energy charts).
    pub series: Loading<Vec<Series>>,
    rx: Option<Receiver<Loaded>>,
}

impl Data {
    /// Open the trace (manifest only) and start the loader thread.
    pub fn open(dir: &Path) -> anyhow::Result<Data> {
        let trace = Trace::open(dir)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.to_path_buf();
        let tx2 = tx.clone();
        std::thread::Builder::new()
            .name("hyscope-tui-analysis".into())
            .spawn(move || {
                let _ = tx.send(Loaded::Analysis(super::model::load_analysis(&d)));
            })?;
        let d = dir.to_path_buf();
        std::thread::Builder::new()
            .name("hyscope-tui-timeline".into())
            .spawn(move || {
                // The samples table is small: read it first, then build the index.
                let _ = tx2.send(Loaded::Series(super::series::load_series(&d)));
                let _ = tx2.send(Loaded::Timeline(super::model::load_timeline(&d)));
            })?;
        Ok(Data {
            dir: dir.to_path_buf(),
            manifest: trace.manifest,
            analysis: Loading::Pending("analysing the trace…".into()),
            timeline: Loading::Pending("building the timeline index…".into()),
            series: Loading::Pending("reading the samples…".into()),
            rx: Some(rx),
        })
    }

    /// Open the trace and load everything before returning (render tests).
    #[allow(dead_code)]
    pub fn open_blocking(dir: &Path) -> anyhow::Result<Data> {
        let trace = Trace::open(dir)?;
        Ok(Data {
            dir: dir.to_path_buf(),
            manifest: trace.manifest,
            analysis: into_loading(super::model::load_analysis(dir)),
            timeline: into_loading(super::model::load_timeline(dir).map(Arc::from)),
            series: into_loading(super::series::load_series(dir)),
            rx: None,
        })
    }

    /// Take what the loader threads finished. True when something changed.
    pub fn poll(&mut self) -> bool {
        let Some(rx) = &self.rx else { return false };
        let mut changed = false;
        loop {
            match rx.try_recv() {
                Ok(Loaded::Analysis(r)) => {
                    self.analysis = into_loading(r);
                    changed = true;
                }
                Ok(Loaded::Timeline(r)) => {
                    self.timeline = into_loading(r.map(Arc::from));
                    changed = true;
                }
                Ok(Loaded::Series(r)) => {
                    self.series = into_loading(r);
                    changed = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.rx = None;
                    break;
                }
            }
        }
        changed
    }

    pub fn analysis(&self) -> Option<&Analysis> {
        match &self.analysis {
            Loading::Ready(a) => Some(a),
            _ => None,
        }
    }

    pub fn analysis_status(&self) -> String {
        match &self.analysis {
            Loading::Pending(m) => m.clone(),
            Loading::Ready(_) => String::new(),
            Loading::Failed(e) => format!("analysis failed: {e}"),
        }
    }

    pub fn timeline(&self) -> Option<&TimelineIndex> {
        self.timeline_arc().map(|t| t.as_ref())
    }

    /// The index, shareable with a worker thread.
    pub fn timeline_arc(&self) -> Option<&Arc<TimelineIndex>> {
        match &self.timeline {
            Loading::Ready(t) => Some(t),
            _ => None,
        }
    }

    /// Series of metrics whose name starts with `prefix`.
    pub fn series(&self, prefix: &str) -> Vec<&Series> {
        match &self.series {
            Loading::Ready(s) => s.iter().filter(|x| x.metric.starts_with(prefix)).collect(),
            _ => Vec::new(),
        }
    }

    /// Time origin of the charts: the start of the timeline, else the first sample.
    pub fn origin(&self) -> i64 {
        if let Some(t) = self.timeline() {
            return t.span().0;
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

    pub fn timeline_status(&self) -> String {
        match &self.timeline {
            Loading::Pending(m) => m.clone(),
            Loading::Ready(_) => String::new(),
            Loading::Failed(e) => format!("timeline unavailable: {e}"),
        }
    }
}

fn into_loading<T>(r: Result<T, String>) -> Loading<T> {
    match r {
        Ok(v) => Loading::Ready(v),
        Err(e) => Loading::Failed(e),
    }
}

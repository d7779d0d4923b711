//! Loading the analyzer's results and its timeline index for the TUI.

use std::path::Path;

use hyscope_analyzer::timeline::TimelineIndex;
use hyscope_analyzer::{Analysis, AnalyzeOptions};

use super::app::App;

pub fn load_analysis(dir: &Path) -> Result<Box<Analysis>, String> {
    hyscope_analyzer::analyze(dir, &AnalyzeOptions::default())
        .map(Box::new)
        .map_err(|e| format!("{e}"))
}

pub fn load_timeline(dir: &Path) -> Result<Box<TimelineIndex>, String> {
    let trace = hyscope_format::Trace::open(dir).map_err(|e| format!("{e}"))?;
    TimelineIndex::build(&trace)
        .map(Box::new)
        .map_err(|e| format!("{e}"))
}

/// Run duration for the Summary: the analysis', else the timeline's span.
pub fn duration_ns(app: &App) -> Option<f64> {
    if let Some(a) = app.data.analysis() {
        return Some(a.run.duration_s * 1e9);
    }
    app.data.timeline().map(|t| {
        let (a, b) = t.span();
        (b - a) as f64
    })
}

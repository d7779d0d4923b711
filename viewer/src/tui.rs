//! `hyscope tui <trace> [<other>]`: explore a trace in the terminal, and
//! with a second trace its differences from it (`hyscope report A B`'s).
//!
//! The first frame shows the run facts from the manifest at once; the analysis
//! and the timeline's level-of-detail index are computed on background threads
//! and appear when ready. Every redraw reads only those in-memory results, never
//! the trace files.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use crossterm::execute;

pub mod app;
pub mod chart;
pub mod data;
pub mod differences;
pub mod draw;
pub mod energy;
pub mod fmt;
pub mod loops;
pub mod memory;
pub mod mpi;
pub mod openmp;
pub mod scroll;
pub mod summary;
pub mod timeline;
pub mod widgets;

#[derive(clap::Args)]
pub struct Args {
    /// The trace directory (written by `hyscope record`).
    pub trace: PathBuf,
    /// A second trace (B) to compare the first (A) with: a Differences tab
    /// shows what `hyscope report A B` prints.
    pub other: Option<PathBuf>,
    /// The same as OTHER, as `hyscope gui A --compare B` takes it.
    #[arg(long, value_name = "B", conflicts_with = "other")]
    pub compare: Option<PathBuf>,
    /// Print to stderr on exit: the time to the first frame, to the first
    /// frame with the timeline, and of each redraw (BENCHMARKS.md).
    #[arg(long)]
    pub timing: bool,
    /// Always rebuild the timeline index instead of loading it from the cache
    /// (`$HYSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hyscope`, else `~/.cache/hyscope`).
    #[arg(long)]
    pub no_cache: bool,
    /// Start with every tab restricted to this phase (`p` steps through them).
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut data = data::Data::open(&args.trace, !args.no_cache)?;
    if let Some(p) = &args.phase {
        anyhow::ensure!(
            data.phase_names.contains(p),
            "{}: no phase named \"{p}\"; its phases: {}",
            args.trace.display(),
            data.phase_names.join(", ")
        );
        data.set_phase(Some(p.clone()));
    }
    if let Some(b) = args.other.as_ref().or(args.compare.as_ref()) {
        data.compare_with(b, false)?;
    }
    let mut app = app::App::new(data);

    let mut terminal = ratatui::try_init()?;
    let _ = execute!(std::io::stdout(), EnableMouseCapture);
    let result = event_loop(&mut terminal, &mut app, started);
    let _ = execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    let timings = result?;
    if args.timing {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "hyscope-tui: first frame {:.1} ms",
            timings.first_frame_ms
        );
        for (what, t) in [
            ("timeline index ready", timings.timeline_ms),
            ("timeline overview ready", timings.overview_ms),
            (
                "first frame with the coarse timeline",
                timings.coarse_frame_ms,
            ),
            ("first frame with the timeline", timings.timeline_frame_ms),
            (
                "first frame with the aggregated lines",
                timings.lines_frame_ms,
            ),
            ("whole timeline overview ready", timings.overview_whole_ms),
        ] {
            if let Some(t) = t {
                let _ = writeln!(err, "hyscope-tui: {what} {t:.1} ms");
            }
        }
        for (coarse, ms) in &timings.aggregate_ms {
            let from = if *coarse { "coarse overview" } else { "index" };
            let _ = writeln!(
                err,
                "hyscope-tui: aggregated lines computed in {ms:.1} ms (worker, from the {from})"
            );
        }
        if let Some(t) = timings.analysis_ms {
            let _ = writeln!(err, "hyscope-tui: analysis ready {t:.1} ms");
        }
        for (what, ms) in &timings.redraws {
            let _ = writeln!(err, "hyscope-tui: redraw after {what} {ms:.2} ms");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Timings {
    first_frame_ms: f64,
    timeline_ms: Option<f64>,
    /// The first coarse overview loaded (maybe of some ranks only).
    overview_ms: Option<f64>,
    /// The coarse overview of every rank loaded.
    overview_whole_ms: Option<f64>,
    /// The end of the first draw of the Timeline tab with the overview
    /// only (or the index, if it came first).
    coarse_frame_ms: Option<f64>,
    /// The end of the first draw of the Timeline tab with the index loaded.
    timeline_frame_ms: Option<f64>,
    /// Each aggregation finished: (from the coarse overview, ms).
    aggregate_ms: Vec<(bool, f64)>,
    /// The end of the first draw with aggregated lines computed.
    lines_frame_ms: Option<f64>,
    analysis_ms: Option<f64>,
    redraws: Vec<(String, f64)>,
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut app::App,
    started: Instant,
) -> anyhow::Result<Timings> {
    let mut timings = Timings::default();
    terminal.draw(|f| draw::draw(f, app))?;
    timings.first_frame_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut cause = String::new();
    loop {
        let mut dirty = false;
        if event::poll(Duration::from_millis(100))? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    app.on_key(k);
                    cause = format!("{:?}", k.code);
                    dirty = true;
                }
                Event::Mouse(m) => {
                    app.on_mouse(m);
                    cause = format!("{:?}", m.kind);
                    dirty = true;
                }
                Event::Resize(..) => {
                    cause = "resize".into();
                    dirty = true;
                }
                _ => {}
            }
        }
        if app.quit {
            return Ok(timings);
        }
        let coarse_before = app.timeline.group_lines.computed_coarse;
        if app.timeline.group_lines.poll() {
            cause = "aggregated lines".into();
            let coarse = app.timeline.group_lines.computed_coarse > coarse_before;
            timings.aggregate_ms.extend(
                app.timeline
                    .group_lines
                    .last_compute_ms
                    .map(|ms| (coarse, ms)),
            );
            dirty = true;
        }
        if app.timeline.detail.poll() {
            cause = format!(
                "cursor details (read in {:.1} ms)",
                app.timeline.detail.last_read_ms.unwrap_or(0.0)
            );
            dirty = true;
        }
        let span_before = app.data.cells().map(|c| c.span());
        if app.data.poll() {
            let now = started.elapsed().as_secs_f64() * 1e3;
            if app.data.overview().is_some() && timings.overview_ms.is_none() {
                timings.overview_ms = Some(now);
            }
            if app.data.coarse().is_some_and(|c| c.ranks_note().is_empty())
                && timings.overview_whole_ms.is_none()
            {
                timings.overview_whole_ms = Some(now);
            }
            // The window is the whole run once the overview or the index
            // exists, and follows it while the overview grows rank by rank
            // and the user has not moved it (the whole overview's span is
            // the index's: no jump).
            let window = (app.timeline.t0, app.timeline.t1);
            if let Some(t) = app.data.cells()
                && (window.1 <= window.0 || Some(window) == span_before)
            {
                (app.timeline.t0, app.timeline.t1) = t.span();
            }
            if app.data.timeline().is_some() && timings.timeline_ms.is_none() {
                timings.timeline_ms = Some(now);
            }
            if app.data.analysis().is_some() && timings.analysis_ms.is_none() {
                timings.analysis_ms = Some(now);
            }
            cause = "data loaded".into();
            dirty = true;
        }
        if dirty {
            let t = Instant::now();
            terminal.draw(|f| draw::draw(f, app))?;
            timings
                .redraws
                .push((std::mem::take(&mut cause), t.elapsed().as_secs_f64() * 1e3));
            if timings.lines_frame_ms.is_none() && !timings.aggregate_ms.is_empty() {
                timings.lines_frame_ms = Some(started.elapsed().as_secs_f64() * 1e3);
            }
            // The first frame drawing the timeline's lines (aggregated
            // lines computed, or ranks one per line).
            if timings.coarse_frame_ms.is_none()
                && app.tab == app::Tab::Timeline
                && app.data.cells().is_some()
                && (app.timeline.group_lines.lines().is_some()
                    || !app.timeline.aggregated(&app.data, &app.filter))
            {
                timings.coarse_frame_ms = Some(started.elapsed().as_secs_f64() * 1e3);
            }
            if timings.timeline_frame_ms.is_none()
                && app.tab == app::Tab::Timeline
                && app.data.timeline().is_some()
            {
                timings.timeline_frame_ms = Some(started.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
}

//! `hyscope gui <trace> [--compare B]`: the desktop timeline explorer (egui/eframe).
//!
//! Modules: [`data`] loads what the timeline needs in background threads (the
//! level-of-detail index of `hyscope_analyzer::timeline`, symbols, counters,
//! matched messages) and the analysis; [`timeline`] draws and drives the
//! timeline; [`panels`] renders the analysis (and, with two traces open, their
//! differences as `hyscope report A B` gives them); [`app`] is the layout,
//! shortcuts, search, themes, compare mode and the screenshot/benchmark modes.

use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(feature = "gui")]
mod app;
#[cfg(feature = "gui")]
mod data;
#[cfg(feature = "gui")]
mod panels;
#[cfg(all(test, feature = "gui"))]
mod tests;
#[cfg(feature = "gui")]
mod timeline;

#[derive(clap::Args)]
#[cfg_attr(not(feature = "gui"), allow(dead_code))]
pub struct Args {
    /// Trace directory to open.
    pub trace: PathBuf,
    /// A second trace to compare with, shown below on an aligned time axis.
    #[arg(long, value_name = "B")]
    pub compare: Option<PathBuf>,
    /// Save the window as a PPM image after `--quit-after-frames` frames, then quit
    /// (loads everything before the first frame).
    #[arg(long, value_name = "FILE")]
    pub screenshot: Option<PathBuf>,
    /// Frames to draw before the screenshot (or before quitting in `--bench`).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub quit_after_frames: u64,
    /// Benchmark: zoom and pan for N frames once loaded, print time to first
    /// frame, frame times and peak memory, then quit.
    #[arg(long, value_name = "N")]
    pub bench: Option<u64>,
    /// Do not run the analysis (timeline only).
    #[arg(long)]
    pub no_analysis: bool,
    /// Always rebuild the timeline index instead of loading it from the cache
    /// (`$HYSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hyscope`, else `~/.cache/hyscope`).
    #[arg(long)]
    pub no_cache: bool,
    /// Start with the light theme (T toggles).
    #[arg(long)]
    pub light: bool,
    /// Start in stacked-shares mode (M toggles).
    #[arg(long)]
    pub shares: bool,
    /// Window size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x800")]
    pub size: String,
    /// Start with the analysis restricted to this phase (the "phase" box).
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
}

#[cfg(not(feature = "gui"))]
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    eprintln!("hyscope: this hyscope was built without the `gui` feature");
    Ok(ExitCode::from(crate::partial::FAILED))
}

#[cfg(feature = "gui")]
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use std::time::Instant;

    use anyhow::Context as _;
    use eframe::egui;

    let started = Instant::now();
    // Opened once here (a clear message when it cannot be), then shared
    // with the loaders: with thousands of ranks an open lists every part.
    let trace = hyscope_format::Trace::open(&args.trace)?;
    let compare = args
        .compare
        .as_deref()
        .map(hyscope_format::Trace::open)
        .transpose()?;
    let (w, h) = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<f32>().ok()?, h.parse::<f32>().ok()?)))
        .context("--size must be WIDTHxHEIGHT")?;
    let mut gui = app::GuiApp::new(trace, compare, !args.no_analysis, !args.no_cache);
    if let Some(p) = &args.phase {
        anyhow::ensure!(
            gui.slots[0].phase_names.contains(p),
            "{}: no phase named \"{p}\"; its phases: {}",
            args.trace.display(),
            gui.slots[0].phase_names.join(", ")
        );
        gui.slots[0].set_phase(Some(p.clone()));
    }
    gui.dark = !args.light;
    gui.tl.shares = args.shares;
    if let Some(path) = &args.screenshot {
        gui.wait_loaded();
        gui.tl.wait_aggregates = true;
        gui.screenshot = Some(app::Screenshot::new(path.clone(), args.quit_after_frames));
    }
    let error = gui
        .screenshot
        .as_ref()
        .map(|s| std::sync::Arc::clone(&s.error));
    let saved = gui
        .screenshot
        .as_ref()
        .map(|s| std::sync::Arc::clone(&s.saved));
    let bench = args.bench.map(|n| Bench::new(n, started));
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([w, h])
            .with_title(format!("hyscope — {}", args.trace.display())),
        renderer: eframe::Renderer::Glow,
        ..Default::default()
    };
    let result = eframe::run_native(
        "hyscope",
        options,
        Box::new(move |_cc| Ok(Box::new(Runner { gui, bench }))),
    );
    result.map_err(|e| anyhow::anyhow!("cannot open a window: {e}"))?;
    if let Some(e) = error.and_then(|e| e.lock().ok().and_then(|g| g.clone())) {
        anyhow::bail!("screenshot: {e}");
    }
    if let Some(saved) = saved
        && !saved.load(std::sync::atomic::Ordering::Relaxed)
    {
        anyhow::bail!("the window closed before the screenshot was taken");
    }
    Ok(ExitCode::SUCCESS)
}

/// The eframe app: the GUI plus the benchmark driver.
#[cfg(feature = "gui")]
struct Runner {
    gui: app::GuiApp,
    bench: Option<Bench>,
}

#[cfg(feature = "gui")]
impl eframe::App for Runner {
    fn ui(&mut self, ui: &mut eframe::egui::Ui, frame: &mut eframe::Frame) {
        if let Some(b) = &mut self.bench {
            b.before(&mut self.gui, frame.info().cpu_usage);
        }
        self.gui.ui(ui);
        if let Some(b) = &mut self.bench {
            b.after(&self.gui, ui.ctx());
        }
    }
}

/// `--bench N`: once the timeline is drawn, zoom in and out and pan every
/// frame, measuring the interval between frames (build + tessellation +
/// software rendering of the previous frame) and the time in our UI code.
#[cfg(feature = "gui")]
struct Bench {
    frames: u64,
    started: std::time::Instant,
    first_frame_s: Option<f64>,
    /// The first frame after one that drew the coarse overview (or the timeline).
    coarse_s: Option<f64>,
    timeline_s: Option<f64>,
    last: Option<std::time::Instant>,
    intervals_ms: Vec<f64>,
    /// eframe's measure of the previous frame: UI + tessellation + rendering, without vsync waits.
    frame_ms: Vec<f64>,
    ui_ms: Vec<f64>,
    query_ms: Vec<f64>,
    rects: Vec<f64>,
    /// Aggregated lines: (computations seen, ms of each on the worker).
    aggregates: (u64, Vec<f64>),
    step: u64,
    done: bool,
}

#[cfg(feature = "gui")]
impl Bench {
    fn new(frames: u64, started: std::time::Instant) -> Bench {
        Bench {
            frames,
            started,
            first_frame_s: None,
            coarse_s: None,
            timeline_s: None,
            last: None,
            intervals_ms: Vec::new(),
            frame_ms: Vec::new(),
            ui_ms: Vec::new(),
            query_ms: Vec::new(),
            rects: Vec::new(),
            aggregates: (0, Vec::new()),
            step: 0,
            done: false,
        }
    }

    fn before(&mut self, gui: &mut app::GuiApp, previous_frame_s: Option<f32>) {
        let now = std::time::Instant::now();
        self.first_frame_s
            .get_or_insert(self.started.elapsed().as_secs_f64());
        if gui.first_coarse_frame_s.is_some() {
            self.coarse_s
                .get_or_insert(self.started.elapsed().as_secs_f64());
        }
        if gui.first_timeline_frame_s.is_none() {
            return;
        }
        self.timeline_s
            .get_or_insert(self.started.elapsed().as_secs_f64());
        if let Some(last) = self.last {
            self.intervals_ms
                .push(now.duration_since(last).as_secs_f64() * 1e3);
            if let Some(f) = previous_frame_s {
                self.frame_ms.push(f64::from(f) * 1e3);
            }
        }
        self.last = Some(now);
        // 40 frames zooming in around the middle, 40 panning, 40 zooming out.
        let c = (gui.view.t0 + gui.view.t1) / 2.0;
        match (self.step / 40) % 3 {
            0 => gui.view.zoom(0.9, c),
            1 => {
                let w = gui.view.width();
                gui.view.pan(w * 0.05)
            }
            _ => gui.view.zoom(1.0 / 0.9, c),
        }
        self.step += 1;
    }

    fn after(&mut self, gui: &app::GuiApp, ctx: &eframe::egui::Context) {
        if self.done {
            return;
        }
        if gui.first_timeline_frame_s.is_none() {
            ctx.request_repaint();
            return;
        }
        self.ui_ms.push(gui.last_frame_ms);
        self.query_ms.push(gui.tl.query_ms);
        self.rects.push(gui.tl.rects_drawn as f64);
        if let Some(g) = gui.tl.group_lines.first()
            && g.computed > self.aggregates.0
        {
            self.aggregates.0 = g.computed;
            self.aggregates.1.extend(g.last_compute_ms);
        }
        if self.intervals_ms.len() as u64 >= self.frames {
            // Times with two decimals, counts (rectangles) with none.
            let quantiles = |v: &mut Vec<f64>, unit: &str, decimals: usize| {
                v.sort_by(f64::total_cmp);
                let q = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
                format!(
                    "median {:.decimals$}{unit}, p95 {:.decimals$}{unit}, max {:.decimals$}{unit}",
                    q(0.5),
                    q(0.95),
                    q(1.0)
                )
            };
            let stats = |v: &mut Vec<f64>| quantiles(v, " ms", 2);
            let hwm = hyscope_format::proc_status::peak_rss()
                .map_or_else(|| "unknown".to_string(), |b| crate::units::bytes(b as f64));
            let rows = gui.slots[0]
                .data
                .ready()
                .map_or(0, |d| d.index.rows().len());
            let segments = gui.slots[0].data.ready().map_or(0, |d| d.index.segments());
            let index_mb = gui.slots[0]
                .data
                .ready()
                .map_or(0, |d| d.index.heap_bytes()) as f64
                / 1e6;
            println!("first frame: {:.3} s", self.first_frame_s.unwrap_or(0.0));
            println!(
                "first frame with the coarse timeline: {:.3} s",
                self.coarse_s.unwrap_or(0.0)
            );
            println!(
                "first frame with the timeline: {:.3} s",
                self.timeline_s.unwrap_or(0.0)
            );
            let (cached, index_s) = gui.slots[0]
                .data
                .ready()
                .map_or((false, 0.0), |d| (d.index_cached, d.index_s));
            println!(
                "rows: {rows}, segments: {segments}, index: {index_mb:.1} MB, {} in {index_s:.3} s",
                if cached { "loaded from cache" } else { "built" }
            );
            println!(
                "frame interval ({} frames zooming/panning): {}",
                self.intervals_ms.len(),
                stats(&mut self.intervals_ms)
            );
            println!(
                "frame time (UI + tessellation + software rendering, no vsync wait): {}",
                stats(&mut self.frame_ms)
            );
            println!("UI code per frame: {}", stats(&mut self.ui_ms));
            println!("  of which index queries: {}", stats(&mut self.query_ms));
            println!("  rectangles drawn: {}", quantiles(&mut self.rects, "", 0));
            if !self.aggregates.1.is_empty() {
                println!(
                    "aggregated lines ({} computations, off the UI thread): {}",
                    self.aggregates.1.len(),
                    stats(&mut self.aggregates.1)
                );
            }
            println!("peak memory: {hwm}");
            self.done = true;
            ctx.send_viewport_cmd(eframe::egui::ViewportCommand::Close);
        }
        ctx.request_repaint();
    }
}

//! The GUI application: layout, keyboard shortcuts, search, themes, compare
//! mode, and the screenshot mode used by the Xvfb test.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use eframe::egui::{self, Color32, Key, Pos2, Rect, Vec2};
use hyscope_analyzer::timeline::{RankCells, STATES, State};
use hyscope_analyzer::{Analysis, RunWindow};
use hyscope_format::Trace;

use super::data::{self, Progress, TraceData};
use super::panels::differences::{self, Differences};
use super::panels::{self, Action, Tab};
use super::timeline::{self, TimelineState, View, state_color};
use crate::loading::{Coarse, Latest, Loading};
use crate::units;

const NO_ANALYSIS: &str = "analysis not run (--no-analysis)";

/// One opened trace.
pub struct TraceSlot {
    pub path: PathBuf,
    pub data: Loading<Arc<TraceData>>,
    /// The coarse overview of the timeline, drawn until the data is loaded:
    /// read from its cache before the index, or of the ranks read so far
    /// while the index is built (on the data's thread).
    pub overview: Latest<Arc<Coarse>>,
    pub progress: Arc<Progress>,
    pub analysis: Loading<Arc<Analysis>>,
    /// The phase the analysis is restricted to, if any.
    pub phase: Option<String>,
    /// The trace's phase names in order of first start.
    pub phase_names: Vec<String>,
    /// The interval of `phase` the timeline was last zoomed to.
    phase_frame: Option<usize>,
    with_analysis: bool,
    /// The run's window, from the first analysis loaded (kept while a phase
    /// is analysed again: the whole run's window does not change).
    window: Option<RunWindow>,
}

impl TraceSlot {
    /// Load the timeline of the opened `trace` in the background (the
    /// trace is not opened again: with thousands of ranks an open lists
    /// every part file).
    pub fn open(trace: Trace, with_analysis: bool, cache: bool) -> TraceSlot {
        let progress = Arc::new(Progress::default());
        let p = Arc::clone(&progress);
        let path = trace.dir.clone();
        let phase_names = hyscope_analyzer::phases::phase_names(&trace);
        let (tx, rx) = std::sync::mpsc::channel();
        let data = Loading::spawn(move || data::load_trace(&trace, &p, cache, tx).map(Arc::new));
        TraceSlot {
            data,
            overview: Latest::new(rx),
            progress,
            analysis: if with_analysis {
                data::spawn_analysis(path.clone(), None)
            } else {
                Loading::Failed(NO_ANALYSIS.into())
            },
            path,
            phase: None,
            phase_names,
            phase_frame: None,
            with_analysis,
            window: None,
        }
    }

    /// Take the run's window from the analysis once it is loaded.
    fn poll_window(&mut self) {
        if self.window.is_none() {
            self.window = self
                .analysis
                .ready()
                .map(|a| a.run.window)
                .filter(|w| !w.is_empty());
        }
    }

    /// The run's window ([`hyscope_analyzer::run_window`]: the report's
    /// duration), once the analysis has given it.
    pub fn run_window(&self) -> Option<RunWindow> {
        self.window
    }

    /// The run's window relative to the origin, once the analysis gave it.
    fn run_window_view(&self) -> Option<View> {
        self.run_window()?;
        self.home_view()
    }

    /// The view this trace's timeline opens on, relative to its origin (the
    /// timeline's first event): the run's window, else (before the analysis,
    /// or without one) the whole timeline. None while nothing is loaded.
    pub fn home_view(&self) -> Option<View> {
        let (origin, end) = self.shown_span()?;
        Some(match self.window {
            Some(w) => View {
                t0: (w.start_ns - origin) as f64,
                t1: (w.end_ns - origin) as f64,
            },
            None => View {
                t0: 0.0,
                t1: (end - origin) as f64,
            },
        })
    }

    /// The span of the timeline shown: the index's, else the overview's; None
    /// while neither is loaded (or if the data failed to load).
    pub fn shown_span(&self) -> Option<(i64, i64)> {
        match (&self.data, self.overview.ready()) {
            (Loading::Ready(d), _) => Some(d.index.span()),
            (Loading::Pending(_), Some(o)) => Some(o.overview.span()),
            (Loading::Failed(_), _) => Some((0, 1)),
            (Loading::Pending(_), None) => None,
        }
    }

    /// Restrict the analysis to `phase` (None: the whole run), analysed
    /// again in the background.
    pub fn set_phase(&mut self, phase: Option<String>) {
        if self.with_analysis {
            self.analysis = data::spawn_analysis(self.path.clone(), phase.clone());
        }
        self.phase = phase;
        self.phase_frame = None;
    }

    /// The next interval of the chosen phase (all ranks' merged) relative to
    /// the timeline's origin, with a twentieth of margin on each side.
    pub fn next_phase_frame(&mut self) -> Option<View> {
        let name = self.phase.as_ref()?;
        let d = self.data.ready()?;
        let windows = d.phases.windows(name);
        if windows.is_empty() {
            return None;
        }
        let k = self.phase_frame.map_or(0, |k| (k + 1) % windows.len());
        self.phase_frame = Some(k);
        let (a, b) = windows[k];
        let origin = d.index.span().0;
        let margin = ((b - a) / 20).max(1);
        Some(View {
            t0: (a - margin - origin) as f64,
            t1: (b + margin - origin) as f64,
        })
    }

    fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// Screenshot mode: after `frames` frames, save the window to `path` and quit.
pub struct Screenshot {
    pub path: PathBuf,
    pub frames: u64,
    requested: bool,
    pub saved: Arc<AtomicBool>,
    pub error: Arc<Mutex<Option<String>>>,
}

impl Screenshot {
    pub fn new(path: PathBuf, frames: u64) -> Screenshot {
        Screenshot {
            path,
            frames,
            requested: false,
            saved: Arc::new(AtomicBool::new(false)),
            error: Arc::new(Mutex::new(None)),
        }
    }
}

pub struct GuiApp {
    pub slots: Vec<TraceSlot>,
    pub view: View,
    view_set: bool,
    /// The view at the last fit to the run (the view follows it until moved).
    fitted: Option<View>,
    pub tl: TimelineState,
    pub tab: Tab,
    /// Whose analysis the side panel shows (0 = A, 1 = B).
    pub analysis_of: usize,
    pub search: String,
    search_results: Vec<(String, u64)>,
    pub dark: bool,
    /// Instances being found, per trace (both for a location of the
    /// differences), and what they are.
    pending_highlight: Vec<(usize, String, Loading<Vec<data::Instance>>)>,
    /// The "Differences" tab's sort and comparison.
    pub differences: Differences,
    pub screenshot: Option<Screenshot>,
    pub frames: u64,
    started: Instant,
    /// Seconds from start to the first frame that drew a timeline.
    pub first_timeline_frame_s: Option<f64>,
    /// Seconds from start to the first frame that drew a timeline, the
    /// coarse overview or the detailed one.
    pub first_coarse_frame_s: Option<f64>,
    pub last_frame_ms: f64,
    pub show_counters: bool,
    focus_search: bool,
    /// The window listing every key and mouse gesture (`?`, F1).
    pub show_keys: bool,
}

/// Every key and mouse gesture of the window, as the "Keys" window lists
/// them (`GuiApp::keyboard` reacts to these keys).
pub const KEYS: [(&str, &str); 15] = [
    ("wheel", "zoom around the pointer"),
    ("drag", "pan"),
    ("shift-drag, right-drag", "select a time range"),
    ("W, +, =", "zoom in"),
    ("S, -", "zoom out"),
    ("A, Left arrow", "pan left"),
    ("D, Right arrow", "pan right"),
    ("Home, 0", "fit the whole run"),
    ("Z", "zoom to the selection"),
    ("Esc", "clear the selection, pick, highlight and rank pair"),
    ("T", "dark or light theme"),
    ("C", "show or hide the counters"),
    ("M", "stacked shares or dominant state"),
    ("Ctrl+F", "search"),
    ("?, F1", "this list of keys"),
];

impl GuiApp {
    /// Show the opened trace `a` (and `b` to compare); `with_analysis`: run
    /// the analyzer for the panels; `cache`: use the on-disk caches.
    pub fn new(a: Trace, b: Option<Trace>, with_analysis: bool, cache: bool) -> GuiApp {
        let mut slots = vec![TraceSlot::open(a, with_analysis, cache)];
        if let Some(b) = b {
            slots.push(TraceSlot::open(b, with_analysis, cache));
        }
        // Two traces open on what differs between them (and why they may
        // not compare).
        let tab = if slots.len() > 1 {
            Tab::Differences
        } else {
            Tab::Summary
        };
        GuiApp {
            slots,
            view: View { t0: 0.0, t1: 1.0 },
            view_set: false,
            fitted: None,
            tl: TimelineState::default(),
            tab,
            analysis_of: 0,
            search: String::new(),
            search_results: Vec::new(),
            dark: true,
            pending_highlight: Vec::new(),
            differences: Differences::default(),
            screenshot: None,
            frames: 0,
            started: Instant::now(),
            first_timeline_frame_s: None,
            first_coarse_frame_s: None,
            last_frame_ms: 0.0,
            show_counters: true,
            focus_search: false,
            show_keys: false,
        }
    }

    /// Block until the timeline data (and the analysis) are loaded.
    pub fn wait_loaded(&mut self) {
        for s in &mut self.slots {
            s.data.wait();
            s.analysis.wait();
            s.poll_window();
        }
    }

    /// The view the timelines open on: each trace's run window (relative
    /// ns, [`TraceSlot::home_view`]), all of them when two are compared.
    fn home(&self) -> View {
        let views: Vec<View> = self.slots.iter().filter_map(|s| s.home_view()).collect();
        let t0 = views.iter().map(|v| v.t0).fold(f64::INFINITY, f64::min);
        let t1 = views.iter().map(|v| v.t1).fold(f64::NEG_INFINITY, f64::max);
        if t0.is_finite() && t1 > t0 {
            View { t0, t1 }
        } else {
            View { t0: 0.0, t1: 1.0 }
        }
    }

    pub fn fit(&mut self) {
        let home = self.home();
        self.fitted = Some(home);
        self.view = home;
    }

    /// Time per state of trace `which` over all rows in the range selection.
    pub fn range_summary(&self, which: usize) -> Option<[u64; STATES]> {
        let (a, b) = self.tl.range?;
        let d = self.slots.get(which)?.data.ready()?;
        let origin = d.index.span().0;
        let mut total = [0u64; STATES];
        for row in 0..d.index.rows().len() {
            let s = d.index.summary(row, origin + a as i64, origin + b as i64);
            for (t, v) in total.iter_mut().zip(s.time) {
                *t += v;
            }
        }
        Some(total)
    }

    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let frame_start = Instant::now();
        let ctx = ui.ctx().clone();
        ctx.set_theme(if self.dark {
            egui::Theme::Dark
        } else {
            egui::Theme::Light
        });
        let mut loading = false;
        for s in &mut self.slots {
            s.overview.poll();
            s.data.poll();
            s.analysis.poll();
            s.poll_window();
            loading |= s.data.is_pending() || s.analysis.is_pending();
        }
        // Fitted to the run once there is something to show; refitted while
        // the overview grows rank by rank if the user has not moved the
        // view (the whole overview's span is the index's: the view stays).
        let fitted = self.fitted == Some(self.view);
        if (!self.view_set || fitted) && self.slots.iter().all(|s| s.shown_span().is_some()) {
            self.fit();
            self.view_set = true;
        }
        for (which, label, mut l) in std::mem::take(&mut self.pending_highlight) {
            if !l.poll() {
                self.pending_highlight.push((which, label, l));
            } else if let Some(v) = l.ready() {
                self.tl.highlight.push((which, label, v.clone()));
            }
        }
        self.keyboard(&ctx);

        // The timeline is the point of this window: side panels get at most a
        // third and a fifth of its width, however wide their text is.
        let full_w = ui.available_width();
        egui::Panel::top("top").show(ui, |ui| self.top_bar(ui));
        // The differences' table has six columns: its panel (one of its
        // own, so each keeps the width it is dragged to) opens wider, and
        // may take half the window.
        let (panel, width, most) = if self.tab == Tab::Differences && self.slots.len() > 1 {
            ("differences", 600.0_f32, full_w / 2.0)
        } else {
            ("analysis", 380.0, full_w / 3.0)
        };
        egui::Panel::left(panel)
            .resizable(true)
            .default_size(width.min(most))
            .size_range(220.0..=most.max(240.0))
            .show(ui, |ui| self.analysis_panel(ui));
        egui::Panel::right("selection")
            .resizable(true)
            .default_size(240.0)
            .size_range(160.0..=(full_w / 5.0).max(180.0))
            .show(ui, |ui| self.selection_panel(ui));
        if self.show_counters {
            egui::Panel::bottom("counters")
                .resizable(true)
                .default_size(170.0)
                .show(ui, |ui| self.counters(ui));
        }
        egui::CentralPanel::default_margins().show(ui, |ui| self.timelines(ui));

        self.frames += 1;
        if loading || !self.pending_highlight.is_empty() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
        self.keys_window(&ctx);
        self.screenshot_step(&ctx);
        self.last_frame_ms = frame_start.elapsed().as_secs_f64() * 1e3;
    }

    fn keyboard(&mut self, ctx: &egui::Context) {
        if ctx.egui_wants_keyboard_input() && !ctx.input(|i| i.key_pressed(Key::Escape)) {
            return;
        }
        let center = (self.view.t0 + self.view.t1) / 2.0;
        ctx.input(|i| {
            if i.key_pressed(Key::Plus) || i.key_pressed(Key::Equals) || i.key_pressed(Key::W) {
                self.view.zoom(0.5, center);
            }
            if i.key_pressed(Key::Minus) || i.key_pressed(Key::S) {
                self.view.zoom(2.0, center);
            }
            let step = self.view.width() * 0.2;
            if i.key_pressed(Key::ArrowLeft) || i.key_pressed(Key::A) {
                self.view.pan(-step);
            }
            if i.key_pressed(Key::ArrowRight) || i.key_pressed(Key::D) {
                self.view.pan(step);
            }
            if i.key_pressed(Key::Home) || i.key_pressed(Key::Num0) {
                self.fit();
            }
            if i.key_pressed(Key::Z)
                && let Some((a, b)) = self.tl.range
                && b > a
            {
                self.view = View { t0: a, t1: b };
            }
            if i.key_pressed(Key::Escape) {
                self.tl.range = None;
                self.tl.picked = None;
                self.tl.highlight.clear();
                self.tl.rank_pair = None;
            }
            if i.key_pressed(Key::T) {
                self.dark = !self.dark;
            }
            if i.key_pressed(Key::C) {
                self.show_counters = !self.show_counters;
            }
            if i.key_pressed(Key::M) {
                self.tl.shares = !self.tl.shares;
            }
            if i.modifiers.command && i.key_pressed(Key::F) {
                self.focus_search = true;
            }
            if i.key_pressed(Key::Questionmark) || i.key_pressed(Key::F1) {
                self.show_keys = !self.show_keys;
            }
        });
    }

    /// The "Keys" window: every key and gesture, one per row.
    fn keys_window(&mut self, ctx: &egui::Context) {
        egui::Window::new("Keys")
            .open(&mut self.show_keys)
            .collapsible(false)
            .resizable(false)
            .show(ctx, |ui| {
                egui::Grid::new("keys").striped(true).show(ui, |ui| {
                    for (k, what) in KEYS {
                        ui.strong(k);
                        ui.label(what);
                        ui.end_row();
                    }
                });
            });
    }

    fn top_bar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.strong("hyscope");
            let names: Vec<String> = self.slots.iter().map(|s| s.name()).collect();
            ui.label(names.join("  vs  "));
            ui.separator();
            ui.label("Search:");
            let resp = ui.add(egui::TextEdit::singleline(&mut self.search).hint_text("region, loop, call, file (Ctrl+F)").desired_width(220.0));
            if self.focus_search {
                resp.request_focus();
                self.focus_search = false;
            }
            if resp.changed() {
                self.search_results = self.slots[self.analysis_of.min(self.slots.len() - 1)]
                    .analysis
                    .ready()
                    .map(|a| panels::search(a, &self.search))
                    .unwrap_or_default();
            }
            ui.separator();
            if ui.button(if self.dark { "light theme" } else { "dark theme" }).clicked() {
                self.dark = !self.dark;
            }
            if ui.button("fit (Home)").clicked() {
                self.fit();
            }
            ui.checkbox(&mut self.tl.shares, "shares (M)")
                .on_hover_text("each pixel column split by the share of each state, instead of its dominant state");
            // Every key in a window of its own: a line of them does not fit.
            if ui
                .selectable_label(self.show_keys, "? keys")
                .on_hover_text("every key and mouse gesture (?, F1)")
                .clicked()
            {
                self.show_keys = !self.show_keys;
            }
            // Positions with the decimals that a thousandth of the view resolves.
            let step = self.view.width() / 1000.0;
            ui.label(format!(
                "view {} – {}",
                units::ns_tick(self.view.t0, step),
                units::ns_tick(self.view.t1, step)
            ));
            ui.weak("wheel: zoom · drag: pan · ?: every key");
        });
        // What a trace lost or has damaged, above everything it shows.
        for s in &self.slots {
            let Some(i) = s.analysis.ready().map(|a| &a.integrity) else {
                continue;
            };
            if i.problems.is_empty() {
                continue;
            }
            let color = if i.is_partial() {
                egui::Color32::from_rgb(220, 50, 50)
            } else {
                egui::Color32::from_rgb(200, 150, 0)
            };
            ui.colored_label(color, format!("{} — {}", s.name(), i.title()));
            for p in &i.problems {
                ui.colored_label(color, format!("  ! {p}"));
            }
        }
        // A phases part that cannot be read: its ranks go without a phase row.
        for s in &self.slots {
            if let Some(p) = s.data.ready().and_then(|d| d.phases.problem()) {
                ui.colored_label(
                    egui::Color32::from_rgb(220, 50, 50),
                    format!("{} — {p}", s.name()),
                );
            }
        }
        if !self.search.is_empty() {
            ui.horizontal_wrapped(|ui| {
                if self.search_results.is_empty() {
                    ui.weak("no match");
                }
                for (label, address) in self.search_results.clone() {
                    if ui.small_button(&label).clicked() {
                        self.highlight(self.analysis_of, address, label);
                    }
                }
            });
        }
    }

    /// Highlight the instances of the location `address` (its id) on
    /// trace `which`'s timeline, in place of any other highlight.
    pub fn highlight(&mut self, which: usize, address: u64, label: String) {
        self.highlight_on(&[(which, address)], label);
    }

    /// Highlight a location on several timelines, each with its id in that
    /// trace (the differences' rows: A's and B's), in place of any other.
    pub fn highlight_on(&mut self, on: &[(usize, u64)], label: String) {
        self.tl.highlight.clear();
        self.pending_highlight.clear();
        for &(which, address) in on {
            if let Some(d) = self.slots.get(which).and_then(|s| s.data.ready()).cloned() {
                self.pending_highlight.push((
                    which,
                    label.clone(),
                    Loading::spawn(move || data::instances_of(&d, address, 100_000)),
                ));
            }
        }
    }

    /// The phase filter of the analysis panel: every table below covers the
    /// chosen phase's time only; "zoom to it" steps the timeline through its
    /// repetitions (`PhaseLanes::windows`).
    fn phase_picker(&mut self, ui: &mut egui::Ui, which: usize) {
        let slot = &mut self.slots[which];
        if slot.phase_names.is_empty() {
            return;
        }
        let mut chosen = slot.phase.clone();
        let mut frame = None;
        ui.horizontal(|ui| {
            egui::ComboBox::from_label("phase")
                .selected_text(chosen.as_deref().unwrap_or("whole run"))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut chosen, None, "whole run");
                    for n in &slot.phase_names {
                        ui.selectable_value(&mut chosen, Some(n.clone()), n);
                    }
                });
            if slot.phase.is_some() && ui.button("zoom to it").clicked() {
                frame = slot.next_phase_frame();
            }
        });
        if chosen != slot.phase {
            slot.set_phase(chosen);
        }
        if let Some(f) = &slot.analysis.ready().and_then(|a| a.focus.clone()) {
            ui.weak(format!(
                "{} intervals, {} of the run's {}: the tables cover this time only",
                f.instances,
                units::secs(f.time_s),
                units::secs(f.run_duration_s)
            ));
        }
        if let Some(v) = frame {
            self.view = v;
            self.view_set = true;
        }
    }

    fn analysis_panel(&mut self, ui: &mut egui::Ui) {
        let traces = self.slots.len();
        ui.horizontal_wrapped(|ui| {
            for t in Tab::ALL.into_iter().filter(|t| t.offered(traces)) {
                ui.selectable_value(&mut self.tab, t, t.name());
            }
        });
        if self.tab == Tab::Differences && traces > 1 {
            ui.separator();
            let ready = [0, 1].map(|k| analysis_or_status(ui, &self.slots[k], traces));
            if let [Some(a), Some(b)] = ready {
                let action = differences::show(ui, &mut self.differences, &a, &b);
                self.act(action, 0);
            }
            return;
        }
        if traces > 1 {
            ui.horizontal(|ui| {
                ui.label("analysis of");
                ui.selectable_value(&mut self.analysis_of, 0, "A");
                ui.selectable_value(&mut self.analysis_of, 1, "B");
            });
        }
        let which = self.analysis_of.min(traces - 1);
        self.phase_picker(ui, which);
        ui.separator();
        let action = analysis_or_status(ui, &self.slots[which], 1)
            .and_then(|a| panels::show(ui, self.tab, &a, &self.search));
        self.act(action, which);
    }

    /// Do what a panel of trace `which`'s analysis asked.
    fn act(&mut self, action: Option<Action>, which: usize) {
        match action {
            Some(Action::Highlight { address, label }) => self.highlight(which, address, label),
            Some(Action::HighlightBoth { addresses, label }) => {
                let on: Vec<(usize, u64)> = addresses
                    .iter()
                    .enumerate()
                    .filter_map(|(k, a)| Some((k, (*a)?)))
                    .collect();
                self.highlight_on(&on, label);
            }
            Some(Action::RankPair(a, b)) => self.tl.rank_pair = Some((a, b)),
            None => {}
        }
    }

    fn selection_panel(&mut self, ui: &mut egui::Ui) {
        ui.heading("Selection");
        // Legend.
        ui.horizontal_wrapped(|ui| {
            for s in State::ALL {
                // Swatch and name in one label that does not wrap: a row
                // break never parts a colour from its name.
                let mut job = egui::text::LayoutJob::default();
                let body = egui::TextStyle::Body.resolve(ui.style());
                // A block from the monospace font (egui's proportional one has none).
                let mono = egui::FontId::monospace(body.size);
                job.append(
                    "█",
                    0.0,
                    egui::TextFormat::simple(mono, state_color(s, self.dark)),
                );
                job.append(
                    s.name(),
                    4.0,
                    egui::TextFormat::simple(body, ui.visuals().text_color()),
                );
                ui.add(egui::Label::new(job).wrap_mode(egui::TextWrapMode::Extend))
                    .on_hover_text(s.description());
            }
        });
        ui.separator();
        if let Some((a, b)) = self.tl.range {
            ui.label(format!(
                "Range {} – {} ({})",
                units::ns_tick(a, self.view.width() / 1000.0),
                units::ns_tick(b, self.view.width() / 1000.0),
                units::ns(b - a)
            ));
            for which in 0..self.slots.len() {
                let Some(total) = self.range_summary(which) else {
                    continue;
                };
                let covered: u64 = total.iter().sum();
                if self.slots.len() > 1 {
                    ui.strong(if which == 0 { "A" } else { "B" });
                }
                ui.label(format!("thread time {}", units::ns(covered as f64)));
                for s in State::ALL {
                    let t = total[s as usize];
                    if t > 0 {
                        ui.label(format!(
                            "{}: {} ({})",
                            s.name(),
                            units::ns(t as f64),
                            units::percent(t as f64 / covered.max(1) as f64)
                        ));
                    }
                }
            }
            ui.separator();
        }
        if let Some(p) = &self.tl.picked
            && let Some(d) = self.slots.get(p.trace).and_then(|s| s.data.ready())
        {
            let info = &d.index.rows()[p.row];
            ui.strong(format!(
                "rank {} thread {} at {}",
                info.rank,
                info.thread,
                units::ns_tick((p.t - d.index.span().0) as f64, self.view.width() / 1000.0)
            ));
            if p.stack.is_empty() {
                ui.weak("nothing recorded here");
            }
            for (depth, i) in p.stack.iter().enumerate() {
                ui.indent(("stack", depth), |ui| {
                    timeline::interval_details(ui, d, info.rank, i)
                });
            }
            ui.separator();
        }
        for (which, label, inst) in &self.tl.highlight {
            if self.slots.len() > 1 {
                ui.strong(if *which == 0 { "A" } else { "B" });
            }
            // Intervals, not instances: an instance the analysis counts is a
            // row on each thread (and the region's own row) of the trace.
            let ranks: std::collections::BTreeSet<u32> = inst.iter().map(|i| i.0).collect();
            ui.label(format!(
                "highlighted: {label}, {} on {}",
                panels::counted(inst.len() as u64, "interval", "intervals"),
                panels::counted(ranks.len() as u64, "rank", "ranks")
            ))
            .on_hover_text("one interval per row of the trace: an instance has several");
        }
        if !self.pending_highlight.is_empty() {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label("finding instances...");
            });
        }
        if let Some((a, b)) = self.tl.rank_pair {
            ui.label(format!("messages between ranks {a} and {b}"));
        }
        ui.separator();
        ui.weak(format!(
            "frame {}, {} rects",
            units::ns(self.last_frame_ms * 1e6),
            self.tl.rects_drawn
        ));
        for s in &self.slots {
            if let Some(d) = s.data.ready() {
                ui.weak(format!(
                    "index: {} segments, {}, {} in {}",
                    d.index.segments(),
                    units::bytes(d.index.heap_bytes() as f64),
                    if d.index_cached {
                        "loaded from cache"
                    } else {
                        "built"
                    },
                    units::secs(d.index_s)
                ));
            }
        }
    }

    fn counters(&mut self, ui: &mut egui::Ui) {
        let Some(d) = self.slots.first().and_then(|s| s.data.ready()).cloned() else {
            return;
        };
        if d.counters.is_empty() {
            ui.weak("no sampled counters in this trace");
            return;
        }
        let origin = d.index.span().0;
        // One small plot per metric family and unit (power, memory, queues...).
        let mut families: Vec<(String, Vec<&data::CounterTrack>)> = Vec::new();
        for c in &d.counters {
            let fam = c.family();
            match families.iter_mut().find(|f| f.0 == fam) {
                Some(f) => f.1.push(c),
                None => families.push((fam, vec![c])),
            }
        }
        let n = families.len().min(4);
        let h = (ui.available_height() / n as f32 - 4.0).max(40.0);
        let view = self.view;
        // Align the plots with the timeline body: same left edge, same width,
        // same time axis (relative ns); the y range goes into the label.
        let body = self.tl.body.first().copied();
        for (fam, tracks) in families.iter().take(4) {
            // One family, one unit (the family is named by it).
            let unit = tracks.first().map_or("", |t| t.unit.as_str());
            ui.horizontal(|ui| {
                let (lo, hi) = tracks
                    .iter()
                    .flat_map(|t| t.points.iter().map(|p| p.1))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                        (a.min(v), b.max(v))
                    });
                let label_w = body.map_or(timeline::LABEL_W, |b| {
                    b.left() - ui.cursor().left() - ui.spacing().item_spacing.x
                });
                ui.allocate_ui_with_layout(
                    Vec2::new(label_w.max(20.0), h),
                    egui::Layout::top_down(egui::Align::Min),
                    |ui| {
                        ui.set_width(label_w.max(20.0));
                        // No legend over plots this small: hovering a line names it.
                        ui.label(fam.as_str()).on_hover_text(
                            tracks
                                .iter()
                                .map(|t| t.name.as_str())
                                .collect::<Vec<_>>()
                                .join("\n"),
                        );
                        ui.small(format!("max {}", crate::units::quantity(hi, unit)));
                        ui.small(format!("min {}", crate::units::quantity(lo, unit)));
                    },
                );
                let width = body.map_or(ui.available_width(), |b| b.width());
                egui_plot::Plot::new(("counter", fam.as_str()))
                    .height(h)
                    .width(width)
                    .show_axes([false, false])
                    .allow_drag(false)
                    .allow_zoom(false)
                    .allow_scroll(false)
                    .allow_boxed_zoom(false)
                    .allow_double_click_reset(false)
                    .set_margin_fraction(Vec2::new(0.0, 0.1))
                    .x_axis_formatter(|m, _| units::ns_tick(m.value, m.step_size))
                    .label_formatter(|h| match h {
                        egui_plot::HoverPosition::NearDataPoint {
                            plot_name,
                            position,
                            ..
                        } => Some(format!(
                            "{plot_name}\n{} at {}",
                            crate::units::quantity(position.y, unit),
                            units::ns(position.x)
                        )),
                        _ => None,
                    })
                    .show(ui, |p| {
                        for t in tracks {
                            // Points in view (plus one either side), thinned to ~4 per pixel.
                            let first = t
                                .points
                                .partition_point(|q| ((q.0 - origin) as f64) < view.t0)
                                .saturating_sub(1);
                            let last = (t
                                .points
                                .partition_point(|q| ((q.0 - origin) as f64) <= view.t1)
                                + 1)
                            .min(t.points.len());
                            let slice = &t.points[first.min(last)..last];
                            let step = (slice.len() / (4 * width.max(1.0) as usize)).max(1);
                            let pts: Vec<[f64; 2]> = slice
                                .iter()
                                .step_by(step)
                                .map(|&(ts, v)| [(ts - origin) as f64, v])
                                .collect();
                            p.line(egui_plot::Line::new(t.name.clone(), pts));
                        }
                        p.set_plot_bounds_x(view.t0..=view.t1);
                    });
            });
        }
    }

    fn timelines(&mut self, ui: &mut egui::Ui) {
        let full = ui.available_rect_before_wrap();
        let n = self.slots.len();
        let gap = 6.0;
        let each = (full.height() - gap * (n as f32 - 1.0)) / n as f32;
        for which in 0..n {
            let rect = Rect::from_min_size(
                Pos2::new(full.left(), full.top() + which as f32 * (each + gap)),
                Vec2::new(full.width(), each),
            );
            match &self.slots[which].data {
                Loading::Pending(_) if self.slots[which].overview.ready().is_some() => {
                    let o = Arc::clone(self.slots[which].overview.ready().expect("ready"));
                    let p = &self.slots[which].progress;
                    let (done, total) = (
                        p.done.load(Ordering::Relaxed),
                        p.total.load(Ordering::Relaxed),
                    );
                    let read = o.ranks_note();
                    let of = if read.is_empty() {
                        String::new()
                    } else {
                        format!(" ({read})")
                    };
                    let note = format!(
                        "coarse overview{of}, bins of {}: detail loading… ({done}/{total} parts)",
                        crate::units::ns(o.overview.bin_ns() as f64)
                    );
                    let drawn = timeline::show_coarse(
                        ui,
                        rect,
                        &o,
                        which,
                        &mut self.view,
                        &mut self.tl,
                        &note,
                    );
                    if drawn && self.first_coarse_frame_s.is_none() {
                        self.first_coarse_frame_s = Some(self.started.elapsed().as_secs_f64());
                    }
                    // Repaint for the progress and the data's arrival.
                    ui.ctx()
                        .request_repaint_after(std::time::Duration::from_millis(200));
                }
                Loading::Pending(_) => {
                    let p = &self.slots[which].progress;
                    let (done, total) = (
                        p.done.load(Ordering::Relaxed),
                        p.total.load(Ordering::Relaxed),
                    );
                    let stage = p.stage.lock().map(|s| s.clone()).unwrap_or_default();
                    ui.put(
                        rect.shrink(40.0),
                        egui::ProgressBar::new(done as f32 / total.max(1) as f32)
                            .text(format!("{stage}: {done}/{total} parts")),
                    );
                }
                Loading::Failed(e) => {
                    ui.put(
                        rect,
                        egui::Label::new(
                            egui::RichText::new(format!(
                                "cannot open {}: {e}",
                                self.slots[which].path.display()
                            ))
                            .color(Color32::from_rgb(220, 80, 80)),
                        ),
                    );
                }
                Loading::Ready(d) => {
                    let d = Arc::clone(d);
                    if n > 1 {
                        ui.painter().text(
                            rect.left_top(),
                            egui::Align2::LEFT_TOP,
                            if which == 0 { "A" } else { "B" },
                            egui::FontId::proportional(14.0),
                            ui.visuals().strong_text_color(),
                        );
                    }
                    timeline::show(ui, rect, &d, which, &mut self.view, &mut self.tl);
                    if let (Some(home), Some(body)) =
                        (self.slots[which].run_window_view(), self.tl.body.get(which))
                    {
                        shade_outside_run(ui, *body, &self.view, home);
                    }
                    if d.profile_mode {
                        // Rows that look idle would otherwise read as serial code.
                        ui.painter().text(
                            rect.center_bottom() - Vec2::new(0.0, 8.0),
                            egui::Align2::CENTER_BOTTOM,
                            "profile mode: OpenMP totals only, no OpenMP intervals to draw (MPI calls are shown)\nrecord with --mode trace for the OpenMP timeline",
                            egui::FontId::proportional(13.0),
                            ui.visuals().warn_fg_color,
                        );
                    }
                    if self.first_timeline_frame_s.is_none() {
                        self.first_timeline_frame_s = Some(self.started.elapsed().as_secs_f64());
                    }
                    if self.first_coarse_frame_s.is_none() {
                        self.first_coarse_frame_s = self.first_timeline_frame_s;
                    }
                }
            }
        }
        ui.allocate_rect(full, egui::Sense::hover());
    }

    fn screenshot_step(&mut self, ctx: &egui::Context) {
        let Some(s) = &mut self.screenshot else {
            return;
        };
        ctx.request_repaint();
        if s.saved.load(Ordering::Relaxed) {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        }
        if !s.requested && self.frames >= s.frames {
            s.requested = true;
            let path = s.path.clone();
            let saved = Arc::clone(&s.saved);
            let error = Arc::clone(&s.error);
            ctx.request_screenshot(move |image| {
                if let Err(e) = write_ppm(&path, &image)
                    && let Ok(mut g) = error.lock()
                {
                    *g = Some(format!("{}: {e}", path.display()));
                }
                saved.store(true, Ordering::Relaxed);
            });
        }
    }
}

/// Slot `s`'s analysis once loaded; else what became of it, said in `ui`
/// (naming the trace, A or B, when `traces` are shown together).
fn analysis_or_status(ui: &mut egui::Ui, s: &TraceSlot, traces: usize) -> Option<Arc<Analysis>> {
    let who = if traces > 1 {
        format!("{}: ", s.name())
    } else {
        String::new()
    };
    match &s.analysis {
        Loading::Ready(a) => return Some(Arc::clone(a)),
        Loading::Pending(_) => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(format!("{who}analysing..."));
            });
        }
        Loading::Failed(e) if e == NO_ANALYSIS => {
            ui.weak(format!("{who}{NO_ANALYSIS}"));
        }
        Loading::Failed(e) => {
            ui.colored_label(
                Color32::from_rgb(220, 80, 80),
                format!("{who}analysis failed: {e}"),
            );
        }
    }
    None
}

/// Save an image as binary PPM (P6): no image library needed.
pub fn write_ppm(path: &Path, image: &egui::ColorImage) -> std::io::Result<()> {
    let [w, h] = image.size;
    let mut out = format!("P6\n{w} {h}\n255\n").into_bytes();
    out.reserve(w * h * 3);
    for p in &image.pixels {
        out.extend_from_slice(&[p.r(), p.g(), p.b()]);
    }
    std::fs::write(path, out)
}

impl eframe::App for GuiApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        GuiApp::ui(self, ui);
    }
}

/// Shade the parts of a timeline's `body` drawn with `view` that lie
/// outside the run's window `run` (relative ns), and say so: rows drawn
/// there (samples, rows ended after a rank's exit) are not run time.
fn shade_outside_run(ui: &egui::Ui, body: Rect, view: &View, run: View) {
    let x = |t: f64| body.left() + ((t - view.t0) / view.width() * body.width() as f64) as f32;
    let shade = ui.visuals().text_color().gamma_multiply(0.12);
    let painter = ui.painter_at(body);
    for (a, b) in [(body.left(), x(run.t0)), (x(run.t1), body.right())] {
        let (a, b) = (a.max(body.left()), b.min(body.right()));
        if b - a >= 1.0 {
            let r = Rect::from_min_max(Pos2::new(a, body.top()), Pos2::new(b, body.bottom()));
            painter.rect_filled(r, 0.0, shade);
            painter.text(
                r.left_top() + Vec2::new(2.0, 2.0),
                egui::Align2::LEFT_TOP,
                "not run time",
                egui::FontId::proportional(11.0),
                ui.visuals().weak_text_color(),
            );
        }
    }
}

//! The TUI's state and its reaction to keys and the mouse. Pure: no terminal
//! here, so render tests drive it with the same calls the event loop makes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};

use super::data::Data;
use super::timeline::TimelineState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Summary,
    Timeline,
    OpenMp,
    Loops,
    Mpi,
    Memory,
    Energy,
    /// Only with a second trace (`hyscope tui A B`): the comparison.
    Differences,
}

impl Tab {
    /// The tabs of one trace.
    pub const ALL: [Tab; 7] = [
        Tab::Summary,
        Tab::Timeline,
        Tab::OpenMp,
        Tab::Loops,
        Tab::Mpi,
        Tab::Memory,
        Tab::Energy,
    ];

    /// The tabs of two traces compared: [`Tab::ALL`] and the differences.
    pub const COMPARED: [Tab; 8] = [
        Tab::Summary,
        Tab::Timeline,
        Tab::OpenMp,
        Tab::Loops,
        Tab::Mpi,
        Tab::Memory,
        Tab::Energy,
        Tab::Differences,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Summary => "Summary",
            Tab::Timeline => "Timeline",
            Tab::OpenMp => "OpenMP",
            Tab::Loops => "Loops",
            Tab::Mpi => "MPI",
            Tab::Memory => "Memory",
            Tab::Energy => "Energy",
            Tab::Differences => "Differences",
        }
    }

    pub fn index(self) -> usize {
        Tab::COMPARED.iter().position(|&t| t == self).unwrap_or(0)
    }
}

/// The MPI tab's view of the wait states (its table per call site has no
/// selection: the scrolling keys scroll it).
pub const MPI_WAITS_VIEW: usize = 3;

/// Selection and sorting of one table-like tab.
#[derive(Debug, Clone, Default)]
pub struct TableNav {
    pub selected: usize,
    /// Column index the rows are sorted by (tab-specific meaning).
    pub sort: usize,
    /// Ascending instead of the default descending.
    pub ascending: bool,
    /// Drill-down open (threads of a region, bars of a loop...).
    pub detail: bool,
    /// Sub-view of the tab (MPI: profile, sizes, matrix, waits).
    pub view: usize,
    /// The largest selection the last frame had room for (the last row of
    /// a table, the summary's findings scrolled to their end); `None` before
    /// the tab is drawn.
    pub last: Option<usize>,
    /// The tab's table without a selection (threads of a region, wait
    /// states per call site, energy domains, differences), scrolled by
    /// the keys that move a selection elsewhere.
    pub scroll: Scroll,
}

impl TableNav {
    /// Move the selection down by `by`, no further than [`TableNav::last`].
    pub fn down(&mut self, by: usize) {
        self.selected = self
            .selected
            .saturating_add(by)
            .min(self.last.unwrap_or(usize::MAX));
    }
}

/// How far a list without a selection (the help, a table of values) is
/// scrolled, and what the last frame had room for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scroll {
    /// The first line shown.
    pub first: usize,
    /// The first line that puts the help's end at the bottom of its box (0:
    /// the help fits and any key closes it).
    pub last: usize,
    /// Lines the box shows: a page.
    pub room: usize,
}

impl Scroll {
    /// Scroll by `by` lines (negative: up), no further than either end.
    fn by(&mut self, by: isize) {
        self.first = self.first.saturating_add_signed(by).min(self.last);
    }

    /// Scroll for `key` if it is a scrolling key and the list does not fit;
    /// false for any other key.
    pub fn on_key(&mut self, key: KeyCode) -> bool {
        if self.last == 0 {
            return false;
        }
        let page = self.room.max(1) as isize;
        match key {
            KeyCode::Up | KeyCode::Char('k') => self.by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.by(1),
            KeyCode::PageUp => self.by(-page),
            KeyCode::PageDown => self.by(page),
            KeyCode::Home => self.first = 0,
            KeyCode::End => self.first = self.last,
            _ => return false,
        }
        true
    }
}

pub struct App {
    pub tab: Tab,
    pub help: bool,
    pub help_scroll: Scroll,
    pub filter: String,
    pub filter_editing: bool,
    pub quit: bool,
    pub data: Data,
    pub nav: [TableNav; 8],
    pub timeline: TimelineState,
    /// Size of the last drawn frame's timeline area, for mouse mapping.
    pub last_timeline_area: ratatui::layout::Rect,
}

impl App {
    pub fn new(data: Data) -> App {
        let timeline = TimelineState::new(&data);
        App {
            tab: Tab::Summary,
            help: false,
            help_scroll: Scroll::default(),
            filter: String::new(),
            filter_editing: false,
            quit: false,
            data,
            nav: Default::default(),
            timeline,
            last_timeline_area: Default::default(),
        }
    }

    /// The tabs shown: with a second trace, the differences too.
    pub fn tabs(&self) -> &'static [Tab] {
        if self.data.other.is_some() {
            &Tab::COMPARED
        } else {
            &Tab::ALL
        }
    }

    /// The table without a selection that the scrolling keys move in the
    /// current tab and view, if it has one.
    fn plain_table(&mut self) -> Option<&mut Scroll> {
        let nav = &mut self.nav[self.tab.index()];
        let plain = match self.tab {
            Tab::Energy | Tab::Differences => true,
            Tab::OpenMp => nav.detail,
            Tab::Mpi => nav.view == MPI_WAITS_VIEW,
            _ => false,
        };
        plain.then_some(&mut nav.scroll)
    }

    pub fn nav(&self) -> &TableNav {
        &self.nav[self.tab.index()]
    }

    fn nav_mut(&mut self) -> &mut TableNav {
        &mut self.nav[self.tab.index()]
    }

    /// True when `text` passes the `/` filter (case-insensitive substring).
    pub fn matches(&self, text: &str) -> bool {
        matches_filter(&self.filter, text)
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        // Quits from anywhere, as the help says: the help open, the filter
        // being typed.
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if self.filter_editing {
            match key.code {
                KeyCode::Enter => self.filter_editing = false,
                KeyCode::Esc => {
                    self.filter_editing = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) => self.filter.push(c),
                _ => {}
            }
            self.reset_selection();
            return;
        }
        if self.help {
            // A help taller than its box scrolls (its title and markers say
            // with which keys); any other key closes it, q still quits.
            if self.help_scroll.on_key(key.code) {
                return;
            }
            self.help = false;
            if key.code == KeyCode::Char('q') {
                self.quit = true;
            }
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') | KeyCode::F(1) => {
                self.help = true;
                self.help_scroll = Scroll::default();
            }
            KeyCode::Char('/') => {
                self.filter_editing = true;
                self.filter.clear();
            }
            // Closes the OpenMP tab's threads when open, else clears the filter.
            KeyCode::Esc => {
                if self.nav().detail {
                    self.nav_mut().detail = false;
                } else {
                    self.filter.clear();
                    // More rows now: the next frame says how many.
                    for n in &mut self.nav {
                        n.last = None;
                    }
                }
            }
            KeyCode::Tab => self.switch(1),
            KeyCode::BackTab => self.switch(-1),
            KeyCode::Char(c @ '1'..='9') => {
                if let Some(&t) = self.tabs().get(c as usize - '1' as usize) {
                    self.tab = t;
                }
            }
            KeyCode::Char('p') => self.cycle_phase(1),
            KeyCode::Char('P') => self.cycle_phase(-1),
            KeyCode::Char('f') if self.tab == Tab::Timeline => {
                if let Some(p) = self.data.phase.clone() {
                    self.timeline.frame_phase(&p, &self.data);
                }
            }
            _ if self.tab == Tab::Timeline => self.timeline.on_key(key, &self.data, &self.filter),
            // A table without a selection scrolls (no further than its end)
            // where the others move their selection.
            KeyCode::Up
            | KeyCode::Char('k')
            | KeyCode::Down
            | KeyCode::Char('j')
            | KeyCode::PageUp
            | KeyCode::PageDown
            | KeyCode::Home
            | KeyCode::End
                if self.plain_table().is_some() =>
            {
                if let Some(s) = self.plain_table() {
                    s.on_key(key.code);
                }
            }
            KeyCode::Up | KeyCode::Char('k') => {
                let n = self.nav_mut();
                n.selected = n.selected.saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Char('j') => self.nav_mut().down(1),
            KeyCode::PageUp => {
                let n = self.nav_mut();
                n.selected = n.selected.saturating_sub(10);
            }
            KeyCode::PageDown => self.nav_mut().down(10),
            KeyCode::Home => self.nav_mut().selected = 0,
            // Only the OpenMP tab has a drill-down (the threads of a region):
            // elsewhere Enter would open nothing and the next Esc would
            // close it instead of clearing the filter.
            KeyCode::Enter if self.tab == Tab::OpenMp => {
                let n = self.nav_mut();
                n.detail = !n.detail;
                n.scroll = Scroll::default();
            }
            KeyCode::Char('s') => {
                let n = self.nav_mut();
                n.sort += 1;
                n.selected = 0;
            }
            KeyCode::Char('S') => {
                let n = self.nav_mut();
                n.ascending = !n.ascending;
                n.selected = 0;
            }
            KeyCode::Left | KeyCode::Char('h') => {
                let n = self.nav_mut();
                n.view = n.view.saturating_sub(1);
            }
            KeyCode::Right | KeyCode::Char('l') => self.nav_mut().view += 1,
            _ => {}
        }
    }

    pub fn on_mouse(&mut self, m: MouseEvent) {
        if self.tab == Tab::Timeline {
            let area = self.last_timeline_area;
            self.timeline.on_mouse(m, area, &self.data);
            return;
        }
        if let Some(s) = self.plain_table() {
            match m.kind {
                MouseEventKind::ScrollDown => s.on_key(KeyCode::Down),
                MouseEventKind::ScrollUp => s.on_key(KeyCode::Up),
                _ => false,
            };
            return;
        }
        match m.kind {
            MouseEventKind::ScrollDown => self.nav_mut().down(1),
            MouseEventKind::ScrollUp => {
                let n = self.nav_mut();
                n.selected = n.selected.saturating_sub(1);
            }
            _ => {}
        }
    }

    /// Restrict every table to the next / previous phase (or the whole run).
    fn cycle_phase(&mut self, by: isize) {
        self.data.cycle_phase(by);
        self.reset_selection();
        self.timeline.phase_frame = None;
    }

    fn switch(&mut self, by: isize) {
        let tabs = self.tabs();
        let n = tabs.len() as isize;
        let i = (self.tab.index() as isize + by).rem_euclid(n);
        self.tab = tabs[i as usize];
    }

    fn reset_selection(&mut self) {
        for n in &mut self.nav {
            n.selected = 0;
            n.last = None;
            n.scroll = Scroll::default();
        }
        self.timeline.row_scroll = 0;
    }
}

/// True when `text` passes the filter `filter` (case-insensitive substring),
/// as [`App::matches`], for a tab that holds its navigation mutably.
pub fn matches_filter(filter: &str, text: &str) -> bool {
    filter.is_empty() || text.to_lowercase().contains(&filter.to_lowercase())
}

/// The keys of the footer, per tab, with `tabs` tabs (the help overlay
/// lists them all).
pub fn footer_keys(tab: Tab, tabs: usize) -> String {
    let keys = match tab {
        Tab::Timeline => {
            return "←→ cursor H/L pan +/- zoom 0 all ↑↓ row ⏎ threads v range / filter ? help q quit"
                .into();
        }
        Tab::Mpi => "←→ view  ↑↓ select  s sort  S order  / filter  ? help  q quit",
        Tab::Memory => "←→ view  ↑↓ select  p phase  / filter  ? help  q quit",
        Tab::Summary | Tab::Energy | Tab::Differences => {
            "↑↓ scroll  p phase  / filter  ? help  q quit"
        }
        Tab::OpenMp => "↑↓ select  s sort  S order  ⏎ threads  p phase  / filter  ? help  q quit",
        Tab::Loops => "↑↓ select  s sort  S order  p phase  / filter  ? help  q quit",
    };
    format!("Tab/1-{tabs} tabs  {keys}")
}

pub const HELP: &[(&str, &str)] = &[
    (
        "Tab / Shift-Tab, 1-8",
        "next / previous tab, or tab N (8: Differences, tui A B)",
    ),
    (
        "↑ ↓  j k  PgUp PgDn",
        "move the selection, or scroll a table without one",
    ),
    ("s / S", "sort by the next column / reverse the order"),
    (
        "Enter / Esc",
        "OpenMP: open / close the threads of the selected region",
    ),
    (
        "← →  h l",
        "views: MPI profile/sizes/matrix/waits, memory over time",
    ),
    (
        "/ text Enter",
        "filter rows by name (Esc: clear the filter)",
    ),
    (
        "p / P",
        "next / previous phase, or the whole run, in every tab",
    ),
    (
        "Timeline ← →",
        "move the cursor; details of the interval under it",
    ),
    ("Timeline H L", "pan by a quarter of the window"),
    ("Timeline + - (wheel)", "zoom in / out around the cursor"),
    ("Timeline 0", "show the whole run"),
    (
        "Timeline v",
        "start / end a selected range (statistics below)",
    ),
    ("Timeline z", "zoom to the selected range"),
    (
        "Timeline Enter",
        "open a line of ranks (ranks 0–127 worst 93) into smaller groups, down to \
         single ranks; on a rank, show its threads",
    ),
    (
        "Timeline Backspace",
        "close the group of ranks holding the selected line",
    ),
    (
        "Timeline f",
        "zoom to the next repetition of the phase chosen with p",
    ),
    ("Timeline click / drag", "place the cursor / select a range"),
    ("?", "this help (↑↓ scroll it if cut, other keys close it)"),
    ("q, Ctrl-C", "quit"),
];

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
}

impl Tab {
    pub const ALL: [Tab; 7] = [
        Tab::Summary,
        Tab::Timeline,
        Tab::OpenMp,
        Tab::Loops,
        Tab::Mpi,
        Tab::Memory,
        Tab::Energy,
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
        }
    }

    pub fn index(self) -> usize {
        Tab::ALL.iter().position(|&t| t == self).unwrap_or(0)
    }
}

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

/// How far the help is scrolled, and what the last frame had room for.
#[derive(Debug, Clone, Copy, Default)]
pub struct HelpScroll {
    /// The first line shown.
    pub first: usize,
    /// The first line that puts the help's end at the bottom of its box (0:
    /// the help fits and any key closes it).
    pub last: usize,
    /// Lines the box shows: a page.
    pub room: usize,
}

impl HelpScroll {
    /// Scroll by `by` lines (negative: up), no further than either end.
    fn by(&mut self, by: isize) {
        self.first = self.first.saturating_add_signed(by).min(self.last);
    }

    /// Scroll for `key` if it is a scrolling key and the help does not fit;
    /// false for any other key.
    fn on_key(&mut self, key: KeyCode) -> bool {
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
    pub help_scroll: HelpScroll,
    pub filter: String,
    pub filter_editing: bool,
    pub quit: bool,
    pub data: Data,
    pub nav: [TableNav; 7],
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
            help_scroll: HelpScroll::default(),
            filter: String::new(),
            filter_editing: false,
            quit: false,
            data,
            nav: Default::default(),
            timeline,
            last_timeline_area: Default::default(),
        }
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
                self.help_scroll = HelpScroll::default();
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
            KeyCode::Char(c @ '1'..='7') => self.tab = Tab::ALL[c as usize - '1' as usize],
            KeyCode::Char('p') => self.cycle_phase(1),
            KeyCode::Char('P') => self.cycle_phase(-1),
            KeyCode::Char('f') if self.tab == Tab::Timeline => {
                if let Some(p) = self.data.phase.clone() {
                    self.timeline.frame_phase(&p, &self.data);
                }
            }
            _ if self.tab == Tab::Timeline => self.timeline.on_key(key, &self.data, &self.filter),
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
        let n = Tab::ALL.len() as isize;
        let i = (self.tab.index() as isize + by).rem_euclid(n);
        self.tab = Tab::ALL[i as usize];
    }

    fn reset_selection(&mut self) {
        for n in &mut self.nav {
            n.selected = 0;
            n.last = None;
        }
        self.timeline.row_scroll = 0;
    }
}

/// True when `text` passes the filter `filter` (case-insensitive substring),
/// as [`App::matches`], for a tab that holds its navigation mutably.
pub fn matches_filter(filter: &str, text: &str) -> bool {
    filter.is_empty() || text.to_lowercase().contains(&filter.to_lowercase())
}

/// The keys of the footer, per tab (the help overlay lists them all).
pub fn footer_keys(tab: Tab) -> &'static str {
    match tab {
        Tab::Timeline => {
            "←→ cursor H/L pan +/- zoom 0 all ↑↓ row ⏎ threads v range / filter ? help q quit"
        }
        Tab::Mpi => "Tab/1-7 tabs  ←→ view  ↑↓ select  s sort  S order  / filter  ? help  q quit",
        Tab::Memory => "Tab/1-7 tabs  ←→ view  ↑↓ select  p phase  / filter  ? help  q quit",
        Tab::Summary | Tab::Energy => "Tab/1-7 tabs  ↑↓ scroll  p phase  / filter  ? help  q quit",
        Tab::OpenMp => {
            "Tab/1-7 tabs  ↑↓ select  s sort  S order  ⏎ threads  p phase  / filter  ? help  q quit"
        }
        Tab::Loops => "Tab/1-7 tabs  ↑↓ select  s sort  S order  p phase  / filter  ? help  q quit",
    }
}

pub const HELP: &[(&str, &str)] = &[
    (
        "Tab / Shift-Tab, 1-7",
        "next / previous tab, or go to tab N",
    ),
    (
        "↑ ↓  j k  PgUp PgDn",
        "move the selection (rows, loops, regions)",
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

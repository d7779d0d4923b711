//! Lists taller than their box: which part is shown, and the markers on the
//! box's border that say how much is left out above (`▲ 2 more rows`, top
//! right) and below (`▼ 3 more rows`, bottom right). Every table and list of
//! the TUI that can be cut says so this way, the timeline's rows and the help
//! included. Imports nothing from the rest of the TUI but `fmt`.

use ratatui::text::Line;
use ratatui::widgets::{Block, Borders};

use super::fmt;

/// The part of a list of `total` items shown in a box with room for `room`:
/// `shown` items from `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    pub first: usize,
    pub shown: usize,
    pub total: usize,
}

impl Window {
    /// From `first`, as far as it can scroll: the last item at the bottom at
    /// most (a list that fits is never scrolled; without room, nothing is
    /// shown: the items before `first` are above, the others below).
    pub fn from(total: usize, room: usize, first: usize) -> Window {
        let first = if room == 0 {
            first.min(total)
        } else {
            first.min(total.saturating_sub(room))
        };
        Window {
            first,
            shown: room.min(total - first),
            total,
        }
    }

    /// The least scroll from the top that shows `selected` (ratatui's table
    /// from a fresh state: the selected row at the bottom once it is below
    /// the first screen).
    pub fn showing(total: usize, room: usize, selected: usize) -> Window {
        let selected = selected.min(total.saturating_sub(1));
        // Without room, as from the top: everything below.
        let first = if room == 0 {
            0
        } else {
            (selected + 1).saturating_sub(room)
        };
        Window::from(total, room, first)
    }

    /// Items left out above the window.
    pub fn above(&self) -> usize {
        self.first
    }

    /// Items left out below the window.
    pub fn below(&self) -> usize {
        self.total.saturating_sub(self.first + self.shown)
    }
}

/// What the list is made of, for the markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noun {
    Rows,
    Lines,
}

/// `▼ 3 more rows`, `▲ 1 more line`.
pub fn more(arrow: char, n: usize, noun: Noun) -> String {
    let word = match (noun, n) {
        (Noun::Rows, 1) => "row",
        (Noun::Rows, _) => "rows",
        (Noun::Lines, 1) => "line",
        (Noun::Lines, _) => "lines",
    };
    format!("{arrow} {n} more {word}")
}

/// The keys that scroll a list up and down, named after its markers.
pub type Keys<'k> = (&'k str, &'k str);

/// The marker of `n` items left out, the longest of its forms that fits in
/// `room` columns: `▼ 3 more rows (↓ PgDn)`, `▼ 3 more rows`, `▼ 3 more`,
/// `▼ 3`.
pub fn marker(arrow: char, n: usize, noun: Noun, keys: Option<&str>, room: usize) -> String {
    let full = more(arrow, n, noun);
    let forms = [
        keys.map(|k| format!("{full} ({k})")),
        Some(full),
        Some(format!("{arrow} {n} more")),
    ];
    forms
        .into_iter()
        .flatten()
        .find(|f| f.chars().count() <= room)
        .unwrap_or_else(|| format!("{arrow} {n}"))
}

/// A bordered box `width` columns wide titled `title`, with the markers of
/// what the window `w` of its list leaves out: above at the top right, below
/// at the bottom right, each with the keys that scroll that way when given
/// and there is room. The title gives way to the shortest marker (clipped
/// with `…`), never the marker to the title.
pub fn titled(
    title: &str,
    width: u16,
    w: &Window,
    noun: Noun,
    keys: Option<Keys>,
) -> Block<'static> {
    let room = width.saturating_sub(2) as usize;
    let mut block = Block::default().borders(Borders::ALL);
    let mut title_room = room;
    if w.above() > 0 {
        let free = room.saturating_sub(title.chars().count() + 1);
        let m = marker('▲', w.above(), noun, keys.map(|k| k.0), free);
        title_room = room.saturating_sub(m.chars().count() + 1);
        block = block.title_top(Line::from(m).right_aligned());
    }
    if w.below() > 0 {
        let m = marker('▼', w.below(), noun, keys.map(|k| k.1), room);
        block = block.title_bottom(Line::from(m).right_aligned());
    }
    block.title(fmt::clip(title, title_room))
}

/// [`titled`] for the window `w` of a list scrolled by the selection (no
/// keys named).
pub fn marked(title: &str, width: u16, w: &Window, noun: Noun) -> Block<'static> {
    titled(title, width, w, noun, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let w = Window::showing(10, 4, 0);
        assert_eq!((w.first, w.shown, w.above(), w.below()), (0, 4, 0, 6));
        let w = Window::showing(10, 4, 5);
        assert_eq!((w.first, w.above(), w.below()), (2, 2, 4));
        let w = Window::showing(10, 4, 99);
        assert_eq!((w.first, w.above(), w.below()), (6, 6, 0));
        // A list that fits is never scrolled.
        let w = Window::from(3, 4, 2);
        assert_eq!((w.first, w.shown, w.above(), w.below()), (0, 3, 0, 0));
        assert_eq!(Window::showing(0, 4, 0), Window::default());
        // No room: everything is left out below, or above what is
        // scrolled past.
        assert_eq!(Window::showing(5, 0, 0).below(), 5);
        let w = Window::from(5, 0, 5);
        assert_eq!((w.above(), w.below()), (5, 0));
    }

    #[test]
    fn markers() {
        assert_eq!(more('▼', 3, Noun::Rows), "▼ 3 more rows");
        assert_eq!(more('▲', 1, Noun::Lines), "▲ 1 more line");
        let m = |room| marker('▼', 12, Noun::Lines, Some("↓ PgDn"), room);
        assert_eq!(m(40), "▼ 12 more lines (↓ PgDn)");
        assert_eq!(m(20), "▼ 12 more lines");
        assert_eq!(m(10), "▼ 12 more");
        assert_eq!(m(3), "▼ 12");
    }

    /// The title gives way to the marker above, clipped.
    #[test]
    fn the_title_gives_way() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        let top = |width: u16, title: &str| {
            let mut t = Terminal::new(TestBackend::new(width, 3)).unwrap();
            let w = Window::from(20, 1, 5);
            t.draw(|f| {
                f.render_widget(titled(title, width, &w, Noun::Rows, None), f.area());
            })
            .unwrap();
            let b = t.backend().buffer();
            (0..width).map(|x| b[(x, 0)].symbol()).collect::<String>()
        };
        assert_eq!(
            top(30, "Calls"),
            format!("┌Calls{}▲ 5 more rows┐", "─".repeat(10))
        );
        assert_eq!(top(20, "Calls (12) sort"), "┌Calls (12) so…─▲ 5┐");
    }
}

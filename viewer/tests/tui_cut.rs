//! What a box too small for its list shows: the timeline's rows, the
//! tables, the lists and the help say how many rows or lines are left out
//! above (`▲ N more …`, top border) and below (`▼ N more …`, bottom border);
//! a thread row never shows without its rank; the help can be read whole at
//! any size. On the synthetic trace (`tui_common`) with 4 ranks.

#![allow(dead_code)]

use crate::tui_common;
use crate::tui_frame;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hyscope_viewer::tui;
use tui::app::{App, HELP, Tab};
use tui_frame::render;

fn app(name: &str, ranks: u32) -> App {
    let dir = tui_common::write_trace_ranks(name, ranks);
    App::new(tui::data::Data::open_blocking(&dir).expect("open trace"))
}

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

/// The lines of the box whose top border holds `title`: its top border, the
/// lines inside (borders cut off) and its bottom border.
fn boxed(s: &str, title: &str) -> (String, Vec<String>, String) {
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let top = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains(title))
        .unwrap_or_else(|| panic!("no box `{title}` in\n{s}"));
    // The corner before the title (boxes side by side share the line).
    let line: String = lines[top].iter().collect();
    let at = line[..line.find(title).unwrap()].chars().count();
    let x0 = lines[top][..=at].iter().rposition(|&c| c == '┌').unwrap();
    let x1 = x0 + lines[top][x0..].iter().position(|&c| c == '┐').unwrap();
    let text = |l: &[char]| l[x0..=x1].iter().collect::<String>();
    let mut inside = Vec::new();
    for l in &lines[top + 1..] {
        if l[x0] == '└' {
            return (text(&lines[top]), inside, text(l));
        }
        inside.push(l[x0 + 1..x1].iter().collect());
    }
    panic!("the box `{title}` has no bottom in\n{s}");
}

/// The row labels of the timeline's lines (after the ruler).
fn timeline_labels(inside: &[String]) -> Vec<String> {
    inside[1..]
        .iter()
        .map(|l| {
            l.chars()
                .take(11)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

/// The timeline at 100 × 14 (5 lines of rows) with ranks 2 and 3 opened:
/// 8 rows. Scrolled to the end, rank 2's last thread is the first row: its
/// rank is pinned above it, and the top border says 3 rows are above;
/// scrolled back to rank 2's first thread, the bottom border says 1 row is
/// below. At 200 × 50 everything fits and nothing is marked.
#[test]
fn the_timeline_pins_the_rank_and_marks_the_rows_cut() {
    let mut a = app("cut-timeline", 4);
    key(&mut a, KeyCode::Char('2'));
    assert_eq!(a.tab, Tab::Timeline);
    let s = render(&mut a, 100, 14);
    let (top, inside, bottom) = boxed(&s, "┌Timeline");
    assert_eq!(
        timeline_labels(&inside),
        ["▸rank 0", "▸rank 1", "▸rank 2", "▸rank 3", ""],
        "{s}"
    );
    assert!(!top.contains("more") && !bottom.contains("more"), "{s}");
    // Open ranks 2 and 3.
    for _ in 0..2 {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    render(&mut a, 100, 14);
    for _ in 0..3 {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 100, 14);
    println!("{s}");
    let (_, inside, bottom) = boxed(&s, "┌Timeline");
    assert_eq!(
        timeline_labels(&inside),
        ["▸rank 1", "▾rank 2", "  thread 0", "  thread 1", "▾rank 3"],
        "{s}"
    );
    assert!(bottom.contains("▼ 2 more rows"), "{s}");
    // To the last row: rank 2's thread 1 first, under its rank.
    for _ in 0..9 {
        key(&mut a, KeyCode::Down);
    }
    let s = render(&mut a, 100, 14);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌Timeline");
    assert_eq!(
        timeline_labels(&inside),
        [
            "▾rank 2",
            "  thread 1",
            "▾rank 3",
            "  thread 0",
            "  thread 1"
        ],
        "{s}"
    );
    assert!(top.contains("▲ 3 more rows"), "{s}");
    assert!(!bottom.contains("more"), "{s}");
    // A click on the pinned line selects rank 2.
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let area = a.last_timeline_area;
    a.on_mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: area.x + 20,
        row: area.y + 2,
        modifiers: KeyModifiers::NONE,
    });
    assert_eq!(a.timeline.row, 2, "the pinned line is rank 2's row");
    // Up from rank 3's last thread to rank 2's first: one row below.
    a.timeline.row = 7;
    render(&mut a, 100, 14);
    for _ in 0..4 {
        key(&mut a, KeyCode::Up);
    }
    let s = render(&mut a, 100, 14);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌Timeline");
    assert_eq!(
        timeline_labels(&inside),
        [
            "▾rank 2",
            "  thread 0",
            "  thread 1",
            "▾rank 3",
            "  thread 0"
        ],
        "{s}"
    );
    assert!(top.contains("▲ 2 more rows"), "{s}");
    assert!(bottom.contains("▼ 1 more row"), "{s}");
    // Room for every row: no marker.
    let s = render(&mut a, 200, 50);
    let (top, _, bottom) = boxed(&s, "┌Timeline");
    assert!(!top.contains("more") && !bottom.contains("more"), "{s}");
}

/// A table says how many rows it leaves out, below and, once the selection
/// has scrolled it, above: the MPI calls (6) at 80 × 14.
#[test]
fn a_table_marks_the_rows_cut() {
    let mut a = app("cut-table", 4);
    key(&mut a, KeyCode::Char('5'));
    let s = render(&mut a, 80, 14);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌MPI calls (6)");
    // The header and the rows shown.
    let shown = inside.len() - 1;
    assert!(shown < 6, "{s}");
    assert!(!top.contains("more"), "{s}");
    assert!(
        bottom.contains(&format!("▼ {} more rows", 6 - shown)),
        "{s}"
    );
    for _ in 0..5 {
        key(&mut a, KeyCode::Down);
    }
    let s = render(&mut a, 80, 14);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌MPI calls (6)");
    let shown = inside.len() - 1;
    assert!(top.contains(&format!("▲ {} more rows", 6 - shown)), "{s}");
    assert!(!bottom.contains("more"), "{s}");
}

/// A table without a selection scrolls with the keys that move a
/// selection elsewhere, and its markers follow: the 16 threads of the
/// region (8 ranks × 2) at 80 × 24, then the wait states per call site.
#[test]
fn a_table_without_a_selection_scrolls() {
    let mut a = app("cut-plain", 8);
    key(&mut a, KeyCode::Char('3'));
    key(&mut a, KeyCode::Enter);
    let title = "┌threads of hybrid.c:40";
    let s = render(&mut a, 80, 24);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, title);
    let shown = inside.len() - 1;
    assert!(shown < 16, "{s}");
    assert!(inside[1].starts_with("0    0 "), "{s}");
    assert!(!top.contains("more"), "{s}");
    assert!(
        bottom.contains(&format!("▼ {} more rows (↓ PgDn)", 16 - shown)),
        "{s}"
    );
    for _ in 0..3 {
        key(&mut a, KeyCode::Down);
    }
    let s = render(&mut a, 80, 24);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, title);
    // Rank 1's second thread first: three rows scrolled off.
    assert!(inside[1].starts_with("1    1 "), "{s}");
    assert!(top.contains("▲ 3 more rows (↑ PgUp)"), "{s}");
    assert!(
        bottom.contains(&format!("▼ {} more rows", 16 - shown - 3)),
        "{s}"
    );
    // End: the last thread at the bottom, nothing further.
    key(&mut a, KeyCode::End);
    key(&mut a, KeyCode::Down);
    let s = render(&mut a, 80, 24);
    let (top, inside, bottom) = boxed(&s, title);
    assert!(inside.last().unwrap().starts_with("7    1 "), "{s}");
    assert!(top.contains(&format!("▲ {} more rows", 16 - shown)), "{s}");
    assert!(!bottom.contains("more"), "{s}");
    // Esc and Enter again: the threads from the top.
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Enter);
    let s = render(&mut a, 80, 24);
    assert!(boxed(&s, title).1[1].starts_with("0    0 "), "{s}");

    // The wait states per call site (one per rank pair at least).
    key(&mut a, KeyCode::Char('5'));
    for _ in 0..3 {
        key(&mut a, KeyCode::Right);
    }
    let s = render(&mut a, 80, 16);
    println!("{s}");
    let (_, inside, bottom) = boxed(&s, "┌per call site");
    let total = inside.len() - 1 + bottom_count(&bottom);
    assert!(bottom_count(&bottom) > 0, "{s}");
    let first = inside[1].clone();
    key(&mut a, KeyCode::PageDown);
    let s = render(&mut a, 80, 16);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌per call site");
    assert!(top.contains("▲"), "{s}");
    assert_ne!(inside[1], first, "{s}");
    assert_eq!(
        inside.len() - 1 + bottom_count(&bottom) + top_count(&top),
        total
    );
}

/// N of the `▼ N more` marker on a bottom border (0 without one).
fn bottom_count(border: &str) -> usize {
    count_after(border, "▼ ")
}

/// N of the `▲ N more` marker on a top border (0 without one).
fn top_count(border: &str) -> usize {
    count_after(border, "▲ ")
}

fn count_after(border: &str, arrow: &str) -> usize {
    border.find(arrow).map_or(0, |i| {
        border[i + arrow.len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    })
}

/// A list that does not fit says how many lines it leaves out: the
/// selected loop's evidence on the Loops tab at 100 × 14, wrapped on as
/// many lines as at 100 × 50.
#[test]
fn a_list_marks_the_lines_cut() {
    let mut a = app("cut-list", 4);
    key(&mut a, KeyCode::Char('4'));
    let s = render(&mut a, 100, 50);
    println!("{s}");
    let (_, inside, bottom) = boxed(&s, "recommendation and evidence");
    let all = inside.iter().filter(|l| !l.trim().is_empty()).count();
    assert!(!bottom.contains("more"), "{s}");
    let s = render(&mut a, 100, 14);
    println!("{s}");
    let (_, inside, bottom) = boxed(&s, "recommendation and evidence");
    assert!(inside.len() < all, "{s}");
    assert!(
        bottom.contains(&format!("▼ {} more lines", all - inside.len())),
        "{s}"
    );
}

/// The table helper (`widgets::fit_table`, every table of the TUI) marks
/// the rows it leaves out, above and below the selected row: 10 rows in a
/// box with room for 3.
#[test]
fn the_table_helper_marks_the_rows_cut() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use tui::widgets::{self, Fit};
    let rows = || -> Vec<Vec<String>> {
        (0..10)
            .map(|i| vec![format!("row {i}"), i.to_string()])
            .collect()
    };
    let draw = |selected: usize| -> String {
        let mut t = Terminal::new(TestBackend::new(40, 6)).unwrap();
        t.draw(|f| {
            let fit = Fit {
                header: &["name", "n"],
                keep: &[9, 9],
                flex: 0,
                flex_min: 4,
                sorted_col: None,
                ascending: false,
            };
            widgets::fit_table(f, f.area(), "T".into(), &fit, rows(), Some(selected));
        })
        .unwrap();
        let b = t.backend().buffer();
        (0..6)
            .map(|y| (0..40).map(|x| b[(x, y)].symbol()).collect::<String>() + "\n")
            .collect()
    };
    let s = draw(0);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌T");
    assert!(inside[1].contains("row 0"), "{s}");
    assert!(!top.contains("more"), "{s}");
    assert!(bottom.contains("▼ 7 more rows"), "{s}");
    let s = draw(5);
    println!("{s}");
    let (top, inside, bottom) = boxed(&s, "┌T");
    assert!(inside[3].contains("row 5"), "{s}");
    assert!(top.contains("▲ 3 more rows"), "{s}");
    assert!(bottom.contains("▼ 4 more rows"), "{s}");
}

/// The words of `s`, whitespace and the box's inner borders aside.
fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The help read whole at any size: from its first line to its last with
/// the keys its markers name, every key and explanation comes, in order;
/// where it does not fit, the bottom border says how many lines are left
/// and which keys scroll, the title too.
#[test]
fn the_help_is_whole_at_any_size() {
    let mut a = app("cut-help", 4);
    let want: Vec<String> = HELP
        .iter()
        .flat_map(|(k, v)| words(k).into_iter().chain(words(v)))
        .collect();
    for (w, h) in [
        (200, 50),
        (80, 24),
        (79, 23),
        (60, 15),
        (44, 12),
        (30, 10),
        (20, 6),
    ] {
        key(&mut a, KeyCode::Char('?'));
        assert!(a.help);
        let s = render(&mut a, w, h);
        println!("{s}");
        let (top, first, bottom) = boxed(&s, "┌Keys");
        let mut seen: Vec<String> = first.clone();
        let fits = !bottom.contains("▼");
        if fits {
            assert!(top.contains("┌Keys — any key closes"), "{w}×{h}:\n{s}");
        } else {
            // The keys that scroll it: in the title, and by the marker
            // where there is room.
            assert!(top.contains("┌Keys") && top.contains("↑↓"), "{w}×{h}:\n{s}");
            assert!(bottom.contains(" more line"), "{w}×{h}:\n{s}");
            if w >= 40 {
                assert!(bottom.contains("(↓ PgDn)"), "{w}×{h}:\n{s}");
            }
            // Line by line to the end: each step shows one new line at
            // the bottom.
            loop {
                key(&mut a, KeyCode::Down);
                assert!(a.help, "↓ closed the help at {w}×{h}");
                let s = render(&mut a, w, h);
                let (top, inside, bottom) = boxed(&s, "┌Keys");
                seen.push(inside.last().unwrap().clone());
                if !bottom.contains("▼") {
                    assert!(top.contains("▲"), "{w}×{h}:\n{s}");
                    break;
                }
            }
        }
        // Long words are cut where a narrow line ends: the text, spaces aside.
        let text: Vec<String> = seen.iter().flat_map(|l| words(l)).collect();
        assert_eq!(text.concat(), want.concat(), "the help read at {w}×{h}");
        // Any other key closes it.
        key(&mut a, KeyCode::Esc);
        assert!(!a.help, "Esc did not close the help at {w}×{h}");
    }
}

/// The note under the timeline's legend naming a phases part that cannot be
/// read takes at most 4 lines; on a narrow terminal its last says how many
/// more there are.
#[test]
fn a_long_note_under_the_timeline_says_it_is_cut() {
    use hyscope_format::{PartWriter, PhaseRecord, Table, WriterOptions};
    use tui_common::MS;
    let dir = tui_common::write_trace_ranks("cut-note", 2);
    for rank in 0..2 {
        let mut w =
            PartWriter::create(&dir, Table::Phases, rank, WriterOptions::default()).unwrap();
        w.write_records(&[PhaseRecord::api(0, "solver", MS, 9 * MS, 0)])
            .unwrap();
        w.finish().unwrap();
    }
    hyscope_testkit::truncate_to_half(&dir.join("phases/rank=0/part-0.parquet"));
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    key(&mut a, KeyCode::Char('2'));
    // Narrow enough for more than 4 lines whatever the trace's path.
    let s = render(&mut a, 24, 30);
    println!("{s}");
    let lines: Vec<&str> = s.lines().collect();
    let legend = lines
        .iter()
        .position(|l| l.starts_with("█serial"))
        .expect("the legend");
    let note = &lines[legend + 1..legend + 5];
    assert!(note[0].starts_with("phases of rank 0"), "{s}");
    let last = note[3].trim_end();
    assert!(
        last.starts_with("▼ ") && last.ends_with(" more lines"),
        "{s}"
    );
    // Then the details of the cursor.
    assert!(lines[legend + 5].starts_with("rank "), "{s}");
}

/// On a short terminal the run's facts give way to the POP tree and the
/// findings (2 lines of each at 100 × 12), and say how many of their lines
/// are left out; the findings say what is left out below and, scrolled,
/// above.
#[test]
fn the_summary_keeps_room_for_the_findings() {
    let mut a = app("cut-summary", 4);
    let s = render(&mut a, 100, 12);
    println!("{s}");
    // 6 facts: 4 shown.
    let (_, facts, bottom) = boxed(&s, "┌Run — ");
    assert!(facts[0].starts_with("command"), "{s}");
    assert_eq!(facts.len(), 4, "{s}");
    assert!(bottom.contains("▼ 2 more lines"), "{s}");
    let (_, pop, _) = boxed(&s, "┌POP efficiency");
    assert_eq!(pop.len(), 2, "{s}");
    assert!(pop[0].contains("Parallel efficiency"), "{s}");
    let (top, findings, bottom) = boxed(&s, "┌Findings");
    assert_eq!(findings.len(), 2, "{s}");
    assert!(findings[0].starts_with("1. "), "{s}");
    assert!(
        !top.contains("more") && bottom.contains(" more lines"),
        "{s}"
    );
    key(&mut a, KeyCode::Down);
    let s = render(&mut a, 100, 12);
    let (top, _, _) = boxed(&s, "┌Findings");
    assert!(top.contains("▲ 1 more line"), "{s}");
}

/// What the trace lost is never cut silently: on a narrow terminal the
/// problem is wrapped whole in the box that comes first (here one problem,
/// a rank's missing MPI part, on several lines at 50 columns).
#[test]
fn a_partial_traces_problem_is_shown_whole_when_narrow() {
    let dir = tui_common::write_trace_ranks("cut-partial", 2);
    std::fs::remove_dir_all(dir.join("mpi/rank=1")).unwrap();
    let mut a = App::new(tui::data::Data::open_blocking(&dir).expect("open trace"));
    let s = render(&mut a, 50, 30);
    println!("{s}");
    let (_, inside, _) = boxed(&s, "┌PARTIAL TRACE");
    assert!(inside.len() > 1, "{s}");
    let text = inside
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    let problem = a.data.analysis().unwrap().integrity.problems[0].to_string();
    // Spaces aside: a long path is cut where a line ends.
    assert_eq!(
        text.replace(' ', ""),
        format!("! {problem}").replace(' ', ""),
        "{s}"
    );
}

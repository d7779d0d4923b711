//! The TUI's Summary tab lists a run's processes beyond its ranks as the
//! report does: a real chain of programs (`tests/omp/exec.c`: a child made
//! by `fork` that execs, then three execs, the last of `/bin/true`),
//! recorded with the real `hyscope record`; the Run box holds the report's
//! `child process` and `exec` lines (`hyscope_analyzer::process_lines`),
//! whole, wrapped in an 80-column terminal, and the POP box the report's
//! lines on what the POP metrics count.

use crate::record_support;
use crate::tui_frame::render;

use std::path::{Path, PathBuf};

use hyscope_testkit::OutputWithin;
use hyscope_viewer::tui::{app::App, data::Data};
use record_support::*;

/// The label column of the process lines in the TUI (`child process` and a space).
const LABEL_W: usize = 14;

/// `tests/omp/exec.c` recorded into `dir/trace`: the program runs 2
/// regions, forks a child that runs 1 and execs to run 1, then runs 3 and
/// execs (execv) to run 4, which execs (execlp) to run 2, which execs
/// `/bin/true`.
fn record(dir: &Path) -> PathBuf {
    let prog = build_omp_test_program(dir, "exec");
    let trace = dir.join("trace");
    let path = std::env::var("PATH").unwrap_or_default();
    let out = record_into(&trace)
        .arg(&prog)
        .args([
            "2", "fork", "1", "1", "3", "execv", "4", "execlp", "2", "true",
        ])
        .env("PATH", format!("{}:{path}", dir.display()))
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    trace
}

/// The report's text.
fn report(trace: &Path) -> String {
    let out = run_ok(hyscope().arg("report").arg(trace));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The report's process lines (`  child process          rank 1 is …`,
/// `  new program …`, `  exec …`):
/// (label, line), in order.
fn reported(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| {
            ["  child process ", "  new program ", "  exec "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| {
            let (label, line) = l.split_at(25);
            (label.trim().to_string(), line.to_string())
        })
        .collect()
}

/// The inside of the box whose top border starts with `┌{title}` at the
/// left of the frame, one string per row.
fn left_box(frame: &str, title: &str) -> Vec<String> {
    let rows: Vec<&str> = frame.lines().collect();
    let top = rows
        .iter()
        .position(|r| r.starts_with(&format!("┌{title}")))
        .unwrap_or_else(|| panic!("no box {title}:\n{frame}"));
    rows[top + 1..]
        .iter()
        .take_while(|r| !r.starts_with('└'))
        .map(|r| {
            let inner: String = r.chars().skip(1).collect();
            inner.split('│').next().unwrap_or("").to_string()
        })
        .collect()
}

/// The Run box's process lines: (label, line), each line's rows joined.
fn listed(run: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for row in run {
        let (label, text) = row.split_at(
            row.char_indices()
                .nth(LABEL_W)
                .map_or(row.len(), |(i, _)| i),
        );
        let label = label.trim();
        if ["child process", "new program", "exec"].contains(&label) {
            out.push((label.to_string(), text.trim().to_string()));
        } else if label.is_empty()
            && let Some((_, line)) = out.last_mut()
        {
            line.push(' ');
            line.push_str(text.trim());
        }
    }
    out
}

/// The Run box's last row that is not empty.
fn last_row(run: &[String]) -> String {
    run.iter()
        .rev()
        .find(|r| !r.trim().is_empty())
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_summary_lists_the_reports_process_lines() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(dir.path());
    let text = report(&trace);
    let want = reported(&text);
    // The fork's child and the three programs exec'd; four execs.
    let count = |label: &str| want.iter().filter(|(l, _)| l == label).count();
    assert_eq!(
        (count("child process"), count("new program"), count("exec")),
        (1, 3, 4),
        "{text}"
    );
    assert!(
        want.iter()
            .any(|(_, l)| l.contains("exec'd /bin/true, which recorded nothing")),
        "{text}"
    );

    let data = Data::open_blocking(&trace).expect("open trace");
    let mut app = App::new(data);
    let frame = render(&mut app, 80, 50);
    assert!(
        frame.contains("ranks 1 (+ 1 child process, 3 exec'd programs)"),
        "{frame}"
    );
    let run = left_box(&frame, "Run");
    assert_eq!(listed(&run), want, "{frame}");

    // What the POP metrics count and leave out, as the report says it:
    // whole, wrapped in the POP box's half of the terminal.
    let scope: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("one process per rank") || l.starts_with("not counted: "))
        .collect();
    assert_eq!(scope.len(), 2, "{text}");
    let tall = render(&mut app, 80, 60);
    // Every value of the POP tree ends at the box's right edge, a 7-character
    // `100.0 %` as a 6-character `49.6 %` (it had stood one column right).
    let tree: Vec<usize> = left_box(&tall, "POP efficiency")
        .iter()
        .map(|r| r.trim_end_matches(' ').to_string())
        .take_while(|r| r.ends_with(" %") || r.ends_with("n/a"))
        .map(|r| r.chars().count())
        .collect();
    assert!(
        tree.len() >= 5 && tree.iter().all(|&w| w == tree[0]),
        "{tree:?}\n{tall}"
    );
    let pop = left_box(&tall, "POP efficiency")
        .iter()
        .map(|r| r.trim().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    for line in scope {
        assert!(pop.contains(line), "{line}:\n{tall}");
    }
}

/// On a 24-row terminal the lines the Run box has no room for are counted
/// on its last row, never cut silently: the report's first lines, whole,
/// then how many more the report lists.
#[test]
fn on_a_short_terminal_the_lines_left_out_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let trace = record(dir.path());
    let want = reported(&report(&trace));
    let data = Data::open_blocking(&trace).expect("open trace");
    let mut app = App::new(data);
    let frame = render(&mut app, 80, 24);
    let run = left_box(&frame, "Run");
    let shown = listed(&run);
    assert!(!shown.is_empty() && shown.len() < want.len(), "{frame}");
    assert_eq!(shown, want[..shown.len()], "{frame}");
    assert_eq!(
        last_row(&run).trim_end(),
        format!(
            "… and {} more (hyscope report lists them all)",
            want.len() - shown.len()
        ),
        "{frame}"
    );
}

//! Drives the real `hyscope tui` in a real terminal (tmux): every tab, zoom,
//! help, quit; asserts on what the pane shows.

#![allow(dead_code)]

use crate::tui_common;
use hyscope_testkit::OutputWithin;

use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux")
        .args(args)
        .output_within_limit()
        .expect("tmux runs");
    assert!(
        out.status.success(),
        "tmux {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Send keys, then wait until the pane shows `want` (or fail after 10 s).
fn expect(s: &Session, keys: &[&str], want: &str) -> String {
    expect_all(s, keys, &[want])
}

/// Send keys, then wait until the pane shows every one of `wants` at once
/// (or fail after 10 s): a capture can fall in the middle of a redraw, with
/// the new tab's first lines above the previous tab's last.
fn expect_all(s: &Session, keys: &[&str], wants: &[&str]) -> String {
    for k in keys {
        tmux(&["send-keys", "-t", &s.0, k]);
    }
    let start = Instant::now();
    loop {
        let pane = tmux(&["capture-pane", "-p", "-t", &s.0]);
        if wants.iter().all(|w| pane.contains(w)) {
            return pane;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "after {keys:?} the pane does not show {wants:?}:\n{pane}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn real_terminal_through_every_tab() {
    let dir = tui_common::write_trace("tmux");
    let name = format!("hyscope-tui-test-{}", std::process::id());
    let done = dir.join("exit-status");
    let cmd = format!(
        "{} tui {}; echo $? > {}; sleep 30",
        env!("CARGO_BIN_EXE_hyscope"),
        dir.display(),
        done.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ]);
    let s = Session(name);

    expect(&s, &[], "ranks 2  threads/rank 2  nodes 1");
    expect(&s, &[], "POP efficiency (4 cores");
    expect_all(
        &s,
        &["2"],
        &[
            "Timeline 0 ns – 10.00 ms (10.00 ms shown)",
            "▸rank 0",
            "▸rank 1",
        ],
    );
    // The interval under the cursor, read from the trace on a worker thread.
    expect(
        &s,
        &[],
        "rank 0 thread 0: MPI_Init_thread [MPI other] 900.0 µs at 0 ns",
    );
    expect(&s, &["+"], "(5.00 ms shown)");
    expect(&s, &["+"], "(2.50 ms shown)");
    expect(&s, &["Enter"], " thread 1");
    expect(&s, &["-"], "(5.00 ms shown)");
    expect(&s, &["0"], "(10.00 ms shown)");
    expect_all(&s, &["3"], &["OpenMP regions (1)", "12.00 ms", "160.0 µs"]);
    expect(&s, &["Enter"], "threads of hybrid.c:40");
    expect(&s, &["4"], "r0t0");
    expect_all(&s, &["5"], &["MPI calls (6)", "1.01 MiB"]);
    expect(&s, &["Right"], "eager 10  rendezvous 1");
    expect(&s, &["Right"], "communication matrix");
    expect(&s, &["Right"], "late sender");
    expect(&s, &["6"], "20.00 MiB");
    expect(&s, &["Right"], "resident memory (VmRSS)");
    expect(&s, &["7"], "Energy: not measured");
    expect(&s, &["?"], "Keys — any key closes");
    expect(&s, &["Escape"], "Energy: not measured");
    // Resize: the frame follows the terminal.
    tmux(&["resize-window", "-t", &s.0, "-x", "80", "-y", "24"]);
    expect(&s, &["1"], "ranks 2  threads/rank 2");
    tmux(&["send-keys", "-t", &s.0, "q"]);
    let start = Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hyscope tui did not quit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(std::fs::read_to_string(&done).unwrap().trim(), "0");
}

/// `hyscope tui A B` in a real terminal: an eighth tab, the Differences,
/// with the caveat of the other rank count before the rows.
#[test]
fn two_traces_open_a_differences_tab() {
    let a = tui_common::write_trace("tmux-cmp-a");
    let b = tui_common::write_trace_ranks("tmux-cmp-b", 4);
    let name = format!("hyscope-tui-cmp-{}", std::process::id());
    let cmd = format!(
        "{} tui {} {}; sleep 30",
        env!("CARGO_BIN_EXE_hyscope"),
        a.display(),
        b.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "80",
        "-y",
        "24",
        &cmd,
    ]);
    let s = Session(name);
    expect(&s, &[], "8 Differences");
    expect_all(
        &s,
        &["8"],
        &[
            "! different rank counts: A has 2 ranks, B 4",
            "Differences (B − A)",
            "duration",
            "Tab/1-8 tabs",
        ],
    );
}

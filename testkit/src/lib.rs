//! What the end-to-end tests of several crates share. Tests only: no crate
//! of the product depends on it.
//!
//! [`output_within`] (and [`OutputWithin::output_within_limit`], in place
//! of `Command::output`): a launcher (`mpirun`, `mpiexec.mpich`, `hyscope
//! record -- …`) run with a deadline, so that a hung MPI job fails its test,
//! naming the command, instead of holding the whole test run.
//!
//! With the feature `trace` (the analyzer's and the viewer's tests):
//! [`trace::Builder`], synthetic traces written with the real format writer,
//! [`late_sender::late_sender`], the run the comparison tests compare, and
//! [`fixtures::over_openib`], a recorded trace said to have run over openib.

#[cfg(feature = "trace")]
pub mod fixtures;
#[cfg(feature = "trace")]
pub mod late_sender;
#[cfg(feature = "trace")]
pub mod trace;

/// The line of `hyscope report A B`'s difference table for `item` and
/// `metric` (the comparison tests read the text as a user does).
pub fn compare_line<'a>(text: &'a str, item: &str, metric: &str) -> &'a str {
    text.lines()
        .find(|l| {
            let l = l.trim_start();
            l.starts_with(item) && l.split_whitespace().any(|w| w == metric)
        })
        .unwrap_or_else(|| panic!("no {item} {metric} line in\n{text}"))
}

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a launcher may run in the tests (each job takes seconds).
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(300);

/// `cmd.output()`, but a command still running after `limit` is killed with
/// every process it started, and the calling test fails naming it (an
/// MPICH job hung once in `PMPI_Init`, its `hydra_pmi_proxy` spinning in its
/// clean-up loop).
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    try_output_within(cmd, limit).unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// [`output_within`], with the error of a command that cannot be started
/// returned as [`Command::output`] returns it. As there, the command's
/// standard input is closed (`/dev/null`), not the test's.
pub fn try_output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Output> {
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if start.elapsed() > limit {
            // The ranks may have a process group of their own (MPICH's
            // proxy gives them one): every descendant, found while the
            // command still holds them, then the command's group.
            for pid in descendants(child.id()) {
                // SAFETY: signals a process this test started.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            // SAFETY: signals the command's own process group.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            // The pipes may still be held by a process that escaped: not
            // waited for.
            panic!("{cmd:?} still ran after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// `cmd.output_within_limit()` in place of `cmd.output()`: the same result,
/// under [`LAUNCH_LIMIT`] ([`try_output_within`]).
pub trait OutputWithin {
    fn output_within_limit(&mut self) -> std::io::Result<Output>;
}

impl OutputWithin for Command {
    fn output_within_limit(&mut self) -> std::io::Result<Output> {
        try_output_within(self, LAUNCH_LIMIT)
    }
}

/// Read a pipe to its end on a thread of its own (two pipes read in turn
/// can deadlock against a child filling the other).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// The processes below `root` (children, theirs, …), from `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|&&(_, pp)| pp == p).map(|&(c, _)| c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Cut `file` to half its length, as a crash or a full disk leaves a file:
/// the damage the readers must name rather than read past.
pub fn truncate_to_half(file: &std::path::Path) {
    let len = std::fs::metadata(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .and_then(|f| f.set_len(len / 2))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_within_its_limit_gives_its_output() {
        let out = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn the_command_reads_no_input_as_with_command_output() {
        let mut cmd = Command::new("readlink");
        cmd.arg("/proc/self/fd/0");
        let ours = cmd.output_within_limit().expect("readlink starts");
        let std = cmd.output().expect("readlink starts");
        assert_eq!(ours.stdout, b"/dev/null\n");
        assert_eq!(ours.stdout, std.stdout);
        let missing = Command::new("/nonexistent/command").output_within_limit();
        assert_eq!(
            missing.expect_err("no such command").kind(),
            std::io::ErrorKind::NotFound
        );
    }

    #[test]
    fn a_command_past_its_limit_is_killed_with_its_own_process_group() {
        // A grandchild that moves to a process group of its own, as MPICH's
        // ranks do: killed too.
        let marker = std::env::temp_dir().join(format!("testkit-{}", std::process::id()));
        let script = format!(
            "setsid sh -c 'echo $$ > {0}; exec sleep 60' & sleep 60",
            marker.display()
        );
        let failed = std::thread::spawn(move || {
            output_within(
                Command::new("sh").args(["-c", &script]),
                Duration::from_millis(500),
            )
        })
        .join();
        let message = failed.expect_err("the command outlived its limit");
        let text = message
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(text.contains("still ran after 500ms: killed"), "{text}");
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _ = std::fs::remove_file(&marker);
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "));
        assert!(!alive, "the grandchild {pid} in its own group survived");
    }
}

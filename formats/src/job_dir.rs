//! Which run a trace directory belongs to, so that a run never writes into
//! an earlier run's trace.
//!
//! A directory named by `HYSCOPE_OUTPUT` may already hold a trace: the same
//! job script run twice, a library preloaded by hand. The collector creates
//! its files with names of their own (rank files, spool and parts per rank
//! and process), so the second run's files would sit beside the first's:
//! ranks of the first run read as child processes of the second, parts of
//! both counted under one rank. Every process of a job therefore marks the
//! directory as its job's before it writes anything ([`JOB_MARKER`]), and a
//! process that finds another run's mark, or a trace without a mark, takes
//! the first of `DIR-2`, `DIR-3`, … that is new or its own job's. The ranks
//! of one job, each deciding on its own, take the same one: they scan in
//! the same order and the first to mark a directory marks it for all.
//!
//! A job is what the launcher tells every rank ([`job_key`]); a process
//! started without one (a program run by hand, and whatever it starts) is
//! its run's first process and its descendants on its host.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::trace_name::{job_key, parent_of};

/// The mark a run leaves in its trace directory before it writes anything.
pub const JOB_MARKER: &str = ".hyscope-job";

/// How many numbered siblings (`DIR-2` …) are tried before giving up.
const MAX_SIBLINGS: u32 = 99;

/// Where a process asked to write its trace to a directory writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDir {
    /// The directory this process's run writes to.
    pub dir: PathBuf,
    /// The directory asked for, when it held an earlier run's trace and
    /// [`JobDir::dir`] is a sibling instead.
    pub moved_from: Option<PathBuf>,
}

/// Who this process's run is, as written in the mark.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mark {
    key: Option<String>,
    host: String,
    pid: u32,
}

impl Mark {
    fn own() -> Mark {
        Mark {
            key: job_key(),
            host: crate::hostname(),
            pid: std::process::id(),
        }
    }

    fn to_text(&self) -> String {
        format!(
            "key {}\nhost {}\npid {}\n",
            self.key.as_deref().unwrap_or("-"),
            self.host,
            self.pid
        )
    }

    fn parse(text: &str) -> Option<Mark> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .map(str::trim)
        };
        Some(Mark {
            key: field("key").filter(|k| *k != "-").map(str::to_string),
            host: field("host")?.to_string(),
            pid: field("pid")?.parse().ok()?,
        })
    }

    /// Whether `self` (read from a directory) may mark the run of `me`:
    /// false only where it shows another run. Two job keys tell; two marks
    /// without one, by the process that made it (this one or an ancestor on
    /// this host). One key against none cannot tell (a rank whose launcher
    /// could not be seen) and is taken for the same run, as before marks.
    fn is_run_of(&self, me: &Mark) -> bool {
        match (&self.key, &me.key) {
            (Some(theirs), Some(mine)) => theirs == mine,
            (None, None) => self.host == me.host && is_self_or_ancestor(self.pid),
            (Some(_), None) | (None, Some(_)) => true,
        }
    }
}

/// Whether `pid` is this process or one of its ancestors.
fn is_self_or_ancestor(pid: u32) -> bool {
    let mut current = std::process::id();
    for _ in 0..64 {
        if current == pid {
            return true;
        }
        match parent_of(current) {
            Some(parent) if parent != 0 && parent != current => current = parent,
            _ => return false,
        }
    }
    false
}

/// Whether `dir` holds a trace that no mark claims: files the collector
/// writes (a rank file is made when a process first writes), not what
/// `hyscope record` prepares before the job starts.
fn holds_unmarked_trace(dir: &Path) -> bool {
    [
        "ranks",
        "spool",
        "omp",
        "mpi",
        "samples",
        "symbols",
        "phases",
        crate::MANIFEST_FILE,
    ]
    .iter()
    .any(|name| dir.join(name).exists())
}

enum Verdict {
    /// New, prepared for the job, or marked by this process's run.
    Ours,
    /// Marked by another run, or holding a trace no mark claims.
    Theirs,
}

/// Whether this process's run may write to `dir`; nothing is written (a
/// process that never records, such as a shell the program starts, leaves
/// no trace directory behind).
fn judge(dir: &Path, me: &Mark) -> Verdict {
    let by_mark = |text: String| match Mark::parse(&text) {
        Some(mark) if mark.is_run_of(me) => Verdict::Ours,
        _ => Verdict::Theirs,
    };
    let marker = dir.join(JOB_MARKER);
    if let Ok(text) = std::fs::read_to_string(&marker) {
        return by_mark(text);
    }
    if !holds_unmarked_trace(dir) {
        return Verdict::Ours;
    }
    // A process of the run may have marked the directory and written its
    // first files since the mark was read: every file follows its writer's
    // mark, so a trace seen now has its mark by now, if it has one.
    match std::fs::read_to_string(&marker) {
        Ok(text) => by_mark(text),
        Err(_) => Verdict::Theirs,
    }
}

/// Mark `dir` as this process's run's, creating it: called before the
/// process writes anything there. A mark already there is left as it is.
pub fn mark(dir: &Path) {
    mark_as(dir, &Mark::own());
}

fn mark_as(dir: &Path, me: &Mark) {
    let marker = dir.join(JOB_MARKER);
    if marker.exists() || std::fs::create_dir_all(dir).is_err() {
        return;
    }
    // Written whole under a name of its own, then linked to the mark's name,
    // which fails if another process marked first: a reader never sees half
    // a mark. A directory that cannot be written is said by the writes that
    // follow.
    let tmp = dir.join(format!("{JOB_MARKER}.{}", me.pid));
    if std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(me.to_text().as_bytes()))
        .is_ok()
    {
        let _ = std::fs::hard_link(&tmp, &marker);
    }
    let _ = std::fs::remove_file(&tmp);
}

/// `dir-N`: the directory's name with `-N` appended.
fn sibling(dir: &Path, n: u32) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(format!("-{n}"));
    dir.with_file_name(name)
}

/// Where this process writes the trace it was asked to write to `dir`
/// (module documentation). Writes nothing: [`mark`] the directory before
/// the first write. `launched` says that a launcher started this process as
/// a rank: where it gives no job key, the ranks of one job cannot be told
/// from an earlier job's, and `dir` is kept as asked.
pub fn job_output_dir(dir: &Path, launched: bool) -> JobDir {
    let me = Mark::own();
    if launched && me.key.is_none() {
        return JobDir {
            dir: dir.to_path_buf(),
            moved_from: None,
        };
    }
    job_output_dir_as(dir, &me)
}

fn job_output_dir_as(dir: &Path, me: &Mark) -> JobDir {
    if matches!(judge(dir, me), Verdict::Ours) {
        return JobDir {
            dir: dir.to_path_buf(),
            moved_from: None,
        };
    }
    (2..=MAX_SIBLINGS)
        .map(|n| sibling(dir, n))
        .find(|candidate| matches!(judge(candidate, me), Verdict::Ours))
        .map_or_else(
            || JobDir {
                dir: dir.to_path_buf(),
                moved_from: None,
            },
            |candidate| JobDir {
                dir: candidate,
                moved_from: Some(dir.to_path_buf()),
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hyscope-job-dir-{name}-{}", std::process::id()));
        for n in 1..5 {
            let _ = std::fs::remove_dir_all(if n == 1 { d.clone() } else { sibling(&d, n) });
        }
        d
    }

    fn job(key: &str) -> Mark {
        Mark {
            key: Some(key.into()),
            host: "node1".into(),
            pid: 1,
        }
    }

    /// A process of `me`'s run starting and then writing (marking first).
    fn start_and_write(dir: &Path, me: &Mark) -> JobDir {
        let chosen = job_output_dir_as(dir, me);
        mark_as(&chosen.dir, me);
        std::fs::create_dir_all(chosen.dir.join("ranks")).unwrap();
        chosen
    }

    fn clean(d: &Path) {
        for n in 1..5 {
            let _ = std::fs::remove_dir_all(if n == 1 {
                d.to_path_buf()
            } else {
                sibling(d, n)
            });
        }
    }

    #[test]
    fn choosing_writes_nothing() {
        let d = fresh("nothing");
        assert_eq!(job_output_dir_as(&d, &job("a")).dir, d);
        assert!(!d.exists());
    }

    #[test]
    fn every_rank_of_a_job_keeps_the_directory_its_first_rank_wrote_to() {
        let d = fresh("new");
        assert_eq!(start_and_write(&d, &job("a")).dir, d);
        let again = start_and_write(&d, &job("a"));
        assert_eq!((again.dir, again.moved_from), (d.clone(), None));
        clean(&d);
    }

    #[test]
    fn an_earlier_jobs_trace_sends_the_next_job_to_a_sibling_it_shares() {
        let d = fresh("earlier");
        assert_eq!(start_and_write(&d, &job("a")).dir, d);
        // Job b's ranks decide before any of them writes, and after.
        assert_eq!(job_output_dir_as(&d, &job("b")).dir, sibling(&d, 2));
        let b0 = start_and_write(&d, &job("b"));
        assert_eq!(b0.dir, sibling(&d, 2));
        assert_eq!(b0.moved_from.as_deref(), Some(d.as_path()));
        assert_eq!(start_and_write(&d, &job("b")).dir, sibling(&d, 2));
        assert_eq!(start_and_write(&d, &job("c")).dir, sibling(&d, 3));
        // The first mark stays: a later run marks nothing it does not own.
        mark_as(&d, &job("z"));
        assert_eq!(start_and_write(&d, &job("a")).dir, d);
        clean(&d);
    }

    #[test]
    fn a_trace_without_a_mark_is_an_earlier_runs() {
        let d = fresh("unmarked");
        std::fs::create_dir_all(d.join("ranks")).unwrap();
        std::fs::write(d.join("ranks/rank-0.json"), "{}").unwrap();
        assert_eq!(job_output_dir_as(&d, &job("a")).dir, sibling(&d, 2));
        // What `hyscope record` prepares before the job is not a trace.
        let e = fresh("prepared");
        std::fs::create_dir_all(e.join(".runtime")).unwrap();
        assert_eq!(job_output_dir_as(&e, &job("a")).dir, e);
        clean(&d);
        clean(&e);
    }

    #[test]
    fn without_a_launcher_a_run_is_a_process_and_its_descendants() {
        let me = Mark {
            key: None,
            host: crate::hostname(),
            pid: std::process::id(),
        };
        let d = fresh("nolauncher");
        assert_eq!(start_and_write(&d, &me).dir, d);
        assert_eq!(start_and_write(&d, &me).dir, d);
        // This process's parent marked it: this process is of that run.
        let e = fresh("parent");
        std::fs::create_dir_all(&e).unwrap();
        let parent = Mark {
            key: None,
            host: crate::hostname(),
            pid: std::os::unix::process::parent_id(),
        };
        std::fs::write(e.join(JOB_MARKER), parent.to_text()).unwrap();
        assert_eq!(job_output_dir_as(&e, &me).dir, e);
        // A process that is not an ancestor (a child of this one, ended)
        // ran before: a sibling.
        let f = fresh("stranger");
        std::fs::create_dir_all(&f).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let stranger = Mark {
            key: None,
            host: crate::hostname(),
            pid: child.id(),
        };
        child.wait().unwrap();
        std::fs::write(f.join(JOB_MARKER), stranger.to_text()).unwrap();
        assert_eq!(job_output_dir_as(&f, &me).dir, sibling(&f, 2));
        for p in [d, e, f] {
            clean(&p);
        }
    }

    /// A rank whose launcher it could not see (no key) and one whose it
    /// could, of one job (MPICH's Hydra behind `hyscope record`): one
    /// directory.
    #[test]
    fn a_key_against_none_cannot_tell_and_keeps_the_directory() {
        let d = fresh("mixed");
        let keyless = Mark {
            key: None,
            host: "node1".into(),
            pid: 1,
        };
        assert_eq!(start_and_write(&d, &keyless).dir, d);
        assert_eq!(start_and_write(&d, &job("hydra-vm_1")).dir, d);
        let e = fresh("mixed-other-way");
        assert_eq!(start_and_write(&e, &job("hydra-vm_1")).dir, e);
        assert_eq!(start_and_write(&e, &keyless).dir, e);
        clean(&d);
        clean(&e);
    }

    /// Ranks of one job starting while others already write: every one
    /// keeps the directory (a rank that read no mark, then saw the files
    /// another rank wrote after marking, took it for an earlier run's).
    #[test]
    fn ranks_starting_while_others_write_keep_the_directory() {
        for round in 0..1000 {
            let d = fresh(&format!("race-{round}"));
            let moved: usize = std::thread::scope(|s| {
                let ranks: Vec<_> = (0..6)
                    .map(|pid| {
                        let rank = Mark { pid, ..job("a") };
                        let d = &d;
                        s.spawn(move || start_and_write(d, &rank).moved_from.is_some())
                    })
                    .collect();
                ranks
                    .into_iter()
                    .map(|r| usize::from(r.join().unwrap()))
                    .sum()
            });
            clean(&d);
            assert_eq!(moved, 0, "round {round}: {moved} of 6 ranks moved");
        }
    }

    #[test]
    fn a_mark_reads_back() {
        let m = job("ompi-1234.0;tcp://10.0.0.1:5000");
        assert_eq!(Mark::parse(&m.to_text()), Some(m));
        assert_eq!(Mark::parse("garbage"), None);
    }
}

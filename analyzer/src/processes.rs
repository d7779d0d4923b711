//! The trace's processes beyond the job's ranks: children a rank started
//! (`fork`, or `fork` and `exec`), and the programs a process ran one after
//! the other, each putting the next in its place by an exec.
//!
//! Each program of a process has an id of its own, with the process's
//! host and pid. The ids of one process's programs come in the order the
//! programs ran: a program takes its id when it starts recording, after the
//! one before it ended, and takes the first free one after the job's ranks
//! (files are never given back). So the program after one that ended by an
//! exec is the one of the same host and pid with the next id.
//!
//! [`Processes`] is the one rule for which ids ran at the same time, read
//! by every figure per rank (the POP metrics, the findings' means over
//! ranks, the CPU placement, the MPI memory model's ranks per node, the
//! phases): a process is the programs it ran one after the other, each put
//! in the place of the one before by an exec, on one time line; the job's
//! ranks are the processes the launcher started, and a process a rank
//! started (`fork`) is a child process, not a rank of the job, though it
//! ran at the same time as its rank.

use std::collections::{BTreeMap, BTreeSet};

use hyscope_format::{ProcessEnd, RankInfo};

use crate::model::{ChildProcess, ExecEnd, RunFacts};

/// Each process's programs: (host, pid) → their ids, in order.
fn programs(ranks: &[RankInfo]) -> BTreeMap<(&str, u32), Vec<u32>> {
    let mut by: BTreeMap<(&str, u32), Vec<u32>> = BTreeMap::new();
    // pid 0: a trace that does not say (before rank files had it).
    for r in ranks.iter().filter(|r| r.pid != 0) {
        by.entry((r.host.as_str(), r.pid)).or_default().push(r.rank);
    }
    for ids in by.values_mut() {
        ids.sort_unstable();
    }
    by
}

/// The program before (`step` -1) or after (+1) `r` in its process.
fn beside(by: &BTreeMap<(&str, u32), Vec<u32>>, r: &RankInfo, step: isize) -> Option<u32> {
    let ids = by.get(&(r.host.as_str(), r.pid))?;
    let at = ids.binary_search(&r.rank).ok()?;
    ids.get(at.checked_add_signed(step)?).copied()
}

fn ended_by_exec(r: &RankInfo) -> bool {
    matches!(r.end, Some(ProcessEnd::Exec { .. }))
}

/// The processes a rank started and the programs an exec started, in id order.
pub fn children(ranks: &[RankInfo]) -> Vec<ChildProcess> {
    let by = programs(ranks);
    let by_id: BTreeMap<u32, &RankInfo> = ranks.iter().map(|r| (r.rank, r)).collect();
    ranks
        .iter()
        .filter_map(|r| {
            let of = r.child_of?;
            let exec_of =
                beside(&by, r, -1).filter(|id| by_id.get(id).is_some_and(|p| ended_by_exec(p)));
            Some(ChildProcess {
                rank: r.rank,
                of_rank: of.rank,
                pid: r.pid,
                parent_pid: of.parent_pid,
                command: r.command.clone(),
                exec_of,
            })
        })
        .collect()
}

/// The programs that ended by an exec, with the one that followed each.
pub fn execs(ranks: &[RankInfo]) -> Vec<ExecEnd> {
    let by = programs(ranks);
    ranks
        .iter()
        .filter_map(|r| {
            let Some(ProcessEnd::Exec { path }) = &r.end else {
                return None;
            };
            Some(ExecEnd {
                rank: r.rank,
                pid: r.pid,
                path: path.clone(),
                next: beside(&by, r, 1),
            })
        })
        .collect()
}

/// Which process each of the trace's ids ran in ([`children`]' `exec_of`
/// links): a process is named by the id of its first program.
#[derive(Debug, Clone, Default)]
pub struct Processes {
    /// Each program an exec started → the program it replaced.
    exec_of: BTreeMap<u32, u32>,
    /// The first programs of the processes ranks started (`fork`).
    forked: BTreeSet<u32>,
}

impl Processes {
    pub fn of(children: &[ChildProcess]) -> Processes {
        let mut p = Processes::default();
        for c in children {
            match c.exec_of {
                // An exec'd program's id comes after the one it replaced's.
                Some(of) if of < c.rank => {
                    p.exec_of.insert(c.rank, of);
                }
                _ => {
                    p.forked.insert(c.rank);
                }
            }
        }
        p
    }

    /// The id of the first program of `id`'s process (`id` itself unless an
    /// exec started it).
    pub fn process_of(&self, mut id: u32) -> u32 {
        while let Some(&of) = self.exec_of.get(&id) {
            id = of;
        }
        id
    }

    /// Whether `id` ran in one of the job's ranks (the processes the
    /// launcher started, with the programs they exec'd), not in a child
    /// process a rank started.
    pub fn in_job_rank(&self, id: u32) -> bool {
        !self.forked.contains(&self.process_of(id))
    }

    /// `ids`' programs by process (the id of its first program), each
    /// process's in the order they ran.
    pub fn group(&self, ids: impl IntoIterator<Item = u32>) -> BTreeMap<u32, Vec<u32>> {
        let mut by: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for id in ids {
            by.entry(self.process_of(id)).or_default().push(id);
        }
        for v in by.values_mut() {
            v.sort_unstable();
            v.dedup();
        }
        by
    }

    /// How many processes `ids` ran in: what a mean over the ranks that
    /// ran something divides by.
    pub fn count(&self, ids: impl IntoIterator<Item = u32>) -> usize {
        ids.into_iter()
            .map(|id| self.process_of(id))
            .collect::<BTreeSet<u32>>()
            .len()
    }

    /// The processes the per-rank means of the run divide by (at least 1):
    /// those of the ids analysed (a rank left out for a damaged part is in
    /// no number), a process's programs once, a child process apart (it
    /// ran at the same time as its rank).
    pub fn for_means(&self, run: &RunFacts) -> u32 {
        let analysed = (0..run.ranks).filter(|id| !run.ranks_left_out.contains(id));
        (self.count(analysed) as u32).max(1)
    }

    /// The OpenMP threads the job ran at once: over its processes, the
    /// most threads of any of a process's programs (they never ran at the
    /// same time), at least 1.
    pub fn threads_at_once(&self, run: &RunFacts) -> u32 {
        let mut most: BTreeMap<u32, u32> = BTreeMap::new();
        for (id, &t) in run.threads_per_rank.iter().enumerate() {
            let m = most.entry(self.process_of(id as u32)).or_default();
            *m = (*m).max(t);
        }
        most.values().sum::<u32>().max(1)
    }
}

/// The job's ranks: the trace's ids but the child processes' and the
/// programs exec'd (each of which has an id after the ranks).
pub fn job_ranks(run: &RunFacts) -> u32 {
    run.ranks.saturating_sub(run.children.len() as u32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyscope_format::ChildOf;

    fn program(rank: u32, host: &str, pid: u32, end: ProcessEnd) -> RankInfo {
        RankInfo {
            rank,
            host: host.into(),
            pid,
            end: Some(end),
            ..RankInfo::default()
        }
    }

    fn exec(path: &str) -> ProcessEnd {
        ProcessEnd::Exec { path: path.into() }
    }

    fn child(mut r: RankInfo, of: u32, parent_pid: u32) -> RankInfo {
        r.child_of = Some(ChildOf {
            rank: of,
            parent_pid,
        });
        r
    }

    /// Rank 0 (pid 10) exec'd twice (ids 2, then 4); rank 1 (pid 11, same
    /// pid on another host as a forked child's) forked pid 12 (id 3), which
    /// finished; another host's pid 10 is another process.
    #[test]
    fn the_program_after_an_exec_is_the_next_id_of_its_process() {
        let ranks = vec![
            program(0, "a", 10, exec("/bin/b")),
            program(1, "b", 10, ProcessEnd::Finished),
            child(program(2, "a", 10, exec("/bin/c")), 0, 9),
            child(program(3, "b", 12, ProcessEnd::Finished), 1, 10),
            child(program(4, "a", 10, ProcessEnd::Finished), 0, 9),
        ];
        let kids = children(&ranks);
        let pairs: Vec<(u32, Option<u32>)> = kids.iter().map(|c| (c.rank, c.exec_of)).collect();
        assert_eq!(pairs, vec![(2, Some(0)), (3, None), (4, Some(2))]);
        assert_eq!(
            kids[0].describe(),
            "rank 2 is pid 10, the program rank 0 exec'd: "
        );
        assert!(
            kids[1]
                .describe()
                .starts_with("rank 3 is pid 12, started by rank 1 (parent pid 10)")
        );
        let ends: Vec<(u32, Option<u32>)> =
            execs(&ranks).iter().map(|e| (e.rank, e.next)).collect();
        assert_eq!(ends, vec![(0, Some(2)), (2, Some(4))]);
        assert_eq!(
            execs(&ranks)[1].describe(),
            "rank 2 (pid 10) exec'd /bin/c, which recorded as rank 4; everything rank 2 recorded before is in the trace"
        );
    }

    /// Rank 0 exec'd twice (ids 2, 4) and rank 1 forked a child (id 3),
    /// which exec'd (id 5): three processes, the child's not a rank.
    #[test]
    fn a_process_is_its_programs_one_after_the_other() {
        let ranks = vec![
            program(0, "a", 10, exec("/bin/b")),
            program(1, "a", 11, ProcessEnd::Finished),
            child(program(2, "a", 10, exec("/bin/c")), 0, 9),
            child(program(3, "a", 12, exec("/bin/d")), 1, 11),
            child(program(4, "a", 10, ProcessEnd::Finished), 0, 9),
            child(program(5, "a", 12, ProcessEnd::Finished), 1, 11),
        ];
        let run = RunFacts {
            ranks: 6,
            threads_per_rank: vec![2, 4, 8, 1, 3, 2],
            children: children(&ranks),
            ..RunFacts::default()
        };
        let p = Processes::of(&run.children);
        let of: Vec<u32> = (0..6).map(|id| p.process_of(id)).collect();
        assert_eq!(of, [0, 1, 0, 3, 0, 3]);
        let job: Vec<bool> = (0..6).map(|id| p.in_job_rank(id)).collect();
        assert_eq!(job, [true, true, true, false, true, false]);
        assert_eq!(p.count([2, 4]), 1);
        assert_eq!(p.count(0..6), 3);
        assert_eq!(p.for_means(&run), 3);
        // Rank 0's process ran 8 threads at most, rank 1 4, the child 2.
        assert_eq!(p.threads_at_once(&run), 14);
        assert_eq!(job_ranks(&run), 2);
        assert_eq!(
            crate::model::ranks_label(run.ranks, &run.children),
            "2 (+ 1 child process, 3 exec'd programs)"
        );
        let left_out = RunFacts {
            ranks_left_out: vec![1],
            ..run.clone()
        };
        assert_eq!(p.for_means(&left_out), 2);
    }

    /// An exec whose program recorded nothing, and a program after one that
    /// did not end by an exec (a pid the system gave again) is no exec's.
    #[test]
    fn an_exec_without_a_next_program_and_a_pid_given_again() {
        let ranks = vec![
            program(0, "a", 10, exec("")),
            program(1, "a", 20, ProcessEnd::Finished),
            child(program(2, "a", 20, ProcessEnd::Finished), 1, 5),
        ];
        let e = execs(&ranks);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].describe(),
            "rank 0 (pid 10) exec'd another program, which recorded nothing; everything rank 0 recorded before is in the trace"
        );
        assert_eq!(children(&ranks)[0].exec_of, None);
    }
}

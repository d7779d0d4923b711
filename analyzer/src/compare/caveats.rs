//! Why two runs may not compare as they stand: each setup difference that
//! changes the numbers by itself (programs, ranks, threads, hosts,
//! recording modes) and each partial trace; and which run each is.

use std::path::Path;

use crate::model::{Analysis, CompareSide};

/// Which run `x` is.
pub(super) fn side(x: &Analysis) -> CompareSide {
    CompareSide {
        trace_dir: x.trace_dir.clone(),
        command: x.run.command.clone(),
        ranks: x.run.ranks,
        threads: threads(x),
        start_time: x.run.start_time.clone(),
        integrity: x.integrity.clone(),
    }
}

fn threads(x: &Analysis) -> u32 {
    x.run.threads_per_rank.iter().copied().max().unwrap_or(1)
}

/// The program a run ran: its command's file name.
fn program(x: &Analysis) -> Option<String> {
    x.run
        .command
        .first()
        .and_then(|c| Path::new(c).file_name())
        .map(|n| n.to_string_lossy().into_owned())
}

/// Why the differences between `a` and `b` may not be the program's
/// change alone: each setup difference that changes the numbers by itself,
/// and each partial trace. Empty when the two runs compare as they stand.
pub fn caveats(a: &Analysis, b: &Analysis) -> Vec<String> {
    caveats_of((a, "A"), (b, "B"), false, true)
}

/// [`caveats`] with the runs called by other names (`hyscope tune`: "the
/// baseline", "the tuned run"); `same_command`: the two should have run
/// the same command line, so other arguments are a caveat too (a
/// comparison's B usually differs from A by its arguments).
pub fn caveats_between(
    (a, an): (&Analysis, &str),
    (b, bn): (&Analysis, &str),
    same_command: bool,
) -> Vec<String> {
    caveats_of((a, an), (b, bn), same_command, false)
}

/// [`caveats_between`]; `per_rank`: the comparison compares what sums over
/// ranks per rank when the rank counts differ ([`super::compare`]), and says so.
fn caveats_of(
    (a, an): (&Analysis, &str),
    (b, bn): (&Analysis, &str),
    same_command: bool,
    per_rank: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let (ca, cb) = (a.run.command.join(" "), b.run.command.join(" "));
    if let (Some(pa), Some(pb)) = (program(a), program(b))
        && pa != pb
    {
        out.push(format!(
            "different programs: {an} ran `{ca}`, {bn} ran `{cb}`; only what has the same name in both is compared"
        ));
    } else if same_command && ca != cb {
        out.push(format!(
            "different command lines: {an} ran `{ca}`, {bn} ran `{cb}`; their loops may differ for that alone"
        ));
    }
    if a.run.ranks != b.run.ranks {
        let how = if per_rank {
            "what sums over ranks (the times, counts and bytes of regions, loops, MPI calls, wait states and messages, a phase's MPI time and instances) is compared per rank, the sum / the run's ranks; the run's duration, a phase's time (its slowest rank's), efficiencies and energy as they are"
        } else {
            "the times of regions, loops, MPI calls and wait states are sums over ranks"
        };
        out.push(format!(
            "different rank counts: {an} has {} ranks, {bn} {}; {how}",
            a.run.ranks, b.run.ranks
        ));
    }
    let (ta, tb) = (threads(a), threads(b));
    if ta != tb {
        out.push(format!(
            "different thread counts: {an} ran up to {ta} OpenMP threads per rank, {bn} {tb}"
        ));
    }
    let (ha, hb) = (a.run.hosts.len(), b.run.hosts.len());
    if ha != hb {
        out.push(format!(
            "different host counts: {an} ran on {ha} host(s), {bn} on {hb}; messages between hosts cost more than within one"
        ));
    }
    if a.run.mode != b.run.mode {
        out.push(format!(
            "different recording modes: {an} `{}`, {bn} `{}`; profile mode keeps totals only, so some sections exist in one run only",
            a.run.mode, b.run.mode
        ));
    }
    for (name, x) in [(an, a), (bn, b)] {
        let mut lost = x.integrity.problems.iter().filter(|p| p.data_lost);
        if let Some(first) = lost.next() {
            let more = match lost.count() {
                0 => String::new(),
                n => format!(", and {n} more"),
            };
            out.push(format!(
                "{name} is a partial trace ({first}{more}): its numbers leave out what it lost, so its differences are not all the program's"
            ));
        }
    }
    out
}

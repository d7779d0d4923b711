//! `hyscope tune`'s report of predicted against achieved: a tuned run that
//! is not the baseline's command, or lost events, is said so above the
//! per-loop table, since its loops then differ for more than the schedule.
//! The runs are synthetic traces written with the real format writer by
//! the analyzer's test builder, analysed by the real analyzer.

#[path = "../../analyzer/tests/common/mod.rs"]
mod common;

use std::path::Path;

use common::{Builder, MS};
use hyscope_format::mpi_call as c;
use hyscope_viewer::tune::{compare_runs, render};

fn run(command: &str) -> Builder {
    let mut b = Builder::new(2, 1, 1);
    b.manifest.command = command.split(' ').map(String::from).collect();
    for r in 0..2 {
        b.collective(r, c::MPI_Allreduce, 0, MS, -1, 3);
    }
    b
}

fn tune_text(before: &Builder, after: &Builder) -> String {
    let (_d1, a) = before.analyze();
    let (_d2, b) = after.analyze();
    render(&compare_runs(
        &a,
        &b,
        Path::new("base"),
        Path::new("base-tuned"),
        "dynamic,4",
    ))
}

#[test]
fn the_same_command_has_no_caveat() {
    let text = tune_text(&run("./app 100"), &run("./app 100"));
    assert!(!text.contains(" ! "), "{text}");
}

#[test]
fn another_command_line_is_said_before_the_table() {
    let text = tune_text(&run("./app 100"), &run("./app 200"));
    let caveat = text
        .find(
            "different command lines: the baseline ran `./app 100`, the tuned run ran `./app 200`",
        )
        .unwrap_or_else(|| panic!("no caveat in\n{text}"));
    assert!(caveat < text.find("recommended").unwrap(), "{text}");
}

#[test]
fn a_partial_tuned_run_is_said_so() {
    let mut after = run("./app 100");
    after.manifest.ranks[0].dropped_events = 3;
    let text = tune_text(&run("./app 100"), &after);
    let caveat = text
        .lines()
        .find(|l| l.contains("the tuned run is a partial trace ("))
        .unwrap_or_else(|| panic!("no caveat in\n{text}"));
    assert!(caveat.contains(" 3 events"), "{caveat}");
    assert!(!text.contains("the baseline is a partial trace"), "{text}");
}

/// `--loop` with a label the trace has no loop of is said so, with the
/// labels it has, not "nothing to tune".
#[test]
fn an_unknown_loop_label_names_the_loops_there_are() {
    use hyscope_format::{OmpKind, OmpRecord};
    let mut b = run("./app 100");
    b.symbol(0x2000, "stencil.c", 42);
    b.parallel(0, 1, 0x1000, 2, 0, 30 * MS);
    for t in 0..2u32 {
        b.implicit_task(0, 1, t, 0, 30 * MS);
        let end = (10 + 10 * t as i64) * MS;
        for (kind, variant, count, chunk_start) in [
            (OmpKind::Work, 10, 100, 0),
            (OmpKind::Chunk, 3, 50, 50 * t as u64),
        ] {
            b.omp(
                0,
                OmpRecord {
                    thread: t,
                    kind: kind as u8,
                    variant,
                    start_ns: 0,
                    end_ns: end,
                    parallel_id: 1,
                    codeptr: 0x2000,
                    count,
                    chunk_start,
                    team_size: 2,
                    ..OmpRecord::default()
                },
            );
        }
    }
    let (_d, a) = b.analyze();
    let err = hyscope_viewer::tune::pick_schedule(&a, Some("stencil.c:43"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("no loop stencil.c:43 in ") && err.contains("its loops are stencil.c:42"),
        "{err}"
    );
    // The label there is: its advice (rank 0's threads busy 10 and 20 ms).
    assert!(hyscope_viewer::tune::pick_schedule(&a, Some("stencil.c:42")).is_ok());
}

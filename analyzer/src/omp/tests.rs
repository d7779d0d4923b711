use std::collections::BTreeMap;

use hyscope_format::OmpRecord;

use super::kinds::*;
use super::pass::*;
use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};

/// Every aggregate of a rank pass, maps in key order, floats exactly.
fn canonical(p: &RankPass) -> String {
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}",
        p.regions.iter().collect::<BTreeMap<_, _>>(),
        p.loops.iter().collect::<BTreeMap<_, _>>(),
        p.mutexes.iter().collect::<BTreeMap<_, _>>(),
        (
            p.tasks_created,
            p.task_run,
            p.task_runs,
            p.taskwait,
            &p.barrier,
            p.serialized,
            p.clipped,
            p.clipped_ns,
            &p.info,
            p.any_sync_wait,
            p.profile_mode,
            &p.notes,
        )
    )
}

/// The region instances are reduced in parallel blocks and waves: the
/// aggregates (floating-point sums included) are bit-identical to those of
/// one block in one wave, however the rows are split.
#[test]
fn rank_pass_is_identical_however_the_regions_are_split() {
    let spec = OmpTraceSpec {
        threads: 4,
        events_per_rank: 60_000,
        chunks_per_loop: 20,
        ..OmpTraceSpec::default()
    };
    let mut rows = OmpGenerator::all(spec, 3);
    // A region without its parallel row (truncated trace) and a static loop
    // without chunks (cost profile from the static ranges).
    rows.retain(|r| !(r.parallel_id == 7 && r.kind == K_PARALLEL));
    for r in rows.iter_mut().filter(|r| r.parallel_id == 9) {
        if r.kind == K_WORK {
            r.variant = 10;
        }
    }
    rows.retain(|r| !(r.parallel_id == 9 && r.kind == K_CHUNK));
    let whole = canonical(&rank_pass_in(3, &rows, 4, usize::MAX, usize::MAX));
    assert!(whole.contains("profile_ok: true"));
    for (block, wave) in [(1, 1), (1, 3), (100, 1_000), (5_000, 20_000)] {
        let split = canonical(&rank_pass_in(3, &rows, 4, block, wave));
        assert!(split == whole, "blocks of {block} rows, waves of {wave}");
    }
    assert_eq!(canonical(&rank_pass(3, &rows, 4)), whole);
}

/// Grouping in parallel chunks gives the groups of one sequential scan, in
/// order of first appearance, also when regions are interleaved.
#[test]
fn grouping_is_the_same_however_the_rows_are_chunked() {
    let spec = OmpTraceSpec {
        threads: 3,
        events_per_rank: 20_000,
        ..OmpTraceSpec::default()
    };
    let rows = OmpGenerator::all(spec, 1);
    let (a, b) = rows.split_at(rows.len() / 2);
    let mut mixed: Vec<OmpRecord> = Vec::new();
    for i in 0..a.len().max(b.len()) {
        mixed.extend(a.get(i));
        mixed.extend(b.get(i));
    }
    mixed.push(OmpRecord::default()); // parallel_id 0: in no group
    for rows in [&rows, &mixed] {
        let whole = group_rows_in(rows, usize::MAX);
        assert_eq!(
            whole.1.len(),
            1 + rows.iter().filter(|r| r.kind == K_PARALLEL).count()
        );
        for chunk in [1, 7, 1_000] {
            assert!(group_rows_in(rows, chunk) == whole, "chunks of {chunk}");
        }
    }
}

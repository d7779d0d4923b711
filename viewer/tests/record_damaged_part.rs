//! A damaged part leaves its rank out, not the analysis: `tests/mpi/hybrid.c`
//! recorded under real `mpirun` (Open MPI, 2 ranks × 2 threads; each rank
//! sends its partner 2 messages and receives 2), then rank 0's first OpenMP
//! part cut to 100 bytes. The report (text and JSON) covers rank 1, names
//! the file, says "1 of 2 ranks analysed", counts the messages with rank 0
//! apart from the unmatched, and gives rank 1 the numbers of the undamaged
//! trace.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;

use record_support::*;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The entries of `list` (objects with a `rank`) of rank `rank`.
fn of_rank(list: &serde_json::Value, rank: u64) -> Vec<serde_json::Value> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .filter(|e| e["rank"] == rank)
        .cloned()
        .collect()
}

#[test]
fn a_truncated_openmp_part_leaves_its_rank_out_and_the_other_rank_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "hybrid");
    let whole = tmp.path().join("whole");
    record_mpi_job(&whole, &exe, 2);
    let damaged = tmp.path().join("damaged");
    copy_dir(&whole, &damaged);
    let file = "omp/rank=0/part-0.parquet";
    let part = damaged.join(file);
    assert!(part.is_file(), "{} not recorded", part.display());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&part)
        .unwrap()
        .set_len(100)
        .unwrap();

    let a = report_json(&whole);
    let b = report_json(&damaged);
    // The undamaged trace: 4 messages, every rank analysed.
    assert_eq!(a["messages"]["messages"].as_array().unwrap().len(), 4);
    assert!(a.get("ranks_left_out").is_none(), "{}", a["ranks_left_out"]);

    // Rank 0 is left out, with its file and problem.
    let left = b["ranks_left_out"].as_array().expect("ranks_left_out");
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["rank"], 0);
    assert_eq!(left[0]["file"], file);
    assert!(
        left[0]["problem"]
            .as_str()
            .unwrap()
            .contains("corrupt or truncated Parquet file"),
        "{left:?}"
    );
    assert_eq!(b["run"]["ranks_left_out"], serde_json::json!([0]));
    assert_eq!(b["run"]["ranks_analysed"], 1);
    // The memory footprint per rank leaves it out too (its peers are unknown).
    let memory_ranks: Vec<&serde_json::Value> = b["memory"]["observed"]["per_rank"]
        .as_array()
        .expect("memory per rank")
        .iter()
        .map(|r| &r["rank"])
        .collect();
    assert_eq!(memory_ranks, [&serde_json::json!(1)]);
    let problems = b["integrity"]["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["file"] == file
            && p["rank"] == 0
            && p["data_lost"] == true
            && p["what"]
                .as_str()
                .unwrap()
                .contains("rank 0 is left out of the analysis as a whole")),
        "{problems:?}"
    );

    // Every message has rank 0 on one side: none is matched, none is an
    // error; rank 1's 2 sends and 2 receives are counted as its partner's.
    let m = &b["messages"];
    assert_eq!(m["messages"].as_array().unwrap().len(), 0);
    assert_eq!(
        (&m["unmatched_sends"], &m["unmatched_recvs"]),
        (&0.into(), &0.into())
    );
    assert_eq!(
        (&m["partner_left_out_sends"], &m["partner_left_out_recvs"]),
        (&2.into(), &2.into())
    );
    let warnings: Vec<&str> = b["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("no matching other side")),
        "{warnings:?}"
    );

    // Rank 1's own numbers are the undamaged trace's.
    assert_eq!(
        a["run"]["rank_duration_s"][1], b["run"]["rank_duration_s"][1],
        "rank 1's duration"
    );
    assert_eq!(
        a["run"]["threads_per_rank"][1],
        b["run"]["threads_per_rank"][1]
    );
    for list in [
        &a["openmp"]["observed"]["fine_grain"],
        &a["regions"]["observed"][0]["per_thread"],
    ] {
        assert!(!of_rank(list, 1).is_empty(), "{list}");
    }
    assert_eq!(
        of_rank(&a["openmp"]["observed"]["fine_grain"], 1),
        of_rank(&b["openmp"]["observed"]["fine_grain"], 1)
    );
    assert_eq!(
        of_rank(&b["openmp"]["observed"]["fine_grain"], 0),
        Vec::<serde_json::Value>::new(),
        "rank 0 is in no number"
    );
    assert_eq!(
        of_rank(&a["regions"]["observed"][0]["per_thread"], 1),
        of_rank(&b["regions"]["observed"][0]["per_thread"], 1)
    );
    assert_eq!(
        of_rank(&b["regions"]["observed"][0]["per_thread"], 0),
        Vec::<serde_json::Value>::new()
    );

    // The text report: the banner first, naming the file and the rank, and
    // the run's header.
    let out = hyscope()
        .arg("report")
        .arg(&damaged)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text
        .lines()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert_eq!(
        first.trim(),
        "PARTIAL TRACE: the numbers below leave out what is listed here",
        "{text}"
    );
    assert!(
        text.contains(&format!("! rank 0, {file}: a part of rank 0's `omp` table cannot be read (corrupt or truncated Parquet file")),
        "{text}"
    );
    assert!(
        text.contains("ranks analysed         1 of 2 ranks analysed (rank 0 left out"),
        "{text}"
    );

    // Both ranks damaged: the clear error of the first file, as before.
    let rank1 = damaged.join("omp/rank=1/part-0.parquet");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&rank1)
        .unwrap()
        .set_len(100)
        .unwrap();
    let out = hyscope()
        .arg("report")
        .arg(&damaged)
        .output_within_limit()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: corrupt or truncated Parquet file",
            part.display()
        )),
        "{err}"
    );
}

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

/// `hyscope export` of `trace` in `format` to `out`: its output, which must
/// exit 0 (as `report` does for a partial trace).
fn export(format: &str, out: &Path, trace: &Path) -> std::process::Output {
    let o = hyscope()
        .args(["export", "--format", format, "-o"])
        .arg(out)
        .arg(trace)
        .output_within_limit()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
    o
}

/// The Perfetto events (complete and instant) of each `pid`, the flows, the
/// counter values of each `pid`, and each process's name.
struct PerfettoCounts {
    events: std::collections::BTreeMap<u64, usize>,
    counters: std::collections::BTreeMap<u64, usize>,
    flows: usize,
    names: std::collections::BTreeMap<u64, String>,
}

fn perfetto_counts(file: &Path) -> PerfettoCounts {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let mut c = PerfettoCounts {
        events: Default::default(),
        counters: Default::default(),
        flows: 0,
        names: Default::default(),
    };
    for e in v["traceEvents"].as_array().unwrap() {
        let pid = e["pid"].as_u64().unwrap_or(0);
        match e["ph"].as_str().unwrap() {
            "X" | "i" if e["cat"] != "run" => *c.events.entry(pid).or_default() += 1,
            "C" => *c.counters.entry(pid).or_default() += 1,
            "s" => c.flows += 1,
            "M" if e["name"] == "process_name" => {
                c.names
                    .insert(pid, e["args"]["name"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    c
}

/// `otf2-print` of an archive: the events (first word of each line and
/// its location), and with `-G` each location's event count.
fn otf2_counts(archive: &Path) -> (Vec<(String, u64)>, std::collections::BTreeMap<u64, u64>) {
    let print = |args: &[&str]| {
        let o = std::process::Command::new("otf2-print")
            .args(args)
            .arg(archive.join("traces.otf2"))
            .output_within_limit()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let events = print(&[])
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, loc) = (w.next()?, w.next()?.parse().ok()?);
            name.chars()
                .all(|c| c.is_ascii_uppercase() || c == '_')
                .then(|| (name.to_string(), loc))
        })
        .collect();
    let mut locations = std::collections::BTreeMap::new();
    for l in print(&["-G"])
        .lines()
        .filter(|l| l.starts_with("LOCATION "))
    {
        let id: u64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
        let n: u64 = l
            .split("# Events: ")
            .nth(1)
            .and_then(|x| x.split(',').next())
            .unwrap()
            .parse()
            .unwrap();
        locations.insert(id, n);
    }
    (events, locations)
}

/// A byte flipped inside the checksummed data of rank 0's first OpenMP part
/// of the recorded `tests/mpi/hybrid.c` (2 ranks × 2 threads, each rank
/// sends its partner 2 messages): rank 0 is left out everywhere the
/// analysis leaves it out, by the same rule. The timeline index has rank
/// 1's rows exactly as the undamaged trace's and names rank 0's file as the
/// analysis does; both exports exit 0, say which rank and file on one
/// `hyscope:` line, write rank 1's events as the undamaged trace's exports
/// do, rank 0's process (rank) empty and named so, and no message (every one
/// has rank 0 on a side: 2 sends and 2 receives of rank 1 counted apart);
/// the run header's events and CPU placement count rank 1 only and say so.
#[test]
fn a_flipped_byte_leaves_the_rank_out_of_the_timelines_exports_and_header() {
    use hyscope_analyzer::timeline::{RankCells, TimelineIndex};
    use hyscope_format::Trace;

    let tmp = tempfile::tempdir().unwrap();
    let exe = build_mpi_test_program(tmp.path(), "hybrid");
    let whole = tmp.path().join("whole");
    record_mpi_job(&whole, &exe, 2);
    let damaged = tmp.path().join("damaged");
    copy_dir(&whole, &damaged);
    let file = "omp/rank=0/part-0.parquet";
    let part = damaged.join(file);
    let mut bytes = std::fs::read(&part).unwrap();
    // Inside the first column chunk's data (after the 4-byte magic).
    bytes[40] ^= 0x10;
    std::fs::write(&part, bytes).unwrap();
    let b = report_json(&damaged);
    let left: Vec<serde_json::Value> = b["ranks_left_out"].as_array().unwrap().clone();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(
        (&left[0]["rank"], &left[0]["file"]),
        (&0.into(), &file.into())
    );
    let problem = left[0]["problem"].as_str().unwrap();
    assert!(
        problem.starts_with("corrupt or truncated Parquet file: checksum mismatch in bytes 0.."),
        "{problem}"
    );
    let says = format!("rank 0 left out: {file} cannot be read ({problem})");

    // The timeline: rank 0 left out with the analysis's file and problem;
    // rank 1's rows and every cell of theirs the undamaged trace's.
    let w = TimelineIndex::build(&Trace::open(&whole).unwrap()).unwrap();
    let d = TimelineIndex::build(&Trace::open(&damaged).unwrap()).unwrap();
    assert!(w.left_out().is_empty());
    assert_eq!(d.left_out().len(), 1);
    let l = &d.left_out()[0];
    assert_eq!(
        (l.rank, l.file.as_str(), l.problem.as_str()),
        (0, file, problem)
    );
    assert_eq!(l.says(), says);
    let ranks: Vec<u32> = d.rank_rows().iter().map(|r| r.rank).collect();
    assert_eq!(ranks, [1]);
    let rank1: Vec<_> = w.rows().iter().filter(|r| r.rank == 1).cloned().collect();
    assert_eq!(d.rows(), &rank1[..]);
    assert!(rank1.len() >= 2, "{rank1:?}");
    let (t0, t1) = w.span();
    for (i, row) in d.rows().iter().enumerate() {
        let j = w.row_of(row.rank, row.thread).unwrap();
        assert_eq!(d.query(i, t0, t1, 500), w.query(j, t0, t1, 500), "{row:?}");
        assert_eq!(
            d.segments_in(i, t0, t1, usize::MAX),
            w.segments_in(j, t0, t1, usize::MAX)
        );
    }

    // Perfetto: rank 1's events and counters as in the undamaged export,
    // rank 0's process named as left out and empty, no flow.
    let (pw, pd) = (
        tmp.path().join("whole.json"),
        tmp.path().join("damaged.json"),
    );
    export("perfetto", &pw, &whole);
    let out = export("perfetto", &pd, &damaged);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("left out: ")).collect();
    assert_eq!(
        lines,
        [format!(
            "hyscope: partial trace {}: {says}; this export has the rest",
            damaged.display()
        )],
        "{err}"
    );
    assert!(
        err.contains("hyscope: note: 2 point-to-point sends and 2 receives have their other side on a rank left out"),
        "{err}"
    );
    let (cw, cd) = (perfetto_counts(&pw), perfetto_counts(&pd));
    assert_eq!(cw.flows, 4);
    assert_eq!(cd.flows, 0, "a message with its other side on rank 0");
    assert!(cw.events[&1] > 0 && cw.events[&2] > 0, "{:?}", cw.events);
    assert_eq!(
        cd.events.get(&1),
        None,
        "rank 0 has events: {:?}",
        cd.events
    );
    assert_eq!(cd.events[&2], cw.events[&2], "rank 1's events");
    assert_eq!(cd.counters.get(&1), None, "rank 0 has counter values");
    assert_eq!(cd.counters.get(&2), cw.counters.get(&2));
    assert!(cd.names[&1].contains(&says), "{:?}", cd.names);
    assert_eq!(cd.names[&2], cw.names[&2]);

    // OTF2: rank 1's locations as in the undamaged archive, rank 0's thread
    // 0 defined and empty (every world rank keeps its number), no message.
    let (ow, od) = (
        tmp.path().join("whole-otf2"),
        tmp.path().join("damaged-otf2"),
    );
    export("otf2", &ow, &whole);
    let out = export("otf2", &od, &damaged);
    assert!(
        stderr(&out).contains(&format!(
            "hyscope: partial trace {}: {says}; this export has the rest",
            damaged.display()
        )),
        "{}",
        stderr(&out)
    );
    let ((ew, lw), (ed, ld)) = (otf2_counts(&ow), otf2_counts(&od));
    let rank = |loc: u64| loc >> 16;
    let of_rank = |l: &std::collections::BTreeMap<u64, u64>, r: u64| -> Vec<(u64, u64)> {
        l.iter()
            .filter(|(k, _)| rank(**k) == r)
            .map(|(k, v)| (*k, *v))
            .collect()
    };
    let is_message = |n: &str| n.starts_with("MPI_SEND") || n.starts_with("MPI_RECV");
    let messages_at = |e: &[(String, u64)], loc: u64| {
        e.iter().filter(|(n, l)| *l == loc && is_message(n)).count() as u64
    };
    let messages = |e: &[(String, u64)]| e.iter().filter(|(n, _)| is_message(n)).count();
    assert_eq!(messages(&ew), 8, "4 sends and 4 receives");
    assert_eq!(messages(&ed), 0);
    // Rank 1's locations: their events but the messages to and from rank 0.
    let want: Vec<(u64, u64)> = of_rank(&lw, 1)
        .into_iter()
        .map(|(loc, n)| (loc, n - messages_at(&ew, loc)))
        .collect();
    assert_eq!(of_rank(&ld, 1), want, "rank 1's locations");
    assert_eq!(of_rank(&ld, 0), [(0, 0)], "rank 0: its thread 0, empty");
    let rank1_events = |e: &[(String, u64)]| -> Vec<String> {
        e.iter()
            .filter(|(n, l)| rank(*l) == 1 && !is_message(n))
            .map(|(n, _)| n.clone())
            .collect()
    };
    assert_eq!(rank1_events(&ed), rank1_events(&ew));

    // The run header: the manifest's counts of rank 1 only, and which ranks.
    let a = report_json(&whole);
    let m = Trace::open(&whole).unwrap().manifest;
    let events = |r: usize| {
        &m.ranks
            .iter()
            .find(|x| x.rank as usize == r)
            .unwrap()
            .events
    };
    assert_eq!(a["run"]["omp_events"], events(0).omp + events(1).omp);
    assert_eq!(b["run"]["omp_events"], events(1).omp);
    assert_eq!(b["run"]["mpi_events"], events(1).mpi);
    assert_eq!(b["run"]["sample_events"], events(1).samples);
    let placed = |j: &serde_json::Value| -> Vec<u64> {
        j["run"]["placement"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["rank"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(placed(&a), [0, 1], "the ranks' CPUs are recorded");
    assert_eq!(placed(&b), [1]);
    let out = hyscope()
        .arg("report")
        .arg(&damaged)
        .output_within_limit()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let count = |n: u64| hyscope_analyzer::units::count(n as f64);
    let want = format!(
        "  events                 {} OpenMP, {} MPI, {} samples — 1 of 2 ranks, rank 0 left out",
        count(events(1).omp),
        count(events(1).mpi),
        count(events(1).samples)
    );
    assert!(text.lines().any(|l| l == want), "no `{want}` in\n{text}");
    for l in text.lines().filter(|l| l.contains("CPU placement")) {
        assert!(
            l.contains("rank 1: ") && l.ends_with(" — 1 of 2 ranks, rank 0 left out"),
            "{l}"
        );
    }
}

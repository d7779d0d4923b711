//! One trace, every view agrees: a recorded 2-rank × 2-thread program that
//! sends every kind of point-to-point message (`tests/mpi/messages.c`, its
//! message counts printed by itself) gives the same messages — peers, tags,
//! send and receive times on global time — in `report --json`, the timeline
//! index, the Perfetto JSON and the OTF2 archive (read back by `otf2-print`).
//! Then the same for a copy of the trace whose rank 1 sits on a second host
//! whose clock drifts by 50 µs between `MPI_Init` and `MPI_Finalize`.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hyscope_analyzer::timeline::{Detail, Interval, TimelineIndex};
use hyscope_format::{ClockOffset, Manifest, RankInfo, Trace};
use record_support::*;
use serde_json::Value;

/// One message as a view shows it: (sender, receiver, tag, send time, receive
/// time), times in ns since the view's earliest send.
type Msg = (u32, u32, i64, i64, i64);
/// One side of a message: (rank, other rank, tag, time since the earliest send).
type Side = (u32, u32, i64, i64);

/// A message of the report: (sender, sender thread, receiver, receiver
/// thread, tag, comm, send ns, recv ns), absolute global ns.
type Reported = (u32, u32, u32, u32, i64, u64, i64, i64);

/// The report's matched messages and its counts.
struct Report {
    messages: Vec<Reported>,
    unmatched_sends: u64,
    unmatched_recvs: u64,
}

fn report(dir: &Path) -> Report {
    let out = hyscope()
        .arg("report")
        .arg("--json")
        .arg(dir)
        .output_within_limit()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["messages"];
    let int = |x: &Value| x.as_i64().unwrap_or_else(|| panic!("not an integer: {x}"));
    let messages = m["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                int(&x["send"]["rank"]) as u32,
                int(&x["send"]["thread"]) as u32,
                int(&x["recv"]["rank"]) as u32,
                int(&x["recv"]["thread"]) as u32,
                int(&x["tag"]),
                x["comm"].as_u64().unwrap(),
                int(&x["send"]["time"]),
                int(&x["recv"]["time"]),
            )
        })
        .collect();
    Report {
        messages,
        unmatched_sends: m["unmatched_sends"].as_u64().unwrap(),
        unmatched_recvs: m["unmatched_recvs"].as_u64().unwrap(),
    }
}

fn relative(msgs: impl IntoIterator<Item = (u32, u32, i64, i64, i64)>) -> Vec<Msg> {
    let v: Vec<Msg> = msgs.into_iter().collect();
    let t0 = v.iter().map(|m| m.3).min().unwrap_or(0);
    let mut out: Vec<Msg> = v
        .into_iter()
        .map(|(s, r, tag, ts, tr)| (s, r, tag, ts - t0, tr - t0))
        .collect();
    out.sort();
    out
}

fn sides(msgs: &[Msg]) -> (Vec<Side>, Vec<Side>) {
    let mut sends: Vec<Side> = msgs.iter().map(|m| (m.0, m.1, m.2, m.3)).collect();
    let mut recvs: Vec<Side> = msgs.iter().map(|m| (m.1, m.0, m.2, m.4)).collect();
    sends.sort();
    recvs.sort();
    (sends, recvs)
}

/// Perfetto's flow events, paired by id: µs with ns decimals back to ns.
fn perfetto(dir: &Path, out: &Path) -> Vec<Msg> {
    let o = hyscope()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(out)
        .arg(dir)
        .output_within_limit()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let ns = |x: &Value| (x.as_f64().unwrap() * 1000.0).round() as i64;
    let mut starts: BTreeMap<u64, (u32, i64, i64)> = BTreeMap::new();
    let mut ends: BTreeMap<u64, (u32, i64)> = BTreeMap::new();
    for e in v["traceEvents"].as_array().unwrap() {
        let pid = || e["pid"].as_u64().unwrap() as u32 - 1;
        match e["ph"].as_str() {
            Some("s") => {
                starts.insert(
                    e["id"].as_u64().unwrap(),
                    (pid(), e["args"]["tag"].as_i64().unwrap(), ns(&e["ts"])),
                );
            }
            Some("f") => {
                ends.insert(e["id"].as_u64().unwrap(), (pid(), ns(&e["ts"])));
            }
            _ => {}
        }
    }
    assert_eq!(starts.len(), ends.len());
    relative(starts.iter().map(|(id, &(s, tag, ts))| {
        let (r, tr) = ends[id];
        (s, r, tag, ts, tr)
    }))
}

/// The OTF2 archive's send and receive events (blocking and nonblocking) as
/// `otf2-print` prints them: (rank, other rank, tag, ticks = ns since the
/// archive's time 0).
fn otf2(dir: &Path, out: &Path) -> (Vec<Side>, Vec<Side>) {
    let o = hyscope()
        .args(["export", "--format", "otf2", "-o"])
        .arg(out)
        .arg(dir)
        .output_within_limit()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = Command::new("otf2-print")
        .arg(out.join("traces.otf2"))
        .output_within_limit()
        .unwrap();
    assert!(printed.status.success(), "{}", stderr(&printed));
    let text = String::from_utf8(printed.stdout).unwrap();
    let field = |line: &str, name: &str| -> i64 {
        let at = line
            .find(name)
            .unwrap_or_else(|| panic!("no {name} in {line}"));
        line[at + name.len()..]
            .trim_start()
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let (Some(&ev), Some(loc), Some(time)) = (w.first(), w.get(1), w.get(2)) else {
            continue;
        };
        let (Ok(loc), Ok(time)) = (loc.parse::<u64>(), time.parse::<i64>()) else {
            continue;
        };
        let rank = (loc >> 16) as u32;
        match ev {
            "MPI_SEND" | "MPI_ISEND" => sends.push((
                rank,
                field(line, "Receiver:") as u32,
                field(line, "Tag:"),
                time,
            )),
            "MPI_RECV" | "MPI_IRECV" => recvs.push((
                rank,
                field(line, "Sender:") as u32,
                field(line, "Tag:"),
                time,
            )),
            _ => {}
        }
    }
    let t0 = sends.iter().map(|s| s.3).min().unwrap_or(0);
    for s in sends.iter_mut().chain(recvs.iter_mut()) {
        s.3 -= t0;
    }
    sends.sort();
    recvs.sort();
    (sends, recvs)
}

/// The timeline index shows each send starting, and each receive
/// completing, in an MPI call of the right thread at exactly the message's
/// global times.
fn check_timeline(dir: &Path, r: &Report) {
    let trace = Trace::open(dir).unwrap();
    let index = TimelineIndex::build(&trace).unwrap();
    // The row of (rank, thread) is in an MPI state at `inside`, and one of its
    // recorded MPI calls starts (or ends) exactly at `t`.
    let check = |rank: u32, thread: u32, inside: i64, t: i64, starts: bool, what: &str| {
        let row = index.row_of(rank, thread).expect("row");
        let seg = index
            .segment_at(row, inside)
            .expect("in the row's lifetime");
        assert!(seg.state.is_mpi(), "{what} at {t}: {seg:?}");
        let ivs = index.intervals_in(row, t, t, usize::MAX).unwrap();
        let edge = |i: &Interval| if starts { i.start } else { i.end };
        assert!(
            ivs.iter()
                .any(|i| edge(i) == t && matches!(i.detail, Detail::Mpi(_))),
            "no MPI call at the {what} at {t}: {ivs:?}"
        );
    };
    for &(s, st, d, dt, tag, _, ts, tr) in &r.messages {
        check(s, st, ts, ts, true, &format!("send {s}→{d} tag {tag}"));
        check(
            d,
            dt,
            tr - 1,
            tr,
            false,
            &format!("receive {s}→{d} tag {tag}"),
        );
    }
}

/// Every view of `dir` agrees with its report; returns the report.
fn every_view_agrees(dir: &Path, tmp: &Path, name: &str, expected: usize) -> Report {
    let r = report(dir);
    assert_eq!(r.messages.len(), expected);
    assert_eq!((r.unmatched_sends, r.unmatched_recvs), (0, 0));
    let reported = relative(r.messages.iter().map(|m| (m.0, m.2, m.4, m.6, m.7)));
    let flows = perfetto(dir, &tmp.join(format!("{name}.json")));
    assert_eq!(flows, reported, "Perfetto flows differ from the report");
    let (sends, recvs) = otf2(dir, &tmp.join(format!("{name}.otf2")));
    assert_eq!(
        (sends, recvs),
        sides(&reported),
        "OTF2 messages differ from the report"
    );
    check_timeline(dir, &r);
    // The GUI's messages: matched from each rank's sides, its rows read one
    // rank at a time.
    let trace = hyscope_format::Trace::open(dir).unwrap();
    let gui = hyscope_analyzer::aligned::read_messages(&trace).unwrap();
    assert_eq!(
        (gui.unmatched_sends, gui.unmatched_recvs),
        (r.unmatched_sends, r.unmatched_recvs)
    );
    let gui = relative(gui.messages.iter().map(|m| {
        (
            m.send.rank,
            m.recv.rank,
            i64::from(m.tag),
            m.send.time.ns(),
            m.recv.time.ns(),
        )
    }));
    assert_eq!(gui, reported, "the GUI's messages differ from the report");
    r
}

/// A copy of `src` in which rank 1 is on host `node-b`, whose clock is
/// `first` ahead of rank 0's at `MPI_Init` and drifts to `first + 50 µs` at
/// `MPI_Finalize` (the rank file's offsets).
fn drifted_copy(src: &Path, dst: &Path) {
    let st = Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .status()
        .unwrap();
    assert!(st.success());
    let drift = |info: &mut RankInfo| {
        assert_eq!(info.clock_offsets.len(), 2, "{:?}", info.clock_offsets);
        let (a, b) = (info.clock_offsets[0], info.clock_offsets[1]);
        info.host = "node-b".into();
        // Another node's clock: its own calibration, its own id.
        info.clock_id = Some("node-b".into());
        info.clock_offsets = vec![
            a,
            ClockOffset {
                offset_ns: a.offset_ns + 50_000,
                ..b
            },
        ];
    };
    // Rank 0's manifest lists rank 0 alone: the other ranks' files are
    // merged into it when the trace is opened.
    let m = Manifest::read(dst).unwrap();
    assert!(m.ranks.iter().all(|r| r.rank == 0), "{:?}", m.ranks);
    let path = RankInfo::path(dst, 1);
    let mut info = RankInfo::read(&path).unwrap();
    drift(&mut info);
    info.write(dst).unwrap();
}

#[test]
fn one_trace_every_view_agrees_with_and_without_clock_drift() {
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mpi/messages.c");
    let exe = build_mpi(
        tmp.path(),
        "messages",
        &std::fs::read_to_string(src).unwrap(),
    );
    let dir = tmp.path().join("trace");
    let out = run_ok(
        record_into(&dir)
            .arg("mpirun")
            .args(mpirun_args(2))
            .arg(&exe),
    );
    // The program counts its messages.
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let words: Vec<&str> = printed
        .lines()
        .find(|l| l.starts_with("messages "))
        .unwrap_or_else(|| panic!("no count printed: {printed}"))
        .split_whitespace()
        .collect();
    let expected: usize = words[1].parse().unwrap();
    let on_sub: usize = words[3].parse().unwrap();
    assert_eq!((expected, on_sub), (32, 8));

    let r = every_view_agrees(&dir, tmp.path(), "plain", expected);
    // The same tag between the same pair on two communicators: the split
    // one carries exactly the program's count.
    let mut per_comm: BTreeMap<u64, usize> = BTreeMap::new();
    for m in r.messages.iter().filter(|m| m.4 == 1) {
        *per_comm.entry(m.5).or_default() += 1;
    }
    let mut counts: Vec<usize> = per_comm.values().copied().collect();
    counts.sort();
    assert_eq!(counts, vec![on_sub, 8], "{per_comm:?}");

    let drifted = tmp.path().join("drifted");
    drifted_copy(&dir, &drifted);
    let d = every_view_agrees(&drifted, tmp.path(), "drifted", expected);
    // The drift moved rank 1's times (by up to 50 µs, growing over the run),
    // not rank 0's.
    let by_envelope = |mut v: Vec<Reported>| {
        v.sort_by_key(|m| (m.0, m.2, m.4, m.5, m.6));
        v
    };
    let (plain, drifted) = (by_envelope(r.messages), by_envelope(d.messages));
    let mut moved = 0i64;
    for (a, b) in plain.iter().zip(&drifted) {
        assert_eq!((a.0, a.2, a.4), (b.0, b.2, b.4));
        let (ds, dr) = (b.6 - a.6, b.7 - a.7);
        let (d0, d1) = if a.0 == 0 { (ds, dr) } else { (dr, ds) };
        assert_eq!(d0, 0, "rank 0's time moved");
        assert!((-50_000..=0).contains(&d1), "{d1}");
        moved = moved.max(-d1);
    }
    assert!(
        moved > 1_000,
        "the drift moved rank 1 by at most {moved} ns"
    );
}

//! Spool codec speed and size (see `hyscope_format::spool`): what the
//! collector's writer thread pays per event during the run, and what reading
//! the spool back costs after it. Run in release:
//!
//! ```text
//! cargo run --release -p hyscope-format --example spool_bench -- --events 10000000
//! ```
//!
//! Streams, in frames of 1024 rows of one thread as the collector writes them:
//! - `omp`: the synthetic OpenMP trace of one rank (`synthetic::OmpGenerator`),
//!   grouped by thread, each thread's rows in end-time order;
//! - `mpi`: one rank of a ring exchange (`MPI_Irecv` from the left, `MPI_Isend`
//!   to the right, `MPI_Waitall` and its two request completions), increasing
//!   times, same peer/tag/communicator, constant message size.
//!
//! Columns: bytes per record on disk (frame headers and file header included);
//! `encode` and `decode` are the codec alone, in memory (`encode_rows` as the
//! writer calls it, `decode` in the reader's loop); `append` and `read` go
//! through `SpoolWriter`/`SpoolReader` and a file in the temp directory
//! (thread CPU time, so the `write`/`read` system calls and their page-cache
//! copies count, the disk does not). Each is the best of 3 runs over the whole
//! stream (≥ 10 M records by default).
//!
//! The plain rows stream the records from DRAM (80 B each, 800 MB for 10 M);
//! the `(cache)` rows cycle over the first 64 frames (5 MB), as the collector
//! encodes blocks its application threads have just filled.
//!
//! Options: `--events N` (records per stream, default 10 M), `--threads T` (2).

use std::path::Path;
use std::time::Duration;

use hyscope_format::spool::{SpoolReader, SpoolRecord, SpoolWriter};
use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};
use hyscope_format::{MpiRecord, OmpRecord, mpi_call as c};

#[path = "common/jitter.rs"]
mod jitter;
#[path = "common/thread_cpu.rs"]
mod thread_cpu;
use jitter::Jitter;
use thread_cpu::thread_cpu;

/// Rows per frame: the collector's block size.
const FRAME_ROWS: usize = 1024;
const RUNS: usize = 3;

/// The collector's frames: each thread's rows in end-time order, cut in blocks of 1024.
fn omp_frames(events: u64, threads: u32) -> Vec<Vec<OmpRecord>> {
    let spec = OmpTraceSpec {
        threads,
        events_per_rank: events,
        seed: 42,
        ..OmpTraceSpec::default()
    };
    let mut per_thread: Vec<Vec<OmpRecord>> = vec![Vec::new(); threads as usize];
    for r in OmpGenerator::all(spec, 0) {
        per_thread[r.thread as usize].push(r);
    }
    let mut frames = Vec::new();
    for mut rows in per_thread {
        rows.sort_by_key(|r| r.end_ns);
        frames.extend(rows.chunks(FRAME_ROWS).map(<[_]>::to_vec));
    }
    frames
}

/// Rank 1 of a 4-rank ring exchange of 64 KiB messages, one thread.
fn mpi_frames(events: u64) -> Vec<Vec<MpiRecord>> {
    let (left, right) = (0, 2);
    let mut j = Jitter(0x9e37_79b9_7f4a_7c15);
    let mut rows = Vec::with_capacity(events as usize + 5);
    let mut t: i64 = 7_200_000_000_000;
    let mut request = 0u64;
    let base = MpiRecord {
        comm_id: 1,
        tag: 7,
        root: -1,
        ..MpiRecord::default()
    };
    let mut call = |rows: &mut Vec<MpiRecord>, gap: i64, dur: i64, r: MpiRecord| {
        t += gap;
        rows.push(MpiRecord {
            start_ns: t,
            end_ns: t + dur,
            ..r
        });
        t += dur;
    };
    while (rows.len() as u64) < events {
        let compute = 20_000 + j.next(5_000);
        let (recv, send) = (request + 1, request + 2);
        request += 2;
        let irecv = MpiRecord {
            call: c::MPI_Irecv,
            peer: left,
            request_id: recv,
            callsite: 0x40_11a0,
            ..base
        };
        call(&mut rows, compute, 300 + j.next(100), irecv);
        let isend = MpiRecord {
            call: c::MPI_Isend,
            peer: right,
            bytes_sent: 65_536,
            request_id: send,
            callsite: 0x40_11c4,
            ..base
        };
        call(&mut rows, 150 + j.next(50), 900 + j.next(200), isend);
        let waitall = MpiRecord {
            call: c::MPI_Waitall,
            peer: -1,
            tag: -1,
            comm_id: 0,
            callsite: 0x40_1268,
            ..base
        };
        call(&mut rows, 100 + j.next(50), 8_000 + j.next(2_000), waitall);
        for (id, peer, bytes) in [(recv, left, 65_536), (send, right, 0)] {
            let done = MpiRecord {
                call: c::REQUEST_COMPLETE,
                peer,
                bytes_recv: bytes,
                request_id: id,
                callsite: 0x40_1268,
                ..base
            };
            call(&mut rows, 0, 0, done);
        }
    }
    rows.truncate(events as usize);
    rows.chunks(FRAME_ROWS).map(<[_]>::to_vec).collect()
}

/// Best thread-CPU time of `RUNS` runs of `f`.
fn best(mut f: impl FnMut()) -> Duration {
    (0..RUNS)
        .map(|_| {
            let t = thread_cpu();
            f();
            thread_cpu() - t
        })
        .min()
        .expect("RUNS > 0")
}

fn ns(d: Duration, rows: usize) -> f64 {
    d.as_nanos() as f64 / rows as f64
}

/// The first `window` frames over and over, as many rows as `frames` has.
fn cached<R: Clone>(frames: &[Vec<R>], window: usize) -> Vec<Vec<R>> {
    let rows: usize = frames.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    let mut n = 0;
    for frame in frames[..window.min(frames.len())].iter().cycle() {
        if n >= rows {
            break;
        }
        n += frame.len();
        out.push(frame.clone());
    }
    out
}

/// One table row of results.
fn bench<R: SpoolRecord + PartialEq + std::fmt::Debug>(name: &str, frames: &[Vec<R>], dir: &Path) {
    let rows: usize = frames.iter().map(Vec::len).sum();

    // The codec alone: encode each frame into one reused buffer, as append does.
    let mut scratch = Vec::new();
    let encode = best(|| {
        for frame in frames {
            let end = R::encode_rows(frame, &mut scratch, 0);
            std::hint::black_box(&scratch[..end]);
        }
    });
    // Keep the payloads for the decode run.
    let payloads: Vec<Vec<u8>> = frames
        .iter()
        .map(|frame| {
            let mut out = Vec::new();
            let mut prev = R::default();
            for r in frame {
                R::encode(&prev, r, &mut out);
                prev = *r;
            }
            out
        })
        .collect();
    let mut out: Vec<R> = Vec::with_capacity(FRAME_ROWS);
    let decode = best(|| {
        for (payload, frame) in payloads.iter().zip(frames) {
            out.clear();
            let mut input = &payload[..];
            let mut prev = R::default();
            for _ in 0..frame.len() {
                let r = R::decode(&prev, &mut input).expect("decodes");
                out.push(r);
                prev = r;
            }
            std::hint::black_box(&out);
        }
    });

    // Through the file.
    let path = dir.join("bench.spool");
    let mut bytes = 0;
    let append = best(|| {
        let mut w = SpoolWriter::<R>::create(&path).expect("create");
        for frame in frames {
            w.append(frame).expect("append");
        }
        assert_eq!(w.rows(), rows as u64);
        bytes = w.bytes();
    });
    assert_eq!(std::fs::metadata(&path).expect("spool").len(), bytes);
    let mut read_rows = 0;
    let read = best(|| {
        let mut r = SpoolReader::<R>::open(&path).expect("open");
        read_rows = 0;
        out.clear();
        while r.next_frame(&mut out).expect("frame") {
            read_rows += out.len();
            out.clear();
        }
        assert!(!r.truncated());
    });
    assert_eq!(read_rows, rows);
    // Exactness, outside the timed runs.
    let (back, truncated) = hyscope_format::spool::read_all::<R>(&path).expect("read_all");
    assert!(!truncated);
    assert!(
        back.iter().eq(frames.iter().flatten()),
        "{name}: rows differ"
    );
    std::fs::remove_file(&path).expect("remove");

    println!(
        "| {name} | {rows} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
        bytes as f64 / rows as f64,
        ns(encode, rows),
        ns(append, rows),
        ns(decode, rows),
        ns(read, rows),
    );
}

fn main() {
    let mut events: u64 = 10_000_000;
    let mut threads: u32 = 2;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--events" => events = value().parse().expect("--events N"),
            "--threads" => threads = value().parse().expect("--threads T"),
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    println!("frames of {FRAME_ROWS} rows of one thread; ns/record = thread CPU, best of {RUNS}");
    println!();
    println!("| stream | records | B/record | encode ns | append ns | decode ns | read ns |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let omp = omp_frames(events, threads);
    bench("omp", &omp, dir.path());
    bench("omp (cache)", &cached(&omp, 64), dir.path());
    drop(omp);
    let mpi = mpi_frames(events);
    bench("mpi", &mpi, dir.path());
    bench("mpi (cache)", &cached(&mpi, 64), dir.path());
}

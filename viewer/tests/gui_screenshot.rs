//! The real `hyscope gui` binary under Xvfb with Mesa's software OpenGL: it
//! opens a synthetic trace (2 ranks × 4 threads of loop chunks and barriers,
//! MPI messages, an RSS counter), saves its own window after a few frames
//! (`--screenshot`), and the picture must show the timeline: the compute and
//! barrier-wait colours over large areas, and many distinct colours.
//!
//! Needs `xvfb-run` (Debian `xvfb`, `xauth`) and `libgl1-mesa-dri`; see
//! `scripts/install-deps.sh`.
#![cfg(feature = "gui")]

use hyscope_testkit::OutputWithin;
use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};
use hyscope_format::{
    Manifest, MpiRecord, PartWriter, RankInfo, SampleRecord, Table, WriterOptions, mpi_call,
};

fn write_trace(dir: &Path) -> (i64, i64) {
    let mut span = (i64::MAX, i64::MIN);
    for rank in 0..2u32 {
        let spec = OmpTraceSpec {
            threads: 4,
            events_per_rank: 20_000,
            seed: 7,
            ..OmpTraceSpec::default()
        };
        let rows = OmpGenerator::all(spec, rank);
        for r in &rows {
            span = (span.0.min(r.start_ns), span.1.max(r.end_ns));
        }
        let mut w = PartWriter::create(dir, Table::Omp, rank, WriterOptions::default()).unwrap();
        w.write_omp(&rows).unwrap();
        w.finish().unwrap();
    }
    // Ten messages from rank 0 to rank 1 across the run.
    let step = (span.1 - span.0) / 10;
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for i in 0..10 {
        let t = span.0 + i * step + step / 2;
        sends.push(MpiRecord {
            thread: 0,
            call: mpi_call::MPI_Send,
            start_ns: t,
            end_ns: t + 20_000,
            peer: 1,
            tag: 1,
            bytes_sent: 1 << 20,
            ..MpiRecord::default()
        });
        recvs.push(MpiRecord {
            thread: 0,
            call: mpi_call::MPI_Recv,
            start_ns: t,
            end_ns: t + step / 4,
            peer: 0,
            tag: 1,
            bytes_recv: 1 << 20,
            ..MpiRecord::default()
        });
    }
    for (rank, rows) in [(0, &mut sends), (1, &mut recvs)] {
        let mut w = PartWriter::create(dir, Table::Mpi, rank, WriterOptions::default()).unwrap();
        w.write_mpi(rows).unwrap();
        w.finish().unwrap();
    }
    let samples: Vec<SampleRecord> = (0..50)
        .map(|i| SampleRecord {
            time_ns: span.0 + i * (span.1 - span.0) / 49,
            metric: "mem.vmrss".into(),
            key: -1,
            value: 1e8 + (i * i) as f64 * 1e5,
        })
        .collect();
    let mut w = PartWriter::create(dir, Table::Samples, 0, WriterOptions::default()).unwrap();
    w.write_records(&samples).unwrap();
    w.finish().unwrap();
    let mut m = Manifest::new();
    for rank in 0..2 {
        m.ranks.push(RankInfo {
            rank,
            host: "node0".into(),
            threads: 4,
            ..RankInfo::default()
        });
    }
    m.write(dir).unwrap();
    span
}

/// Read a binary PPM (P6) as (width, height, RGB bytes).
fn read_ppm(path: &Path) -> (usize, usize, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        fields.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
    }
    assert_eq!(fields[0], "P6");
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let data = bytes[i + 1..].to_vec();
    assert_eq!(data.len(), w * h * 3);
    (w, h, data)
}

#[test]
fn gui_renders_the_timeline_under_xvfb() {
    let dir = std::env::temp_dir().join(format!("hyscope-gui-shot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let trace = dir.join("trace");
    std::fs::create_dir_all(&trace).unwrap();
    write_trace(&trace);
    let shot = dir.join("shot.ppm");
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24"])
        .arg(env!("CARGO_BIN_EXE_hyscope"))
        .arg("gui")
        .arg(&trace)
        .arg("--screenshot")
        .arg(&shot)
        .args(["--quit-after-frames", "5"])
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .env("HYSCOPE_CACHE_DIR", dir.join("cache"))
        .output_within_limit()
        .expect("xvfb-run (Debian package xvfb) must be installed");
    assert!(
        out.status.success(),
        "hyscope gui failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The timeline index and its coarse overview were cached for the next
    // opening: one trace, one key, two files.
    let mut cached: Vec<String> = std::fs::read_dir(dir.join("cache"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(cached.len(), 2, "{cached:?}");
    let key = cached[0].strip_suffix(".idx").expect("the index");
    assert!(key.starts_with("timeline-"), "{cached:?}");
    assert_eq!(cached[1], format!("{key}.overview"));
    let (w, h, rgb) = read_ppm(&shot);
    assert_eq!((w, h), (1280, 800));
    let pixels: Vec<[u8; 3]> = rgb.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect();
    let distinct: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    // Text, panels, the plot and eight timeline rows: far from blank.
    assert!(distinct.len() > 50, "only {} colours", distinct.len());
    let count = |c: [u8; 3]| pixels.iter().filter(|p| **p == c).count();
    // Compute (green) dominates most pixel columns of the eight rows; the ten
    // receives of rank 1 thread 0 are MPI p2p (blue).
    let compute = count([64, 160, 90]);
    let p2p = count([60, 110, 230]);
    assert!(compute > 20_000, "compute pixels: {compute}");
    assert!(p2p > 500, "MPI p2p pixels: {p2p}");
    let _ = std::fs::copy(
        &shot,
        std::env::temp_dir().join("hyscope-gui-last-shot.ppm"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! The format's headline numbers on a synthetic OpenMP trace (see
//! `benchmarks/formats.md`): bytes per event on disk, writer and reader
//! throughput. Run in release:
//!
//! ```text
//! cargo run --release -p hyscope-format --example format_bench -- --events 10000000
//! ```
//!
//! Options: `--events N` (total over all ranks, default 10 M), `--ranks R` (2),
//! `--threads T` (2), `--durations per-loop|uniform`, `--zstd L`,
//! `--jitter PERCENT` (10), `--row-group N`, `--keep DIR`, `--write-only` (write there and keep the trace).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hyscope_format::synthetic::{ChunkDurations, OmpGenerator, OmpTraceSpec};
use hyscope_format::{OmpRecord, PartWriter, ScanOptions, Table, Trace, WriterOptions};
use parquet::file::reader::{FileReader, SerializedFileReader};

#[path = "common/thread_cpu.rs"]
mod thread_cpu;
use thread_cpu::thread_cpu;

/// Wall and thread-CPU time of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (w, c) = (Instant::now(), thread_cpu());
    let out = f();
    (out, w.elapsed(), thread_cpu() - c)
}

fn rate(rows: u64, d: Duration) -> f64 {
    rows as f64 / d.as_secs_f64() / 1e6
}

fn main() {
    let mut events: u64 = 10_000_000;
    let mut ranks: u32 = 2;
    let mut threads: u32 = 2;
    let mut durations = ChunkDurations::PerLoop;
    let mut options = WriterOptions::default();
    let mut keep: Option<PathBuf> = None;
    let mut jitter: u32 = 10;
    let mut write_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--events" => events = value().parse().expect("--events N"),
            "--ranks" => ranks = value().parse().expect("--ranks R"),
            "--threads" => threads = value().parse().expect("--threads T"),
            "--jitter" => jitter = value().parse().expect("--jitter PERCENT"),
            "--zstd" => options.zstd_level = value().parse().expect("--zstd L"),
            "--row-group" => options.rows_per_row_group = value().parse().expect("--row-group N"),
            "--durations" => {
                durations = match value().as_str() {
                    "per-loop" => ChunkDurations::PerLoop,
                    "uniform" => ChunkDurations::Uniform,
                    other => panic!("unknown --durations {other}"),
                }
            }
            "--keep" => keep = Some(PathBuf::from(value())),
            "--write-only" => write_only = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("trace dir");

    // Write: generation is not timed, only the writer calls.
    let mut write_time = Duration::ZERO;
    let mut write_cpu = Duration::ZERO;
    let mut rows = 0u64;
    let mut per_kind = BTreeMap::<u8, u64>::new();
    for rank in 0..ranks {
        let spec = OmpTraceSpec {
            threads,
            events_per_rank: events / u64::from(ranks),
            durations,
            jitter_percent: jitter,
            seed: 42,
            ..OmpTraceSpec::default()
        };
        let mut generator = OmpGenerator::new(spec, rank);
        let mut writer =
            PartWriter::create(&dir, Table::Omp, rank, options.clone()).expect("writer");
        let mut batch: Vec<OmpRecord> = Vec::with_capacity(70_000);
        loop {
            batch.clear();
            let more = generator.fill(&mut batch, 64 * 1024);
            for r in &batch {
                *per_kind.entry(r.kind).or_default() += 1;
            }
            rows += batch.len() as u64;
            let ((), wall, cpu) = timed(|| writer.write_omp(&batch).expect("write"));
            write_time += wall;
            write_cpu += cpu;
            if !more {
                break;
            }
        }
        let (_, wall, cpu) = timed(|| writer.finish().expect("finish"));
        write_time += wall;
        write_cpu += cpu;
    }
    hyscope_format::Manifest::new()
        .write(&dir)
        .expect("manifest");

    let trace = Trace::open(&dir).expect("open");
    let bytes = trace.table_bytes(Table::Omp);
    println!(
        "trace: {} rows, {} ranks x {} threads, durations {:?} (jitter {jitter} %), zstd {}, row group {}",
        rows, ranks, threads, durations, options.zstd_level, options.rows_per_row_group
    );
    let kinds: Vec<String> = per_kind
        .iter()
        .map(|(k, n)| {
            format!(
                "{}={n}",
                hyscope_format::OmpKind::from_u8(*k).map_or("?", |k| k.name())
            )
        })
        .collect();
    println!("rows by kind: {}", kinds.join(" "));
    println!(
        "on disk: {bytes} bytes in {} parts = {:.3} bytes/event",
        trace.parts(Table::Omp).len(),
        bytes as f64 / rows as f64
    );

    // Compressed bytes per column, from the Parquet footers.
    let mut per_column = BTreeMap::<String, i64>::new();
    for part in trace.parts(Table::Omp) {
        let reader = SerializedFileReader::new(std::fs::File::open(&part.path).expect("part"))
            .expect("parquet");
        for g in reader.metadata().row_groups() {
            for c in g.columns() {
                *per_column
                    .entry(c.column_descr().name().to_string())
                    .or_default() += c.compressed_size();
            }
        }
    }
    let mut cols: Vec<_> = per_column.into_iter().collect();
    cols.sort_by_key(|(_, b)| -b);
    let cols: Vec<String> = cols
        .iter()
        .map(|(n, b)| format!("{n} {:.3}", *b as f64 / rows as f64))
        .collect();
    println!("bytes/event by column: {}", cols.join(", "));

    println!(
        "writer: {:.2} M events/s per CPU second ({:.2} M events/s wall, {:.2} s CPU, one thread)",
        rate(rows, write_cpu),
        rate(rows, write_time),
        write_cpu.as_secs_f64()
    );

    if write_only {
        return;
    }

    // Full scan, all columns, into Arrow arrays.
    let (scanned, wall, cpu) = timed(|| {
        trace
            .scan(Table::Omp, &ScanOptions::default())
            .map(|b| b.expect("scan").num_rows())
            .sum::<usize>()
    });
    assert_eq!(scanned as u64, rows);
    println!(
        "reader scan (rank + 13 columns into Arrow arrays): {:.2} M events/s per CPU second ({:.2} M events/s wall, one thread)",
        rate(rows, cpu),
        rate(rows, wall)
    );

    // Parallel scan: one thread per part, as the analyzer does.
    let t = Instant::now();
    let parts = trace.parts(Table::Omp);
    let total: usize = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|p| {
                s.spawn(move || {
                    hyscope_format::PartScan::open(p, &ScanOptions::default())
                        .expect("part")
                        .map(|b| b.expect("batch").num_rows())
                        .sum::<usize>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).sum()
    });
    let par_time = t.elapsed();
    assert_eq!(total as u64, rows);
    println!(
        "reader scan, one thread per part ({} parts, {} cores): {:.2} M events/s ({:.2} s)",
        parts.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rows as f64 / par_time.as_secs_f64() / 1e6,
        par_time.as_secs_f64()
    );

    let (records, wall, cpu) = timed(|| {
        trace
            .read_records::<OmpRecord>(&ScanOptions::default())
            .expect("read_records")
    });
    assert_eq!(records.len() as u64, rows);
    println!(
        "read_records (scan + into Vec<(rank, OmpRecord)>): {:.2} M events/s per CPU second ({:.2} M events/s wall, one thread)",
        rate(rows, cpu),
        rate(rows, wall)
    );
    drop(records);
    if keep.is_some() {
        println!("trace kept in {}", dir.display());
    }
}

//! Criterion benchmarks of the trace format on the synthetic OpenMP trace
//! (`hyscope_format::synthetic`, 1 M events: 2 ranks × 2 threads):
//! writer throughput, full-scan and `read_records` throughput.
//! The 10 M-event run with bytes per event is `examples/format_bench.rs`.
//!
//! ```text
//! cargo bench -p hyscope-format --bench format
//! ```

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};
use hyscope_format::{Manifest, OmpRecord, PartWriter, ScanOptions, Table, Trace, WriterOptions};

const EVENTS: u64 = 1_000_000;
const RANKS: u32 = 2;

/// The rows of each rank, in writer-sized batches.
fn batches() -> Vec<Vec<Vec<OmpRecord>>> {
    (0..RANKS)
        .map(|rank| {
            let spec = OmpTraceSpec {
                events_per_rank: EVENTS / u64::from(RANKS),
                seed: 42,
                ..OmpTraceSpec::default()
            };
            let mut g = OmpGenerator::new(spec, rank);
            let mut out = Vec::new();
            loop {
                let mut b = Vec::with_capacity(70_000);
                let more = g.fill(&mut b, 64 * 1024);
                out.push(b);
                if !more {
                    break;
                }
            }
            out
        })
        .collect()
}

fn write_trace(dir: &std::path::Path, mut data: Vec<Vec<Vec<OmpRecord>>>) -> u64 {
    let mut rows = 0;
    for (rank, batches) in data.iter_mut().enumerate() {
        let mut w = PartWriter::create(dir, Table::Omp, rank as u32, WriterOptions::default())
            .expect("writer");
        for b in batches.iter_mut() {
            w.write_omp(b).expect("write");
        }
        rows += w.finish().expect("finish").rows;
    }
    Manifest::new().write(dir).expect("manifest");
    rows
}

fn bench(c: &mut Criterion) {
    let data = batches();
    let events: u64 = data.iter().flatten().map(|b| b.len() as u64).sum();

    let mut group = c.benchmark_group("omp");
    group.throughput(Throughput::Elements(events));
    group.sample_size(10);

    group.bench_function("write", |b| {
        b.iter_batched(
            || (tempfile::tempdir().expect("tmp"), data.clone()),
            |(dir, data)| {
                black_box(write_trace(dir.path(), data));
                dir
            },
            BatchSize::PerIteration,
        )
    });

    let dir = tempfile::tempdir().expect("tmp");
    write_trace(dir.path(), data.clone());
    let trace = Trace::open(dir.path()).expect("open");
    let bytes = trace.table_bytes(Table::Omp);
    eprintln!(
        "omp: {events} events, {bytes} bytes on disk = {:.3} bytes/event",
        bytes as f64 / events as f64
    );

    group.bench_function("scan_all_columns", |b| {
        b.iter(|| {
            let mut n = 0;
            for batch in trace.scan(Table::Omp, &ScanOptions::default()) {
                n += batch.expect("batch").num_rows();
            }
            assert_eq!(n as u64, events);
            n
        })
    });

    let projected = ScanOptions {
        columns: Some(vec![
            "thread".into(),
            "kind".into(),
            "start_ns".into(),
            "end_ns".into(),
        ]),
        ..ScanOptions::default()
    };
    group.bench_function("scan_4_columns", |b| {
        b.iter(|| {
            trace
                .scan(Table::Omp, &projected)
                .map(|batch| batch.expect("batch").num_rows())
                .sum::<usize>()
        })
    });

    group.bench_function("read_records", |b| {
        b.iter(|| {
            let rows = trace
                .read_records::<OmpRecord>(&ScanOptions::default())
                .expect("read");
            assert_eq!(rows.len() as u64, events);
            rows
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

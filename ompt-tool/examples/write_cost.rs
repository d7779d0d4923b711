//! Cost of writing OpenMP records through the format's PartWriter, per row
//! (what the collector's writer thread spends). Usage: write_cost [rows]
use hyscope_format::{OmpRecord, PartWriter, Table, WriterOptions};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("write_cost-{}", std::process::id()));
    let mut rows: Vec<OmpRecord> = (0..n)
        .map(|i| OmpRecord {
            thread: (i % 2) as u32,
            kind: 6,
            variant: 3,
            start_ns: 1_000_000 + i as i64 * 1000,
            end_ns: 1_000_000 + i as i64 * 1000 + 900,
            parallel_id: 1 << 40 | (i / 250) as u64,
            task_id: 1 << 40 | 3,
            codeptr: 0x5555_0000_1234,
            count: 16,
            chunk_start: (i % 250 * 16) as u64,
            ..OmpRecord::default()
        })
        .collect();
    let t = std::time::Instant::now();
    let mut w = PartWriter::create(
        &dir,
        Table::Omp,
        0,
        WriterOptions {
            zstd_level: std::env::var("ZSTD")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(3),
            ..WriterOptions::default()
        },
    )
    .unwrap();
    for chunk in rows.chunks_mut(8192) {
        w.write_omp(chunk).unwrap();
    }
    let stats = w.finish().unwrap();
    let el = t.elapsed();
    println!(
        "{n} rows in {:.3} s: {:.0} ns/row, {:.2} bytes/row",
        el.as_secs_f64(),
        el.as_nanos() as f64 / n as f64,
        stats.bytes as f64 / n as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}

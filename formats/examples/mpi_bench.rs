//! Writer cost and size of the `mpi` table on a synthetic halo exchange (see
//! `benchmarks/formats.md`). Run in release:
//!
//! ```text
//! cargo run --release -p hyscope-format --example mpi_bench -- --rows 2000000
//! ```
//!
//! One rank's stream, per iteration: `MPI_Irecv` from both neighbours,
//! `MPI_Isend` to both (64 KiB), `MPI_Waitall` with its four request
//! completions, a few `MPI_Iprobe` polls, and an 8-byte `MPI_Allreduce`;
//! realistic gaps between calls. The writer's thread CPU time per row is the
//! cost trace mode takes from the application's cores.

use std::collections::BTreeMap;

use hyscope_format::{MpiRecord, PartWriter, Table, WriterOptions, mpi_call as c};
use parquet::file::reader::{FileReader, SerializedFileReader};

#[path = "common/jitter.rs"]
mod jitter;
#[path = "common/thread_cpu.rs"]
mod thread_cpu;
use jitter::Jitter;
use thread_cpu::thread_cpu;

/// `n` rows of rank `rank` of a `ranks`-rank ring halo exchange.
fn halo_rows(n: usize, rank: i32, ranks: i32) -> Vec<MpiRecord> {
    let left = (rank + ranks - 1) % ranks;
    let right = (rank + 1) % ranks;
    let mut j = Jitter(0x9e37_79b9_7f4a_7c15 ^ rank as u64);
    let mut rows = Vec::with_capacity(n + 16);
    let mut t: i64 = 1_000_000_000;
    let mut request: u64 = 0;
    let call = |rows: &mut Vec<MpiRecord>, t: &mut i64, r: MpiRecord, dur: i64| {
        *t += 200 + r.start_ns; // gap before the call (passed in start_ns)
        rows.push(MpiRecord {
            start_ns: *t,
            end_ns: *t + dur,
            ..r
        });
        *t += dur;
    };
    let base = MpiRecord {
        comm_id: 1,
        peer: -1,
        tag: -1,
        root: -1,
        ..MpiRecord::default()
    };
    while rows.len() < n {
        // Compute between iterations: 20-60 µs.
        t += 20_000 + j.next(40_000);
        let first = request + 1;
        for (peer, site) in [(left, 0x4011a0), (right, 0x4011c4)] {
            request += 1;
            let r = MpiRecord {
                call: c::MPI_Irecv,
                peer,
                tag: 7,
                request_id: request,
                callsite: site,
                start_ns: j.next(300),
                ..base
            };
            call(&mut rows, &mut t, r, 300 + j.next(200));
        }
        for (peer, site) in [(left, 0x4011f0), (right, 0x401214)] {
            request += 1;
            let r = MpiRecord {
                call: c::MPI_Isend,
                peer,
                tag: 7,
                bytes_sent: 65536,
                request_id: request,
                callsite: site,
                start_ns: j.next(300),
                ..base
            };
            call(&mut rows, &mut t, r, 900 + j.next(600));
        }
        for _ in 0..j.next(4) {
            let r = MpiRecord {
                call: c::MPI_Iprobe,
                peer: left,
                tag: 7,
                callsite: 0x401240,
                start_ns: j.next(2_000),
                ..base
            };
            call(&mut rows, &mut t, r, 150 + j.next(100));
        }
        let wait = MpiRecord {
            call: c::MPI_Waitall,
            callsite: 0x401268,
            start_ns: j.next(500),
            ..base
        };
        let wait_dur = 2_000 + j.next(30_000);
        call(&mut rows, &mut t, wait, wait_dur);
        let done = t;
        for (k, peer) in [left, right, left, right].into_iter().enumerate() {
            let recv = k < 2;
            rows.push(MpiRecord {
                call: c::REQUEST_COMPLETE,
                start_ns: done,
                end_ns: done,
                peer,
                tag: 7,
                bytes_recv: if recv { 65536 } else { 0 },
                request_id: first + k as u64,
                callsite: 0x401268,
                ..base
            });
        }
        let r = MpiRecord {
            call: c::MPI_Allreduce,
            bytes_sent: 8,
            bytes_recv: 8,
            callsite: 0x4012a0,
            start_ns: j.next(1_000),
            ..base
        };
        call(&mut rows, &mut t, r, 5_000 + j.next(20_000));
    }
    rows.truncate(n);
    rows
}

fn main() {
    let mut n: usize = 2_000_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => n = args.next().and_then(|v| v.parse().ok()).expect("--rows N"),
            other => panic!("unknown option {other}"),
        }
    }
    let dir = std::env::temp_dir().join(format!("hyscope-mpi-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rows = halo_rows(n, 1, 4);
    let options = WriterOptions::default();
    // The collector hands the writer batches of up to a few blocks: write in
    // batches of 64 Ki rows the same way.
    let cpu = thread_cpu();
    let mut w = PartWriter::create(&dir, Table::Mpi, 1, options).expect("writer");
    for batch in rows.chunks(64 * 1024) {
        let mut batch = batch.to_vec();
        w.write_mpi(&mut batch).expect("write");
    }
    let stats = w.finish().expect("finish");
    let cpu = thread_cpu() - cpu;
    println!(
        "mpi: {} rows, {} bytes = {:.3} bytes/row; writer {:.0} ns/row ({:.2} M rows/s per CPU second)",
        stats.rows,
        stats.bytes,
        stats.bytes as f64 / stats.rows as f64,
        cpu.as_nanos() as f64 / stats.rows as f64,
        stats.rows as f64 / cpu.as_secs_f64() / 1e6
    );
    // Compressed bytes per column, summed over the parts' row groups.
    let mut per_column: BTreeMap<String, i64> = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("mpi/rank=1")).expect("parts") {
        let file = std::fs::File::open(entry.expect("entry").path()).expect("part");
        let reader = SerializedFileReader::new(file).expect("parquet");
        for g in reader.metadata().row_groups() {
            for col in g.columns() {
                *per_column.entry(col.column_path().string()).or_default() += col.compressed_size();
            }
        }
    }
    let mut cols: Vec<_> = per_column.into_iter().collect();
    cols.sort_by_key(|(_, b)| -b);
    let list: Vec<String> = cols
        .iter()
        .map(|(name, b)| format!("{name} {:.3}", *b as f64 / stats.rows as f64))
        .collect();
    println!("bytes/row by column: {}", list.join(", "));
    let _ = std::fs::remove_dir_all(&dir);
}

//! Print the `omp` table of a trace, one interval per line (a debugging aid).
//! Usage: cargo run -p hyscope-ompt --example omp_dump -- <trace-dir>

use hyscope_format::{OmpKind, OmpRecord, ScanOptions, SymbolRecord, Trace, variant_name};

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: omp_dump <trace-dir>");
        std::process::exit(2);
    };
    let trace = match Trace::open(std::path::Path::new(&dir)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut rows: Vec<(u32, OmpRecord)> = trace
        .read_records(&ScanOptions::default())
        .unwrap_or_default();
    rows.sort_by_key(|(_, r)| (r.start_ns, r.thread));
    let t0 = rows.first().map_or(0, |(_, r)| r.start_ns);
    for (_, r) in &rows {
        let kind = OmpKind::from_u8(r.kind).map_or("?", |k| k.name());
        let variant = OmpKind::from_u8(r.kind).map_or("", |k| variant_name(k, r.variant));
        println!(
            "t{} {:>14} {:<28} {:>10} {:>10} par={:x} task={:x} team={}/{} count={} cs={} flags={:#x} code={:#x}",
            r.thread,
            kind,
            variant,
            r.start_ns - t0,
            r.end_ns - t0,
            r.parallel_id,
            r.task_id,
            r.team_size,
            r.requested_team_size,
            r.count,
            r.chunk_start,
            r.flags,
            r.codeptr
        );
    }
    let syms: Vec<(u32, SymbolRecord)> = trace
        .read_records(&ScanOptions::default())
        .unwrap_or_default();
    for (_, s) in syms {
        println!(
            "{:#x} {} {:?} {:?}:{:?}",
            s.address, s.module, s.function, s.file, s.line
        );
    }
}

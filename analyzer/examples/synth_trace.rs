//! Write a synthetic hybrid trace for benchmarks:
//! `cargo run --release -p hyscope-analyzer --example synth_trace -- OUT EVENTS [RANKS] [THREADS]`
//! (what it holds: `tests/common/synth.rs`).

use std::path::PathBuf;

#[path = "../tests/common/synth.rs"]
mod synth;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = PathBuf::from(args.first().expect("OUT EVENTS [RANKS] [THREADS]"));
    let events: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let ranks: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let threads: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(4);
    synth::write_synth_trace(&out, events, ranks, threads);
    eprintln!("wrote {} ({} events requested)", out.display(), events);
}

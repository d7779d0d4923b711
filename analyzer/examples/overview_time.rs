//! Time the coarse overview and the index of a trace:
//! `cargo run --release -p hyscope-analyzer --example overview_time -- TRACE`.
use hyscope_analyzer::timeline::{Overview, RankCells, TimelineIndex};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("TRACE"));
    let t = std::time::Instant::now();
    let trace = hyscope_format::Trace::open(&dir).unwrap();
    eprintln!("open {:.2} s", t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let o = Overview::build(&trace, &|_, _| {}).unwrap();
    eprintln!(
        "overview {:.2} s: {} ranks x {} bins of {} ns, {} MB",
        t.elapsed().as_secs_f64(),
        o.rank_rows().len(),
        o.bins(),
        o.bin_ns(),
        o.heap_bytes() >> 20
    );
    // The first builds and saves the cache file (unless it is there), the second reads it.
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let r = Overview::open_cached(&trace, &|_, _| {}).unwrap();
        eprintln!(
            "open_cached {:.3} s cached={} {:?}",
            t.elapsed().as_secs_f64(),
            r.cached,
            r.warning
        );
    }
    if std::env::args().nth(2).is_some() {
        let t = std::time::Instant::now();
        let ix = TimelineIndex::build(&trace).unwrap();
        eprintln!(
            "index {:.2} s, {} segments",
            t.elapsed().as_secs_f64(),
            ix.segments()
        );
    }
}

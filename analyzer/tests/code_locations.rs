//! Ranks are merged by the code location each rank's own symbols give an
//! address (`code_map`), never by raw address: synthetic traces written with
//! the real format writer, where one address is different code on different
//! ranks (an MPMD job, plugins loaded in another order) and where ranks have
//! the same code at different addresses.

use crate::common;

use common::*;
use hyscope_analyzer::code_map::{CodeMap, RENUMBERED, UNRESOLVED};
use hyscope_format::{OmpKind, OmpRecord, ScanOptions, SymbolRecord, Trace, mpi_call as c};

/// `n` instances of a 1-thread parallel region at `codeptr` on `rank`, each
/// with a worksharing loop of 100 iterations at `codeptr + 0x40`, then one
/// `MPI_Allreduce` at `site`; ids from `pid`.
fn regions(b: &mut Builder, rank: u32, codeptr: u64, n: u64, pid: u64) {
    for i in 0..n {
        let t = (pid + i) as i64 * 100 * US;
        b.parallel(rank, pid + i, codeptr, 1, t, t + 50 * US);
        b.implicit_task(rank, pid + i, 0, t + US, t + 49 * US);
        b.omp(
            rank,
            OmpRecord {
                thread: 0,
                kind: OmpKind::Work as u8,
                variant: 1,
                start_ns: t + 2 * US,
                end_ns: t + 40 * US,
                parallel_id: pid + i,
                codeptr: codeptr + 0x40,
                count: 100,
                team_size: 1,
                ..OmpRecord::default()
            },
        );
    }
}

/// An `MPI_Allreduce` at `site` starting `late` after 10 ms, ending at 10.02 ms.
fn allreduce(b: &mut Builder, rank: u32, site: u64, late: i64) {
    b.collective(
        rank,
        c::MPI_Allreduce,
        10 * MS + late,
        10 * MS + 20 * US,
        -1,
        site,
    );
}

fn region<'a>(a: &'a hyscope_analyzer::Analysis, label: &str) -> &'a hyscope_analyzer::RegionStats {
    let regions = a.regions.get().unwrap();
    regions
        .iter()
        .find(|r| r.location.label == label)
        .unwrap_or_else(|| panic!("no region {label} in {regions:#?}"))
}

/// `mpirun -np 1 a : -np 1 b`, two programs built alike: the region, its
/// loop and the `MPI_Allreduce` are at the same addresses in both, a.c's on
/// rank 0 and b.c's on rank 1. Each stays its own program's.
#[test]
fn mpmd_ranks_with_other_code_at_one_address_are_not_merged() {
    let mut b = Builder::new(2, 1, 1);
    for (rank, file) in [(0, "a.c"), (1, "b.c")] {
        b.symbol_on(rank, 0x401200, file, 15);
        b.symbol_on(rank, 0x401240, file, 16);
        b.symbol_on(rank, 0x401300, file, 19);
    }
    regions(&mut b, 0, 0x401200, 3, 1);
    regions(&mut b, 1, 0x401200, 5, 1);
    allreduce(&mut b, 0, 0x401300, 0);
    allreduce(&mut b, 1, 0x401300, 15 * US);
    let (_d, a) = b.analyze();
    let (ra, rb) = (region(&a, "a.c:15"), region(&a, "b.c:15"));
    assert_eq!((ra.ranks.as_slice(), ra.instances), (&[0][..], 3));
    assert_eq!((rb.ranks.as_slice(), rb.instances), (&[1][..], 5));
    assert_ne!(ra.location.address, rb.location.address);
    assert_eq!(a.regions.get().unwrap().len(), 2);
    let loops = a.loops.get().unwrap();
    let mut l: Vec<(&str, u64)> = loops
        .iter()
        .map(|l| (l.location.label.as_str(), l.instances))
        .collect();
    l.sort_unstable();
    assert_eq!(l, [("a.c:16", 3), ("b.c:16", 5)]);
    // Each loop's region is its own program's.
    for l in loops {
        let region = l.region.as_ref().expect("the loop's region");
        assert_eq!(region.file, l.location.file, "{}", l.location.label);
    }
    let mpi = a.mpi.get().unwrap();
    let mut sites: Vec<&str> = mpi
        .callsites
        .iter()
        .filter(|s| s.call == "MPI_Allreduce")
        .map(|s| s.location.as_ref().unwrap().label.as_str())
        .collect();
    sites.sort_unstable();
    assert_eq!(sites, ["a.c:19", "b.c:19"]);
    // Rank 0 waits 15 µs at N×N for rank 1: at its own program's call site.
    let w = a.wait_states.get().unwrap();
    let waits: Vec<(&str, i64)> = w
        .per_callsite
        .iter()
        .filter(|e| e.seconds > 0.0)
        .map(|e| {
            let label = e.location.as_ref().unwrap().label.as_str();
            (label, (e.seconds * 1e9).round() as i64)
        })
        .collect();
    assert_eq!(waits, [("a.c:19", 15 * US)]);
}

/// One program on every rank, whose plugins A and B are loaded in another
/// order on odd ranks: the address of A's region on rank 0 is B's on rank 1,
/// and A's region on rank 1 is elsewhere. Each plugin's region is one
/// location over both ranks, with every instance of its own.
#[test]
fn spmd_ranks_merge_by_location_where_plugin_addresses_swap() {
    let mut b = Builder::new(2, 1, 1);
    let (first, second) = (0x1000_1160, 0x7f00_0000_1160);
    b.symbol_on(0, first, "plug_a.c", 9);
    b.symbol_on(0, second, "plug_b.c", 9);
    b.symbol_on(1, first, "plug_b.c", 9);
    b.symbol_on(1, second + 0x10_0000, "plug_a.c", 9);
    regions(&mut b, 0, first, 2, 1);
    regions(&mut b, 0, second, 3, 10);
    regions(&mut b, 1, second + 0x10_0000, 2, 1);
    regions(&mut b, 1, first, 3, 10);
    let (_d, a) = b.analyze();
    let (ra, rb) = (region(&a, "plug_a.c:9"), region(&a, "plug_b.c:9"));
    assert_eq!((ra.ranks.as_slice(), ra.instances), (&[0, 1][..], 4));
    assert_eq!((rb.ranks.as_slice(), rb.instances), (&[0, 1][..], 6));
    assert_eq!(a.regions.get().unwrap().len(), 2);
    // plug_a.c:9 has the smallest address; plug_b.c:9's are `first`
    // (taken) and `second`.
    assert_eq!((ra.location.address, rb.location.address), (first, second));
}

/// An address its rank does not resolve is its own location on that rank:
/// the same raw address on two ranks is two rows, each saying so.
#[test]
fn unresolved_addresses_stay_with_their_rank() {
    let mut b = Builder::new(2, 1, 1);
    regions(&mut b, 0, 0x3000, 2, 1);
    regions(&mut b, 1, 0x3000, 4, 1);
    let (_d, a) = b.analyze();
    let r0 = region(&a, "0x3000 (rank 0, unresolved)");
    let r1 = region(&a, "0x3000 (rank 1, unresolved)");
    assert_eq!((r0.ranks.as_slice(), r0.instances), (&[0][..], 2));
    assert_eq!((r1.ranks.as_slice(), r1.instances), (&[1][..], 4));
    for id in [r0.location.address, r1.location.address] {
        assert_eq!(id & RENUMBERED, UNRESOLVED, "{id:#x}");
    }
}

/// The viewers' rule is the analysis's: a map built from the trace's
/// `symbols` rows, as the GUI builds it, gives every row of a location the
/// analysis lists the id the analysis gave it, and no other row.
#[test]
fn the_viewers_map_names_the_analysis_s_locations() {
    let mut b = Builder::new(2, 1, 1);
    for (rank, file) in [(0, "a.c"), (1, "b.c")] {
        b.symbol_on(rank, 0x401200, file, 15);
        b.symbol_on(rank, 0x401240, file, 16);
    }
    regions(&mut b, 0, 0x401200, 3, 1);
    regions(&mut b, 1, 0x401200, 5, 1);
    regions(&mut b, 1, 0x5000, 1, 20);
    let (d, a) = b.analyze();
    let trace = Trace::open(d.path()).unwrap();
    let symbols: Vec<(u32, SymbolRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    let map = CodeMap::new(symbols);
    let rows: Vec<(u32, OmpRecord)> = trace.read_records(&ScanOptions::default()).unwrap();
    for r in a.regions.get().unwrap() {
        let mine: Vec<u32> = rows
            .iter()
            .filter(|(rank, row)| {
                row.kind == OmpKind::Parallel as u8
                    && map.matches(r.location.address, *rank, row.codeptr)
            })
            .map(|(rank, _)| *rank)
            .collect();
        assert_eq!(mine.len() as u64, r.instances, "{}", r.location.label);
        assert!(
            mine.iter().all(|x| r.ranks.contains(x)),
            "{}",
            r.location.label
        );
    }
}

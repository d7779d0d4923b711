//! The benchmarks' synthetic hybrid trace (`examples/synth_trace`, and the
//! tests that analyse it): OpenMP rows from the format crate's generator
//! (dynamic loops with per-chunk events, barriers, implicit tasks); each rank
//! adds a master-only `MPI_Allreduce` after every region and a ring
//! `MPI_Sendrecv`-style Send/Recv pair every 8 regions.

use std::path::Path;

use hyscope_format::synthetic::{OmpGenerator, OmpTraceSpec};
use hyscope_format::{
    Manifest, MpiInfo, MpiRecord, OmpKind, OpenMpInfo, PartWriter, RankInfo, SymbolRecord, Table,
    WriterOptions, mpi_call as c,
};
use rayon::prelude::*;

/// Every rank's `symbols` rows, as a recording of one program has them: the
/// generator's 8 loop call sites (`synth.c:101`, `:111`, …) and their
/// regions (`synth.c:100`, `:110`, …), the `MPI_Allreduce`, `MPI_Send` and
/// `MPI_Recv` call sites (`synth.c:200` to `:202`).
fn symbol_rows() -> Vec<SymbolRecord> {
    let at = |address: u64, line: u32| SymbolRecord {
        address,
        module: "/synth/app".into(),
        function: Some("main".into()),
        file: Some("/synth/synth.c".into()),
        line: Some(line),
        module_offset: Some(address),
        module_build_id: None,
    };
    let mut rows: Vec<SymbolRecord> = (0..8u32)
        .flat_map(|i| {
            let base = 0x40_1a00 + u64::from(i) * 0x1c0;
            [at(base, 100 + 10 * i), at(base + 0x20, 101 + 10 * i)]
        })
        .collect();
    rows.extend([at(0x4000, 200), at(0x4100, 201), at(0x4200, 202)]);
    rows
}

/// Write about `events` OpenMP rows over `ranks` ranks of `threads` threads into `out`.
pub fn write_synth_trace(out: &Path, events: u64, ranks: u32, threads: u32) {
    std::fs::create_dir_all(out).unwrap();
    let per_rank = events / ranks as u64;
    (0..ranks).into_par_iter().for_each(|rank| {
        let spec = OmpTraceSpec {
            threads,
            events_per_rank: per_rank,
            seed: 1 + rank as u64,
            ..OmpTraceSpec::default()
        };
        let mut g = OmpGenerator::new(spec, rank);
        let mut omp = PartWriter::create(out, Table::Omp, rank, WriterOptions::default()).unwrap();
        let mut mpi = PartWriter::create(out, Table::Mpi, rank, WriterOptions::default()).unwrap();
        let mut buf = Vec::new();
        let mut region = 0u64;
        loop {
            buf.clear();
            let more = g.fill(&mut buf, 256 * 1024);
            let mut calls = Vec::new();
            for r in buf.iter().filter(|r| r.kind == OmpKind::Parallel as u8) {
                region += 1;
                let s = r.end_ns + 100;
                calls.push(MpiRecord {
                    call: c::MPI_Allreduce,
                    start_ns: s,
                    end_ns: s + 400 + (rank as i64 * 37) % 300,
                    peer: -1,
                    bytes_sent: 8,
                    bytes_recv: 8,
                    comm_id: 1,
                    root: -1,
                    callsite: 0x4000,
                    ..MpiRecord::default()
                });
                if region.is_multiple_of(8) {
                    let to = (rank + 1) % ranks;
                    let from = (rank + ranks - 1) % ranks;
                    calls.push(MpiRecord {
                        call: c::MPI_Send,
                        start_ns: s + 800,
                        end_ns: s + 850,
                        peer: to as i32,
                        bytes_sent: 1 << (10 + region % 8),
                        comm_id: 1,
                        root: -1,
                        callsite: 0x4100,
                        ..MpiRecord::default()
                    });
                    calls.push(MpiRecord {
                        call: c::MPI_Recv,
                        start_ns: s + 860,
                        end_ns: s + 950,
                        peer: from as i32,
                        bytes_recv: 1 << (10 + region % 8),
                        comm_id: 1,
                        root: -1,
                        callsite: 0x4200,
                        ..MpiRecord::default()
                    });
                }
            }
            omp.write_omp(&buf).unwrap();
            mpi.write_mpi(&mut calls).unwrap();
            if !more {
                break;
            }
        }
        let so = omp.finish().unwrap();
        let sm = mpi.finish().unwrap();
        let mut sym =
            PartWriter::create(out, Table::Symbols, rank, WriterOptions::default()).unwrap();
        sym.write_records(&symbol_rows()).unwrap();
        sym.finish().unwrap();
        RankInfo {
            rank,
            host: "node0".into(),
            threads,
            finished: true,
            events: hyscope_format::EventCounts {
                omp: so.rows,
                mpi: sm.rows,
                samples: 0,
            },
            ..RankInfo::default()
        }
        .write(out)
        .unwrap();
    });
    let mut m = Manifest::new();
    m.mode = "trace".into();
    m.command = vec!["synth_trace".into()];
    m.world_size = ranks;
    m.hosts = vec!["node0".into()];
    m.ranks = (0..ranks)
        .map(|rank| RankInfo {
            rank,
            host: "node0".into(),
            threads,
            ..RankInfo::default()
        })
        .collect();
    m.openmp = Some(OpenMpInfo {
        runtime_version: "synthetic".into(),
        ..OpenMpInfo::default()
    });
    m.mpi = Some(MpiInfo {
        flavour: "openmpi".into(),
        library_version: "synthetic".into(),
        eager_limits: [("btl_vader_eager_limit".to_string(), 4096u64)]
            .into_iter()
            .collect(),
        ..MpiInfo::default()
    });
    m.write(out).unwrap();
}

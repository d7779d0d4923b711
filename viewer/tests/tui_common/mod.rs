//! A small synthetic hybrid trace with known numbers, written with the format
//! crate's own writer, shared by the TUI tests (`mod tui_common;`).
//!
//! Two ranks on one host (or any even number, [`write_trace_ranks`]: each
//! pair as ranks 0 and 1), two OpenMP threads each, 10 ms each:
//! - 4 instances of one parallel region (`0x401000`, `hybrid.c:40` on every
//!   rank), 1.5 ms each, team 2; in each a static loop (`0x402000`,
//!   `hybrid.c:42`, 1000 iterations) where thread 0 works
//!   1.19 ms and thread 1 0.78 ms, then the loop's barrier (thread 1 waits
//!   0.40 ms), then the region's barrier;
//! - rank 0 sends rank 1 ten 1 KiB messages (`MPI_Send`/`MPI_Recv`, eager under
//!   the 4096 B limit) and one 1 MiB message (rendezvous);
//! - both ranks call `MPI_Allreduce` (8 B) twice and `MPI_Barrier` once;
//! - samples: `mpi.connections` 0 → 1 at 2.5 ms, `mem.vmrss` 30 → 40 → 35 MiB;
//! - RAPL unavailable ("perf power PMU: energy-psys reads 0"), or with
//!   [`write_trace_with_energy`] available: `energy.pkg` 0 → 0.5 → 1.0 J at
//!   0, 5, 10 ms (100 W throughout).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use hyscope_format::{
    Manifest, MpiInfo, MpiRecord, OmpKind, OmpRecord, OpenMpInfo, PartWriter, RankInfo,
    SampleRecord, SamplerInfo, SymbolRecord, Table, WriterOptions, mpi_call,
};

pub const MS: i64 = 1_000_000;
pub const US: i64 = 1_000;
pub const REGION: u64 = 0x401000;
pub const LOOP: u64 = 0x402000;
pub const END: i64 = 10 * MS;

fn omp(thread: u32, kind: OmpKind, variant: u8, start: i64, end: i64) -> OmpRecord {
    OmpRecord {
        thread,
        kind: kind as u8,
        variant,
        start_ns: start,
        end_ns: end,
        ..Default::default()
    }
}

fn mpi(call: u16, start: i64, end: i64) -> MpiRecord {
    MpiRecord {
        call,
        start_ns: start,
        end_ns: end,
        peer: -1,
        root: -1,
        comm_id: 1,
        ..Default::default()
    }
}

/// Region instance `i` starts here.
pub fn region_start(i: i64) -> i64 {
    MS + i * 2 * MS
}

fn omp_rows(rank: u32) -> Vec<OmpRecord> {
    let mut v = vec![
        omp(0, OmpKind::Thread, 1, 0, END),
        omp(0, OmpKind::InitialTask, 0, 0, END),
        omp(1, OmpKind::Thread, 2, MS, END),
    ];
    for i in 0..4_i64 {
        let s = region_start(i);
        let pid = (rank as u64) << 32 | (i as u64 + 1);
        let mut par = omp(0, OmpKind::Parallel, 0, s, s + 1500 * US);
        par.parallel_id = pid;
        par.codeptr = REGION;
        par.team_size = 2;
        par.requested_team_size = 2;
        v.push(par);
        for t in 0..2_u32 {
            let off = 10 * US * (t as i64 + 1);
            let work_end = if t == 0 { s + 1200 * US } else { s + 800 * US };
            let mut it = omp(t, OmpKind::ImplicitTask, 0, s + off, s + 1490 * US);
            it.parallel_id = pid;
            it.count = t as u64;
            it.team_size = 2;
            it.task_id = pid * 10 + t as u64;
            v.push(it);
            let mut w = omp(t, OmpKind::Work, 10, s + off, work_end);
            w.parallel_id = pid;
            w.codeptr = LOOP;
            w.count = 1000;
            w.task_id = pid * 10 + t as u64;
            v.push(w);
            let mut ch = omp(t, OmpKind::Chunk, 3, s + off, work_end);
            ch.parallel_id = pid;
            ch.codeptr = LOOP;
            ch.chunk_start = t as u64 * 500;
            ch.count = 500;
            ch.task_id = pid * 10 + t as u64;
            v.push(ch);
            for (kind, variant, a, b) in [
                (OmpKind::Sync, 8, work_end, s + 1250 * US),
                (OmpKind::SyncWait, 8, work_end + US, s + 1249 * US),
                (OmpKind::Sync, 9, s + 1260 * US, s + 1490 * US),
                (OmpKind::SyncWait, 9, s + 1261 * US, s + 1489 * US),
            ] {
                let mut r = omp(t, kind, variant, a, b);
                r.parallel_id = pid;
                r.codeptr = REGION;
                r.task_id = pid * 10 + t as u64;
                v.push(r);
            }
        }
    }
    v
}

fn mpi_rows(rank: u32) -> Vec<MpiRecord> {
    let mut v = vec![mpi(mpi_call::MPI_Init_thread, 0, MS - 100 * US)];
    // Pairs of ranks: the even one sends, the odd one receives.
    let peer = rank as i32 ^ 1;
    // Between regions: 2.5 ms .. 3 ms after each region start.
    for i in 0..10_i64 {
        let s = region_start(i % 4) + 1550 * US + (i / 4) * 100 * US;
        let mut r = if rank.is_multiple_of(2) {
            let mut r = mpi(mpi_call::MPI_Send, s, s + 5 * US);
            r.bytes_sent = 1024;
            r
        } else {
            let mut r = mpi(mpi_call::MPI_Recv, s - 20 * US, s + 6 * US);
            r.bytes_recv = 1024;
            r
        };
        r.peer = peer;
        r.tag = i as i32;
        r.callsite = 0x403000;
        v.push(r);
    }
    let s = 8 * MS + 200 * US;
    let mut big = if rank.is_multiple_of(2) {
        let mut r = mpi(mpi_call::MPI_Send, s, s + 300 * US);
        r.bytes_sent = 1 << 20;
        r
    } else {
        let mut r = mpi(mpi_call::MPI_Recv, s, s + 310 * US);
        r.bytes_recv = 1 << 20;
        r
    };
    big.peer = peer;
    big.tag = 99;
    big.callsite = 0x403100;
    v.push(big);
    for k in 0..2_i64 {
        let s = 9 * MS + k * 200 * US + (rank % 2) as i64 * 50 * US;
        let mut r = mpi(mpi_call::MPI_Allreduce, s, 9 * MS + k * 200 * US + 120 * US);
        r.bytes_sent = 8;
        r.bytes_recv = 8;
        r.callsite = 0x403200;
        v.push(r);
    }
    let mut b = mpi(mpi_call::MPI_Barrier, 9 * MS + 500 * US, 9 * MS + 600 * US);
    b.callsite = 0x403300;
    v.push(b);
    v.push(mpi(
        mpi_call::MPI_Finalize,
        9 * MS + 700 * US,
        9 * MS + 900 * US,
    ));
    v
}

fn sample(time_ns: i64, metric: &str, key: i64, value: f64) -> SampleRecord {
    SampleRecord {
        time_ns,
        metric: metric.into(),
        key,
        value,
    }
}

fn sample_rows(energy: bool) -> Vec<SampleRecord> {
    let mib = (1 << 20) as f64;
    let mut v = vec![
        sample(500 * US, "mpi.connections", -1, 0.0),
        sample(2500 * US, "mpi.connections", -1, 1.0),
        sample(9500 * US, "mpi.connections", -1, 1.0),
        sample(500 * US, "mem.vmrss", -1, 30.0 * mib),
        sample(5 * MS, "mem.vmrss", -1, 40.0 * mib),
        sample(9500 * US, "mem.vmrss", -1, 35.0 * mib),
    ];
    if energy {
        v.push(sample(0, "energy.pkg", 0, 0.0));
        v.push(sample(5 * MS, "energy.pkg", 0, 0.5));
        v.push(sample(10 * MS, "energy.pkg", 0, 1.0));
    }
    v
}

/// Write the trace into a fresh directory under the target dir and return it.
pub fn write_trace(name: &str) -> PathBuf {
    write(name, false, 2)
}

/// The same trace with RAPL available on rank 0 (100 W for 10 ms).
pub fn write_trace_with_energy(name: &str) -> PathBuf {
    write(name, true, 2)
}

/// The same trace with `ranks` ranks (an even number): each pair of ranks
/// exchanges the messages ranks 0 and 1 do.
pub fn write_trace_ranks(name: &str, ranks: u32) -> PathBuf {
    write(name, false, ranks)
}

/// Every rank's `symbols` rows (one program, loaded at one address): the
/// region is `hybrid.c:40`, the loop `hybrid.c:42`, the MPI call sites
/// `hybrid.c:60` to `:63`.
fn symbol_rows() -> Vec<SymbolRecord> {
    let at = |address: u64, line: u32| SymbolRecord {
        address,
        module: "/app/hybrid".into(),
        function: Some("main".into()),
        file: Some("/src/hybrid.c".into()),
        line: Some(line),
        module_offset: Some(address),
        module_build_id: None,
    };
    vec![
        at(REGION, 40),
        at(LOOP, 42),
        at(0x403000, 60),
        at(0x403100, 61),
        at(0x403200, 62),
        at(0x403300, 63),
    ]
}

fn write(name: &str, energy: bool, ranks: u32) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tui-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut m = Manifest::new();
    m.command = vec!["./hybrid".into(), "--small".into()];
    m.start_time = "2026-11-22T07:00:00Z".into();
    m.mode = "trace".into();
    m.hosts = vec!["node0".into()];
    m.world_size = ranks;
    m.mpi = Some(MpiInfo {
        flavour: "openmpi".into(),
        library_version: "Open MPI v4.1.4".into(),
        // Open MPI's ob1 over openib (format 1.8): the memory model's openib receive queues.
        components: ["btl_openib", "btl_self", "btl_vader", "pml_ob1"]
            .map(String::from)
            .to_vec(),
        standard_version: "3.1".into(),
        thread_level_requested: Some("funneled".into()),
        thread_level_provided: Some("funneled".into()),
        eager_limits: [("vader".to_string(), 4096)].into(),
        transports: vec!["vader".into()],
        ..Default::default()
    });
    m.openmp = Some(OpenMpInfo {
        runtime_version: "LLVM OMP version: 5.0.20140926".into(),
        runtime_path: "/usr/lib/llvm-19/lib/libomp.so.5".into(),
        ompt_version: 1,
        ..Default::default()
    });
    m.samplers = vec![if energy {
        SamplerInfo {
            name: "rapl".into(),
            available: true,
            reason: "perf power PMU: energy-pkg".into(),
            ranks: vec![0],
        }
    } else {
        SamplerInfo {
            name: "rapl".into(),
            available: false,
            reason: "perf power PMU: energy-psys reads 0".into(),
            ranks: vec![],
        }
    }];
    for rank in 0..ranks {
        let o = omp_rows(rank);
        let mut p = mpi_rows(rank);
        let samples = sample_rows(energy && rank == 0);
        m.ranks.push(RankInfo {
            rank,
            host: "node0".into(),
            pid: 1000 + rank,
            cores: vec![rank * 2, rank * 2 + 1],
            threads: 2,
            events: hyscope_format::EventCounts {
                omp: o.len() as u64,
                mpi: p.len() as u64,
                samples: samples.len() as u64,
            },
            rss_before_init: Some(10 << 20),
            rss_after_init: Some(30 << 20),
            finished: true,
            ..Default::default()
        });
        let mut w = PartWriter::create(&dir, Table::Omp, rank, WriterOptions::default()).unwrap();
        w.write_omp(&o).unwrap();
        w.finish().unwrap();
        let mut w = PartWriter::create(&dir, Table::Mpi, rank, WriterOptions::default()).unwrap();
        w.write_mpi(&mut p).unwrap();
        w.finish().unwrap();
        let mut w =
            PartWriter::create(&dir, Table::Samples, rank, WriterOptions::default()).unwrap();
        w.write_records(&samples).unwrap();
        w.finish().unwrap();
        let mut w =
            PartWriter::create(&dir, Table::Symbols, rank, WriterOptions::default()).unwrap();
        w.write_records(&symbol_rows()).unwrap();
        w.finish().unwrap();
    }
    m.write(&dir).unwrap();
    dir
}

//! Synthetic traces written with the real format writer, whose answers are
//! known: the [`Builder`] of the analyzer's and the viewer's tests.

use std::path::Path;

use hyscope_format::{
    ClockOffset, Manifest, MpiInfo, MpiRecord, OmpKind, OmpRecord, OpenMpInfo, PartWriter,
    PhaseRecord, RankInfo, SampleRecord, SamplerInfo, SymbolRecord, Table, WriterOptions,
    mpi_call as c,
};

pub const US: i64 = 1_000;
pub const MS: i64 = 1_000_000;

/// A trace under construction.
pub struct Builder {
    pub manifest: Manifest,
    pub omp: Vec<Vec<OmpRecord>>,
    pub mpi: Vec<Vec<MpiRecord>>,
    pub samples: Vec<Vec<SampleRecord>>,
    pub phases: Vec<Vec<PhaseRecord>>,
    /// Every rank's `symbols` rows (each rank resolves its own addresses:
    /// a symbol of the program is in every rank's table).
    pub symbols: Vec<Vec<SymbolRecord>>,
}

impl Builder {
    /// `ranks` ranks with `threads` threads each, on `hosts` hosts (ranks dealt in blocks).
    pub fn new(ranks: u32, threads: u32, hosts: u32) -> Builder {
        let mut m = Manifest::new();
        m.mode = "trace".into();
        m.world_size = ranks;
        m.hosts = (0..hosts).map(|h| format!("node{h}")).collect();
        let per_host = ranks.div_ceil(hosts);
        m.ranks = (0..ranks)
            .map(|r| RankInfo {
                rank: r,
                host: format!("node{}", r / per_host),
                threads,
                finished: true,
                ..RankInfo::default()
            })
            .collect();
        m.openmp = Some(OpenMpInfo {
            runtime_version: "LLVM OMP version: 5.0.20140926".into(),
            ..OpenMpInfo::default()
        });
        m.mpi = Some(MpiInfo {
            flavour: "openmpi".into(),
            library_version: "Open MPI v4.1.4".into(),
            // Open MPI's ob1 over openib (format 1.8): the memory model's openib receive queues.
            components: ["btl_openib", "btl_self", "btl_vader", "pml_ob1"]
                .map(String::from)
                .to_vec(),
            eager_limits: [("btl_vader_eager_limit".to_string(), 4096u64)]
                .into_iter()
                .collect(),
            ..MpiInfo::default()
        });
        m.samplers = vec![SamplerInfo {
            name: "rapl".into(),
            available: false,
            reason: "perf power PMU: energy-psys reads 0".into(),
            ranks: vec![],
        }];
        Builder {
            manifest: m,
            omp: vec![Vec::new(); ranks as usize],
            mpi: vec![Vec::new(); ranks as usize],
            samples: vec![Vec::new(); ranks as usize],
            phases: vec![Vec::new(); ranks as usize],
            symbols: vec![Vec::new(); ranks as usize],
        }
    }

    /// `address` is `file:line` on every rank (one program, loaded at one address).
    pub fn symbol(&mut self, address: u64, file: &str, line: u32) {
        for rank in 0..self.symbols.len() as u32 {
            self.symbol_on(rank, address, file, line);
        }
    }

    /// `address` is `file:line` on `rank` (its own symbols).
    pub fn symbol_on(&mut self, rank: u32, address: u64, file: &str, line: u32) {
        self.symbols[rank as usize].push(SymbolRecord {
            address,
            module: "/app".into(),
            function: Some(format!("fn_{line}")),
            file: Some(format!("/src/{file}")),
            line: Some(line),
            module_offset: None,
            module_build_id: None,
        });
    }

    pub fn write(&self, dir: &Path) {
        let opts = WriterOptions::default();
        for (r, rows) in self.omp.iter().enumerate() {
            if !rows.is_empty() {
                let mut w = PartWriter::create(dir, Table::Omp, r as u32, opts.clone()).unwrap();
                w.write_omp(rows).unwrap();
                w.finish().unwrap();
            }
        }
        for (r, rows) in self.mpi.iter().enumerate() {
            if !rows.is_empty() {
                let mut w = PartWriter::create(dir, Table::Mpi, r as u32, opts.clone()).unwrap();
                w.write_mpi(&mut rows.clone()).unwrap();
                w.finish().unwrap();
            }
        }
        for (r, rows) in self.samples.iter().enumerate() {
            if !rows.is_empty() {
                let mut w =
                    PartWriter::create(dir, Table::Samples, r as u32, opts.clone()).unwrap();
                w.write_records(rows).unwrap();
                w.finish().unwrap();
            }
        }
        for (r, rows) in self.phases.iter().enumerate() {
            if !rows.is_empty() {
                let mut w = PartWriter::create(dir, Table::Phases, r as u32, opts.clone()).unwrap();
                w.write_records(rows).unwrap();
                w.finish().unwrap();
            }
        }
        for (r, rows) in self.symbols.iter().enumerate() {
            if !rows.is_empty() {
                let mut w =
                    PartWriter::create(dir, Table::Symbols, r as u32, opts.clone()).unwrap();
                w.write_records(rows).unwrap();
                w.finish().unwrap();
            }
        }
        self.manifest.write(dir).unwrap();
    }

    /// Write to a fresh temp dir and analyse.
    pub fn analyze(&self) -> (tempfile::TempDir, hyscope_analyzer::Analysis) {
        let dir = tempfile::tempdir().unwrap();
        self.write(dir.path());
        let a = hyscope_analyzer::analyze(dir.path(), &Default::default()).unwrap();
        (dir, a)
    }

    pub fn set_offsets(&mut self, rank: u32, offsets: Vec<ClockOffset>) {
        self.manifest.ranks[rank as usize].clock_offsets = offsets;
    }

    // ---- OpenMP helpers ----

    pub fn omp(&mut self, rank: u32, r: OmpRecord) {
        self.omp[rank as usize].push(r);
    }

    /// A parallel region on the master (thread 0) with id `pid`.
    pub fn parallel(&mut self, rank: u32, pid: u64, codeptr: u64, team: u32, start: i64, end: i64) {
        self.omp(
            rank,
            OmpRecord {
                thread: 0,
                kind: OmpKind::Parallel as u8,
                start_ns: start,
                end_ns: end,
                parallel_id: pid,
                task_id: 1,
                codeptr,
                team_size: team,
                requested_team_size: team,
                ..OmpRecord::default()
            },
        );
    }

    pub fn implicit_task(&mut self, rank: u32, pid: u64, thread: u32, start: i64, end: i64) {
        self.omp(
            rank,
            OmpRecord {
                thread,
                kind: OmpKind::ImplicitTask as u8,
                start_ns: start,
                end_ns: end,
                parallel_id: pid,
                task_id: 100 + pid * 64 + thread as u64,
                count: thread as u64,
                ..OmpRecord::default()
            },
        );
    }

    /// A barrier (sync + optional wait) of `variant` on a thread.
    pub fn barrier(
        &mut self,
        rank: u32,
        pid: u64,
        thread: u32,
        variant: u8,
        total: (i64, i64),
        wait: Option<(i64, i64)>,
    ) {
        self.omp(
            rank,
            OmpRecord {
                thread,
                kind: OmpKind::Sync as u8,
                variant,
                start_ns: total.0,
                end_ns: total.1,
                parallel_id: pid,
                ..OmpRecord::default()
            },
        );
        if let Some(w) = wait {
            self.omp(
                rank,
                OmpRecord {
                    thread,
                    kind: OmpKind::SyncWait as u8,
                    variant,
                    start_ns: w.0,
                    end_ns: w.1,
                    parallel_id: pid,
                    ..OmpRecord::default()
                },
            );
        }
    }

    // ---- MPI helpers ----

    pub fn mpi(&mut self, rank: u32, r: MpiRecord) {
        self.mpi[rank as usize].push(r);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &mut self,
        rank: u32,
        call: u16,
        start: i64,
        end: i64,
        peer: i32,
        bytes: u64,
        callsite: u64,
    ) {
        let (sent, recv) = if matches!(call, c::MPI_Recv | c::MPI_Irecv) {
            (0, bytes)
        } else {
            (bytes, 0)
        };
        self.mpi(
            rank,
            MpiRecord {
                thread: 0,
                call,
                start_ns: start,
                end_ns: end,
                peer,
                tag: 0,
                bytes_sent: sent,
                bytes_recv: recv,
                comm_id: 1,
                root: -1,
                request_id: 0,
                in_parallel: false,
                callsite,
                ..MpiRecord::default()
            },
        );
    }

    pub fn collective(
        &mut self,
        rank: u32,
        call: u16,
        start: i64,
        end: i64,
        root: i32,
        callsite: u64,
    ) {
        self.mpi(
            rank,
            MpiRecord {
                call,
                start_ns: start,
                end_ns: end,
                peer: -1,
                comm_id: 1,
                root,
                callsite,
                ..MpiRecord::default()
            },
        );
    }
}

/// Relative closeness.
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-30)
}

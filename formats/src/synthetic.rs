//! Synthetic but realistic OpenMP traces, for benchmarks and tests of the
//! format (and of anything that reads traces) without running a program.
//!
//! The shape follows what libomp 19 reports for a loop-heavy code (see
//! `docs/platform.md`, "OpenMP runtimes and OMPT"):
//! a sequence of parallel regions; in each, every thread has an implicit task,
//! a dynamically scheduled loop (`work`, variant `loop_dynamic`) cut into
//! chunks (`chunk`, with the real first iteration and iteration count that the
//! dispatch callback gives), then the loop's implicit workshare barrier and the
//! region's implicit parallel barrier, each as `sync` with its `sync_wait`.
//! Chunks are handed to whichever thread is free first, as a dynamic schedule
//! does, so `chunk_start` interleaves between threads.
//!
//! Deterministic: the same [`OmpTraceSpec`] and rank give the same rows.

use crate::schema::{OmpKind, OmpRecord};

/// How chunk durations are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkDurations {
    /// Each loop has its own typical chunk duration (uniform in 2–20 µs, one
    /// per loop call site), every chunk of it varies by ±10 %: equal-sized chunks
    /// of the same loop body take similar times.
    /// The variation is [`OmpTraceSpec::jitter_percent`].
    PerLoop,
    /// Every chunk independently uniform in 2–20 µs (worst case for compression).
    Uniform,
}

/// What to generate for one rank.
#[derive(Debug, Clone)]
pub struct OmpTraceSpec {
    /// OpenMP threads per rank.
    pub threads: u32,
    /// Stop after the parallel region during which this many rows were reached.
    pub events_per_rank: u64,
    /// Chunks per loop over all threads (so one barrier every this many chunks), on average.
    pub chunks_per_loop: u32,
    pub durations: ChunkDurations,
    /// For [`ChunkDurations::PerLoop`]: chunk durations vary by ± this percentage of the loop's typical one.
    pub jitter_percent: u32,
    pub seed: u64,
}

impl Default for OmpTraceSpec {
    fn default() -> Self {
        OmpTraceSpec {
            threads: 2,
            events_per_rank: 1_000_000,
            chunks_per_loop: 100,
            durations: ChunkDurations::PerLoop,
            jitter_percent: 10,
            seed: 1,
        }
    }
}

/// splitmix64: small, fast, good enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

/// A loop call site of the synthetic application.
struct LoopSite {
    codeptr: u64,
    region_codeptr: u64,
    chunk_size: u64,
    mean_ns: i64,
}

/// Generates the rows of one rank, region after region.
pub struct OmpGenerator {
    spec: OmpTraceSpec,
    rng: Rng,
    sites: Vec<LoopSite>,
    now: i64,
    region: u64,
    rows: u64,
}

impl OmpGenerator {
    pub fn new(spec: OmpTraceSpec, rank: u32) -> OmpGenerator {
        let mut rng = Rng(spec.seed ^ (u64::from(rank) << 32 | 0x5EED));
        let sites = (0..8)
            .map(|i| LoopSite {
                codeptr: 0x40_1a20 + i * 0x1c0,
                region_codeptr: 0x40_1a00 + i * 0x1c0,
                chunk_size: [4, 8, 16, 32, 64][rng.next() as usize % 5],
                mean_ns: rng.range(2_000, 20_000),
            })
            .collect();
        OmpGenerator {
            spec,
            rng,
            sites,
            // A monotonic clock some hours after boot.
            now: 7_200_000_000_000 + i64::from(rank as u16) * 1_000,
            region: 0,
            rows: 0,
        }
    }

    /// Rows generated so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Append whole parallel regions to `out` until it holds at least `min_rows`
    /// rows or the rank is complete. Returns false once the rank is complete.
    pub fn fill(&mut self, out: &mut Vec<OmpRecord>, min_rows: usize) -> bool {
        while out.len() < min_rows {
            if self.rows >= self.spec.events_per_rank {
                return false;
            }
            let before = out.len();
            self.region(out);
            self.rows += (out.len() - before) as u64;
        }
        self.rows < self.spec.events_per_rank
    }

    /// Every row of the rank (for small specs).
    pub fn all(spec: OmpTraceSpec, rank: u32) -> Vec<OmpRecord> {
        let mut g = OmpGenerator::new(spec, rank);
        let mut out = Vec::new();
        while g.fill(&mut out, usize::MAX) {}
        out
    }

    fn region(&mut self, out: &mut Vec<OmpRecord>) {
        let threads = self.spec.threads.max(1);
        let team = threads as usize;
        self.region += 1;
        let parallel_id = self.region;
        let site = (self.rng.next() % self.sites.len() as u64) as usize;
        let (codeptr, region_codeptr, chunk_size, mean_ns) = {
            let s = &self.sites[site];
            (s.codeptr, s.region_codeptr, s.chunk_size, s.mean_ns)
        };
        let n_chunks = u64::from(self.spec.chunks_per_loop.max(5)) - 4 + self.rng.next() % 9;
        let trip = n_chunks * chunk_size - self.rng.next() % chunk_size;
        let task_base = 1_000 + self.region * (u64::from(threads) + 1);

        let region_start = self.now;
        // Workers start their implicit task a little after the master forks.
        let task_start: Vec<i64> = (0..team)
            .map(|t| region_start + 150 + if t == 0 { 0 } else { self.rng.range(300, 900) })
            .collect();
        let work_start: Vec<i64> = task_start
            .iter()
            .map(|s| s + self.rng.range(40, 120))
            .collect();
        let mut cursor = work_start.clone();
        let mut chunks: Vec<OmpRecord> = Vec::with_capacity(n_chunks as usize);
        let mut next_iter = 0u64;
        while next_iter < trip {
            // Dynamic schedule: the thread that is free first takes the next chunk.
            let t = (0..team).min_by_key(|&t| cursor[t]).expect("team >= 1");
            let count = chunk_size.min(trip - next_iter);
            let dur = match self.spec.durations {
                ChunkDurations::PerLoop => {
                    let jitter = mean_ns * i64::from(self.spec.jitter_percent) / 100;
                    mean_ns + self.rng.range(-jitter, jitter)
                }
                ChunkDurations::Uniform => self.rng.range(2_000, 20_000),
            } * count as i64
                / chunk_size as i64;
            let start = cursor[t] + self.rng.range(100, 300);
            chunks.push(OmpRecord {
                thread: t as u32,
                kind: OmpKind::Chunk as u8,
                variant: 3, // ws_loop_chunk
                start_ns: start,
                end_ns: start + dur,
                parallel_id,
                task_id: task_base + t as u64,
                codeptr,
                team_size: threads,
                chunk_start: next_iter,
                count,
                ..OmpRecord::default()
            });
            cursor[t] = start + dur;
            next_iter += count;
        }
        let loop_end: Vec<i64> = cursor
            .iter()
            .map(|c| c + self.rng.range(100, 300))
            .collect();
        let last = *loop_end.iter().max().expect("team >= 1");
        let ws_barrier_end = last + self.rng.range(400, 1_500);
        let par_barrier_end = ws_barrier_end + self.rng.range(300, 800);
        let region_end = par_barrier_end + self.rng.range(100, 300);

        out.push(OmpRecord {
            thread: 0,
            kind: OmpKind::Parallel as u8,
            start_ns: region_start,
            end_ns: region_end,
            parallel_id,
            task_id: 1, // the initial task
            codeptr: region_codeptr,
            team_size: threads,
            requested_team_size: threads,
            flags: 0x8000_0001, // ompt_parallel_team | ompt_parallel_invoker_program
            ..OmpRecord::default()
        });
        for t in 0..team {
            let task_id = task_base + t as u64;
            let common = OmpRecord {
                thread: t as u32,
                parallel_id,
                task_id,
                team_size: threads,
                ..OmpRecord::default()
            };
            let task_end = par_barrier_end + self.rng.range(20, 80);
            out.push(OmpRecord {
                kind: OmpKind::ImplicitTask as u8,
                start_ns: task_start[t],
                end_ns: task_end,
                count: t as u64,
                codeptr: region_codeptr,
                ..common
            });
            out.push(OmpRecord {
                kind: OmpKind::Work as u8,
                variant: 11, // loop_dynamic
                start_ns: work_start[t],
                end_ns: loop_end[t],
                count: trip,
                codeptr,
                ..common
            });
            // The loop's implicit barrier, then the region's.
            for (variant, from, to) in [
                (8u8, loop_end[t] + 20, ws_barrier_end),
                (9u8, ws_barrier_end + 30, par_barrier_end),
            ] {
                out.push(OmpRecord {
                    kind: OmpKind::Sync as u8,
                    variant,
                    start_ns: from,
                    end_ns: to,
                    codeptr,
                    ..common
                });
                out.push(OmpRecord {
                    kind: OmpKind::SyncWait as u8,
                    variant,
                    start_ns: from + self.rng.range(15, 40),
                    end_ns: to - self.rng.range(15, 40),
                    codeptr,
                    ..common
                });
            }
        }
        out.extend(chunks);
        // Serial code between regions.
        self.now = region_end + self.rng.range(1_000, 5_000);
    }
}

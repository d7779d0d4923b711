//! # hyscope-format
//!
//! The hyscope trace format, usable on its own: a user can write or read a
//! trace with this crate alone, without the collector or the analyzer.
//!
//! - `schema`: the tables, their Arrow schemas and the fixed-size records;
//! - `manifest`: `manifest.json` and the per-rank files;
//! - `layout`: where a rank's files are (flat, or grouped by rank blocks in
//!   large jobs), for writers, readers and recovery alike;
//! - `writer`: a streaming Parquet writer per (table, rank), bounded memory;
//! - `reader`: open a trace, list ranks and parts, scan tables with projection,
//!   rank and time-range filters;
//! - `record_batch`: conversions between Arrow record batches and records;
//! - `symbolize`: code addresses → function, file:line from a module map
//!   (with `elf`: what it reads of a module's ELF headers, its build-id too);
//! - `synthetic` (feature `synthetic`): realistic synthetic OpenMP traces for
//!   benchmarks and tests;
//! - [`spool`]: the compact raw record file the collector appends to during the
//!   run (its codec, the per-thread blocks, the samples' and the phases' text spools) and its
//!   encoding into Parquet parts after the run ([`spool::to_parquet`]);
//! - [`settings`]: every `HYSCOPE_*` variable, its default, meaning and
//!   validation (read by the collector, `hyscope record` and the viewers);
//!
//! ## The public API
//!
//! The crate root holds what a reader or writer of traces uses; the modules
//! that define it are private, so each item has one path:
//!
//! - the tables and their records: [`Table`], [`OmpRecord`] (with [`OmpKind`]),
//!   [`MpiRecord`] (with the call codes in [`mpi_call`] and the sentinels
//!   [`NO_RANK`], [`NO_TAG`], [`ANY`], [`PROC_NULL`], [`Endpoint`]),
//!   [`SampleRecord`], [`SymbolRecord`], [`PhaseRecord`] (with
//!   [`phase_source`] and [`NO_ITERATION`]), and [`Record`], their
//!   conversion to and from Arrow record batches;
//! - the manifest and the rank files: [`Manifest`], [`RankInfo`] and the
//!   types they hold, [`FORMAT_VERSION`], [`MANIFEST_FILE`], [`RANKS_DIR`],
//!   and the limits readers check them against ([`MAX_RANKS`], ...);
//! - where a rank's files go: [`Layout`] ([`RANK_BLOCK`], [`FLAT_MAX_RANKS`]);
//! - reading: [`Trace`] with [`ScanOptions`], [`PartFile`], [`PartScan`],
//!   [`read_part_records`]; writing: [`PartWriter`] with [`WriterOptions`];
//! - code addresses: [`Mapping`], [`parse_maps`], [`resolve_with_maps`],
//!   [`resolve_with_images`] with [`LoadedImage`];
//! - errors: [`FormatError`].
//!
//! Five modules stay public because each is a namespace of its own rather
//! than a part of the trace API: [`elf`] (what is read of a module's ELF
//! headers and notes), [`metrics`] (the names of sampled metrics),
//! [`settings`] (the table of `HYSCOPE_*` variables), [`spool`] (the
//! collector's raw record files and their encoding into parts) and
//! [`trace_name`] (how a trace directory is named by default); and, behind
//! the feature `synthetic`, the generator `synthetic`.

/// What the symbolizer reads of a module's ELF headers: link base, build-id
/// (`elf::read` from the file; `elf::build_id_in_notes` from the bytes of a
/// note segment, which the collector reads from the image the loader mapped).
pub mod elf;
mod error;
/// Which run a trace directory belongs to (`job_dir::job_output_dir`): a run
/// never writes into an earlier run's trace.
pub mod job_dir;
mod layout;
mod manifest;
/// The names of the sampled metrics (`metrics::MEM_VMRSS`, ...): a namespace
/// of string constants, looked up by the writers and the readers alike.
pub mod metrics;
/// `/proc/<pid>/status`'s memory lines (`VmRSS`, `VmHWM`, `VmPin`).
pub mod proc_status;
/// Sets of ranks in messages, as ranges ("0, 2–5, 9").
pub mod rank_ranges;
mod reader;
mod record_batch;
mod schema;
/// Every `HYSCOPE_*` variable: its name, default, meaning and validation
/// (`settings::ALL`, `settings::Reader`, ...); a namespace of its own, since
/// its items name settings, not parts of a trace.
pub mod settings;
/// The collector's spool: the raw record files it appends to during the run,
/// their codec and blocks, and their encoding into Parquet parts
/// (`spool::to_parquet`). A namespace of its own: only the collector and
/// `hyscope record` write or recover spools; readers of traces never see them.
pub mod spool;
mod symbolize;
/// Synthetic OpenMP traces with known answers, for tests and benchmarks.
#[cfg(feature = "synthetic")]
pub mod synthetic;
/// How a trace directory is named by default (`trace_name::default_dir_name`)
/// and the clock and calendar arithmetic the name uses.
pub mod trace_name;
mod version;
mod writer;

pub use error::{FormatError, is_disk_full_message};
pub use layout::{
    FLAT_MAX_RANKS, Layout, RANK_BLOCK, RANKS_DIR, SPOOL_DIR, block_name, block_number,
    entries as per_rank_entries, find_rank_file, remove_empty_spool_dirs,
};
pub use manifest::{
    ChildOf, ClockInfo, ClockOffset, CommMembership, Communicator, EventCounts, MANIFEST_FILE,
    MAX_CLOCK_DRIFT, MAX_CLOCK_NS, MAX_CLOCK_RTT_NS, MAX_EVENTS, MAX_RANKS, MAX_THREADS, Manifest,
    MetricInfo, MpiInfo, OpenMpInfo, ProcessEnd, RankInfo, SELF_COMM_ID, SamplerInfo, ThreadCpus,
    WORLD_COMM_ID, comm_name, communicators, hostname, least_drift,
};
pub use reader::{
    PartFile, PartScan, Problem, ScanOptions, Trace, checksummed_bytes, part_row_group_rows,
    read_part_records, read_part_records_into, read_part_row_groups_into,
};
pub use record_batch::Record;
pub use schema::{
    ANY, Endpoint, Endpoints, LateDefault, MpiRecord, NO_ITERATION, NO_RANK, NO_TAG, OmpKind,
    OmpRecord, PROC_NULL, PhaseRecord, SUMMARY_SUM_SQ_COLUMN, SUMMARY_SUM_SQ_COLUMN_SINCE,
    SUMMARY_SUM_SQ_MAX, SUMMARY_SUM_SQ_MAX_1_10, SUMMARY_SUM_SQ_SINCE, SampleRecord, SymbolRecord,
    Table, mpi_call, phase_source, sort_phases, summary_sum_sq_type, variant_name,
};
pub use settings::{Setting, Settings};
pub use spool::{SpoolReader, SpoolRecord, SpoolWriter};
pub use symbolize::{LoadedImage, Mapping, parse_maps, resolve_with_images, resolve_with_maps};
pub use version::{FORMAT_VERSION, version_at_least};
pub use writer::{PartWriter, WriterOptions, WriterStats, part_path};

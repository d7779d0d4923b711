//! # hyscope-format
//!
//! The hyscope trace format, usable on its own: a user can write or read a
//! trace with this crate alone, without the collector or the analyzer.
//!
//! - [`schema`]: the tables, their Arrow schemas and the fixed-size records;
//! - [`manifest`]: `manifest.json` and the per-rank files;
//! - [`writer`]: a streaming Parquet writer per (table, rank), bounded memory;
//! - [`reader`]: open a trace, list ranks and parts, scan tables with projection,
//!   rank and time-range filters;
//! - [`record_batch`]: conversions between Arrow record batches and records;
//! - [`symbolize`]: code addresses → function, file:line from a module map;
//! - `synthetic` (feature `synthetic`): realistic synthetic OpenMP traces for
//!   benchmarks and tests;
//! - [`spool`]: the compact raw record file the collector appends to during the
//!   run (its codec, the per-thread blocks, the samples' and the phases' text spools) and its
//!   encoding into Parquet parts after the run ([`spool::to_parquet`]);
//! - [`settings`]: every `HYSCOPE_*` variable, its default, meaning and
//!   validation (read by the collector, `hyscope record` and the viewers);
//!
//! The crate root re-exports the types and functions other crates use most
//! (records, tables, the manifest's parts, the reader and writer, the settings
//! table, the spool's reader and writer and [`FormatError`]).

mod error;
pub mod manifest;
pub mod metrics;
pub mod reader;
pub mod record_batch;
pub mod schema;
pub mod settings;
pub mod spool;
pub mod symbolize;
#[cfg(feature = "synthetic")]
pub mod synthetic;
pub mod trace_name;
pub mod writer;

pub use error::{FormatError, is_disk_full_message};
pub use manifest::{EventCounts, FORMAT_VERSION, Manifest, ProcessEnd, RankInfo};
pub use reader::{PartFile, PartScan, ScanOptions, Trace, read_part_records};
pub use record_batch::Record;
pub use schema::{MpiRecord, OmpKind, OmpRecord, PhaseRecord, SampleRecord, SymbolRecord, Table};
pub use settings::{Setting, Settings};
pub use spool::{SpoolReader, SpoolRecord, SpoolWriter};
pub use writer::{PartWriter, WriterOptions};

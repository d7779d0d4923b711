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
//! - [`records`]: conversions between record batches and records;
//! - [`symbolize`]: code addresses → function, file:line from a module map;
//! - [`synthetic`]: realistic synthetic OpenMP traces for benchmarks and tests;
//! - [`spool`]: the compact raw record file the collector appends to during the
//!   run, encoded to Parquet after it;
//! - [`settings`]: every `HYSCOPE_*` variable, its default, meaning and
//!   validation (read by the collector, `hyscope record` and the viewers);
//! - [`phase_journal`]: the phases' spool, a line journal (names interned);
//! - [`unspool`]: a spool encoded into the table's Parquet parts (at the end of
//!   the run, or later for a rank that was killed).

pub mod error;
pub mod manifest;
pub mod metrics;
pub mod phase_journal;
pub mod reader;
pub mod records;
pub mod sample_spool;
pub mod schema;
pub mod settings;
pub mod spool;
pub mod spool_block;
pub mod symbolize;
pub mod synthetic;
pub mod trace_name;
pub mod unspool;
pub mod writer;

pub use error::FormatError;
pub use manifest::{FORMAT_VERSION, Manifest};
pub use reader::{PartFile, ScanOptions, Trace};
pub use schema::{MpiRecord, OmpKind, OmpRecord, PhaseRecord, SampleRecord, SymbolRecord, Table};
pub use writer::{PartWriter, WriterOptions};

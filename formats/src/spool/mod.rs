//! The spool: what the collector writes while the application runs, and how
//! it becomes the trace's Parquet parts after the run.
//!
//! - [`codec`] (re-exported here): the spool file's layout and its record
//!   codec, [`SpoolWriter`] and [`SpoolReader`];
//! - [`block`]: the per-thread blocks records are encoded into on the
//!   application's threads before a writer appends them to the file;
//! - [`samples`]: the samples' spool, plain text;
//! - [`phases`]: the phases' spool, a line journal (names interned);
//! - [`to_parquet`]: spools encoded into their tables' Parquet parts, at the
//!   end of the run or later for a process that was killed.

pub mod block;
pub mod codec;
pub mod phases;
pub mod samples;
pub mod to_parquet;

pub use codec::*;

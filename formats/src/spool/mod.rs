//! The spool: what the collector writes while the application runs, and how
//! it becomes the trace's Parquet parts after the run.
//!
//! - `codec.rs` (its items are this module's): the spool file's layout and
//!   its record codec, [`SpoolWriter`] and [`SpoolReader`];
//! - [`block`]: the per-thread blocks records are encoded into on the
//!   application's threads before a writer appends them to the file;
//! - [`samples`]: the samples' spool, plain text;
//! - [`phases`]: the phases' spool, a line journal (names interned);
//! - [`to_parquet`]: spools encoded into their tables' Parquet parts, at the
//!   end of the run or later for a process that was killed.

pub mod block;
mod codec;
pub mod phases;
pub mod samples;
pub mod to_parquet;

pub use codec::*;

/// The complete lines of a text spool (samples, phases), and whether a last
/// line was cut short: a process killed while appending leaves one without
/// its newline, which is dropped.
pub fn complete_lines(text: &str) -> (&str, bool) {
    let end = text.rfind('\n').map_or(0, |at| at + 1);
    (&text[..end], end < text.len())
}

//! The aligned trace: what a trace means, computed in one place and read by
//! every view (the report and its wait states, the timeline index, the TUI,
//! the GUI, the OTF2 and Perfetto exports, `compare`).
//!
//! - [`clock`]: global time, the one mapping from a rank's clock to rank 0's
//!   (offsets at `MPI_Init` and `MPI_Finalize`, linear drift), and
//!   [`GlobalNs`], a global time that a rank-local reading cannot be mistaken for;
//! - [`endpoints`]: which point-to-point endpoints an `mpi` row stands for;
//! - [`sides`]: what one rank contributes to messages and collectives, taken
//!   from its rows where they are read (matching reads these, never rows);
//! - [`messages`]: the matched message list, unmatched sides counted;
//! - [`collectives`]: collective instances across ranks per communicator and
//!   call sequence;
//! - [`series`]: sampled metrics as time series.
//!
//! The views keep only presentation.

pub mod clock;
pub mod collectives;
pub mod endpoints;
pub mod messages;
pub mod series;
pub mod sides;

use hyscope_format::{FormatError, MpiRecord, ScanOptions, Trace};

pub use clock::{ClockMap, Clocks, GlobalNs};
pub use collectives::{CollectiveInstance, match_collectives};
pub use messages::{Message, MessageList, Waiter, match_messages};
pub use sides::RankSides;

/// Messages and collective instances of every rank from their sides (in
/// rank order).
pub fn match_sides(sides: Vec<RankSides>) -> (MessageList, Vec<CollectiveInstance>) {
    match_sides_without(sides, &[])
}

/// [`match_sides`] of the ranks analysed when the ranks `left_out` were left
/// out of the analysis ([`messages::match_messages_without`]). Collective
/// instances are those of the ranks analysed: a left-out member is missing
/// from each, so no wait is attributed to it.
pub fn match_sides_without(
    mut sides: Vec<RankSides>,
    left_out: &[u32],
) -> (MessageList, Vec<CollectiveInstance>) {
    let messages = messages::match_messages_without(&mut sides, left_out);
    let collectives = match_collectives(&mut sides);
    (messages, collectives)
}

/// The order of a rank's `mpi` rows every consumer indexes them in (by
/// start, end, thread, call): one order, so row indices mean the same row
/// everywhere and equal-time rows pair the same way in every view.
pub fn sort_rows(rows: &mut [MpiRecord]) {
    rows.sort_unstable_by_key(|r| (r.start_ns, r.end_ns, r.thread, r.call, r.request_id));
}

/// Map a rank's rows to global time (in place) and put them in [`sort_rows`] order.
pub fn align_rows(clocks: &Clocks, rank: u32, rows: &mut [MpiRecord]) {
    if let Some(m) = clocks.map(rank) {
        for r in rows.iter_mut() {
            r.start_ns = m.to_global(r.start_ns);
            r.end_ns = m.to_global(r.end_ns);
        }
    }
    sort_rows(rows);
}

/// Every message of `trace`, matched from each rank's sides ([`sides`]), its
/// MPI rows read one rank at a time: what a view that draws messages but
/// not every MPI row needs, without holding the rows.
pub fn read_messages(trace: &Trace) -> Result<MessageList, FormatError> {
    read_messages_without(trace, &[])
}

/// [`read_messages`] of every rank but those `left_out` (for a damaged
/// part, [`crate::damaged_parts`]): their rows are not read, and a message
/// with its other side there is counted apart, as the analysis counts it
/// ([`messages::match_messages_without`]).
pub fn read_messages_without(trace: &Trace, left_out: &[u32]) -> Result<MessageList, FormatError> {
    let clocks = Clocks::from_manifest(&trace.manifest);
    let mut sides = Vec::new();
    for rank in trace.ranks().into_iter().filter(|r| !left_out.contains(r)) {
        sides.push(RankSides::of(rank, &rank_rows(trace, &clocks, rank)?));
    }
    Ok(match_sides_without(sides, left_out).0)
}

/// Rank `rank`'s `mpi` rows, parts in index order, on global time in
/// [`sort_rows`] order: what the views read of one rank.
pub fn rank_rows(trace: &Trace, clocks: &Clocks, rank: u32) -> Result<Vec<MpiRecord>, FormatError> {
    let options = ScanOptions {
        ranks: Some(vec![rank]),
        ..ScanOptions::default()
    };
    let mut rows: Vec<MpiRecord> = Vec::new();
    trace.for_each_record::<MpiRecord>(&options, |_, r| rows.push(r))?;
    align_rows(clocks, rank, &mut rows);
    Ok(rows)
}

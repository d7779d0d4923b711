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
pub fn match_sides(mut sides: Vec<RankSides>) -> (MessageList, Vec<CollectiveInstance>) {
    let messages = match_messages(&mut sides);
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

/// A trace's MPI rows on global time with its messages and collectives: what
/// the viewers and exports open (the analysis builds the same from the rows
/// it loaded, see [`crate::analyze`]).
#[derive(Debug, Clone, Default)]
pub struct AlignedTrace {
    pub clocks: Clocks,
    /// Per rank (sorted by rank): rows on global time, in [`sort_rows`] order.
    pub mpi: Vec<(u32, Vec<MpiRecord>)>,
    pub messages: MessageList,
    pub collectives: Vec<CollectiveInstance>,
}

impl AlignedTrace {
    /// Read every `mpi` row of `trace` and align it.
    pub fn open(trace: &Trace) -> Result<AlignedTrace, FormatError> {
        let rows = trace.read_records::<MpiRecord>(&ScanOptions::default())?;
        Ok(AlignedTrace::from_rows(
            Clocks::from_manifest(&trace.manifest),
            rows,
        ))
    }

    /// Align rows on rank-local time (as the reader returns them).
    pub fn from_rows(clocks: Clocks, rows: Vec<(u32, MpiRecord)>) -> AlignedTrace {
        let mut by: std::collections::BTreeMap<u32, Vec<MpiRecord>> = Default::default();
        for (rank, r) in rows {
            by.entry(rank).or_default().push(r);
        }
        let mut mpi: Vec<(u32, Vec<MpiRecord>)> = by.into_iter().collect();
        for (rank, rows) in &mut mpi {
            align_rows(&clocks, *rank, rows);
        }
        let (messages, collectives) = match_sides(
            mpi.iter()
                .map(|(rank, rows)| RankSides::of(*rank, rows))
                .collect(),
        );
        AlignedTrace {
            clocks,
            mpi,
            messages,
            collectives,
        }
    }

    /// Every row with its rank, rank by rank in [`sort_rows`] order.
    pub fn rows(&self) -> impl Iterator<Item = (u32, &MpiRecord)> {
        self.mpi
            .iter()
            .flat_map(|(rank, rows)| rows.iter().map(move |r| (*rank, r)))
    }

    /// The row a message side names.
    pub fn row(&self, rank: u32, row: usize) -> Option<&MpiRecord> {
        self.mpi
            .binary_search_by_key(&rank, |(r, _)| *r)
            .ok()
            .and_then(|i| self.mpi[i].1.get(row))
    }
}

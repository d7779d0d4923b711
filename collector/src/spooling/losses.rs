//! The events lost (no free block, or the trace could not be written) and
//! whether the disk was full: counted by the recording threads and the
//! writer, reported in the rank file and the end note.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Events lost so far.
pub(super) static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Writing the trace failed because the disk was full.
pub(super) static DISK_FULL: AtomicBool = AtomicBool::new(false);

/// Events lost so far (no free buffer, or the trace could not be written).
pub fn dropped_events() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

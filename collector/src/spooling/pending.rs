//! The blocks handed off to the writer and not written yet, kept where the
//! crash handler's path reads them without a lock: a signal handler that
//! ends the process (`exit`, an exec, a fatal signal) may have interrupted
//! its own thread inside `hand_off`, holding the queue's lock, and the
//! blocks queued then would be lost. A fixed set of cells (a word each: the
//! block's address, its low bit set for an MPI block), filled before the
//! queue's lock is taken and emptied once the writer spooled the block.
//! More blocks pending than cells (a buffer over 256 MiB that the writer
//! cannot keep up with) are reached through the queue only, as before.

use std::sync::atomic::{AtomicUsize, Ordering};

use hyscope_format::spool::block::Block;
use hyscope_format::{MpiRecord, OmpRecord};

const CELLS: usize = 1024;

static CELLS_OF: [AtomicUsize; CELLS] = [const { AtomicUsize::new(0) }; CELLS];

/// A block's word: its address, the low bit set for an MPI block (blocks
/// are aligned, so the bit is free).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pending {
    Omp(*mut Block<OmpRecord>),
    Mpi(*mut Block<MpiRecord>),
}

impl Pending {
    fn word(self) -> usize {
        match self {
            Pending::Omp(b) => b as usize,
            Pending::Mpi(b) => b as usize | 1,
        }
    }

    fn of_word(w: usize) -> Pending {
        if w & 1 == 1 {
            Pending::Mpi((w & !1) as *mut Block<MpiRecord>)
        } else {
            Pending::Omp(w as *mut Block<OmpRecord>)
        }
    }
}

/// Note a block on its way to the writer (before the queue's lock).
pub(super) fn note(p: Pending) {
    let w = p.word();
    for c in &CELLS_OF {
        if c.compare_exchange(0, w, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// The writer spooled the block (or a forked child forgot it).
pub(super) fn forget(p: Pending) {
    let w = p.word();
    for c in &CELLS_OF {
        if c.compare_exchange(w, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// In a forked child: the parent's blocks are the parent's to write.
pub(super) fn forget_all() {
    for c in &CELLS_OF {
        c.store(0, Ordering::Relaxed);
    }
}

/// Whether the block is noted (async-signal-safe: loads only).
pub(super) fn contains(p: Pending) -> bool {
    let w = p.word();
    CELLS_OF.iter().any(|c| c.load(Ordering::Acquire) == w)
}

/// Each block noted (async-signal-safe: loads only).
pub(super) fn for_each(mut f: impl FnMut(Pending)) {
    for c in &CELLS_OF {
        let w = c.load(Ordering::Acquire);
        if w != 0 {
            f(Pending::of_word(w));
        }
    }
}

//! Folding of unsuccessful polls: a thread that calls `MPI_Test`,
//! `Testany`, `Testsome`, `Testall`, `Iprobe` or `Improbe` in a spin (a
//! progress loop, MPICH's `greq_test`) gets one `mpi` row for a run of
//! polls that found nothing, from one call site on the same request set,
//! with the number of polls in `calls` (formats/README.md, "Folded polls"),
//! as Extrae and Score-P can. Without it such a loop writes tens of millions
//! of rows, and encoding them costs more than the loop.
//!
//! Each thread keeps its open run in its slot ([`crate::slots::OpenPoll`]). The next
//! unsuccessful poll with the same key extends it: a few compares, one store
//! of its end and one compare-and-swap of the count. Anything else the
//! thread records writes the run first ([`close`]), so a thread's rows stay
//! in time order; so do `MPI_Pcontrol`, a run older than [`SPAN_NS`] (the
//! writer's periodic spooling then bounds what a killed process loses), and
//! the flushes at `MPI_Finalize`, at exit and after a crash, which take the
//! runs of every thread ([`take`]: threads that ended, or wait elsewhere,
//! never record again: [`crate::slots::take_poll_run`]).
//!
//! The count word is what the owner and a flushing thread agree on: both
//! take a run with a swap to 0, and the owner extends it only with a
//! compare-and-swap from the value it read, so each poll is written once.
//! The word's high half is the run's generation, also stored with the run's
//! fields: a flusher that took a run while its owner was already opening
//! the next one (the fields changing under it) counts the run's polls as
//! dropped instead of writing them with another run's fields.

use std::sync::atomic::Ordering;

use hyscope_format::MpiRecord;

use super::{Rec, recording};
use crate::slots::ThreadSlot;

/// A run of folded polls is written, and the next poll begins a new one,
/// once it spans this long: a killed process then loses at most this plus
/// the writer's spooling interval of them.
pub const SPAN_NS: i64 = 100_000_000;

/// The poll in `r` found nothing: fold it into the thread's open run (or
/// begin one) instead of recording it, and clear `r`'s call so the wrapper
/// records nothing. `a` and `b` identify the request set (with the call
/// site, call and `in_parallel`, the run's key).
#[inline]
pub fn fold(r: &mut Rec, a: u64, b: u64) {
    if !recording() {
        return;
    }
    let p = &r.slot.mpi_thread.poll;
    let word = p.word.load(Ordering::Relaxed);
    let meta = r.call as u64 | (r.in_parallel as u64) << 16;
    if word as u32 != 0
        && word as u32 != u32::MAX
        && p.callsite.load(Ordering::Relaxed) == r.callsite
        && p.meta.load(Ordering::Relaxed) as u32 as u64 == meta
        && p.a.load(Ordering::Relaxed) == a
        && p.b.load(Ordering::Relaxed) == b
        && r.end_ns.wrapping_sub(p.start_ns.load(Ordering::Relaxed)) < SPAN_NS
    {
        p.end_ns.store(r.end_ns, Ordering::Relaxed);
        if p.word
            .compare_exchange(word, word + 1, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            r.call = 0;
            return;
        }
    }
    begin(r, meta, a, b);
    r.call = 0;
}

/// Write the thread's open run (if any) and open a new one with the poll in `r`.
#[inline(never)]
fn begin(r: &Rec, meta: u64, a: u64, b: u64) {
    let slot = r.slot;
    close(slot);
    let p = &slot.mpi_thread.poll;
    let generation = (p.meta.load(Ordering::Relaxed) >> 32).wrapping_add(1) & 0xffff_ffff;
    p.meta.store(generation << 32 | meta, Ordering::Relaxed);
    // The new generation before any field changes (a seqlock's writer side;
    // free on x86): a flusher that saw a changed field sees it too.
    std::sync::atomic::fence(Ordering::Release);
    p.callsite.store(r.callsite, Ordering::Relaxed);
    p.a.store(a, Ordering::Relaxed);
    p.b.store(b, Ordering::Relaxed);
    p.peer_tag.store(
        (r.peer as u32 as u64) << 32 | r.tag as u32 as u64,
        Ordering::Relaxed,
    );
    p.comm_id.store(r.comm_id, Ordering::Relaxed);
    p.start_ns.store(r.start_ns, Ordering::Relaxed);
    p.end_ns.store(r.end_ns, Ordering::Relaxed);
    // Release: a flusher that takes the run sees its fields.
    p.word.store(generation << 32 | 1, Ordering::Release);
}

/// Write the calling thread's (`slot`'s) open run, if any, into its buffer:
/// before any other record of the thread.
#[inline]
pub fn close(slot: &ThreadSlot) {
    let p = &slot.mpi_thread.poll;
    if p.word.load(Ordering::Relaxed) as u32 == 0 {
        return;
    }
    close_open(slot);
}

#[inline(never)]
fn close_open(slot: &ThreadSlot) {
    let p = &slot.mpi_thread.poll;
    let word = p.word.swap(0, Ordering::Acquire);
    if word as u32 != 0 {
        slot.record_mpi(p.record(slot.index, word as u32));
    }
}

/// `MPI_Test`'s key: the request handle.
#[inline]
pub fn request_key(handle: usize) -> (u64, u64) {
    (handle as u64, 0)
}

/// Key of the request array `reqs` of `count` entries (`Testany`,
/// `Testsome`, `Testall`): the array, its length and its first handle.
///
/// # Safety
/// `reqs` is null or points to `count` requests.
#[inline]
pub unsafe fn request_set_key(
    count: std::ffi::c_int,
    reqs: *const mpi_sys::MPI_Request,
) -> (u64, u64) {
    use super::Handle;
    let first = if reqs.is_null() || count <= 0 {
        0
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { *reqs }.key() as u64
    };
    (reqs as u64, (count as u32 as u64) << 32 ^ first)
}

/// A probe's key: the source, tag and communicator as `r` has them.
#[inline]
pub fn probe_key(r: &MpiRecord) -> (u64, u64) {
    (
        (r.peer as u32 as u64) << 32 | r.tag as u32 as u64,
        r.comm_id,
    )
}

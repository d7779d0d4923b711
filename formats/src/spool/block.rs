//! Spool frames in the making: the per-thread blocks a collector encodes its
//! records into on the application's threads ([`Stream::push`]), then hands to
//! a writer that appends them to a spool file as they are
//! ([`crate::spool::SpoolWriter::append_encoded`]).
//!
//! The hot path is here, in the format crate, so that every recorder (the
//! OMPT adapter, the MPI wrappers) encodes inline, without a call through an
//! interface per record. Block management (pools, hand-off, the writer thread)
//! is the collector's.
//!
//! One block is written by one thread (its owner) and read by others only
//! below its published length (release store after each record, acquire
//! load by readers), so a writer can take a snapshot of a block still in use.
//! The length and the number of records are published together in one word,
//! so a snapshot knows exactly how many records its bytes hold and can be
//! spooled as it is, without decoding it.

use std::alloc::{Layout, alloc_zeroed};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crate::spool::{RECORD_ROOM, SpoolRecord};

/// Bytes per block: one spool frame of encoded records (~36 000 OpenMP
/// events). 256 KiB rather than 64: a quarter of the hand-offs to the writer
/// thread (each a futex wake, a context switch and a `writev`), which on a
/// node whose cores all run the application take their time from it
/// (EPCC's PARALLEL is measurably cheaper with both the larger block and one
/// `writev` per block, `benchmarks/ompt.md`).
pub const BLOCK_BYTES: usize = 256 * 1024;

/// One thread's encoded records of one table: a spool frame in the making,
/// encoded against the frame's bases ([`SpoolRecord::put_in`]), so the block
/// decodes on its own.
pub struct Block<T> {
    /// Records (high 32 bits) and bytes (low 32 bits) published: one
    /// release store by the owner after each record (or batch of records).
    published: AtomicU64,
    /// Rows already spooled by a flush of the still-current block (the
    /// collector's writer lock only).
    taken: AtomicUsize,
    /// The bytes of those rows ([`TAKEN_LEN_UNKNOWN`] when not known), so that
    /// the next flush decodes only the rows after them.
    taken_len: AtomicUsize,
    data: UnsafeCell<[u8; BLOCK_BYTES]>,
    _records: PhantomData<T>,
}

// SAFETY: bytes below `len` are written once by the owner before the release
// store of `len` and only read afterwards; see the module documentation.
unsafe impl<T: Send> Sync for Block<T> {}

// Unbounded so that code generic over any record type (the writer's) reads them too.
impl<T> Block<T> {
    /// Bytes published (acquire load: the bytes below are readable).
    #[inline(always)]
    pub fn published_len(&self) -> usize {
        self.published().1
    }

    /// Records in the block, as published.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.published().0
    }

    /// (records, bytes) published, from one acquire load: the records are
    /// exactly those the bytes below the length hold.
    #[inline(always)]
    pub fn published(&self) -> (usize, usize) {
        unpack(self.published.load(Ordering::Acquire))
    }

    /// Rows already spooled by a flush of the still-current block.
    #[inline(always)]
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// The bytes of the rows already spooled ([`TAKEN_LEN_UNKNOWN`] when not known).
    #[inline(always)]
    pub fn taken_len(&self) -> usize {
        self.taken_len.load(Ordering::Relaxed)
    }

    /// Mark the first `rows` rows, `len` bytes ([`TAKEN_LEN_UNKNOWN`] if not
    /// known), as spooled (under the collector's writer lock).
    #[inline(always)]
    pub fn set_taken(&self, rows: usize, len: usize) {
        self.taken.store(rows, Ordering::Relaxed);
        self.taken_len.store(len, Ordering::Relaxed);
    }

    /// Empty the block for reuse (by whoever holds it, before it is handed out).
    pub fn clear(&self) {
        self.published.store(0, Ordering::Relaxed);
        self.taken.store(0, Ordering::Relaxed);
        self.taken_len.store(0, Ordering::Relaxed);
    }
}

/// [`Block::taken_len`] when the bytes of the taken rows are not known.
pub const TAKEN_LEN_UNKNOWN: usize = usize::MAX;

/// [`Block::published`]'s word: records in the high half, bytes in the low.
#[inline(always)]
fn pack(rows: usize, len: usize) -> u64 {
    ((rows as u64) << 32) | len as u64
}

#[inline(always)]
fn unpack(word: u64) -> (usize, usize) {
    ((word >> 32) as usize, (word & 0xffff_ffff) as usize)
}

impl<T: SpoolRecord> Block<T> {
    /// An empty block, its pages touched (so the page faults happen here, on
    /// whoever allocates, not in the recording thread's first writes); `None`
    /// when memory is exhausted.
    pub fn new() -> Option<Box<Block<T>>> {
        let layout = Layout::new::<Block<T>>();
        // Allocated zeroed, not built on the stack and moved: a block is larger
        // than the stack of some application threads.
        // SAFETY: the layout is not zero-sized.
        let p = unsafe { alloc_zeroed(layout) } as *mut Block<T>;
        if p.is_null() {
            return None;
        }
        // SAFETY: all-zero bytes are a valid empty Block (atomics 0, bytes 0),
        // allocated with the global allocator and Block's layout.
        let block = unsafe { Box::from_raw(p) };
        // A block this large usually comes straight from mmap: fresh pages
        // that calloc does not write, each faulted in on its first store.
        let bytes = block.data.get() as *mut u8;
        for page in (0..BLOCK_BYTES).step_by(4096) {
            // SAFETY: inside the block's bytes; nobody else holds the block yet.
            unsafe { ptr::write_volatile(bytes.add(page), 0) };
        }
        Some(block)
    }

    /// The published bytes.
    ///
    /// # Safety
    /// The caller observed `len` with acquire (or owns the block), and nobody
    /// writes below `len`.
    pub unsafe fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: guaranteed by the caller; len <= BLOCK_BYTES.
        unsafe { std::slice::from_raw_parts(self.data.get() as *const u8, len) }
    }
}

/// The encoding state of one thread for one table: its current block and the
/// records the next ones are encoded against (one per key, e.g. per OpenMP
/// kind: `SpoolRecord::KEYS`). Owner-only except `block`, which a writer reads.
pub struct Stream<T> {
    /// The current block, null when there is none (the owner takes one from
    /// its collector and publishes it with a release store). Only the owner
    /// stores here, and only null or a live block it alone writes to.
    block: AtomicPtr<Block<T>>,
    bases: UnsafeCell<Box<[T]>>,
}

// SAFETY: `bases` is touched only by the owning thread (push, reset_bases);
// `block` is atomic.
unsafe impl<T: Send> Sync for Stream<T> {}

impl<T: SpoolRecord> Default for Stream<T> {
    fn default() -> Self {
        Stream {
            block: AtomicPtr::new(ptr::null_mut()),
            bases: UnsafeCell::new(vec![T::default(); T::KEYS].into_boxed_slice()),
        }
    }
}

impl<T> Stream<T> {
    /// The current block, as another thread sees it (acquire load).
    #[inline(always)]
    pub fn current(&self) -> *mut Block<T> {
        self.block.load(Ordering::Acquire)
    }

    /// The current block, read by the stream's own thread (relaxed load: only
    /// that thread stores here).
    #[inline(always)]
    pub fn own_current(&self) -> *mut Block<T> {
        self.block.load(Ordering::Relaxed)
    }

    /// Publish `block` (null or a live block only this thread writes to) as
    /// the current block (release store). Only the stream's own thread calls this.
    #[inline(always)]
    pub fn install(&self, block: *mut Block<T>) {
        self.block.store(block, Ordering::Release);
    }
}

impl<T: SpoolRecord> Stream<T> {
    /// A stream with no block yet.
    pub fn new() -> Stream<T> {
        Stream::default()
    }

    /// Encode `rec` into the current block. False when there is no block or
    /// no room left for a record at its longest: the owner then hands the
    /// block off, installs a new one, [`Stream::reset_bases`] and pushes again.
    ///
    /// # Safety
    /// Only the stream's own thread calls this (it owns the bases and the
    /// bytes past the block's `len`), and `block` is null or a live block
    /// that thread alone writes to.
    #[inline(always)]
    pub unsafe fn push(&self, rec: &T) -> bool {
        let b = self.block.load(Ordering::Relaxed);
        if b.is_null() {
            return false;
        }
        // SAFETY: a current block is owned by this thread until it hands it off.
        let block = unsafe { &*b };
        // Relaxed: only this thread stores the word.
        let word = block.published.load(Ordering::Relaxed);
        let n = unpack(word).1;
        if n + RECORD_ROOM > BLOCK_BYTES {
            return false;
        }
        // SAFETY: bytes from n on are beyond len, so no reader looks at them
        // yet; the bases belong to this thread.
        unsafe {
            let room = &mut *((block.data.get() as *mut u8).add(n) as *mut [u8; RECORD_ROOM]);
            let bases = &mut *self.bases.get();
            let written = T::put_in(bases, rec, room);
            bases[rec.key()] = *rec;
            // One more record, `written` more bytes: one add to the word
            // (the bytes stay below BLOCK_BYTES, so the low half never carries).
            block
                .published
                .store(word + pack(1, written), Ordering::Release);
        }
        true
    }

    /// [`Stream::push`] of several records at once, with one check for room
    /// and one publication: false (nothing pushed) when there is no block or
    /// no room for all of them at their longest.
    ///
    /// # Safety
    /// As for [`Stream::push`].
    #[inline(always)]
    pub unsafe fn push_all<const N: usize>(&self, recs: [&T; N]) -> bool {
        // SAFETY: guaranteed by the caller.
        unsafe { self.push_each(N, recs) }
    }

    /// [`Stream::push_all`] of a slice (the OMPT adapter's held-back
    /// intervals, a few at a time).
    ///
    /// # Safety
    /// As for [`Stream::push`].
    #[inline(always)]
    pub unsafe fn push_slice(&self, recs: &[T]) -> bool {
        // SAFETY: guaranteed by the caller.
        unsafe { self.push_each(recs.len(), recs) }
    }

    /// Push the `n` records of `recs` with one check for room and one
    /// publication.
    ///
    /// # Safety
    /// As for [`Stream::push`].
    #[inline(always)]
    unsafe fn push_each<'a>(&self, n: usize, recs: impl IntoIterator<Item = &'a T>) -> bool {
        let b = self.block.load(Ordering::Relaxed);
        if b.is_null() {
            return false;
        }
        // SAFETY: as in push.
        let block = unsafe { &*b };
        let word = block.published.load(Ordering::Relaxed);
        let len = unpack(word).1;
        if len + n * RECORD_ROOM > BLOCK_BYTES {
            return false;
        }
        let (mut at, mut pushed) = (len, 0);
        // SAFETY: as in push; the room check covers all n records.
        unsafe {
            let bases = &mut *self.bases.get();
            for rec in recs.into_iter().take(n) {
                let room = &mut *((block.data.get() as *mut u8).add(at) as *mut [u8; RECORD_ROOM]);
                at += T::put_in(bases, rec, room);
                bases[rec.key()] = *rec;
                pushed += 1;
            }
            block
                .published
                .store(word + pack(pushed, at - len), Ordering::Release);
        }
        true
    }

    /// A new block is a new frame: its first records are encoded against the
    /// default record.
    ///
    /// # Safety
    /// Only the stream's own thread calls this.
    pub unsafe fn reset_bases(&self) {
        // SAFETY: guaranteed by the caller.
        unsafe { (*self.bases.get()).fill(T::default()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::OmpRecord;
    use crate::spool::decode_payload;

    #[test]
    fn pushed_records_decode_from_the_published_bytes_until_the_block_is_full() {
        let stream = Stream::<OmpRecord>::new();
        let rec = |i: i64| OmpRecord {
            kind: 6,
            start_ns: 1_000 * i,
            end_ns: 1_000 * i + 900,
            chunk_start: 4 * i as u64,
            count: 4,
            ..OmpRecord::default()
        };
        // SAFETY: this thread owns the stream.
        assert!(!unsafe { stream.push(&rec(0)) }, "no block yet");
        let block = Box::into_raw(Block::<OmpRecord>::new().unwrap());
        stream.block.store(block, Ordering::Release);
        let mut pushed = Vec::new();
        // SAFETY: as above.
        while unsafe { stream.push(&rec(pushed.len() as i64)) } {
            pushed.push(rec(pushed.len() as i64));
        }
        // SAFETY: the block is still ours; len read with acquire.
        let block = unsafe { Box::from_raw(block) };
        let (rows, len) = block.published();
        assert!(len + RECORD_ROOM > BLOCK_BYTES && len <= BLOCK_BYTES);
        assert_eq!(rows, pushed.len());
        let mut back: Vec<OmpRecord> = Vec::new();
        // SAFETY: as above.
        assert_eq!(
            decode_payload(unsafe { block.bytes(len) }, &mut back),
            Some(())
        );
        assert_eq!(back, pushed);
    }
}

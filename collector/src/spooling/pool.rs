//! The free blocks of each record type, allocated lazily up to
//! `HYSCOPE_BUFFER_MB`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyscope_format::{MpiRecord, OmpRecord, spool::SpoolRecord, spool::block::Block};

use crate::diag::lock;
use crate::state;

/// Free blocks of one record type, allocated lazily up to the memory budget.
pub(super) struct Pool<T> {
    free: Mutex<Vec<SendPtr<Block<T>>>>,
    /// Length of `free` (written under its lock; read without it as a hint,
    /// so that a thread finding no block and no budget drops its event
    /// without taking the lock: a writer that falls behind must not make
    /// every recorded call slower).
    free_len: AtomicUsize,
}

pub(super) struct SendPtr<T>(*mut T);
// SAFETY: the pointee is only used by one owner at a time (see module docs).
unsafe impl<T> Send for SendPtr<T> {}

pub(super) static OMP_POOL: Pool<OmpRecord> = Pool {
    free: Mutex::new(Vec::new()),
    free_len: AtomicUsize::new(0),
};
pub(super) static MPI_POOL: Pool<MpiRecord> = Pool {
    free: Mutex::new(Vec::new()),
    free_len: AtomicUsize::new(0),
};
/// Bytes of blocks allocated so far, against `HYSCOPE_BUFFER_MB`.
pub(super) static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

impl<T: SpoolRecord> Pool<T> {
    /// The free list's lock, to hold across a `fork` (see `forking`).
    pub(super) fn hold_for_fork(&'static self) -> crate::diag::Held
    where
        T: 'static,
    {
        crate::diag::hold(&self.free)
    }

    pub(super) fn take(&self) -> Option<*mut Block<T>> {
        let size = std::mem::size_of::<Block<T>>();
        if self.free_len.load(Ordering::Relaxed) == 0
            && ALLOCATED.load(Ordering::Relaxed) + size > state::config().buffer_bytes
        {
            return None; // nothing free and no budget left: drop without locking
        }
        {
            let mut free = lock(&self.free);
            if let Some(p) = free.pop() {
                self.free_len.store(free.len(), Ordering::Relaxed);
                return Some(p.0);
            }
        }
        self.allocate()
    }

    pub(super) fn put(&self, b: *mut Block<T>) {
        let mut free = lock(&self.free);
        free.push(SendPtr(b));
        self.free_len.store(free.len(), Ordering::Relaxed);
    }

    /// A new block within the memory budget, its pages touched (so page faults
    /// happen here, not while recording).
    pub(super) fn allocate(&self) -> Option<*mut Block<T>> {
        let size = std::mem::size_of::<Block<T>>();
        let budget = state::config().buffer_bytes;
        let before = ALLOCATED.fetch_add(size, Ordering::Relaxed);
        if before + size > budget {
            ALLOCATED.fetch_sub(size, Ordering::Relaxed);
            return None;
        }
        // Block::new touches the pages: they fault in here, not while recording.
        match Block::new() {
            Some(b) => Some(Box::into_raw(b)),
            None => {
                ALLOCATED.fetch_sub(size, Ordering::Relaxed);
                None
            }
        }
    }

    /// Keep a few free blocks ready (writer thread), so recording threads rarely allocate.
    pub(super) fn top_up(&self, n: usize) {
        while lock(&self.free).len() < n {
            match self.allocate() {
                Some(b) => self.put(b),
                None => break,
            }
        }
    }

    pub(super) fn give_back(&self, b: *mut Block<T>) {
        // SAFETY: the block was handed off; nobody else references it.
        let block = unsafe { &*b };
        block.clear();
        self.put(b);
    }
}

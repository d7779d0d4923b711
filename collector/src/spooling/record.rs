//! The hot path: append a record to the calling thread's current block (see
//! the module documentation of `spooling`), and when it is full hand it to
//! the writer and take a free one.

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use hyscope_format::spool::block::{Block, Stream};
use hyscope_format::{MpiRecord, OmpRecord, SampleRecord, spool::SpoolRecord};

use super::losses::DROPPED;
use super::pool::{MPI_POOL, OMP_POOL, Pool};
use super::writer::{Full, SAMPLES, ensure_writer, hand_off};
use crate::diag::lock;
use crate::slots::{ThreadSlot, slot};

/// Sample rows kept before they are handed to the writer.
const SAMPLE_BATCH: usize = 4096;

/// Set once anything was recorded: the exit path then writes the rank's files.
static ACTIVE: AtomicBool = AtomicBool::new(false);

impl ThreadSlot {
    /// Append one OpenMP interval to this (the calling) thread's buffer.
    #[inline]
    pub fn record_omp(&self, rec: &OmpRecord) {
        // SAFETY: called on the slot's own thread (see the callers).
        if !unsafe { self.omp.push(rec) } {
            push_slow(&self.omp, rec, &OMP_POOL, Full::Omp);
        }
    }

    /// Append one MPI call to this (the calling) thread's buffer.
    #[inline]
    pub fn record_mpi(&self, rec: MpiRecord) {
        // SAFETY: called on the slot's own thread (the MPI wrappers).
        if !unsafe { self.mpi.push(&rec) } {
            push_slow(&self.mpi, &rec, &MPI_POOL, Full::Mpi);
        }
    }
}

/// Whether anything was recorded in this process.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Mark the process as one whose trace files must be written at exit, and
/// start its writer thread (which spools the events continuously).
pub fn mark_active() {
    ACTIVE.store(true, Ordering::Relaxed);
    ensure_writer();
}

/// Append one OpenMP interval to the calling thread's buffer.
#[inline]
pub fn record_omp(rec: OmpRecord) {
    slot().record_omp(&rec);
}

/// Append one MPI call to the calling thread's buffer.
#[inline]
pub fn record_mpi(rec: MpiRecord) {
    slot().record_mpi(rec);
}

/// Record one value of a sampled metric (sampler threads; not a hot path).
pub fn record_sample(time_ns: i64, metric: &str, key: i64, value: f64) {
    mark_active();
    let full = {
        let mut samples = lock(&SAMPLES);
        samples.push(SampleRecord {
            time_ns,
            metric: metric.to_string(),
            key,
            value,
        });
        if samples.len() >= SAMPLE_BATCH {
            Some(std::mem::take(&mut *samples))
        } else {
            None
        }
    };
    if let Some(rows) = full {
        hand_off(Full::Samples(rows));
    }
}

#[cold]
#[inline(never)]
fn push_slow<T: SpoolRecord>(
    stream: &Stream<T>,
    rec: &T,
    pool: &Pool<T>,
    full: fn(*mut Block<T>) -> Full,
) {
    mark_active();
    let old = stream.own_current();
    if !old.is_null() {
        stream.install(ptr::null_mut());
        hand_off(full(old));
    }
    match pool.take() {
        Some(b) => {
            // A new block is a new frame: its first records are encoded against the default.
            // SAFETY: the bases belong to this (the owning) thread.
            unsafe { stream.reset_bases() };
            stream.install(b);
        }
        None => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    // SAFETY: as in push (same thread).
    if !unsafe { stream.push(rec) } {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

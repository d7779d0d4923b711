//! Per-thread event buffers, the writer thread that spools them, and the
//! final encoding into Parquet parts.
//!
//! Hot path ([`record_omp`], [`record_mpi`]; the OMPT adapter pushes into
//! the thread's OpenMP stream itself, [`crate::slots::ThreadSlot::omp_stream`]): one
//! thread-local pointer load, the record encoded into the thread's current
//! block as the spool encodes it (the fields that changed since the thread's
//! previous record of that kind, as varints: ~7 bytes instead of the record's
//! 80, see `hyscope_format::spool` and `hyscope_format::spool::block`) and a
//! release store of the block's length. No lock, no allocation, no I/O.
//!
//! A full block is handed to the writer thread (one short mutex per
//! [`hyscope_format::spool::block::BLOCK_BYTES`] of events, ~36 000 of them) and the thread takes a free
//! block. Each block is one spool frame: the writer appends its bytes to the
//! spool file as they are, so during the run it only copies bytes to the
//! page cache. Blocks are allocated lazily up to `HYSCOPE_BUFFER_MB`; when
//! none is free the event is dropped and counted, so the application never
//! waits for the disk.
//!
//! Every thread's slot (index and current blocks) is leaked on purpose: OMPT
//! callbacks still arrive after thread-local destructors ran at exit
//! (docs/platform.md, "Quirks"), and the exit flush must still find the
//! records of threads that ended. The thread's pointer to its slot is a
//! `hyscope_ompt::thread_ptr` slot, which has no destructor and so stays
//! readable to the end.
//!
//! Encoding Parquet during the run cost ~195 ns of CPU per event, taken from
//! the application's threads (they share the cores). [`flush_all`] — at
//! `MPI_Finalize` and at exit — drains the buffers into the spool (`spool/`
//! in the trace) and encodes the spool into the ordinary Parquet parts.
//!
//! Flushing a thread's partly filled block from another thread
//! ([`flush_all`]): under the writer lock, decode the block's bytes up to
//! `len`, spool the rows from `taken` on and advance `taken`. The owner only
//! writes past `len`; the writer spools only rows from `taken` on of a
//! handed-off block, also under the lock, so nothing is written twice.
//!
//! The files, from the bottom up (each uses only those before it in this
//! list, and the layers below `spooling`: `crate::slots`, `crate::state`):
//! - `losses.rs`: the events dropped, and whether the disk was full;
//! - `pool.rs`: the free blocks, allocated lazily up to the budget;
//! - `end_note.rs`: the process's end note and the crash handler's prepared paths;
//! - `writer.rs`: the queue of full blocks, the writer thread, the spools and
//!   their encoding into parts ([`flush_all`]), what a forked child forgets
//!   and the locks held across a fork (see `forking`);
//! - `emergency.rs`: what the crash handler and `MPI_Abort` spool without allocating;
//! - `record.rs`: the hot path, appending a record to the calling thread's
//!   block and handing full blocks to the writer.

mod emergency;
mod end_note;
mod losses;
mod pending;
mod pool;
mod record;
mod writer;

pub use emergency::emergency_flush;
pub use end_note::{refresh_maps, remove_end_note, write_end_note};
pub use losses::dropped_events;
pub use record::{is_active, mark_active, record_mpi, record_omp, record_sample};
pub use writer::{
    Companions, encode_ns, flush_all, forget_parents_events, hold_buffers_for_fork,
    hold_writer_for_fork, output_failed, prepare_emergency, seen_addresses, set_companions,
    spool_closed, writer_cpu_ns, written_counts,
};

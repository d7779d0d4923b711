//! Spool → Parquet parts: the second half of recording.
//!
//! While the application runs, the collector only appends compact raw records
//! to a spool file ([`crate::spool`]); encoding Parquet there cost ~195 ns of
//! CPU per event, taken from the application's threads (benchmarks/ompt.md).
//! When the process ends (or, for a rank that was killed, when `hyscope`
//! next opens the trace) the spool is read back here and encoded into the
//! ordinary parts of its table, so the trace format does not change.
//!
//! Encoding runs on `threads` threads: one decodes the spool into batches of
//! a row group each, the others sort and encode the batches into their own
//! parts ([`PartWriter::create_interleaved`]).

use std::path::Path;
use std::sync::mpsc;

use crate::error::FormatError;
use crate::records::Record;
use crate::schema::{MpiRecord, OmpRecord};
use crate::spool::{SpoolReader, SpoolRecord};
use crate::writer::{PartWriter, WriterOptions};

/// A spooled record type and how its parts are written.
pub trait Unspool: SpoolRecord + Record {
    /// Sort (as the table wants its rows) and append to the part writer.
    fn write(writer: &mut PartWriter, rows: &mut [Self]) -> Result<(), FormatError>;
    /// The code address the row refers to (OpenMP `codeptr`, MPI call site), 0 if none.
    fn address(&self) -> u64;
}

impl Unspool for OmpRecord {
    fn write(writer: &mut PartWriter, rows: &mut [Self]) -> Result<(), FormatError> {
        writer.write_omp(rows)
    }
    fn address(&self) -> u64 {
        self.codeptr
    }
}

impl Unspool for MpiRecord {
    fn write(writer: &mut PartWriter, rows: &mut [Self]) -> Result<(), FormatError> {
        writer.write_mpi(rows)
    }
    fn address(&self) -> u64 {
        self.callsite
    }
}

/// What [`spool_to_parts`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnspoolStats {
    pub rows: u64,
    pub parts: u32,
    /// The spool's last frame was cut short (the process was killed while writing it).
    pub truncated: bool,
}

/// Encode every row of `spool` into Parquet parts of its table for `rank` in
/// `trace_dir`, on `threads` threads. `on_rows` sees every batch before it is
/// encoded (the collector collects code addresses there). The spool file is
/// left in place; the caller removes it once it no longer needs it.
pub fn spool_to_parts<R: Unspool>(
    spool: &Path,
    trace_dir: &Path,
    rank: u32,
    threads: usize,
    options: WriterOptions,
    on_rows: &mut dyn FnMut(&[R]),
) -> Result<UnspoolStats, FormatError> {
    let mut reader = SpoolReader::<R>::open(spool)?;
    let batch_rows = options.rows_per_row_group.max(1);
    let mut writers = PartWriter::create_interleaved(
        trace_dir,
        <R as Record>::TABLE,
        rank,
        options,
        threads.max(1) as u32,
    )?;
    let mut rows = 0u64;

    if writers.len() == 1 {
        // One thread: no pipeline, no extra thread.
        let writer = &mut writers[0];
        let mut batch = Vec::with_capacity(batch_rows);
        loop {
            let more = fill_batch(&mut reader, &mut batch, batch_rows)?;
            if !batch.is_empty() {
                on_rows(&batch);
                rows += batch.len() as u64;
                R::write(writer, &mut batch)?;
                batch.clear();
            }
            if !more {
                break;
            }
        }
    } else {
        rows = pipeline(spool, &mut reader, &mut writers, batch_rows, on_rows)?;
    }

    let mut parts = 0;
    for writer in writers {
        parts += writer.finish()?.parts;
    }
    Ok(UnspoolStats {
        rows,
        parts,
        truncated: reader.truncated(),
    })
}

/// Decode on this thread, encode on one scoped thread per writer. Batches
/// go round-robin to the encoders and come back empty for reuse.
fn pipeline<R: Unspool>(
    spool: &Path,
    reader: &mut SpoolReader<R>,
    writers: &mut [PartWriter],
    batch_rows: usize,
    on_rows: &mut dyn FnMut(&[R]),
) -> Result<u64, FormatError> {
    let (give_back, returned) = mpsc::channel::<Vec<R>>();
    std::thread::scope(|scope| {
        let mut encoders = Vec::new();
        for writer in writers.iter_mut() {
            let (send, receive) = mpsc::sync_channel::<Vec<R>>(1);
            let give_back = give_back.clone();
            let handle = scope.spawn(move || -> Result<(), FormatError> {
                for mut batch in receive {
                    R::write(writer, &mut batch)?;
                    batch.clear();
                    let _ = give_back.send(batch);
                }
                Ok(())
            });
            encoders.push((send, handle));
        }
        drop(give_back);

        let mut rows = 0u64;
        let mut allocated = 0;
        let mut next = 0;
        let mut result = Ok(());
        loop {
            // Two batches per encoder in flight at most: bounded memory.
            let mut batch = match returned.try_recv() {
                Ok(b) => b,
                Err(_) if allocated < 2 * encoders.len() => {
                    allocated += 1;
                    Vec::with_capacity(batch_rows)
                }
                Err(_) => match returned.recv() {
                    Ok(b) => b,
                    Err(_) => break, // every encoder stopped: its error is joined below
                },
            };
            let more = match fill_batch(reader, &mut batch, batch_rows) {
                Ok(more) => more,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            if !batch.is_empty() {
                on_rows(&batch);
                rows += batch.len() as u64;
                if encoders[next].0.send(batch).is_err() {
                    break; // that encoder failed: its error is joined below
                }
                next = (next + 1) % encoders.len();
            }
            if !more {
                break;
            }
        }
        for (send, handle) in encoders {
            drop(send);
            let encoded = handle.join().unwrap_or_else(|_| {
                Err(FormatError::Invalid {
                    path: spool.to_path_buf(),
                    message: "an encoder thread panicked".into(),
                })
            });
            if result.is_ok() {
                result = encoded;
            }
        }
        result.map(|()| rows)
    })
}

/// Append frames to `batch` until it holds at least `batch_rows` rows or the
/// spool ends; false when the spool has no more frames.
fn fill_batch<R: SpoolRecord>(
    reader: &mut SpoolReader<R>,
    batch: &mut Vec<R>,
    batch_rows: usize,
) -> Result<bool, FormatError> {
    while batch.len() < batch_rows {
        if !reader.next_frame(batch)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A spool file left in a trace's `spool/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverSpool {
    pub path: std::path::PathBuf,
    pub table: crate::schema::Table,
    pub rank: u32,
}

/// Spool files left in `trace_dir/spool`: their process ended before it could
/// encode them (killed, or the disk was full at the time). Names are
/// `<table>-rank<r>-pid<p>.spool`; other files are ignored.
pub fn leftover_spools(trace_dir: &Path) -> Vec<LeftoverSpool> {
    let Ok(entries) = std::fs::read_dir(trace_dir.join("spool")) else {
        return Vec::new();
    };
    let mut found: Vec<LeftoverSpool> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".spool")?;
            let (table, rest) = stem.split_once("-rank")?;
            let rank = rest.split_once("-pid")?.0.parse().ok()?;
            let table = match table {
                "omp" => crate::schema::Table::Omp,
                "mpi" => crate::schema::Table::Mpi,
                _ => return None,
            };
            Some(LeftoverSpool {
                path: e.path(),
                table,
                rank,
            })
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// Encode a leftover spool into its rank's parts and remove it (and the
/// `spool/` directory once empty).
pub fn recover_spool(
    trace_dir: &Path,
    spool: &LeftoverSpool,
    threads: usize,
) -> Result<UnspoolStats, FormatError> {
    let options = WriterOptions::default();
    let mut ignore = |_: &[OmpRecord]| {};
    let mut ignore_mpi = |_: &[MpiRecord]| {};
    let stats = match spool.table {
        crate::schema::Table::Omp => spool_to_parts::<OmpRecord>(
            &spool.path,
            trace_dir,
            spool.rank,
            threads,
            options,
            &mut ignore,
        )?,
        _ => spool_to_parts::<MpiRecord>(
            &spool.path,
            trace_dir,
            spool.rank,
            threads,
            options,
            &mut ignore_mpi,
        )?,
    };
    std::fs::remove_file(&spool.path).map_err(|e| FormatError::io(&spool.path, e))?;
    let _ = std::fs::remove_dir(trace_dir.join("spool"));
    Ok(stats)
}

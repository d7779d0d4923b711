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

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;

use crate::error::FormatError;
use crate::layout::{Layout, SPOOL_DIR, remove_empty_spool_dirs};
use crate::record_batch::Record;
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
            // One batch per encoder and the one being filled at most:
            // bounded memory, each batch's pages touched once.
            let mut batch = match returned.try_recv() {
                Ok(b) => b,
                Err(_) if allocated < encoders.len() + 1 => {
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

/// Add the rows' non-zero code addresses to the set, skipping the ones a
/// small direct-mapped table of recent addresses holds: a thread repeats a
/// few dozen constructs, interleaved (a serialized region's loop, implicit
/// task and region each have their own address), so nearly every row's
/// address is in it, and a set insert costs ten times the table's look-up.
pub fn note_addresses<R: Unspool>(set: &mut BTreeSet<u64>, rows: &[R]) {
    const SLOTS: usize = 256;
    let mut recent = [0u64; SLOTS];
    for a in rows.iter().map(Unspool::address) {
        // Fibonacci hashing: nearby addresses land in different slots.
        let slot = (a.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % SLOTS;
        if a != 0 && recent[slot] != a {
            set.insert(a);
            recent[slot] = a;
        }
    }
}

/// The name of a process's spool of `table` (`omp` or `mpi`) in `spool/`.
pub fn spool_file_name(table: &str, rank: u32, pid: u32) -> String {
    format!("{table}-rank{rank}-pid{pid}.spool")
}

/// A spool file left in a trace's `spool/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverSpool {
    pub path: std::path::PathBuf,
    pub table: crate::schema::Table,
    pub rank: u32,
    /// The layout its process wrote in (from where the spool is).
    pub layout: Layout,
}

/// Spool files left in `trace_dir/spool` (or its `block=<b>` directories):
/// their process ended before it could encode them (killed, or the disk was
/// full at the time). Names are `<table>-rank<r>-pid<p>.spool` (`omp`,
/// `mpi`, `samples`); other files are ignored.
pub fn leftover_spools(trace_dir: &Path) -> Vec<LeftoverSpool> {
    let mut found: Vec<LeftoverSpool> = crate::layout::entries(&trace_dir.join(SPOOL_DIR))
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            let stem = name.strip_suffix(".spool")?;
            let (table, rest) = stem.split_once("-rank")?;
            let rank = rest.split_once("-pid")?.0.parse().ok()?;
            let table = match table {
                "omp" => crate::schema::Table::Omp,
                "mpi" => crate::schema::Table::Mpi,
                "samples" => crate::schema::Table::Samples,
                _ => return None,
            };
            Some(LeftoverSpool {
                layout: Layout::of_file(&path),
                path,
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
    recover_spool_noting(trace_dir, spool, threads, &mut BTreeSet::new())
}

/// [`recover_spool`], adding the code addresses of its rows to `addresses`.
fn recover_spool_noting(
    trace_dir: &Path,
    spool: &LeftoverSpool,
    threads: usize,
    addresses: &mut BTreeSet<u64>,
) -> Result<UnspoolStats, FormatError> {
    if std::fs::metadata(&spool.path).is_ok_and(|m| m.len() == 0) {
        // Created, then nothing written (its process ended, or the disk was
        // full, at once): no rows.
        std::fs::remove_file(&spool.path).map_err(|e| FormatError::io(&spool.path, e))?;
        remove_empty_spool_dirs(trace_dir);
        return Ok(UnspoolStats::default());
    }
    let options = WriterOptions {
        layout: spool.layout,
        ..WriterOptions::default()
    };
    // On failure (a full disk, most often) the parts written so far go again:
    // the spool stays, and a later recovery must not add its rows twice.
    let part_dir = Some(spool.layout.part_dir(trace_dir, spool.table, spool.rank));
    let files = |dir: &Option<std::path::PathBuf>| -> BTreeSet<std::path::PathBuf> {
        dir.as_ref()
            .and_then(|d| std::fs::read_dir(d).ok())
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let before = files(&part_dir);
    let encoded = encode_leftover(trace_dir, spool, threads, options, addresses);
    if encoded.is_err() {
        for new in files(&part_dir).difference(&before) {
            let _ = std::fs::remove_file(new);
        }
    }
    let stats = encoded?;
    std::fs::remove_file(&spool.path).map_err(|e| FormatError::io(&spool.path, e))?;
    remove_empty_spool_dirs(trace_dir);
    Ok(stats)
}

fn encode_leftover(
    trace_dir: &Path,
    spool: &LeftoverSpool,
    threads: usize,
    options: WriterOptions,
    addresses: &mut BTreeSet<u64>,
) -> Result<UnspoolStats, FormatError> {
    Ok(match spool.table {
        crate::schema::Table::Samples => {
            let (rows, truncated) =
                crate::spool::samples::to_part(&spool.path, trace_dir, spool.rank, options)?;
            UnspoolStats {
                rows,
                parts: u32::from(rows > 0),
                truncated,
            }
        }
        crate::schema::Table::Omp => spool_to_parts::<OmpRecord>(
            &spool.path,
            trace_dir,
            spool.rank,
            threads,
            options,
            &mut |rows| note_addresses(addresses, rows),
        )?,
        _ => spool_to_parts::<MpiRecord>(
            &spool.path,
            trace_dir,
            spool.rank,
            threads,
            options,
            &mut |rows| note_addresses(addresses, rows),
        )?,
    })
}

/// Bytes of an end note file (`spool/rank<r>-pid<p>.end`): written whole at
/// that size when the process starts recording, then rewritten in place, so
/// that a full disk or a signal handler never needs a new block for it.
pub const END_NOTE_BYTES: usize = 128;

/// What a process's end note says: how it ended as far as its collector saw
/// (`Running` until it saw an end), whether its disk was full, events dropped.
/// An `exec` keeps no path here (the note has a fixed size; the rank file
/// has it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndNote {
    pub end: crate::manifest::ProcessEnd,
    pub disk_full: bool,
    pub dropped: u64,
}

/// The end note file's name for a process.
pub fn end_note_name(rank: u32, pid: u32) -> String {
    format!("rank{rank}-pid{pid}.end")
}

impl EndNote {
    /// The file's bytes: `key value` lines padded with spaces to
    /// [`END_NOTE_BYTES`]. No allocation, no formatting machinery: the
    /// collector's signal handler writes it.
    pub fn encode(&self) -> [u8; END_NOTE_BYTES] {
        use crate::manifest::ProcessEnd;
        let mut out = [b' '; END_NOTE_BYTES];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            let n = bytes.len().min(END_NOTE_BYTES - at);
            out[at..at + n].copy_from_slice(&bytes[..n]);
            at += n;
        };
        put(b"hyscope-end 1\nstate ");
        match self.end {
            ProcessEnd::Running => put(b"running"),
            ProcessEnd::Finished => put(b"finished"),
            ProcessEnd::Exec { .. } => put(b"exec"),
            ProcessEnd::Killed => put(b"killed"),
            ProcessEnd::Signal { signal } => {
                put(b"signal ");
                put(decimal(signal as i64).as_slice());
            }
            ProcessEnd::Aborted { code } => {
                put(b"aborted ");
                put(decimal(code as i64).as_slice());
            }
        }
        put(b"\ndisk_full ");
        put(if self.disk_full { b"1" } else { b"0" });
        put(b"\ndropped ");
        put(decimal(self.dropped.min(i64::MAX as u64) as i64).as_slice());
        put(b"\n");
        out
    }

    /// Parse an end note; None when it is not one.
    pub fn parse(text: &str) -> Option<EndNote> {
        use crate::manifest::ProcessEnd;
        let mut lines = text.lines();
        if lines.next()?.trim() != "hyscope-end 1" {
            return None;
        }
        let mut note = EndNote {
            end: ProcessEnd::Running,
            disk_full: false,
            dropped: 0,
        };
        for line in lines {
            let mut f = line.split_whitespace();
            match (f.next(), f.next(), f.next()) {
                (Some("state"), Some("running"), None) => note.end = ProcessEnd::Running,
                (Some("state"), Some("finished"), None) => note.end = ProcessEnd::Finished,
                (Some("state"), Some("exec"), None) => {
                    note.end = ProcessEnd::Exec {
                        path: String::new(),
                    }
                }
                (Some("state"), Some("killed"), None) => note.end = ProcessEnd::Killed,
                (Some("state"), Some("signal"), Some(n)) => {
                    note.end = ProcessEnd::Signal {
                        signal: n.parse().ok()?,
                    }
                }
                (Some("state"), Some("aborted"), Some(n)) => {
                    note.end = ProcessEnd::Aborted {
                        code: n.parse().ok()?,
                    }
                }
                (Some("disk_full"), Some(v), None) => note.disk_full = v == "1",
                (Some("dropped"), Some(v), None) => note.dropped = v.parse().ok()?,
                (None, _, _) => {}
                _ => return None,
            }
        }
        Some(note)
    }
}

/// A decimal number as bytes (up to 20 of them), without allocating.
struct Decimal {
    buf: [u8; 20],
    start: usize,
}

impl Decimal {
    fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn decimal(v: i64) -> Decimal {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    Decimal { buf, start: at }
}

/// What a process that did not finish left in `spool/`: its spools and its
/// end note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverProcess {
    pub rank: u32,
    pub pid: u32,
    pub spools: Vec<LeftoverSpool>,
    /// The end note's path and what it says (None: no note, or unreadable).
    pub end_note: Option<(std::path::PathBuf, Option<EndNote>)>,
    /// Its module map, recorded early (`maps-rank<r>-pid<p>.txt`).
    pub maps: Option<std::path::PathBuf>,
    /// Its phase journal (`crate::spool::phases`).
    pub phases: Option<std::path::PathBuf>,
    /// The layout it wrote in (from where its files are).
    pub layout: Layout,
}

impl LeftoverProcess {
    fn new(rank: u32, pid: u32) -> LeftoverProcess {
        LeftoverProcess {
            rank,
            pid,
            spools: Vec::new(),
            end_note: None,
            maps: None,
            phases: None,
            layout: Layout::Flat,
        }
    }

    /// Whether the process may still be running: its end note says
    /// `running` (or it has none), its rank file puts it on this host, and
    /// a process with its pid exists here. A job still running must not
    /// have its spools encoded under it.
    pub fn may_be_running(&self, trace_dir: &Path) -> bool {
        let ended = self
            .end_note
            .as_ref()
            .and_then(|(_, n)| n.as_ref())
            .is_some_and(|n| n.end != crate::manifest::ProcessEnd::Running);
        if ended {
            return false;
        }
        let here = crate::manifest::RankInfo::read(&self.layout.rank_file(trace_dir, self.rank))
            .map_or(true, |r| {
                r.pid != self.pid || r.host == crate::manifest::hostname()
            });
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(self.pid as libc::pid_t, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        here && exists
    }
}

/// The name of a process's copy of its module map in `spool/`.
pub fn maps_file_name(rank: u32, pid: u32) -> String {
    format!("maps-rank{rank}-pid{pid}.txt")
}

/// `(rank, pid)` of a spool directory entry name `<prefix>rank<r>-pid<p><suffix>`.
fn rank_pid(name: &str) -> Option<(u32, u32)> {
    let at = name.find("rank")?;
    let rest = &name[at + 4..];
    let (rank, rest) = rest.split_once("-pid")?;
    let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((rank.parse().ok()?, pid.parse().ok()?))
}

/// Processes that left spools or an end note in `trace_dir/spool`, by rank and pid.
pub fn leftover_processes(trace_dir: &Path) -> Vec<LeftoverProcess> {
    let mut by: std::collections::BTreeMap<(u32, u32), LeftoverProcess> = Default::default();
    for spool in leftover_spools(trace_dir) {
        let name = spool
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((rank, pid)) = rank_pid(&name) else {
            continue;
        };
        let p = by
            .entry((rank, pid))
            .or_insert_with(|| LeftoverProcess::new(rank, pid));
        p.layout = spool.layout;
        p.spools.push(spool);
    }
    for path in crate::layout::entries(&trace_dir.join(SPOOL_DIR)) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((rank, pid)) = rank_pid(&name) else {
            continue;
        };
        if name == maps_file_name(rank, pid) {
            if let Some(p) = by.get_mut(&(rank, pid)) {
                p.maps = Some(path);
            }
            continue;
        }
        let layout = Layout::of_file(&path);
        if name == crate::spool::phases::journal_file_name(rank, pid) {
            let p = by
                .entry((rank, pid))
                .or_insert_with(|| LeftoverProcess::new(rank, pid));
            p.layout = layout;
            p.phases = Some(path);
            continue;
        }
        if name != end_note_name(rank, pid) {
            continue;
        }
        let note = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| EndNote::parse(&t));
        let p = by
            .entry((rank, pid))
            .or_insert_with(|| LeftoverProcess::new(rank, pid));
        p.layout = layout;
        p.end_note = Some((path, note));
    }
    by.into_values().collect()
}

/// What [`recover_process`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveredProcess {
    /// Rows recovered per table (omp, mpi).
    pub events: crate::manifest::EventCounts,
    /// Some spool's last frame was cut short.
    pub truncated: bool,
    /// How the process ended, as written into its rank file.
    pub end: Option<crate::manifest::ProcessEnd>,
    /// Spools that could not be encoded (left in place), with the error.
    pub failed: Vec<String>,
    /// Distinct code addresses of the recovered rows (for the symbols table).
    pub addresses: Vec<u64>,
    /// Phase rows recovered from its phase journal.
    pub phases: u64,
}

/// Encode what a process left in `spool/` into its rank's parts and record
/// in its rank file how it ended: its end note's state, or `killed` when the
/// note still says it was running (or there is none). The rank file written
/// at its start (identity, clock offsets) is kept and completed; without one
/// a minimal one is written. The spools and the note are removed once used.
pub fn recover_process(
    trace_dir: &Path,
    process: &LeftoverProcess,
    threads: usize,
) -> Result<RecoveredProcess, FormatError> {
    use crate::manifest::{ProcessEnd, RankInfo};
    let mut out = RecoveredProcess::default();
    let mut addresses = BTreeSet::new();
    for spool in &process.spools {
        match recover_spool_noting(trace_dir, spool, threads, &mut addresses) {
            Ok(stats) => {
                match spool.table {
                    crate::schema::Table::Omp => out.events.omp += stats.rows,
                    crate::schema::Table::Samples => out.events.samples += stats.rows,
                    _ => out.events.mpi += stats.rows,
                }
                out.truncated |= stats.truncated;
            }
            Err(e) => out.failed.push(e.to_string()),
        }
    }
    if let Some(journal) = &process.phases {
        match crate::spool::phases::journal_to_part(
            journal,
            trace_dir,
            process.rank,
            process.layout,
        ) {
            Ok(j) => {
                out.phases = j.rows.len() as u64;
                out.truncated |= j.truncated;
                let _ = std::fs::remove_file(journal);
            }
            Err(e) => out.failed.push(e.to_string()),
        }
    }
    let path = process.layout.rank_file(trace_dir, process.rank);
    let mut info = RankInfo::read(&path).unwrap_or_else(|_| RankInfo {
        rank: process.rank,
        pid: process.pid,
        ..RankInfo::default()
    });
    let note = process.end_note.as_ref().and_then(|(_, n)| n.clone());
    let end = match note.as_ref().map(|n| &n.end) {
        Some(ProcessEnd::Running) | None => ProcessEnd::Killed,
        Some(e) => e.clone(),
    };
    // A rank file that says the process finished is newer than its spools'
    // story (a forked child may have left these): only add the rows. So is
    // one that says it exec'd (with the program's path, which the note has
    // no room for).
    if !matches!(
        info.end,
        Some(ProcessEnd::Finished | ProcessEnd::Exec { .. })
    ) {
        info.end = Some(end);
        info.finished = false;
    }
    if let Some(n) = note {
        info.disk_full |= n.disk_full;
        info.dropped_events = info.dropped_events.max(n.dropped);
        if n.disk_full && info.write_error.is_none() {
            info.write_error = Some("No space left on device".into());
        }
    }
    info.events.omp += out.events.omp;
    info.events.mpi += out.events.mpi;
    info.events.samples += out.events.samples;
    info.recovered = true;
    out.end = info.end.clone();
    out.addresses = addresses.into_iter().collect();
    if let Some(maps) = &process.maps
        && !out.addresses.is_empty()
    {
        let text = std::fs::read_to_string(maps).map_err(|e| FormatError::io(maps, e))?;
        let rows = crate::symbolize::resolve_with_maps(
            &out.addresses,
            &crate::symbolize::parse_maps(&text),
        );
        let mut w = crate::writer::PartWriter::create(
            trace_dir,
            crate::schema::Table::Symbols,
            process.rank,
            WriterOptions {
                layout: process.layout,
                ..WriterOptions::default()
            },
        )?;
        w.write_records(&rows)?;
        w.finish()?;
    }
    info.write_in(trace_dir, process.layout)?;
    if out.failed.is_empty() {
        if let Some((note_path, _)) = &process.end_note {
            let _ = std::fs::remove_file(note_path);
        }
        if let Some(maps) = &process.maps {
            let _ = std::fs::remove_file(maps);
        }
    }
    remove_empty_spool_dirs(trace_dir);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_address_is_noted_once_whatever_the_table_keeps() {
        // A few sites repeated in turn, sites sharing a slot of the table
        // (kept apart by the set), and zeros (no address).
        let sites: Vec<u64> = (0..600u64).map(|i| 0x40_0000 + 0x40 * i).collect();
        let rows: Vec<OmpRecord> = (0..20_000u64)
            .map(|i| OmpRecord {
                codeptr: if i % 7 == 0 {
                    0
                } else {
                    sites[(i * 31 % 600) as usize]
                },
                ..OmpRecord::default()
            })
            .collect();
        let mut noted = BTreeSet::new();
        for chunk in rows.chunks(999) {
            note_addresses(&mut noted, chunk);
        }
        let all: BTreeSet<u64> = rows.iter().map(|r| r.codeptr).filter(|&a| a != 0).collect();
        assert_eq!(noted, all);
    }
}

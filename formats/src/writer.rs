//! Streaming Parquet writer: one per (table, rank).
//!
//! Rows go into the open part `<table>/rank=<r>/part-<k>.parquet.tmp`; every
//! `rows_per_part` rows, or on [`PartWriter::flush`], the part is closed and
//! renamed to `part-<k>.parquet`. A closed part is complete and self-describing,
//! so a crash loses at most the open part. Memory is bounded by one row group
//! (`rows_per_row_group` rows) plus the encoder state.
//!
//! Encoding, chosen for size (see BENCHMARKS.md): zstd; dictionary encoding for
//! every column except the timestamp/id columns of [`Table::delta_columns`],
//! which get `DELTA_BINARY_PACKED`, and the small constant-over-long-runs
//! columns of [`Table::plain_columns`], which get `PLAIN` (zstd then folds
//! their runs). Min/max statistics for the time columns only. Rows of the `omp` table are sorted by
//! (thread, kind, start) and those of the `mpi` table by (thread, start) within
//! each write ([`PartWriter::write_omp`], [`PartWriter::write_mpi`]) so that
//! timestamp deltas stay small and row-group statistics make time-range filters
//! selective.
//!
//! Integrity: the parquet crate verifies page CRC-32s on read but cannot
//! write them (its page header's `crc` is always unset). So every part carries
//! its own: a CRC-32 of each [`CHECKSUM_BLOCK`] bytes of its data (everything
//! before the footer) and its row count, in the footer's key-value metadata
//! ([`CHECKSUM_KEY`], [`CHECKSUM_BYTES_KEY`], [`ROWS_KEY`]).
//! [`crate::reader`] verifies the blocks of the column chunks it reads before
//! decoding them, so a flipped bit is an error naming the file, not a changed
//! number.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::error::FormatError;
use crate::layout::Layout;
use crate::record_batch::{OmpColumns, Record};
use crate::schema::{MpiRecord, OmpRecord, Table};
use crate::version::FORMAT_VERSION;

/// Bytes covered by one CRC-32 of a part's data: small enough that a scan of
/// a few row groups verifies little more than it reads.
pub const CHECKSUM_BLOCK: u64 = 256 * 1024;
/// Key-value metadata: the CRC-32 of each [`CHECKSUM_BLOCK`] of the part's
/// data, 8 hex digits each, in file order.
pub const CHECKSUM_KEY: &str = "hyscope.crc32";
/// Key-value metadata: how many bytes from the start of the file the
/// checksums cover (the footer and page indexes follow them).
pub const CHECKSUM_BYTES_KEY: &str = "hyscope.crc32_bytes";
/// Key-value metadata: the part's rows, as the writer counted them.
pub const ROWS_KEY: &str = "hyscope.rows";

/// A file that keeps the CRC-32 of each [`CHECKSUM_BLOCK`] written to it.
struct ChecksumWrite {
    file: File,
    written: u64,
    block: crc32fast::Hasher,
    blocks: Vec<u32>,
}

impl ChecksumWrite {
    fn new(file: File) -> ChecksumWrite {
        ChecksumWrite {
            file,
            written: 0,
            block: crc32fast::Hasher::new(),
            blocks: Vec::new(),
        }
    }

    fn feed(&mut self, mut buf: &[u8]) {
        while !buf.is_empty() {
            let room = (CHECKSUM_BLOCK - self.written % CHECKSUM_BLOCK) as usize;
            let (head, tail) = buf.split_at(room.min(buf.len()));
            self.block.update(head);
            self.written += head.len() as u64;
            if self.written.is_multiple_of(CHECKSUM_BLOCK) {
                let done = std::mem::replace(&mut self.block, crc32fast::Hasher::new());
                self.blocks.push(done.finalize());
            }
            buf = tail;
        }
    }

    /// The checksums of everything written so far, as [`CHECKSUM_KEY`] holds them.
    fn checksums(&self) -> String {
        let mut out = String::with_capacity(8 * (self.blocks.len() + 1));
        let partial =
            (!self.written.is_multiple_of(CHECKSUM_BLOCK)).then(|| self.block.clone().finalize());
        for crc in self.blocks.iter().chain(partial.as_ref()) {
            out.push_str(&format!("{crc:08x}"));
        }
        out
    }
}

impl Write for ChecksumWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.feed(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Tuning of a [`PartWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// Close the open part after this many rows.
    pub rows_per_part: usize,
    /// Rows per Parquet row group (the unit of time-range pruning and of writer memory).
    pub rows_per_row_group: usize,
    /// zstd level (1..=22).
    pub zstd_level: i32,
    /// Where the rank's partition goes (flat unless the job is large:
    /// `Layout::for_job`).
    pub layout: Layout,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            rows_per_part: 4 * 1024 * 1024,
            rows_per_row_group: 128 * 1024,
            zstd_level: 3,
            layout: Layout::Flat,
        }
    }
}

/// What a writer wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriterStats {
    pub rows: u64,
    pub parts: u32,
    pub bytes: u64,
}

/// The path of part `index` of `table` for `rank` inside `trace_dir`, in the
/// flat layout (`Layout::part_dir` for either).
pub fn part_path(trace_dir: &Path, table: Table, rank: u32, index: u32) -> PathBuf {
    Layout::Flat
        .part_dir(trace_dir, table, rank)
        .join(format!("part-{index}.parquet"))
}

pub struct PartWriter {
    trace_dir: PathBuf,
    table: Table,
    rank: u32,
    options: WriterOptions,
    properties: WriterProperties,
    open: Option<OpenPart>,
    next_index: u32,
    /// Step between this writer's part indices (see [`PartWriter::create_interleaved`]).
    index_step: u32,
    stats: WriterStats,
    /// The OpenMP rows' sort and column buffers, kept from one write to the
    /// next: allocated once per writer, not once per batch.
    omp_buffers: (OmpSort, OmpColumns),
}

struct OpenPart {
    writer: ArrowWriter<ChecksumWrite>,
    tmp_path: PathBuf,
    final_path: PathBuf,
    rows: usize,
}

impl PartWriter {
    /// A writer for `table` of `rank`. Creates the partition directory; continues
    /// after the highest part index already present (so a second writer for the
    /// same table and rank, e.g. after a fork, never overwrites).
    pub fn create(
        trace_dir: &Path,
        table: Table,
        rank: u32,
        options: WriterOptions,
    ) -> Result<PartWriter, FormatError> {
        let dir = options.layout.part_dir(trace_dir, table, rank);
        std::fs::create_dir_all(&dir).map_err(|e| FormatError::io(&dir, e))?;
        let next_index = existing_max_index(&dir).map_or(0, |i| i + 1);
        Ok(PartWriter {
            trace_dir: trace_dir.to_path_buf(),
            table,
            rank,
            properties: writer_properties(table, rank, &options),
            options,
            open: None,
            next_index,
            index_step: 1,
            stats: WriterStats::default(),
            omp_buffers: Default::default(),
        })
    }

    /// `count` writers for the same table and rank that can write at the same
    /// time (one per thread): writer `j` uses part indices `base + j`,
    /// `base + j + count`, … after the highest index already present.
    pub fn create_interleaved(
        trace_dir: &Path,
        table: Table,
        rank: u32,
        options: WriterOptions,
        count: u32,
    ) -> Result<Vec<PartWriter>, FormatError> {
        let count = count.max(1);
        let first = PartWriter::create(trace_dir, table, rank, options)?;
        let base = first.next_index;
        let mut writers = vec![first];
        for j in 1..count {
            writers.push(PartWriter {
                trace_dir: writers[0].trace_dir.clone(),
                table,
                rank,
                properties: writers[0].properties.clone(),
                options: writers[0].options.clone(),
                open: None,
                next_index: base + j,
                index_step: count,
                stats: WriterStats::default(),
                omp_buffers: Default::default(),
            });
        }
        writers[0].index_step = count;
        Ok(writers)
    }

    pub fn table(&self) -> Table {
        self.table
    }

    /// Append records of this writer's table.
    pub fn write_records<R: Record>(&mut self, rows: &[R]) -> Result<(), FormatError> {
        debug_assert_eq!(R::TABLE, self.table);
        for chunk in rows.chunks(self.options.rows_per_row_group.max(1)) {
            self.write_batch(&R::to_batch(chunk))?;
        }
        Ok(())
    }

    /// Append OpenMP records, sorted by (thread, kind, start, longest first) first.
    ///
    /// Grouping by kind keeps each kind's intervals (e.g. consecutive loop
    /// chunks) together, so the delta-encoded `start_ns`/`end_ns` see small
    /// regular steps instead of jumps to the end of an enclosing region: on the
    /// synthetic benchmark trace this saves ~14 % of the bytes (benchmarks/formats.md).
    /// Within a kind and thread, rows are in start order; a consumer that needs
    /// one global order sorts (rows of a long interval arrive in a later write anyway).
    /// The rows are written in that order; the slice itself is left as it is.
    pub fn write_omp(&mut self, rows: &[OmpRecord]) -> Result<(), FormatError> {
        let (mut sort, mut columns) = std::mem::take(&mut self.omp_buffers);
        let group = self.options.rows_per_row_group.max(1);
        let result = if sort.order(rows) {
            sort.order.chunks(group).try_for_each(|order| {
                let rows = order.iter().map(|&i| &rows[i as usize]);
                columns.write(rows, |b| self.write_batch(b))
            })
        } else {
            rows.chunks(group)
                .try_for_each(|rows| columns.write(rows.iter(), |b| self.write_batch(b)))
        };
        self.omp_buffers = (sort, columns);
        result
    }

    /// Append MPI records, sorted by (thread, start) first.
    pub fn write_mpi(&mut self, rows: &mut [MpiRecord]) -> Result<(), FormatError> {
        sort_mpi(rows);
        self.write_records(rows)
    }

    /// Append a batch with this table's file schema, splitting it across parts.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), FormatError> {
        if batch.schema().fields() != self.table.file_schema().fields() {
            return Err(FormatError::Schema {
                path: self.trace_dir.join(self.table.dir_name()),
                table: self.table.to_string(),
                message: "batch does not have the table's schema".into(),
            });
        }
        let mut offset = 0;
        while offset < batch.num_rows() {
            let rows_per_part = self.options.rows_per_part;
            let part = self.open_part()?;
            let room = rows_per_part - part.rows;
            let take = room.min(batch.num_rows() - offset);
            part.writer
                .write(&batch.slice(offset, take))
                .map_err(|e| FormatError::parquet(&part.tmp_path, e))?;
            part.rows += take;
            offset += take;
            if part.rows >= rows_per_part {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Close the open part, if any, making it a complete `part-<k>.parquet`.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        let Some(mut part) = self.open.take() else {
            return Ok(());
        };
        // Every row group out and through the buffer: what the checksums cover
        // is all the data, the footer follows.
        part.writer
            .flush()
            .map_err(|e| FormatError::parquet(&part.tmp_path, e))?;
        part.writer
            .sync()
            .map_err(|e| FormatError::io(&part.tmp_path, e))?;
        let sink = part.writer.inner();
        let checks = [
            (CHECKSUM_KEY, sink.checksums()),
            (CHECKSUM_BYTES_KEY, sink.written.to_string()),
            (ROWS_KEY, part.rows.to_string()),
        ];
        for (key, value) in checks {
            part.writer
                .append_key_value_metadata(KeyValue::new(key.to_string(), value));
        }
        part.writer
            .close()
            .map_err(|e| FormatError::parquet(&part.tmp_path, e))?;
        std::fs::rename(&part.tmp_path, &part.final_path)
            .map_err(|e| FormatError::io(&part.final_path, e))?;
        let bytes = std::fs::metadata(&part.final_path)
            .map_err(|e| FormatError::io(&part.final_path, e))?
            .len();
        self.stats.rows += part.rows as u64;
        self.stats.parts += 1;
        self.stats.bytes += bytes;
        Ok(())
    }

    /// Close the open part and return what was written.
    pub fn finish(mut self) -> Result<WriterStats, FormatError> {
        self.flush()?;
        Ok(self.stats.clone())
    }

    /// Rows written so far, including the open part.
    pub fn rows(&self) -> u64 {
        self.stats.rows + self.open.as_ref().map_or(0, |p| p.rows as u64)
    }

    fn open_part(&mut self) -> Result<&mut OpenPart, FormatError> {
        if self.open.is_none() {
            let final_path = self
                .options
                .layout
                .part_dir(&self.trace_dir, self.table, self.rank)
                .join(format!("part-{}.parquet", self.next_index));
            let tmp_path = final_path.with_extension("parquet.tmp");
            self.next_index += self.index_step;
            let file = File::create(&tmp_path).map_err(|e| FormatError::io(&tmp_path, e))?;
            let writer = ArrowWriter::try_new(
                ChecksumWrite::new(file),
                self.table.file_schema(),
                Some(self.properties.clone()),
            )
            .map_err(|e| FormatError::parquet(&tmp_path, e))?;
            self.open = Some(OpenPart {
                writer,
                tmp_path,
                final_path,
                rows: 0,
            });
        }
        Ok(self.open.as_mut().expect("part opened above"))
    }
}

impl Drop for PartWriter {
    /// Best effort: a writer dropped without `finish` still closes its part.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Sort records by a key: sorts small (key, index) pairs and gathers the
/// records once, instead of moving the large records at every step of the
/// sort (the sort was the writer's largest cost). Free when already sorted.
fn sort_rows<T: Copy, K: Ord + Copy>(rows: &mut [T], key: impl Fn(&T) -> K) {
    if rows.is_sorted_by_key(&key) {
        return;
    }
    let sorted: Vec<T> = order_by_key(rows, key)
        .into_iter()
        .map(|i| rows[i as usize])
        .collect();
    rows.copy_from_slice(&sorted);
}

/// The indices of `rows` in order of `key`, rows of equal keys in their order.
fn order_by_key<T, K: Ord + Copy>(rows: &[T], key: impl Fn(&T) -> K) -> Vec<u32> {
    let mut keys: Vec<(K, u32)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (key(r), i as u32))
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|(_, i)| i).collect()
}

/// Sort MPI records by (thread, start), rows of equal keys in their order
/// (as [`sort_rows`]): one `u128` key per row — thread (32 bits), start
/// relative to the earliest start (64 bits: any two `i64` differ by less),
/// row index (32 bits) — sorted with single integer comparisons: ≈ 229 instructions per
/// row of a message-heavy rank against the tuples' ≈ 570.
fn sort_mpi(rows: &mut [MpiRecord]) {
    let key = |r: &MpiRecord| (r.thread, r.start_ns);
    if rows.is_sorted_by_key(key) {
        return;
    }
    if rows.len() > u32::MAX as usize {
        sort_rows(rows, key);
        return;
    }
    let min_start = rows.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let mut keys: Vec<u128> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let start = (i128::from(r.start_ns) - i128::from(min_start)) as u64;
            (u128::from(r.thread) << 96) | (u128::from(start) << 32) | i as u128
        })
        .collect();
    keys.sort_unstable();
    let sorted: Vec<MpiRecord> = keys.iter().map(|&k| rows[(k as u32) as usize]).collect();
    rows.copy_from_slice(&sorted);
}

/// The order of OpenMP records by (thread, kind, start, longest first),
/// with its buffers kept for the next batch.
///
/// A spool holds each thread's rows in the order they closed, so the rows of
/// one (thread, kind) are already in start order but where intervals of that
/// kind nest (nested regions, a task inside a task). The fast path counts the
/// rows into one bucket per (thread, kind), in that order, as `u128` keys:
/// start relative to the earliest start (56 bits, 2.3 years) and row index
/// (32 bits); a stable sort, which finds and merges the runs already in
/// order, then sorts each bucket in about one pass, and rows with equal
/// starts are put longest first. A quicksort of the whole batch's keys cost
/// three times as much (`unspool_bench`, benchmarks/formats.md). Falls back to
/// the generic sort when a batch does not fit that layout. The rows are not
/// moved: the writer reads them in [`OmpSort::order`].
#[derive(Default)]
struct OmpSort {
    keys: Vec<u128>,
    /// ends[b]: one past bucket b's last key, once every row is placed.
    ends: Vec<u32>,
    /// Row indices in sorted order.
    order: Vec<u32>,
}

impl OmpSort {
    /// Fill [`OmpSort::order`]; false (and nothing filled) when the rows are
    /// in order already.
    fn order(&mut self, rows: &[OmpRecord]) -> bool {
        let key = |r: &OmpRecord| (r.thread, r.kind, r.start_ns, std::cmp::Reverse(r.end_ns));
        if rows.is_sorted_by_key(key) {
            return false;
        }
        let first = rows[0];
        let (mut min_start, mut max_start) = (first.start_ns, first.start_ns);
        let (mut min_thread, mut max_thread, mut max_kind) =
            (first.thread, first.thread, first.kind);
        for r in rows {
            min_start = min_start.min(r.start_ns);
            max_start = max_start.max(r.start_ns);
            min_thread = min_thread.min(r.thread);
            max_thread = max_thread.max(r.thread);
            max_kind = max_kind.max(r.kind);
        }
        let span = (max_start as i128 - min_start as i128) as u128;
        let kinds = usize::from(max_kind) + 1;
        let buckets = (max_thread - min_thread) as usize * kinds + kinds;
        if rows.len() > u32::MAX as usize || span >= 1 << 56 || buckets > 1 << 20 {
            self.order = order_by_key(rows, key);
            return true;
        }
        self.order.clear();
        let bucket = |r: &OmpRecord| (r.thread - min_thread) as usize * kinds + usize::from(r.kind);
        let ends = &mut self.ends;
        ends.clear();
        ends.resize(buckets + 1, 0);
        for r in rows {
            ends[bucket(r) + 1] += 1;
        }
        for b in 1..=buckets {
            ends[b] += ends[b - 1];
        }
        let keys = &mut self.keys;
        keys.clear();
        keys.resize(rows.len(), 0);
        for (i, r) in rows.iter().enumerate() {
            let at = &mut ends[bucket(r)];
            let start = (r.start_ns as i128 - min_start as i128) as u128;
            keys[*at as usize] = (start << 32) | i as u128;
            *at += 1;
        }
        let index = |k: u128| (k as u32) as usize;
        let mut from = 0;
        for &to in &ends[..buckets] {
            let keys = &mut keys[from..to as usize];
            from = to as usize;
            if keys.len() < 2 {
                continue;
            }
            keys.sort();
            let mut i = 0;
            while i < keys.len() {
                let start = keys[i] >> 32;
                let mut j = i + 1;
                while j < keys.len() && keys[j] >> 32 == start {
                    j += 1;
                }
                if j - i > 1 {
                    keys[i..j]
                        .sort_unstable_by_key(|&k| (std::cmp::Reverse(rows[index(k)].end_ns), k));
                }
                i = j;
            }
        }
        self.order.extend(keys.iter().map(|&k| k as u32));
        true
    }
}

fn existing_max_index(dir: &Path) -> Option<u32> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix("part-")?
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
}

fn writer_properties(table: Table, rank: u32, options: &WriterOptions) -> WriterProperties {
    let level = ZstdLevel::try_new(options.zstd_level).unwrap_or_default();
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(options.rows_per_row_group))
        .set_key_value_metadata(Some(vec![
            KeyValue::new("hyscope.format_version".into(), FORMAT_VERSION.to_string()),
            KeyValue::new("hyscope.table".into(), table.dir_name().to_string()),
            KeyValue::new("hyscope.rank".into(), rank.to_string()),
        ]));
    for column in table.delta_columns() {
        let path = ColumnPath::from(*column);
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    for column in table.plain_columns() {
        let path = ColumnPath::from(*column);
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::PLAIN);
    }
    // Statistics only where a reader uses them: the time columns, for
    // time-range filters (`row_group_overlaps`). Each other column's min/max
    // cost the writer 3 % of its time and no reader looked at it.
    if let Some((start, end)) = table.time_columns() {
        builder = builder.set_statistics_enabled(EnabledStatistics::None);
        for column in [start, end] {
            builder = builder
                .set_column_statistics_enabled(ColumnPath::from(column), EnabledStatistics::Chunk);
        }
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OmpKind;

    /// Rows as a spool holds them: per thread in the order they closed
    /// (nested intervals of one kind before their parent, equal starts with
    /// different ends), threads' blocks interleaved.
    fn spool_order(threads: u32, first_thread: u32) -> Vec<OmpRecord> {
        let mut blocks: Vec<Vec<OmpRecord>> = Vec::new();
        for t in 0..threads {
            let mut rows = Vec::new();
            let mut at = 1_000 * i64::from(t);
            for i in 0..500u64 {
                let rec = |kind: OmpKind, start: i64, end: i64| OmpRecord {
                    thread: first_thread + t,
                    kind: kind as u8,
                    start_ns: start,
                    end_ns: end,
                    count: i,
                    ..OmpRecord::default()
                };
                // A nested region closes before its parent; two intervals of
                // one kind start together; a chunk and its loop end together.
                rows.push(rec(OmpKind::Parallel, at + 10, at + 20));
                rows.push(rec(OmpKind::Sync, at + 30, at + 40));
                rows.push(rec(OmpKind::Sync, at + 30, at + 45));
                rows.push(rec(OmpKind::Chunk, at + 50, at + 60));
                rows.push(rec(OmpKind::Work, at + 50, at + 60));
                rows.push(rec(OmpKind::Parallel, at, at + 70));
                at += 100 - (i % 7) as i64;
            }
            blocks.extend(rows.chunks(37).map(<[OmpRecord]>::to_vec));
        }
        // Threads' blocks interleaved, as the writer spools them.
        blocks.sort_by_key(|b| b[0].start_ns);
        blocks.concat()
    }

    fn by_generic_sort(rows: &[OmpRecord]) -> Vec<OmpRecord> {
        let mut expected = rows.to_vec();
        sort_rows(&mut expected, |r: &OmpRecord| {
            (r.thread, r.kind, r.start_ns, std::cmp::Reverse(r.end_ns))
        });
        expected
    }

    fn sorted(sort: &mut OmpSort, rows: &[OmpRecord]) -> Vec<OmpRecord> {
        if !sort.order(rows) {
            return rows.to_vec();
        }
        sort.order.iter().map(|&i| rows[i as usize]).collect()
    }

    #[test]
    fn omp_rows_sort_as_the_generic_sort_does_on_every_path() {
        // One sort for every batch, as a writer keeps it.
        let mut sort = OmpSort::default();
        // The bucketed fast path.
        let rows = spool_order(3, 0);
        assert_eq!(sorted(&mut sort, &rows), by_generic_sort(&rows));
        assert_ne!(
            by_generic_sort(&rows),
            rows,
            "the input was not sorted already"
        );
        // Fewer rows after more: nothing of the larger batch is left over.
        let few = spool_order(1, 2);
        assert_eq!(sorted(&mut sort, &few), by_generic_sort(&few));
        // Rows in order already.
        let in_order = by_generic_sort(&rows);
        assert!(!sort.order(&in_order));
        // Thread ids too far apart for a bucket table: the generic sort.
        let mut wide = spool_order(2, 0);
        for r in wide.iter_mut().filter(|r| r.thread == 1) {
            r.thread = u32::MAX;
        }
        assert_eq!(sorted(&mut sort, &wide), by_generic_sort(&wide));
        // Starts too far apart for the key's 56 bits: the generic sort.
        let mut far = spool_order(2, 5);
        far[0].start_ns = i64::MIN;
        assert_eq!(sorted(&mut sort, &far), by_generic_sort(&far));
    }
}

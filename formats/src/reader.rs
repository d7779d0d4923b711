//! Reading a trace directory: the manifest, the parts of each table, and
//! streaming scans with column projection, a rank filter and a time-range filter.
//!
//! The time-range filter prunes whole row groups with their Parquet statistics
//! (min of the start column, max of the end column), then keeps the rows of the
//! remaining groups that overlap the window, so a narrow window reads little of
//! a large file.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::statistics::Statistics;

use crate::error::FormatError;
use crate::manifest::{MANIFEST_FILE, Manifest, RANKS_DIR, RankInfo, check_version};
use crate::records::Record;
use crate::schema::{LateDefault, Table};

/// One closed part file of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartFile {
    pub table: Table,
    pub rank: u32,
    pub index: u32,
    pub path: PathBuf,
    pub bytes: u64,
}

/// What to read of a table.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Columns to read (file columns; `rank` is always added first). None = all.
    pub columns: Option<Vec<String>>,
    /// Only these ranks. None = all.
    pub ranks: Option<Vec<u32>>,
    /// Only rows overlapping `[from, to]` (ns, inclusive).
    pub time_range: Option<(i64, i64)>,
    /// Rows per batch (default 64 Ki).
    pub batch_size: Option<usize>,
}

/// An opened trace directory.
#[derive(Debug, Clone)]
pub struct Trace {
    pub dir: PathBuf,
    pub manifest: Manifest,
    parts: BTreeMap<Table, Vec<PartFile>>,
}

impl Trace {
    /// Open a trace: read and check the manifest, merge the per-rank files and
    /// list every closed part of every table.
    pub fn open(dir: &Path) -> Result<Trace, FormatError> {
        if !dir.join(MANIFEST_FILE).exists() {
            if !dir.is_dir() {
                return Err(FormatError::Invalid {
                    path: dir.to_path_buf(),
                    message: "no such trace directory".into(),
                });
            }
            return Err(FormatError::MissingManifest {
                path: dir.to_path_buf(),
            });
        }
        let mut manifest = Manifest::read(dir)?;
        merge_rank_files(dir, &mut manifest)?;
        let mut parts = BTreeMap::new();
        for table in Table::ALL {
            parts.insert(table, list_parts(dir, table)?);
        }
        Ok(Trace {
            dir: dir.to_path_buf(),
            manifest,
            parts,
        })
    }

    /// Ranks that have at least one part in any table, or are in the manifest.
    pub fn ranks(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = self
            .parts
            .values()
            .flatten()
            .map(|p| p.rank)
            .chain(self.manifest.ranks.iter().map(|r| r.rank))
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Closed parts of a table, sorted by (rank, index).
    pub fn parts(&self, table: Table) -> &[PartFile] {
        self.parts.get(&table).map_or(&[], |v| v.as_slice())
    }

    /// Total bytes of all parts of a table.
    pub fn table_bytes(&self, table: Table) -> u64 {
        self.parts(table).iter().map(|p| p.bytes).sum()
    }

    /// Stream the batches of a table, part after part. Each batch carries the
    /// `rank` column first, then the projected columns.
    pub fn scan(
        &self,
        table: Table,
        options: &ScanOptions,
    ) -> impl Iterator<Item = Result<RecordBatch, FormatError>> + '_ {
        let ranks = options.ranks.clone();
        let options = options.clone();
        self.parts(table)
            .iter()
            .filter(move |p| ranks.as_ref().is_none_or(|r| r.contains(&p.rank)))
            .map(move |p| PartScan::open(p, &options))
            .flat_map(
                |scan| -> Box<dyn Iterator<Item = Result<RecordBatch, FormatError>>> {
                    match scan {
                        Ok(scan) => Box::new(scan),
                        Err(e) => Box::new(std::iter::once(Err(e))),
                    }
                },
            )
    }

    /// Read every row of a table as records (all columns), with filters.
    pub fn read_records<R: Record>(
        &self,
        options: &ScanOptions,
    ) -> Result<Vec<(u32, R)>, FormatError> {
        let mut out = Vec::new();
        for part in self.parts(R::TABLE) {
            if options
                .ranks
                .as_ref()
                .is_some_and(|r| !r.contains(&part.rank))
            {
                continue;
            }
            // Straight into `out`, batch by batch: no per-part vector (at 10 M rows
            // the fresh pages of an intermediate copy cost more than the decoding).
            for_each_part_batch::<R>(part, options, |rows, reserve| {
                out.reserve(reserve);
                out.extend(rows.into_iter().map(|r| (part.rank, r)));
            })?;
        }
        Ok(out)
    }
}

/// Read one part's rows as records (the unit of parallel scans).
pub fn read_part_records<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
) -> Result<Vec<R>, FormatError> {
    let mut out = Vec::new();
    for_each_part_batch::<R>(part, options, |rows, reserve| {
        out.reserve(reserve);
        out.extend(rows);
    })?;
    Ok(out)
}

/// Rows of each row group a scan of one part reads (after time-range pruning),
/// in order: to split a part's decoding with [`read_part_row_groups_into`].
pub fn part_row_group_rows(
    part: &PartFile,
    options: &ScanOptions,
) -> Result<Vec<usize>, FormatError> {
    Ok(PartScan::open(part, options)?.group_rows)
}

/// Decode one part's rows into the front of `out`, a caller's buffer (reused
/// across parts and ranks, its pages are faulted in once, and parts can be
/// decoded in parallel into disjoint slices of one buffer). Returns how many
/// rows were written; `out` must hold the sum of [`part_row_group_rows`], a
/// part that yields more is an error.
pub fn read_part_records_into<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
    out: &mut [R],
) -> Result<usize, FormatError> {
    read_into(part, options, None, out)
}

/// [`read_part_records_into`] for the row groups `groups` (indices into
/// [`part_row_group_rows`]) of a part: pieces of one part decoded in parallel.
pub fn read_part_row_groups_into<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
    groups: Range<usize>,
    out: &mut [R],
) -> Result<usize, FormatError> {
    read_into(part, options, Some(groups), out)
}

fn read_into<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
    groups: Option<Range<usize>>,
    out: &mut [R],
) -> Result<usize, FormatError> {
    let mut n = 0usize;
    let mut overflow = false;
    for_each_part_batch_in::<R>(part, options, groups, |rows, _| {
        let k = rows.len();
        match out.get_mut(n..n + k) {
            Some(dst) if !overflow => {
                for (d, r) in dst.iter_mut().zip(rows) {
                    *d = r;
                }
                n += k;
            }
            _ => overflow = true,
        }
    })?;
    if overflow {
        return Err(FormatError::Invalid {
            path: part.path.clone(),
            message: format!("more rows than the {} of the buffer", out.len()),
        });
    }
    Ok(n)
}

/// Decode a part batch by batch into records. `sink` gets the rows of each
/// batch and, with the first, the number of rows the scan may still yield.
fn for_each_part_batch<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
    sink: impl FnMut(Vec<R>, usize),
) -> Result<(), FormatError> {
    for_each_part_batch_in(part, options, None, sink)
}

/// [`for_each_part_batch`] over a range of the row groups the scan reads.
fn for_each_part_batch_in<R: Record>(
    part: &PartFile,
    options: &ScanOptions,
    groups: Option<Range<usize>>,
    mut sink: impl FnMut(Vec<R>, usize),
) -> Result<(), FormatError> {
    let mut options = options.clone();
    options.columns = None;
    let scan = no_panic(&part.path, || PartScan::open_inner(part, &options, groups))?;
    let mut reserve = scan.rows_selected();
    for batch in scan {
        let batch = batch?;
        // Drop the rank column: records do not carry it.
        let batch = batch
            .project(&(1..batch.num_columns()).collect::<Vec<_>>())
            .map_err(|e| FormatError::parquet(&part.path, e))?;
        let rows = R::from_batch(&batch).map_err(|message| FormatError::Schema {
            path: part.path.clone(),
            table: part.table.to_string(),
            message,
        })?;
        sink(rows, std::mem::take(&mut reserve));
    }
    Ok(())
}

/// A streaming scan of one part file.
pub struct PartScan {
    /// None after the decoder panicked on a corrupt page: the part ends there.
    reader: Option<ParquetRecordBatchReader>,
    path: PathBuf,
    rank: u32,
    time_filter: Option<(String, String, i64, i64)>,
    schema: Arc<Schema>,
    row_groups_read: usize,
    row_groups_total: usize,
    rows_selected: usize,
    /// Rows of each row group read.
    group_rows: Vec<usize>,
    /// Late columns this file lacks, with the value of their rows.
    filled: Vec<(&'static str, LateDefault)>,
}

impl PartScan {
    pub fn open(part: &PartFile, options: &ScanOptions) -> Result<PartScan, FormatError> {
        no_panic(&part.path, || PartScan::open_inner(part, options, None))
    }

    /// `groups`: only this range of the row groups the scan would read.
    fn open_inner(
        part: &PartFile,
        options: &ScanOptions,
        groups: Option<Range<usize>>,
    ) -> Result<PartScan, FormatError> {
        let file = File::open(&part.path).map_err(|e| FormatError::io(&part.path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| FormatError::parquet(&part.path, e))?;
        check_part_version(
            part,
            builder.metadata().file_metadata().key_value_metadata(),
        )?;
        check_schema(part, builder.schema())?;

        let file_schema = builder.schema().clone();
        let time_columns = part.table.time_columns();
        // Columns to read: the projection plus the time columns if filtering.
        let mut wanted: Vec<String> = match &options.columns {
            Some(cols) => cols.clone(),
            None => file_schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
        };
        let late = part.table.late_columns();
        let is_late = |c: &str| late.iter().any(|(n, _)| *n == c);
        for c in &wanted {
            if file_schema.field_with_name(c).is_err() && !is_late(c) {
                return Err(FormatError::Schema {
                    path: part.path.clone(),
                    table: part.table.to_string(),
                    message: format!("no column `{c}`"),
                });
            }
        }
        let time_filter = match (options.time_range, time_columns) {
            (Some((from, to)), Some((start, end))) => {
                for c in [start, end] {
                    if !wanted.iter().any(|w| w == c) {
                        wanted.push(c.to_string());
                    }
                }
                Some((start.to_string(), end.to_string(), from, to))
            }
            _ => None,
        };
        let indices: Vec<usize> = file_schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| wanted.iter().any(|w| w == f.name()))
            .map(|(i, _)| i)
            .collect();
        let mask = ProjectionMask::roots(builder.parquet_schema(), indices.iter().copied());

        let row_groups: Vec<usize> = match &time_filter {
            Some((start, end, from, to)) => {
                let meta = builder.metadata();
                let start_idx = column_index(meta.file_metadata().schema_descr(), start);
                let end_idx = column_index(meta.file_metadata().schema_descr(), end);
                (0..meta.num_row_groups())
                    .filter(|&g| {
                        row_group_overlaps(meta.row_group(g), start_idx, end_idx, *from, *to)
                    })
                    .collect()
            }
            None => (0..builder.metadata().num_row_groups()).collect(),
        };

        let row_groups: Vec<usize> = match groups {
            Some(range) => row_groups.get(range).unwrap_or(&[]).to_vec(),
            None => row_groups,
        };
        let row_groups_read = row_groups.len();
        let group_rows: Vec<usize> = row_groups
            .iter()
            .map(|&g| builder.metadata().row_group(g).num_rows().max(0) as usize)
            .collect();
        let rows_selected = group_rows.iter().sum();
        let row_groups_total = builder.metadata().num_row_groups();
        let mut fields = vec![Arc::new(Field::new("rank", DataType::UInt32, false))];
        let out_columns: Vec<&String> = match &options.columns {
            Some(cols) => file_schema
                .fields()
                .iter()
                .map(|f| f.name())
                .filter(|n| cols.contains(n))
                .collect(),
            None => file_schema.fields().iter().map(|f| f.name()).collect(),
        };
        for name in out_columns {
            fields.push(Arc::new(
                file_schema.field_with_name(name).expect("checked").clone(),
            ));
        }
        // Columns a later minor version added, absent from this (older)
        // file: filled with the value older rows mean.
        let expected = part.table.file_schema();
        let mut filled = Vec::new();
        for &(name, value) in late {
            let projected = options
                .columns
                .as_ref()
                .is_none_or(|cols| cols.iter().any(|c| c == name));
            if projected && file_schema.field_with_name(name).is_err() {
                fields.push(Arc::new(
                    expected
                        .field_with_name(name)
                        .expect("a table column")
                        .clone(),
                ));
                filled.push((name, value));
            }
        }
        let reader = builder
            .with_projection(mask)
            .with_row_groups(row_groups)
            .with_batch_size(options.batch_size.unwrap_or(64 * 1024))
            .build()
            .map_err(|e| FormatError::parquet(&part.path, e))?;
        Ok(PartScan {
            reader: Some(reader),
            path: part.path.clone(),
            rank: part.rank,
            time_filter,
            schema: Arc::new(Schema::new(fields)),
            row_groups_read,
            row_groups_total,
            rows_selected,
            group_rows,
            filled,
        })
    }

    /// Row groups this scan reads (after time-range pruning).
    pub fn row_groups_read(&self) -> usize {
        self.row_groups_read
    }

    /// Rows in the row groups this scan reads: an upper bound of the rows it yields.
    pub fn rows_selected(&self) -> usize {
        self.rows_selected
    }

    /// Row groups in the part file.
    pub fn row_groups_total(&self) -> usize {
        self.row_groups_total
    }

    fn finish_batch(&self, batch: RecordBatch) -> Result<RecordBatch, FormatError> {
        let batch = match &self.time_filter {
            Some((start, end, from, to)) => {
                let s = batch
                    .column_by_name(start)
                    .expect("projected")
                    .as_primitive::<Int64Type>();
                let e = batch
                    .column_by_name(end)
                    .expect("projected")
                    .as_primitive::<Int64Type>();
                let keep: BooleanArray = s
                    .values()
                    .iter()
                    .zip(e.values().iter())
                    .map(|(&s, &e)| Some(s <= *to && e >= *from))
                    .collect();
                arrow_select::filter::filter_record_batch(&batch, &keep)
                    .map_err(|e| FormatError::parquet(&self.path, e))?
            }
            None => batch,
        };
        let rank: ArrayRef = Arc::new(UInt32Array::from_value(self.rank, batch.num_rows()));
        let mut columns = vec![rank];
        for field in self.schema.fields().iter().skip(1) {
            let late = self.filled.iter().find(|(n, _)| n == field.name());
            columns.push(match late {
                Some((_, value)) => value.array(batch.num_rows()),
                None => batch
                    .column_by_name(field.name())
                    .expect("projected")
                    .clone(),
            });
        }
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| FormatError::parquet(&self.path, e))
    }
}

impl Iterator for PartScan {
    type Item = Result<RecordBatch, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let reader = self.reader.as_mut()?;
            let next = no_panic(&self.path, || Ok(reader.next()));
            let batch = match next {
                Ok(None) => return None,
                Ok(Some(Ok(b))) => b,
                Ok(Some(Err(e))) => return Some(Err(FormatError::parquet(&self.path, e))),
                // The decoder state is unknown after a panic: end this part here.
                Err(e) => {
                    self.reader = None;
                    return Some(Err(e));
                }
            };
            let batch = self.finish_batch(batch);
            match &batch {
                Ok(b) if b.num_rows() == 0 => continue,
                _ => return Some(batch),
            }
        }
    }
}

/// The parquet crate panics on some corrupt files (e.g. a negative column
/// offset in the footer) instead of returning an error. Readers must never
/// panic on bad input, so those panics become a `FormatError` naming the file.
fn no_panic<T>(path: &Path, f: impl FnOnce() -> Result<T, FormatError>) -> Result<T, FormatError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "decoder failure".into());
            Err(FormatError::parquet(path, what))
        }
    }
}

fn column_index(schema: &parquet::schema::types::SchemaDescriptor, name: &str) -> Option<usize> {
    schema.columns().iter().position(|c| c.name() == name)
}

fn row_group_overlaps(
    group: &RowGroupMetaData,
    start_idx: Option<usize>,
    end_idx: Option<usize>,
    from: i64,
    to: i64,
) -> bool {
    let min_start = start_idx.and_then(|i| match group.column(i).statistics() {
        Some(Statistics::Int64(s)) => s.min_opt().copied(),
        _ => None,
    });
    let max_end = end_idx.and_then(|i| match group.column(i).statistics() {
        Some(Statistics::Int64(s)) => s.max_opt().copied(),
        _ => None,
    });
    // Without statistics we cannot prune: keep the group.
    min_start.is_none_or(|s| s <= to) && max_end.is_none_or(|e| e >= from)
}

/// A part written by a future major version of the format is refused, like its manifest.
fn check_part_version(
    part: &PartFile,
    metadata: Option<&Vec<parquet::file::metadata::KeyValue>>,
) -> Result<(), FormatError> {
    let version = metadata
        .into_iter()
        .flatten()
        .find(|kv| kv.key == "hyscope.format_version")
        .and_then(|kv| kv.value.as_deref());
    match version {
        Some(v) => check_version(&part.path, v),
        // Files from other writers (no hyscope metadata) are judged by their schema alone.
        None => Ok(()),
    }
}

/// Every column of the table is there with its type; columns a later minor
/// version added may be missing (files of older versions).
fn check_schema(part: &PartFile, found: &Schema) -> Result<(), FormatError> {
    let expected = part.table.file_schema();
    let late = part.table.late_columns();
    for field in expected.fields() {
        match found.field_with_name(field.name()) {
            Ok(f) if f.data_type() == field.data_type() => {}
            Ok(f) => {
                return Err(FormatError::Schema {
                    path: part.path.clone(),
                    table: part.table.to_string(),
                    message: format!(
                        "column `{}` is {}, expected {}",
                        field.name(),
                        f.data_type(),
                        field.data_type()
                    ),
                });
            }
            Err(_) if late.iter().any(|(n, _)| n == field.name()) => {}
            Err(_) => {
                return Err(FormatError::Schema {
                    path: part.path.clone(),
                    table: part.table.to_string(),
                    message: format!("missing column `{}`", field.name()),
                });
            }
        }
    }
    Ok(())
}

/// Closed parts of a table: `<table>/rank=<r>/part-<k>.parquet` (open `.tmp` parts are skipped).
fn list_parts(dir: &Path, table: Table) -> Result<Vec<PartFile>, FormatError> {
    let table_dir = dir.join(table.dir_name());
    let Ok(entries) = std::fs::read_dir(&table_dir) else {
        return Ok(Vec::new());
    };
    let mut parts = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| FormatError::io(&table_dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rank) = name
            .strip_prefix("rank=")
            .and_then(|r| r.parse::<u32>().ok())
        else {
            continue;
        };
        let rank_dir = entry.path();
        let files = std::fs::read_dir(&rank_dir).map_err(|e| FormatError::io(&rank_dir, e))?;
        for file in files {
            let file = file.map_err(|e| FormatError::io(&rank_dir, e))?;
            let fname = file.file_name().to_string_lossy().into_owned();
            let Some(index) = fname
                .strip_prefix("part-")
                .and_then(|f| f.strip_suffix(".parquet"))
                .and_then(|i| i.parse::<u32>().ok())
            else {
                continue;
            };
            let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
            parts.push(PartFile {
                table,
                rank,
                index,
                path: file.path(),
                bytes,
            });
        }
    }
    parts.sort_by_key(|p| (p.rank, p.index));
    Ok(parts)
}

fn merge_rank_files(dir: &Path, manifest: &mut Manifest) -> Result<(), FormatError> {
    let ranks_dir = dir.join(RANKS_DIR);
    let Ok(entries) = std::fs::read_dir(&ranks_dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let info = RankInfo::read(&path)?;
        match manifest.ranks.iter_mut().find(|r| r.rank == info.rank) {
            // The rank file is written at exit, after the job manifest: it is newer.
            Some(existing) => merge_rank(existing, info),
            None => manifest.ranks.push(info),
        }
    }
    manifest.ranks.sort_by_key(|r| r.rank);
    check_version(&dir.join(MANIFEST_FILE), &manifest.format_version)
}

fn merge_rank(existing: &mut RankInfo, newer: RankInfo) {
    let offsets = std::mem::take(&mut existing.clock_offsets);
    *existing = RankInfo {
        clock_offsets: if newer.clock_offsets.is_empty() {
            offsets
        } else {
            newer.clock_offsets.clone()
        },
        ..newer
    };
}

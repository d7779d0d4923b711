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
use crate::layout::{Layout, RANKS_DIR};
use crate::manifest::{EventCounts, MANIFEST_FILE, MAX_RANKS, Manifest, RankInfo, check_version};
use crate::record_batch::Record;
use crate::schema::{LateDefault, Table};
use crate::writer::{CHECKSUM_BLOCK, CHECKSUM_BYTES_KEY, CHECKSUM_KEY, ROWS_KEY};

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

/// Something wrong with a trace that reading works around: said, never silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file or directory concerned.
    pub path: PathBuf,
    /// The rank concerned, when there is one.
    pub rank: Option<u32>,
    /// What is wrong and what the reader did about it, as a user reads it.
    pub what: String,
    /// True when rows are missing or were not read because of it.
    pub data_lost: bool,
}

/// An opened trace directory.
#[derive(Debug, Clone)]
pub struct Trace {
    pub dir: PathBuf,
    /// The manifest with the rank files merged in, its counts checked
    /// ([`Trace::problems`] says what was repaired).
    pub manifest: Manifest,
    parts: BTreeMap<Table, Vec<PartFile>>,
    problems: Vec<Problem>,
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
        let mut problems = Vec::new();
        let rank_files = merge_rank_files(dir, &mut manifest, &mut problems)?;
        let mut parts = BTreeMap::new();
        for table in Table::ALL {
            parts.insert(table, list_parts(dir, table, &mut problems)?);
        }
        let mut trace = Trace {
            dir: dir.to_path_buf(),
            manifest,
            parts,
            problems,
        };
        trace.validate(&rank_files);
        Ok(trace)
    }

    /// What is wrong with the trace, in the order found: unexpected files,
    /// counts out of range, ranks or rows missing against what the manifest
    /// and the rank files list.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    fn problem(&mut self, path: PathBuf, rank: Option<u32>, what: String, data_lost: bool) {
        self.problems.push(Problem {
            path,
            rank,
            what,
            data_lost,
        });
    }

    /// Check every count of the manifest against sane limits and the data
    /// present, before anything is sized from it, and the rank files' event
    /// counts against the rows of the parts.
    fn validate(&mut self, rank_files: &BTreeMap<u32, PathBuf>) {
        let manifest_path = self.dir.join(MANIFEST_FILE);
        let world = self.manifest.world_size;
        // Processes launched without MPI (an OpenMP program under mpiexec)
        // each take their rank from the launcher while the manifest, written
        // by rank 0 alone, says 1: as many ranks as are present are the job's,
        // so the limit is never below their count (and a bogus rank number
        // far beyond them is still refused).
        let mut seen: std::collections::BTreeSet<u32> = rank_files.keys().copied().collect();
        seen.extend(self.manifest.ranks.iter().map(|r| r.rank));
        seen.extend(self.parts.values().flatten().map(|p| p.rank));
        let limit = if world == 0 || world > MAX_RANKS {
            MAX_RANKS
        } else {
            let counted = u32::try_from(seen.len()).unwrap_or(u32::MAX);
            let raised = world.max(counted.min(MAX_RANKS));
            if raised > world && seen.iter().all(|&r| r < raised) {
                self.manifest.world_size = raised;
                raised
            } else {
                world
            }
        };
        // Rank numbers beyond the job are not ranks of this trace.
        let mut ranks = std::mem::take(&mut self.manifest.ranks);
        ranks.dedup_by_key(|r| r.rank);
        for r in &ranks {
            if r.rank >= limit {
                let path = rank_files.get(&r.rank).unwrap_or(&manifest_path).clone();
                self.problem(
                    path,
                    None,
                    format!(
                        "lists rank {}, beyond the job's {limit} ranks; ignored",
                        r.rank
                    ),
                    false,
                );
            }
        }
        ranks.retain(|r| r.rank < limit);
        for r in &mut ranks {
            let path = rank_files.get(&r.rank).unwrap_or(&manifest_path).clone();
            for fault in r.validate() {
                self.problem(path.clone(), Some(r.rank), fault, false);
            }
        }
        self.manifest.ranks = ranks;
        let mut dropped = Vec::new();
        for parts in self.parts.values_mut() {
            parts.retain(|p| {
                let keep = p.rank < limit;
                if !keep {
                    dropped.push(p.path.clone());
                }
                keep
            });
        }
        for path in dropped {
            let dir = path.parent().unwrap_or(&path).to_path_buf();
            if !self.problems.iter().any(|p| p.path == dir) {
                self.problem(
                    dir,
                    None,
                    format!("rank beyond the job's {limit} ranks; not read"),
                    true,
                );
            }
        }
        let present = self.ranks();
        if world > MAX_RANKS {
            let taken = present.last().map_or(0, |r| r + 1);
            self.problem(
                manifest_path.clone(),
                None,
                format!(
                    "world_size {world} is more than the {MAX_RANKS} ranks hyscope reads; taken as {taken}, the ranks present"
                ),
                false,
            );
            self.manifest.world_size = taken;
        } else if world > 0 && (present.len() as u64) < u64::from(self.manifest.world_size) {
            let world = self.manifest.world_size;
            let missing = u64::from(world) - present.len() as u64;
            self.problem(
                manifest_path.clone(),
                None,
                format!(
                    "the job had {world} ranks but {missing} of them ({}) left no rank file, manifest entry or data",
                    crate::rank_ranges::missing_rank_ranges(&present, world)
                ),
                true,
            );
        }
        if present.is_empty() {
            self.problem(
                self.dir.clone(),
                None,
                "the trace holds no rank and no event: the job ended before writing it (killed, or the disk was full)".into(),
                true,
            );
        }
        self.check_event_counts(rank_files);
    }

    /// The rank files' event counts are the rows each rank wrote: compare
    /// them with the rows of the parts. The job manifest's own counts were
    /// taken before the end, so for a rank without a rank file they are a
    /// lower bound.
    fn check_event_counts(&mut self, rank_files: &BTreeMap<u32, PathBuf>) {
        type Count = fn(&EventCounts) -> u64;
        let tables: [(Table, Count, &str); 3] = [
            (Table::Omp, |e| e.omp, "OpenMP"),
            (Table::Mpi, |e| e.mpi, "MPI"),
            (Table::Samples, |e| e.samples, "sample"),
        ];
        let mut found = Vec::new();
        for info in &self.manifest.ranks {
            let source = rank_files.get(&info.rank);
            for (table, count, label) in tables {
                let claimed = count(&info.events);
                // Parts are sorted by rank: a binary search, not a pass per rank.
                let all = self.parts(table);
                let from = all.partition_point(|p| p.rank < info.rank);
                let to = all.partition_point(|p| p.rank <= info.rank);
                let parts: Vec<&PartFile> = all[from..to].iter().collect();
                let rows: Option<u64> = parts.iter().map(|p| footer_rows(&p.path)).sum();
                // A part whose footer cannot be read is reported when it is read.
                let Some(rows) = rows else { continue };
                let exact = source.is_some();
                if rows == claimed || (!exact && rows >= claimed) {
                    continue;
                }
                let listed_in = match source {
                    Some(p) => relative(&self.dir, p),
                    None => MANIFEST_FILE.to_string(),
                };
                // Where the rank's parts would be: its rank file's layout.
                let layout = source.map_or(Layout::Flat, |p| Layout::of_file(p));
                let dir = layout.part_dir(&self.dir, table, info.rank);
                let held = if parts.is_empty() {
                    format!("{} has no part", relative(&self.dir, &dir))
                } else {
                    format!("its {} part(s) hold {rows}", parts.len())
                };
                let what = if rows < claimed {
                    format!(
                        "{listed_in} lists {claimed} {label} rows but {held}: {} missing",
                        claimed - rows
                    )
                } else {
                    format!(
                        "{listed_in} lists {claimed} {label} rows but {held}: {} more than the rank wrote (another process wrote into this rank?)",
                        rows - claimed
                    )
                };
                found.push((dir, info.rank, what, rows < claimed));
            }
            if info.dropped_events > 0 {
                found.push((
                    source
                        .cloned()
                        .unwrap_or_else(|| self.dir.join(MANIFEST_FILE)),
                    info.rank,
                    format!(
                        "{} events were dropped while recording (the event buffers were full)",
                        info.dropped_events
                    ),
                    true,
                ));
            }
        }
        for (path, rank, what, lost) in found {
            self.problem(path, Some(rank), what, lost);
        }
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
        // Straight into `out`, batch by batch: no per-part vector (at 10 M rows
        // the fresh pages of an intermediate copy cost more than the decoding).
        self.for_each_batch::<R>(options, |rank, rows, reserve| {
            out.reserve(reserve);
            out.extend(rows.into_iter().map(|r| (rank, r)));
        })?;
        Ok(out)
    }

    /// Every row of a table (all columns, with filters) handed to `f` with
    /// its rank, batch by batch: what [`Trace::read_records`] returns without
    /// holding it (a search over a whole trace).
    pub fn for_each_record<R: Record>(
        &self,
        options: &ScanOptions,
        mut f: impl FnMut(u32, R),
    ) -> Result<(), FormatError> {
        self.for_each_batch::<R>(options, |rank, rows, _| {
            rows.into_iter().for_each(|r| f(rank, r))
        })
    }

    /// The (start, end) of every row of a table (with filters; the times of
    /// its time columns, `time_ns` twice for samples), handed to `f` with its
    /// rank: only those two columns are decoded. Nothing for a table without
    /// times.
    pub fn for_each_time(
        &self,
        table: Table,
        options: &ScanOptions,
        mut f: impl FnMut(u32, i64, i64),
    ) -> Result<(), FormatError> {
        let Some((start, end)) = table.time_columns() else {
            return Ok(());
        };
        let options = ScanOptions {
            columns: Some(vec![start.to_string(), end.to_string()]),
            ..options.clone()
        };
        for batch in self.scan(table, &options) {
            let batch = batch?;
            let column = |name: &str| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<Int64Type>())
            };
            let (Some(ranks), Some(s), Some(e)) = (
                batch
                    .column(0)
                    .as_primitive_opt::<arrow_array::types::UInt32Type>(),
                column(start),
                column(end),
            ) else {
                // The scan checked each part's schema: not reached but for a bug.
                return Err(FormatError::Invalid {
                    path: self.dir.join(table.dir_name()),
                    message: format!("a batch without its rank, {start} or {end} column"),
                });
            };
            for i in 0..batch.num_rows() {
                f(ranks.value(i), s.value(i), e.value(i));
            }
        }
        Ok(())
    }

    /// The batches of the parts `options` selects, part after part, with
    /// each part's rank (and, with a part's first batch, the rows it may
    /// still yield).
    fn for_each_batch<R: Record>(
        &self,
        options: &ScanOptions,
        mut sink: impl FnMut(u32, Vec<R>, usize),
    ) -> Result<(), FormatError> {
        for part in self.parts(R::TABLE) {
            if options
                .ranks
                .as_ref()
                .is_some_and(|r| !r.contains(&part.rank))
            {
                continue;
            }
            for_each_part_batch::<R>(part, options, |rows, reserve| {
                sink(part.rank, rows, reserve)
            })?;
        }
        Ok(())
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
    let scan = no_panic(&part.path, || {
        PartScan::open_inner(part, options, None, Verify::CountsOnly)
    })?;
    Ok(scan.group_rows)
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
    let scan = no_panic(&part.path, || {
        PartScan::open_inner(part, &options, groups, Verify::Data)
    })?;
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

/// How much of a part [`PartScan::open_inner`] checks before decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    /// The row counts of the footer (to size buffers from them).
    CountsOnly,
    /// The counts, and the checksums of the bytes the scan will decode.
    Data,
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
        no_panic(&part.path, || {
            PartScan::open_inner(part, options, None, Verify::Data)
        })
    }

    /// `groups`: only this range of the row groups the scan would read.
    fn open_inner(
        part: &PartFile,
        options: &ScanOptions,
        groups: Option<Range<usize>>,
        verify: Verify,
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
        let meta = builder.metadata();
        check_row_counts(part, meta)?;
        if verify == Verify::Data {
            verify_data(part, meta, &row_groups, &indices)?;
        }
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

/// The footer's row counts, before any buffer is sized from them: each row
/// group's rows are the values of each of its (flat) columns, and the total is
/// what the writer counted ([`ROWS_KEY`]), so one damaged count is caught.
fn check_row_counts(
    part: &PartFile,
    meta: &parquet::file::metadata::ParquetMetaData,
) -> Result<(), FormatError> {
    let damaged = |message: String| FormatError::Parquet {
        path: part.path.clone(),
        message,
    };
    let mut total: i64 = 0;
    for (g, group) in meta.row_groups().iter().enumerate() {
        let rows = group.num_rows();
        if let Some(c) = group.columns().iter().find(|c| c.num_values() != rows) {
            return Err(damaged(format!(
                "row group {g} holds {rows} rows but its column `{}` {} values: the footer is damaged",
                c.column_path(),
                c.num_values()
            )));
        }
        total = total.saturating_add(rows.max(0));
    }
    if let Some(rows) = key_value(meta, ROWS_KEY)
        && (rows.parse::<i64>().ok() != Some(total) || meta.file_metadata().num_rows() != total)
    {
        return Err(damaged(format!(
            "the footer counts {total} rows in its row groups and {} in all, the writer wrote {rows}: the footer is damaged",
            meta.file_metadata().num_rows()
        )));
    }
    Ok(())
}

/// A footer key-value of a part.
fn key_value<'m>(meta: &'m parquet::file::metadata::ParquetMetaData, key: &str) -> Option<&'m str> {
    meta.file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_deref()
}

/// How many bytes from its start a part's checksums cover (its data, before
/// the page indexes and the footer); None for a part written without them.
pub fn checksummed_bytes(part: &Path) -> Result<Option<u64>, FormatError> {
    let file = File::open(part).map_err(|e| FormatError::io(part, e))?;
    let meta = no_panic(part, || {
        parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .map_err(|e| FormatError::parquet(part, e))
    })?;
    Ok(key_value(&meta, CHECKSUM_BYTES_KEY).and_then(|b| b.parse().ok()))
}

/// Verify the writer's CRC-32s ([`CHECKSUM_KEY`]) of every block holding a
/// byte of the column chunks `columns` of `row_groups`, before they are
/// decoded. Parts without them (other writers) are read as they are (their
/// page checksums, when they have them, are verified by the decoder).
fn verify_data(
    part: &PartFile,
    meta: &parquet::file::metadata::ParquetMetaData,
    row_groups: &[usize],
    columns: &[usize],
) -> Result<(), FormatError> {
    let Some(sums) = key_value(meta, CHECKSUM_KEY) else {
        return Ok(());
    };
    let damaged = |message: String| FormatError::Parquet {
        path: part.path.clone(),
        message,
    };
    let covered = key_value(meta, CHECKSUM_BYTES_KEY).and_then(|b| b.parse::<u64>().ok());
    let blocks = covered.map(|b| b.div_ceil(CHECKSUM_BLOCK));
    let (Some(covered), true) = (
        covered,
        blocks.is_some_and(|n| Some(n * 8) == Some(sums.len() as u64)),
    ) else {
        return Err(damaged("its checksum record is damaged".into()));
    };
    let mut wanted = std::collections::BTreeSet::new();
    for &g in row_groups {
        let group = meta.row_group(g);
        for &c in columns {
            let Some(chunk) = group.columns().get(c) else {
                continue;
            };
            let (start, len) = chunk.byte_range();
            let end = start.checked_add(len).filter(|&e| e <= covered);
            let Some(end) = end else {
                return Err(damaged(format!(
                    "column `{}` of row group {g} lies outside the checksummed data: the footer is damaged",
                    chunk.column_path()
                )));
            };
            if len > 0 {
                wanted.extend(start / CHECKSUM_BLOCK..=(end - 1) / CHECKSUM_BLOCK);
            }
        }
    }
    let file = File::open(&part.path).map_err(|e| FormatError::io(&part.path, e))?;
    let mut buf = vec![0u8; CHECKSUM_BLOCK as usize];
    for b in wanted {
        let from = b * CHECKSUM_BLOCK;
        let to = (from + CHECKSUM_BLOCK).min(covered);
        let bytes = &mut buf[..(to - from) as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file, bytes, from)
            .map_err(|e| FormatError::io(&part.path, e))?;
        let i = b as usize * 8;
        let expected = sums
            .get(i..i + 8)
            .and_then(|h| u32::from_str_radix(h, 16).ok());
        if expected != Some(crc32fast::hash(bytes)) {
            return Err(damaged(format!(
                "checksum mismatch in bytes {from}..{to}: the file was changed or damaged after it was written"
            )));
        }
    }
    Ok(())
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

/// Closed parts of a table: `<table>/rank=<r>/part-<k>.parquet`, or in the
/// grouped layout `<table>/block=<b>/rank=<r>/part-<k>.parquet`. Anything
/// else found there is a [`Problem`]: an open `.tmp` part (its writer did not
/// finish: its rows are lost), a name that is not a rank or part.
fn list_parts(
    dir: &Path,
    table: Table,
    problems: &mut Vec<Problem>,
) -> Result<Vec<PartFile>, FormatError> {
    let table_dir = dir.join(table.dir_name());
    let mut unexpected = |path: PathBuf, rank: Option<u32>, what: &str, data_lost: bool| {
        problems.push(Problem {
            path,
            rank,
            what: what.to_string(),
            data_lost,
        })
    };
    let mut parts = Vec::new();
    for path in crate::layout::entries(&table_dir) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(rank) = name
            .strip_prefix("rank=")
            .and_then(|r| r.parse::<u32>().ok())
            .filter(|_| path.is_dir())
        else {
            unexpected(
                path,
                None,
                "not a `rank=<r>` directory of the table; not read",
                false,
            );
            continue;
        };
        let rank_dir = path;
        let files = std::fs::read_dir(&rank_dir).map_err(|e| FormatError::io(&rank_dir, e))?;
        for file in files {
            let file = file.map_err(|e| FormatError::io(&rank_dir, e))?;
            let fname = file.file_name().to_string_lossy().into_owned();
            let Some(index) = fname
                .strip_prefix("part-")
                .and_then(|f| f.strip_suffix(".parquet"))
                .and_then(|i| i.parse::<u32>().ok())
            else {
                if fname.ends_with(".parquet.tmp") {
                    unexpected(
                        file.path(),
                        Some(rank),
                        "a part its writer has not closed (still recording, or the process ended while writing it): its rows are not read",
                        true,
                    );
                } else if fname.ends_with(".parquet") {
                    unexpected(
                        file.path(),
                        Some(rank),
                        "not named `part-<k>.parquet` (k below 2^32): not read",
                        true,
                    );
                } else {
                    unexpected(
                        file.path(),
                        Some(rank),
                        "not a part of the table; not read",
                        false,
                    );
                }
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

/// Merge `ranks/rank-<r>.json` (grouped: `ranks/block=<b>/rank-<r>.json`) into the manifest. A rank file whose name is
/// not `rank-<r>.json`, or that claims another rank than its name, is a
/// [`Problem`] and is not merged. Returns the rank file of each merged rank.
fn merge_rank_files(
    dir: &Path,
    manifest: &mut Manifest,
    problems: &mut Vec<Problem>,
) -> Result<BTreeMap<u32, PathBuf>, FormatError> {
    let mut merged = BTreeMap::new();
    // Rank → its entry: one lookup per rank file, not a pass over the ranks.
    let mut index: std::collections::HashMap<u32, usize> = manifest
        .ranks
        .iter()
        .enumerate()
        .rev() // the first entry of a rank listed twice, as a search finds it
        .map(|(i, r)| (r.rank, i))
        .collect();
    for path in crate::layout::entries(&dir.join(RANKS_DIR)) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(named) = name
            .strip_prefix("rank-")
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            let what = if name.contains(".json.tmp") {
                "a rank file its writer never finished (the process ended while writing it); not read"
            } else {
                "not a `rank-<r>.json` rank file; not read"
            };
            problems.push(Problem {
                path,
                rank: None,
                what: what.to_string(),
                data_lost: false,
            });
            continue;
        };
        let info = RankInfo::read(&path)?;
        if info.rank != named {
            problems.push(Problem {
                path,
                rank: Some(named),
                what: format!(
                    "claims rank {} but is named for rank {named}; not merged",
                    info.rank
                ),
                data_lost: false,
            });
            continue;
        }
        match index.get(&info.rank) {
            // The rank file is written at exit, after the job manifest: it is newer.
            Some(&i) => merge_rank(&mut manifest.ranks[i], info),
            None => {
                index.insert(info.rank, manifest.ranks.len());
                manifest.ranks.push(info);
            }
        }
        merged.insert(named, path);
    }
    manifest.ranks.sort_by_key(|r| r.rank);
    // The collector's manifest names rank 0's host only (nothing is gathered
    // to rank 0): the others' come from their rank files, in rank order.
    let mut hosts: std::collections::HashSet<String> = manifest.hosts.iter().cloned().collect();
    for r in &manifest.ranks {
        if !r.host.is_empty() && hosts.insert(r.host.clone()) {
            manifest.hosts.push(r.host.clone());
        }
    }
    check_version(&dir.join(MANIFEST_FILE), &manifest.format_version)?;
    Ok(merged)
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

/// `path` relative to the trace directory, as a user finds it.
fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

/// Rows of a part by its footer; None when the footer cannot be read (the
/// part's read reports that).
fn footer_rows(path: &Path) -> Option<u64> {
    let file = File::open(path).ok()?;
    let meta = no_panic(path, || {
        parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .map_err(|e| FormatError::parquet(path, e))
    })
    .ok()?;
    u64::try_from(meta.file_metadata().num_rows()).ok()
}

//! Conversions between the fixed-size records of [`crate::schema`] and Arrow
//! record batches.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float64Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type,
    UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};

use crate::schema::{
    MpiRecord, OmpKind, OmpRecord, PhaseRecord, SUMMARY_SUM_SQ_COLUMN, SUMMARY_SUM_SQ_MAX,
    SUMMARY_SUM_SQ_MAX_1_10, SampleRecord, SymbolRecord, Table, summary_sum_sq_type,
};

/// A row type of one table.
pub trait Record: Sized {
    const TABLE: Table;
    /// Build a record batch with the table's file schema.
    fn to_batch(rows: &[Self]) -> RecordBatch;
    /// Read rows back from a batch that has (at least) every column of the file schema.
    /// Fails with the name of the first missing or mistyped column.
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>, String>;
}

fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(table.file_schema(), columns).expect("columns match the table schema")
}

/// Typed access to a column by name, with an error naming it.
fn col<'a, T: arrow_array::ArrowPrimitiveType>(
    b: &'a RecordBatch,
    name: &str,
) -> Result<&'a arrow_array::PrimitiveArray<T>, String> {
    b.column_by_name(name)
        .ok_or_else(|| format!("missing column `{name}`"))?
        .as_primitive_opt::<T>()
        .ok_or_else(|| format!("column `{name}` has the wrong type"))
}

fn bool_col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a BooleanArray, String> {
    b.column_by_name(name)
        .ok_or_else(|| format!("missing column `{name}`"))?
        .as_boolean_opt()
        .ok_or_else(|| format!("column `{name}` has the wrong type"))
}

fn str_col<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a StringArray, String> {
    b.column_by_name(name)
        .ok_or_else(|| format!("missing column `{name}`"))?
        .as_string_opt::<i32>()
        .ok_or_else(|| format!("column `{name}` has the wrong type"))
}

/// The `omp` table's column buffers, kept by a writer from one batch to the
/// next: each batch's columns are written into the buffers the previous
/// batch's used, where fresh ones were allocated and, once freed, given back
/// to the system by the allocator and faulted in again for the next batch
/// (the collector encodes its trace at exit, in a process whose encoder
/// threads start with no memory of their own).
#[derive(Default)]
pub struct OmpColumns {
    thread: Vec<u32>,
    kind: Vec<u8>,
    variant: Vec<u8>,
    start_ns: Vec<i64>,
    end_ns: Vec<i64>,
    parallel_id: Vec<u64>,
    task_id: Vec<u64>,
    codeptr: Vec<u64>,
    team_size: Vec<u32>,
    requested_team_size: Vec<u32>,
    count: Vec<u64>,
    chunk_start: Vec<u64>,
    flags: Vec<u32>,
}

impl OmpColumns {
    /// `write` of the batch of `rows`, in the iterator's order (a writer's
    /// sorted rows, read where they are). The buffers come back when `write`
    /// kept no reference to them, else the next batch allocates its own.
    ///
    /// A `summary` row's Σ of squared durations goes to its own column
    /// ([`SUMMARY_SUM_SQ_COLUMN`], null on other rows), and the fields that
    /// hold it in memory ([`OmpRecord::summary_sum_sq`]) are written 0.
    pub fn write<'a, T>(
        &mut self,
        rows: impl Iterator<Item = &'a OmpRecord> + Clone,
        write: impl FnOnce(&RecordBatch) -> T,
    ) -> T {
        // 0 for a summary row, whose in-memory value is part of its sum.
        let unless_summary = |r: &OmpRecord, v| if r.kind == SUMMARY { 0 } else { v };
        macro_rules! columns {
            ($($f:ident: $ty:ident = $get:expr),* $(,)?) => {{
                $(
                    let mut values = std::mem::take(&mut self.$f);
                    values.clear();
                    values.extend(rows.clone().map($get));
                    let $f = $ty::new(values.into(), None);
                )*
                let sum_sq = summary_sum_sq_column(rows.clone());
                let batch = batch(
                    Table::Omp,
                    vec![$(Arc::new($f.clone()) as ArrayRef,)* Arc::new(sum_sq)],
                );
                let result = write(&batch);
                drop(batch);
                $(
                    self.$f = $f.into_parts().1.into_inner().into_vec().unwrap_or_default();
                )*
                result
            }};
        }
        columns!(
            thread: UInt32Array = |r| r.thread,
            kind: UInt8Array = |r| r.kind,
            variant: UInt8Array = |r| r.variant,
            start_ns: Int64Array = |r| r.start_ns,
            end_ns: Int64Array = |r| r.end_ns,
            parallel_id: UInt64Array = |r| unless_summary(r, r.parallel_id),
            task_id: UInt64Array = |r| unless_summary(r, r.task_id),
            codeptr: UInt64Array = |r| r.codeptr,
            team_size: UInt32Array = |r| r.team_size,
            requested_team_size: UInt32Array =
                |r| unless_summary(r, u64::from(r.requested_team_size)) as u32,
            count: UInt64Array = |r| r.count,
            chunk_start: UInt64Array = |r| r.chunk_start,
            flags: UInt32Array = |r| r.flags,
        )
    }
}

const SUMMARY: u8 = OmpKind::Summary as u8;

/// The [`SUMMARY_SUM_SQ_COLUMN`] of `rows`: each `summary` row's sum, null
/// elsewhere (all null, without a pass over the rows' values, in a batch
/// without summary rows: trace mode).
fn summary_sum_sq_column<'a>(rows: impl Iterator<Item = &'a OmpRecord> + Clone) -> Decimal128Array {
    let array = if rows.clone().any(|r| r.kind == SUMMARY) {
        rows.map(|r| (r.kind == SUMMARY).then(|| r.summary_sum_sq() as i128))
            .collect::<Decimal128Array>()
    } else {
        Decimal128Array::new_null(rows.count())
    };
    array.with_data_type(summary_sum_sq_type())
}

/// Each `summary` row's sum of squares from [`SUMMARY_SUM_SQ_COLUMN`]
/// (format 1.11), or, where the column is null or absent, from the form of
/// format 1.10 the row was read with (`task_id` + 2^64 × `requested_team_size`,
/// [`SUMMARY_SUM_SQ_MAX_1_10`] where it overflowed; 0 before 1.10). A value
/// the column cannot mean (negative, or above [`SUMMARY_SUM_SQ_MAX`]) reads
/// as lost.
fn read_summary_sums(rows: &mut [OmpRecord], column: Option<&Decimal128Array>) {
    for (i, r) in rows.iter_mut().enumerate() {
        if r.kind != SUMMARY {
            continue;
        }
        let sum_sq = match column.filter(|c| c.is_valid(i)) {
            Some(c) => {
                u128::try_from(c.value(i)).map_or(SUMMARY_SUM_SQ_MAX, |v| v.min(SUMMARY_SUM_SQ_MAX))
            }
            None => {
                // 1.10: 96 bits; the reader's in-memory form adds the low
                // half of `parallel_id`, which such a row has as 0.
                let old = r.summary_sum_sq() & SUMMARY_SUM_SQ_MAX_1_10;
                if old == SUMMARY_SUM_SQ_MAX_1_10 {
                    SUMMARY_SUM_SQ_MAX
                } else {
                    old
                }
            }
        };
        r.set_summary_sum_sq(sum_sq);
    }
}

impl Record for OmpRecord {
    const TABLE: Table = Table::Omp;

    fn to_batch(rows: &[Self]) -> RecordBatch {
        // The batch keeps the buffers.
        OmpColumns::default().write(rows.iter(), RecordBatch::clone)
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, String> {
        let thread = col::<UInt32Type>(b, "thread")?.values();
        let kind = col::<UInt8Type>(b, "kind")?.values();
        let variant = col::<UInt8Type>(b, "variant")?.values();
        let start = col::<Int64Type>(b, "start_ns")?.values();
        let end = col::<Int64Type>(b, "end_ns")?.values();
        let parallel = col::<UInt64Type>(b, "parallel_id")?.values();
        let task = col::<UInt64Type>(b, "task_id")?.values();
        let codeptr = col::<UInt64Type>(b, "codeptr")?.values();
        let team = col::<UInt32Type>(b, "team_size")?.values();
        let requested = col::<UInt32Type>(b, "requested_team_size")?.values();
        let count = col::<UInt64Type>(b, "count")?.values();
        let chunk_start = col::<UInt64Type>(b, "chunk_start")?.values();
        let flags = col::<UInt32Type>(b, "flags")?.values();
        // Absent from a projection without it (and from parts before 1.11
        // read without the scan, which fills it with nulls).
        let sum_sq = match b.column_by_name(SUMMARY_SUM_SQ_COLUMN) {
            Some(_) => Some(col::<Decimal128Type>(b, SUMMARY_SUM_SQ_COLUMN)?),
            None => None,
        };
        let mut rows: Vec<OmpRecord> = (0..b.num_rows())
            .map(|i| OmpRecord {
                thread: thread[i],
                kind: kind[i],
                variant: variant[i],
                start_ns: start[i],
                end_ns: end[i],
                parallel_id: parallel[i],
                task_id: task[i],
                codeptr: codeptr[i],
                team_size: team[i],
                requested_team_size: requested[i],
                count: count[i],
                chunk_start: chunk_start[i],
                flags: flags[i],
            })
            .collect();
        read_summary_sums(&mut rows, sum_sq);
        Ok(rows)
    }
}

impl Record for MpiRecord {
    const TABLE: Table = Table::Mpi;

    fn to_batch(rows: &[Self]) -> RecordBatch {
        macro_rules! column {
            ($ty:ident, $f:ident) => {
                Arc::new($ty::from_iter_values(rows.iter().map(|r| r.$f))) as ArrayRef
            };
        }
        batch(
            Table::Mpi,
            vec![
                column!(UInt32Array, thread),
                column!(UInt16Array, call),
                column!(Int64Array, start_ns),
                column!(Int64Array, end_ns),
                column!(Int32Array, peer),
                column!(Int32Array, tag),
                column!(UInt64Array, bytes_sent),
                column!(UInt64Array, bytes_recv),
                column!(UInt64Array, comm_id),
                column!(Int32Array, root),
                column!(UInt64Array, request_id),
                Arc::new(BooleanArray::from_iter(
                    rows.iter().map(|r| Some(r.in_parallel)),
                )) as ArrayRef,
                column!(UInt64Array, callsite),
                column!(Int32Array, recv_peer),
                column!(Int32Array, recv_tag),
                column!(UInt32Array, calls),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, String> {
        let thread = col::<UInt32Type>(b, "thread")?.values();
        let call = col::<UInt16Type>(b, "call")?.values();
        let start = col::<Int64Type>(b, "start_ns")?.values();
        let end = col::<Int64Type>(b, "end_ns")?.values();
        let peer = col::<Int32Type>(b, "peer")?.values();
        let tag = col::<Int32Type>(b, "tag")?.values();
        let sent = col::<UInt64Type>(b, "bytes_sent")?.values();
        let recv = col::<UInt64Type>(b, "bytes_recv")?.values();
        let comm = col::<UInt64Type>(b, "comm_id")?.values();
        let root = col::<Int32Type>(b, "root")?.values();
        let request = col::<UInt64Type>(b, "request_id")?.values();
        let in_parallel = bool_col(b, "in_parallel")?;
        let callsite = col::<UInt64Type>(b, "callsite")?.values();
        // Columns of format 1.1: a batch of a 1.0 file has none (the reader
        // adds them; a batch from elsewhere may not).
        let late = |name: &str| -> Result<Option<&[i32]>, String> {
            match b.column_by_name(name) {
                None => Ok(None),
                Some(_) => Ok(Some(col::<Int32Type>(b, name)?.values())),
            }
        };
        let recv_peer = late("recv_peer")?;
        let recv_tag = late("recv_tag")?;
        // Format 1.3.
        let calls = match b.column_by_name("calls") {
            None => None,
            Some(_) => Some(col::<UInt32Type>(b, "calls")?.values()),
        };
        let none = MpiRecord::default();
        Ok((0..b.num_rows())
            .map(|i| MpiRecord {
                thread: thread[i],
                call: call[i],
                start_ns: start[i],
                end_ns: end[i],
                peer: peer[i],
                tag: tag[i],
                bytes_sent: sent[i],
                bytes_recv: recv[i],
                comm_id: comm[i],
                root: root[i],
                request_id: request[i],
                in_parallel: in_parallel.value(i),
                callsite: callsite[i],
                recv_peer: recv_peer.map_or(none.recv_peer, |v| v[i]),
                recv_tag: recv_tag.map_or(none.recv_tag, |v| v[i]),
                calls: calls.map_or(none.calls, |v| v[i]),
            })
            .collect())
    }
}

impl Record for SampleRecord {
    const TABLE: Table = Table::Samples;

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Table::Samples,
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.time_ns))),
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.metric.as_str()),
                )),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.key))),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.value))),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, String> {
        let time = col::<Int64Type>(b, "time_ns")?.values();
        let metric = str_col(b, "metric")?;
        let key = col::<Int64Type>(b, "key")?.values();
        let value = col::<Float64Type>(b, "value")?.values();
        Ok((0..b.num_rows())
            .map(|i| SampleRecord {
                time_ns: time[i],
                metric: metric.value(i).to_string(),
                key: key[i],
                value: value[i],
            })
            .collect())
    }
}

impl Record for SymbolRecord {
    const TABLE: Table = Table::Symbols;

    fn to_batch(rows: &[Self]) -> RecordBatch {
        batch(
            Table::Symbols,
            vec![
                Arc::new(UInt64Array::from_iter_values(
                    rows.iter().map(|r| r.address),
                )),
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.module.as_str()),
                )),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.function.as_deref()),
                )),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.file.as_deref()),
                )),
                Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.line))),
                Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.module_offset))),
                Arc::new(StringArray::from_iter(
                    rows.iter().map(|r| r.module_build_id.as_deref()),
                )),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, String> {
        let address = col::<UInt64Type>(b, "address")?.values();
        let module = str_col(b, "module")?;
        let function = str_col(b, "function")?;
        let file = str_col(b, "file")?;
        let line = col::<UInt32Type>(b, "line")?;
        // Format 1.7: a batch without it (an older file's) knows no offset.
        let offset = match b.column_by_name("module_offset") {
            Some(_) => Some(col::<UInt64Type>(b, "module_offset")?),
            None => None,
        };
        // Format 1.9: a batch without it knows no build-id.
        let build_id = match b.column_by_name("module_build_id") {
            Some(_) => Some(str_col(b, "module_build_id")?),
            None => None,
        };
        let opt = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
        Ok((0..b.num_rows())
            .map(|i| SymbolRecord {
                address: address[i],
                module: module.value(i).to_string(),
                function: opt(function, i),
                file: opt(file, i),
                line: (!line.is_null(i)).then(|| line.value(i)),
                module_offset: offset.and_then(|o| (!o.is_null(i)).then(|| o.value(i))),
                module_build_id: build_id.and_then(|a| opt(a, i)),
            })
            .collect())
    }
}

impl Record for PhaseRecord {
    const TABLE: Table = Table::Phases;

    fn to_batch(rows: &[Self]) -> RecordBatch {
        macro_rules! column {
            ($ty:ident, $f:ident) => {
                Arc::new($ty::from_iter_values(rows.iter().map(|r| r.$f))) as ArrayRef
            };
        }
        batch(
            Table::Phases,
            vec![
                column!(UInt32Array, thread),
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r.name.as_str()),
                )),
                column!(Int64Array, start_ns),
                column!(Int64Array, end_ns),
                column!(UInt32Array, depth),
                column!(UInt8Array, source),
                column!(Int64Array, iteration),
            ],
        )
    }

    fn from_batch(b: &RecordBatch) -> Result<Vec<Self>, String> {
        let thread = col::<UInt32Type>(b, "thread")?.values();
        let name = str_col(b, "name")?;
        let start = col::<Int64Type>(b, "start_ns")?.values();
        let end = col::<Int64Type>(b, "end_ns")?.values();
        let depth = col::<UInt32Type>(b, "depth")?.values();
        let source = col::<UInt8Type>(b, "source")?.values();
        let iteration = col::<Int64Type>(b, "iteration")?.values();
        Ok((0..b.num_rows())
            .map(|i| PhaseRecord {
                thread: thread[i],
                name: name.value(i).to_string(),
                start_ns: start[i],
                end_ns: end[i],
                depth: depth[i],
                source: source[i],
                iteration: iteration[i],
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omp_columns_come_back_for_the_next_batch_unless_the_batch_is_kept() {
        let rows: Vec<OmpRecord> = (0..100u32)
            .map(|i| OmpRecord {
                thread: i % 3,
                start_ns: i64::from(i),
                end_ns: i64::from(i) + 7,
                codeptr: u64::from(i / 10),
                ..OmpRecord::default()
            })
            .collect();
        let want: Vec<OmpRecord> = rows.iter().rev().copied().collect();
        let mut columns = OmpColumns::default();
        for _ in 0..2 {
            let back = columns.write(rows.iter().rev(), |b| OmpRecord::from_batch(b).unwrap());
            assert_eq!(back, want);
            assert!(columns.start_ns.capacity() >= 100, "the buffers came back");
        }
        // A write that keeps the batch keeps its buffers: the next one allocates.
        let kept = columns.write(rows.iter().rev(), RecordBatch::clone);
        assert_eq!(columns.start_ns.capacity(), 0);
        assert_eq!(OmpRecord::from_batch(&kept).unwrap(), want);
        let back = columns.write(rows.iter().rev().take(10), |b| {
            OmpRecord::from_batch(b).unwrap()
        });
        assert_eq!(back, want[..10]);
        // `to_batch` writes the same columns.
        assert_eq!(
            OmpRecord::from_batch(&OmpRecord::to_batch(&rows)).unwrap(),
            rows
        );
    }
}

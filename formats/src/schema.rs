//! The tables of a hyscope trace: their Arrow schemas and the fixed-size
//! records the collector fills on its hot path.
//!
//! Every table is a Hive-partitioned dataset `<table>/rank=<r>/part-<k>.parquet`.
//! The rank is **not** a column inside the files: it is the partition key in the
//! path (and in each file's key-value metadata `hyscope.rank`). Readers of this
//! crate add it back as the first column `rank`; pyarrow, DuckDB and Polars do
//! the same from the path.
//!
//! Times are nanoseconds of the node's monotonic clock (the collector's clock,
//! see the manifest's `clock`); the analyzer maps them to rank 0's clock with the
//! offsets in the manifest. Rows are intervals `[start_ns, end_ns]`; instant
//! events have `start_ns == end_ns`.
//!
//! | table     | one row is                                   | record        |
//! |-----------|----------------------------------------------|---------------|
//! | `omp`     | one OpenMP interval (region, loop, chunk...) | [`OmpRecord`] |
//! | `mpi`     | one MPI call, or one request completion      | [`MpiRecord`] |
//! | `samples` | one value of one sampled metric              | [`SampleRecord`] |
//! | `symbols` | one code address resolved to source          | [`SymbolRecord`] |
//! | `phases`  | one named phase interval of one thread (1.2, optional) | [`PhaseRecord`] |
//!
//! The column-by-column documentation (type, unit, meaning) is in
//! `formats/README.md` and on each record's fields below.

use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The tables of a trace (`phases` is optional: traces before 1.2 have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Omp,
    Mpi,
    Samples,
    Symbols,
    Phases,
}

impl Table {
    pub const ALL: [Table; 5] = [
        Table::Omp,
        Table::Mpi,
        Table::Samples,
        Table::Symbols,
        Table::Phases,
    ];

    /// Directory name of the table inside a trace.
    pub fn dir_name(self) -> &'static str {
        match self {
            Table::Omp => "omp",
            Table::Mpi => "mpi",
            Table::Samples => "samples",
            Table::Symbols => "symbols",
            Table::Phases => "phases",
        }
    }

    /// The schema of the Parquet files of this table (without the `rank` partition column).
    pub fn file_schema(self) -> SchemaRef {
        static SCHEMAS: OnceLock<[SchemaRef; 5]> = OnceLock::new();
        let all = SCHEMAS.get_or_init(|| {
            [
                Arc::new(omp_schema()),
                Arc::new(mpi_schema()),
                Arc::new(samples_schema()),
                Arc::new(symbols_schema()),
                Arc::new(phases_schema()),
            ]
        });
        all[self as usize].clone()
    }

    /// Columns written with DELTA_BINARY_PACKED instead of a dictionary: the
    /// sorted-ish timestamps and ids (benchmarks/formats.md).
    pub fn delta_columns(self) -> &'static [&'static str] {
        match self {
            Table::Omp => &[
                "start_ns",
                "end_ns",
                "parallel_id",
                "task_id",
                "chunk_start",
            ],
            Table::Mpi => &["start_ns", "end_ns", "request_id"],
            Table::Samples => &["time_ns"],
            Table::Symbols => &[],
            Table::Phases => &["start_ns", "end_ns"],
        }
    }

    /// Columns written PLAIN instead of with a dictionary: for `omp`, the
    /// small integer columns that are constant over long runs once rows are
    /// sorted by (thread, kind, start). zstd folds those runs to a few bytes:
    /// slightly smaller than delta or a dictionary, and the writer neither
    /// hashes nor bit-packs them (benchmarks/formats.md).
    pub fn plain_columns(self) -> &'static [&'static str] {
        match self {
            Table::Omp => &[
                "thread",
                "kind",
                "variant",
                "team_size",
                "requested_team_size",
                "flags",
            ],
            _ => &[],
        }
    }

    /// Columns added by a minor version after 1.0, with the value rows of
    /// older files read as (their files lack the column).
    pub fn late_columns(self) -> &'static [(&'static str, LateDefault)] {
        match self {
            // Format 1.1: the receive side of `MPI_Sendrecv(_replace)`;
            // 1.3: the calls a row stands for (folded polls).
            Table::Mpi => &[
                ("recv_peer", LateDefault::Int32(NO_RANK)),
                ("recv_tag", LateDefault::Int32(NO_TAG)),
                ("calls", LateDefault::UInt32(1)),
            ],
            // Format 1.7: where the address is in its module's link-time
            // layout; 1.9: the module's GNU build-id.
            Table::Symbols => &[
                ("module_offset", LateDefault::NullUInt64),
                ("module_build_id", LateDefault::NullUtf8),
            ],
            // Format 1.11: a `summary` row's Σ of squared durations in a
            // column of its own (1.10 kept it in `task_id` and
            // `requested_team_size`, which `OmpRecord::from_batch` still reads).
            Table::Omp => &[(SUMMARY_SUM_SQ_COLUMN, LateDefault::NullDecimal128)],
            _ => &[],
        }
    }

    /// The column used for time-range filtering, if the table has one.
    pub fn time_columns(self) -> Option<(&'static str, &'static str)> {
        match self {
            Table::Omp | Table::Mpi | Table::Phases => Some(("start_ns", "end_ns")),
            Table::Samples => Some(("time_ns", "time_ns")),
            Table::Symbols => None,
        }
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.dir_name())
    }
}

/// The value a column added after 1.0 ([`Table::late_columns`]) has in rows
/// of files written before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateDefault {
    Int32(i32),
    UInt32(u32),
    /// Null: older rows do not know the value (a nullable column).
    NullUInt64,
    /// Null (not known), in a nullable `Utf8` column.
    NullUtf8,
    /// Null, in a nullable column of [`summary_sum_sq_type`].
    NullDecimal128,
}

impl LateDefault {
    /// A column of `rows` copies of the value.
    pub fn array(self, rows: usize) -> arrow_array::ArrayRef {
        match self {
            LateDefault::Int32(v) => Arc::new(arrow_array::Int32Array::from_value(v, rows)),
            LateDefault::UInt32(v) => Arc::new(arrow_array::UInt32Array::from_value(v, rows)),
            LateDefault::NullUInt64 => Arc::new(arrow_array::UInt64Array::new_null(rows)),
            LateDefault::NullUtf8 => Arc::new(arrow_array::StringArray::new_null(rows)),
            LateDefault::NullDecimal128 => Arc::new(
                arrow_array::Decimal128Array::new_null(rows).with_data_type(summary_sum_sq_type()),
            ),
        }
    }
}

fn u64_field(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::UInt64, nullable)
}

fn omp_schema() -> Schema {
    Schema::new(vec![
        Field::new("thread", DataType::UInt32, false),
        Field::new("kind", DataType::UInt8, false),
        Field::new("variant", DataType::UInt8, false),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        u64_field("parallel_id", false),
        u64_field("task_id", false),
        u64_field("codeptr", false),
        Field::new("team_size", DataType::UInt32, false),
        Field::new("requested_team_size", DataType::UInt32, false),
        u64_field("count", false),
        u64_field("chunk_start", false),
        Field::new("flags", DataType::UInt32, false),
        Field::new(SUMMARY_SUM_SQ_COLUMN, summary_sum_sq_type(), true),
    ])
}

/// The type of [`SUMMARY_SUM_SQ_COLUMN`]: an integer of up to 38 decimal
/// digits (Parquet `FIXED_LEN_BYTE_ARRAY(16)` annotated `DECIMAL(38, 0)`),
/// exact, which pyarrow, pandas, DuckDB and Polars read as a number. A sum
/// of squares never exceeds the square of its sum (`chunk_start`, u64 ns):
/// 38 digits hold it for any sum below 10^19 ns (317 years), where a u64
/// would overflow at one interval of 4.3 s and an f64 would round it.
pub fn summary_sum_sq_type() -> DataType {
    DataType::Decimal128(38, 0)
}

fn mpi_schema() -> Schema {
    Schema::new(vec![
        Field::new("thread", DataType::UInt32, false),
        Field::new("call", DataType::UInt16, false),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        Field::new("peer", DataType::Int32, false),
        Field::new("tag", DataType::Int32, false),
        u64_field("bytes_sent", false),
        u64_field("bytes_recv", false),
        u64_field("comm_id", false),
        Field::new("root", DataType::Int32, false),
        u64_field("request_id", false),
        Field::new("in_parallel", DataType::Boolean, false),
        u64_field("callsite", false),
        Field::new("recv_peer", DataType::Int32, false),
        Field::new("recv_tag", DataType::Int32, false),
        Field::new("calls", DataType::UInt32, false),
    ])
}

fn samples_schema() -> Schema {
    Schema::new(vec![
        Field::new("time_ns", DataType::Int64, false),
        Field::new("metric", DataType::Utf8, false),
        Field::new("key", DataType::Int64, false),
        Field::new("value", DataType::Float64, false),
    ])
}

fn symbols_schema() -> Schema {
    Schema::new(vec![
        u64_field("address", false),
        Field::new("module", DataType::Utf8, false),
        Field::new("function", DataType::Utf8, true),
        Field::new("file", DataType::Utf8, true),
        Field::new("line", DataType::UInt32, true),
        u64_field("module_offset", true),
        Field::new("module_build_id", DataType::Utf8, true),
    ])
}

fn phases_schema() -> Schema {
    Schema::new(vec![
        Field::new("thread", DataType::UInt32, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        Field::new("depth", DataType::UInt32, false),
        Field::new("source", DataType::UInt8, false),
        Field::new("iteration", DataType::Int64, false),
    ])
}

/// What kind of OpenMP interval a row of the `omp` table is.
///
/// `variant` qualifies the kind with the raw OMPT enum value (see each kind);
/// the names of those values are given by [`variant_name`].
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OmpKind {
    /// A thread's lifetime. variant = `ompt_thread_t` (1 initial, 2 worker, 3 other).
    Thread = 1,
    /// A parallel region, on the encountering thread. team_size = actual,
    /// requested_team_size = requested, flags = `ompt_parallel_flag_t`.
    Parallel = 2,
    /// An implicit task of a parallel region (one per team member).
    /// count = the thread's index in the team. team_size as reported at begin.
    ImplicitTask = 3,
    /// The initial task of the initial thread.
    InitialTask = 4,
    /// A worksharing construct. variant = `ompt_work_t` (1 loop, 2 sections,
    /// 3 single executor, 4 single other, 5 workshare, 6 distribute, 7 taskloop,
    /// 8 scope, 10 loop static, 11 loop dynamic, 12 loop guided, 13 loop other).
    /// count = trip count reported at begin.
    Work = 5,
    /// A chunk of a worksharing loop given to this thread (`ompt_callback_dispatch`).
    /// chunk_start = first iteration, count = iterations in the chunk.
    /// variant = `ompt_dispatch_t`. The chunk ends when the next one is
    /// dispatched or when the loop ends on this thread.
    Chunk = 6,
    /// A synchronisation region, total time. variant = `ompt_sync_region_t`
    /// (1 barrier, 2 implicit, 3 explicit, 4 implementation, 5 taskwait,
    /// 6 taskgroup, 7 reduction, 8 implicit workshare, 9 implicit parallel, 10 teams).
    Sync = 7,
    /// The waiting part of a synchronisation region (`ompt_callback_sync_region_wait`);
    /// same variant as [`OmpKind::Sync`].
    SyncWait = 8,
    /// Waiting for a mutex: acquire → acquired. variant = `ompt_mutex_t`
    /// (1 lock, 2 test_lock, 3 nest_lock, 4 test_nest_lock, 5 critical, 6 atomic, 7 ordered).
    /// count = wait id. flags = hint.
    MutexWait = 9,
    /// Holding a mutex: acquired → released. Same variant and count as [`OmpKind::MutexWait`].
    MutexHold = 10,
    /// Creation of an explicit task (instant). task_id = the new task,
    /// count = the encountering task's id, flags = `ompt_task_flag_t`.
    TaskCreate = 11,
    /// An execution interval of an explicit task on this thread (from
    /// `ompt_callback_task_schedule`). variant = prior task status at its end
    /// (`ompt_task_status_t`: 1 complete, 2 yield, 3 cancel, 4 detach, 5 early
    /// fulfill, 6 late fulfill, 7 switch).
    TaskRun = 12,
    /// A task dependence (instant). task_id = the dependent task, count = number of
    /// dependences, or for a pair: count = the source task id with flags = 1.
    TaskDependence = 13,
    /// A masked/master construct. flags = filter.
    Masked = 14,
    /// A reduction (`ompt_callback_reduction`), variant = `ompt_sync_region_t`.
    Reduction = 15,
    /// A cancellation (instant). flags = `ompt_cancel_flag_t`.
    Cancel = 16,
    /// A flush (instant).
    Flush = 17,
    /// A lock or nest lock initialised/destroyed (instant). variant = mutex kind,
    /// count = wait id, flags = 1 for destroy.
    LockLifetime = 18,
    /// An aggregate row written in `profile` mode instead of single intervals:
    /// variant = the aggregated kind, count = number of intervals,
    /// start_ns/end_ns = first start and last end, chunk_start = summed duration (ns),
    /// flags = the aggregated kind's variant, team_size = the largest team
    /// (parallel regions). The primary thread's implicit task carries its
    /// region's code address, so each region has its own implicit-task row.
    Summary = 19,
}

impl OmpKind {
    pub const ALL: [OmpKind; 19] = [
        OmpKind::Thread,
        OmpKind::Parallel,
        OmpKind::ImplicitTask,
        OmpKind::InitialTask,
        OmpKind::Work,
        OmpKind::Chunk,
        OmpKind::Sync,
        OmpKind::SyncWait,
        OmpKind::MutexWait,
        OmpKind::MutexHold,
        OmpKind::TaskCreate,
        OmpKind::TaskRun,
        OmpKind::TaskDependence,
        OmpKind::Masked,
        OmpKind::Reduction,
        OmpKind::Cancel,
        OmpKind::Flush,
        OmpKind::LockLifetime,
        OmpKind::Summary,
    ];

    pub fn from_u8(v: u8) -> Option<OmpKind> {
        OmpKind::ALL.get((v as usize).wrapping_sub(1)).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            OmpKind::Thread => "thread",
            OmpKind::Parallel => "parallel",
            OmpKind::ImplicitTask => "implicit_task",
            OmpKind::InitialTask => "initial_task",
            OmpKind::Work => "work",
            OmpKind::Chunk => "chunk",
            OmpKind::Sync => "sync",
            OmpKind::SyncWait => "sync_wait",
            OmpKind::MutexWait => "mutex_wait",
            OmpKind::MutexHold => "mutex_hold",
            OmpKind::TaskCreate => "task_create",
            OmpKind::TaskRun => "task_run",
            OmpKind::TaskDependence => "task_dependence",
            OmpKind::Masked => "masked",
            OmpKind::Reduction => "reduction",
            OmpKind::Cancel => "cancel",
            OmpKind::Flush => "flush",
            OmpKind::LockLifetime => "lock_lifetime",
            OmpKind::Summary => "summary",
        }
    }
}

/// The name of an OMPT enum value stored in `variant`, for a given kind.
pub fn variant_name(kind: OmpKind, variant: u8) -> &'static str {
    match kind {
        OmpKind::Thread => match variant {
            1 => "initial",
            2 => "worker",
            3 => "other",
            _ => "unknown",
        },
        OmpKind::Work => match variant {
            1 => "loop",
            2 => "sections",
            3 => "single_executor",
            4 => "single_other",
            5 => "workshare",
            6 => "distribute",
            7 => "taskloop",
            8 => "scope",
            10 => "loop_static",
            11 => "loop_dynamic",
            12 => "loop_guided",
            13 => "loop_other",
            _ => "unknown",
        },
        OmpKind::Sync | OmpKind::SyncWait | OmpKind::Reduction => match variant {
            1 => "barrier",
            2 => "barrier_implicit",
            3 => "barrier_explicit",
            4 => "barrier_implementation",
            5 => "taskwait",
            6 => "taskgroup",
            7 => "reduction",
            8 => "barrier_implicit_workshare",
            9 => "barrier_implicit_parallel",
            10 => "barrier_teams",
            _ => "unknown",
        },
        OmpKind::MutexWait | OmpKind::MutexHold | OmpKind::LockLifetime => match variant {
            1 => "lock",
            2 => "test_lock",
            3 => "nest_lock",
            4 => "test_nest_lock",
            5 => "critical",
            6 => "atomic",
            7 => "ordered",
            _ => "unknown",
        },
        OmpKind::Chunk => match variant {
            1 => "iteration",
            2 => "section",
            3 => "ws_loop_chunk",
            4 => "taskloop_chunk",
            5 => "distribute_chunk",
            _ => "unknown",
        },
        OmpKind::TaskRun => match variant {
            1 => "complete",
            2 => "yield",
            3 => "cancel",
            4 => "detach",
            5 => "early_fulfill",
            6 => "late_fulfill",
            7 => "switch",
            _ => "unknown",
        },
        _ => "",
    }
}

/// One row of the `omp` table, as the collector records it (fixed size, `Copy`).
/// See [`OmpKind`] for what each field means for each kind; unused fields are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OmpRecord {
    /// Index of the OpenMP thread inside the process, in order of `thread_begin` (0 = initial thread).
    pub thread: u32,
    /// [`OmpKind`] as u8.
    pub kind: u8,
    /// The raw OMPT enum value qualifying the kind.
    pub variant: u8,
    /// Start, ns on the node's monotonic clock.
    pub start_ns: i64,
    /// End, ns on the node's monotonic clock (= start for instants).
    pub end_ns: i64,
    /// Process-unique id of the parallel region (0 = none/serial). In
    /// memory, part of a `summary` row's [`OmpRecord::summary_sum_sq`].
    pub parallel_id: u64,
    /// Process-unique id of the task (implicit or explicit) the interval
    /// belongs to. In memory, part of a `summary` row's
    /// [`OmpRecord::summary_sum_sq`].
    pub task_id: u64,
    /// Code address (`codeptr_ra`) of the construct; resolve through the `symbols` table.
    pub codeptr: u64,
    /// Team size (actual).
    pub team_size: u32,
    /// Team size requested (parallel regions). In memory, part of a
    /// `summary` row's [`OmpRecord::summary_sum_sq`].
    pub requested_team_size: u32,
    /// Kind-specific count: trip count, chunk iterations, wait id, thread index in team...
    pub count: u64,
    /// First iteration of a chunk.
    pub chunk_start: u64,
    /// Kind-specific flags.
    pub flags: u32,
}

/// The `omp` column of a `summary` row's Σ of its intervals' squared
/// durations, ns² (format 1.11; null on every other row).
pub const SUMMARY_SUM_SQ_COLUMN: &str = "duration_sq_sum_ns2";

/// The largest Σ of squared durations a `summary` row holds, 10^38 − 1 (the
/// largest value of [`SUMMARY_SUM_SQ_COLUMN`]): a row at it has lost its sum
/// ([`OmpRecord::summary_sum_sq`]). Not reached below a summed duration of
/// 10^19 ns (317 years).
pub const SUMMARY_SUM_SQ_MAX: u128 = 10u128.pow(38) - 1;

/// Where format 1.10's `summary` rows saturated their sum of squares
/// (2^96 − 1, the 96 bits of `task_id` and `requested_team_size`): such a
/// row has lost its sum.
pub const SUMMARY_SUM_SQ_MAX_1_10: u128 = (1 << 96) - 1;

/// The format version (major, minor) from which `summary` rows carry
/// [`OmpRecord::summary_sum_sq`]; before it, they have none (0).
pub const SUMMARY_SUM_SQ_SINCE: (u32, u32) = (1, 10);

/// The format version from which the sum has its own column,
/// [`SUMMARY_SUM_SQ_COLUMN`] (1.10: in `task_id` and `requested_team_size`).
pub const SUMMARY_SUM_SQ_COLUMN_SINCE: (u32, u32) = (1, 11);

impl OmpRecord {
    /// A `summary` row's Σ of its intervals' squared durations, ns² (the
    /// scatter of the intervals it sums). In the trace it is the column
    /// [`SUMMARY_SUM_SQ_COLUMN`], and the row's `task_id`, `parallel_id`
    /// and `requested_team_size` are 0. In memory (the collector's spool and
    /// the records this crate reads) the record has no field of its own for
    /// it, which would widen every record of the collector's hot path for
    /// the few rows of profile mode: `task_id` holds its bits 0–63,
    /// `requested_team_size` bits 64–95 and the low half of `parallel_id`
    /// bits 96–127, fields a summary row has no other use for (the spools of
    /// format 1.10's collectors fill the first two alike). Read and set it
    /// through these two functions only. [`SUMMARY_SUM_SQ_MAX`] where it was
    /// lost; 0 in traces before [`SUMMARY_SUM_SQ_SINCE`].
    pub fn summary_sum_sq(&self) -> u128 {
        u128::from(self.task_id)
            | (u128::from(self.requested_team_size) << 64)
            | (u128::from(self.parallel_id as u32) << 96)
    }

    /// Set a `summary` row's Σ of squared durations (ns²), saturated at
    /// [`SUMMARY_SUM_SQ_MAX`].
    pub fn set_summary_sum_sq(&mut self, sum_sq: u128) {
        let v = sum_sq.min(SUMMARY_SUM_SQ_MAX);
        self.task_id = v as u64;
        self.requested_team_size = (v >> 64) as u32;
        self.parallel_id = (v >> 96) as u64;
    }
}

/// The MPI calls and events of the `mpi` table's `call` column.
///
/// The numbering is part of the format: append only.
#[allow(non_upper_case_globals)]
pub mod mpi_call {
    macro_rules! calls {
        ($($name:ident = $v:expr),* $(,)?) => {
            $(pub const $name: u16 = $v;)*
            /// `(code, name)` of every call, in code order.
            pub const ALL: &[(u16, &str)] = &[$(($v, stringify!($name))),*];
        };
    }
    calls! {
        // Not a call: completion of a request (instant at completion time), linked by
        // request_id to the call that created it; peer/tag/bytes_recv from the status.
        REQUEST_COMPLETE = 1,
        MPI_Init = 2, MPI_Init_thread = 3, MPI_Finalize = 4, MPI_Abort = 5, MPI_Pcontrol = 6,
        MPI_Send = 10, MPI_Ssend = 11, MPI_Bsend = 12, MPI_Rsend = 13,
        MPI_Isend = 14, MPI_Issend = 15, MPI_Ibsend = 16, MPI_Irsend = 17,
        MPI_Recv = 18, MPI_Irecv = 19, MPI_Sendrecv = 20, MPI_Sendrecv_replace = 21,
        MPI_Probe = 22, MPI_Iprobe = 23, MPI_Mprobe = 24, MPI_Improbe = 25, MPI_Mrecv = 26, MPI_Imrecv = 27,
        MPI_Send_init = 28, MPI_Ssend_init = 29, MPI_Bsend_init = 30, MPI_Rsend_init = 31,
        MPI_Recv_init = 32, MPI_Start = 33, MPI_Startall = 34, MPI_Request_free = 35, MPI_Cancel = 36,
        MPI_Wait = 40, MPI_Waitall = 41, MPI_Waitany = 42, MPI_Waitsome = 43,
        MPI_Test = 44, MPI_Testall = 45, MPI_Testany = 46, MPI_Testsome = 47,
        MPI_Barrier = 50, MPI_Bcast = 51, MPI_Reduce = 52, MPI_Allreduce = 53,
        MPI_Gather = 54, MPI_Gatherv = 55, MPI_Scatter = 56, MPI_Scatterv = 57,
        MPI_Allgather = 58, MPI_Allgatherv = 59, MPI_Alltoall = 60, MPI_Alltoallv = 61, MPI_Alltoallw = 62,
        MPI_Reduce_scatter = 63, MPI_Reduce_scatter_block = 64, MPI_Scan = 65, MPI_Exscan = 66,
        MPI_Ibarrier = 70, MPI_Ibcast = 71, MPI_Ireduce = 72, MPI_Iallreduce = 73,
        MPI_Igather = 74, MPI_Igatherv = 75, MPI_Iscatter = 76, MPI_Iscatterv = 77,
        MPI_Iallgather = 78, MPI_Iallgatherv = 79, MPI_Ialltoall = 80, MPI_Ialltoallv = 81, MPI_Ialltoallw = 82,
        MPI_Ireduce_scatter = 83, MPI_Ireduce_scatter_block = 84, MPI_Iscan = 85, MPI_Iexscan = 86,
        MPI_Comm_dup = 90, MPI_Comm_split = 91, MPI_Comm_split_type = 92, MPI_Comm_create = 93,
        MPI_Comm_free = 94, MPI_Cart_create = 95, MPI_Graph_create = 96, MPI_Dist_graph_create_adjacent = 97,
        MPI_Comm_group = 98, MPI_Group_incl = 99, MPI_Group_excl = 100, MPI_Group_free = 101,
        MPI_Comm_create_group = 102, MPI_Comm_idup = 103, MPI_Cart_sub = 104,
        MPI_Win_create = 110, MPI_Win_allocate = 111, MPI_Win_free = 112, MPI_Win_fence = 113,
        MPI_Win_lock = 114, MPI_Win_unlock = 115, MPI_Put = 116, MPI_Get = 117, MPI_Accumulate = 118,
        MPI_Win_flush = 119, MPI_Win_lock_all = 120, MPI_Win_unlock_all = 121, MPI_Win_flush_all = 122,
        MPI_Get_accumulate = 123, MPI_Fetch_and_op = 124, MPI_Compare_and_swap = 125,
        MPI_File_open = 130, MPI_File_close = 131, MPI_File_read = 132, MPI_File_write = 133,
        MPI_File_read_at = 134, MPI_File_write_at = 135, MPI_File_read_all = 136, MPI_File_write_all = 137,
        MPI_File_read_at_all = 138, MPI_File_write_at_all = 139,
        MPI_File_iread = 140, MPI_File_iwrite = 141, MPI_File_iread_at = 142, MPI_File_iwrite_at = 143,
    }

    /// Name of a call code ("unknown" for codes this version does not know).
    pub fn name(code: u16) -> &'static str {
        ALL.iter()
            .find(|(c, _)| *c == code)
            .map(|(_, n)| *n)
            .unwrap_or("unknown")
    }

    /// The point-to-point send calls, blocking and nonblocking (not
    /// `MPI_Sendrecv`, which also receives).
    pub fn is_send(code: u16) -> bool {
        matches!(
            code,
            MPI_Send
                | MPI_Ssend
                | MPI_Bsend
                | MPI_Rsend
                | MPI_Isend
                | MPI_Issend
                | MPI_Ibsend
                | MPI_Irsend
        )
    }

    /// Code of a call name.
    pub fn code(name: &str) -> Option<u16> {
        ALL.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
    }
}

/// Value of `peer`/`root` when the call has none.
pub const NO_RANK: i32 = -1;
/// Value of `peer` for `MPI_PROC_NULL`.
pub const PROC_NULL: i32 = -2;
/// Value of `peer`/`tag` for `MPI_ANY_SOURCE`/`MPI_ANY_TAG` when unknown at call time.
pub const ANY: i32 = -3;
/// Value of `tag`/`recv_tag` when the call has none.
pub const NO_TAG: i32 = -1;

/// One row of the `mpi` table, as the collector records it (fixed size, `Copy`).
///
/// A call that both sends and receives (`MPI_Sendrecv`, `MPI_Sendrecv_replace`)
/// has its send side in `peer`/`tag`/`bytes_sent` and its receive side in
/// `recv_peer`/`recv_tag`/`bytes_recv`; [`MpiRecord::p2p_endpoints`] says
/// which side(s) of a point-to-point message any row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiRecord {
    /// Index of the calling thread inside the process (same numbering as the `omp` table;
    /// threads unknown to OpenMP get indices after those).
    pub thread: u32,
    /// Call code, see [`mpi_call`].
    pub call: u16,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Peer as a rank of `MPI_COMM_WORLD` ([`NO_RANK`], [`PROC_NULL`], [`ANY`] otherwise);
    /// the destination of a `Sendrecv`.
    pub peer: i32,
    /// The message tag; the send tag of a `Sendrecv`.
    pub tag: i32,
    /// Bytes this rank sends in the call (count × type size; sum over peers for collectives).
    pub bytes_sent: u64,
    /// Bytes this rank receives (from the status at completion for receives).
    pub bytes_recv: u64,
    /// Job-unique communicator id, equal on all member ranks (0 = none, 1 = world, 2 = self).
    pub comm_id: u64,
    /// Root as a world rank for rooted collectives, else [`NO_RANK`].
    pub root: i32,
    /// Process-unique request id for calls that create or complete a request (0 = none).
    pub request_id: u64,
    /// True when the call was made inside an OpenMP parallel region.
    pub in_parallel: bool,
    /// Return address of the call site in the application.
    pub callsite: u64,
    /// Source of the receive side of a `Sendrecv`/`Sendrecv_replace`, as a
    /// world rank resolved from the status ([`PROC_NULL`]; [`ANY`] if the
    /// call failed with a wildcard); [`NO_RANK`] for every other call.
    /// Format 1.1; rows of 1.0 files read as [`NO_RANK`].
    pub recv_peer: i32,
    /// Tag of the receive side of a `Sendrecv`/`Sendrecv_replace`, resolved
    /// from the status; [`NO_TAG`] for every other call (and in 1.0 files).
    pub recv_tag: i32,
    /// The calls this row stands for: 1, or for a row of *folded polls*
    /// (`MPI_Test`/`Testany`/`Testsome`/`Testall`/`Iprobe`/`Improbe` that
    /// found nothing, called again and again by one thread from one call
    /// site on the same requests or message source), the number of those
    /// polls; `start_ns` is the first one's start, `end_ns` the last one's
    /// end. The successful poll that ends such a loop is a row of its own
    /// (`calls` 1). Format 1.3; rows of older files read as 1.
    pub calls: u32,
}

impl Default for MpiRecord {
    /// Every field 0 but the receive side, which is "none" ([`NO_RANK`],
    /// [`NO_TAG`]), and `calls`, 1.
    fn default() -> Self {
        MpiRecord {
            thread: 0,
            call: 0,
            start_ns: 0,
            end_ns: 0,
            peer: 0,
            tag: 0,
            bytes_sent: 0,
            bytes_recv: 0,
            comm_id: 0,
            root: 0,
            request_id: 0,
            in_parallel: false,
            callsite: 0,
            recv_peer: NO_RANK,
            recv_tag: NO_TAG,
            calls: 1,
        }
    }
}

impl MpiRecord {
    /// Whether this row stands for several unsuccessful polls (`calls` > 1).
    pub fn is_folded(&self) -> bool {
        self.calls > 1
    }
}

/// One side of a point-to-point message, as one `mpi` row shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The other rank, in `MPI_COMM_WORLD`; [`ANY`] for a receive posted
    /// with `MPI_ANY_SOURCE` whose source only its completion tells
    /// (`REQUEST_COMPLETE` with the same `request_id`).
    pub peer: i32,
    /// The tag ([`ANY`] as for `peer`).
    pub tag: i32,
    /// Bytes that side moves (for a posted `Irecv`, 0: its completion has them).
    pub bytes: u64,
    /// The communicator's job-unique id.
    pub comm_id: u64,
}

/// The point-to-point sides of one `mpi` row ([`MpiRecord::p2p_endpoints`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// The row sends a message: blocking and nonblocking sends, and the send side of a `Sendrecv`.
    pub send: Option<Endpoint>,
    /// The row receives a message: `Recv`, `Mrecv`, a posted `Irecv`/`Imrecv`,
    /// and the receive side of a `Sendrecv`.
    pub recv: Option<Endpoint>,
}

impl MpiRecord {
    /// Which sides of a point-to-point message this row is: the one
    /// definition every matcher uses. Peers that carry no message
    /// (`MPI_PROC_NULL`, none) give no side; a receive posted with a
    /// wildcard keeps [`ANY`]. Persistent requests (`MPI_Start`) and request
    /// completions are not sides on their own: they belong to the call that
    /// created the request (`request_id`).
    // The mpi_call codes are named like the MPI functions.
    #[allow(non_upper_case_globals)]
    pub fn p2p_endpoints(&self) -> Endpoints {
        use mpi_call::*;
        let side = |peer: i32, tag: i32, bytes: u64| {
            (peer >= 0 || peer == ANY).then_some(Endpoint {
                peer,
                tag,
                bytes,
                comm_id: self.comm_id,
            })
        };
        let send = || side(self.peer, self.tag, self.bytes_sent);
        match self.call {
            call if mpi_call::is_send(call) => Endpoints {
                send: send().filter(|e| e.peer >= 0),
                recv: None,
            },
            MPI_Recv | MPI_Irecv | MPI_Mrecv | MPI_Imrecv => Endpoints {
                send: None,
                recv: side(self.peer, self.tag, self.bytes_recv),
            },
            MPI_Sendrecv | MPI_Sendrecv_replace => Endpoints {
                send: send().filter(|e| e.peer >= 0),
                recv: side(self.recv_peer, self.recv_tag, self.bytes_recv),
            },
            _ => Endpoints::default(),
        }
    }
}

/// One row of the `samples` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRecord {
    pub time_ns: i64,
    /// Metric name, e.g. `energy.pkg.0` or `mem.vmrss`; units in the manifest's `metrics`.
    pub metric: String,
    /// Metric-specific key (peer rank, package index...), -1 when none.
    pub key: i64,
    pub value: f64,
}

/// One row of the `symbols` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolRecord {
    pub address: u64,
    /// Path of the module (executable or shared library) containing the address.
    pub module: String,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// The address's place in its module's link-time layout (format 1.7): the
    /// address less the module's load bias, the same for the same code on every
    /// rank of one binary whatever ASLR did, and what `addr2line -e <module>`
    /// takes. `None` outside every module and in traces before 1.7.
    pub module_offset: Option<u64>,
    /// The module's GNU build-id (format 1.9: its `NT_GNU_BUILD_ID` note in
    /// lowercase hex, as `readelf -n` prints it): two modules with the same
    /// one are one build, whatever their paths. `None` outside every module,
    /// for a module linked without one (`--build-id=none`) or not readable
    /// at exit, and in traces before 1.9.
    pub module_build_id: Option<String>,
}

/// Where a row of the `phases` table comes from (`phases.source`).
pub mod phase_source {
    /// `hyscope_phase_begin` / `hyscope_phase_end` of `hyscope.h` (also the Fortran module).
    pub const API: u8 = 1;
    /// `hyscope_phase_mark`: a marker that ends the thread's previous marker phase.
    pub const MARK: u8 = 2;
    /// `MPI_Pcontrol(level)` with a level other than 0 and 1: `Pcontrol <level>`.
    pub const PCONTROL: u8 = 3;
    /// `omp_control_tool`: the recording paused between `pause` and `start`.
    pub const PAUSE: u8 = 4;
    /// NVTX ranges and marks, through NVTX's injection (`NVTX_INJECTION64_PATH`).
    pub const NVTX: u8 = 5;

    /// The source's name in reports.
    pub fn name(source: u8) -> &'static str {
        match source {
            API => "api",
            MARK => "mark",
            PCONTROL => "pcontrol",
            PAUSE => "pause",
            NVTX => "nvtx",
            _ => "unknown",
        }
    }
}

impl PhaseRecord {
    /// A `hyscope_phase_begin`/`_end` phase of `thread` outside any time step.
    pub fn api(thread: u32, name: &str, start_ns: i64, end_ns: i64, depth: u32) -> PhaseRecord {
        PhaseRecord {
            thread,
            name: name.to_string(),
            start_ns,
            end_ns,
            depth,
            source: phase_source::API,
            iteration: NO_ITERATION,
        }
    }
}

/// Sort phase rows as the `phases` table stores them: by thread, start and
/// depth (an enclosing phase before the ones it holds).
pub fn sort_phases(rows: &mut [PhaseRecord]) {
    rows.sort_by_key(|p| (p.thread, p.start_ns, p.depth));
}

/// `phases.iteration` of a phase that is not an iteration of a time-step loop.
pub const NO_ITERATION: i64 = -1;

/// One row of the `phases` table: a named phase interval of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseRecord {
    /// Thread (same numbering as `omp` and `mpi`).
    pub thread: u32,
    /// The name the application gave the phase.
    pub name: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Phases of this thread open around it when it began (0 = outermost).
    pub depth: u32,
    /// [`phase_source`] code.
    pub source: u8,
    /// The time step it belongs to (`hyscope_iteration`), [`NO_ITERATION`] if none.
    pub iteration: i64,
}

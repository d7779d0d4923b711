//! `manifest.json`: what a trace is a record of.
//!
//! The job-level manifest is written once, last and atomically (temp file +
//! rename), by rank 0. Each rank also writes `ranks/rank-<r>.json` (a
//! [`RankInfo`]) when it exits, with its own event counts, drops and warnings;
//! [`crate::reader::Trace::open`] merges them into `Manifest::ranks`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::FormatError;
use crate::layout::Layout;
use crate::version::{FORMAT_MAJOR, FORMAT_VERSION};

pub const MANIFEST_FILE: &str = "manifest.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub format_version: String,
    /// Version of hyscope that wrote the trace.
    pub tool_version: String,
    /// The application's command line (argv of rank 0).
    pub command: Vec<String>,
    /// Wall-clock start, RFC 3339 (UTC).
    pub start_time: String,
    /// Wall-clock start, ns since the Unix epoch, taken together with `start_clock_ns`.
    pub start_unix_ns: i64,
    /// The collector's clock at `start_unix_ns`.
    pub start_clock_ns: i64,
    pub clock: ClockInfo,
    /// `profile` or `trace`.
    pub mode: String,
    /// Distinct host names, in rank order of first appearance.
    pub hosts: Vec<String>,
    /// Number of MPI ranks (1 for OpenMP-only programs).
    pub world_size: u32,
    /// One entry per rank, sorted by rank.
    pub ranks: Vec<RankInfo>,
    pub mpi: Option<MpiInfo>,
    pub openmp: Option<OpenMpInfo>,
    /// Every sampler, available or not and why.
    pub samplers: Vec<SamplerInfo>,
    /// Unit and meaning of every metric in the `samples` table.
    pub metrics: BTreeMap<String, MetricInfo>,
    /// The `HYSCOPE_*` settings the run used.
    pub config: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockInfo {
    /// `tsc` or `clock_monotonic`.
    pub source: String,
    /// For `tsc`: measured TSC frequency in Hz (timestamps are already converted to ns).
    pub tsc_hz: Option<f64>,
    /// Cost of reading the clock, ns (measured at start).
    pub read_cost_ns: f64,
    /// For `tsc`: the TSC-to-ns mapping was the node's shared one (the same
    /// numbers in every process of the node that started while it was
    /// fresh), not calibrated by this process alone.
    pub shared_calibration: bool,
    /// Names the clock (format 1.5): processes with the same id read the same
    /// nanoseconds at the same instant (one boot, and the same calibration
    /// or the same CLOCK_MONOTONIC), so the offset between them is 0 by
    /// construction and is not measured. None: not known (older traces, or
    /// the boot could not be identified).
    pub id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankInfo {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    /// CPUs the process may run on (its affinity mask at start).
    pub cores: Vec<u32>,
    /// CPUs online on the host (0 = not recorded, traces before this field).
    pub node_cpus: u32,
    /// Each OpenMP thread's affinity mask as the run left it (read before
    /// `MPI_Finalize` and at exit): what `OMP_PROC_BIND`/`OMP_PLACES` made of
    /// `cores`. Empty in traces before this field.
    pub thread_cpus: Vec<ThreadCpus>,
    /// OpenMP threads seen (max thread index + 1).
    pub threads: u32,
    /// Offsets of this rank's clock to rank 0's, measured at MPI_Init and MPI_Finalize.
    pub clock_offsets: Vec<ClockOffset>,
    /// The TSC frequency this rank's clock converts with (Hz; `None` when
    /// the clock is CLOCK_MONOTONIC). Ranks of one node that shared one
    /// calibration show the same value to the last digit.
    pub tsc_hz: Option<f64>,
    /// [`ClockInfo::id`] of this rank's clock (format 1.5).
    pub clock_id: Option<String>,
    pub events: EventCounts,
    /// Events lost because the writer fell behind or memory was exhausted.
    pub dropped_events: u64,
    /// CPU time the collector's writer thread spent while the application
    /// ran (ns): spooling raw events and writing samples, the cost trace mode
    /// adds on cores the application would otherwise use.
    pub writer_cpu_ns: u64,
    /// Wall time spent encoding the spooled events into Parquet parts when
    /// the process ended (ns), after the application's work.
    pub encode_ns: u64,
    /// Wall time of the collector's job-level work in `MPI_Finalize` (ns):
    /// the clock offsets along the tree, this rank file and, at rank 0, the
    /// manifest (format 1.4; 0 without MPI or before).
    pub finalize_ns: u64,
    /// Wall time of the collector's own work at the end of `MPI_Init`, after
    /// the real one returned (ns): this rank's place in the world, the first
    /// clock offsets, the node's RAPL reader, and MPI_T opened where it opens
    /// quickly. The application's `MPI_Init` returns after it, and the
    /// `MPI_Init` row ends there (format 1.6; 0 without MPI or before).
    pub init_ns: u64,
    /// RSS before and after MPI_Init (bytes), the MPI runtime's own footprint.
    pub rss_before_init: Option<u64>,
    pub rss_after_init: Option<u64>,
    /// Every `hyscope:` warning this rank printed.
    pub warnings: Vec<String>,
    /// The communicators this rank was a member of, besides `MPI_COMM_WORLD`
    /// and `MPI_COMM_SELF`, in order of creation (format 1.1; empty before).
    /// [`communicators`] joins the ranks' lists into each communicator's members.
    pub communicators: Vec<CommMembership>,
    /// Process exit status as far as the collector saw it (None if it did not finish cleanly).
    pub finished: bool,
    /// How the process ended ([`ProcessEnd`]); None in traces before this field.
    pub end: Option<ProcessEnd>,
    /// Writing this rank's trace failed (the first error, e.g. "No space left
    /// on device"): its events from then on are lost.
    pub write_error: Option<String>,
    /// The disk of the trace directory was full: events were lost.
    pub disk_full: bool,
    /// The process ended before it encoded its spool; `hyscope record`
    /// encoded it after the job (these counts include what it recovered).
    pub recovered: bool,
    /// The collector's clock when the process's exit began, before the
    /// trace was encoded: the application's end. Intervals the runtime
    /// closes later (OpenMP threads ending at shutdown) end here for the
    /// analysis, so the encoding never counts as run time.
    pub exit_ns: Option<i64>,
    /// Set for a process that a rank started (`fork`, or `fork` and `exec`)
    /// rather than the launcher: it inherited that rank's environment, and
    /// has an id of its own after the job's ranks so nothing it records is
    /// mixed with the rank's. None for the ranks (and traces before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_of: Option<ChildOf>,
    /// The process's command line, for processes whose command is not the
    /// job's (children); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

/// The rank a child process comes from ([`RankInfo::child_of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChildOf {
    /// The rank whose environment the process inherited.
    pub rank: u32,
    /// The process that started it (its parent's pid; a shell in between
    /// makes this the shell).
    pub parent_pid: u32,
}

/// How a process ended, as its rank file tells it: the collector writes
/// `running` early (at `MPI_Init`, or when it starts writing), the exit path
/// `finished`, the end before an `exec` `exec`, its crash handler `signal`
/// or `aborted`; `hyscope record` turns a `running` left behind into
/// `killed` (ended without a word: SIGKILL, or the node went away).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ProcessEnd {
    Running,
    Finished,
    /// The program replaced itself by another (`execve` and the calls built
    /// on it): the collector wrote everything recorded first, as at an exit.
    /// The process goes on under the same pid as the program `path` (as the
    /// call named it; empty where only the end note told it), which records
    /// under an id of its own.
    Exec {
        path: String,
    },
    /// Ended by a signal the collector caught (its handler flushed the events first).
    Signal {
        signal: i32,
    },
    /// Called `MPI_Abort` with this error code.
    Aborted {
        code: i32,
    },
    /// Ended without running any of the collector's code (SIGKILL): events of
    /// its last moments (up to a second) are lost.
    Killed,
}

impl ProcessEnd {
    /// True when the process did not reach its normal end (an exec is one:
    /// everything it recorded was written first).
    pub fn is_partial(&self) -> bool {
        !matches!(self, ProcessEnd::Finished | ProcessEnd::Exec { .. })
    }

    /// What happened, as a user reads it after "rank N ": e.g. "crashed with
    /// signal 11 (SIGSEGV)".
    pub fn describe(&self) -> String {
        match *self {
            ProcessEnd::Running => "did not finish (its trace says it was still running)".into(),
            ProcessEnd::Finished => "finished".into(),
            ProcessEnd::Exec { ref path } if path.is_empty() => "exec'd another program".into(),
            ProcessEnd::Exec { ref path } => format!("exec'd {path}"),
            ProcessEnd::Signal { signal } => {
                let name = signal_name(signal);
                if matches!(signal, 4 | 6 | 7 | 8 | 11) {
                    format!("crashed with signal {signal} ({name})")
                } else {
                    format!("was killed by signal {signal} ({name})")
                }
            }
            ProcessEnd::Aborted { code } => format!("called MPI_Abort (error code {code})"),
            // Nothing of the collector ran at its end: a SIGKILL (the OOM
            // killer's too), an `_exit` and an exec made by a raw system call
            // (the C library's exec functions are the collector's: `Exec`)
            // all look alike from the files left behind.
            ProcessEnd::Killed => "ended without warning (SIGKILL, the OOM killer, _exit, or an \
                                   exec by a raw system call); its last second of events may \
                                   be lost"
                .into(),
        }
    }
}

/// The usual name of a Linux signal number.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        _ => "signal",
    }
}

/// A communicator as one member rank saw it created ([`RankInfo::communicators`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommMembership {
    /// The job-unique id, as in the `mpi` table's `comm_id`.
    pub id: u64,
    /// Number of ranks in it.
    pub size: u32,
    /// This rank's rank in it.
    pub rank: u32,
    /// The call that created it (`MPI_Comm_split`, `MPI_Comm_dup`, `MPI_Cart_create`...).
    pub created_by: String,
    /// `comm_id` of the communicator it was created from (1 = world).
    pub parent: u64,
}

/// A communicator with its members, joined from every rank's
/// [`RankInfo::communicators`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Communicator {
    /// `comm_id` in the `mpi` table.
    pub id: u64,
    /// How it was created and from which, e.g. `MPI_Comm_split #1 of
    /// MPI_COMM_WORLD` (numbered in order of id, i.e. of creation).
    pub name: String,
    /// Size as its members recorded it.
    pub size: u32,
    /// World rank of each of its ranks, in its rank order (shorter than
    /// `size` when rank files are missing; the ranks known are in order).
    pub members: Vec<u32>,
    pub created_by: String,
    pub parent: u64,
}

impl Communicator {
    /// The rank in this communicator of world rank `world`.
    pub fn local_rank(&self, world: u32) -> Option<u32> {
        self.members
            .iter()
            .position(|&m| m == world)
            .map(|i| i as u32)
    }
}

/// The job's communicators (besides world and self), by id, each with its
/// members in its own rank order: the ranks' [`RankInfo::communicators`] joined.
pub fn communicators(ranks: &[RankInfo]) -> Vec<Communicator> {
    let mut by_id: BTreeMap<u64, (Communicator, Vec<(u32, u32)>)> = BTreeMap::new();
    for r in ranks {
        for c in &r.communicators {
            let (comm, members) = by_id.entry(c.id).or_insert_with(|| {
                (
                    Communicator {
                        id: c.id,
                        name: String::new(),
                        size: c.size,
                        members: Vec::new(),
                        created_by: c.created_by.clone(),
                        parent: c.parent,
                    },
                    Vec::new(),
                )
            });
            comm.size = comm.size.max(c.size);
            members.push((c.rank, r.rank));
        }
    }
    let mut list: Vec<Communicator> = by_id
        .into_values()
        .map(|(mut comm, mut members)| {
            members.sort_unstable();
            members.dedup_by_key(|m| m.0);
            comm.members = members.into_iter().map(|(_, world)| world).collect();
            comm
        })
        .collect();
    for i in 0..list.len() {
        let parent = match list[i].parent {
            p @ (WORLD_COMM_ID | SELF_COMM_ID) => comm_name(p, &[]),
            p => list.iter().position(|x| x.id == p).map_or_else(
                || "an unrecorded communicator".into(),
                |k| format!("#{}", k + 1),
            ),
        };
        list[i].name = format!("{} #{} of {parent}", list[i].created_by, i + 1);
    }
    list
}

/// `comm_id` of `MPI_COMM_WORLD`.
pub const WORLD_COMM_ID: u64 = 1;
/// `comm_id` of `MPI_COMM_SELF` (each rank's own).
pub const SELF_COMM_ID: u64 = 2;

/// The name of communicator `id` among `list` ([`communicators`]):
/// `MPI_COMM_WORLD`, `MPI_COMM_SELF`, the communicator's name, or its id in
/// hex for one the trace does not define.
pub fn comm_name(id: u64, list: &[Communicator]) -> String {
    match id {
        0 => "none".into(),
        WORLD_COMM_ID => "MPI_COMM_WORLD".into(),
        SELF_COMM_ID => "MPI_COMM_SELF".into(),
        _ => list
            .iter()
            .find(|c| c.id == id)
            .map_or_else(|| format!("communicator {id:#x}"), |c| c.name.clone()),
    }
}

/// One OpenMP thread's affinity mask ([`RankInfo::thread_cpus`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThreadCpus {
    /// The thread's index (the `thread` column of the `omp` table).
    pub thread: u32,
    pub cpus: Vec<u32>,
}

/// `rank_clock - offset_ns = rank 0 clock` at local time `local_ns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Local clock when measured.
    pub local_ns: i64,
    /// This rank's clock minus rank 0's clock.
    pub offset_ns: i64,
    /// Minimum round trip of the ping-pong that measured it (the error bound is half of it).
    pub rtt_ns: i64,
}

impl ClockOffset {
    /// Half the round trip: how far the true offset may be from `offset_ns`.
    pub fn error_ns(&self) -> i64 {
        self.rtt_ns.max(0) / 2
    }
}

/// The offsets at `a` and `b` (a measured before b) of the line with the
/// least drift that stays within both measurements' error bounds
/// ([`ClockOffset::error_ns`]): where the two bounds overlap, no drift at all
/// (one offset for both, the two measurements' mean moved into the overlap);
/// otherwise the line from the bound of `a` nearest `b` to the bound of `b`
/// nearest `a`. Real clocks drift by parts per million, while on a loaded
/// node a ping-pong's round trip, and so each measurement's error, reaches
/// milliseconds: a straight line through the two measured values would turn
/// that noise into a drift of a percent over a short run. Exact
/// measurements (round trip 0) give back their own values.
pub fn least_drift(a: &ClockOffset, b: &ClockOffset) -> (i64, i64) {
    let (ea, eb) = (a.error_ns(), b.error_ns());
    let lo = (a.offset_ns - ea).max(b.offset_ns - eb);
    let hi = (a.offset_ns + ea).min(b.offset_ns + eb);
    if lo <= hi {
        let mean = ((i128::from(a.offset_ns) + i128::from(b.offset_ns)) / 2) as i64;
        let one = mean.clamp(lo, hi);
        (one, one)
    } else if b.offset_ns > a.offset_ns {
        (a.offset_ns + ea, b.offset_ns - eb)
    } else {
        (a.offset_ns - ea, b.offset_ns + eb)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EventCounts {
    pub omp: u64,
    pub mpi: u64,
    pub samples: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MpiInfo {
    /// `openmpi` or `mpich`.
    pub flavour: String,
    /// `MPI_Get_library_version`.
    pub library_version: String,
    /// `MPI_Get_version`, e.g. "3.1".
    pub standard_version: String,
    /// Requested and provided thread levels (`single`, `funneled`, `serialized`, `multiple`).
    pub thread_level_requested: Option<String>,
    pub thread_level_provided: Option<String>,
    /// Eager limit in bytes per transport (e.g. `vader` → 4096, `tcp` → 65536).
    pub eager_limits: BTreeMap<String, u64>,
    /// Receive-queue specifications (e.g. Open MPI `btl_openib_receive_queues`).
    pub receive_queues: BTreeMap<String, String>,
    /// Transports in use or configured.
    pub transports: Vec<String>,
    /// Every control variable read that matters for protocols and memory, as text.
    pub control_variables: BTreeMap<String, String>,
    /// (1.8) The transport components and libraries mapped in rank 0's
    /// process at the end of `MPI_Init`, which are the ones the library
    /// selected (Open MPI closes those it did not): Open MPI's
    /// `pml_<name>`, `btl_<name>`, `mtl_<name>`, and `ucx` or `libfabric`
    /// where their libraries are loaded. Empty: not known (older traces).
    pub components: Vec<String>,
    /// (1.8) The environment variables of rank 0 that configure the network
    /// transport where no control variable does: `UCX_*` and `FI_*`.
    pub environment: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenMpInfo {
    /// e.g. `LLVM OMP version: 5.0.20140926` (what `ompt_start_tool` received).
    pub runtime_version: String,
    /// Path of the OpenMP runtime library loaded in the process.
    pub runtime_path: String,
    pub ompt_version: u32,
    /// For every OMPT callback name, what `ompt_set_callback` returned
    /// (0 error, 1 never, 2 sometimes, 3 sometimes paired, 4 sometimes unpaired, 5 always).
    pub capabilities: BTreeMap<String, i32>,
    /// What the runtime cannot show, in words (e.g. "no loop chunks (dispatch never)").
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplerInfo {
    /// e.g. `rapl`, `memory`, `mpi_t`, `rdma`, `connections`.
    pub name: String,
    pub available: bool,
    /// Why not, or what it reads (e.g. "perf power PMU: energy-psys reads 0").
    pub reason: String,
    /// Ranks that read it (e.g. one per node for RAPL).
    pub ranks: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricInfo {
    pub unit: String,
    pub description: String,
}

impl Manifest {
    /// Each listed rank's host (the rank files' too, once merged by
    /// `Trace::open`).
    pub fn rank_hosts(&self) -> std::collections::BTreeMap<u32, &str> {
        self.ranks
            .iter()
            .map(|r| (r.rank, r.host.as_str()))
            .collect()
    }

    /// The collector's own work at the end of `MPI_Init` (`RankInfo::init_ns`),
    /// the slowest rank's: ranks do it at once. 0 without MPI.
    pub fn collector_init_ns(&self) -> u64 {
        self.ranks.iter().map(|r| r.init_ns).max().unwrap_or(0)
    }

    /// A manifest with the current format version and nothing else.
    pub fn new() -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            ..Manifest::default()
        }
    }

    /// Write `manifest.json` into `trace_dir` atomically.
    pub fn write(&self, trace_dir: &Path) -> Result<(), FormatError> {
        write_json_atomic(&trace_dir.join(MANIFEST_FILE), self)
    }

    /// Read and version-check `manifest.json` of `trace_dir` (without merging rank files).
    pub fn read(trace_dir: &Path) -> Result<Manifest, FormatError> {
        let path = trace_dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| FormatError::io(&path, e))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| FormatError::Manifest {
                path: path.clone(),
                message: e.to_string(),
            })?;
        check_version(&path, &manifest.format_version)?;
        Ok(manifest)
    }
}

impl RankInfo {
    /// `ranks/rank-<r>.json`: the rank file in the flat layout.
    pub fn path(trace_dir: &Path, rank: u32) -> PathBuf {
        Layout::Flat.rank_file(trace_dir, rank)
    }

    /// Write `ranks/rank-<r>.json` atomically (flat layout).
    pub fn write(&self, trace_dir: &Path) -> Result<(), FormatError> {
        self.write_in(trace_dir, Layout::Flat)
    }

    /// Write the rank file atomically where `layout` puts it.
    pub fn write_in(&self, trace_dir: &Path, layout: Layout) -> Result<(), FormatError> {
        let path = layout.rank_file(trace_dir, self.rank);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| FormatError::io(dir, e))?;
        }
        write_json_atomic(&path, self)
    }

    /// Write the rank file (where `layout` puts it) only if no process holds
    /// this rank yet: the one atomic step by which a process claims its id in
    /// the trace. Ok(false) when another process wrote it first.
    pub fn claim_in(&self, trace_dir: &Path, layout: Layout) -> Result<bool, FormatError> {
        let path = layout.rank_file(trace_dir, self.rank);
        let dir = path.parent().unwrap_or(trace_dir);
        std::fs::create_dir_all(dir).map_err(|e| FormatError::io(dir, e))?;
        let tmp = path.with_extension(format!("json.tmp.claim.{}", std::process::id()));
        write_json_atomic(&tmp, self)?;
        // A hard link fails if the name exists: whole content, or nothing.
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(FormatError::io(&path, e)),
        }
    }

    pub fn read(path: &Path) -> Result<RankInfo, FormatError> {
        let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| FormatError::Invalid {
            path: path.to_path_buf(),
            message: format!("invalid rank file: {e}"),
        })
    }
}

/// Refuse any format version whose major part differs from ours.
pub fn check_version(path: &Path, version: &str) -> Result<(), FormatError> {
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    if major == Some(FORMAT_MAJOR) {
        Ok(())
    } else {
        Err(FormatError::Version {
            path: path.to_path_buf(),
            found: version.to_string(),
        })
    }
}

/// Serialize `value` to `path` through a temporary file and a rename, so readers
/// never see a half-written file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), FormatError> {
    // One temporary name per call: two threads of a process may write the same
    // file at once (the early rank file and the exit path), and a shared name
    // would let one rename the other's file away.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("json.tmp.{}.{n}", std::process::id()));
    let text = serde_json::to_vec_pretty(value).map_err(|e| FormatError::Manifest {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut file = std::fs::File::create(&tmp).map_err(|e| FormatError::io(&tmp, e))?;
    let written = file
        .write_all(&text)
        .and_then(|_| close_checked(file))
        .map_err(|e| FormatError::io(&tmp, e))
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| FormatError::io(path, e)));
    if written.is_err() {
        // A full disk or a failed rename: leave no half-written file that a
        // reader would list as a rank file its writer never finished.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Close `file` and say whether the close failed. Network file systems (NFS,
/// Lustre) may report a full disk or an exceeded quota only there, and
/// dropping a `File` ignores it. Not a flush to the disk (`fsync`): these
/// files only have to outlive the process, which the page cache does, while an
/// `fsync` per rank file waits for the disk in the application's `MPI_Init`,
/// `MPI_Finalize` and exit (on a shared file system, every rank at once).
fn close_checked(file: std::fs::File) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let fd = file.into_raw_fd();
    // SAFETY: `fd` is owned (taken from the File) and closed exactly once.
    if unsafe { libc::close(fd) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    // Linux has closed the descriptor even then; the data went to the page cache.
    if e.kind() == std::io::ErrorKind::Interrupted {
        return Ok(());
    }
    Err(e)
}

/// This host's name, as rank files record it (`host`).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The most ranks a reader accepts (`world_size`, rank numbers): far above any
/// MPI job run so far, far below what would make a rank-indexed table absurd.
pub const MAX_RANKS: u32 = 1 << 24;

/// The most OpenMP threads per rank a reader accepts (`threads`, thread indices).
pub const MAX_THREADS: u32 = 1 << 16;

/// The most events of one kind a rank file may count (2^48: years of
/// recording at a billion events per second), so sums over ranks never overflow.
pub const MAX_EVENTS: u64 = 1 << 48;

/// The largest clock value or offset a reader accepts, ns (2^61 ns ≈ 73 years
/// of uptime): sums and differences of two of them never overflow an `i64`.
pub const MAX_CLOCK_NS: i64 = 1 << 61;

/// The largest drift between two clock offsets of one rank a reader accepts
/// (1 %, the least drift within their error bounds: [`least_drift`]): real
/// clocks drift by parts per million, a larger slope is damage.
pub const MAX_CLOCK_DRIFT: f64 = 0.01;

/// The largest ping-pong round trip of a clock offset a reader accepts, ns.
pub const MAX_CLOCK_RTT_NS: i64 = 10_000_000_000;

impl RankInfo {
    /// Check the counts of a rank file that readers size memory or compute
    /// times from, repairing what cannot be used: `threads` above
    /// [`MAX_THREADS`] becomes 0 (unknown: the rows tell), event counts above
    /// [`MAX_EVENTS`] become 0 (unknown), absurd clock
    /// offsets are dropped (the rank's times stay uncorrected). Returns what
    /// was wrong, in words, one line per fault.
    pub fn validate(&mut self) -> Vec<String> {
        let mut faults = Vec::new();
        if self.threads > MAX_THREADS {
            faults.push(format!(
                "claims {} OpenMP threads (more than {MAX_THREADS}); the count is ignored",
                self.threads
            ));
            self.threads = 0;
        }
        let e = self.events;
        if [e.omp, e.mpi, e.samples, self.dropped_events]
            .iter()
            .any(|&n| n > MAX_EVENTS)
        {
            faults.push(format!(
                "counts {} OpenMP, {} MPI, {} sample rows and {} dropped events (more than {MAX_EVENTS}); the counts are ignored",
                e.omp, e.mpi, e.samples, self.dropped_events
            ));
            self.events = EventCounts::default();
            self.dropped_events = 0;
        }
        if let Some(fault) = clock_offsets_fault(&self.clock_offsets) {
            faults.push(format!(
                "{fault}; its clock offsets are ignored (its times are not corrected to rank 0's clock)"
            ));
            self.clock_offsets.clear();
        }
        faults
    }
}

/// Why a rank's clock offsets cannot be used, if they cannot.
fn clock_offsets_fault(offsets: &[ClockOffset]) -> Option<String> {
    for o in offsets {
        if o.offset_ns.unsigned_abs() > MAX_CLOCK_NS as u64
            || o.local_ns.unsigned_abs() > MAX_CLOCK_NS as u64
        {
            return Some(format!(
                "clock offset {} ns at local time {} ns is out of range (±{MAX_CLOCK_NS})",
                o.offset_ns, o.local_ns
            ));
        }
        if !(0..=MAX_CLOCK_RTT_NS).contains(&o.rtt_ns) {
            return Some(format!(
                "clock offset round trip {} ns is out of range (0..={MAX_CLOCK_RTT_NS})",
                o.rtt_ns
            ));
        }
    }
    let mut points: Vec<&ClockOffset> = offsets.iter().collect();
    points.sort_by_key(|o| o.local_ns);
    for w in points.windows(2) {
        let span = (w[1].local_ns - w[0].local_ns) as f64;
        // The least drift the measurements allow: within their error bounds,
        // a change is noise, not drift.
        let (from, to) = least_drift(w[0], w[1]);
        let change = (to - from) as f64;
        if span > 0.0 && (change / span).abs() > MAX_CLOCK_DRIFT {
            return Some(format!(
                "clock offsets drift by at least {change} ns over {span} ns, beyond their round trips' bounds (more than {} %)",
                MAX_CLOCK_DRIFT * 100.0
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset(local_ns: i64, offset_ns: i64, rtt_ns: i64) -> ClockOffset {
        ClockOffset {
            local_ns,
            offset_ns,
            rtt_ns,
        }
    }

    fn rank_with(offsets: Vec<ClockOffset>) -> RankInfo {
        RankInfo {
            clock_offsets: offsets,
            ..RankInfo::default()
        }
    }

    /// A write that fails (here the rename: the name is a directory that is
    /// not empty; on a full disk, the write) leaves no temporary behind, which
    /// a reader would list as a rank file its writer never finished.
    #[test]
    fn a_failed_atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rank-0.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"x").unwrap();
        let written = write_json_atomic(&path, &RankInfo::default());
        assert!(written.is_err(), "{written:?}");
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["rank-0.json".to_string()]);
    }

    #[test]
    fn noise_within_the_round_trips_is_not_drift() {
        // Measured on a loaded node, 0.3 s apart: the values' slope is 0.93 %,
        // but each is ±1.9 and ±2.4 ms and the bounds overlap: kept.
        let mut r = rank_with(vec![
            offset(11_677_338_149_293, 994_447, 3_778_893),
            offset(11_677_642_403_953, -1_845_291, 4_771_727),
        ]);
        assert_eq!(r.validate(), Vec::<String>::new());
        assert_eq!(r.clock_offsets.len(), 2);
    }

    #[test]
    fn drift_beyond_the_round_trips_is_refused() {
        // 5 ms apart over 0.3 s with bounds of ±1 µs: at least 1.7 %.
        let mut r = rank_with(vec![
            offset(1_000_000_000, 0, 2_000),
            offset(1_300_000_000, 5_000_000, 2_000),
        ]);
        let faults = r.validate();
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert!(
            faults[0].starts_with("clock offsets drift by at least 4998000 ns over 300000000 ns"),
            "{faults:?}"
        );
        assert!(r.clock_offsets.is_empty());
    }

    #[test]
    fn exact_measurements_keep_their_values() {
        let (a, b) = (offset(0, 10, 0), offset(100, 30, 0));
        assert_eq!(least_drift(&a, &b), (10, 30));
        // Equal values, any bounds: no drift, that value.
        let (a, b) = (offset(0, -7, 50), offset(100, -7, 10));
        assert_eq!(least_drift(&a, &b), (-7, -7));
    }
}

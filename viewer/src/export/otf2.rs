//! OTF2 export through the OTF2 C library (Debian `libotf2-trace-dev`), loaded
//! at run time with `dlopen` so hyscope builds and runs without it.
//!
//! The archive is `OUT/traces.otf2` (+ `OUT/traces/`, `OUT/traces.def`), the
//! layout Score-P uses, so Vampir, Scalasca and `otf2-print OUT/traces.otf2` open it.
//!
//! Mapping:
//! - system tree: machine → one node per host; one location group (process) per
//!   rank; one location (CPU thread) per OpenMP thread, id `rank << 16 | thread`;
//! - every `omp` row and every MPI call is a region Enter/Leave pair (regions are
//!   named like the Perfetto slices, with the source file and line when resolved).
//!   OTF2 needs properly nested regions per location: an interval that would
//!   cross its enclosing one is clipped to it and counted (libomp's late
//!   join-barrier ends are such, see docs/platform.md, "Quirks");
//! - MPI: `MpiSend`/`MpiIsend`/`MpiRecv`/`MpiIrecvRequest` inside the call, the
//!   request completions as `MpiIsendComplete`/`MpiIrecv`, collectives as
//!   `MpiCollectiveBegin`/`End`; a `Sendrecv` is an `MpiSend` after its Enter
//!   and an `MpiRecv` before its Leave (`MpiRecord::p2p_endpoints`);
//! - communicators: `MPI_COMM_WORLD`, `MPI_COMM_SELF`, and each communicator
//!   the ranks' files list (`manifest::communicators`: members in their rank
//!   order, the call that created it, its parent). Every message and
//!   collective is written on its own communicator with peers and roots as
//!   ranks in it; one whose communicator the trace does not define (created
//!   by a call hyscope does not wrap, or a rank file missing) is written on
//!   `MPI_COMM_WORLD` with world ranks;
//! - samples: one metric (double, absolute point) per sampled metric name, written
//!   on the rank's thread 0;
//! - phases: one region per phase name (paradigm `USER`, role `CODE`, flag
//!   `PHASE`, as Score-P writes its user phases), entered and left on the
//!   phase's thread around what happened inside it; a phase crossing the end
//!   of the one it began in (an NVTX start/end range) is clipped to it like
//!   any interval.
//! - a row of folded unsuccessful polls (trace `mpi.calls` > 1) is one
//!   Enter/Leave pair whose Enter carries the attribute `polls_folded`
//!   (uint32, attribute 0) with the number of polls;
//! - the run's window ([`super::run_notes`]) and the notes, as archive
//!   properties (`otf2-print -I`): `HYSCOPE::RUN_WINDOW_START` and
//!   `HYSCOPE::RUN_WINDOW_END` in the archive's ticks (ns since its time 0),
//!   `HYSCOPE::RUN_DURATION_NS`, and `HYSCOPE::NOTE_1`, `_2`, … in words.

// The mpi_call codes are named like the MPI functions.
#![allow(non_upper_case_globals)]

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, c_char, c_void};
use std::path::Path;

use anyhow::{Context, bail};
use hyscope_analyzer::aligned::endpoints::{RequestKind, endpoints};
use hyscope_format::{
    Communicator, Endpoint, MpiRecord, OmpKind, SELF_COMM_ID, WORLD_COMM_ID, mpi_call,
};

use super::{RankRows, TraceData, omp_label};

// Constant values of OTF2 3.0 (checked against /usr/include/otf2 with a C program).
const FILEMODE_WRITE: u8 = 0;
const SUBSTRATE_POSIX: u8 = 1;
const COMPRESSION_NONE: u8 = 1;
const CHUNK_SIZE_EVENTS: u64 = 1 << 20;
const CHUNK_SIZE_DEFS: u64 = 4 << 20;
const FLUSH: u8 = 1;
const UNDEFINED_U32: u32 = u32::MAX;
const UNDEFINED_TIMESTAMP: u64 = u64::MAX;

const ROLE_UNKNOWN: u8 = 0;
const ROLE_FUNCTION: u8 = 1;
const ROLE_CODE: u8 = 4;
const ROLE_LOOP: u8 = 3;
const ROLE_PARALLEL: u8 = 5;
const ROLE_SECTIONS: u8 = 6;
const ROLE_WORKSHARE: u8 = 8;
const ROLE_SINGLE: u8 = 9;
const ROLE_MASTER: u8 = 11;
const ROLE_CRITICAL: u8 = 12;
const ROLE_BARRIER: u8 = 15;
const ROLE_IMPLICIT_BARRIER: u8 = 16;
const ROLE_TASK: u8 = 20;
const ROLE_TASK_CREATE: u8 = 21;
const ROLE_TASK_WAIT: u8 = 22;
const ROLE_COLL_ONE2ALL: u8 = 23;
const ROLE_COLL_ALL2ONE: u8 = 24;
const ROLE_COLL_ALL2ALL: u8 = 25;
const ROLE_COLL_OTHER: u8 = 26;
const ROLE_POINT2POINT: u8 = 28;
const ROLE_ARTIFICIAL: u8 = 31;

const PARADIGM_USER: u8 = 1;
const PARADIGM_OPENMP: u8 = 3;
const PARADIGM_MPI: u8 = 4;
const PARADIGM_MEASUREMENT_SYSTEM: u8 = 6;

const REGION_FLAG_PHASE: u32 = 1 << 1;

const LOCATION_GROUP_TYPE_PROCESS: u8 = 1;
const LOCATION_TYPE_CPU_THREAD: u8 = 1;
const GROUP_TYPE_COMM_LOCATIONS: u8 = 4;
const GROUP_TYPE_COMM_GROUP: u8 = 5;
const GROUP_TYPE_COMM_SELF: u8 = 6;

const METRIC_TYPE_OTHER: u8 = 0;
const METRIC_ABSOLUTE_POINT: u8 = 17;
const TYPE_DOUBLE: u8 = 10;
const TYPE_UINT32: u8 = 3;
/// The attribute of a folded row's Enter: the polls it stands for.
const ATTR_POLLS: u32 = 0;
const ATTR_POLLS_NAME: &str = "polls_folded";
const ATTR_POLLS_DESCRIPTION: &str =
    "unsuccessful MPI polls this call stands for (hyscope trace column mpi.calls)";
const BASE_DECIMAL: u8 = 1;
const METRIC_SYNCHRONOUS: u8 = 1;
const RECORDER_KIND_ABSTRACT: u8 = 1;

const COLL_BARRIER: u8 = 0;
const COLL_BCAST: u8 = 1;
const COLL_GATHER: u8 = 2;
const COLL_GATHERV: u8 = 3;
const COLL_SCATTER: u8 = 4;
const COLL_SCATTERV: u8 = 5;
const COLL_ALLGATHER: u8 = 6;
const COLL_ALLGATHERV: u8 = 7;
const COLL_ALLTOALL: u8 = 8;
const COLL_ALLTOALLV: u8 = 9;
const COLL_ALLTOALLW: u8 = 10;
const COLL_ALLREDUCE: u8 = 11;
const COLL_REDUCE: u8 = 12;
const COLL_REDUCE_SCATTER: u8 = 13;
const COLL_SCAN: u8 = 14;
const COLL_EXSCAN: u8 = 15;
const COLL_REDUCE_SCATTER_BLOCK: u8 = 16;

/// OTF2 id of MPI_COMM_WORLD.
const WORLD_COMM: u32 = 0;
/// OTF2 id of MPI_COMM_SELF, when the trace uses it.
const SELF_COMM: u32 = 1;

/// Which OTF2 communicator an MPI row is on, and ranks in it. OTF2 wants
/// definitions numbered without gaps: world is 0, self 1 when used, then
/// `TraceData::communicators` in order; the group of communicator k is k + 1
/// (group 0 is the locations).
struct Comms<'a> {
    /// comm_id → (OTF2 id, communicator).
    by_id: HashMap<u64, (u32, &'a Communicator)>,
    /// Whether any row is on MPI_COMM_SELF.
    self_used: bool,
    /// OTF2 id of the first of `TraceData::communicators`.
    first: u32,
    /// World ranks left out for a damaged part: a message to or from one
    /// gets no message event (its other side is not read).
    left_out: Vec<u32>,
}

impl<'a> Comms<'a> {
    fn new(data: &'a TraceData) -> Comms<'a> {
        let self_used = data.self_used;
        let first = if self_used { SELF_COMM + 1 } else { SELF_COMM };
        Comms {
            by_id: data
                .communicators
                .iter()
                .enumerate()
                .map(|(i, c)| (c.id, (first + i as u32, c)))
                .collect(),
            self_used,
            first,
            left_out: data
                .ranks
                .iter()
                .filter(|r| r.left_out.is_some())
                .map(|r| r.rank)
                .collect(),
        }
    }

    /// Whether the world rank `peer` is left out for a damaged part.
    fn left_out(&self, peer: i32) -> bool {
        u32::try_from(peer).is_ok_and(|p| self.left_out.contains(&p))
    }

    /// The OTF2 communicator of `comm_id` (self, a defined one, else world).
    fn id(&self, comm_id: u64) -> u32 {
        match comm_id {
            SELF_COMM_ID => SELF_COMM,
            _ => self.by_id.get(&comm_id).map_or(WORLD_COMM, |c| c.0),
        }
    }

    /// The OTF2 communicator of `comm_id` and world rank `peer` as a rank
    /// in it (`None` for no rank); world and world ranks when the
    /// communicator is not defined or `peer` is not in it.
    fn place(&self, comm_id: u64, peer: i32) -> (u32, Option<u32>) {
        let Ok(world) = u32::try_from(peer) else {
            return (self.id(comm_id), None);
        };
        if comm_id == SELF_COMM_ID {
            return (SELF_COMM, Some(0));
        }
        match self.by_id.get(&comm_id) {
            Some((id, c)) => match c.local_rank(world) {
                Some(local) => (*id, Some(local)),
                None => (WORLD_COMM, Some(world)),
            },
            None => (WORLD_COMM, Some(world)),
        }
    }
}

type P = *mut c_void;

#[repr(C)]
struct FlushCallbacks {
    pre_flush: extern "C" fn(P, u8, u64, P, bool) -> u8,
    post_flush: extern "C" fn(P, u8, u64) -> u64,
}

extern "C" fn pre_flush(_: P, _: u8, _: u64, _: P, _: bool) -> u8 {
    FLUSH
}

/// OTF2 keeps the pointer, not a copy: the callbacks must outlive the archive.
static FLUSH_CALLBACKS: FlushCallbacks = FlushCallbacks {
    pre_flush,
    post_flush,
};

extern "C" fn post_flush(_: P, _: u8, _: u64) -> u64 {
    // No buffer-flush records are written (the export is not measuring itself).
    0
}

macro_rules! otf2_api {
    ($($name:ident : fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The OTF2 functions hyscope uses, resolved from the shared library.
        #[allow(non_snake_case)]
        struct Api {
            _handle: P,
            $($name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Api {
            fn load() -> anyhow::Result<Api> {
                let mut handle = std::ptr::null_mut();
                for name in ["libotf2.so", "libopen-trace-format2.so.10", "libotf2.so.10"] {
                    let c = CString::new(name).expect("no NUL");
                    // SAFETY: dlopen with a valid C string.
                    handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
                    if !handle.is_null() {
                        break;
                    }
                }
                if handle.is_null() {
                    bail!(
                        "OTF2 export needs the OTF2 library (libotf2.so), which was not found; \
                         on Debian: apt-get install libotf2-trace-dev"
                    );
                }
                Ok(Api {
                    _handle: handle,
                    $($name: {
                        let c = CString::new(stringify!($name)).expect("no NUL");
                        // SAFETY: handle is a live dlopen handle.
                        let sym = unsafe { libc::dlsym(handle, c.as_ptr()) };
                        if sym.is_null() {
                            bail!("the OTF2 library has no {}: version 3.x is needed", stringify!($name));
                        }
                        // SAFETY: the symbol has this C signature in OTF2 3.x (OTF2_*.h).
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(sym) }
                    },)*
                })
            }
        }
    };
}

otf2_api! {
    OTF2_Archive_Open: fn(*const c_char, *const c_char, u8, u64, u64, u8, u8) -> P;
    OTF2_Archive_Close: fn(P) -> i32;
    OTF2_Archive_SetFlushCallbacks: fn(P, *const FlushCallbacks, P) -> i32;
    OTF2_Archive_SetSerialCollectiveCallbacks: fn(P) -> i32;
    OTF2_Archive_SetCreator: fn(P, *const c_char) -> i32;
    OTF2_Archive_SetDescription: fn(P, *const c_char) -> i32;
    OTF2_Archive_SetProperty: fn(P, *const c_char, *const c_char, bool) -> i32;
    OTF2_Archive_OpenEvtFiles: fn(P) -> i32;
    OTF2_Archive_CloseEvtFiles: fn(P) -> i32;
    OTF2_Archive_OpenDefFiles: fn(P) -> i32;
    OTF2_Archive_CloseDefFiles: fn(P) -> i32;
    OTF2_Archive_GetEvtWriter: fn(P, u64) -> P;
    OTF2_Archive_CloseEvtWriter: fn(P, P) -> i32;
    OTF2_Archive_GetDefWriter: fn(P, u64) -> P;
    OTF2_Archive_CloseDefWriter: fn(P, P) -> i32;
    OTF2_Archive_GetGlobalDefWriter: fn(P) -> P;
    OTF2_Archive_CloseGlobalDefWriter: fn(P, P) -> i32;
    OTF2_GlobalDefWriter_WriteClockProperties: fn(P, u64, u64, u64, u64) -> i32;
    OTF2_GlobalDefWriter_WriteString: fn(P, u32, *const c_char) -> i32;
    OTF2_GlobalDefWriter_WriteRegion: fn(P, u32, u32, u32, u32, u8, u8, u32, u32, u32, u32) -> i32;
    OTF2_GlobalDefWriter_WriteSystemTreeNode: fn(P, u32, u32, u32, u32) -> i32;
    OTF2_GlobalDefWriter_WriteLocationGroup: fn(P, u32, u32, u8, u32, u32) -> i32;
    OTF2_GlobalDefWriter_WriteLocation: fn(P, u64, u32, u8, u64, u32) -> i32;
    OTF2_GlobalDefWriter_WriteGroup: fn(P, u32, u32, u8, u8, u32, u32, *const u64) -> i32;
    OTF2_GlobalDefWriter_WriteComm: fn(P, u32, u32, u32, u32, u32) -> i32;
    OTF2_GlobalDefWriter_WriteMetricMember: fn(P, u32, u32, u32, u8, u8, u8, u8, i64, u32) -> i32;
    OTF2_GlobalDefWriter_WriteMetricClass: fn(P, u32, u8, *const u32, u8, u8) -> i32;
    OTF2_GlobalDefWriter_WriteAttribute: fn(P, u32, u32, u32, u8) -> i32;
    OTF2_AttributeList_New: fn() -> P;
    OTF2_AttributeList_Delete: fn(P) -> i32;
    OTF2_AttributeList_AddUint32: fn(P, u32, u32) -> i32;
    OTF2_EvtWriter_Enter: fn(P, P, u64, u32) -> i32;
    OTF2_EvtWriter_Leave: fn(P, P, u64, u32) -> i32;
    OTF2_EvtWriter_MpiSend: fn(P, P, u64, u32, u32, u32, u64) -> i32;
    OTF2_EvtWriter_MpiIsend: fn(P, P, u64, u32, u32, u32, u64, u64) -> i32;
    OTF2_EvtWriter_MpiIsendComplete: fn(P, P, u64, u64) -> i32;
    OTF2_EvtWriter_MpiIrecvRequest: fn(P, P, u64, u64) -> i32;
    OTF2_EvtWriter_MpiRecv: fn(P, P, u64, u32, u32, u32, u64) -> i32;
    OTF2_EvtWriter_MpiIrecv: fn(P, P, u64, u32, u32, u32, u64, u64) -> i32;
    OTF2_EvtWriter_MpiCollectiveBegin: fn(P, P, u64) -> i32;
    OTF2_EvtWriter_MpiCollectiveEnd: fn(P, P, u64, u8, u32, u32, u64, u64) -> i32;
    OTF2_EvtWriter_Metric: fn(P, P, u64, u32, u8, *const u8, *const u64) -> i32;
}

fn check(code: i32, what: &str) -> anyhow::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        bail!("OTF2 {what} failed (OTF2 error code {code})")
    }
}

/// What the OTF2 export wrote.
#[derive(Debug, Default)]
pub(crate) struct Otf2Stats {
    pub enters: u64,
    pub sends: u64,
    pub recvs: u64,
    pub collectives: u64,
    pub metrics: u64,
    pub locations: usize,
    /// Intervals whose end was clipped to their enclosing interval.
    pub clipped: u64,
}

/// One event of a location, in the order it is written.
#[derive(Debug, Clone, Copy)]
enum Ev {
    Enter(u32),
    /// The Enter of a row of folded polls: region, polls.
    EnterPolls(u32, u32),
    Leave(u32),
    Send {
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    Isend {
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    IsendComplete {
        req: u64,
    },
    IrecvRequest {
        req: u64,
    },
    Recv {
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    Irecv {
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    CollBegin,
    CollEnd {
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        recv: u64,
    },
    Metric {
        metric: u32,
        value: f64,
    },
}

/// An interval of a location before nesting: region, times, and the MPI events
/// to write right after its Enter and right before its Leave.
struct Interval {
    start: u64,
    end: u64,
    region: u32,
    /// Folded polls the interval stands for (`mpi.calls`; 0 or 1: a single call).
    polls: u32,
    after_enter: Vec<Ev>,
    before_leave: Vec<Ev>,
}

/// Interned strings and regions of the global definitions.
#[derive(Default)]
struct Defs {
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    /// (name, role, paradigm, file, line, flags) by id.
    regions: Vec<(u32, u8, u8, u32, u32, u32)>,
    region_ids: HashMap<(String, u8, u8, u32, u32, u32), u32>,
}

impl Defs {
    fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    /// A region's id; the user paradigm's regions are the phases (flag `PHASE`).
    fn region(
        &mut self,
        name: &str,
        role: u8,
        paradigm: u8,
        file: Option<&str>,
        line: Option<u32>,
    ) -> u32 {
        let flags = if paradigm == PARADIGM_USER {
            REGION_FLAG_PHASE
        } else {
            0
        };
        let file = match file {
            Some(f) => self.string(f),
            None => UNDEFINED_U32,
        };
        let line = line.unwrap_or(0);
        let key = (name.to_string(), role, paradigm, file, line, flags);
        if let Some(&id) = self.region_ids.get(&key) {
            return id;
        }
        let name_id = self.string(name);
        let id = self.regions.len() as u32;
        self.regions
            .push((name_id, role, paradigm, file, line, flags));
        self.region_ids.insert(key, id);
        id
    }
}

fn location_id(rank: u32, thread: u32) -> u64 {
    (u64::from(rank) << 16) | u64::from(thread & 0xffff)
}

fn omp_role(kind: Option<OmpKind>, variant: u8) -> u8 {
    match kind {
        Some(OmpKind::Parallel) => ROLE_PARALLEL,
        Some(OmpKind::ImplicitTask | OmpKind::InitialTask | OmpKind::TaskRun) => ROLE_TASK,
        Some(OmpKind::Work) => match variant {
            2 => ROLE_SECTIONS,
            3 | 4 => ROLE_SINGLE,
            5 | 6 => ROLE_WORKSHARE,
            _ => ROLE_LOOP,
        },
        Some(OmpKind::Chunk) => ROLE_LOOP,
        Some(OmpKind::Sync | OmpKind::SyncWait) => match variant {
            2 | 4 | 8 | 9 => ROLE_IMPLICIT_BARRIER,
            5 | 6 => ROLE_TASK_WAIT,
            _ => ROLE_BARRIER,
        },
        Some(OmpKind::MutexWait | OmpKind::MutexHold) => ROLE_CRITICAL,
        Some(OmpKind::TaskCreate) => ROLE_TASK_CREATE,
        Some(OmpKind::Masked) => ROLE_MASTER,
        Some(OmpKind::Thread) => ROLE_ARTIFICIAL,
        _ => ROLE_UNKNOWN,
    }
}

/// OTF2 collective operation and region role of an MPI collective call.
fn collective(call: u16) -> Option<(u8, u8)> {
    use mpi_call::*;
    Some(match call {
        MPI_Barrier | MPI_Ibarrier => (COLL_BARRIER, ROLE_BARRIER),
        MPI_Bcast | MPI_Ibcast => (COLL_BCAST, ROLE_COLL_ONE2ALL),
        MPI_Gather | MPI_Igather => (COLL_GATHER, ROLE_COLL_ALL2ONE),
        MPI_Gatherv | MPI_Igatherv => (COLL_GATHERV, ROLE_COLL_ALL2ONE),
        MPI_Scatter | MPI_Iscatter => (COLL_SCATTER, ROLE_COLL_ONE2ALL),
        MPI_Scatterv | MPI_Iscatterv => (COLL_SCATTERV, ROLE_COLL_ONE2ALL),
        MPI_Allgather | MPI_Iallgather => (COLL_ALLGATHER, ROLE_COLL_ALL2ALL),
        MPI_Allgatherv | MPI_Iallgatherv => (COLL_ALLGATHERV, ROLE_COLL_ALL2ALL),
        MPI_Alltoall | MPI_Ialltoall => (COLL_ALLTOALL, ROLE_COLL_ALL2ALL),
        MPI_Alltoallv | MPI_Ialltoallv => (COLL_ALLTOALLV, ROLE_COLL_ALL2ALL),
        MPI_Alltoallw | MPI_Ialltoallw => (COLL_ALLTOALLW, ROLE_COLL_ALL2ALL),
        MPI_Allreduce | MPI_Iallreduce => (COLL_ALLREDUCE, ROLE_COLL_ALL2ALL),
        MPI_Reduce | MPI_Ireduce => (COLL_REDUCE, ROLE_COLL_ALL2ONE),
        MPI_Reduce_scatter | MPI_Ireduce_scatter => (COLL_REDUCE_SCATTER, ROLE_COLL_ALL2ALL),
        MPI_Reduce_scatter_block | MPI_Ireduce_scatter_block => {
            (COLL_REDUCE_SCATTER_BLOCK, ROLE_COLL_ALL2ALL)
        }
        MPI_Scan | MPI_Iscan => (COLL_SCAN, ROLE_COLL_OTHER),
        MPI_Exscan | MPI_Iexscan => (COLL_EXSCAN, ROLE_COLL_OTHER),
        _ => return None,
    })
}

/// Nest intervals with a stack and turn them into ordered events; an interval
/// crossing the end of its enclosing one is clipped to it.
fn nest(mut intervals: Vec<Interval>, clipped: &mut u64) -> Vec<(u64, Ev)> {
    intervals.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out = Vec::with_capacity(intervals.len() * 2);
    let mut stack: Vec<Interval> = Vec::new();
    let close = |iv: Interval, out: &mut Vec<(u64, Ev)>| {
        for e in iv.before_leave {
            out.push((iv.end, e));
        }
        out.push((iv.end, Ev::Leave(iv.region)));
    };
    for mut iv in intervals {
        while stack.last().is_some_and(|top| top.end <= iv.start) {
            close(stack.pop().expect("non-empty"), &mut out);
        }
        if let Some(top) = stack.last()
            && iv.end > top.end
        {
            iv.end = top.end;
            *clipped += 1;
        }
        out.push((
            iv.start,
            match iv.polls {
                0 | 1 => Ev::Enter(iv.region),
                n => Ev::EnterPolls(iv.region, n),
            },
        ));
        for e in std::mem::take(&mut iv.after_enter) {
            out.push((iv.start, e));
        }
        stack.push(iv);
    }
    while let Some(iv) = stack.pop() {
        close(iv, &mut out);
    }
    out
}

pub(crate) fn write(data: &TraceData, out: &Path) -> anyhow::Result<Otf2Stats> {
    if out.exists() {
        bail!("{} already exists; refusing to overwrite it", out.display());
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let api = Api::load()?;
    let mut defs = Defs::default();
    // Interned first: the attribute definition's strings.
    defs.string(ATTR_POLLS_NAME);
    defs.string(ATTR_POLLS_DESCRIPTION);
    let mut stats = Otf2Stats::default();
    let comms = Comms::new(data);

    let dir =
        CString::new(out.as_os_str().as_encoded_bytes()).context("output path has a NUL byte")?;
    let name = CString::new("traces").expect("no NUL");
    // SAFETY: valid C strings; the archive handle is checked below and closed at the end.
    let archive = unsafe {
        (api.OTF2_Archive_Open)(
            dir.as_ptr(),
            name.as_ptr(),
            FILEMODE_WRITE,
            CHUNK_SIZE_EVENTS,
            CHUNK_SIZE_DEFS,
            SUBSTRATE_POSIX,
            COMPRESSION_NONE,
        )
    };
    if archive.is_null() {
        bail!("OTF2 could not create an archive in {}", out.display());
    }
    let result = write_archive(&api, archive, data, &comms, &mut defs, &mut stats)
        .and_then(|()| write_properties(&api, archive, data, &stats));
    // SAFETY: archive is open.
    let closed = unsafe { (api.OTF2_Archive_Close)(archive) };
    result?;
    check(closed, "closing the archive")?;
    Ok(stats)
}

/// Every location's events before they are written: intervals (nested into
/// Enter/Leave pairs) and instants (request completions, metric values), at
/// times relative to the export's time 0.
struct Events {
    base: i64,
    intervals: BTreeMap<(u32, u32), Vec<Interval>>,
    instants: BTreeMap<(u32, u32), Vec<(u64, Ev)>>,
}

impl Events {
    fn t(&self, ns: i64) -> u64 {
        (ns - self.base).max(0) as u64
    }

    /// One interval per OpenMP record of a rank, in the region of its code location.
    fn omp(&mut self, data: &TraceData, rows: &RankRows, defs: &mut Defs) {
        let rank = rows.rank;
        // The region of each (kind, variant, code address) of the rank, its
        // label made once (as the Perfetto export does): demangling a name
        // per record had been most of the export's time.
        let mut regions: HashMap<(u8, u8, u64), _> = HashMap::new();
        for rec in &rows.omp {
            let region = *regions
                .entry((rec.kind, rec.variant, rec.codeptr))
                .or_insert_with(|| {
                    let label = omp_label(data, rank, rec);
                    defs.region(
                        &label.name,
                        omp_role(OmpKind::from_u8(rec.kind), rec.variant),
                        PARADIGM_OPENMP,
                        label.file,
                        label.line,
                    )
                });
            let interval = Interval {
                start: self.t(rec.start_ns),
                end: self.t(rec.end_ns),
                region,
                polls: 0,
                after_enter: Vec::new(),
                before_leave: Vec::new(),
            };
            self.intervals
                .entry((rank, rec.thread))
                .or_default()
                .push(interval);
        }
    }

    /// One interval per phase of rank `rank`, on its thread.
    fn phases(&mut self, data: &TraceData, rank: u32, defs: &mut Defs) {
        for (_, p) in data.phases.iter().filter(|(r, _)| *r == rank) {
            let region = defs.region(&p.name, ROLE_CODE, PARADIGM_USER, None, None);
            let interval = Interval {
                start: self.t(p.start_ns),
                end: self.t(p.end_ns),
                region,
                polls: 0,
                after_enter: Vec::new(),
                before_leave: Vec::new(),
            };
            self.intervals
                .entry((rank, p.thread))
                .or_default()
                .push(interval);
        }
    }

    /// One interval per MPI call with its messages and collective; request
    /// completions as instants.
    fn mpi(&mut self, rows: &RankRows, comms: &Comms, defs: &mut Defs, stats: &mut Otf2Stats) {
        let rank = rows.rank;
        // Requests of Irecv/Isend calls per rank, to turn completions into OTF2
        // records; persistent ones too (each MPI_Start is an Isend or an Irecv
        // request, as the aligned layer pairs them).
        let mut requests: HashMap<(u32, u64), &MpiRecord> = HashMap::new();
        for r in &rows.mpi {
            if (super::is_send(r.call) || endpoints(r).request.is_some()) && r.request_id != 0 {
                requests.insert((rank, r.request_id), r);
            }
        }
        for r in &rows.mpi {
            let loc = (rank, r.thread);
            if r.call == mpi_call::REQUEST_COMPLETE {
                let Some(req) = requests.get(&(rank, r.request_id)) else {
                    continue;
                };
                if let Some(ev) = completion(r, req, comms, stats) {
                    let at = self.t(r.start_ns);
                    self.instants.entry(loc).or_default().push((at, ev));
                }
                continue;
            }
            let interval = self.mpi_call(r, rank, &requests, comms, defs, stats);
            self.intervals.entry(loc).or_default().push(interval);
        }
    }

    /// An MPI call's interval: its region, the sends and the collective's
    /// begin right after its Enter, the receive and the collective's end
    /// right before its Leave.
    fn mpi_call(
        &self,
        r: &MpiRecord,
        rank: u32,
        requests: &HashMap<(u32, u64), &MpiRecord>,
        comms: &Comms,
        defs: &mut Defs,
        stats: &mut Otf2Stats,
    ) -> Interval {
        let name = mpi_call::name(r.call);
        let coll = collective(r.call);
        let sides = r.p2p_endpoints();
        let role = match coll {
            Some((_, role)) => role,
            None if sides.send.is_some() || sides.recv.is_some() => ROLE_POINT2POINT,
            None => ROLE_FUNCTION,
        };
        let region = defs.region(name, role, PARADIGM_MPI, None, None);
        let mut after_enter = Vec::new();
        let mut before_leave = Vec::new();
        use mpi_call::*;
        // An MPI_Start of a persistent request is an Isend or an Irecv request.
        let started = match r.call {
            MPI_Start if r.request_id != 0 => requests
                .get(&(rank, r.request_id))
                .and_then(|q| endpoints(q).request),
            _ => None,
        };
        // A started persistent send carries its envelope on the MPI_Start row.
        let send = match started {
            Some(RequestKind::PersistentSend) if r.peer >= 0 => Some(Endpoint {
                peer: r.peer,
                tag: r.tag,
                bytes: r.bytes_sent,
                comm_id: r.comm_id,
            }),
            _ => sides.send,
        };
        if let Some(s) = send
            && !comms.left_out(s.peer)
            && let (comm, Some(peer)) = comms.place(s.comm_id, s.peer)
        {
            let (tag, bytes) = (s.tag as u32, s.bytes);
            after_enter.push(match r.call {
                MPI_Isend | MPI_Issend | MPI_Ibsend | MPI_Irsend | MPI_Start => Ev::Isend {
                    peer,
                    comm,
                    tag,
                    bytes,
                    req: r.request_id,
                },
                _ => Ev::Send {
                    peer,
                    comm,
                    tag,
                    bytes,
                },
            });
            stats.sends += 1;
        }
        if r.call == MPI_Irecv || started == Some(RequestKind::PersistentRecv) {
            after_enter.push(Ev::IrecvRequest { req: r.request_id });
        } else if let Some(recv) = sides.recv
            && r.call != MPI_Imrecv
            && !comms.left_out(recv.peer)
            && let (comm, Some(peer)) = comms.place(recv.comm_id, recv.peer)
        {
            before_leave.push(Ev::Recv {
                peer,
                comm,
                tag: recv.tag as u32,
                bytes: recv.bytes,
            });
            stats.recvs += 1;
        }
        if let Some((op, _)) = coll {
            after_enter.push(Ev::CollBegin);
            let (comm, root) = comms.place(r.comm_id, r.root);
            before_leave.push(Ev::CollEnd {
                op,
                comm,
                root: root.unwrap_or(UNDEFINED_U32),
                sent: r.bytes_sent,
                recv: r.bytes_recv,
            });
            stats.collectives += 1;
        }
        Interval {
            start: self.t(r.start_ns),
            end: self.t(r.end_ns),
            region,
            polls: r.calls,
            after_enter,
            before_leave,
        }
    }

    /// Rank `rank`'s metric values on its thread 0; `metric_ids` gets one id
    /// per metric name (and key), in order of first appearance.
    fn metrics(
        &mut self,
        data: &TraceData,
        rank: u32,
        metric_ids: &mut BTreeMap<String, u32>,
        stats: &mut Otf2Stats,
    ) {
        for (_, s) in data.samples.iter().filter(|(r, _)| *r == rank) {
            let name = if s.key >= 0 {
                format!("{}[{}]", s.metric, s.key)
            } else {
                s.metric.clone()
            };
            let next = metric_ids.len() as u32;
            let id = *metric_ids.entry(name).or_insert(next);
            let at = self.t(s.time_ns);
            self.instants.entry((rank, 0)).or_default().push((
                at,
                Ev::Metric {
                    metric: id,
                    value: s.value,
                },
            ));
            stats.metrics += 1;
        }
    }

    /// Rank `rank`'s events per location, in time order.
    fn into_streams(
        mut self,
        rank: u32,
        stats: &mut Otf2Stats,
    ) -> BTreeMap<(u32, u32), Vec<(u64, Ev)>> {
        // Every rank's thread 0 exists as a location (metrics and MPI records need one).
        self.intervals.entry((rank, 0)).or_default();
        for loc in self.instants.keys() {
            self.intervals.entry(*loc).or_default();
        }
        let mut streams = BTreeMap::new();
        for (loc, intervals) in self.intervals {
            let mut evs = nest(intervals, &mut stats.clipped);
            if let Some(mut extra) = self.instants.remove(&loc) {
                extra.sort_by_key(|e| e.0);
                evs.extend(extra);
                // Stable: nested events keep their order, loose ones go after equal times.
                evs.sort_by_key(|e| e.0);
            }
            streams.insert(loc, evs);
        }
        streams
    }
}

/// The completion of an Isend (`IsendComplete`) or of an Irecv (`Irecv`,
/// with the status's real source and tag); `None` for a receive whose peer
/// has no place in its communicator.
fn completion(r: &MpiRecord, req: &MpiRecord, comms: &Comms, stats: &mut Otf2Stats) -> Option<Ev> {
    if !matches!(
        endpoints(req).request,
        Some(RequestKind::Recv | RequestKind::PersistentRecv)
    ) {
        // No Isend was written to a rank left out: no completion either.
        let to = endpoints(req).send.map_or(req.peer, |s| s.peer);
        return (!comms.left_out(to)).then_some(Ev::IsendComplete { req: r.request_id });
    }
    // The status names the real source and tag.
    let (src, tag) = if r.peer >= 0 {
        (r.peer, r.tag)
    } else {
        (req.peer, req.tag)
    };
    if comms.left_out(src) {
        return None;
    }
    let (comm, Some(peer)) = comms.place(req.comm_id, src) else {
        return None;
    };
    stats.recvs += 1;
    Some(Ev::Irecv {
        peer,
        comm,
        tag: tag as u32,
        bytes: r.bytes_recv,
        req: r.request_id,
    })
}

fn write_archive(
    api: &Api,
    archive: P,
    data: &TraceData,
    comms: &Comms,
    defs: &mut Defs,
    stats: &mut Otf2Stats,
) -> anyhow::Result<()> {
    let null = std::ptr::null_mut();
    // SAFETY: the live archive handle OTF2 returned, and C strings that
    // outlive each call.
    unsafe {
        check(
            (api.OTF2_Archive_SetFlushCallbacks)(archive, &FLUSH_CALLBACKS, null),
            "SetFlushCallbacks",
        )?;
        check(
            (api.OTF2_Archive_SetSerialCollectiveCallbacks)(archive),
            "SetSerialCollectiveCallbacks",
        )?;
        let creator =
            CString::new(format!("hyscope {}", env!("CARGO_PKG_VERSION"))).expect("no NUL");
        check(
            (api.OTF2_Archive_SetCreator)(archive, creator.as_ptr()),
            "SetCreator",
        )?;
        let desc = CString::new(data_description(data)).unwrap_or_default();
        check(
            (api.OTF2_Archive_SetDescription)(archive, desc.as_ptr()),
            "SetDescription",
        )?;
    }
    // The events, one rank's rows read at a time: OTF2 writes each
    // location's events on their own, and the definitions after them.
    // SAFETY: the live archive handle.
    check(
        unsafe { (api.OTF2_Archive_OpenEvtFiles)(archive) },
        "OpenEvtFiles",
    )?;
    let mut counts: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut metric_ids: BTreeMap<String, u32> = BTreeMap::new();
    let mut trace_end = 0u64;
    for rm in &data.ranks {
        if rm.left_out.is_some() {
            // Its thread 0 stays, empty: the groups and communicators keep
            // every world rank, numbered as recorded.
            let empty = BTreeMap::from([((rm.rank, 0), Vec::new())]);
            write_events(api, archive, &empty, stats, &mut counts)?;
            continue;
        }
        let rows = data.rank_rows(rm.rank)?;
        let mut events = Events {
            base: data.base_ns,
            intervals: BTreeMap::new(),
            instants: BTreeMap::new(),
        };
        events.omp(data, &rows, defs);
        events.phases(data, rm.rank, defs);
        events.mpi(&rows, comms, defs, stats);
        events.metrics(data, rm.rank, &mut metric_ids, stats);
        drop(rows);
        let streams = events.into_streams(rm.rank, stats);
        trace_end = streams
            .values()
            .filter_map(|v| v.last().map(|e| e.0))
            .chain([trace_end])
            .max()
            .unwrap_or(0);
        write_events(api, archive, &streams, stats, &mut counts)?;
    }
    // SAFETY: the live archive handle, its event files open.
    check(
        unsafe { (api.OTF2_Archive_CloseEvtFiles)(archive) },
        "CloseEvtFiles",
    )?;
    stats.locations = counts.len();
    write_local_defs(api, archive, &counts)?;
    // SAFETY: the live archive handle; the writer is checked and closed.
    let g = unsafe { (api.OTF2_Archive_GetGlobalDefWriter)(archive) };
    if g.is_null() {
        bail!("OTF2 could not open the global definition writer");
    }
    let global = GlobalDefs {
        api,
        g,
        data,
        comms,
        names: Names::new(defs, data, &counts, &metric_ids),
    };
    global.write(defs, trace_end, &counts)?;
    // SAFETY: g is the open global definition writer of this archive.
    check(
        unsafe { (api.OTF2_Archive_CloseGlobalDefWriter)(archive, g) },
        "CloseGlobalDefWriter",
    )
}

/// Some locations' events, in time order (the archive's event files open);
/// `counts` gets how many each has.
fn write_events(
    api: &Api,
    archive: P,
    streams: &BTreeMap<(u32, u32), Vec<(u64, Ev)>>,
    stats: &mut Otf2Stats,
    counts: &mut BTreeMap<(u32, u32), u64>,
) -> anyhow::Result<()> {
    // SAFETY: the live archive handle and the event writers OTF2 returned
    // (checked, closed after their events).
    unsafe {
        for (&(rank, thread), evs) in streams {
            let w = (api.OTF2_Archive_GetEvtWriter)(archive, location_id(rank, thread));
            if w.is_null() {
                bail!("OTF2 could not open the event writer of rank {rank} thread {thread}");
            }
            for &(time, ev) in evs {
                if matches!(ev, Ev::Enter(_) | Ev::EnterPolls(..)) {
                    stats.enters += 1;
                }
                check(write_event(api, w, time, ev), "writing an event")?;
            }
            counts.insert((rank, thread), evs.len() as u64);
            check(
                (api.OTF2_Archive_CloseEvtWriter)(archive, w),
                "CloseEvtWriter",
            )?;
        }
    }
    Ok(())
}

/// One event on the event writer `w`; OTF2's return code.
fn write_event(api: &Api, w: P, time: u64, ev: Ev) -> i32 {
    let null = std::ptr::null_mut();
    // SAFETY: w is a live event writer; the metric's arrays hold one value.
    unsafe {
        match ev {
            Ev::Enter(r) => (api.OTF2_EvtWriter_Enter)(w, null, time, r),
            Ev::EnterPolls(r, polls) => {
                let list = (api.OTF2_AttributeList_New)();
                if list.is_null() {
                    return (api.OTF2_EvtWriter_Enter)(w, null, time, r);
                }
                let mut rc = (api.OTF2_AttributeList_AddUint32)(list, ATTR_POLLS, polls);
                if rc == 0 {
                    rc = (api.OTF2_EvtWriter_Enter)(w, list, time, r);
                }
                (api.OTF2_AttributeList_Delete)(list);
                rc
            }
            Ev::Leave(r) => (api.OTF2_EvtWriter_Leave)(w, null, time, r),
            Ev::Send {
                peer,
                comm,
                tag,
                bytes,
            } => (api.OTF2_EvtWriter_MpiSend)(w, null, time, peer, comm, tag, bytes),
            Ev::Isend {
                peer,
                comm,
                tag,
                bytes,
                req,
            } => (api.OTF2_EvtWriter_MpiIsend)(w, null, time, peer, comm, tag, bytes, req),
            Ev::IsendComplete { req } => (api.OTF2_EvtWriter_MpiIsendComplete)(w, null, time, req),
            Ev::IrecvRequest { req } => (api.OTF2_EvtWriter_MpiIrecvRequest)(w, null, time, req),
            Ev::Recv {
                peer,
                comm,
                tag,
                bytes,
            } => (api.OTF2_EvtWriter_MpiRecv)(w, null, time, peer, comm, tag, bytes),
            Ev::Irecv {
                peer,
                comm,
                tag,
                bytes,
                req,
            } => (api.OTF2_EvtWriter_MpiIrecv)(w, null, time, peer, comm, tag, bytes, req),
            Ev::CollBegin => (api.OTF2_EvtWriter_MpiCollectiveBegin)(w, null, time),
            Ev::CollEnd {
                op,
                comm,
                root,
                sent,
                recv,
            } => (api.OTF2_EvtWriter_MpiCollectiveEnd)(w, null, time, op, comm, root, sent, recv),
            Ev::Metric { metric, value } => {
                let ty = [TYPE_DOUBLE];
                let v = [value.to_bits()];
                (api.OTF2_EvtWriter_Metric)(w, null, time, metric, 1, ty.as_ptr(), v.as_ptr())
            }
        }
    }
}

/// Empty local definitions (no id mappings: events use global ids).
fn write_local_defs(
    api: &Api,
    archive: P,
    locations: &BTreeMap<(u32, u32), u64>,
) -> anyhow::Result<()> {
    // SAFETY: the live archive handle and the definition writers OTF2
    // returned (checked, closed at once).
    unsafe {
        check((api.OTF2_Archive_OpenDefFiles)(archive), "OpenDefFiles")?;
        for &(rank, thread) in locations.keys() {
            let d = (api.OTF2_Archive_GetDefWriter)(archive, location_id(rank, thread));
            if d.is_null() {
                bail!("OTF2 could not open the definition writer of rank {rank} thread {thread}");
            }
            check(
                (api.OTF2_Archive_CloseDefWriter)(archive, d),
                "CloseDefWriter",
            )?;
        }
        check((api.OTF2_Archive_CloseDefFiles)(archive), "CloseDefFiles")
    }
}

/// The string ids the global definitions use, interned before the strings
/// are written (definitions are read in id order).
struct Names {
    machine: u32,
    node_class: u32,
    /// Distinct hosts in order of first appearance ("localhost" for none).
    hosts: Vec<String>,
    host_ids: Vec<u32>,
    /// Per rank of `data.ranks`.
    rank_names: Vec<u32>,
    thread_names: BTreeMap<(u32, u32), u32>,
    world: u32,
    self_name: u32,
    /// Per communicator of `data.communicators`.
    comm_names: Vec<u32>,
    locations_name: u32,
    /// (metric id, name), in id order.
    metric_names: Vec<(u32, u32)>,
    empty: u32,
}

impl Names {
    fn new(
        defs: &mut Defs,
        data: &TraceData,
        locations: &BTreeMap<(u32, u32), u64>,
        metric_ids: &BTreeMap<String, u32>,
    ) -> Names {
        let machine = defs.string("machine");
        let node_class = defs.string("node");
        let mut hosts: Vec<String> = Vec::new();
        for r in &data.ranks {
            let h = host_name(&r.host);
            if !hosts.iter().any(|x| x == h) {
                hosts.push(h.to_string());
            }
        }
        let host_ids = hosts.iter().map(|h| defs.string(h)).collect();
        let rank_names = data
            .ranks
            .iter()
            .map(|r| defs.string(&format!("MPI Rank {}{}", r.rank, r.left_out_note())))
            .collect();
        let thread_names = locations
            .keys()
            .map(|&(r, t)| {
                (
                    (r, t),
                    defs.string(&format!("OpenMP thread {t} (rank {r})")),
                )
            })
            .collect();
        let world = defs.string("MPI_COMM_WORLD");
        let self_name = defs.string("MPI_COMM_SELF");
        let comm_names = data
            .communicators
            .iter()
            .map(|c| defs.string(&c.name))
            .collect();
        let locations_name = defs.string("MPI ranks");
        let mut metric_names: Vec<(u32, u32)> = metric_ids
            .iter()
            .map(|(n, &id)| (id, defs.string(n)))
            .collect();
        metric_names.sort_unstable();
        let empty = defs.string("");
        defs.region(
            "hyscope",
            ROLE_ARTIFICIAL,
            PARADIGM_MEASUREMENT_SYSTEM,
            None,
            None,
        );
        Names {
            machine,
            node_class,
            hosts,
            host_ids,
            rank_names,
            thread_names,
            world,
            self_name,
            comm_names,
            locations_name,
            metric_names,
            empty,
        }
    }
}

/// A rank's host as the system tree names it.
fn host_name(host: &str) -> &str {
    if host.is_empty() { "localhost" } else { host }
}

/// The global definition writer of an archive, with what its definitions
/// describe.
struct GlobalDefs<'a> {
    api: &'a Api,
    g: P,
    data: &'a TraceData<'a>,
    comms: &'a Comms<'a>,
    names: Names,
}

impl GlobalDefs<'_> {
    fn write(
        &self,
        defs: &Defs,
        trace_end: u64,
        counts: &BTreeMap<(u32, u32), u64>,
    ) -> anyhow::Result<()> {
        let (api, g, data) = (self.api, self.g, self.data);
        let realtime = if data.start_unix_ns > 0 {
            (data.start_unix_ns + (data.base_ns - data.start_clock_ns)).max(0) as u64
        } else {
            UNDEFINED_TIMESTAMP
        };
        // SAFETY (every method of GlobalDefs): g is the live global definition
        // writer; C strings outlive each call; arrays have the stated length.
        unsafe {
            check(
                (api.OTF2_GlobalDefWriter_WriteClockProperties)(
                    g,
                    1_000_000_000,
                    0,
                    trace_end + 1,
                    realtime,
                ),
                "ClockProperties",
            )?;
            for (i, s) in defs.strings.iter().enumerate() {
                let c = CString::new(s.replace('\0', "")).expect("NUL removed");
                check(
                    (api.OTF2_GlobalDefWriter_WriteString)(g, i as u32, c.as_ptr()),
                    "WriteString",
                )?;
            }
            check(
                (api.OTF2_GlobalDefWriter_WriteAttribute)(
                    g,
                    ATTR_POLLS,
                    defs.string_ids[ATTR_POLLS_NAME],
                    defs.string_ids[ATTR_POLLS_DESCRIPTION],
                    TYPE_UINT32,
                ),
                "WriteAttribute",
            )?;
        }
        self.system_tree()?;
        self.locations(counts)?;
        self.regions(defs)?;
        self.mpi_groups()?;
        self.metrics()
    }

    /// The machine, its hosts, and one location group per rank on its host.
    fn system_tree(&self) -> anyhow::Result<()> {
        let (api, g, n) = (self.api, self.g, &self.names);
        // SAFETY: see `write`.
        unsafe {
            check(
                (api.OTF2_GlobalDefWriter_WriteSystemTreeNode)(
                    g,
                    0,
                    n.machine,
                    n.machine,
                    UNDEFINED_U32,
                ),
                "SystemTreeNode",
            )?;
            for (i, h) in n.host_ids.iter().enumerate() {
                check(
                    (api.OTF2_GlobalDefWriter_WriteSystemTreeNode)(
                        g,
                        i as u32 + 1,
                        *h,
                        n.node_class,
                        0,
                    ),
                    "SystemTreeNode",
                )?;
            }
            for (i, rm) in self.data.ranks.iter().enumerate() {
                let host = host_name(&rm.host);
                let node = n.hosts.iter().position(|h| h == host).unwrap_or(0) as u32 + 1;
                check(
                    (api.OTF2_GlobalDefWriter_WriteLocationGroup)(
                        g,
                        rm.rank,
                        n.rank_names[i],
                        LOCATION_GROUP_TYPE_PROCESS,
                        node,
                        UNDEFINED_U32,
                    ),
                    "LocationGroup",
                )?;
            }
        }
        Ok(())
    }

    /// One location per thread, with its number of events.
    fn locations(&self, counts: &BTreeMap<(u32, u32), u64>) -> anyhow::Result<()> {
        for (&(rank, thread), &name) in &self.names.thread_names {
            let events = counts.get(&(rank, thread)).copied().unwrap_or(0);
            // SAFETY: see `write`.
            check(
                unsafe {
                    (self.api.OTF2_GlobalDefWriter_WriteLocation)(
                        self.g,
                        location_id(rank, thread),
                        name,
                        LOCATION_TYPE_CPU_THREAD,
                        events,
                        rank,
                    )
                },
                "Location",
            )?;
        }
        Ok(())
    }

    fn regions(&self, defs: &Defs) -> anyhow::Result<()> {
        let empty = self.names.empty;
        for (id, (name, role, paradigm, file, line, flags)) in defs.regions.iter().enumerate() {
            // SAFETY: see `write`.
            check(
                unsafe {
                    (self.api.OTF2_GlobalDefWriter_WriteRegion)(
                        self.g, id as u32, *name, *name, empty, *role, *paradigm, *flags, *file,
                        *line, *line,
                    )
                },
                "Region",
            )?;
        }
        Ok(())
    }

    /// MPI_COMM_WORLD (rank i is the location of thread 0 of rank i),
    /// MPI_COMM_SELF when used, and every other communicator.
    fn mpi_groups(&self) -> anyhow::Result<()> {
        let (api, g, data, comms, n) = (self.api, self.g, self.data, self.comms, &self.names);
        let members: Vec<u64> = data.ranks.iter().map(|r| location_id(r.rank, 0)).collect();
        let ranks: Vec<u64> = (0..members.len() as u64).collect();
        // SAFETY: see `write`.
        unsafe {
            check(
                (api.OTF2_GlobalDefWriter_WriteGroup)(
                    g,
                    0,
                    n.locations_name,
                    GROUP_TYPE_COMM_LOCATIONS,
                    PARADIGM_MPI,
                    0,
                    members.len() as u32,
                    members.as_ptr(),
                ),
                "Group",
            )?;
            check(
                (api.OTF2_GlobalDefWriter_WriteGroup)(
                    g,
                    1,
                    n.world,
                    GROUP_TYPE_COMM_GROUP,
                    PARADIGM_MPI,
                    0,
                    ranks.len() as u32,
                    ranks.as_ptr(),
                ),
                "Group",
            )?;
            check(
                (api.OTF2_GlobalDefWriter_WriteComm)(g, WORLD_COMM, n.world, 1, UNDEFINED_U32, 0),
                "Comm",
            )?;
            // MPI_COMM_SELF, when used: each rank's own, one definition (OTF2's
            // self group).
            if comms.self_used {
                check(
                    (api.OTF2_GlobalDefWriter_WriteGroup)(
                        g,
                        2,
                        n.self_name,
                        GROUP_TYPE_COMM_SELF,
                        PARADIGM_MPI,
                        0,
                        0,
                        std::ptr::null(),
                    ),
                    "Group",
                )?;
                check(
                    (api.OTF2_GlobalDefWriter_WriteComm)(
                        g,
                        SELF_COMM,
                        n.self_name,
                        2,
                        UNDEFINED_U32,
                        0,
                    ),
                    "Comm",
                )?;
            }
            // Each communicator: its members as indices into the locations
            // group (world ranks in `data.ranks` order), in its rank order.
            for (i, c) in data.communicators.iter().enumerate() {
                let id = comms.first + i as u32;
                let group = id + 1;
                let members: Vec<u64> = c
                    .members
                    .iter()
                    .filter_map(|&w| data.ranks.iter().position(|r| r.rank == w))
                    .map(|p| p as u64)
                    .collect();
                check(
                    (api.OTF2_GlobalDefWriter_WriteGroup)(
                        g,
                        group,
                        n.comm_names[i],
                        GROUP_TYPE_COMM_GROUP,
                        PARADIGM_MPI,
                        0,
                        members.len() as u32,
                        members.as_ptr(),
                    ),
                    "Group",
                )?;
                let parent = match c.parent {
                    WORLD_COMM_ID | SELF_COMM_ID => comms.id(c.parent),
                    p => comms.by_id.get(&p).map_or(UNDEFINED_U32, |x| x.0),
                };
                check(
                    (api.OTF2_GlobalDefWriter_WriteComm)(g, id, n.comm_names[i], group, parent, 0),
                    "Comm",
                )?;
            }
        }
        Ok(())
    }

    /// One member and one class per sampled metric.
    fn metrics(&self) -> anyhow::Result<()> {
        let (api, g, empty) = (self.api, self.g, self.names.empty);
        for &(id, name) in &self.names.metric_names {
            let member = [id];
            // SAFETY: see `write`.
            unsafe {
                check(
                    (api.OTF2_GlobalDefWriter_WriteMetricMember)(
                        g,
                        id,
                        name,
                        name,
                        METRIC_TYPE_OTHER,
                        METRIC_ABSOLUTE_POINT,
                        TYPE_DOUBLE,
                        BASE_DECIMAL,
                        0,
                        empty,
                    ),
                    "MetricMember",
                )?;
                check(
                    (api.OTF2_GlobalDefWriter_WriteMetricClass)(
                        g,
                        id,
                        1,
                        member.as_ptr(),
                        METRIC_SYNCHRONOUS,
                        RECORDER_KIND_ABSTRACT,
                    ),
                    "MetricClass",
                )?;
            }
        }
        Ok(())
    }
}

/// What the archive says besides its events, in words: the run's notes and
/// the intervals this export clipped to nest them.
pub(crate) fn notes(data: &TraceData, stats: &Otf2Stats) -> Vec<String> {
    let mut notes = data.run.notes(
        "; the properties HYSCOPE::RUN_WINDOW_START and HYSCOPE::RUN_WINDOW_END bound the window",
    );
    if stats.clipped > 0 {
        notes.push(format!(
            "{} intervals were clipped to their enclosing interval (OTF2 needs strict nesting)",
            stats.clipped
        ));
    }
    notes
}

/// The run's window (in the archive's ticks) and the notes as archive
/// properties, set before the archive is closed.
fn write_properties(
    api: &Api,
    archive: P,
    data: &TraceData,
    stats: &Otf2Stats,
) -> anyhow::Result<()> {
    let mut props: Vec<(String, String)> = Vec::new();
    if let Some(w) = data.run.window {
        props.push((
            "RUN_WINDOW_START".into(),
            (w.start_ns - data.base_ns).to_string(),
        ));
        props.push((
            "RUN_WINDOW_END".into(),
            (w.end_ns - data.base_ns).to_string(),
        ));
        props.push(("RUN_DURATION_NS".into(), w.duration_ns().to_string()));
    }
    for (i, note) in notes(data, stats).into_iter().enumerate() {
        props.push((format!("NOTE_{}", i + 1), note));
    }
    for (name, value) in props {
        let n = CString::new(format!("HYSCOPE::{name}")).expect("no NUL");
        let v = CString::new(value.replace('\0', "")).expect("NUL removed");
        // SAFETY: the live archive handle, opened for writing; C strings that outlive the call.
        check(
            unsafe { (api.OTF2_Archive_SetProperty)(archive, n.as_ptr(), v.as_ptr(), true) },
            "SetProperty",
        )?;
    }
    Ok(())
}

fn data_description(data: &TraceData) -> String {
    format!("hyscope trace, {} ranks", data.ranks.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(start: u64, end: u64, region: u32) -> Interval {
        Interval {
            start,
            end,
            region,
            polls: 0,
            after_enter: Vec::new(),
            before_leave: Vec::new(),
        }
    }

    fn show(evs: &[(u64, Ev)]) -> Vec<String> {
        evs.iter()
            .map(|(t, e)| match e {
                Ev::Enter(r) => format!("{t}+{r}"),
                Ev::Leave(r) => format!("{t}-{r}"),
                other => format!("{t}:{other:?}"),
            })
            .collect()
    }

    #[test]
    fn nesting_siblings_instants_and_clipping() {
        let mut clipped = 0;
        // 0 encloses 1 and 2 (siblings touching at 20); 3 is an instant at 20;
        // 4 crosses the end of 0 and is clipped to 50.
        let evs = nest(
            vec![
                iv(10, 20, 1),
                iv(0, 50, 0),
                iv(20, 30, 2),
                iv(20, 20, 3),
                iv(40, 60, 4),
            ],
            &mut clipped,
        );
        assert_eq!(
            show(&evs),
            [
                "0+0", "10+1", "20-1", "20+2", "20+3", "20-3", "30-2", "40+4", "50-4", "50-0"
            ]
        );
        assert_eq!(clipped, 1);
    }
}

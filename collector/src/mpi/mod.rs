//! MPI interception: PMPI wrappers, connection tracking, clock synchronisation
//! and the job-level manifest.
//!
//! - [`wrappers`]: every wrapped C call, generated from one declarative table;
//! - [`shim`]: the exported symbols, tiny trampolines that pass the caller's
//!   return address (the call site) to the wrapper;
//! - [`fortran`]: `mpi_send_`-style symbols (Open MPI's Fortran bindings call
//!   `PMPI_*` directly, docs/platform.md "MPI"), converted with the `_f2c` calls;
//! - [`table`]: the lock-free handle map (requests, communicators, windows, files);
//! - [`job`]: clock offsets to rank 0, MPI_T control variables, the job manifest;
//! - [`keep_loaded`]: libraries `MPI_Init` unloads held loaded for MPI_T;
//! - [`stack`]: the transport components and settings the run selected;
//! - [`tree`]: the binomial tree the job-level work runs along.
//!
//! Hot path of a wrapper: two clock reads, the PMPI call, a few loads to
//! translate the communicator and peer, one record into the thread's buffer.
//! No lock anywhere on it: communicators and requests live in [`table`], peer
//! counters are atomics, request ids come from a per-thread counter.

use std::ffi::c_int;
use std::sync::OnceLock;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering,
};

/// `tag` when the call has none.
pub use hyscope_format::NO_TAG;
use hyscope_format::{ANY, MpiRecord, NO_RANK, PROC_NULL, mpi_call};
use mpi_sys as ffi;

use crate::slots::PeerCounts;
use crate::{clock, diag, lifecycle, slots, spooling, state};

// Open MPI's Fortran symbols (`mpi_fortran_in_place_`, ...): not in an MPICH process.
#[cfg(not(hyscope_mpich))]
pub mod fortran;
pub mod job;
pub mod keep_loaded;
pub mod mpit_background;
pub mod polls;
pub mod shim;
pub mod stack;
pub mod table;
pub mod tree;
pub mod wrappers;

use table::HandleTable;

/// The MPI this library was built for (`collector/build.rs` sets the cfg from `MPICC`).
#[cfg(not(hyscope_mpich))]
pub const FLAVOUR: &str = "openmpi";
#[cfg(hyscope_mpich)]
pub const FLAVOUR: &str = "mpich";

/// Pcontrol(0) pauses recording, any other level resumes it.
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Set between MPI_Init and MPI_Finalize.
static MPI_UP: AtomicBool = AtomicBool::new(false);
static WORLD_RANK: AtomicI32 = AtomicI32::new(0);
static WORLD_SIZE: AtomicI32 = AtomicI32::new(1);
/// Local contribution to the next communicator id (see [`register_comm`]).
static COMM_COUNTER: AtomicU64 = AtomicU64::new(1);
/// Process-local ids of communicators created behind our back (high bit set).
static LOCAL_COMM_IDS: AtomicU64 = AtomicU64::new(1 << 63);

/// Marks the calling thread as inside a wrapper for its lifetime; carries
/// the thread's slot for the rest of the wrapper.
pub struct Enter(&'static slots::ThreadSlot);

impl Enter {
    /// None inside another wrapper, or when the program uses another MPI than
    /// the one this library was built for (then every call is passed through).
    #[inline]
    pub fn new() -> Option<Enter> {
        if foreign() {
            return None;
        }
        let slot = slots::slot();
        let inside = &slot.mpi_thread.inside;
        if inside.load(Ordering::Relaxed) {
            None
        } else {
            inside.store(true, Ordering::Relaxed);
            Some(Enter(slot))
        }
    }

    /// The calling thread's slot.
    #[inline]
    pub fn slot(&self) -> &'static slots::ThreadSlot {
        self.0
    }
}

impl Drop for Enter {
    #[inline]
    fn drop(&mut self) {
        self.0.mpi_thread.inside.store(false, Ordering::Relaxed);
    }
}

/// 0 not checked yet, 1 the program's MPI is ours, 2 it is another one.
pub static FLAVOUR_CHECK: AtomicU8 = AtomicU8::new(0);

/// True when the program uses another MPI than this build's (docs/platform.md
/// "MPI": the ABIs differ, interpreting MPICH handles as Open MPI's crashes).
#[inline]
pub fn foreign() -> bool {
    match FLAVOUR_CHECK.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => check_flavour(),
    }
}

#[cold]
fn check_flavour() -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let foreign = maps_show_foreign_mpi(&maps);
    FLAVOUR_CHECK.store(if foreign { 2 } else { 1 }, Ordering::Relaxed);
    if foreign {
        #[cfg(not(hyscope_mpich))]
        diag::warn(
            "this libhyscope.so is built for Open MPI but the program uses MPICH: \
             MPI calls are passed through and not recorded (use the MPICH build of the library)",
        );
        #[cfg(hyscope_mpich)]
        diag::warn(
            "this libhyscope-mpich.so is built for MPICH but the program uses Open MPI: \
             MPI calls are passed through and not recorded (use libhyscope.so)",
        );
    }
    foreign
}

/// Whether a `/proc/<pid>/maps` text shows an MPI of the other flavour.
#[cfg(not(hyscope_mpich))]
pub fn maps_show_foreign_mpi(maps: &str) -> bool {
    maps_show_mpich(maps)
}

/// Whether a `/proc/<pid>/maps` text shows an MPI of the other flavour: this
/// library itself pulls libmpich into any process, so only the presence of
/// Open MPI (`libmpi.so.40`, `libopen-pal`) tells.
#[cfg(hyscope_mpich)]
pub fn maps_show_foreign_mpi(maps: &str) -> bool {
    maps_libs(maps).any(|f| f.starts_with("libmpi.so.40") || f.starts_with("libopen-pal"))
}

/// Whether a `/proc/<pid>/maps` text shows an MPICH library (`libmpich*`, or
/// MPICH's ABI soname `libmpi.so.12`; Open MPI's is `libmpi.so.40`).
pub fn maps_show_mpich(maps: &str) -> bool {
    maps_libs(maps).any(|f| f.starts_with("libmpich") || f.starts_with("libmpi.so.12"))
}

fn maps_libs(maps: &str) -> impl Iterator<Item = &str> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|p| p.rsplit('/').next())
}

/// MPI calls are recorded: not paused by `MPI_Pcontrol(0)` nor by
/// `omp_control_tool` (`phases::paused`).
#[inline]
pub fn recording() -> bool {
    ENABLED.load(Ordering::Relaxed) && !crate::phases::paused()
}

/// A record of the calling thread (`slot`) with the common fields filled in.
#[inline]
pub fn base(
    slot: &slots::ThreadSlot,
    call: u16,
    start_ns: i64,
    end_ns: i64,
    callsite: usize,
) -> MpiRecord {
    MpiRecord {
        thread: slot.index,
        call,
        start_ns,
        end_ns,
        peer: NO_RANK,
        tag: NO_TAG,
        bytes_sent: 0,
        bytes_recv: 0,
        comm_id: 0,
        root: NO_RANK,
        request_id: 0,
        in_parallel: slot.in_parallel(),
        callsite: callsite as u64,
        recv_peer: NO_RANK,
        recv_tag: NO_TAG,
        calls: 1,
    }
}

/// Record `r` (unless its call was cleared) in the calling thread's
/// (`slot`) buffer, after the thread's open run of folded polls.
#[inline]
pub fn record(slot: &slots::ThreadSlot, r: MpiRecord) {
    if r.call != 0 {
        polls::close(slot);
        slot.record_mpi(r);
    }
}

/// The record a wrapper fills, with the calling thread's slot (looked up once
/// per call). Derefs to the [`MpiRecord`].
#[derive(Clone, Copy)]
pub struct Rec {
    pub rec: MpiRecord,
    pub slot: &'static slots::ThreadSlot,
}

impl Rec {
    #[inline]
    pub fn new(slot: &'static slots::ThreadSlot, call: u16, callsite: usize) -> Rec {
        Rec {
            rec: base(slot, call, 0, 0, callsite),
            slot,
        }
    }

    /// Record it (unless its call was cleared).
    #[inline]
    pub fn record(&self) {
        record(self.slot, self.rec);
    }
}

impl std::ops::Deref for Rec {
    type Target = MpiRecord;
    #[inline]
    fn deref(&self) -> &MpiRecord {
        &self.rec
    }
}

impl std::ops::DerefMut for Rec {
    #[inline]
    fn deref_mut(&mut self) -> &mut MpiRecord {
        &mut self.rec
    }
}

// ---------------------------------------------------------------- handles

/// Anything that is an MPI handle: its value as a table key.
pub trait Handle: Copy {
    fn key(self) -> usize;
}
#[cfg(not(hyscope_mpich))]
macro_rules! handle_newtype {
    ($($t:ident),*) => {$(impl Handle for ffi::$t { #[inline] fn key(self) -> usize { self.0 as usize } })*};
}
// MPICH: the handles wrap an `int` (docs/platform.md "MPI"), often negative
// (`0x84000000`): zero-extend it.
#[cfg(hyscope_mpich)]
macro_rules! handle_newtype {
    ($($t:ident),*) => {$(impl Handle for ffi::$t { #[inline] fn key(self) -> usize { self.0 as u32 as usize } })*};
}
handle_newtype!(
    MPI_Comm,
    MPI_Request,
    MPI_Win,
    MPI_Datatype,
    MPI_Message,
    MPI_Group
);
impl Handle for ffi::MPI_File {
    #[inline]
    fn key(self) -> usize {
        self as usize
    }
}

#[inline]
pub fn world() -> ffi::MPI_Comm {
    // SAFETY: a constant of the MPI library.
    unsafe { ffi::RSMPI_COMM_WORLD }
}
#[inline]
fn comm_self() -> ffi::MPI_Comm {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_COMM_SELF }
}
#[inline]
pub fn request_null() -> usize {
    // SAFETY: as above.
    unsafe { ffi::RSMPI_REQUEST_NULL }.key()
}

/// Bytes of `count` elements of `dt` (0 for a null or invalid type).
#[inline]
pub fn nbytes(count: c_int, dt: ffi::MPI_Datatype) -> u64 {
    if count <= 0 || dt.key() == unsafe { ffi::RSMPI_DATATYPE_NULL }.key() || dt.key() == 0 {
        return 0;
    }
    let mut size: c_int = 0;
    // SAFETY: dt is a datatype handle the application passed to MPI.
    if unsafe { ffi::PMPI_Type_size(dt, &mut size) } != 0 || size < 0 {
        return 0;
    }
    count as u64 * size as u64
}

/// Sum of `counts[i]` elements of `dt` over `n` entries.
///
/// # Safety
/// `counts` points to `n` ints (or is null).
pub unsafe fn nbytes_v(counts: *const c_int, n: c_int, dt: ffi::MPI_Datatype) -> u64 {
    if counts.is_null() || n <= 0 {
        return 0;
    }
    // SAFETY: guaranteed by the caller.
    let total: i64 = unsafe { std::slice::from_raw_parts(counts, n as usize) }
        .iter()
        .map(|&c| c.max(0) as i64)
        .sum();
    nbytes(1, dt) * total as u64
}

/// Open MPI's `MPI_IN_PLACE` is `(void *) 1`, MPICH's `(void *) -1`.
#[inline]
pub fn in_place(p: *const std::ffi::c_void) -> bool {
    #[cfg(not(hyscope_mpich))]
    return p as usize == 1;
    #[cfg(hyscope_mpich)]
    return p as usize == usize::MAX;
}

// ---------------------------------------------------------------- communicators

/// What the wrappers need to know about a communicator (or window/file: same shape).
#[derive(Clone, Copy)]
pub struct CommInfo {
    pub id: u64,
    pub size: i32,
    pub rank: i32,
    /// Local rank → world rank (null: identity).
    world: *const i32,
}

impl CommInfo {
    /// World rank of local rank `r` (PROC_NULL/ANY_SOURCE mapped to the format's values).
    #[inline]
    pub fn world_rank(&self, r: c_int) -> i32 {
        if r >= 0 {
            if self.world.is_null() {
                return r;
            }
            if r < self.size {
                // SAFETY: translation arrays have `size` entries and are never freed.
                return unsafe { *self.world.add(r as usize) };
            }
            return NO_RANK;
        }
        // SAFETY: constants of the MPI library.
        if r == unsafe { ffi::RSMPI_PROC_NULL } {
            PROC_NULL
        } else if r == unsafe { ffi::RSMPI_ANY_SOURCE } {
            ANY
        } else {
            NO_RANK
        }
    }

    fn words(&self) -> [u64; table::WORDS] {
        [
            self.id,
            self.size as u32 as u64,
            self.rank as u32 as u64,
            self.world as u64,
            0,
            0,
        ]
    }

    fn from_words(w: [u64; table::WORDS]) -> CommInfo {
        CommInfo {
            id: w[0],
            size: w[1] as u32 as i32,
            rank: w[2] as u32 as i32,
            world: w[3] as *const i32,
        }
    }
}

// SAFETY: the translation array is immutable and leaked.
unsafe impl Send for CommInfo {}
unsafe impl Sync for CommInfo {}

fn comms() -> &'static HandleTable {
    static T: OnceLock<HandleTable> = OnceLock::new();
    T.get_or_init(|| HandleTable::new(12))
}

/// Info of a communicator: world and self directly, others from the table
/// (registered at creation, or now with a process-local id if created by a
/// call we do not wrap).
#[inline]
pub fn comm_info(comm: ffi::MPI_Comm) -> CommInfo {
    // World inline (the common case), the rest out of line.
    if comm.key() == world().key() {
        return CommInfo {
            id: 1,
            size: WORLD_SIZE.load(Ordering::Relaxed),
            rank: WORLD_RANK.load(Ordering::Relaxed),
            world: std::ptr::null(),
        };
    }
    comm_info_other(comm)
}

#[inline(never)]
fn comm_info_other(comm: ffi::MPI_Comm) -> CommInfo {
    if let Some((_, w)) = comms().get(comm.key()) {
        return CommInfo::from_words(w);
    }
    if comm.key() == comm_self().key() {
        return CommInfo {
            id: 2,
            size: 1,
            rank: 0,
            // Local rank 0 of self is this rank: a one-entry translation
            // (WORLD_RANK is written once, at MPI_Init, before any use).
            world: WORLD_RANK.as_ptr() as *const i32,
        };
    }
    comm_info_slow(comm)
}

#[cold]
fn comm_info_slow(comm: ffi::MPI_Comm) -> CommInfo {
    // SAFETY: COMM_NULL is a constant.
    if comm.key() == unsafe { ffi::RSMPI_COMM_NULL }.key() || !MPI_UP.load(Ordering::Relaxed) {
        return CommInfo {
            id: 0,
            size: 0,
            rank: NO_RANK,
            world: std::ptr::null(),
        };
    }
    let mut info = describe_comm(comm);
    info.id = LOCAL_COMM_IDS.fetch_add(1, Ordering::Relaxed);
    comms().insert(comm.key(), info.words());
    info
}

/// Size, rank and world translation of `comm` (for an inter-communicator the
/// remote group, where point-to-point peers live).
fn describe_comm(comm: ffi::MPI_Comm) -> CommInfo {
    let mut size = 0;
    let mut rank = NO_RANK;
    let mut inter = 0;
    let mut group = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: comm is a valid communicator; all out-pointers are locals.
    unsafe {
        ffi::PMPI_Comm_test_inter(comm, &mut inter);
        ffi::PMPI_Comm_rank(comm, &mut rank);
        if inter != 0 {
            ffi::PMPI_Comm_remote_size(comm, &mut size);
            ffi::PMPI_Comm_remote_group(comm, &mut group);
        } else {
            ffi::PMPI_Comm_size(comm, &mut size);
            ffi::PMPI_Comm_group(comm, &mut group);
        }
    }
    CommInfo {
        id: 0,
        size,
        rank,
        world: translation(group, size),
    }
}

/// World ranks of the `n` members of `group` (leaked: handles may be in use
/// by records of other threads; communicators are few).
fn translation(mut group: ffi::MPI_Group, n: c_int) -> *const i32 {
    let Some(wg) = WORLD_GROUP.get() else {
        return std::ptr::null();
    };
    let local: Vec<c_int> = (0..n).collect();
    let mut out = vec![NO_RANK; n.max(0) as usize];
    // SAFETY: both arrays have n entries; groups are valid.
    unsafe {
        ffi::PMPI_Group_translate_ranks(group, n, local.as_ptr(), wg.0, out.as_mut_ptr());
        if group.key() != ffi::RSMPI_GROUP_NULL.key() {
            ffi::PMPI_Group_free(&mut group);
        }
    }
    let undefined = unsafe { ffi::RSMPI_UNDEFINED };
    for r in out.iter_mut() {
        if *r == undefined {
            *r = NO_RANK;
        }
    }
    Box::leak(out.into_boxed_slice()).as_ptr()
}

struct Group(ffi::MPI_Group);
// SAFETY: a group handle is a plain value, valid on any thread.
unsafe impl Send for Group {}
unsafe impl Sync for Group {}
static WORLD_GROUP: OnceLock<Group> = OnceLock::new();

/// Give a newly created communicator its job-unique id. Collective over the new
/// communicator (creation calls are collective, so every member is here).
///
/// id = `max(counter) << 24 | (lowest world rank + 1)`: the lowest member m
/// takes part in every communicator whose id ends in m+1, and its counter
/// moves past each max it sees, so two such communicators get different
/// maxima. Ids are ≥ 2^24, never world (1) or self (2). Two communicators
/// created at the same time by two threads of the same lowest rank could in
/// principle collide; each contributes a distinct counter value, which makes
/// that need an exact tie of another member's counter.
///
/// The rank file lists it with this rank's rank, the creating `call` and the
/// `parent` it was made from, so readers know each communicator's members.
pub fn register_comm(newcomm: ffi::MPI_Comm, parent: ffi::MPI_Comm, call: u16) {
    // SAFETY: COMM_NULL is a constant.
    if newcomm.key() == unsafe { ffi::RSMPI_COMM_NULL }.key() {
        return;
    }
    let mut info = describe_comm(newcomm);
    let mut inter = 0;
    // SAFETY: valid communicator.
    unsafe { ffi::PMPI_Comm_test_inter(newcomm, &mut inter) };
    if inter != 0 {
        info.id = LOCAL_COMM_IDS.fetch_add(1, Ordering::Relaxed);
    } else {
        let mine = COMM_COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut max: u64 = mine;
        // SAFETY: one u64 each way on a valid intra-communicator.
        let rc = unsafe {
            ffi::PMPI_Allreduce(
                (&mine as *const u64).cast(),
                (&mut max as *mut u64).cast(),
                1,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_MAX,
                newcomm,
            )
        };
        if rc != 0 {
            info.id = LOCAL_COMM_IDS.fetch_add(1, Ordering::Relaxed);
        } else {
            COMM_COUNTER.fetch_max(max + 1, Ordering::Relaxed);
            let lowest = (0..info.size)
                .map(|r| info.world_rank(r))
                .filter(|&w| w >= 0)
                .min()
                .unwrap_or(0);
            info.id = (max << 24) | (lowest as u64 + 1);
            note_membership(&info, comm_info(parent).id, call);
        }
    }
    comms().insert(newcomm.key(), info.words());
}

/// This rank is a member of the new (job-unique) communicator `info`.
fn note_membership(info: &CommInfo, parent: u64, call: u16) {
    let membership = hyscope_format::CommMembership {
        id: info.id,
        size: info.size.max(0) as u32,
        rank: info.rank.max(0) as u32,
        created_by: mpi_call::name(call).to_string(),
        parent,
    };
    state::with_rank_info(|r| r.communicators.push(membership));
}

/// A window or file shares the id and translation of the communicator it was made from.
pub fn register_alias(handle: usize, comm: ffi::MPI_Comm) {
    let info = comm_info(comm);
    comms().insert(handle, info.words());
}

/// Info of a window or file handle registered with [`register_alias`].
#[inline]
pub fn alias_info(handle: usize) -> CommInfo {
    comms().get(handle).map_or(
        CommInfo {
            id: 0,
            size: 0,
            rank: NO_RANK,
            world: std::ptr::null(),
        },
        |(_, w)| CommInfo::from_words(w),
    )
}

pub fn forget_handle(handle: usize) {
    comms().remove_key(handle);
}

// ---------------------------------------------------------------- requests

/// Payload of a request entry: [id, call | flags, peer << 32 | tag, bytes, comm_id, world ptr | size << 48].
const REQ_PERSISTENT: u64 = 1 << 16;
const REQ_RECV: u64 = 1 << 17;
const REQ_ACTIVE: u64 = 1 << 18;

fn requests() -> &'static HandleTable {
    static T: OnceLock<HandleTable> = OnceLock::new();
    T.get_or_init(|| HandleTable::new(14))
}

/// Kind of a request, for its completion.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ReqKind {
    /// Data arrives: bytes and source come from the status.
    Recv,
    /// Anything else (sends, collectives, one-sided, I/O).
    Other,
}

/// Give the request just created by the call in `r` an id and remember it
/// (`bytes`: what each start of a persistent send sends).
#[inline]
pub fn new_request(
    r: &mut Rec,
    req: ffi::MPI_Request,
    kind: ReqKind,
    persistent: bool,
    bytes: u64,
    comm: &CommInfo,
) {
    if req.key() == request_null() {
        return;
    }
    let counter = &r.slot.mpi_thread.next_req;
    let n = counter.load(Ordering::Relaxed) + 1;
    counter.store(n, Ordering::Relaxed);
    let id = ((r.thread as u64) << table::OWNER_SHIFT) | n;
    r.request_id = id;
    let mut flags = r.call as u64;
    if persistent {
        flags |= REQ_PERSISTENT;
    } else {
        flags |= REQ_ACTIVE;
    }
    if kind == ReqKind::Recv {
        flags |= REQ_RECV;
    }
    requests().insert_dup(
        req.key(),
        [
            id,
            flags,
            ((r.peer as u32 as u64) << 32) | r.tag as u32 as u64,
            bytes,
            comm.id,
            comm.world as u64 | ((comm.size as u32 as u64) << 48),
        ],
    );
}

/// A persistent request was started: its next completion is recorded. Fills
/// request id, peer, tag, communicator and (for sends) bytes into `r`.
#[inline]
pub fn start_request(r: &mut Rec, req: usize) {
    if let Some((s, w)) = requests().get(req) {
        requests().set_word(s, 1, w[1] | REQ_ACTIVE);
        r.request_id = w[0];
        r.peer = (w[2] >> 32) as u32 as i32;
        r.tag = w[2] as u32 as i32;
        r.comm_id = w[4];
        if w[1] & REQ_RECV == 0 {
            r.bytes_sent += w[3];
            note_peer(r.slot, r.peer, w[3], r.start_ns);
        }
    }
}

/// Forget a freed request (this thread's oldest entry of that handle).
pub fn free_request(req: usize) {
    Taken::take(req);
}

/// A request's entry, taken out of the map by the thread completing it.
///
/// Taken *before* the PMPI completion call: once MPI has completed and freed a
/// request, another thread may get the same handle from its next `MPI_Isend`
/// and insert it while this thread still processes the old one. The owner
/// puts back what did not complete (a `Test` with flag false, persistent requests).
#[derive(Clone, Copy)]
pub struct Taken {
    key: usize,
    val: Option<[u64; table::WORDS]>,
}

impl Taken {
    pub const NONE: Taken = Taken { key: 0, val: None };

    /// Take the entry of request handle `key` (nothing for unknown or null handles).
    #[inline]
    pub fn take(key: usize) -> Taken {
        if key == request_null() {
            return Taken::NONE;
        }
        // Several live entries can share a handle (Open MPI returns its shared
        // `ompi_request_empty` for sends completed inline): prefer this thread's
        // oldest request.
        Taken {
            key,
            val: requests().take_oldest(key, slots::slot().index as u64),
        }
    }

    /// The request did not complete: put its entry back.
    #[inline]
    pub fn put_back(self) {
        if let Some(w) = self.val {
            requests().insert_dup(self.key, w);
        }
    }

    /// The request completed with `status` (may be null): record it; a
    /// persistent request goes back, inactive until its next start.
    ///
    /// # Safety
    /// `status` is null or points to the status MPI filled for this request.
    pub unsafe fn completed(self, status: *const ffi::MPI_Status, t: i64, callsite: usize) {
        let Some(w) = self.val else {
            return;
        };
        if w[1] & REQ_PERSISTENT != 0 {
            let mut back = w;
            back[1] &= !REQ_ACTIVE;
            requests().insert_dup(self.key, back);
        }
        if w[1] & REQ_ACTIVE == 0 {
            return; // an inactive persistent request completes trivially
        }
        let slot = slots::slot();
        let mut r = base(slot, mpi_call::REQUEST_COMPLETE, t, t, callsite);
        r.request_id = w[0];
        r.peer = (w[2] >> 32) as u32 as i32;
        r.tag = w[2] as u32 as i32;
        r.comm_id = w[4];
        if w[1] & REQ_RECV != 0 && !status.is_null() {
            let comm = CommInfo {
                id: w[4],
                size: (w[5] >> 48) as i32,
                rank: NO_RANK,
                world: (w[5] & ((1 << 48) - 1)) as *const i32,
            };
            // SAFETY: guaranteed by the caller.
            let st = unsafe { &*status };
            let mut cancelled = 0;
            // SAFETY: st is a valid status.
            unsafe { ffi::PMPI_Test_cancelled(st, &mut cancelled) };
            if cancelled == 0 {
                r.peer = comm.world_rank(st.MPI_SOURCE);
                r.tag = st.MPI_TAG;
                r.bytes_recv = status_bytes(st);
                note_peer(slot, r.peer, r.bytes_recv, t);
            }
        }
        if recording() {
            record(slot, r);
        }
    }

    /// Completed if `done`, else put back.
    ///
    /// # Safety
    /// As for [`Taken::completed`].
    #[inline]
    pub unsafe fn finish(
        self,
        done: bool,
        status: *const ffi::MPI_Status,
        t: i64,
        callsite: usize,
    ) {
        if done {
            // SAFETY: forwarded.
            unsafe { self.completed(status, t, callsite) }
        } else {
            self.put_back();
        }
    }
}

/// Bytes received according to a status.
#[inline]
pub fn status_bytes(st: &ffi::MPI_Status) -> u64 {
    let mut n: c_int = 0;
    // SAFETY: st is a valid status; UINT8_T has size 1.
    if unsafe { ffi::PMPI_Get_count(st, ffi::RSMPI_UINT8_T, &mut n) } != 0 || n < 0 {
        return 0;
    }
    n as u64
}

/// Fill peer/tag/bytes_recv of a receive from its status.
///
/// # Safety
/// `status` is null or a status filled by MPI.
#[inline]
pub unsafe fn recv_from_status(r: &mut Rec, comm: &CommInfo, status: *const ffi::MPI_Status) {
    // SAFETY: forwarded.
    if let Some((peer, tag)) = unsafe { received(r, comm, status) } {
        r.peer = peer;
        r.tag = tag;
    }
}

/// The receive side of a `Sendrecv` from its status: `recv_peer`,
/// `recv_tag` and `bytes_recv` (the wildcards it was given resolved).
///
/// # Safety
/// `status` is null or a status filled by MPI.
#[inline]
pub unsafe fn sendrecv_from_status(r: &mut Rec, comm: &CommInfo, status: *const ffi::MPI_Status) {
    // SAFETY: forwarded.
    if let Some((peer, tag)) = unsafe { received(r, comm, status) } {
        r.recv_peer = peer;
        r.recv_tag = tag;
    }
}

/// Source (world rank) and tag of a completed receive from its status;
/// sets `bytes_recv` and counts the peer.
///
/// # Safety
/// `status` is null or a status filled by MPI.
#[inline]
unsafe fn received(
    r: &mut Rec,
    comm: &CommInfo,
    status: *const ffi::MPI_Status,
) -> Option<(i32, i32)> {
    if status.is_null() {
        return None;
    }
    // SAFETY: guaranteed by the caller.
    let st = unsafe { &*status };
    let peer = comm.world_rank(st.MPI_SOURCE);
    r.bytes_recv = status_bytes(st);
    note_peer(r.slot, peer, r.bytes_recv, r.end_ns);
    Some((peer, st.MPI_TAG))
}

/// A status the wrapper owns when the application passed `MPI_STATUS_IGNORE`.
#[inline]
pub fn zero_status() -> ffi::MPI_Status {
    // SAFETY: MPI_Status is plain old data.
    unsafe { std::mem::zeroed() }
}

#[inline]
pub fn status_ignored(st: *mut ffi::MPI_Status) -> bool {
    st.is_null() || st == unsafe { ffi::RSMPI_STATUS_IGNORE }
}

// ---------------------------------------------------------------- peers

/// First contact time per world rank (process-wide; written once per peer).
static FIRST_CONTACT: OnceLock<Box<[AtomicI64]>> = OnceLock::new();
static PEER_TABLES: std::sync::Mutex<Vec<&'static PeerCounts>> = std::sync::Mutex::new(Vec::new());

/// The peer tables' lock, to hold across a `fork` (see `forking`).
pub(crate) fn hold_for_fork() -> diag::Held {
    diag::hold(&PEER_TABLES)
}
static DISTINCT_PEERS: AtomicU32 = AtomicU32::new(0);

/// One point-to-point message of the calling thread (`slot`) to or from world rank `peer`.
#[inline]
pub fn note_peer(slot: &slots::ThreadSlot, peer: i32, bytes: u64, t: i64) {
    if peer < 0 || peer == WORLD_RANK.load(Ordering::Relaxed) {
        return;
    }
    let Some(first) = FIRST_CONTACT.get().and_then(|f| f.get(peer as usize)) else {
        return;
    };
    let slot = &slot.mpi_thread.peers;
    let mut mine = slot.load(Ordering::Relaxed) as *const PeerCounts;
    if mine.is_null() {
        mine = my_peer_counts(slot);
    }
    // SAFETY: leaked, sized like FIRST_CONTACT, written only by this thread.
    let counts = unsafe { &*mine };
    let i = peer as usize;
    let m = &counts.messages[i];
    m.store(m.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    let b = &counts.bytes[i];
    b.store(b.load(Ordering::Relaxed) + bytes, Ordering::Relaxed);
    if first.load(Ordering::Relaxed) == 0 {
        new_peer(first, t.max(1));
    }
}

#[cold]
fn my_peer_counts(slot: &AtomicPtr<PeerCounts>) -> *const PeerCounts {
    let n = FIRST_CONTACT.get().map_or(0, |f| f.len());
    let counts: &'static PeerCounts = Box::leak(Box::new(PeerCounts {
        messages: (0..n).map(|_| AtomicU64::new(0)).collect(),
        bytes: (0..n).map(|_| AtomicU64::new(0)).collect(),
    }));
    diag::lock(&PEER_TABLES).push(counts);
    slot.store(
        counts as *const PeerCounts as *mut PeerCounts,
        Ordering::Relaxed,
    );
    counts
}

#[cold]
fn new_peer(first: &AtomicI64, t: i64) {
    if first
        .compare_exchange(0, t, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        let n = DISTINCT_PEERS.fetch_add(1, Ordering::Relaxed) + 1;
        spooling::record_sample(t, "mpi.connections", -1, n as f64);
    }
}

/// Samples of every peer's totals (at MPI_Finalize).
fn write_peer_samples(t: i64) {
    let Some(first) = FIRST_CONTACT.get() else {
        return;
    };
    let tables = diag::lock(&PEER_TABLES).clone();
    for (rank, f) in first.iter().enumerate() {
        let first = f.load(Ordering::Relaxed);
        if first == 0 {
            continue;
        }
        let sum = |pick: fn(&PeerCounts) -> &[AtomicU64]| -> u64 {
            tables
                .iter()
                .map(|c| pick(c)[rank].load(Ordering::Relaxed))
                .sum()
        };
        let key = rank as i64;
        spooling::record_sample(t, "mpi.peer.messages", key, sum(|c| &c.messages) as f64);
        spooling::record_sample(t, "mpi.peer.bytes", key, sum(|c| &c.bytes) as f64);
        spooling::record_sample(t, "mpi.peer.first_contact_ns", key, first as f64);
    }
}

fn register_metrics() {
    use hyscope_format::MetricInfo;
    let defs = [
        (
            "mpi.connections",
            "peers",
            "distinct point-to-point peers of this rank so far (a sample each time a new one appears)",
        ),
        (
            "mpi.peer.messages",
            "messages",
            "point-to-point messages sent to and received from peer `key` (world rank)",
        ),
        (
            "mpi.peer.bytes",
            "bytes",
            "point-to-point bytes sent to and received from peer `key`",
        ),
        (
            "mpi.peer.first_contact_ns",
            "ns",
            "collector clock at the first message with peer `key`",
        ),
    ];
    state::with_manifest(|m| {
        for (name, unit, description) in defs {
            m.metrics.insert(
                name.to_string(),
                MetricInfo {
                    unit: unit.to_string(),
                    description: description.to_string(),
                },
            );
        }
    });
}

// ---------------------------------------------------------------- environment

/// Thread level name as in the manifest.
pub fn level_name(level: c_int) -> String {
    // SAFETY: constants of the MPI library.
    unsafe {
        if level == ffi::RSMPI_THREAD_SINGLE {
            "single"
        } else if level == ffi::RSMPI_THREAD_FUNNELED {
            "funneled"
        } else if level == ffi::RSMPI_THREAD_SERIALIZED {
            "serialized"
        } else if level == ffi::RSMPI_THREAD_MULTIPLE {
            "multiple"
        } else {
            "unknown"
        }
    }
    .to_string()
}

/// Before the real MPI_Init.
pub fn before_init() {
    crate::diag::guarded(|| {
        lifecycle::init(crate::samplers::first_readings);
        crate::samplers::on_mpi_init_begin();
        keep_loaded::before_init();
    });
}

/// After a successful MPI_Init(_thread): world, translation, peers, clock sync, MPI info.
pub fn after_init(levels: Option<(c_int, c_int)>) {
    crate::diag::guarded(|| {
        let mut rank = 0;
        let mut size = 1;
        let mut group = unsafe { ffi::RSMPI_GROUP_NULL };
        // SAFETY: MPI is initialised; out-pointers are locals.
        unsafe {
            ffi::PMPI_Comm_rank(world(), &mut rank);
            ffi::PMPI_Comm_size(world(), &mut size);
            ffi::PMPI_Comm_group(world(), &mut group);
        }
        WORLD_RANK.store(rank, Ordering::Relaxed);
        WORLD_SIZE.store(size, Ordering::Relaxed);
        let _ = WORLD_GROUP.set(Group(group));
        let _ = FIRST_CONTACT.set((0..size).map(|_| AtomicI64::new(0)).collect());
        MPI_UP.store(true, Ordering::Relaxed);
        lifecycle::set_mpi_world(rank as u32, size as u32);
        register_metrics();
        let levels = levels.unwrap_or_else(|| {
            let mut provided = 0;
            // SAFETY: MPI is initialised.
            unsafe { ffi::PMPI_Query_thread(&mut provided) };
            (unsafe { ffi::RSMPI_THREAD_SINGLE }, provided)
        });
        job::at_init(levels);
        lifecycle::on_mpi_ready();
        crate::samplers::on_mpi_init_end();
        mpit_background::begin();
    });
}

/// Before the real MPI_Finalize: last clock sync, peer totals, the trace so
/// far encoded and its symbols resolved (while no rank can exit yet), job
/// manifest.
pub fn before_finalize() {
    crate::diag::guarded(|| {
        // The sampler's MPI_T and the control variables (`mpit_background`).
        mpit_background::finish();
        crate::samplers::on_mpi_finalize_begin();
        write_peer_samples(clock::now_ns());
        lifecycle::checkpoint();
        job::at_finalize();
    });
}

/// After the real MPI_Finalize.
pub fn after_finalize() {
    MPI_UP.store(false, Ordering::Relaxed);
    crate::diag::guarded(lifecycle::flush_all);
}

/// MPI_Pcontrol: level 0 pauses recording, other levels resume it; levels
/// other than 0 and 1 also begin a phase (`phases::pcontrol`).
pub fn pcontrol(level: c_int) {
    // A run of polls ends here, paused or not.
    polls::close(slots::slot());
    ENABLED.store(level != 0, Ordering::Relaxed);
    crate::diag::guarded(|| crate::phases::pcontrol(level));
}

/// Before the real MPI_Abort: spool what was recorded ([`lifecycle::abort`]).
pub fn before_abort(errorcode: c_int) {
    crate::diag::guarded(|| lifecycle::abort(errorcode));
}

pub fn world_rank() -> i32 {
    WORLD_RANK.load(Ordering::Relaxed)
}
pub fn world_size() -> i32 {
    WORLD_SIZE.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_from_maps() {
        let openmpi =
            "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4\n";
        assert!(!maps_show_mpich(openmpi));
        assert!(maps_show_mpich(
            "7f00-7f01 r-xp 00000000 08:01 125 /usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0\n"
        ));
        assert!(maps_show_mpich(
            "7f00-7f01 r-xp 00000000 08:01 126 /opt/mpich/lib/libmpi.so.12.1.1\n"
        ));
    }

    #[cfg(hyscope_mpich)]
    #[test]
    fn foreign_mpi_from_maps() {
        let openmpi =
            "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4\n";
        assert!(maps_show_foreign_mpi(openmpi));
        let mpich =
            "7f00-7f01 r-xp 00000000 08:01 125 /usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0\n";
        assert!(!maps_show_foreign_mpi(mpich));
    }

    #[cfg(not(hyscope_mpich))]
    #[test]
    fn foreign_mpi_from_maps() {
        let openmpi = "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4\n\
                       7f02-7f03 r-xp 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2\n";
        assert!(!maps_show_foreign_mpi(openmpi));
        let mpich =
            "7f00-7f01 r-xp 00000000 08:01 125 /usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0\n";
        assert!(maps_show_foreign_mpi(mpich));
        let mpich_abi = "7f00-7f01 r-xp 00000000 08:01 126 /opt/mpich/lib/libmpi.so.12.1.1\n";
        assert!(maps_show_foreign_mpi(mpich_abi));
        assert!(!maps_show_foreign_mpi("7f00-7f01 rw-p 00000000 00:00 0 \n"));
    }
}

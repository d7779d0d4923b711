//! Every wrapped C MPI call, from one declarative table.
//!
//! Each entry `MPI_X = PMPI_X(args) [pre { .. }] |r, rc| { .. }` generates a
//! module `MPI_X` with `inner(callsite, args)` — which fills a record `r`
//! (call code, thread, in_parallel, call site), runs `pre`, times the PMPI call,
//! runs the body with the PMPI return code `rc` and records `r` — and the
//! exported `MPI_X` trampoline ([`crate::mpi_shim`]). The Fortran symbols call
//! the same `inner`. Byte counts are count × type size of the buffers this
//! rank sends and receives (sums over peers for the v/w variants); only
//! arguments significant on this rank are read (e.g. receive types at the root).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;

use hyscope_format::{MpiRecord, mpi_call};
use mpi_sys as ffi;
use mpi_sys::{
    MPI_Aint, MPI_Comm, MPI_Datatype, MPI_File, MPI_Group, MPI_Info, MPI_Message, MPI_Offset,
    MPI_Op, MPI_Request, MPI_Status, MPI_Win,
};

use super::*;
use crate::clock;

macro_rules! wrappers {
    ($(
        $name:ident = $pmpi:ident ( $($arg:ident : $ty:ty),* $(,)? )
        $( pre { $($pre:tt)* } )?
        |$r:ident, $rc:ident| $post:block
    )*) => {$(
        pub mod $name {
            use super::*;
            // The table's code reads only what MPI defines for these arguments.
            #[allow(unused_mut, unused_variables, unsafe_op_in_unsafe_fn, clippy::too_many_arguments)]
            pub unsafe extern "C" fn inner(callsite: usize, $(mut $arg: $ty),*) -> c_int {
                let Some(enter) = Enter::new() else {
                    return ffi::$pmpi($($arg),*);
                };
                let mut $r = Rec::new(enter.slot(), mpi_call::$name, callsite);
                $($($pre)*)?
                $r.start_ns = clock::now_ns();
                // Forwarded (statuses possibly replaced by the wrapper's own).
                let $rc = ffi::$pmpi($($arg),*);
                $r.end_ns = clock::now_ns();
                $post
                if recording() {
                    $r.record();
                }
                $rc
            }
            $crate::mpi_shim!(inner, args = ({ let a: &[&str] = &[$(stringify!($arg)),*]; a.len() }) => stringify!($name));
        }
    )*};
}

// ------------------------------------------------------------------ helpers

/// `MPI_Init`'s row starts where the collector loaded the libraries
/// `MPI_Init` would have loaded itself (`keep_loaded`): their time is
/// `MPI_Init`'s, as without the collector.
fn init_started_at_loading(r: &mut Rec) {
    if let Some(t) = super::keep_loaded::started_ns() {
        r.start_ns = r.start_ns.min(t);
    }
}

/// The collector's work after the real `MPI_Init` ([`after_init`]): the
/// application's `MPI_Init` returns after it, so the row ends after it too,
/// and `RankInfo::init_ns` says how long it took. Otherwise that time would
/// read as the application's own code after `MPI_Init`.
fn after_init_in_row(r: &mut Rec, levels: Option<(c_int, c_int)>) {
    after_init(levels);
    let end = clock::now_ns();
    let spent = u64::try_from(end - r.end_ns).unwrap_or(0);
    crate::state::with_rank_info(|i| i.init_ns = spent);
    r.end_ns = end;
}

/// A point-to-point send: peer, tag, bytes, communicator; counts the peer.
#[inline]
fn send(
    r: &mut Rec,
    count: c_int,
    dt: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> CommInfo {
    let c = comm_info(comm);
    r.comm_id = c.id;
    r.peer = c.world_rank(dest);
    r.tag = tag;
    r.bytes_sent = nbytes(count, dt);
    note_peer(r.slot, r.peer, r.bytes_sent, r.start_ns);
    c
}

/// The receive side of a `Sendrecv(_replace)`: source and tag from the
/// status once it completed, else as given (maybe ANY).
///
/// # Safety
/// `status` is null or a status MPI filled when `rc` is 0.
#[inline]
unsafe fn sendrecv_recv(
    r: &mut Rec,
    c: &CommInfo,
    rc: c_int,
    source: c_int,
    tag: c_int,
    status: *const MPI_Status,
) {
    r.recv_peer = c.world_rank(source);
    r.recv_tag = if tag < 0 { hyscope_format::ANY } else { tag };
    if rc == 0 {
        // SAFETY: forwarded.
        unsafe { sendrecv_from_status(r, c, status) };
    }
}

/// A receive posted now (nonblocking): peer and tag as given (maybe ANY).
#[inline]
fn post_recv(r: &mut MpiRecord, source: c_int, tag: c_int, comm: MPI_Comm) -> CommInfo {
    let c = comm_info(comm);
    r.comm_id = c.id;
    r.peer = c.world_rank(source);
    r.tag = if tag < 0 { hyscope_format::ANY } else { tag };
    c
}

#[inline]
fn coll(r: &mut MpiRecord, comm: MPI_Comm) -> CommInfo {
    let c = comm_info(comm);
    r.comm_id = c.id;
    c
}

#[inline]
fn rooted(r: &mut MpiRecord, comm: MPI_Comm, root: c_int) -> (CommInfo, bool) {
    let c = coll(r, comm);
    r.root = c.world_rank(root);
    (c, c.rank == root)
}

/// Requests and statuses a completion call keeps on its stack; more go to the
/// heap. 64 is a common window of nonblocking messages (the OSU bandwidth
/// tests' own), which then allocates nothing per call.
const ON_STACK: usize = 64;

/// The entries of the requests of a completion call, taken before the call
/// (see [`Taken`]); each is finished exactly once afterwards.
pub struct Saved {
    n: usize,
    /// The first `n` are set when `n` ≤ [`ON_STACK`], the rest left
    /// uninitialised: a completion call (every poll of a `Testall` loop)
    /// then writes only the entries of its requests, not 4 KiB of empty ones.
    stack: [MaybeUninit<Taken>; ON_STACK],
    heap: Vec<Taken>,
}

impl Saved {
    /// Take the entries of the `n` requests at `reqs`, into a [`Saved::empty`]
    /// where it lies (the wrappers' `pre`): made and filled in two steps so
    /// that its entries (4 KiB on the calling thread's stack) are not copied
    /// into the caller's frame.
    ///
    /// # Safety
    /// `reqs` points to `n` requests (or is null with n <= 0); `self` holds
    /// no entries yet.
    #[inline(always)]
    pub unsafe fn take_all(&mut self, n: c_int, reqs: *const MPI_Request) {
        let n = if reqs.is_null() { 0 } else { n.max(0) as usize };
        let s = self;
        s.n = n;
        // A null array (count 0, as MPICH's waittestnull passes) is not a slice
        // even of length 0: from_raw_parts needs a non-null pointer.
        let src: &[MPI_Request] = if n == 0 {
            &[]
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(reqs, n) }
        };
        if n <= ON_STACK {
            for (d, q) in s.stack.iter_mut().zip(src) {
                d.write(Taken::take(q.key()));
            }
        } else {
            s.heap = src.iter().map(|q| Taken::take(q.key())).collect();
        }
    }

    /// No entries yet: see [`Saved::take_all`].
    #[inline(always)]
    pub fn empty() -> Saved {
        Saved {
            n: 0,
            stack: [const { MaybeUninit::uninit() }; ON_STACK],
            heap: Vec::new(),
        }
    }

    #[inline]
    fn slot(&mut self, i: usize) -> Option<&mut Taken> {
        if i >= self.n {
            None
        } else if self.n <= ON_STACK {
            // SAFETY: `take_all` set the first n entries (n ≤ ON_STACK here), and they
            // stay set (`done` and `rest_back` replace, never uninitialise).
            Some(unsafe { self.stack[i].assume_init_mut() })
        } else {
            Some(&mut self.heap[i])
        }
    }

    /// Request i completed with `status`.
    ///
    /// # Safety
    /// `status` is null or filled by MPI for request i.
    #[inline]
    pub unsafe fn done(&mut self, i: usize, status: *const MPI_Status, t: i64, callsite: usize) {
        if let Some(s) = self.slot(i) {
            let taken = std::mem::replace(s, Taken::NONE);
            // SAFETY: forwarded.
            unsafe { taken.completed(status, t, callsite) };
        }
    }

    /// Put back every request not reported as completed.
    #[inline]
    pub fn rest_back(&mut self) {
        for i in 0..self.n {
            if let Some(s) = self.slot(i) {
                std::mem::replace(s, Taken::NONE).put_back();
            }
        }
    }
}

/// Status storage the wrapper substitutes for `MPI_STATUSES_IGNORE`.
pub struct Statuses {
    stack: [MaybeUninit<MPI_Status>; ON_STACK],
    heap: Vec<MaybeUninit<MPI_Status>>,
}

impl Statuses {
    #[inline]
    pub fn new() -> Statuses {
        Statuses {
            stack: [MaybeUninit::uninit(); ON_STACK],
            heap: Vec::new(),
        }
    }

    /// `user` if the application wants statuses, else storage for `n` of ours.
    #[inline]
    pub fn or_ours(&mut self, user: *mut MPI_Status, n: c_int) -> *mut MPI_Status {
        if !user.is_null() && user != unsafe { ffi::RSMPI_STATUSES_IGNORE } {
            return user;
        }
        let n = n.max(0) as usize;
        if n <= ON_STACK {
            self.stack.as_mut_ptr().cast()
        } else {
            self.heap = vec![MaybeUninit::uninit(); n];
            self.heap.as_mut_ptr().cast()
        }
    }
}

impl Default for Statuses {
    fn default() -> Self {
        Statuses::new()
    }
}

#[inline]
fn is_true(flag: *const c_int) -> bool {
    // SAFETY: MPI wrote the flag.
    !flag.is_null() && unsafe { *flag } != 0
}

// ------------------------------------------------------------------ the table

wrappers! {
    // ---- environment
    MPI_Init = PMPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char)
        pre { before_init(); }
        |r, rc| {
            init_started_at_loading(&mut r);
            if rc == 0 { after_init_in_row(&mut r, None); }
        }
    MPI_Init_thread = PMPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int, provided: *mut c_int)
        pre { before_init(); }
        |r, rc| {
            init_started_at_loading(&mut r);
            r.tag = required;
            if rc == 0 {
                let p = if provided.is_null() { required } else { *provided };
                r.root = p;
                after_init_in_row(&mut r, Some((required, p)));
            }
        }
    MPI_Finalize = PMPI_Finalize()
        pre { before_finalize(); }
        |r, rc| {
            // Record now and flush: the trace is complete when MPI is gone.
            if recording() { r.record(); }
            r.call = 0;
            after_finalize();
        }
    MPI_Abort = PMPI_Abort(comm: MPI_Comm, errorcode: c_int)
        pre {
            r.comm_id = comm_info(comm).id;
            r.tag = errorcode;
            r.start_ns = clock::now_ns();
            r.end_ns = r.start_ns;
            r.record();
            r.call = 0;
            before_abort(errorcode);
        }
        |r, rc| {}
    MPI_Pcontrol = PMPI_Pcontrol(level: c_int)
        pre { pcontrol(level); }
        |r, rc| { r.tag = level; }

    // ---- point to point: sends
    MPI_Send = PMPI_Send(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm)
        |r, rc| { send(&mut r, count, dt, dest, tag, comm); }
    MPI_Ssend = PMPI_Ssend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm)
        |r, rc| { send(&mut r, count, dt, dest, tag, comm); }
    MPI_Bsend = PMPI_Bsend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm)
        |r, rc| { send(&mut r, count, dt, dest, tag, comm); }
    MPI_Rsend = PMPI_Rsend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm)
        |r, rc| { send(&mut r, count, dt, dest, tag, comm); }
    MPI_Isend = PMPI_Isend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = send(&mut r, count, dt, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }
    MPI_Issend = PMPI_Issend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = send(&mut r, count, dt, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }
    MPI_Ibsend = PMPI_Ibsend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = send(&mut r, count, dt, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }
    MPI_Irsend = PMPI_Irsend(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = send(&mut r, count, dt, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }

    // ---- receives and probes
    MPI_Recv = PMPI_Recv(buf: *mut c_void, count: c_int, dt: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| { let c = coll(&mut r, comm); if rc == 0 { recv_from_status(&mut r, &c, status); } }
    MPI_Irecv = PMPI_Irecv(buf: *mut c_void, count: c_int, dt: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, source, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Recv, false, 0, &c); } }
    MPI_Sendrecv = PMPI_Sendrecv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, dest: c_int, sendtag: c_int,
                                 recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, source: c_int, recvtag: c_int,
                                 comm: MPI_Comm, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = send(&mut r, sendcount, sendtype, dest, sendtag, comm);
            sendrecv_recv(&mut r, &c, rc, source, recvtag, status);
        }
    MPI_Sendrecv_replace = PMPI_Sendrecv_replace(buf: *mut c_void, count: c_int, dt: MPI_Datatype, dest: c_int, sendtag: c_int,
                                                 source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = send(&mut r, count, dt, dest, sendtag, comm);
            sendrecv_recv(&mut r, &c, rc, source, recvtag, status);
        }
    MPI_Probe = PMPI_Probe(source: c_int, tag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = post_recv(&mut r, source, tag, comm);
            if rc == 0 { r.peer = c.world_rank((*status).MPI_SOURCE); r.tag = (*status).MPI_TAG; r.bytes_recv = status_bytes(&*status); }
        }
    MPI_Iprobe = PMPI_Iprobe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = post_recv(&mut r, source, tag, comm);
            if rc == 0 && is_true(flag) { r.peer = c.world_rank((*status).MPI_SOURCE); r.tag = (*status).MPI_TAG; r.bytes_recv = status_bytes(&*status); }
            else if rc == 0 { let (a, b) = polls::probe_key(&r); polls::fold(&mut r, a, b); }
        }
    MPI_Mprobe = PMPI_Mprobe(source: c_int, tag: c_int, comm: MPI_Comm, message: *mut MPI_Message, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = post_recv(&mut r, source, tag, comm);
            if rc == 0 {
                r.peer = c.world_rank((*status).MPI_SOURCE); r.tag = (*status).MPI_TAG; r.bytes_recv = status_bytes(&*status);
                register_alias((*message).key(), comm);
            }
        }
    MPI_Improbe = PMPI_Improbe(source: c_int, tag: c_int, comm: MPI_Comm, flag: *mut c_int, message: *mut MPI_Message, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let c = post_recv(&mut r, source, tag, comm);
            if rc == 0 && is_true(flag) {
                r.peer = c.world_rank((*status).MPI_SOURCE); r.tag = (*status).MPI_TAG; r.bytes_recv = status_bytes(&*status);
                register_alias((*message).key(), comm);
            } else if rc == 0 {
                let (a, b) = polls::probe_key(&r);
                polls::fold(&mut r, a, b);
            }
        }
    MPI_Mrecv = PMPI_Mrecv(buf: *mut c_void, count: c_int, dt: MPI_Datatype, message: *mut MPI_Message, status: *mut MPI_Status)
        pre { let mut own = zero_status(); if status_ignored(status) { status = &mut own; } let c = alias_info((*message).key()); forget_handle((*message).key()); }
        |r, rc| {
            r.comm_id = c.id;
            if rc == 0 { recv_from_status(&mut r, &c, status); }
        }
    MPI_Imrecv = PMPI_Imrecv(buf: *mut c_void, count: c_int, dt: MPI_Datatype, message: *mut MPI_Message, req: *mut MPI_Request)
        pre { let c = alias_info((*message).key()); forget_handle((*message).key()); }
        |r, rc| {
            r.comm_id = c.id;
            if rc == 0 { new_request(&mut r, *req, ReqKind::Recv, false, 0, &c); }
        }

    // ---- persistent requests
    MPI_Send_init = PMPI_Send_init(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, true, nbytes(count, dt), &c); } }
    MPI_Ssend_init = PMPI_Ssend_init(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, true, nbytes(count, dt), &c); } }
    MPI_Bsend_init = PMPI_Bsend_init(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, true, nbytes(count, dt), &c); } }
    MPI_Rsend_init = PMPI_Rsend_init(buf: *const c_void, count: c_int, dt: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, dest, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, true, nbytes(count, dt), &c); } }
    MPI_Recv_init = PMPI_Recv_init(buf: *mut c_void, count: c_int, dt: MPI_Datatype, source: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = post_recv(&mut r, source, tag, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Recv, true, 0, &c); } }
    MPI_Start = PMPI_Start(req: *mut MPI_Request)
        pre { let key = (*req).key(); }
        |r, rc| { if rc == 0 { start_request(&mut r, key); } }
    MPI_Startall = PMPI_Startall(count: c_int, reqs: *mut MPI_Request)
        |r, rc| {
            // One row for the call; per-request ids are on the completions.
            if rc == 0 && !reqs.is_null() {
                for i in 0..count.max(0) as usize {
                    let mut one = r;
                    start_request(&mut one, (*reqs.add(i)).key());
                    r.bytes_sent = one.bytes_sent;
                    if count == 1 { r = one; }
                }
            }
        }
    MPI_Request_free = PMPI_Request_free(req: *mut MPI_Request)
        pre { free_request((*req).key()); }
        |r, rc| {}
    MPI_Cancel = PMPI_Cancel(req: *mut MPI_Request)
        |r, rc| {}

    // ---- completion (entries taken before the call, see `Taken`)
    MPI_Wait = PMPI_Wait(req: *mut MPI_Request, status: *mut MPI_Status)
        pre { let taken = Taken::take((*req).key()); let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| { taken.finish(rc == 0, status, r.end_ns, r.callsite as usize); }
    MPI_Test = PMPI_Test(req: *mut MPI_Request, flag: *mut c_int, status: *mut MPI_Status)
        pre { let key = (*req).key(); let taken = Taken::take(key); let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            let done = rc == 0 && is_true(flag);
            taken.finish(done, status, r.end_ns, r.callsite as usize);
            if rc == 0 && !done { let (a, b) = polls::request_key(key); polls::fold(&mut r, a, b); }
        }
    MPI_Waitall = PMPI_Waitall(count: c_int, reqs: *mut MPI_Request, statuses: *mut MPI_Status)
        pre { let mut saved = Saved::empty(); saved.take_all(count, reqs); let mut own = Statuses::new(); statuses = own.or_ours(statuses, count); }
        |r, rc| {
            if rc == 0 {
                for i in 0..count.max(0) as usize { saved.done(i, statuses.add(i), r.end_ns, r.callsite as usize); }
            }
            saved.rest_back();
        }
    MPI_Testall = PMPI_Testall(count: c_int, reqs: *mut MPI_Request, flag: *mut c_int, statuses: *mut MPI_Status)
        pre { let set = polls::request_set_key(count, reqs); let mut saved = Saved::empty(); saved.take_all(count, reqs); let mut own = Statuses::new(); statuses = own.or_ours(statuses, count); }
        |r, rc| {
            if rc == 0 && is_true(flag) {
                for i in 0..count.max(0) as usize { saved.done(i, statuses.add(i), r.end_ns, r.callsite as usize); }
            }
            saved.rest_back();
            if rc == 0 && !is_true(flag) { polls::fold(&mut r, set.0, set.1); }
        }
    MPI_Waitany = PMPI_Waitany(count: c_int, reqs: *mut MPI_Request, index: *mut c_int, status: *mut MPI_Status)
        pre { let mut saved = Saved::empty(); saved.take_all(count, reqs); let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            if rc == 0 && *index >= 0 { saved.done(*index as usize, status, r.end_ns, r.callsite as usize); }
            saved.rest_back();
        }
    MPI_Testany = PMPI_Testany(count: c_int, reqs: *mut MPI_Request, index: *mut c_int, flag: *mut c_int, status: *mut MPI_Status)
        pre { let set = polls::request_set_key(count, reqs); let mut saved = Saved::empty(); saved.take_all(count, reqs); let mut own = zero_status(); if status_ignored(status) { status = &mut own; } }
        |r, rc| {
            if rc == 0 && is_true(flag) && *index >= 0 { saved.done(*index as usize, status, r.end_ns, r.callsite as usize); }
            saved.rest_back();
            if rc == 0 && !is_true(flag) { polls::fold(&mut r, set.0, set.1); }
        }
    MPI_Waitsome = PMPI_Waitsome(incount: c_int, reqs: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status)
        pre { let mut saved = Saved::empty(); saved.take_all(incount, reqs); let mut own = Statuses::new(); statuses = own.or_ours(statuses, incount); }
        |r, rc| {
            if rc == 0 && *outcount > 0 {
                for k in 0..*outcount as usize {
                    saved.done(*indices.add(k) as usize, statuses.add(k), r.end_ns, r.callsite as usize);
                }
            }
            saved.rest_back();
        }
    MPI_Testsome = PMPI_Testsome(incount: c_int, reqs: *mut MPI_Request, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MPI_Status)
        pre { let set = polls::request_set_key(incount, reqs); let mut saved = Saved::empty(); saved.take_all(incount, reqs); let mut own = Statuses::new(); statuses = own.or_ours(statuses, incount); }
        |r, rc| {
            if rc == 0 && *outcount > 0 {
                for k in 0..*outcount as usize {
                    saved.done(*indices.add(k) as usize, statuses.add(k), r.end_ns, r.callsite as usize);
                }
            }
            saved.rest_back();
            if rc == 0 && *outcount == 0 { polls::fold(&mut r, set.0, set.1); }
        }

    // ---- blocking collectives
    MPI_Barrier = PMPI_Barrier(comm: MPI_Comm)
        |r, rc| { coll(&mut r, comm); }
    MPI_Bcast = PMPI_Bcast(buf: *mut c_void, count: c_int, dt: MPI_Datatype, root: c_int, comm: MPI_Comm)
        |r, rc| { let (c, me) = rooted(&mut r, comm, root); let b = nbytes(count, dt); if me { r.bytes_sent = b * (c.size.max(1) - 1) as u64; } else { r.bytes_recv = b; } }
    MPI_Reduce = PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm)
        |r, rc| { let (_, me) = rooted(&mut r, comm, root); let b = nbytes(count, dt); r.bytes_sent = b; if me { r.bytes_recv = b; } }
    MPI_Allreduce = PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        |r, rc| { coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b; }
    MPI_Gather = PMPI_Gather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        |r, rc| { let (c, me) = rooted(&mut r, comm, root); gather(&mut r, &c, me, sendbuf, sendcount, sendtype, recvcount, recvtype); }
    MPI_Gatherv = PMPI_Gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        |r, rc| { let (c, me) = rooted(&mut r, comm, root); gatherv(&mut r, &c, me, sendbuf, sendcount, sendtype, recvcounts, recvtype); }
    MPI_Scatter = PMPI_Scatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        |r, rc| { let (c, me) = rooted(&mut r, comm, root); scatter(&mut r, &c, me, sendcount, sendtype, recvbuf, recvcount, recvtype); }
    MPI_Scatterv = PMPI_Scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
        |r, rc| { let (c, me) = rooted(&mut r, comm, root); scatterv(&mut r, &c, me, sendcounts, sendtype, recvbuf, recvcount, recvtype); }
    MPI_Allgather = PMPI_Allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); gather(&mut r, &c, true, sendbuf, sendcount, sendtype, recvcount, recvtype); }
    MPI_Allgatherv = PMPI_Allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); gatherv(&mut r, &c, true, sendbuf, sendcount, sendtype, recvcounts, recvtype); }
    MPI_Alltoall = PMPI_Alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); alltoall(&mut r, &c, sendbuf, sendcount, sendtype, recvcount, recvtype); }
    MPI_Alltoallv = PMPI_Alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); alltoallv(&mut r, &c, sendbuf, sendcounts, sendtype, recvcounts, recvtype); }
    MPI_Alltoallw = PMPI_Alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); alltoallw(&mut r, &c, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes); }
    MPI_Reduce_scatter = PMPI_Reduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); reduce_scatter(&mut r, &c, recvcounts, dt); }
    MPI_Reduce_scatter_block = PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        |r, rc| { let c = coll(&mut r, comm); let b = nbytes(recvcount, dt); r.bytes_sent = b * c.size.max(0) as u64; r.bytes_recv = b; }
    MPI_Scan = PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        |r, rc| { coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b; }
    MPI_Exscan = PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm)
        |r, rc| { coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b; }

    // ---- nonblocking collectives (bytes on the call, completion on the request)
    MPI_Ibarrier = PMPI_Ibarrier(comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = coll(&mut r, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }
    MPI_Ibcast = PMPI_Ibcast(buf: *mut c_void, count: c_int, dt: MPI_Datatype, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); let b = nbytes(count, dt);
            if me { r.bytes_sent = b * (c.size.max(1) - 1) as u64; } else { r.bytes_recv = b; }
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ireduce = PMPI_Ireduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); let b = nbytes(count, dt); r.bytes_sent = b; if me { r.bytes_recv = b; }
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iallreduce = PMPI_Iallreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b;
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Igather = PMPI_Igather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); gather(&mut r, &c, me, sendbuf, sendcount, sendtype, recvcount, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Igatherv = PMPI_Igatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); gatherv(&mut r, &c, me, sendbuf, sendcount, sendtype, recvcounts, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iscatter = PMPI_Iscatter(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); scatter(&mut r, &c, me, sendcount, sendtype, recvbuf, recvcount, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iscatterv = PMPI_Iscatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let (c, me) = rooted(&mut r, comm, root); scatterv(&mut r, &c, me, sendcounts, sendtype, recvbuf, recvcount, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iallgather = PMPI_Iallgather(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); gather(&mut r, &c, true, sendbuf, sendcount, sendtype, recvcount, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iallgatherv = PMPI_Iallgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); gatherv(&mut r, &c, true, sendbuf, sendcount, sendtype, recvcounts, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ialltoall = PMPI_Ialltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); alltoall(&mut r, &c, sendbuf, sendcount, sendtype, recvcount, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ialltoallv = PMPI_Ialltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); alltoallv(&mut r, &c, sendbuf, sendcounts, sendtype, recvcounts, recvtype);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ialltoallw = PMPI_Ialltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); alltoallw(&mut r, &c, sendbuf, sendcounts, sendtypes, recvcounts, recvtypes);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ireduce_scatter = PMPI_Ireduce_scatter(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); reduce_scatter(&mut r, &c, recvcounts, dt);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Ireduce_scatter_block = PMPI_Ireduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); let b = nbytes(recvcount, dt); r.bytes_sent = b * c.size.max(0) as u64; r.bytes_recv = b;
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iscan = PMPI_Iscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b;
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_Iexscan = PMPI_Iexscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, dt: MPI_Datatype, op: MPI_Op, comm: MPI_Comm, req: *mut MPI_Request)
        |r, rc| {
            let c = coll(&mut r, comm); let b = nbytes(count, dt); r.bytes_sent = b; r.bytes_recv = b;
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }

    // ---- communicators and groups (comm_id = the new communicator's id; tag = color/type)
    MPI_Comm_dup = PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Comm_idup = PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, req: *mut MPI_Request)
        |r, rc| { let c = coll(&mut r, comm); if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); } }
    MPI_Comm_split = PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm)
        |r, rc| { r.tag = color; if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Comm_split_type = PMPI_Comm_split_type(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, newcomm: *mut MPI_Comm)
        |r, rc| { r.tag = split_type; if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Comm_create = PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Comm_create_group = PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm)
        |r, rc| { r.tag = tag; if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Cart_create = PMPI_Cart_create(comm: MPI_Comm, ndims: c_int, dims: *const c_int, periods: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Cart_sub = PMPI_Cart_sub(comm: MPI_Comm, remain_dims: *const c_int, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Graph_create = PMPI_Graph_create(comm: MPI_Comm, nnodes: c_int, index: *const c_int, edges: *const c_int, reorder: c_int, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Dist_graph_create_adjacent = PMPI_Dist_graph_create_adjacent(comm: MPI_Comm, indegree: c_int, sources: *const c_int, sourceweights: *const c_int,
                                                                     outdegree: c_int, destinations: *const c_int, destweights: *const c_int,
                                                                     info: MPI_Info, reorder: c_int, newcomm: *mut MPI_Comm)
        |r, rc| { if rc == 0 { register_comm(*newcomm, comm, r.call); r.comm_id = comm_info(*newcomm).id; } }
    MPI_Comm_free = PMPI_Comm_free(comm: *mut MPI_Comm)
        // Forgotten before the call: once freed, another thread may get the same handle.
        pre { r.comm_id = comm_info(*comm).id; forget_handle((*comm).key()); }
        |r, rc| {}
    MPI_Comm_group = PMPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group)
        |r, rc| { coll(&mut r, comm); }
    MPI_Group_incl = PMPI_Group_incl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group)
        |r, rc| {}
    MPI_Group_excl = PMPI_Group_excl(group: MPI_Group, n: c_int, ranks: *const c_int, newgroup: *mut MPI_Group)
        |r, rc| {}
    MPI_Group_free = PMPI_Group_free(group: *mut MPI_Group)
        |r, rc| {}

    // ---- one-sided (windows share the id of their communicator)
    MPI_Win_create = PMPI_Win_create(base: *mut c_void, size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win)
        |r, rc| { coll(&mut r, comm); if rc == 0 { register_alias((*win).key(), comm); } }
    MPI_Win_allocate = PMPI_Win_allocate(size: MPI_Aint, disp_unit: c_int, info: MPI_Info, comm: MPI_Comm, baseptr: *mut c_void, win: *mut MPI_Win)
        |r, rc| { coll(&mut r, comm); if rc == 0 { register_alias((*win).key(), comm); } }
    MPI_Win_free = PMPI_Win_free(win: *mut MPI_Win)
        pre { r.comm_id = alias_info((*win).key()).id; forget_handle((*win).key()); }
        |r, rc| {}
    MPI_Win_fence = PMPI_Win_fence(assert: c_int, win: MPI_Win)
        |r, rc| { r.comm_id = alias_info(win.key()).id; }
    MPI_Win_lock = PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(rank); }
    MPI_Win_unlock = PMPI_Win_unlock(rank: c_int, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(rank); }
    MPI_Win_lock_all = PMPI_Win_lock_all(assert: c_int, win: MPI_Win)
        |r, rc| { r.comm_id = alias_info(win.key()).id; }
    MPI_Win_unlock_all = PMPI_Win_unlock_all(win: MPI_Win)
        |r, rc| { r.comm_id = alias_info(win.key()).id; }
    MPI_Win_flush = PMPI_Win_flush(rank: c_int, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(rank); }
    MPI_Win_flush_all = PMPI_Win_flush_all(win: MPI_Win)
        |r, rc| { r.comm_id = alias_info(win.key()).id; }
    MPI_Put = PMPI_Put(origin: *const c_void, ocount: c_int, otype: MPI_Datatype, target: c_int, disp: MPI_Aint, tcount: c_int, ttype: MPI_Datatype, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target); r.bytes_sent = nbytes(ocount, otype); }
    MPI_Get = PMPI_Get(origin: *mut c_void, ocount: c_int, otype: MPI_Datatype, target: c_int, disp: MPI_Aint, tcount: c_int, ttype: MPI_Datatype, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target); r.bytes_recv = nbytes(ocount, otype); }
    MPI_Accumulate = PMPI_Accumulate(origin: *const c_void, ocount: c_int, otype: MPI_Datatype, target: c_int, disp: MPI_Aint, tcount: c_int, ttype: MPI_Datatype, op: MPI_Op, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target); r.bytes_sent = nbytes(ocount, otype); }
    MPI_Get_accumulate = PMPI_Get_accumulate(origin: *const c_void, ocount: c_int, otype: MPI_Datatype, result: *mut c_void, rcount: c_int, rtype: MPI_Datatype,
                                             target: c_int, disp: MPI_Aint, tcount: c_int, ttype: MPI_Datatype, op: MPI_Op, win: MPI_Win)
        |r, rc| {
            let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target);
            r.bytes_sent = nbytes(ocount, otype); r.bytes_recv = nbytes(rcount, rtype);
        }
    MPI_Fetch_and_op = PMPI_Fetch_and_op(origin: *const c_void, result: *mut c_void, dt: MPI_Datatype, target: c_int, disp: MPI_Aint, op: MPI_Op, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target); r.bytes_sent = nbytes(1, dt); r.bytes_recv = r.bytes_sent; }
    MPI_Compare_and_swap = PMPI_Compare_and_swap(origin: *const c_void, compare: *const c_void, result: *mut c_void, dt: MPI_Datatype, target: c_int, disp: MPI_Aint, win: MPI_Win)
        |r, rc| { let c = alias_info(win.key()); r.comm_id = c.id; r.peer = c.world_rank(target); r.bytes_sent = 2 * nbytes(1, dt); r.bytes_recv = nbytes(1, dt); }

    // ---- MPI-IO (files share the id of their communicator; bytes requested)
    MPI_File_open = PMPI_File_open(comm: MPI_Comm, filename: *const c_char, amode: c_int, info: MPI_Info, fh: *mut MPI_File)
        |r, rc| { coll(&mut r, comm); if rc == 0 { register_alias((*fh).key(), comm); } }
    MPI_File_close = PMPI_File_close(fh: *mut MPI_File)
        pre { r.comm_id = alias_info((*fh).key()).id; forget_handle((*fh).key()); }
        |r, rc| {}
    MPI_File_read = PMPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_recv = nbytes(count, dt); }
    MPI_File_write = PMPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_sent = nbytes(count, dt); }
    MPI_File_read_all = PMPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_recv = nbytes(count, dt); }
    MPI_File_write_all = PMPI_File_write_all(fh: MPI_File, buf: *const c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_sent = nbytes(count, dt); }
    MPI_File_read_at = PMPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_recv = nbytes(count, dt); }
    MPI_File_write_at = PMPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_sent = nbytes(count, dt); }
    MPI_File_read_at_all = PMPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_recv = nbytes(count, dt); }
    MPI_File_write_at_all = PMPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, dt: MPI_Datatype, status: *mut MPI_Status)
        |r, rc| { r.comm_id = alias_info(fh.key()).id; r.bytes_sent = nbytes(count, dt); }
    MPI_File_iread = PMPI_File_iread(fh: MPI_File, buf: *mut c_void, count: c_int, dt: MPI_Datatype, req: *mut MPI_Request)
        |r, rc| {
            let c = alias_info(fh.key()); r.comm_id = c.id; r.bytes_recv = nbytes(count, dt);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_File_iwrite = PMPI_File_iwrite(fh: MPI_File, buf: *const c_void, count: c_int, dt: MPI_Datatype, req: *mut MPI_Request)
        |r, rc| {
            let c = alias_info(fh.key()); r.comm_id = c.id; r.bytes_sent = nbytes(count, dt);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_File_iread_at = PMPI_File_iread_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, dt: MPI_Datatype, req: *mut MPI_Request)
        |r, rc| {
            let c = alias_info(fh.key()); r.comm_id = c.id; r.bytes_recv = nbytes(count, dt);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
    MPI_File_iwrite_at = PMPI_File_iwrite_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, dt: MPI_Datatype, req: *mut MPI_Request)
        |r, rc| {
            let c = alias_info(fh.key()); r.comm_id = c.id; r.bytes_sent = nbytes(count, dt);
            if rc == 0 { new_request(&mut r, *req, ReqKind::Other, false, 0, &c); }
        }
}

// ------------------------------------------------------------------ collective byte rules

/// Gather/Allgather: send my block; the receiving rank gets `size` blocks.
#[allow(clippy::too_many_arguments)]
fn gather(
    r: &mut MpiRecord,
    c: &CommInfo,
    receiver: bool,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) {
    let mine = if in_place(sendbuf) {
        nbytes(recvcount, recvtype)
    } else {
        nbytes(sendcount, sendtype)
    };
    r.bytes_sent = mine;
    if receiver {
        r.bytes_recv = nbytes(recvcount, recvtype) * c.size.max(0) as u64;
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    r: &mut MpiRecord,
    c: &CommInfo,
    receiver: bool,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvcounts: *const c_int,
    recvtype: MPI_Datatype,
) {
    let all = if receiver {
        unsafe { nbytes_v(recvcounts, c.size, recvtype) }
    } else {
        0
    };
    r.bytes_sent = if in_place(sendbuf) {
        // My block is already in place: its size is my entry of recvcounts.
        if receiver && !recvcounts.is_null() && c.rank >= 0 {
            nbytes(unsafe { *recvcounts.add(c.rank as usize) }, recvtype)
        } else {
            0
        }
    } else {
        nbytes(sendcount, sendtype)
    };
    r.bytes_recv = all;
}

#[allow(clippy::too_many_arguments)]
fn scatter(
    r: &mut MpiRecord,
    c: &CommInfo,
    root: bool,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) {
    if root {
        r.bytes_sent = nbytes(sendcount, sendtype) * c.size.max(0) as u64;
    }
    r.bytes_recv = if in_place(recvbuf) {
        nbytes(sendcount, sendtype)
    } else {
        nbytes(recvcount, recvtype)
    };
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    r: &mut MpiRecord,
    c: &CommInfo,
    root: bool,
    sendcounts: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) {
    if root {
        r.bytes_sent = unsafe { nbytes_v(sendcounts, c.size, sendtype) };
    }
    r.bytes_recv = if in_place(recvbuf) {
        if root && !sendcounts.is_null() && c.rank >= 0 {
            nbytes(unsafe { *sendcounts.add(c.rank as usize) }, sendtype)
        } else {
            0
        }
    } else {
        nbytes(recvcount, recvtype)
    };
}

fn alltoall(
    r: &mut MpiRecord,
    c: &CommInfo,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) {
    let n = c.size.max(0) as u64;
    r.bytes_recv = nbytes(recvcount, recvtype) * n;
    r.bytes_sent = if in_place(sendbuf) {
        r.bytes_recv
    } else {
        nbytes(sendcount, sendtype) * n
    };
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    r: &mut MpiRecord,
    c: &CommInfo,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sendtype: MPI_Datatype,
    recvcounts: *const c_int,
    recvtype: MPI_Datatype,
) {
    r.bytes_recv = unsafe { nbytes_v(recvcounts, c.size, recvtype) };
    r.bytes_sent = if in_place(sendbuf) {
        r.bytes_recv
    } else {
        unsafe { nbytes_v(sendcounts, c.size, sendtype) }
    };
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    r: &mut MpiRecord,
    c: &CommInfo,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvcounts: *const c_int,
    recvtypes: *const MPI_Datatype,
) {
    let sum = |counts: *const c_int, types: *const MPI_Datatype| -> u64 {
        if counts.is_null() || types.is_null() {
            return 0;
        }
        (0..c.size.max(0) as usize)
            // SAFETY: w-variants pass `size` counts and types.
            .map(|i| unsafe { nbytes(*counts.add(i), *types.add(i)) })
            .sum()
    };
    r.bytes_recv = sum(recvcounts, recvtypes);
    r.bytes_sent = if in_place(sendbuf) {
        r.bytes_recv
    } else {
        sum(sendcounts, sendtypes)
    };
}

unsafe fn reduce_scatter(
    r: &mut MpiRecord,
    c: &CommInfo,
    recvcounts: *const c_int,
    dt: MPI_Datatype,
) {
    r.bytes_sent = unsafe { nbytes_v(recvcounts, c.size, dt) };
    if !recvcounts.is_null() && c.rank >= 0 {
        r.bytes_recv = nbytes(unsafe { *recvcounts.add(c.rank as usize) }, dt);
    }
}

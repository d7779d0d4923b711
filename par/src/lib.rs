//! `libhyscope_par.so`: the few MPI calls a parallel `hyscope report` makes,
//! behind a C ABI of plain integers and byte buffers. Built once per MPI
//! flavour (like the collector), so the flavour's constants (Open MPI's
//! `MPI_COMM_WORLD` is a symbol's address, MPICH's an integer) stay here and
//! `hyscope` loads the build that matches the launcher (`dlopen`), never
//! linking an MPI library itself.
//!
//! Every function returns 0 on success and an MPI error code (or -1) otherwise.
//! A process waiting for another sleeps between tests of its request (after
//! a short spell of testing without a pause) instead of blocking in MPI: MPI
//! libraries wait by polling, which on a node running more processes than
//! cores takes the cores from the processes still analysing.
//! A buffer travels as its length (`u64`) then pieces of at most
//! [`PIECE`] bytes: one process's partial results may exceed the 2 GiB an
//! MPI count can describe.

use std::os::raw::c_int;

use mpi_sys as ffi;

/// Bytes per message of a buffer (an MPI count is a C `int`).
const PIECE: usize = 1 << 30;
/// The tag of hyscope's messages.
const TAG: c_int = 4242;

fn world() -> ffi::MPI_Comm {
    // SAFETY: a constant of the MPI library, set before MPI_Init.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: as in `world`.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// Initialise MPI (if the process has not) and return this process's rank
/// and the number of processes of `MPI_COMM_WORLD`.
///
/// # Safety
/// `rank` and `size` point to writable `int`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_init(rank: *mut c_int, size: *mut c_int) -> c_int {
    let mut done: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time.
    unsafe { ffi::MPI_Initialized(&mut done) };
    if done == 0 {
        // SAFETY: null argc/argv are allowed by MPI-2 and later.
        let e = unsafe { ffi::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
        if e != 0 {
            return e;
        }
    }
    // SAFETY: MPI is initialised; the caller gives writable pointers.
    unsafe {
        let e = ffi::MPI_Comm_rank(world(), rank);
        if e != 0 {
            return e;
        }
        ffi::MPI_Comm_size(world(), size)
    }
}

/// How long a wait tests its requests without sleeping: a transfer both
/// sides are in moves on at every test (a large message goes in fragments,
/// each needing a test on both sides), so a sleep there would stretch it.
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);
/// The longest sleep between tests of requests waited for longer.
const NAP: std::time::Duration = std::time::Duration::from_millis(1);
/// The longest sleep between tests of the barrier before `MPI_Finalize`,
/// where a process that analysed nothing may wait through the whole analysis:
/// its waking must not disturb the processes analysing.
const FINAL_NAP: std::time::Duration = std::time::Duration::from_millis(20);

/// Call `test` (an MPI test: its error code and whether it is done) until it
/// fails or is done: without a pause for [`SPIN`], then sleeping between
/// calls, longer each time up to `longest`. Returns the error code.
fn poll(longest: std::time::Duration, mut test: impl FnMut() -> (c_int, bool)) -> c_int {
    let began = std::time::Instant::now();
    let mut nap = std::time::Duration::from_micros(20);
    loop {
        let (e, done) = test();
        if e != 0 || done {
            return e;
        }
        if began.elapsed() > SPIN {
            std::thread::sleep(nap);
            nap = (nap * 2).min(longest);
        }
    }
}

/// A buffer being sent ([`hyscope_par_isend`]): its requests, and its length
/// as the first message sends it.
pub struct Sending {
    requests: Vec<ffi::MPI_Request>,
    _len: Box<u64>,
}

/// Start sending `len` bytes at `buf` to process `dest` (its length, then
/// its pieces) without waiting: `*sending` is set to the transfer, to be
/// passed to [`hyscope_par_sent`] until that says it is done.
///
/// # Safety
/// `buf` points to `len` readable bytes (or `len` is 0) that stay alive and
/// unchanged until [`hyscope_par_sent`] says the transfer is done;
/// `sending` points to a writable pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_isend(
    dest: c_int,
    buf: *const u8,
    len: u64,
    sending: *mut *mut Sending,
) -> c_int {
    let mut s = Box::new(Sending {
        requests: Vec::new(),
        _len: Box::new(len),
    });
    let len_at: *const u64 = &*s._len;
    // SAFETY: an MPI_Request is a handle, set by MPI_Isend.
    let mut req: ffi::MPI_Request = unsafe { std::mem::zeroed() };
    // SAFETY: the boxed length lives as long as the transfer.
    let e = unsafe {
        ffi::MPI_Isend(
            len_at.cast(),
            1,
            ffi::RSMPI_UINT64_T,
            dest,
            TAG,
            world(),
            &mut req,
        )
    };
    if e != 0 {
        return e;
    }
    s.requests.push(req);
    let e = in_pieces(len, |at, piece| {
        // SAFETY: `buf[at..at + piece]` is within the caller's buffer, alive
        // until the transfer is done.
        let mut req: ffi::MPI_Request = unsafe { std::mem::zeroed() };
        let e = unsafe {
            ffi::MPI_Isend(
                buf.add(at).cast(),
                piece,
                bytes(),
                dest,
                TAG,
                world(),
                &mut req,
            )
        };
        if e == 0 {
            s.requests.push(req);
        }
        e
    });
    // Started requests are waited for even after a failure: they refer to the buffer.
    // SAFETY: the caller's writable pointer.
    unsafe { *sending = Box::into_raw(s) };
    e
}

/// Whether the transfer `sending` ([`hyscope_par_isend`]) is done, into
/// `*done`: tested once, or waited for (sleeping between tests) when `wait`
/// is not 0. Once done (or failed) the transfer is freed and `sending` must
/// not be passed again.
///
/// # Safety
/// `sending` is a transfer from [`hyscope_par_isend`] not freed yet; `done`
/// points to a writable `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_sent(
    sending: *mut Sending,
    wait_for_it: c_int,
    done: *mut c_int,
) -> c_int {
    // SAFETY: a live transfer, per the caller.
    let s = unsafe { &mut *sending };
    let n = s.requests.len() as c_int;
    let mut all: c_int = 0;
    let mut test = || {
        // SAFETY: the transfer's live requests.
        let e = unsafe {
            ffi::MPI_Testall(
                n,
                s.requests.as_mut_ptr(),
                &mut all,
                ffi::RSMPI_STATUSES_IGNORE,
            )
        };
        (e, all != 0)
    };
    let e = if wait_for_it != 0 {
        poll(NAP, test)
    } else {
        test().0
    };
    let finished = e != 0 || all != 0;
    if finished {
        // SAFETY: made by Box::into_raw in hyscope_par_isend, freed once.
        drop(unsafe { Box::from_raw(sending) });
    }
    // SAFETY: the caller's writable int.
    unsafe { *done = c_int::from(finished) };
    e
}

/// Start a request with `start` and wait for it ([`poll`], up to [`NAP`]).
fn wait(start: impl FnOnce(*mut ffi::MPI_Request) -> c_int) -> c_int {
    wait_napping(NAP, start)
}

/// [`wait`], sleeping up to `longest` between tests.
fn wait_napping(
    longest: std::time::Duration,
    start: impl FnOnce(*mut ffi::MPI_Request) -> c_int,
) -> c_int {
    // SAFETY: an MPI_Request is a handle (an integer or a pointer), set by `start`.
    let mut req: ffi::MPI_Request = unsafe { std::mem::zeroed() };
    let e = start(&mut req);
    if e != 0 {
        return e;
    }
    poll(longest, || {
        let mut done: c_int = 0;
        // SAFETY: `req` is the live request `start` made.
        let e = unsafe { ffi::MPI_Test(&mut req, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        (e, done != 0)
    })
}

/// Receive the length of the next buffer from process `source` into `len`;
/// its bytes follow with [`hyscope_par_recv_bytes`].
///
/// # Safety
/// `len` points to a writable `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_recv_len(source: c_int, len: *mut u64) -> c_int {
    // SAFETY: one u64 into the caller's pointer.
    wait(|req| unsafe {
        ffi::MPI_Irecv(
            len.cast(),
            1,
            ffi::RSMPI_UINT64_T,
            source,
            TAG,
            world(),
            req,
        )
    })
}

/// Receive the `len` bytes announced by [`hyscope_par_recv_len`] from
/// process `source` into `buf`.
///
/// # Safety
/// `buf` points to `len` writable bytes (or `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_recv_bytes(source: c_int, buf: *mut u8, len: u64) -> c_int {
    in_pieces(len, |at, piece| {
        // SAFETY: `buf[at..at + piece]` is within the caller's buffer.
        wait(|req| unsafe {
            ffi::MPI_Irecv(
                buf.add(at).cast(),
                piece,
                bytes(),
                source,
                TAG,
                world(),
                req,
            )
        })
    })
}

/// `transfer(offset, count)` for each piece of at most [`PIECE`] of `len`
/// bytes, in order, until one fails (its error is returned).
fn in_pieces(len: u64, mut transfer: impl FnMut(usize, c_int) -> c_int) -> c_int {
    let mut at = 0usize;
    while at < len as usize {
        let piece = (len as usize - at).min(PIECE);
        let e = transfer(at, piece as c_int);
        if e != 0 {
            return e;
        }
        at += piece;
    }
    0
}

/// This process's node: its index among the node's processes
/// (`MPI_COMM_TYPE_SHARED`), their number, the CPUs any of them may run on
/// (the union of their affinity masks) and the CPUs this process may run on.
///
/// # Safety
/// The four pointers point to writable `int`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_node(
    local_rank: *mut c_int,
    local_size: *mut c_int,
    node_cpus: *mut c_int,
    own_cpus: *mut c_int,
) -> c_int {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it
    // (an error leaves it empty, counted as no CPU below).
    let mut own: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut own) };
    let mask = cpu_bytes(&own);
    // SAFETY: an MPI_Comm is a handle, set by MPI_Comm_split_type.
    let mut node: ffi::MPI_Comm = unsafe { std::mem::zeroed() };
    // SAFETY: MPI is initialised; constants of the MPI library.
    let e = unsafe {
        ffi::MPI_Comm_split_type(
            world(),
            ffi::RSMPI_COMM_TYPE_SHARED,
            0,
            ffi::RSMPI_INFO_NULL,
            &mut node,
        )
    };
    if e != 0 {
        return e;
    }
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: `node` is the communicator just made.
    unsafe {
        ffi::MPI_Comm_rank(node, &mut rank);
        ffi::MPI_Comm_size(node, &mut size);
    }
    let n = mask.len();
    let mut all = vec![0u8; n * size.max(1) as usize];
    // SAFETY: `mask` is `n` bytes and `all` `n` per process of `node`; both
    // outlive the wait.
    let e = wait(|req| unsafe {
        ffi::MPI_Iallgather(
            mask.as_ptr().cast(),
            n as c_int,
            bytes(),
            all.as_mut_ptr().cast(),
            n as c_int,
            bytes(),
            node,
            req,
        )
    });
    // SAFETY: `node` is not used after this.
    unsafe { ffi::MPI_Comm_free(&mut node) };
    if e != 0 {
        return e;
    }
    let union = (0..n).map(|i| all.chunks(n).fold(0u8, |u, m| u | m[i]));
    // SAFETY: the caller's writable ints.
    unsafe {
        *local_rank = rank;
        *local_size = size;
        *node_cpus = union.map(|b| b.count_ones() as c_int).sum();
        *own_cpus = mask.iter().map(|b| b.count_ones() as c_int).sum();
    }
    0
}

/// The bytes of a CPU set.
fn cpu_bytes(set: &libc::cpu_set_t) -> Vec<u8> {
    let n = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a cpu_set_t is `n` bytes of plain data.
    unsafe { std::slice::from_raw_parts((set as *const libc::cpu_set_t).cast::<u8>(), n) }.to_vec()
}

/// Every process's `value`, in process order, into `all` (as many `int`s as
/// processes).
///
/// # Safety
/// `all` points to `size` writable `int`s (the size [`hyscope_par_init`] gave).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_allgather(value: c_int, all: *mut c_int) -> c_int {
    let v = value;
    // SAFETY: one int from a live local and the caller's buffer, both
    // outliving the wait.
    wait(|req| unsafe {
        ffi::MPI_Iallgather(
            (&v as *const c_int).cast(),
            1,
            ffi::RSMPI_INT32_T,
            all.cast(),
            1,
            ffi::RSMPI_INT32_T,
            world(),
            req,
        )
    })
}

/// Finalise MPI (if it is initialised and not finalised yet), after every
/// process has arrived: waited for here, sleeping, since `MPI_Finalize`'s own
/// wait polls and would take a core from a process still analysing.
#[unsafe(no_mangle)]
pub extern "C" fn hyscope_par_finalize() -> c_int {
    let (mut init, mut fin): (c_int, c_int) = (0, 0);
    // SAFETY: both may be called at any time.
    unsafe {
        ffi::MPI_Initialized(&mut init);
        ffi::MPI_Finalized(&mut fin);
    }
    if init != 0 && fin == 0 {
        // SAFETY: MPI is initialised and not finalised.
        wait_napping(FINAL_NAP, |req| unsafe { ffi::MPI_Ibarrier(world(), req) });
        // SAFETY: as above.
        unsafe { ffi::MPI_Finalize() }
    } else {
        0
    }
}

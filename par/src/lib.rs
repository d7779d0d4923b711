//! `libhyscope_par.so`: the few MPI calls a parallel `hyscope report` makes,
//! behind a C ABI of plain integers and byte buffers. Built once per MPI
//! flavour (like the collector), so the flavour's constants (Open MPI's
//! `MPI_COMM_WORLD` is a symbol's address, MPICH's an integer) stay here and
//! `hyscope` loads the build that matches the launcher (`dlopen`), never
//! linking an MPI library itself.
//!
//! Every function returns 0 on success and an MPI error code (or -1) otherwise.
//! A process waiting for another sleeps between tests of its request instead
//! of blocking in MPI: MPI libraries wait by polling, which on a node running
//! more processes than cores takes the cores from the processes still analysing.
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

/// Send `len` bytes at `buf` to process `dest`.
///
/// # Safety
/// `buf` points to `len` readable bytes (or `len` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_par_send(dest: c_int, buf: *const u8, len: u64) -> c_int {
    let n = len;
    // SAFETY: one u64 from a live local, which outlives the wait.
    let e = wait(|req| unsafe {
        ffi::MPI_Isend(
            (&n as *const u64).cast(),
            1,
            ffi::RSMPI_UINT64_T,
            dest,
            TAG,
            world(),
            req,
        )
    });
    if e != 0 {
        return e;
    }
    in_pieces(len, |at, piece| {
        // SAFETY: `buf[at..at + piece]` is within the caller's buffer.
        wait(|req| unsafe {
            ffi::MPI_Isend(buf.add(at).cast(), piece, bytes(), dest, TAG, world(), req)
        })
    })
}

/// Start a request with `start` and wait for it, sleeping between tests.
fn wait(start: impl FnOnce(*mut ffi::MPI_Request) -> c_int) -> c_int {
    // SAFETY: an MPI_Request is a handle (an integer or a pointer), set by `start`.
    let mut req: ffi::MPI_Request = unsafe { std::mem::zeroed() };
    let e = start(&mut req);
    if e != 0 {
        return e;
    }
    loop {
        let mut done: c_int = 0;
        // SAFETY: `req` is the live request `start` made.
        let e = unsafe { ffi::MPI_Test(&mut req, &mut done, ffi::RSMPI_STATUS_IGNORE) };
        if e != 0 || done != 0 {
            return e;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
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

/// Finalise MPI (if it is initialised and not finalised yet).
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
        unsafe { ffi::MPI_Finalize() }
    } else {
        0
    }
}

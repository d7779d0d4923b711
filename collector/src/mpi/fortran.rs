//! Fortran MPI symbols.
//!
//! Open MPI's Fortran bindings call `PMPI_*` directly, so the C wrappers never
//! see Fortran calls (docs/platform.md "MPI"). These functions are exported
//! under the usual name manglings (`mpi_send_`, `mpi_send__`, `MPI_SEND`,
//! `mpi_send`), convert the handles with the `_f2c` calls and run the same
//! wrapper as the C symbol (`wrappers::MPI_X::inner`), so both languages give
//! identical records. Fortran's `MPI_IN_PLACE`/`MPI_BOTTOM` sentinels are
//! translated to the C values, as Open MPI's own bindings do.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_int, c_void};

use mpi_sys as ffi;

use super::wrappers as w;
use super::zero_status;

type Fint = c_int;

unsafe extern "C" {
    // Open MPI's Fortran sentinels (common blocks, one address per process).
    static mut mpi_fortran_status_ignore_: Fint;
    static mut mpi_fortran_statuses_ignore_: Fint;
    static mut mpi_fortran_in_place_: Fint;
    static mut mpi_fortran_bottom_: Fint;
}

/// A Fortran buffer address as C expects it (sentinels translated).
#[inline]
fn fbuf<T>(p: *const T) -> *mut c_void {
    if std::ptr::eq(p.cast::<Fint>(), &raw mut mpi_fortran_in_place_) {
        std::ptr::without_provenance_mut(1) // Open MPI's MPI_IN_PLACE
    } else if std::ptr::eq(p.cast::<Fint>(), &raw mut mpi_fortran_bottom_) {
        std::ptr::null_mut() // MPI_BOTTOM
    } else {
        p as *mut c_void
    }
}

#[inline]
unsafe fn comm(c: *const Fint) -> ffi::MPI_Comm {
    unsafe { ffi::PMPI_Comm_f2c(*c) }
}
#[inline]
unsafe fn dtype(d: *const Fint) -> ffi::MPI_Datatype {
    unsafe { ffi::PMPI_Type_f2c(*d) }
}
#[inline]
unsafe fn set(ierr: *mut Fint, rc: c_int) {
    if !ierr.is_null() {
        unsafe { *ierr = rc };
    }
}
#[inline]
fn f_status_ignored(st: *mut Fint) -> bool {
    st.is_null() || std::ptr::eq(st, &raw mut mpi_fortran_status_ignore_)
}
#[inline]
fn f_statuses_ignored(st: *mut Fint) -> bool {
    st.is_null() || std::ptr::eq(st, &raw mut mpi_fortran_statuses_ignore_)
}
/// Fortran status size in integers (Open MPI: MPI_STATUS_SIZE = 6).
const F_STATUS_SIZE: usize = 6;

pub unsafe extern "C" fn f_init(cs: usize, ierr: *mut Fint) {
    unsafe {
        set(
            ierr,
            w::MPI_Init::inner(cs, std::ptr::null_mut(), std::ptr::null_mut()),
        )
    }
}
crate::mpi_shim!(f_init => "mpi_init_", "mpi_init__", "MPI_INIT", "mpi_init");

pub unsafe extern "C" fn f_init_thread(
    cs: usize,
    required: *const Fint,
    provided: *mut Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let rc = w::MPI_Init_thread::inner(
            cs,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            *required,
            provided,
        );
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_init_thread => "mpi_init_thread_", "mpi_init_thread__", "MPI_INIT_THREAD", "mpi_init_thread");

pub unsafe extern "C" fn f_finalize(cs: usize, ierr: *mut Fint) {
    unsafe { set(ierr, w::MPI_Finalize::inner(cs)) }
}
crate::mpi_shim!(f_finalize => "mpi_finalize_", "mpi_finalize__", "MPI_FINALIZE", "mpi_finalize");

pub unsafe extern "C" fn f_send(
    cs: usize,
    buf: *const c_void,
    count: *const Fint,
    dt: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    unsafe {
        set(
            ierr,
            w::MPI_Send::inner(cs, fbuf(buf), *count, dtype(dt), *dest, *tag, comm(c)),
        )
    }
}
crate::mpi_shim!(f_send => "mpi_send_", "mpi_send__", "MPI_SEND", "mpi_send");

pub unsafe extern "C" fn f_recv(
    cs: usize,
    buf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    c: *const Fint,
    status: *mut Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let mut st = zero_status();
        let rc = w::MPI_Recv::inner(
            cs,
            fbuf(buf),
            *count,
            dtype(dt),
            *source,
            *tag,
            comm(c),
            &mut st,
        );
        if rc == 0 && !f_status_ignored(status) {
            ffi::PMPI_Status_c2f(&st, status);
        }
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_recv => "mpi_recv_", "mpi_recv__", "MPI_RECV", "mpi_recv");

pub unsafe extern "C" fn f_isend(
    cs: usize,
    buf: *const c_void,
    count: *const Fint,
    dt: *const Fint,
    dest: *const Fint,
    tag: *const Fint,
    c: *const Fint,
    req: *mut Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let mut r = ffi::RSMPI_REQUEST_NULL;
        let rc = w::MPI_Isend::inner(
            cs,
            fbuf(buf),
            *count,
            dtype(dt),
            *dest,
            *tag,
            comm(c),
            &mut r,
        );
        if rc == 0 {
            *req = ffi::PMPI_Request_c2f(r);
        }
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_isend => "mpi_isend_", "mpi_isend__", "MPI_ISEND", "mpi_isend");

pub unsafe extern "C" fn f_irecv(
    cs: usize,
    buf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    source: *const Fint,
    tag: *const Fint,
    c: *const Fint,
    req: *mut Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let mut r = ffi::RSMPI_REQUEST_NULL;
        let rc = w::MPI_Irecv::inner(
            cs,
            fbuf(buf),
            *count,
            dtype(dt),
            *source,
            *tag,
            comm(c),
            &mut r,
        );
        if rc == 0 {
            *req = ffi::PMPI_Request_c2f(r);
        }
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_irecv => "mpi_irecv_", "mpi_irecv__", "MPI_IRECV", "mpi_irecv");

pub unsafe extern "C" fn f_wait(cs: usize, req: *mut Fint, status: *mut Fint, ierr: *mut Fint) {
    unsafe {
        let mut r = ffi::PMPI_Request_f2c(*req);
        let mut st = zero_status();
        let rc = w::MPI_Wait::inner(cs, &mut r, &mut st);
        if rc == 0 {
            *req = ffi::PMPI_Request_c2f(r);
            if !f_status_ignored(status) {
                ffi::PMPI_Status_c2f(&st, status);
            }
        }
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_wait => "mpi_wait_", "mpi_wait__", "MPI_WAIT", "mpi_wait");

pub unsafe extern "C" fn f_waitall(
    cs: usize,
    count: *const Fint,
    reqs: *mut Fint,
    statuses: *mut Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let n = (*count).max(0) as usize;
        let mut creqs: Vec<ffi::MPI_Request> = (0..n)
            .map(|i| ffi::PMPI_Request_f2c(*reqs.add(i)))
            .collect();
        let mut sts = vec![zero_status(); n];
        let rc = w::MPI_Waitall::inner(cs, *count, creqs.as_mut_ptr(), sts.as_mut_ptr());
        if rc == 0 {
            for i in 0..n {
                *reqs.add(i) = ffi::PMPI_Request_c2f(creqs[i]);
                if !f_statuses_ignored(statuses) {
                    ffi::PMPI_Status_c2f(&sts[i], statuses.add(i * F_STATUS_SIZE));
                }
            }
        }
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_waitall => "mpi_waitall_", "mpi_waitall__", "MPI_WAITALL", "mpi_waitall");

pub unsafe extern "C" fn f_barrier(cs: usize, c: *const Fint, ierr: *mut Fint) {
    unsafe { set(ierr, w::MPI_Barrier::inner(cs, comm(c))) }
}
crate::mpi_shim!(f_barrier => "mpi_barrier_", "mpi_barrier__", "MPI_BARRIER", "mpi_barrier");

pub unsafe extern "C" fn f_bcast(
    cs: usize,
    buf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    unsafe {
        set(
            ierr,
            w::MPI_Bcast::inner(cs, fbuf(buf), *count, dtype(dt), *root, comm(c)),
        )
    }
}
crate::mpi_shim!(f_bcast => "mpi_bcast_", "mpi_bcast__", "MPI_BCAST", "mpi_bcast");

#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn f_reduce(
    cs: usize,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    op: *const Fint,
    root: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let rc = w::MPI_Reduce::inner(
            cs,
            fbuf(sbuf),
            fbuf(rbuf),
            *count,
            dtype(dt),
            ffi::PMPI_Op_f2c(*op),
            *root,
            comm(c),
        );
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_reduce => "mpi_reduce_", "mpi_reduce__", "MPI_REDUCE", "mpi_reduce");

pub unsafe extern "C" fn f_allreduce(
    cs: usize,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    count: *const Fint,
    dt: *const Fint,
    op: *const Fint,
    c: *const Fint,
    ierr: *mut Fint,
) {
    unsafe {
        let rc = w::MPI_Allreduce::inner(
            cs,
            fbuf(sbuf),
            fbuf(rbuf),
            *count,
            dtype(dt),
            ffi::PMPI_Op_f2c(*op),
            comm(c),
        );
        set(ierr, rc)
    }
}
crate::mpi_shim!(f_allreduce => "mpi_allreduce_", "mpi_allreduce__", "MPI_ALLREDUCE", "mpi_allreduce");

//! MPI_T performance variables: the MPI runtime's own queues and buffers.
//!
//! Enumerated once after `MPI_Init` (every return code checked: Debian's Open MPI
//! has many invalid indices among the valid ones, docs/platform.md "MPI"), the
//! variables that measure matching queues and memory are bound and sampled by
//! the sampler thread, and everything is released (ending with
//! `MPI_T_finalize`) before `MPI_Finalize` — never after, which crashes Open MPI.
//! The queues are the "unexpected"/"posted" lists of Didelot 2014 §3.1.2, §3.3.3.
//! (Control variables, i.e. the MPI configuration, are read by `crate::mpi`.)

use std::ffi::{c_char, c_int, c_void};

use mpi_sys as ffi;

use super::{Emit, MetricDef, Probe, Sampler};

/// Performance variables worth sampling: Open MPI's ob1 matching queues
/// (per peer, bound to a communicator), its hugepage mpool, and MPICH's
/// receive-queue variables (present only with `--enable-mpit-pvars=recvq`).
pub const WANTED: &[&str] = &[
    "pml_ob1_unexpected_msgq_length",
    "pml_ob1_posted_recvq_length",
    "mpool_hugepage_bytes_allocated",
    "unexpected_recvq_length",
    "posted_recvq_length",
    "unexpected_recvq_buffer_size",
];

const OK: c_int = ffi::MPI_SUCCESS as c_int;

/// MPI_T binding kinds: enum constants whose bindgen names differ by flavour
/// (MPICH's enum is `MPIR_T_bind_t`).
#[cfg(not(hyscope_mpich))]
pub const T_BIND_NO_OBJECT: std::ffi::c_int = ffi::MPI_T_BIND_NO_OBJECT as _;
#[cfg(not(hyscope_mpich))]
pub const T_BIND_MPI_COMM: std::ffi::c_int = ffi::MPI_T_BIND_MPI_COMM as _;
#[cfg(hyscope_mpich)]
pub const T_BIND_NO_OBJECT: std::ffi::c_int = ffi::MPIR_T_bind_t_MPI_T_BIND_NO_OBJECT as _;
#[cfg(hyscope_mpich)]
pub const T_BIND_MPI_COMM: std::ffi::c_int = ffi::MPIR_T_bind_t_MPI_T_BIND_MPI_COMM as _;

/// Name of an MPI datatype (`MPI_UNSIGNED`, `MPI_DOUBLE`...) and its size.
fn type_info(dt: ffi::MPI_Datatype) -> Option<(String, usize)> {
    let mut buf = [0 as c_char; 256];
    let mut len: c_int = 0;
    let mut size: c_int = 0;
    // SAFETY: buffers are MPI_MAX_OBJECT_NAME-sized or larger; dt came from MPI.
    unsafe {
        if ffi::PMPI_Type_get_name(dt, buf.as_mut_ptr(), &mut len) != OK
            || ffi::PMPI_Type_size(dt, &mut size) != OK
        {
            return None;
        }
    }
    Some((cstr(&buf), usize::try_from(size).ok()?))
}

fn cstr(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// How to turn a buffer of `count` elements into numbers.
#[derive(Debug, Clone, Copy)]
enum Elem {
    F64,
    U32,
    U64,
    I32,
}

impl Elem {
    fn of(dt: ffi::MPI_Datatype) -> Option<Elem> {
        let (name, size) = type_info(dt)?;
        Some(match (name.as_str(), size) {
            ("MPI_DOUBLE", 8) => Elem::F64,
            ("MPI_INT", 4) => Elem::I32,
            (_, 4) => Elem::U32,
            (_, 8) => Elem::U64,
            _ => return None,
        })
    }

    fn values(self, buf: &[u64], count: usize) -> Vec<f64> {
        // The buffer is u64-aligned; 4-byte elements are packed two per word.
        let bytes: &[u8] =
            // SAFETY: reinterpreting initialised u64 storage as bytes.
            unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len() * 8) };
        (0..count)
            .map(|i| match self {
                Elem::F64 => {
                    f64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]))
                }
                Elem::U64 => {
                    u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8])) as f64
                }
                Elem::U32 => {
                    u32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4])) as f64
                }
                Elem::I32 => {
                    i32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4])) as f64
                }
            })
            .collect()
    }
}

/// One bound performance variable.
struct Bound {
    name: String,
    metric: String,
    desc: String,
    handle: ffi::MPI_T_pvar_handle,
    count: usize,
    elem: Elem,
    /// Elements are per peer rank of MPI_COMM_WORLD.
    per_peer: bool,
    buf: Vec<u64>,
    last: Option<Vec<f64>>,
}

/// The `mpi_t` sampler. Exists between `on_mpi_init_end` and `on_mpi_finalize_begin`.
pub struct MpiT {
    session: ffi::MPI_T_pvar_session,
    bound: Vec<Bound>,
    /// What the enumeration found (for the manifest reason).
    summary: String,
    initialised: bool,
    closed: bool,
}

// SAFETY: the handles are only used under the samplers' state mutex, one thread at a
// time, and MPI_T was initialised with MPI_THREAD_MULTIPLE (checked in `open`).
unsafe impl Send for MpiT {}

impl MpiT {
    /// Initialise MPI_T, enumerate, bind [`WANTED`] on `MPI_COMM_WORLD`.
    /// Call after `MPI_Init`, from any thread (`mpi::mpit_background`).
    pub fn open() -> MpiT {
        let mut me = MpiT {
            session: std::ptr::null_mut(),
            bound: Vec::new(),
            summary: String::new(),
            initialised: false,
            closed: false,
        };
        let mut provided: c_int = 0;
        // SAFETY: plain MPI_T calls with valid out-pointers.
        let rc =
            unsafe { ffi::PMPI_T_init_thread(ffi::MPI_THREAD_MULTIPLE as c_int, &mut provided) };
        if rc != OK {
            me.summary = format!("MPI_T_init_thread failed (error {rc})");
            return me;
        }
        me.initialised = true;
        if provided < ffi::MPI_THREAD_MULTIPLE as c_int {
            me.summary = format!(
                "MPI_T provides thread level {provided} < MPI_THREAD_MULTIPLE; the sampler thread cannot read it"
            );
            return me;
        }
        let mut num: c_int = 0;
        // SAFETY: valid out-pointer.
        if unsafe { ffi::PMPI_T_pvar_get_num(&mut num) } != OK {
            me.summary = "MPI_T_pvar_get_num failed".into();
            return me;
        }
        // SAFETY: valid out-pointer.
        if unsafe { ffi::PMPI_T_pvar_session_create(&mut me.session) } != OK {
            me.summary = "MPI_T_pvar_session_create failed".into();
            me.session = std::ptr::null_mut();
            return me;
        }
        let mut invalid = 0;
        let mut notes = Vec::new();
        for i in 0..num {
            let Some(info) = pvar_info(i) else {
                invalid += 1;
                continue;
            };
            if !WANTED.contains(&info.name.as_str()) {
                continue;
            }
            match me.bind(i, info) {
                Ok(()) => {}
                Err(e) => notes.push(e),
            }
        }
        if num == 0 {
            me.summary = "the MPI exposes no performance variables (MPICH: built without --enable-mpit-pvars)".into();
            return me;
        }
        let flavour_note = format!("{num} pvars ({invalid} invalid indices)");
        if me.bound.is_empty() {
            me.summary = format!(
                "{flavour_note}, none of {} {}",
                WANTED.join(", "),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!("({})", notes.join("; "))
                }
            );
        } else {
            let b: Vec<String> = me
                .bound
                .iter()
                .map(|b| {
                    if b.per_peer {
                        format!("{} ({} peers of MPI_COMM_WORLD)", b.name, b.count)
                    } else {
                        b.name.clone()
                    }
                })
                .collect();
            me.summary = format!("{flavour_note}; bound {}", b.join(", "));
            if !notes.is_empty() {
                me.summary
                    .push_str(&format!(" (failed: {})", notes.join("; ")));
            }
        }
        me
    }

    fn bind(&mut self, index: c_int, info: PvarInfo) -> Result<(), String> {
        // SAFETY: a copy of the predefined communicator handle, as obj_handle.
        let mut world: ffi::MPI_Comm = unsafe { ffi::RSMPI_COMM_WORLD };
        let per_peer = info.bind == T_BIND_MPI_COMM;
        let obj: *mut c_void = if per_peer {
            (&mut world as *mut ffi::MPI_Comm).cast()
        } else if info.bind == T_BIND_NO_OBJECT {
            std::ptr::null_mut()
        } else {
            return Err(format!("{}: bound to object kind {}", info.name, info.bind));
        };
        let Some(elem) = Elem::of(info.datatype) else {
            return Err(format!("{}: unsupported datatype", info.name));
        };
        let mut handle: ffi::MPI_T_pvar_handle = std::ptr::null_mut();
        let mut count: c_int = 0;
        // SAFETY: session is valid, obj points at a live MPI_Comm or is null.
        let rc = unsafe {
            ffi::PMPI_T_pvar_handle_alloc(self.session, index, obj, &mut handle, &mut count)
        };
        if rc != OK {
            return Err(format!("{}: handle_alloc error {rc}", info.name));
        }
        let count = usize::try_from(count).unwrap_or(0);
        if !info.continuous {
            // SAFETY: valid session and handle.
            let rc = unsafe { ffi::PMPI_T_pvar_start(self.session, handle) };
            if rc != OK && rc != ffi::MPI_T_ERR_PVAR_NO_STARTSTOP as c_int {
                // SAFETY: valid session and handle.
                unsafe { ffi::PMPI_T_pvar_handle_free(self.session, &mut handle) };
                return Err(format!("{}: start error {rc}", info.name));
            }
        }
        self.bound.push(Bound {
            metric: format!("mpi_t.{}", info.name),
            name: info.name,
            desc: info.desc,
            handle,
            count,
            elem,
            per_peer,
            buf: vec![0u64; count.max(1)],
            last: None,
        });
        Ok(())
    }

    /// Release every handle, the session and MPI_T. Idempotent; call before MPI_Finalize.
    pub fn release(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        // SAFETY: handles and session are valid until freed here, once.
        unsafe {
            for b in &mut self.bound {
                ffi::PMPI_T_pvar_handle_free(self.session, &mut b.handle);
            }
            if !self.session.is_null() {
                ffi::PMPI_T_pvar_session_free(&mut self.session);
            }
            if self.initialised {
                ffi::PMPI_T_finalize();
            }
        }
        self.bound.clear();
    }
}

impl Drop for MpiT {
    fn drop(&mut self) {
        // Dropping without close (e.g. process exit without MPI_Finalize) must not call
        // into an MPI that may already be finalised: leak the handles instead.
        self.closed = true;
    }
}

struct PvarInfo {
    name: String,
    desc: String,
    datatype: ffi::MPI_Datatype,
    bind: c_int,
    continuous: bool,
}

fn pvar_info(i: c_int) -> Option<PvarInfo> {
    let mut name = [0 as c_char; 256];
    let mut desc = [0 as c_char; 1024];
    let (mut name_len, mut desc_len) = (name.len() as c_int, desc.len() as c_int);
    let (mut verbosity, mut class, mut bind, mut readonly, mut continuous, mut atomic) =
        (0, 0, 0, 0, 0, 0);
    // SAFETY: MPI_Datatype/MPI_T_enum are plain handles; zeroed is a valid placeholder
    // that MPI overwrites.
    let mut dt: ffi::MPI_Datatype = unsafe { std::mem::zeroed() };
    let mut en: ffi::MPI_T_enum = std::ptr::null_mut();
    // SAFETY: every pointer is valid and the lengths give the buffer sizes.
    let rc = unsafe {
        ffi::PMPI_T_pvar_get_info(
            i,
            name.as_mut_ptr(),
            &mut name_len,
            &mut verbosity,
            &mut class,
            &mut dt,
            &mut en,
            desc.as_mut_ptr(),
            &mut desc_len,
            &mut bind,
            &mut readonly,
            &mut continuous,
            &mut atomic,
        )
    };
    (rc == OK).then(|| PvarInfo {
        name: cstr(&name),
        desc: cstr(&desc),
        datatype: dt,
        bind,
        continuous: continuous != 0,
    })
}

impl Sampler for MpiT {
    fn name(&self) -> &'static str {
        "mpi_t"
    }

    fn close(&mut self) {
        self.release();
    }

    fn probe(&mut self) -> Probe {
        if self.bound.is_empty() {
            Probe::Unavailable(format!("MPI_T: {}", self.summary))
        } else {
            Probe::Available(format!("MPI_T: {}", self.summary))
        }
    }

    fn metrics(&self) -> Vec<MetricDef> {
        self.bound
            .iter()
            .map(|b| {
                let unit = if b.name.contains("bytes") || b.name.ends_with("buffer_size") {
                    "bytes"
                } else {
                    "messages"
                };
                let key = if b.per_peer {
                    "key = peer rank in MPI_COMM_WORLD (written when it changes), -1 = sum over peers"
                } else {
                    "key = -1"
                };
                MetricDef::new(&b.metric, unit, &format!("MPI_T pvar {}: {}; {key}", b.name, b.desc))
            })
            .collect()
    }

    fn sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        if self.closed {
            return;
        }
        for b in &mut self.bound {
            // SAFETY: the buffer holds `count` elements of at most 8 bytes.
            let rc =
                unsafe { ffi::PMPI_T_pvar_read(self.session, b.handle, b.buf.as_mut_ptr().cast()) };
            if rc != OK {
                continue;
            }
            let vals = b.elem.values(&b.buf, b.count);
            if b.per_peer {
                for (peer, &v) in vals.iter().enumerate() {
                    if b.last.as_ref().is_none_or(|l| l.get(peer) != Some(&v)) {
                        emit(now_ns, &b.metric, peer as i64, v);
                    }
                }
                emit(now_ns, &b.metric, -1, vals.iter().sum());
            } else {
                for &v in &vals {
                    emit(now_ns, &b.metric, -1, v);
                }
            }
            b.last = Some(vals);
        }
    }
}

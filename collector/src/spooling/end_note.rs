//! The process's end note (how it ended, read by `hyscope record` after a
//! kill) and what the crash handler needs prepared beforehand: the spool
//! paths and the note's open descriptor.

use std::ffi::CString;
use std::os::unix::ffi::OsStringExt;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use hyscope_format::ProcessEnd;
use hyscope_format::spool::to_parquet::{EndNote, end_note_name, maps_file_name, spool_file_name};

use super::losses::{DISK_FULL, DROPPED};
use crate::{state, symbols};

/// What the crash handler needs, prepared beforehand (it may not allocate):
/// the spool paths and the end note's open descriptor of this process.
pub(super) struct Emergency {
    pub(super) pid: u32,
    pub(super) omp: CString,
    pub(super) mpi: CString,
    pub(super) note_path: std::path::PathBuf,
    pub(super) note_fd: libc::c_int,
    /// The copy of the module map (`hyscope record` resolves symbols with it).
    pub(super) maps_path: std::path::PathBuf,
}

pub(super) static EMERGENCY: AtomicPtr<Emergency> = AtomicPtr::new(ptr::null_mut());

/// Prepare the crash handler's paths and write this process's end note
/// (`running`): see `writer::prepare_emergency`. Ok(false) when they
/// cannot be prepared (no trace directory, or the note cannot be opened),
/// Err when the spool directory cannot be made.
pub(super) fn prepare() -> Result<bool, String> {
    let Some(dir) = state::trace_dir() else {
        return Ok(false);
    };
    let spool = state::layout().spool_dir(&dir, state::rank());
    let (rank, pid) = (state::rank(), std::process::id());
    let note_path = spool.join(end_note_name(rank, pid));
    let old = EMERGENCY.load(Ordering::Acquire);
    // SAFETY: prepared states are leaked, never freed.
    if let Some(old) = unsafe { old.as_ref() }
        && old.pid == pid
        && old.note_path == note_path
    {
        return Ok(true);
    }
    if let Err(e) = std::fs::create_dir_all(&spool) {
        return Err(format!("{}: {e}", spool.display()));
    }
    let c = |p: std::path::PathBuf| CString::new(p.into_os_string().into_vec()).ok();
    let (Some(omp), Some(mpi), Some(note)) = (
        c(spool.join(spool_file_name("omp", rank, pid))),
        c(spool.join(spool_file_name("mpi", rank, pid))),
        c(note_path.clone()),
    ) else {
        return Ok(false);
    };
    // SAFETY: a valid C path; the descriptor stays open for the process's life.
    let fd = unsafe {
        libc::open(
            note.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Ok(false);
    }
    let maps_path = spool.join(maps_file_name(rank, pid));
    symbols::write_maps(&maps_path);
    let e = Box::into_raw(Box::new(Emergency {
        pid,
        omp,
        mpi,
        note_path,
        note_fd: fd,
        maps_path,
    }));
    let old = EMERGENCY.swap(e, Ordering::AcqRel);
    // SAFETY: as above; the old note (another rank number) is no longer this process's.
    if let Some(old) = unsafe { old.as_ref() }
        && old.pid == pid
    {
        let _ = std::fs::remove_file(&old.note_path);
        let _ = std::fs::remove_file(&old.maps_path);
    }
    write_end_note(ProcessEnd::Running);
    Ok(true)
}

/// Rewrite this process's end note in place (async-signal-safe: one `pwrite`
/// of a fixed size into blocks the file already has).
pub fn write_end_note(end: ProcessEnd) {
    let e = EMERGENCY.load(Ordering::Acquire);
    // SAFETY: prepared states are leaked, never freed; getpid is async-signal-safe.
    let Some(e) = (unsafe { e.as_ref() }) else {
        return;
    };
    if e.pid != unsafe { libc::getpid() } as u32 {
        return;
    }
    let note = EndNote {
        end,
        disk_full: DISK_FULL.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
    }
    .encode();
    // SAFETY: the buffer is valid for its length.
    unsafe { libc::pwrite(e.note_fd, note.as_ptr().cast(), note.len(), 0) };
}

/// The process ended normally and its rank file says so: its end note and
/// the copy of its module map go.
pub fn remove_end_note() {
    if let Some(e) = own_emergency() {
        let _ = std::fs::remove_file(&e.note_path);
        let _ = std::fs::remove_file(&e.maps_path);
    }
}

/// Copy the module map again (it may have grown since), before the spools
/// are encoded and resolved against it.
pub fn refresh_maps() {
    if let Some(e) = own_emergency() {
        symbols::write_maps(&e.maps_path);
    }
}

pub(super) fn own_emergency() -> Option<&'static Emergency> {
    // SAFETY: prepared states are leaked, never freed.
    unsafe { EMERGENCY.load(Ordering::Acquire).as_ref() }.filter(|e| e.pid == std::process::id())
}

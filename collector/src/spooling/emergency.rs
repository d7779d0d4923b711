//! Spooling after a crash: what the fatal-signal handler and `MPI_Abort`
//! write without allocating (the blocks still held, as tail frames).

use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::Ordering;

use hyscope_format::spool::block::{Block, Stream};
use hyscope_format::spool::{
    FRAME_HEADER_LEN, RECORD_ROOM, SpoolRecord, file_header, tail_frame_header,
};
use hyscope_format::{MpiRecord, OmpRecord, ProcessEnd, Table};

use super::end_note::{EMERGENCY, write_end_note};
use super::losses::DROPPED;
use super::pending::{self, Pending};
use super::writer::{Full, GATE, GATE_CLOSED, GATE_OPEN, QUEUE};
use crate::slots::{SLOT_LIST, ThreadSlot};

/// Spool every recorded event not spooled yet, from a signal handler or
/// `MPI_Abort`, and write the end note: async-signal-safe (no lock waited
/// for, no allocation; `open`, `writev`, `pwrite`, `nanosleep` only). Each
/// thread's current block, and each block queued for the writer, goes to
/// its table's spool as one tail frame (`hyscope_format::spool::TAIL_FLAG`)
/// that skips the rows an earlier flush spooled. Afterwards the spools are
/// closed for good ([`spool_closed`]). Returns false when it had nothing to
/// do (not prepared, another process's state, or already done).
pub fn emergency_flush(end: ProcessEnd) -> bool {
    let e = EMERGENCY.load(Ordering::Acquire);
    // SAFETY: as in write_end_note.
    let Some(e) = (unsafe { e.as_ref() }) else {
        return false;
    };
    if e.pid != unsafe { libc::getpid() } as u32 {
        return false;
    }
    // Wait (up to 2 s) for a writer in the middle of a frame; it may be the
    // interrupted thread itself, so never forever.
    let mut waited = 0;
    loop {
        match GATE.compare_exchange(GATE_OPEN, GATE_CLOSED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(GATE_CLOSED) => return false,
            Err(_) if waited >= 2000 => {
                GATE.store(GATE_CLOSED, Ordering::Release);
                break;
            }
            Err(_) => {
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                // SAFETY: a valid timespec.
                unsafe { libc::nanosleep(&ts, ptr::null_mut()) };
                waited += 1;
            }
        }
    }
    emergency_spool(
        &e.omp,
        Table::Omp,
        |s| &s.omp,
        |p| match p {
            Pending::Omp(b) => Some(b),
            _ => None,
        },
    );
    emergency_spool(
        &e.mpi,
        Table::Mpi,
        |s| &s.mpi,
        |p| match p {
            Pending::Mpi(b) => Some(b),
            _ => None,
        },
    );
    emergency_polls(&e.mpi);
    emergency_held(&e.omp);
    write_end_note(end);
    true
}

/// Bytes for the frames of the intervals the OMPT adapter holds back, encoded
/// by [`emergency_held`] (after the gate closed: one user).
struct HeldFrames(std::cell::UnsafeCell<[u8; HELD_FRAME_BYTES]>);
// SAFETY: used only by the one emergency flush that closed the gate.
unsafe impl Sync for HeldFrames {}
const HELD_FRAME_BYTES: usize = 64 * 1024;
static HELD_FRAMES: HeldFrames = HeldFrames(std::cell::UnsafeCell::new([0; HELD_FRAME_BYTES]));

/// Spool every thread's open run of folded polls (`mpi::polls`) as one
/// ordinary frame, encoded in [`HELD_FRAMES`] (before [`emergency_held`]
/// uses it).
fn emergency_polls(path: &CStr) {
    // SAFETY: see HeldFrames.
    let buf = unsafe { &mut *HELD_FRAMES.0.get() };
    let mut base = MpiRecord::default();
    let mut pos = FRAME_HEADER_LEN;
    let mut rows = 0u32;
    let mut p = SLOT_LIST.load(Ordering::Acquire);
    // SAFETY: slots are leaked, never freed; the list only grows at its head.
    while let Some(slot) = unsafe { p.as_ref() } {
        p = slot.next.load(Ordering::Acquire);
        let rec = match crate::slots::take_poll_run(slot) {
            crate::slots::TakenRun::Run(r) => r,
            crate::slots::TakenRun::Lost(n) => {
                DROPPED.fetch_add(n, Ordering::Relaxed);
                continue;
            }
            crate::slots::TakenRun::Nothing => continue,
        };
        if pos + RECORD_ROOM > HELD_FRAME_BYTES {
            DROPPED.fetch_add(rec.calls.into(), Ordering::Relaxed);
            continue;
        }
        let room: &mut [u8; RECORD_ROOM] = (&mut buf[pos..pos + RECORD_ROOM])
            .try_into()
            .expect("room checked");
        pos += MpiRecord::put(&base, &rec, room);
        base = rec;
        rows += 1;
    }
    if rows == 0 {
        return;
    }
    let fd = open_spool_raw(path, Table::Mpi);
    if fd < 0 {
        return;
    }
    buf[..4].copy_from_slice(&rows.to_le_bytes());
    buf[4..8].copy_from_slice(&((pos - FRAME_HEADER_LEN) as u32).to_le_bytes());
    write_all_raw(fd, &[&buf[..pos]]);
    // SAFETY: our descriptor.
    unsafe { libc::close(fd) };
}

/// Spool the intervals the OMPT adapter holds back (each thread's last
/// region's, until the next one begins), encoded here as ordinary frames.
fn emergency_held(path: &CStr) {
    // SAFETY: see HeldFrames.
    let buf = unsafe { &mut *HELD_FRAMES.0.get() };
    let mut bases = [OmpRecord::default(); <OmpRecord as SpoolRecord>::KEYS];
    let mut pos = FRAME_HEADER_LEN;
    let mut rows = 0u32;
    let mut fd = -1;
    let mut put_frame = |buf: &mut [u8; HELD_FRAME_BYTES], pos: usize, rows: u32| {
        if rows == 0 {
            return;
        }
        if fd < 0 {
            fd = open_spool_raw(path, Table::Omp);
            if fd < 0 {
                return;
            }
        }
        buf[..4].copy_from_slice(&rows.to_le_bytes());
        buf[4..8].copy_from_slice(&((pos - FRAME_HEADER_LEN) as u32).to_le_bytes());
        write_all_raw(fd, &[&buf[..pos]]);
    };
    hyscope_ompt::for_each_held(|rec| {
        if pos + RECORD_ROOM > HELD_FRAME_BYTES {
            put_frame(buf, pos, rows);
            (pos, rows) = (FRAME_HEADER_LEN, 0);
            bases = [OmpRecord::default(); <OmpRecord as SpoolRecord>::KEYS];
        }
        let room: &mut [u8; RECORD_ROOM] = (&mut buf[pos..pos + RECORD_ROOM])
            .try_into()
            .expect("room checked");
        pos += OmpRecord::put_in(&bases, rec, room);
        bases[rec.key()] = *rec;
        rows += 1;
    });
    put_frame(buf, pos, rows);
    if fd >= 0 {
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
    }
}

/// One table's part of [`emergency_flush`].
fn emergency_spool<T: SpoolRecord>(
    path: &CStr,
    table: Table,
    stream_of: fn(&ThreadSlot) -> &Stream<T>,
    queued: fn(Pending) -> Option<*mut Block<T>>,
) {
    let mut fd = -1;
    let mut tail = |block: &Block<T>| {
        let (rows, len) = block.published();
        let taken = block.taken();
        if len == 0 || rows <= taken {
            return;
        }
        let Some(head) = tail_frame_header(taken as u32, len as u32) else {
            return;
        };
        if fd < 0 {
            fd = open_spool_raw(path, table);
            if fd < 0 {
                return;
            }
        }
        // SAFETY: len was read with acquire; the owner writes only past it.
        write_all_raw(fd, &[&head, unsafe { block.bytes(len) }]);
    };
    let mut p = SLOT_LIST.load(Ordering::Acquire);
    // SAFETY: slots are leaked, never freed; the list only grows at its head.
    while let Some(slot) = unsafe { p.as_ref() } {
        let b = stream_of(slot).current();
        // SAFETY: blocks are never freed.
        if let Some(block) = unsafe { b.as_ref() } {
            tail(block);
        }
        p = slot.next.load(Ordering::Acquire);
    }
    // The blocks on their way to the writer, read without its lock (the
    // interrupted thread may hold it: `pending`).
    pending::for_each(|p| {
        // SAFETY: queued blocks belong to the writer, which the gate stopped.
        if let Some(block) = queued(p).and_then(|b| unsafe { b.as_ref() }) {
            tail(block);
        }
    });
    // Those `pending` had no room for: the queue's lock is a CAS when free;
    // held (by the interrupted thread itself, perhaps), they are left out
    // rather than waited for.
    if let Ok(items) = QUEUE.items.try_lock() {
        for p in items.iter().filter_map(Full::pending) {
            if pending::contains(p) {
                continue;
            }
            // SAFETY: as above.
            if let Some(block) = queued(p).and_then(|b| unsafe { b.as_ref() }) {
                tail(block);
            }
        }
    }
    if fd >= 0 {
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
    }
}

/// Open a spool for appending from the crash handler (async-signal-safe),
/// writing its header when it is new; -1 on failure.
fn open_spool_raw(path: &CStr, table: Table) -> libc::c_int {
    // SAFETY: a valid C path; plain system calls.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
            0o644,
        );
        if fd >= 0 && libc::lseek(fd, 0, libc::SEEK_END) == 0 {
            write_all_raw(fd, &[&file_header(table)]);
        }
        fd
    }
}

/// `writev` all of `parts` to `fd` (async-signal-safe); false on an error.
fn write_all_raw(fd: libc::c_int, parts: &[&[u8]]) -> bool {
    let mut iov = [libc::iovec {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    }; 2];
    let n = parts.len().min(iov.len());
    for (v, p) in iov.iter_mut().zip(parts) {
        *v = libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        };
    }
    let mut first = 0;
    while first < n {
        // SAFETY: the iovecs point into live slices.
        let w = unsafe { libc::writev(fd, iov[first..n].as_ptr(), (n - first) as libc::c_int) };
        if w < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        let mut w = w as usize;
        while first < n && w >= iov[first].iov_len {
            w -= iov[first].iov_len;
            first += 1;
        }
        if first < n {
            // SAFETY: advancing inside the same slice.
            iov[first].iov_base = unsafe { (iov[first].iov_base as *mut u8).add(w) }.cast();
            iov[first].iov_len -= w;
        }
    }
    true
}

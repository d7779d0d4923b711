//! `exec` with the collector loaded: a program that puts another in its
//! place keeps what it recorded.
//!
//! An exec replaces the program, and with it the collector's threads and
//! buffers, without running any exit path: the events the threads still
//! held (each thread's current block, the intervals the OMPT adapter holds
//! back) would be lost, and the trace would say the process "ended without
//! warning". So the C library's exec functions are the collector's:
//! `execve`, `execv`, `execvp`, `execvpe`, `fexecve` and `execveat` here,
//! and the variadic `execl`, `execlp` and `execle` through
//! `exec_variadic.c`, which builds their argument vector and calls in here
//! (glibc's own build on its internal `__execve`, which no interposer of
//! `execve` sees). Each writes the program's end as its exit would
//! (the samplers' last readings, `samplers::sample_before_exec`;
//! `lifecycle::end_program`: every thread's events spooled and encoded,
//! the rank file saying `exec` with the program's path), then calls the C
//! library's function (the next definition, `dlsym(RTLD_NEXT)`). The process
//! goes on, under the same pid, as the new program; it loads the collector
//! again (`LD_PRELOAD` is inherited) and takes an id of its own
//! (`state::claim_identity`: the rank file under its rank is its earlier
//! program's, ended by an exec).
//!
//! The other threads' events are taken as the exit path takes them: their
//! blocks' published rows, without waiting for them (they may be inside a
//! parallel region when the exec comes; the exec ends them there).
//!
//! When the exec fails, the program goes on and so does its recording
//! ([`resume`]): nothing it recorded is lost or written twice. An exec of a
//! path that does not exist, or of a name found nowhere in `PATH`, fails
//! for sure and writes nothing.
//!
//! Nothing is written when the caller is one of the collector's own threads
//! (or a child it forked to run a command), when the process recorded
//! nothing, and in a child made by `fork` that recorded nothing since (the
//! usual `fork` then `exec`) or by `vfork` (it shares its parent's memory,
//! which it must leave alone: it only reads atomics before the exec). No MPI
//! call is made: an exec between `MPI_Init` and `MPI_Finalize` (which MPI
//! does not support) never waits for another rank here.

use std::ffi::{CStr, CString, OsStr, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use hyscope_format::ProcessEnd;
use hyscope_format::spool::block::Stream;

use crate::diag::{self, guarded};
use crate::{lifecycle, samplers, slots, spooling, state};

type Argv = *const *const c_char;

/// The C library's exec functions that are interposed here, in [`NEXT`]'s order.
#[derive(Clone, Copy)]
enum Next {
    Execve,
    Execv,
    Execvp,
    Execvpe,
    Fexecve,
    Execveat,
}

const NAMES: [&CStr; 6] = [
    c"execve",
    c"execv",
    c"execvp",
    c"execvpe",
    c"fexecve",
    c"execveat",
];

/// The addresses of the C library's functions (0: not looked up yet).
static NEXT: [AtomicUsize; 6] = [const { AtomicUsize::new(0) }; 6];

/// Look the C library's exec functions up now, at start: a `vfork` child
/// calling one of them must not need the dynamic linker.
pub fn install() {
    for which in [
        Next::Execve,
        Next::Execv,
        Next::Execvp,
        Next::Execvpe,
        Next::Fexecve,
        Next::Execveat,
    ] {
        next(which);
    }
}

/// The C library's definition of `which` (the next after this library's);
/// 0 where there is none.
fn next(which: Next) -> usize {
    let slot = &NEXT[which as usize];
    let known = slot.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: a NUL-terminated name; RTLD_NEXT searches after this library.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[which as usize].as_ptr()) } as usize;
    slot.store(found, Ordering::Relaxed);
    found
}

/// -1 with `errno` ENOSYS: the C library has no such function.
fn missing() -> c_int {
    // SAFETY: errno is thread-local.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

/// Call the C library's `$which` as a function of type `$ty` with `$args`.
macro_rules! call_next {
    ($which:expr, $ty:ty, $($args:expr),*) => {{
        match next($which) {
            0 => missing(),
            // SAFETY: the C library's function of that name, with its C type.
            f => unsafe { std::mem::transmute::<usize, $ty>(f)($($args),*) },
        }
    }};
}

/// # Safety
/// As the C library's `execve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    around(Program::Path(path), || {
        call_next!(
            Next::Execve,
            unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int,
            path,
            argv,
            envp
        )
    })
}

/// # Safety
/// As the C library's `execv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    around(Program::Path(path), || {
        call_next!(
            Next::Execv,
            unsafe extern "C" fn(*const c_char, Argv) -> c_int,
            path,
            argv
        )
    })
}

/// # Safety
/// As the C library's `execvp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    around(Program::Search(file), || {
        call_next!(
            Next::Execvp,
            unsafe extern "C" fn(*const c_char, Argv) -> c_int,
            file,
            argv
        )
    })
}

/// # Safety
/// As the C library's `execvpe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    around(Program::Search(file), || {
        call_next!(
            Next::Execvpe,
            unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int,
            file,
            argv,
            envp
        )
    })
}

/// # Safety
/// As the C library's `fexecve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    around(Program::Fd(fd), || {
        call_next!(
            Next::Fexecve,
            unsafe extern "C" fn(c_int, Argv, Argv) -> c_int,
            fd,
            argv,
            envp
        )
    })
}

/// # Safety
/// As the C library's `execveat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    around(Program::At(dirfd, path, flags), || {
        call_next!(
            Next::Execveat,
            unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int,
            dirfd,
            path,
            argv,
            envp,
            flags
        )
    })
}

/// `execl` (`how` 0), `execlp` (1) and `execle` (2), their arguments made
/// into a vector by `exec_variadic.c`: the calls they are built on, here.
///
/// # Safety
/// As the C library's `execv`, `execvp` and `execve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_exec_variadic(
    how: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
) -> c_int {
    // SAFETY: forwarded as given.
    unsafe {
        match how {
            0 => execv(path, argv),
            1 => execvp(path, argv),
            _ => execve(path, argv, envp),
        }
    }
}

// The variadic entry points: this library exports only what Rust defines
// (the C shim's symbols stay local to it), so each is a Rust symbol that
// jumps to the shim's function with the caller's registers and stack as
// they are, which a variadic function needs. (Other architectures keep the
// C library's, unrecorded.)
#[cfg(target_arch = "x86_64")]
macro_rules! jump_to {
    ($shim:ident) => {
        core::arch::naked_asm!("jmp {}", sym $shim)
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! jump_to {
    ($shim:ident) => {
        core::arch::naked_asm!("b {}", sym $shim)
    };
}

macro_rules! variadic_entry {
    ($name:ident, $shim:ident) => {
        unsafe extern "C" {
            fn $shim();
        }
        /// The variadic exec call of that name (see `exec_variadic.c`).
        ///
        /// # Safety
        /// As the C library's function of that name.
        #[unsafe(no_mangle)]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name() {
            jump_to!($shim)
        }
    };
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod variadic {
    variadic_entry!(execl, hyscope_execl);
    variadic_entry!(execlp, hyscope_execlp);
    variadic_entry!(execle, hyscope_execle);
}

/// The program an exec call names.
#[derive(Clone, Copy)]
enum Program {
    /// A path (`execve`, `execv`).
    Path(*const c_char),
    /// A name looked up in `PATH` when it has no `/` (`execvp`, `execvpe`).
    Search(*const c_char),
    /// An open file (`fexecve`).
    Fd(c_int),
    /// A path relative to a directory's descriptor, with `execveat`'s flags.
    At(c_int, *const c_char, c_int),
}

impl Program {
    /// Its path, as the report names it, or None where the exec fails for
    /// sure (nothing there).
    fn path(self) -> Option<String> {
        let path = match self {
            Program::Path(p) => existing(&PathBuf::from(os_str(p)?))?,
            Program::Search(name) => {
                let name = os_str(name)?;
                if name.as_bytes().contains(&b'/') {
                    existing(Path::new(name))?
                } else {
                    in_path(name)?
                }
            }
            Program::Fd(fd) => fd_path(fd),
            Program::At(dirfd, p, flags) => {
                let name = os_str(p)?;
                if name.is_empty() && flags & libc::AT_EMPTY_PATH != 0 {
                    fd_path(dirfd)
                } else if name.as_bytes().first() == Some(&b'/') || dirfd == libc::AT_FDCWD {
                    existing(Path::new(name))?
                } else {
                    fd_path(dirfd).join(name)
                }
            }
        };
        Some(path.to_string_lossy().into_owned())
    }
}

/// The C string `p` (None when null).
fn os_str<'a>(p: *const c_char) -> Option<&'a OsStr> {
    // SAFETY: the exec call's own argument, NUL-terminated (or null).
    (!p.is_null()).then(|| OsStr::from_bytes(unsafe { CStr::from_ptr(p) }.to_bytes()))
}

/// `path` made absolute, unless nothing is there (no such file, or a
/// component that is no directory): then the exec fails without us.
fn existing(path: &Path) -> Option<PathBuf> {
    match std::fs::metadata(path) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => None,
        _ => Some(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())),
    }
}

/// Where `execvp` finds `name`: the first directory of `PATH` (glibc's
/// default where it is unset) holding an executable file of that name.
fn in_path(name: &OsStr) -> Option<PathBuf> {
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    std::env::split_paths(&search)
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                Path::new(".").join(name)
            } else {
                dir.join(name)
            }
        })
        .find(|p| {
            let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
                return false;
            };
            // SAFETY: a valid C path.
            let executable = unsafe {
                libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::X_OK, libc::AT_EACCESS)
            } == 0;
            executable && p.is_file()
        })
        .map(|p| std::path::absolute(&p).unwrap_or(p))
}

/// The file a descriptor is open on.
fn fd_path(fd: c_int) -> PathBuf {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .unwrap_or_else(|_| PathBuf::from(format!("/proc/self/fd/{fd}")))
}

/// Write the program's end, run the exec; if it returns (it failed), take
/// the end back, with the exec's `errno` kept for its caller.
fn around(program: Program, exec: impl FnOnce() -> c_int) -> c_int {
    let mut ended = false;
    guarded(|| ended = end(program));
    let rc = exec();
    // SAFETY: errno is thread-local.
    let errno = unsafe { *libc::__errno_location() };
    if ended {
        guarded(resume);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    rc
}

/// Write the end of the program before its exec (module documentation);
/// true when it was written.
fn end(program: Program) -> bool {
    if !records_own_events() {
        return false;
    }
    let Some(path) = program.path() else {
        return false;
    };
    // The samplers' last readings, as at exit: the energy counted up to
    // the exec is the program's.
    samplers::sample_before_exec();
    lifecycle::end_program(ProcessEnd::Exec { path })
}

/// Whether this process has recorded events of its own to write (module
/// documentation). Before anything else is touched, in a `vfork` child too:
/// atomics and the slots' published counts only.
fn records_own_events() -> bool {
    if diag::is_collector_thread() || !spooling::is_active() || spooling::spool_closed() {
        return false;
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    state::holds_identity(pid) || (state::is_forked_child(pid) && has_unspooled_rows())
}

/// Whether any thread holds rows that were not spooled yet: a forked child's
/// own (its parent's were marked spooled at the fork).
fn has_unspooled_rows() -> bool {
    fn unspooled<T>(stream: &Stream<T>) -> bool {
        // SAFETY: blocks are never freed; their counts are published atomically.
        unsafe { stream.current().as_ref() }.is_some_and(|b| b.published().0 > b.taken())
    }
    let mut p = slots::SLOT_LIST.load(Ordering::Acquire);
    // SAFETY: slots are leaked, never freed; the list only grows at its head.
    while let Some(slot) = unsafe { p.as_ref() } {
        if unspooled(&slot.omp) || unspooled(&slot.mpi) {
            return true;
        }
        p = slot.next.load(Ordering::Acquire);
    }
    let mut held = false;
    hyscope_ompt::for_each_held(|_| held = true);
    held
}

/// The exec failed: the program goes on recording as before it.
fn resume() {
    reopen_end_note();
    lifecycle::resume_after_failed_exec();
}

/// Put this process's end note back where `hyscope record` reads it after
/// a kill. The end of the program removed the file, but the descriptor the
/// crash handler writes it through stays open (prepared at start, it may
/// not open files): the file is made again under its name and put under
/// that descriptor, found among the process's open files as the removed
/// note.
fn reopen_end_note() {
    let Some(spool) = state::spool_dir() else {
        return;
    };
    let note = spool.join(hyscope_format::spool::to_parquet::end_note_name(
        state::rank(),
        std::process::id(),
    ));
    let mut removed = note.clone().into_os_string();
    removed.push(" (deleted)");
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let held = fds.flatten().find_map(|entry| {
        let fd: c_int = entry.file_name().to_str()?.parse().ok()?;
        (std::fs::read_link(entry.path()).ok()?.as_os_str() == removed).then_some(fd)
    });
    let (Some(fd), Ok(path)) = (held, CString::new(note.as_os_str().as_bytes())) else {
        return;
    };
    // SAFETY: a valid C path; the new descriptor replaces the removed
    // note's (still the collector's: checked just above) and is closed.
    unsafe {
        let new = libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        );
        if new >= 0 {
            libc::dup3(new, fd, libc::O_CLOEXEC);
            libc::close(new);
        }
    }
}

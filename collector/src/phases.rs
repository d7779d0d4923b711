//! Named phases: the C API of `include/hyscope.h` (and the Fortran module
//! over it), `MPI_Pcontrol` levels beyond 0 and 1, the pauses of
//! `omp_control_tool` and NVTX ranges (`nvtx.rs`), recorded as phase intervals per thread into the
//! `phases` table (through its journal, `hyscope_format::spool::phases`).
//!
//! Phases are user annotations, a few per time step, not per loop chunk:
//! each call takes one process-wide lock (uncontended), which keeps
//! the name interning, the per-thread stacks and the closing of every open
//! phase at exit in one place. The recording threads never do I/O here: the
//! writer thread appends the finished phases to the journal with the other
//! spools (every 0.4 s), so a killed process loses at most its last moments
//! and the phases still open when it died.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_longlong};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};

use hyscope_format::spool::phases::{self as phase_journal, PhaseRow};
use hyscope_format::{NO_ITERATION, phase_source};

use crate::diag::{self, lock};
use crate::{clock, slots, spooling, state};

/// The time step set by `hyscope_iteration`, given to the phases begun after it.
static ITERATION: AtomicI64 = AtomicI64::new(NO_ITERATION);
/// Recording is paused (`omp_control_tool` pause, until start) or ended for
/// good (`omp_control_tool` end): phases begun meanwhile are not recorded.
static PAUSED: AtomicBool = AtomicBool::new(false);

/// A phase begun and not ended yet.
#[derive(Clone, Copy)]
struct Open {
    name: u32,
    start_ns: i64,
    depth: u32,
    source: u8,
    iteration: i64,
    /// Begun while paused: ended silently, never recorded.
    hidden: bool,
    /// The stack a [`push`]ed phase belongs to (an NVTX domain), 0 for
    /// `hyscope_phase_begin`.
    tag: u64,
}

#[derive(Default)]
struct ThreadPhases {
    /// `hyscope_phase_begin`/`_end`, innermost last.
    stack: Vec<Open>,
    /// The current `hyscope_phase_mark` phase.
    mark: Option<Open>,
    /// The current `MPI_Pcontrol` level's phase.
    pcontrol: Option<Open>,
    /// The current `omp_control_tool` pause.
    pause: Option<Open>,
}

/// A range begun by [`start`]: it may end on any thread.
#[derive(Clone, Copy)]
struct Started {
    thread: u32,
    open: Open,
}

#[derive(Default)]
struct State {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    threads: Vec<ThreadPhases>,
    /// Ranges begun by [`start`] and not ended yet, by id.
    started: HashMap<u64, Started>,
    next_started: u64,
    /// Finished phases not in the journal yet.
    done: Vec<PhaseRow>,
    /// The [`FORKS`] generation the state belongs to: a forked child starts its own.
    generation: u32,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The journal's lock and the phases' (in that order: the writer appends
/// to the journal what it takes from the state), to hold across a `fork`.
pub(crate) fn hold_for_fork() -> [crate::diag::Held; 2] {
    [crate::diag::hold(&JOURNAL), crate::diag::hold(&STATE)]
}

/// Forks seen ([`forked`], run in the child): a state of an older
/// generation is the parent's. (Not `getpid` per call: a system call costs
/// a microsecond on some VMs.)
static FORKS: AtomicU32 = AtomicU32::new(0);

extern "C" fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

fn with_state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    static AT_FORK: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a plain extern "C" function with no preconditions.
    AT_FORK.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(forked));
    });
    let mut guard = lock(&STATE);
    let state = guard.get_or_insert_with(State::default);
    let generation = FORKS.load(Ordering::Relaxed);
    if state.generation != generation {
        // After fork: the parent's phases are the parent's.
        *state = State {
            generation,
            ..State::default()
        };
    }
    f(state)
}

impl State {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    fn thread(&mut self, thread: u32) -> &mut ThreadPhases {
        let i = thread as usize;
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, ThreadPhases::default);
        }
        &mut self.threads[i]
    }

    fn open(&mut self, thread: u32, name: &str, source: u8, now: i64) -> Open {
        let name = self.intern(name);
        let depth = self.thread(thread).stack.len() as u32;
        Open {
            name,
            start_ns: now,
            depth,
            source,
            iteration: ITERATION.load(Ordering::Relaxed),
            hidden: PAUSED.load(Ordering::Relaxed),
            tag: 0,
        }
    }

    fn close(&mut self, thread: u32, open: Open, now: i64) {
        if open.hidden {
            return;
        }
        self.done.push(PhaseRow {
            thread,
            name: open.name,
            start_ns: open.start_ns,
            end_ns: now.max(open.start_ns),
            depth: open.depth,
            source: open.source,
            iteration: open.iteration,
        });
    }
}

/// The calling thread's index and the time, and make sure the process's
/// trace is written at exit.
fn here() -> (u32, i64) {
    // The time first: starting the writer thread on a process's first
    // event must not delay the phase's begin.
    let now = clock::now_ns();
    if !spooling::is_active() {
        spooling::mark_active();
    }
    (slots::thread_index(), now)
}

/// Begin a named phase on the calling thread.
pub fn begin(name: &str) {
    let (thread, now) = here();
    with_state(|s| {
        let open = s.open(thread, name, phase_source::API, now);
        s.thread(thread).stack.push(open);
    });
}

/// End the calling thread's innermost phase; with a name, the innermost
/// phase of that name (the phases opened inside it end with it, with a
/// warning: their ends are missing).
pub fn end(name: Option<&str>) {
    let (thread, now) = here();
    let unclosed = with_state(|s| {
        let id = name.map(|n| s.ids.get(n).copied());
        let stack = &mut s.thread(thread).stack;
        let target = match id {
            None => stack.len().checked_sub(1),
            Some(id) => stack.iter().rposition(|o| Some(o.name) == id),
        };
        let Some(at) = target else {
            return Err(());
        };
        if at + 1 == stack.len() {
            // The innermost: the common case, without allocating.
            let o = stack.pop().expect("at is the last index");
            s.close(thread, o, now);
            return Ok(Vec::new());
        }
        let ended: Vec<Open> = s.thread(thread).stack.drain(at..).collect();
        let inner: Vec<String> = ended[1..]
            .iter()
            .map(|o| s.names[o.name as usize].clone())
            .collect();
        for o in ended.into_iter().rev() {
            s.close(thread, o, now);
        }
        Ok(inner)
    });
    match unclosed {
        Err(()) => diag::warn(&format!(
            "hyscope_phase_end({}) on thread {thread} without an open phase{}; ignored",
            name.map_or("NULL".to_string(), |n| format!("\"{n}\"")),
            name.map_or(String::new(), |_| " of that name".to_string()),
        )),
        Ok(inner) if !inner.is_empty() => diag::warn(&format!(
            "hyscope_phase_end(\"{}\") on thread {thread} ends the phases still open inside it: {}",
            name.unwrap_or_default(),
            inner.join(", ")
        )),
        Ok(_) => {}
    }
}

/// Begin a phase of `source` on the calling thread's stack, in the stack
/// `tag` (NVTX: each domain has its own push/pop stack, `nvToolsExt.h`).
/// Returns the phases of that tag already open on the thread (NVTX's level).
pub fn push(name: &str, source: u8, tag: u64) -> usize {
    let (thread, now) = here();
    with_state(|s| {
        let mut open = s.open(thread, name, source, now);
        open.tag = tag;
        let stack = &mut s.thread(thread).stack;
        let level = stack.iter().filter(|o| o.tag == tag).count();
        stack.push(open);
        level
    })
}

/// End the calling thread's innermost phase of the stack `tag` (see
/// [`push`]); phases of other tags opened after it stay open. Returns the
/// level of the phase ended, `None` when the stack is empty.
pub fn pop(tag: u64) -> Option<usize> {
    let (thread, now) = here();
    with_state(|s| {
        let stack = &mut s.thread(thread).stack;
        let at = stack.iter().rposition(|o| o.tag == tag)?;
        let o = stack.remove(at);
        let level = stack[..at].iter().filter(|o| o.tag == tag).count();
        s.close(thread, o, now);
        Some(level)
    })
}

/// Begin a range that may end on another thread ([`stop`]): a phase of the
/// calling thread, at the depth of its stack, not on the stack. Returns its
/// id (never 0).
pub fn start(name: &str, source: u8) -> u64 {
    let (thread, now) = here();
    with_state(|s| {
        let open = s.open(thread, name, source, now);
        s.next_started += 1;
        let id = s.next_started;
        s.started.insert(id, Started { thread, open });
        id
    })
}

/// End the range `id` of [`start`], on whichever thread; false if no such
/// range is open.
pub fn stop(id: u64) -> bool {
    let now = clock::now_ns();
    with_state(|s| match s.started.remove(&id) {
        Some(r) => {
            s.close(r.thread, r.open, now);
            true
        }
        None => false,
    })
}

/// An instant (NVTX's marks): a phase of no duration on the calling thread,
/// at the depth of its stack.
pub fn instant(name: &str, source: u8) {
    let (thread, now) = here();
    with_state(|s| {
        let open = s.open(thread, name, source, now);
        s.close(thread, open, now);
    });
}

/// Which of a thread's marker slots a marker phase lives in.
fn marker_slot(t: &mut ThreadPhases, source: u8) -> &mut Option<Open> {
    match source {
        phase_source::PCONTROL => &mut t.pcontrol,
        phase_source::PAUSE => &mut t.pause,
        _ => &mut t.mark,
    }
}

/// End the calling thread's current marker phase of `source` and, with a
/// name, begin the next one.
fn marker(name: Option<&str>, source: u8) {
    let (thread, now) = here();
    with_state(|s| {
        let next = name.map(|n| s.open(thread, n, source, now));
        let previous = std::mem::replace(marker_slot(s.thread(thread), source), next);
        if let Some(o) = previous {
            s.close(thread, o, now);
        }
    });
}

/// `hyscope_phase_mark`: the thread's next phase begins here (`None`: the
/// current one ends, none begins).
pub fn mark(name: Option<&str>) {
    marker(name, phase_source::MARK);
}

/// `MPI_Pcontrol(level)`: levels 0 (pause) and 1 (resume) end the current
/// level's phase; any other level begins the phase `Pcontrol <level>`, which
/// lasts until the next `MPI_Pcontrol` (as mpiP and IPM read levels).
pub fn pcontrol(level: c_int) {
    let name = (level != 0 && level != 1).then(|| format!("Pcontrol {level}"));
    marker(name.as_deref(), phase_source::PCONTROL);
}

/// `omp_control_tool(pause)`: the pause is a phase `paused` of the calling
/// thread, and phases begun while paused are not recorded.
pub fn pause() {
    if PAUSED.load(Ordering::Relaxed) {
        return;
    }
    marker(Some("paused"), phase_source::PAUSE);
    PAUSED.store(true, Ordering::Relaxed);
}

/// `omp_control_tool(start)`: the pause ends.
pub fn resume() {
    if !PAUSED.swap(false, Ordering::Relaxed) {
        return;
    }
    let (_, now) = here();
    with_state(|s| {
        // The thread that resumes need not be the one that paused.
        let paused: Vec<(u32, Open)> = (0..s.threads.len() as u32)
            .filter_map(|t| s.thread(t).pause.take().map(|o| (t, o)))
            .collect();
        for (t, o) in paused {
            s.close(t, o, now);
        }
    });
}

/// Recording is paused by `omp_control_tool` (MPI calls are not recorded either).
#[inline]
pub fn paused() -> bool {
    PAUSED.load(Ordering::Relaxed)
}

/// `hyscope_iteration(n)`: the time step of the phases begun from now on.
pub fn iteration(step: i64) {
    ITERATION.store(step, Ordering::Relaxed);
}

/// At the application's end (`now`): every phase still open ends there; the
/// begin/end phases with a warning naming them (their ends are missing),
/// markers silently (they last until the end by definition).
pub fn close_open(now: i64) {
    let missing = with_state(|s| {
        let mut missing = Vec::new();
        let mut started: Vec<Started> = s.started.drain().map(|(_, r)| r).collect();
        started.sort_by_key(|r| r.open.start_ns);
        for r in started {
            if !r.open.hidden {
                missing.push(s.names[r.open.name as usize].clone());
            }
            s.close(r.thread, r.open, now);
        }
        for t in 0..s.threads.len() as u32 {
            let th = std::mem::take(s.thread(t));
            for o in th.stack.iter().rev() {
                if !o.hidden {
                    missing.push(s.names[o.name as usize].clone());
                }
            }
            for o in th
                .stack
                .into_iter()
                .rev()
                .chain(th.mark)
                .chain(th.pcontrol)
                .chain(th.pause)
            {
                s.close(t, o, now);
            }
        }
        missing
    });
    if !missing.is_empty() {
        diag::warn(&format!(
            "phases still open at exit, ended there: {}",
            missing.join(", ")
        ));
    }
}

/// The journal file: written only by the writer thread and the exit flush
/// (both under the collector's writer lock), and never under [`STATE`]'s
/// lock, so the recording threads never wait for its I/O. Lock order:
/// `JOURNAL`, then `STATE`.
#[derive(Default)]
struct Journal {
    file: Option<std::fs::File>,
    /// Names already in the file (ids below this).
    names: usize,
    /// The process the file belongs to: a forked child starts its own.
    pid: u32,
    broken: bool,
}

static JOURNAL: Mutex<Option<Journal>> = Mutex::new(None);

fn journal_path() -> Option<std::path::PathBuf> {
    Some(state::spool_dir()?.join(phase_journal::journal_file_name(
        state::rank(),
        std::process::id(),
    )))
}

impl Journal {
    /// Append the finished phases (and the names they use first).
    fn append(&mut self) -> Result<(), String> {
        let pid = std::process::id();
        if self.pid != pid {
            *self = Journal {
                pid,
                ..Journal::default()
            };
        }
        // Taken under the state lock, written after it.
        let from = self.names;
        let Some((names, rows)) = with_state(|s| {
            if s.done.is_empty() {
                return None;
            }
            let names: Vec<(u32, String)> = (from.min(s.names.len())..s.names.len())
                .map(|i| (i as u32, s.names[i].clone()))
                .collect();
            Some((names, std::mem::take(&mut s.done)))
        }) else {
            return Ok(());
        };
        if self.broken {
            return Ok(());
        }
        if self.file.is_none() {
            let Some(path) = journal_path() else {
                return Ok(());
            };
            let opened = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| {
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&path)?;
                    writeln!(f, "{}", phase_journal::HEADER)?;
                    Ok(f)
                });
            match opened {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.broken = true;
                    return Err(format!(
                        "cannot write the phases to {} ({e}); they are lost",
                        path.display()
                    ));
                }
            }
        }
        let names: Vec<(u32, &str)> = names.iter().map(|(i, n)| (*i, n.as_str())).collect();
        let bytes = phase_journal::encode(&names, &rows);
        let file = self.file.as_mut().expect("opened above");
        match file.write_all(&bytes) {
            Ok(()) => {
                self.names = from + names.len();
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(format!("cannot write the phases ({e}); they are lost"))
            }
        }
    }
}

/// Append the finished phases to the journal (writer thread).
pub fn spool() {
    let mut guard = lock(&JOURNAL);
    if let Err(e) = guard.get_or_insert_with(Journal::default).append() {
        diag::warn(&e);
    }
}

/// Encode the journal into the `phases` part and remove it (exit flush).
pub fn encode() {
    let mut guard = lock(&JOURNAL);
    let journal = guard.get_or_insert_with(Journal::default);
    if let Err(e) = journal.append() {
        diag::warn(&e);
    }
    if journal.file.take().is_none() {
        return;
    }
    // Phases may follow (after the flush of MPI_Finalize, until the process
    // exits): the next journal starts with its names again.
    journal.names = 0;
    let (Some(dir), Some(path)) = (state::trace_dir(), journal_path()) else {
        return;
    };
    match phase_journal::journal_to_part(&path, &dir, state::rank(), state::layout()) {
        Ok(_) => {
            if let Err(e) = std::fs::remove_file(&path) {
                diag::warn(&format!("cannot remove {} ({e})", path.display()));
            }
        }
        Err(e) => diag::warn(&format!(
            "cannot encode the phases ({e}); they stay in {}",
            path.display()
        )),
    }
}

/// A C string argument, `None` for NULL.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn c_name<'a>(name: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    // SAFETY: per the contract.
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy())
}

/// `void hyscope_phase_begin(const char *name)` of `hyscope.h`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_phase_begin(name: *const c_char) {
    // SAFETY: the caller's contract.
    let name = unsafe { c_name(name) };
    crate::diag::guarded(|| match name {
        Some(n) => begin(&n),
        None => diag::warn("hyscope_phase_begin(NULL) ignored: a phase needs a name"),
    });
}

/// `void hyscope_phase_end(const char *name)`: NULL ends the innermost phase.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_phase_end(name: *const c_char) {
    // SAFETY: the caller's contract.
    let name = unsafe { c_name(name) };
    crate::diag::guarded(|| end(name.as_deref()));
}

/// `void hyscope_phase_mark(const char *name)`: NULL ends the current mark.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hyscope_phase_mark(name: *const c_char) {
    // SAFETY: the caller's contract.
    let name = unsafe { c_name(name) };
    crate::diag::guarded(|| mark(name.as_deref()));
}

/// `void hyscope_iteration(long long step)`.
#[unsafe(no_mangle)]
pub extern "C" fn hyscope_iteration(step: c_longlong) {
    iteration(step);
}

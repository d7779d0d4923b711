//! The start and exit paths of the collector: what happens when recording
//! starts, when MPI_Init and MPI_Finalize run, at `MPI_Abort` and at exit
//! (flush, symbols, rank file, manifest). The process's state these paths
//! change is in `state`; the writer and the spools in `spooling`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use hyscope_format::{ProcessEnd, RankInfo};

use crate::diag::{self, lock, warn};
use crate::state::{
    self, EXITING, MANIFEST_BY_MPI, RANK, rank, trace_dir, with_manifest, with_rank_info,
};
use crate::{phases, slots, spooling, symbols};

static MPI_SEEN: AtomicBool = AtomicBool::new(false);
/// Serialises the exit path (atexit and OMPT finalize may both run it).
static FINISH: Mutex<()> = Mutex::new(());

/// The exit path's lock, to hold across a `fork` (see `forking`).
pub(crate) fn hold_for_fork() -> crate::diag::Held {
    crate::diag::hold(&FINISH)
}

/// What runs, besides [`on_recording_start`]'s own work, when the process
/// starts recording: given by the layer above ([`init`]'s caller).
static ALSO_AT_RECORDING_START: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Initialise the session (idempotent, cheap after the first call), and
/// give the writer thread what it runs besides the event tables;
/// `also_at_recording_start` runs once the process starts recording (the
/// samplers' first readings).
pub fn init(also_at_recording_start: fn()) {
    let _ = ALSO_AT_RECORDING_START.set(also_at_recording_start);
    spooling::set_companions(spooling::Companions {
        at_start: on_recording_start,
        each_round: phases::spool,
        at_encode: phases::encode,
    });
    state::init();
}

/// MPI_Init confirms the rank and the world size.
pub fn set_mpi_world(rank: u32, size: u32) {
    state::init();
    let had = RANK.load(Ordering::Relaxed);
    let child_of = with_rank_info(|r| r.child_of);
    if rank != had && child_of.is_some_and(|c| c.rank == rank) {
        // A program that an exec put in place of one that recorded under
        // its rank (or a child of the rank) took an id of its own; MPI makes
        // it the rank (unsupported: `exec`). Its id's early rank file goes,
        // so that no id is left saying it is still running.
        warn(&format!(
            "this program recorded as id {had} (its rank's files were another program's of this process, or its parent's); MPI_Init makes it rank {rank}: both programs' events are rank {rank}'s from here"
        ));
        if let Some(dir) = trace_dir() {
            let _ = std::fs::remove_file(state::layout().rank_file(&dir, had));
        }
        RANK.store(rank, Ordering::Relaxed);
    } else if rank != had {
        warn(&format!(
            "MPI rank {rank} differs from the launcher's rank {had}; parts written before MPI_Init are under the latter"
        ));
        RANK.store(rank, Ordering::Relaxed);
    }
    MPI_SEEN.store(true, Ordering::Relaxed);
    spooling::mark_active();
    // A process that calls MPI_Init is a rank of the job, never a child.
    with_rank_info(|r| {
        r.rank = rank;
        r.child_of = None;
        r.command.clear();
    });
    with_manifest(|m| m.world_size = size);
}

/// Flush every thread's buffer and close the open parts (e.g. from MPI_Finalize).
pub fn flush_all() {
    hyscope_ompt::release_held_of_this_thread();
    spooling::flush_all();
}

/// A snapshot of this rank's info with current counts, drops and warnings.
pub fn rank_info_snapshot() -> RankInfo {
    let mut info = rank_info_counts();
    info.thread_cpus = state::sample_thread_cpus();
    info
}

/// [`rank_info_snapshot`] without reading the threads' masks: early in the
/// run they may not be bound yet, and a mask read once is kept at exit.
fn rank_info_counts() -> RankInfo {
    let mut info = with_rank_info(|r| r.clone());
    info.events = spooling::written_counts();
    info.dropped_events = spooling::dropped_events();
    info.writer_cpu_ns = spooling::writer_cpu_ns();
    info.encode_ns = spooling::encode_ns();
    info.threads = info.threads.max(hyscope_ompt::threads_seen());
    info.warnings = diag::given();
    info
}

/// Before `MPI_Finalize` lets the ranks go: encode everything recorded so far
/// into parts and resolve its code addresses. When one rank exits with an
/// error, `mpirun` kills the others, possibly in their exit path; done here,
/// inside the last collective, the trace then lacks at most the few events
/// recorded after it (the exit path adds those).
pub fn checkpoint() {
    if diag::locks_held_here() > 0 {
        // MPI_Finalize in a signal handler that interrupted the collector
        // inside a lock: the exit path spools everything instead.
        return;
    }
    let _guard = lock(&FINISH);
    if !spooling::is_active() {
        return;
    }
    hyscope_ompt::release_held_of_this_thread();
    spooling::flush_all();
    if let Some(dir) = trace_dir()
        && !spooling::output_failed()
    {
        symbols::write_new(
            &dir,
            rank(),
            state::writer_options(),
            &spooling::seen_addresses(),
        );
    }
}

/// The writer thread started (the process records something): prepare the
/// crash handler's paths, write the end note and the rank file early (a
/// process killed later still has its identity in the trace), and for rank
/// 0 a draft manifest unless one exists (MPI_Init replaces it).
pub fn on_recording_start() {
    if let Some(also) = ALSO_AT_RECORDING_START.get() {
        also();
    }
    let claimed_now = state::claim_identity();
    if !spooling::prepare_emergency() {
        return; // the trace directory is unusable (said once)
    }
    if !claimed_now {
        // The claim wrote the early rank file itself.
        write_early_rank_file();
    }
    if let Some(dir) = trace_dir()
        && rank() == 0
        && !MPI_SEEN.load(Ordering::Relaxed)
        && !dir.join(hyscope_format::MANIFEST_FILE).exists()
    {
        // Failing here (a full disk) is said by the exit path or the end note.
        let _ = with_manifest(|m| m.clone()).write(&dir);
    }
}

/// After MPI_Init: the rank is confirmed and the clock offset measured. The
/// crash handler's paths and the early rank file follow the rank, and the
/// handlers go back in front of those the MPI library installed.
pub fn on_mpi_ready() {
    crate::crash::install();
    if spooling::prepare_emergency() {
        write_early_rank_file();
    }
}

/// `ranks/rank-<r>.json` saying the process is running: what recovery after a
/// kill knows of it (host, pid, CPUs, clock offsets).
fn write_early_rank_file() {
    let Some(dir) = trace_dir() else {
        return;
    };
    let mut info = rank_info_counts();
    info.end = Some(ProcessEnd::Running);
    // Failing here (a full disk) is said by the exit path or the end note.
    let _ = info.write_in(&dir, state::layout());
}

/// At `MPI_Finalize`, after the second clock offset: this rank's description
/// in its own rank file, as rank 0 gathered it before (readers merge the rank
/// files into the manifest's `ranks`); the exit path rewrites it. A rank
/// killed after `MPI_Finalize` keeps this one. Returns what it wrote.
pub fn write_rank_file_at_finalize() -> RankInfo {
    let mut info = rank_info_snapshot();
    info.threads = info.threads.max(slots::threads_seen());
    info.end = Some(ProcessEnd::Running);
    if let Some(dir) = trace_dir() {
        // Failing here (a full disk) is said by the exit path or the end note.
        let _ = info.write_in(&dir, state::layout());
    }
    info
}

/// `MPI_Abort` was called: spool everything now (the launcher kills every
/// rank right after), note how the process ended, and write its rank file.
/// `hyscope record` encodes the spools after the job.
pub fn abort(code: i32) {
    warn("MPI_Abort called; the trace ends here");
    if !spooling::is_active() || !spooling::emergency_flush(ProcessEnd::Aborted { code }) {
        return;
    }
    let Some(dir) = trace_dir() else {
        return;
    };
    let mut info = rank_info_snapshot();
    info.end = Some(ProcessEnd::Aborted { code });
    if let Err(e) = info.write_in(&dir, state::layout()) {
        warn(&format!("cannot write the rank file ({e})"));
        return;
    }
    // The spools are complete on disk now: encode them here too, so the trace
    // is whole without `hyscope record` (which would do it after the job).
    spooling::refresh_maps();
    let pid = std::process::id();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for p in hyscope_format::spool::to_parquet::leftover_processes(&dir) {
        if (p.rank, p.pid) != (rank(), pid) {
            continue;
        }
        match hyscope_format::spool::to_parquet::recover_process(&dir, &p, threads) {
            Ok(_) => {}
            Err(e) => warn(&format!(
                "cannot encode the trace ({e}); `hyscope record` retries"
            )),
        }
    }
}

/// The exit path: flush, resolve symbols, write `ranks/rank-<r>.json` and, for
/// programs without MPI (or where MPI did not take it over), rank 0 writes
/// `manifest.json`. Runs at `atexit` and at OMPT finalize; later runs add what
/// arrived in between. Does nothing in processes that recorded nothing.
pub fn finish() {
    end_program(ProcessEnd::Finished);
}

/// The end of the program this process runs: at its exit (`Finished`, see
/// [`finish`]) and before an exec puts another in its place (`Exec`, see
/// `exec`), which takes the collector's state and threads with it. Every
/// thread's events are spooled and encoded, the phases still open end here,
/// and the rank file says how the program ended. True when it wrote that
/// end; false when the process recorded nothing or a crash handler (or
/// `MPI_Abort`) already spooled everything, or when the calling thread
/// holds one of the collector's locks (an `exit` or exec in a signal
/// handler: [`end_holding_a_lock`] spools everything as a crash handler does).
pub(crate) fn end_program(end: ProcessEnd) -> bool {
    if diag::locks_held_here() > 0 {
        return end_holding_a_lock(end);
    }
    let _guard = lock(&FINISH);
    if !spooling::is_active() {
        return false;
    }
    if spooling::spool_closed() {
        // A crash handler or MPI_Abort spooled everything and wrote the end
        // note; `hyscope record` encodes the spools.
        return false;
    }
    // A forked child takes its own identity first: the claim forgets what
    // is its parent's, the end stamped below among it.
    state::claim_identity();
    if !EXITING.swap(true, Ordering::Relaxed) {
        // The application's end: what comes after is the collector's.
        phases::close_open(state::stamp_exit());
    }
    hyscope_ompt::before_exit_flush();
    spooling::flush_all();
    let Some(dir) = trace_dir() else {
        return true;
    };
    if spooling::output_failed() {
        // Already reported once; the application's output stays untouched
        // otherwise. The end note says how the process ended (and why its
        // trace is short); so does the rank file if there is room for it.
        spooling::write_end_note(end.clone());
        // The note stays: the spools it left are for `hyscope record`.
        let mut info = rank_info_snapshot();
        info.end = Some(end);
        let _ = info.write_in(&dir, state::layout());
        return true;
    }
    symbols::write_new(
        &dir,
        rank(),
        state::writer_options(),
        &spooling::seen_addresses(),
    );
    let mut info = rank_info_snapshot();
    info.finished = true;
    info.end = Some(end.clone());
    if let Err(e) = info.write_in(&dir, state::layout()) {
        // The end note (written in place, no new blocks) says it instead.
        spooling::write_end_note(end);
        if !info.disk_full {
            warn(&format!("cannot write the rank file ({e})"));
        }
        return true;
    }
    spooling::remove_end_note();
    if rank() == 0 && !MANIFEST_BY_MPI.load(Ordering::Relaxed) {
        let mut manifest = with_manifest(|m| m.clone());
        if let Some(omp) = hyscope_ompt::openmp_info() {
            manifest.openmp = Some(omp);
        }
        if !MPI_SEEN.load(Ordering::Relaxed) {
            manifest.ranks = vec![info];
        }
        if let Err(e) = manifest.write(&dir) {
            warn(&format!("cannot write the manifest ({e})"));
        }
    }
    true
}

/// [`end_program`] on a thread that holds one of the collector's locks: the
/// program called `exit` (or an exec) in a signal handler that interrupted
/// the collector inside a locked section (a SIGTERM handler at a batch
/// system's time limit). Every lock the exit path takes could be that one,
/// so none is waited for: the crash handler's path spools every recorded
/// event without locks and writes the end note (`hyscope record` encodes
/// the spools after the job, as after a crash), one warning says what
/// happened, and the rank file on disk gets it. False, as after a crash:
/// the spools are closed, and an exec that fails after it leaves the
/// program unrecorded from there (nothing takes this end back).
fn end_holding_a_lock(end: ProcessEnd) -> bool {
    if !spooling::is_active() || spooling::spool_closed() {
        return false;
    }
    let how = match &end {
        ProcessEnd::Exec { .. } => "an exec",
        _ => "exit()",
    };
    let msg = format!(
        "{how} ran in a signal handler that interrupted the collector inside a lock; \
         every event was spooled as after a crash (phases still open stay open) \
         and `hyscope record` encodes them after the job"
    );
    diag::warn_without_waiting(&msg);
    if spooling::emergency_flush(end.clone()) {
        add_to_rank_file_on_disk(&msg, end);
    }
    false
}

/// Add `warning` and `end` to the rank file on disk (the early one, or the
/// one written at `MPI_Finalize`) without any of the collector's locks;
/// `hyscope record` adds the spooled events' counts to it.
fn add_to_rank_file_on_disk(warning: &str, end: ProcessEnd) {
    let Some(dir) = trace_dir() else {
        return;
    };
    let layout = state::layout();
    let Ok(mut info) = RankInfo::read(&layout.rank_file(&dir, rank())) else {
        return; // `hyscope record` makes one from the end note
    };
    if !info.warnings.iter().any(|w| w == warning) {
        info.warnings.push(warning.to_string());
    }
    info.dropped_events = info.dropped_events.max(spooling::dropped_events());
    info.end = Some(end);
    info.finished = false;
    let _ = info.write_in(&dir, layout);
}

/// The exec that [`end_program`] wrote the program's end for failed: the
/// program goes on, and so does its recording. Its end is undone: the
/// application's end is not stamped any more, and the rank file and the
/// end note say `running` again (the caller has put the end note back in
/// place, `exec::reopen_end_note`), with the module map copied again for
/// recovery after a kill. What the end encoded stays in the trace, once;
/// the next flush adds what follows. The phases it ended stay ended.
pub(crate) fn resume_after_failed_exec() {
    let _guard = lock(&FINISH);
    EXITING.store(false, Ordering::Relaxed);
    with_rank_info(|r| r.exit_ns = None);
    spooling::write_end_note(ProcessEnd::Running);
    spooling::refresh_maps();
    write_early_rank_file();
}

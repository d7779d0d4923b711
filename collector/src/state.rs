//! This process's shared state from start to exit: the configuration, its
//! rank and identity in the trace, the trace directory, the manifest draft
//! and its [`RankInfo`]. What every layer reads; the start and exit paths
//! that change it are in `lifecycle`.
//!
//! Initialised once, by the library constructor or `ompt_start_tool`,
//! whichever runs first ([`init`] is idempotent).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use hyscope_format::{
    ChildOf, Layout, Manifest, ProcessEnd, RankInfo, ThreadCpus, WriterOptions, trace_name,
};

use crate::diag::{self, lock, warn};
use crate::settings::{launched_by_mpi, settings};
use crate::{clock, slots, symbols};

/// What the session makes of the [`settings`].
#[derive(Debug, Clone)]
pub struct Config {
    /// `HYSCOPE_OUTPUT`: the trace directory (default `hyscope-<prog>-<date>-<time>` in cwd).
    pub output: Option<PathBuf>,
    /// `HYSCOPE_MODE`: `trace` (default) or `profile`.
    pub mode: String,
    /// `HYSCOPE_BUFFER_MB` (default 64: about 0.8 s of events at 1 M events/s, so a writer that falls behind on a busy node rarely drops) in bytes: the cap on event buffer memory.
    pub buffer_bytes: usize,
    /// The directory `HYSCOPE_OUTPUT` named, when it held an earlier run's
    /// trace and [`Config::output`] is a sibling of it.
    pub output_moved_from: Option<PathBuf>,
}

struct Session {
    config: Config,
    manifest: Mutex<Manifest>,
    rank_info: Mutex<RankInfo>,
}

static SESSION: OnceLock<Session> = OnceLock::new();
pub(crate) static RANK: AtomicU32 = AtomicU32::new(0);
pub(crate) static MANIFEST_BY_MPI: AtomicBool = AtomicBool::new(false);
/// The exit path has begun ([`sample_thread_cpus`] keeps earlier masks).
pub(crate) static EXITING: AtomicBool = AtomicBool::new(false);

/// Initialise the session (idempotent, cheap after the first call).
pub fn init() {
    session();
}

/// The manifest's and the rank's info's locks, to hold across a `fork`
/// (none before the session starts).
pub(crate) fn hold_for_fork() -> Vec<diag::Held> {
    SESSION
        .get()
        .map(|s| vec![diag::hold(&s.manifest), diag::hold(&s.rank_info)])
        .unwrap_or_default()
}

fn session() -> &'static Session {
    SESSION.get_or_init(|| {
        // Index 0 goes to the thread that initialises: the initial thread.
        slots::thread_index();
        OWNER.store(std::process::id(), Ordering::Relaxed);
        let rank = rank_from_env();
        RANK.store(rank, Ordering::Relaxed);
        let config = config_from_env();
        let start_clock_ns = clock::now_ns();
        let start_unix_ns = unix_ns();
        let host = hyscope_format::hostname();
        let mut manifest = Manifest::new();
        manifest.command = command_line();
        manifest.start_time = rfc3339(start_unix_ns);
        manifest.start_unix_ns = start_unix_ns;
        manifest.start_clock_ns = start_clock_ns;
        manifest.clock = clock::info();
        manifest.mode = config.mode.clone();
        manifest.hosts = vec![host.clone()];
        manifest.world_size = 1;
        manifest.config = std::env::vars()
            .filter(|(k, _)| k.starts_with("HYSCOPE_"))
            .collect::<BTreeMap<_, _>>();
        let rank_info = RankInfo {
            rank,
            host,
            pid: std::process::id(),
            cores: affinity(),
            node_cpus: online_cpus(),
            tsc_hz: manifest.clock.tsc_hz,
            clock_id: manifest.clock.id.clone(),
            ..RankInfo::default()
        };
        diag::init();
        Session {
            config,
            manifest: Mutex::new(manifest),
            rank_info: Mutex::new(rank_info),
        }
    })
}

/// The configuration.
pub fn config() -> &'static Config {
    &session().config
}

/// This process's rank: from the launcher's environment at load, confirmed by MPI_Init.
pub fn rank() -> u32 {
    init();
    RANK.load(Ordering::Relaxed)
}

/// The trace directory (`HYSCOPE_OUTPUT`), None only if no directory can be named.
/// Marked as this run's on the first call ([`hyscope_format::job_dir::mark`]):
/// every write of the collector names its directory through here first.
pub fn trace_dir() -> Option<PathBuf> {
    let dir = config().output.clone()?;
    static MARKED: std::sync::Once = std::sync::Once::new();
    MARKED.call_once(|| {
        hyscope_format::job_dir::mark(&dir);
        // Said when the run first writes there, by rank 0: not by every
        // process that loads the library (a shell the program starts).
        if let Some(from) = &config().output_moved_from
            && rank() == 0
        {
            crate::diag::warn(&format!(
                "{} holds an earlier run's trace; this run writes its trace to {} \
                 (remove it, or name another HYSCOPE_OUTPUT, to keep the name)",
                from.display(),
                dir.display()
            ));
        }
    });
    Some(dir)
}

/// Change this rank's info (e.g. RSS around MPI_Init, clock offsets).
/// Do not call [`warn`] inside `f`... it is fine, warnings are kept apart.
pub fn with_rank_info<R>(f: impl FnOnce(&mut RankInfo) -> R) -> R {
    f(&mut lock(&session().rank_info))
}

/// The application's end on this process (`RankInfo::exit_ns`): stamped
/// once, by the first exit step that runs (the samplers' stop, which
/// `atexit` runs before the exit path, or the exit path itself), and
/// returned. What comes after, a wait for the sampler thread included, is
/// the collector's time, which the analysis leaves out.
pub fn stamp_exit() -> i64 {
    with_rank_info(|r| *r.exit_ns.get_or_insert_with(clock::now_ns))
}

/// Change the job manifest draft this process holds (rank 0's is written).
pub fn with_manifest<R>(f: impl FnOnce(&mut Manifest) -> R) -> R {
    f(&mut lock(&session().manifest))
}

/// The MPI layer wrote (or will write) manifest.json; the exit path then does not.
pub fn mark_manifest_written_by_mpi() {
    MANIFEST_BY_MPI.store(true, Ordering::Relaxed);
}

/// Read each OpenMP thread's affinity mask into the rank's info and return
/// them all. Read from outside the threads (by kernel thread id), so the
/// callbacks pay nothing; the sampler thread calls this every tick, and the
/// rank's info is read before `MPI_Finalize` and at exit.
///
/// At exit, a mask read earlier is kept: a thread gone since keeps the mask
/// it had, and libomp may give the initial thread its original mask back
/// when it shuts down. `atexit` handlers and the application's destructors
/// still see the bound mask (checked with `OMP_PROC_BIND=close`
/// and `master`, OpenMP-only and under `mpirun`), so an OpenMP-only run too
/// short for the sampler, or without it, is read right at exit
/// (`record_omp.rs`, `HYSCOPE_SAMPLE_MS=0`).
pub fn sample_thread_cpus() -> Vec<ThreadCpus> {
    let at_exit = EXITING.load(Ordering::Relaxed);
    let mut info = lock(&session().rank_info);
    for (thread, tid) in hyscope_ompt::thread_ids() {
        let known = info.thread_cpus.iter().position(|t| t.thread == thread);
        if at_exit && known.is_some() {
            continue;
        }
        let Some(cpus) = affinity_of(tid) else {
            continue;
        };
        match known {
            Some(i) => info.thread_cpus[i].cpus = cpus,
            None => info.thread_cpus.push(ThreadCpus { thread, cpus }),
        }
    }
    info.thread_cpus.sort_by_key(|t| t.thread);
    info.thread_cpus.clone()
}

/// The process whose identity in the trace is being claimed, and the one
/// whose claim is done ([`claim_identity`]). Process ids, not a lock: a
/// forked child inherits these but must claim its own.
static CLAIMING: AtomicU32 = AtomicU32::new(0);
static CLAIMED: AtomicU32 = AtomicU32::new(0);

/// The process that started the session (loaded the library in this
/// program): the identity the session holds is its own, claimed or about to
/// be. A forked child's is its parent's until the child claims its own.
static OWNER: AtomicU32 = AtomicU32::new(0);
/// A child made by `fork`, set right after the fork (`forking`); a `vfork`
/// child, which shares its parent's memory, never sets it.
static FORKED: AtomicU32 = AtomicU32::new(0);

/// Whether process `pid` holds the identity this state describes: it
/// started the session or claimed its own id. False in a child made by
/// `fork` or `vfork` that has not claimed one yet. Atomics only: safe in a
/// `vfork` child.
pub(crate) fn holds_identity(pid: u32) -> bool {
    OWNER.load(Ordering::Relaxed) == pid || CLAIMED.load(Ordering::Acquire) == pid
}

/// In a child right after `fork` (called by `forking`).
pub(crate) fn note_forked_child() {
    FORKED.store(std::process::id(), Ordering::Relaxed);
}

/// Whether process `pid` is a child made by `fork` (not `vfork`), whose
/// memory is its own.
pub(crate) fn is_forked_child(pid: u32) -> bool {
    FORKED.load(Ordering::Relaxed) == pid
}

/// The most children of one job that take an id of their own.
const MAX_CHILDREN: u32 = 1 << 16;

/// Take this process's id in the trace, once per process, before anything
/// is written under it: its launcher rank, unless another process already
/// holds that rank's file, or this process's earlier program did and ended
/// by an exec (the rank file says `exec`, with this pid: `exec`). Then the
/// process is a child that a rank forked or exec'd, or the program an exec
/// put in the place of the one that recorded (either inherited the rank's
/// environment, and with it the rank number): it takes the first free id
/// after the job's ranks and records which rank it comes from, so that
/// nothing it writes lands in the rank's files. True when this call wrote
/// the process's (early) rank file.
pub(crate) fn claim_identity() -> bool {
    let pid = std::process::id();
    if CLAIMED.load(Ordering::Acquire) == pid {
        return false;
    }
    if CLAIMING.swap(pid, Ordering::AcqRel) == pid {
        // Another thread of this process claims: nothing may be written
        // before it is done (bounded: the claim is a few small files).
        for _ in 0..5000 {
            if CLAIMED.load(Ordering::Acquire) == pid {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        return false;
    }
    struct Done(u32);
    impl Drop for Done {
        fn drop(&mut self) {
            CLAIMED.store(self.0, Ordering::Release);
        }
    }
    let _done = Done(pid);
    let Some(dir) = trace_dir() else {
        return false;
    };
    let forked_from = with_rank_info(|r| (r.pid != pid).then_some(r.pid));
    if forked_from.is_some() {
        forget_parents_identity(pid);
    }
    // Not the snapshot: this may run where the writer's lock is held.
    let mut info = with_rank_info(|r| r.clone());
    info.end = Some(ProcessEnd::Running);
    // An unusable directory is said once by whoever writes next.
    match info.claim_in(&dir, layout()) {
        Ok(true) => return true,
        Ok(false) => {}
        Err(_) => return false,
    }
    let path = layout().rank_file(&dir, info.rank);
    let earlier_program = |end: &Option<ProcessEnd>| matches!(end, Some(ProcessEnd::Exec { .. }));
    if RankInfo::read(&path).is_ok_and(|holder| holder.pid == pid && !earlier_program(&holder.end))
    {
        return false;
    }
    let of_rank = info.rank;
    // SAFETY: getppid has no preconditions.
    let parent_pid = forked_from.unwrap_or_else(|| unsafe { libc::getppid() } as u32);
    let child_of = ChildOf {
        rank: of_rank,
        parent_pid,
    };
    let command = command_line();
    info.child_of = Some(child_of);
    info.command = command.clone();
    let first = world_size_hint().max(of_rank.saturating_add(1));
    for id in first..first.saturating_add(MAX_CHILDREN) {
        if layout().rank_file(&dir, id).exists() {
            continue; // taken: no file written to find out
        }
        info.rank = id;
        match info.claim_in(&dir, layout()) {
            Ok(true) => {
                RANK.store(id, Ordering::Relaxed);
                with_rank_info(|r| {
                    r.rank = id;
                    r.child_of = Some(child_of);
                    r.command = command;
                });
                return true;
            }
            Ok(false) => continue,
            Err(_) => return false,
        }
    }
    warn(&format!(
        "rank {of_rank} and {MAX_CHILDREN} ids after the job are taken; this process's events go under rank {of_rank}"
    ));
    false
}

/// A forked child starts with a copy of its parent's identity: keep what
/// describes the node and the clock, drop what is the parent's own.
fn forget_parents_identity(pid: u32) {
    with_rank_info(|r| {
        r.pid = pid;
        r.communicators.clear();
        r.rss_before_init = None;
        r.rss_after_init = None;
        r.thread_cpus.clear();
        r.exit_ns = None;
        r.end = None;
        r.finished = false;
    });
    diag::forget_given();
    symbols::forget_written();
    MANIFEST_BY_MPI.store(false, Ordering::Relaxed);
}

/// The number of the job's ranks as far as this process can tell: MPI's
/// (a forked child of a rank), else the launcher's, else 1.
fn world_size_hint() -> u32 {
    let known = with_manifest(|m| m.world_size);
    known.max(launcher_world_size()).max(1)
}

/// The job's size as the launcher gives it to every process (1 without one).
fn launcher_world_size() -> u32 {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMIX_SIZE",
        "PMI_SIZE",
        "SLURM_NTASKS",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.trim().parse::<u32>().ok())
    .unwrap_or(1)
}

/// Where this process's files go in the trace: grouped by rank blocks in a
/// job of more than `FLAT_MAX_RANKS` ranks. Decided from the launcher's job
/// size, which every process of the job sees alike before MPI_Init already
/// (its first files are written then), and its forked children too.
pub fn layout() -> Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    *LAYOUT.get_or_init(|| Layout::for_job(launcher_world_size()))
}

/// This process's spool directory (`spool/`, or its block's in the grouped layout).
pub fn spool_dir() -> Option<PathBuf> {
    Some(layout().spool_dir(&trace_dir()?, rank()))
}

/// Options of this process's part writers (in its layout).
pub fn writer_options() -> WriterOptions {
    WriterOptions {
        layout: layout(),
        ..WriterOptions::default()
    }
}

fn rank_from_env() -> u32 {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok()?.trim().parse::<u32>().ok())
    .unwrap_or(0)
}

fn config_from_env() -> Config {
    let s = settings();
    // Resolved against the working directory at load: the application may
    // change it before the files at its end are written, and a shell it
    // starts would otherwise name another directory. A directory holding an
    // earlier run's trace gives way to a sibling ([`hyscope_format::job_dir`]).
    let chosen = s.output.as_deref().map(|p| {
        let asked = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        hyscope_format::job_dir::job_output_dir(&asked, launched_by_mpi())
    });
    Config {
        output: chosen
            .as_ref()
            .map(|c| c.dir.clone())
            .or_else(default_output),
        output_moved_from: chosen.and_then(|c| c.moved_from),
        mode: s.mode.as_str().to_string(),
        buffer_bytes: (s.buffer_mb as usize).saturating_mul(1 << 20),
    }
}

/// The default trace directory ([`hyscope_format::trace_name`]) in the
/// working directory.
fn default_output() -> Option<PathBuf> {
    let prog = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "app".into());
    let cwd = std::env::current_dir().ok()?;
    // Every rank of a job, on every node, must name the same directory.
    let name = if launched_by_mpi() {
        trace_name::job_dir_name(&cwd, &prog)
    } else {
        trace_name::default_dir_name(&prog, trace_name::unix_secs())
    };
    Some(cwd.join(name))
}

fn unix_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn rfc3339(unix_ns: i64) -> String {
    let (y, mo, d, h, mi, s) = trace_name::civil(unix_ns.div_euclid(1_000_000_000));
    let ms = unix_ns.rem_euclid(1_000_000_000) / 1_000_000;
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

fn command_line() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// CPUs online on this host, whatever this process's affinity.
fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(0)
}

fn affinity() -> Vec<u32> {
    affinity_of(0).unwrap_or_default()
}

/// The CPUs thread `tid` may run on (0 = the calling thread); None when it
/// has exited.
fn affinity_of(tid: i32) -> Option<Vec<u32>> {
    // SAFETY: set is a plain bitmask, zeroed before use.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .map(|c| c as u32)
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(1_500_000_000), "1970-01-01T00:00:01.500Z");
        // 2026-11-22T06:43:07.250Z
        assert_eq!(
            rfc3339(1_795_329_787_250_000_000),
            "2026-11-22T06:43:07.250Z"
        );
    }
}

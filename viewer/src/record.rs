//! `hyscope record [options] -- <command>`: run a program under the collector.
//!
//! Three positions, chosen from the command and the environment:
//! - **launcher**: `hyscope record -- mpirun -np 4 ./app`. The collector
//!   variables are handed to the launcher for the ranks only (`-x` for Open MPI,
//!   `-genv` for Hydra, `--export` for srun): `LD_PRELOAD` must not reach the
//!   launcher itself.
//! - **per rank**: `mpirun -np 4 hyscope record -- ./app`. The rank comes from the
//!   launcher's environment. Ranks other than 0 `exec` the program; rank 0 runs
//!   it as a child so it can print the job's summary afterwards.
//! - **plain**: `hyscope record -- ./omp_app` (OpenMP-only or a singleton MPI run).
//!
//! The application's exit code is preserved (128 + signal when it was killed).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::ValueEnum;
use hyscope_format::settings::{self, Reader, Setting};
use hyscope_format::trace_name;

use crate::units;

mod launcher;
use launcher::{LauncherKind, find_launched_program, launch_args, launcher_kind, resolve_in_path};

/// Environment variables that carry the rank, in the order the collector reads them.
const RANK_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
];
/// Environment variables that carry the world size.
const SIZE_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMIX_SIZE",
    "SLURM_NTASKS",
];
/// The variable NVTX reads for its tool library (`nvtxDetail/nvtxInit.h`).
const NVTX_INJECTION: &str = "NVTX_INJECTION64_PATH";
/// Directory inside the trace for the `libgomp.so.1 → libomp` link (not a table; readers ignore it).
const RUNTIME_DIR: &str = ".runtime";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpenMpRuntime {
    /// Run with the program's own OpenMP runtime.
    Native,
    /// Run GCC-built programs on LLVM's libomp (which has OMPT) through its GOMP ABI.
    Llvm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Flavour {
    /// Detect from the program (`ldd`) or the launcher (`--version`).
    Auto,
    Openmpi,
    Mpich,
}

/// Run a program (or an MPI launcher) under the collector and write a trace.
///
/// Examples:
///   hyscope record -- ./omp_app
///   hyscope record -o trace -- mpirun -np 4 ./app
///   mpirun -np 4 hyscope record -- ./app
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The options that set a `HYSCOPE_*` variable (from the settings table).
    #[command(flatten)]
    settings: SettingArgs,
    /// OpenMP runtime: `llvm` runs GCC-built programs on libomp (GCC's libgomp has no OMPT).
    #[arg(long, value_enum, default_value = "native")]
    openmp_runtime: OpenMpRuntime,
    /// MPI flavour of the program, which selects the collector build and the launcher's flags.
    #[arg(long, value_enum, default_value = "auto")]
    mpi_flavour: Flavour,
    /// Print the collector library, the variables set and the command run.
    #[arg(short, long)]
    verbose: bool,
    /// The command: a program, or an MPI launcher (mpirun, mpiexec, srun) with its program.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

/// `record`'s options for the settings that have one, built from
/// [`settings::ALL`]: each value is checked as the collector checks the
/// variable, and a bad one is refused before anything runs.
#[derive(Debug, Default)]
pub struct SettingArgs {
    /// (setting, valid value) for each option given.
    given: Vec<(&'static Setting, String)>,
}

impl SettingArgs {
    fn get(&self, setting: &Setting) -> Option<&str> {
        self.given
            .iter()
            .find(|(s, _)| s.var == setting.var)
            .map(|(_, v)| v.as_str())
    }
}

impl clap::FromArgMatches for SettingArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut args = SettingArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for s in settings::ALL.iter().filter(|s| s.option.is_some()) {
            if let Some(v) = matches.get_one::<String>(s.var) {
                self.given.retain(|(g, _)| g.var != s.var);
                self.given.push((s, v.clone()));
            }
        }
        Ok(())
    }
}

impl clap::Args for SettingArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        settings::ALL.iter().fold(cmd, |cmd, &s| {
            let Some(opt) = s.option else {
                return cmd;
            };
            let mut arg = clap::Arg::new(s.var)
                .long(opt.long)
                // clap keeps names as `&'static str`; built once per run.
                .value_name(&*String::leak(s.value_name()))
                .help(s.help())
                .value_parser(move |v: &str| s.check(v).map_err(|e| e.reason));
            if let Some(c) = opt.short {
                arg = arg.short(c);
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The collector's variables for the program: each from `record`'s option
/// when given, else from the environment, checked (a bad value is replaced
/// by the one the warning names), else left to the collector's default.
fn collector_variables(given: &SettingArgs, warn_here: bool) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("HYSCOPE_") && k != settings::LIB.var)
        .collect();
    for s in settings::ALL
        .iter()
        .filter(|s| s.reader == Reader::Collector && s.var != settings::OUTPUT.var)
    {
        if let Some(v) = given.get(s) {
            env.insert(s.var.into(), v.into());
            continue;
        }
        let Some(raw) = env.get(s.var) else {
            continue;
        };
        let (used, warning) = s.resolve(Some(raw));
        if let Some(w) = warning {
            if warn_here {
                warn(&w);
            }
            match used {
                Some(u) => env.insert(s.var.into(), u),
                None => env.remove(s.var),
            };
        }
    }
    env
}

/// How the command is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    Launcher(LauncherKind),
    PerRank { rank: u32 },
    Plain,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let command = args.command.clone();
    let program0 = PathBuf::from(&command[0]);
    let position = position(&program0, args.mpi_flavour);
    // The application program: the command itself, or the launcher's program argument.
    let app = match position {
        Position::Launcher(kind) => find_launched_program(kind, &command[1..]),
        _ => resolve_in_path(&program0),
    };
    let app_name = app
        .as_deref()
        .or(Some(program0.as_path()))
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "app".into());
    let ldd = app.as_deref().map(ldd).unwrap_or_default();

    // The program's own MPI decides (an OpenMP-only program needs no MPI build,
    // whatever starts it); the launcher's kind only when the program was not found.
    let flavour = match args.mpi_flavour {
        Flavour::Auto => match (flavour_from_ldd(&ldd), position) {
            (Some(f), _) => Some(f),
            (None, Position::Launcher(kind)) if app.is_none() => match kind {
                LauncherKind::Hydra => Some(Flavour::Mpich),
                _ => Some(Flavour::Openmpi),
            },
            (None, _) => None,
        },
        f => Some(f),
    };

    let given_output = args
        .settings
        .get(&settings::OUTPUT)
        .map(str::to_string)
        .or_else(|| settings::OUTPUT.from_env().0);
    let output = match given_output {
        Some(o) => PathBuf::from(o),
        None => PathBuf::from(match position {
            // Every rank, on every node, must name the same directory.
            Position::PerRank { .. } => trace_name::job_dir_name(Path::new("."), &app_name),
            _ => trace_name::default_dir_name(&app_name, trace_name::unix_secs()),
        }),
    };
    let output = absolute(&output)?;
    // Everything that can fail is checked before the trace directory is made.
    if resolve_in_path(&program0).is_none() {
        bail!("cannot find the program `{}`", program0.display());
    }
    let explicit_lib = args
        .settings
        .get(&settings::LIB)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(settings::LIB.var).map(PathBuf::from));
    let lib = find_library(explicit_lib.as_deref(), flavour)?;
    if args.openmp_runtime == OpenMpRuntime::Llvm {
        libomp_path()?;
    }
    prepare_output(&output, position)?;

    let is_rank0 = !matches!(position, Position::PerRank { rank } if rank != 0);
    let mut env = collector_variables(&args.settings, is_rank0);
    env.insert(settings::OUTPUT.var.into(), output.display().to_string());
    // The preload goes in front of whatever the user preloads already.
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", lib.display()),
        _ => lib.display().to_string(),
    };
    env.insert("LD_PRELOAD".into(), preload);
    // NVTX-annotated programs load their tool from this path on their first
    // NVTX call; the preloaded library is that tool (the dlopen finds it
    // loaded already). A user's own NVTX tool is left in place.
    match std::env::var_os(NVTX_INJECTION) {
        None => {
            env.insert(NVTX_INJECTION.into(), lib.display().to_string());
        }
        Some(v) if is_rank0 && Path::new(&v) != lib => warn(&format!(
            "{NVTX_INJECTION} is set to {}: NVTX ranges go to that tool, not to hyscope",
            v.to_string_lossy()
        )),
        Some(_) => {}
    }
    // A statically linked program can only find the tool through OMP_TOOL_LIBRARIES.
    if ldd.contains("not a dynamic executable") && std::env::var_os("OMP_TOOL_LIBRARIES").is_none()
    {
        env.insert("OMP_TOOL_LIBRARIES".into(), lib.display().to_string());
    }
    if std::env::var("OMP_TOOL").is_ok_and(|v| v.eq_ignore_ascii_case("disabled")) {
        warn("OMP_TOOL=disabled is set: the OpenMP runtime will not report anything");
    }

    match args.openmp_runtime {
        OpenMpRuntime::Llvm => {
            let dir = gomp_shim(&output)?;
            let path = match std::env::var("LD_LIBRARY_PATH") {
                Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
                _ => dir.display().to_string(),
            };
            env.insert("LD_LIBRARY_PATH".into(), path);
            if is_rank0 {
                warn(
                    "--openmp-runtime=llvm: running GCC-built OpenMP code on LLVM's libomp; \
                     static loops inlined by GCC produce no loop events, `single` has no end \
                     and worksharing barriers appear as barrier_implementation",
                );
            }
        }
        OpenMpRuntime::Native => {
            if ldd.contains("libgomp.so") && is_rank0 {
                warn(
                    "the program uses GCC's libgomp, which has no OMPT: no OpenMP events will \
                     be recorded; add --openmp-runtime=llvm to run it on LLVM's libomp",
                );
            }
        }
    }

    if args.verbose && is_rank0 {
        eprintln!("hyscope: collector {}", lib.display());
        eprintln!("hyscope: position {position:?}, MPI flavour {flavour:?}");
        for (k, v) in &env {
            eprintln!("hyscope: set {k}={v}");
        }
    }

    if matches!(position, Position::PerRank { .. }) {
        // The ranks of a node share one clock calibration, keyed by what they
        // have in common: here the launcher's process on the node (rank 0 runs
        // the program as a child of this process, the others exec it).
        // SAFETY: getppid has no preconditions.
        let launcher = unsafe { libc::getppid() };
        env.entry(settings::CLOCK_GROUP.var.into())
            .or_insert_with(|| format!("ppid{launcher}"));
    }
    let started = Instant::now();
    let status = match position {
        Position::Launcher(kind) => {
            let mut cmd = Command::new(&command[0]);
            cmd.args(launch_args(kind, &env, &command[1..]));
            if args.verbose {
                eprintln!("hyscope: run {cmd:?}");
            }
            // The HYSCOPE_* variables (not LD_PRELOAD) may also live in the launcher's
            // own environment: harmless, and it lets launchers that forward everything work.
            for (k, v) in &env {
                if k.starts_with("HYSCOPE_") {
                    cmd.env(k, v);
                }
            }
            spawn_and_wait(cmd, &output)?
        }
        Position::PerRank { rank } if rank != 0 => {
            let mut cmd = Command::new(&command[0]);
            cmd.args(&command[1..]).envs(&env);
            let err = cmd.exec();
            remove_if_unused(&output);
            bail!("cannot run {}: {err}", command[0].to_string_lossy());
        }
        Position::PerRank { .. } | Position::Plain => {
            let mut cmd = Command::new(&command[0]);
            cmd.args(&command[1..]).envs(&env);
            spawn_and_wait(cmd, &output)?
        }
    };
    let code = exit_code(status);
    if !matches!(position, Position::PerRank { .. }) {
        crate::recover::recover_spools(&output);
    }

    let expected_ranks = match position {
        Position::PerRank { .. } => world_size_from_env(),
        _ => None,
    };
    if is_rank0 {
        // Per rank, rank 0 may finish before its siblings have written their rank files.
        if let Some(n) = expected_ranks
            && wait_for_rank_files(&output, n)
        {
            crate::recover::remove_spool_dir(&output);
        }
        summary(&output, started.elapsed(), code);
    }
    Ok(ExitCode::from(code))
}

fn warn(msg: &str) {
    eprintln!("hyscope: warning: {msg}");
}

/// Where the command runs: behind a launcher, as one rank, or alone.
fn position(program: &Path, flavour: Flavour) -> Position {
    if let Some(kind) = launcher_kind(program, flavour) {
        return Position::Launcher(kind);
    }
    // SLURM_PROCID alone is set in batch scripts too; within a job step SLURM_STEP_ID is.
    for var in RANK_VARS {
        if var == "SLURM_PROCID" && std::env::var_os("SLURM_STEP_ID").is_none() {
            continue;
        }
        if let Some(rank) = std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
        {
            return Position::PerRank { rank };
        }
    }
    Position::Plain
}

fn ldd(program: &Path) -> String {
    Command::new("ldd")
        .arg(program)
        .output()
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s
        })
        .unwrap_or_default()
}

/// Open MPI's library is `libmpi.so.40` (4.x) or `.20`; MPICH (and its ABI) is
/// `libmpich.so` or `libmpi.so.12`.
fn flavour_from_ldd(ldd: &str) -> Option<Flavour> {
    if ldd.contains("libmpich") || ldd.contains("libmpi.so.12") {
        Some(Flavour::Mpich)
    } else if ldd.contains("libmpi.so") {
        Some(Flavour::Openmpi)
    } else {
        None
    }
}

/// Find the collector: `--lib`/`HYSCOPE_LIB`, next to this executable, in
/// `../lib`, or in the cargo target directory this binary was built for.
/// The MPICH build is `libhyscope-mpich.so`; Open MPI and OpenMP-only programs use `libhyscope.so`.
fn find_library(explicit: Option<&Path>, flavour: Option<Flavour>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if p.is_file() {
            return absolute(p);
        }
        bail!("collector library {} does not exist", p.display());
    }
    let name = if flavour == Some(Flavour::Mpich) {
        "libhyscope-mpich.so"
    } else {
        "libhyscope.so"
    };
    let candidates = library_dirs();
    for dir in &candidates {
        let p = dir.join(name);
        if p.is_file() {
            return Ok(p.canonicalize().unwrap_or(p));
        }
    }
    let looked: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
    if name == "libhyscope-mpich.so" {
        bail!(
            "the program uses MPICH but no MPICH build of the collector ({name}) was found \
             (looked in {}); the Open MPI build would crash it (their ABIs differ). \
             Pass --mpi-flavour openmpi if the program really uses Open MPI",
            looked.join(", ")
        );
    }
    bail!(
        "cannot find the collector library {name} (looked in {}); build it with \
         `cargo build -p hyscope-collector`, run `hyscope install --prefix DIR`, or pass --lib",
        looked.join(", ")
    )
}

pub(crate) fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.canonicalize().ok())
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        dirs.push(exe_dir.clone());
        dirs.push(exe_dir.join("..").join("lib"));
        // cargo puts test/bench binaries in target/<profile>/deps.
        if exe_dir.ends_with("deps")
            && let Some(p) = exe_dir.parent()
        {
            dirs.push(p.to_path_buf());
        }
    }
    // The workspace's target directory, for binaries copied out of it.
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    dirs.push(target.join("debug"));
    dirs.push(target.join("release"));
    dirs
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("cannot make {} absolute", p.display()))
}

/// Check (before anything runs) that the trace directory is new and writable, and create it.
///
/// Per rank, siblings may already have created the directory: a rank then only
/// refuses a directory that holds a finished trace or this rank's own files.
fn prepare_output(dir: &Path, position: Position) -> anyhow::Result<()> {
    let exists = dir.exists() || dir.is_symlink();
    match position {
        Position::PerRank { rank } => {
            // A sibling's rank 0 may already have written its draft manifest
            // (no ranks listed yet): only a finished job's manifest lists them.
            let finished_manifest = dir.join(hyscope_format::MANIFEST_FILE).exists()
                && hyscope_format::Manifest::read(dir).map_or(true, |m| !m.ranks.is_empty());
            if finished_manifest || hyscope_format::find_rank_file(dir, rank).is_some() {
                bail!(
                    "{} already holds a trace; refusing to overwrite it (choose another -o or remove it)",
                    dir.display()
                );
            }
        }
        _ => {
            if exists {
                bail!(
                    "{} already exists; refusing to overwrite it (choose another -o or remove it)",
                    dir.display()
                );
            }
        }
    }
    if let Some(parent) = dir.parent() {
        if parent.exists() && !parent.is_dir() {
            bail!(
                "cannot create the output directory {}: {} is not a directory",
                dir.display(),
                parent.display()
            );
        }
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && exists_ok(position) => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("cannot create the output directory {}", dir.display()));
        }
    }
    // Directory permissions do not stop root: only a real write proves it.
    let probe = dir.join(format!(".hyscope-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("the output directory {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn exists_ok(position: Position) -> bool {
    matches!(position, Position::PerRank { .. })
}

/// LLVM's OpenMP runtime for `--openmp-runtime=llvm` (`HYSCOPE_LIBOMP` overrides).
fn libomp_path() -> anyhow::Result<PathBuf> {
    let libomp = PathBuf::from(settings::LIBOMP.from_env().0.unwrap_or_default());
    if !libomp.is_file() {
        bail!(
            "--openmp-runtime=llvm needs LLVM's OpenMP runtime at {} (Debian: libomp-19-dev); \
             set HYSCOPE_LIBOMP to use another",
            libomp.display()
        );
    }
    Ok(libomp)
}

/// A private directory with `libgomp.so.1 → libomp`, put first on `LD_LIBRARY_PATH`
/// so a GCC-built program binds its GOMP_* calls to libomp (docs/platform.md,
/// "OpenMP runtimes and OMPT", last point).
fn gomp_shim(output: &Path) -> anyhow::Result<PathBuf> {
    let libomp = libomp_path()?;
    let dir = output.join(RUNTIME_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let link = dir.join("libgomp.so.1");
    match std::os::unix::fs::symlink(&libomp, &link) {
        Ok(()) => {}
        // Another rank made it already.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", link.display())),
    }
    Ok(dir)
}

/// The child being waited for, to pass on signals sent to us.
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Remove the trace directory when nothing was written into it (the program did not start).
fn remove_if_unused(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(RUNTIME_DIR));
    let _ = std::fs::remove_dir(dir);
}

fn spawn_and_wait(mut cmd: Command, output: &Path) -> anyhow::Result<std::process::ExitStatus> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            remove_if_unused(output);
            return Err(e).with_context(|| format!("cannot run {program}"));
        }
    };
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    // Ctrl-C reaches the child through the terminal's process group; TERM and HUP
    // (e.g. from a batch system) are sent to us only.
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only reads an atomic and calls kill.
        unsafe {
            libc::signal(
                sig,
                forward_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            )
        };
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for {program}"))?;
    CHILD.store(0, Ordering::Relaxed);
    Ok(status)
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
        _ => 1,
    }
}

fn world_size_from_env() -> Option<u32> {
    SIZE_VARS
        .iter()
        .find_map(|k| std::env::var(k).ok()?.trim().parse().ok())
}

/// Wait (up to 10 s) until `n` ranks have written their rank files; whether they have.
fn wait_for_rank_files(dir: &Path, n: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while count_rank_files(dir) < n as usize {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// One line: trace path, size, ranks, events, drops and warnings; then the next command.
fn summary(dir: &Path, elapsed: Duration, code: u8) {
    let size = dir_size(dir);
    if size == 0 && count_rank_files(dir) == 0 {
        // Nothing was recorded (no OpenMP runtime with OMPT, no MPI): leave no empty trace behind.
        let _ = std::fs::remove_dir_all(dir);
        if code != 0 {
            eprintln!(
                "hyscope: no trace written: the command exited with code {code} before \
                 recording anything"
            );
        } else {
            eprintln!(
                "hyscope: no trace written: the program reported no OpenMP or MPI activity \
                 (is it built with an OpenMP runtime that has OMPT, or with MPI?)"
            );
        }
        return;
    }
    let mut partial = Vec::new();
    let (ranks, events, dropped, warnings, writer_cpu_ns, init_ns, encode_ns, note) =
        match hyscope_format::Trace::open(dir) {
            Ok(trace) => {
                let r = &trace.manifest.ranks;
                // What the report will say was lost, in the same words: a
                // rank file that says `running` may have a spool end note
                // saying the process finished on a full disk.
                partial.extend(
                    hyscope_analyzer::load::completeness_problems(dir, &trace.manifest)
                        .into_iter()
                        .filter(|p| p.data_lost)
                        .map(|p| p.what),
                );
                let mut w: Vec<&String> = r.iter().flat_map(|r| &r.warnings).collect();
                w.sort();
                w.dedup();
                (
                    r.len(),
                    r.iter()
                        .map(|r| r.events.omp + r.events.mpi + r.events.samples)
                        .sum::<u64>(),
                    r.iter().map(|r| r.dropped_events).sum::<u64>(),
                    w.len(),
                    r.iter().map(|r| r.writer_cpu_ns).sum::<u64>(),
                    trace.manifest.collector_init_ns(),
                    r.iter().map(|r| r.encode_ns).max().unwrap_or(0),
                    None,
                )
            }
            Err(e) => (count_rank_files(dir), 0, 0, 0, 0, 0, 0, Some(e.to_string())),
        };
    // What recording cost: the writer's CPU time during the run (on a node
    // whose cores the job fills, it is taken from the application), the
    // collector's own work at the end of `MPI_Init` and the Parquet encoding
    // after the run (the slowest rank's of each: ranks do them at once).
    let mut cost = Vec::new();
    if writer_cpu_ns > 0 && events > 0 {
        cost.push(format!(
            "writer {} CPU ({}/event)",
            units::ns(writer_cpu_ns as f64),
            units::ns(writer_cpu_ns as f64 / events as f64)
        ));
    }
    if init_ns > 0 {
        cost.push(format!("MPI_Init +{}", units::ns(init_ns as f64)));
    }
    if encode_ns > 0 {
        cost.push(format!("encoding {} at exit", units::ns(encode_ns as f64)));
    }
    let writer: String = cost.iter().map(|c| format!(", {c}")).collect();
    let dropped = if dropped > 0 {
        format!(", {dropped} dropped")
    } else {
        String::new()
    };
    let shown = display_path(dir);
    let head = format!("hyscope: trace {shown} ({}", units::bytes(size as f64));
    if let Some(e) = note {
        eprintln!("{head}, incomplete: {e})");
        return;
    }
    eprintln!(
        "{head}, {ranks} rank{}, {events} events{dropped}, {warnings} warning{}{writer}, {})",
        if ranks == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" },
        units::secs(elapsed.as_secs_f64()),
    );
    for p in &partial {
        eprintln!("hyscope: {p}");
    }
    // Pasted into a shell: a directory named with spaces stays one word.
    let word = shlex::try_quote(&shown).unwrap_or_else(|_| shown.clone().into());
    eprintln!("hyscope: next: hyscope report {word}");
}

/// The path relative to the working directory when it is inside it.
fn display_path(p: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| p.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .filter(|r| !r.as_os_str().is_empty())
        .unwrap_or_else(|| p.to_path_buf())
        .display()
        .to_string()
}

fn count_rank_files(dir: &Path) -> usize {
    hyscope_format::per_rank_entries(&dir.join(hyscope_format::RANKS_DIR))
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .count()
}

fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != RUNTIME_DIR)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavours() {
        assert_eq!(
            flavour_from_ldd("libmpi.so.40 => /lib/x86_64-linux-gnu/libmpi.so.40"),
            Some(Flavour::Openmpi)
        );
        assert_eq!(
            flavour_from_ldd("libmpich.so.12 => /lib/libmpich.so.12"),
            Some(Flavour::Mpich)
        );
        assert_eq!(flavour_from_ldd("libomp.so.5 => x"), None);
    }
}

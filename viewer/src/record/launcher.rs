//! Launchers (`mpirun`, `mpiexec`, `srun`): which kind a command starts,
//! how it hands variables to the ranks, and which program it launches.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Flavour;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LauncherKind {
    OpenMpi,
    Hydra,
    Srun,
}

/// Is `program` an MPI launcher, and which kind?
pub(super) fn launcher_kind(program: &Path, flavour: Flavour) -> Option<LauncherKind> {
    let name = program.file_name()?.to_string_lossy().into_owned();
    let known = [
        "mpirun",
        "mpiexec",
        "orterun",
        "prterun",
        "mpirun.openmpi",
        "mpiexec.openmpi",
        "mpirun.mpich",
        "mpiexec.mpich",
        "mpiexec.hydra",
        "srun",
    ];
    if !known.contains(&name.as_str()) {
        return None;
    }
    if name == "srun" {
        return Some(LauncherKind::Srun);
    }
    match flavour {
        Flavour::Openmpi => return Some(LauncherKind::OpenMpi),
        Flavour::Mpich => return Some(LauncherKind::Hydra),
        Flavour::Auto => {}
    }
    if name.contains("openmpi") || name == "orterun" || name == "prterun" {
        return Some(LauncherKind::OpenMpi);
    }
    if name.contains("mpich") || name.contains("hydra") {
        return Some(LauncherKind::Hydra);
    }
    // `mpirun` is whichever MPI the alternatives system chose: the file its
    // links end at names it (`orterun`, `mpiexec.hydra`, …) without running it.
    if let Some(target) = resolve_in_path(program)
        .and_then(|p| std::fs::canonicalize(p).ok())
        .filter(|t| {
            t.file_name()
                .is_some_and(|n| n != program.file_name().unwrap_or_default())
        })
    {
        let kind = launcher_kind(&target, Flavour::Auto);
        if kind.is_some() {
            return kind;
        }
    }
    // Otherwise ask it.
    let out = Command::new(program).arg("--version").output().ok();
    let text = out
        .map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s
        })
        .unwrap_or_default();
    if text.contains("HYDRA") || text.contains("MPICH") || text.contains("Intel(R) MPI") {
        Some(LauncherKind::Hydra)
    } else {
        Some(LauncherKind::OpenMpi)
    }
}

/// Arguments that hand `env` to the ranks started by a launcher.
fn launcher_env_args(kind: LauncherKind, env: &BTreeMap<String, String>) -> Vec<String> {
    match kind {
        LauncherKind::OpenMpi => env
            .iter()
            .flat_map(|(k, v)| ["-x".to_string(), format!("{k}={v}")])
            .collect(),
        LauncherKind::Hydra => env
            .iter()
            .flat_map(|(k, v)| ["-genv".to_string(), k.clone(), v.clone()])
            .collect(),
        LauncherKind::Srun => {
            let list: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![format!("--export=ALL,{}", list.join(","))]
        }
    }
}

/// The launcher's arguments `args` with [`launcher_env_args`] in front and,
/// for Open MPI, after each `:` too: its `-x` holds for one application
/// context of an MPMD job (`mpirun -np 1 a : -np 1 b`), where a rank of a
/// context without the collector would be left in `MPI_Init` (in Hydra,
/// `-genv` and Slurm's `--export` already hold for all).
pub(super) fn launch_args(
    kind: LauncherKind,
    env: &BTreeMap<String, String>,
    args: &[OsString],
) -> Vec<OsString> {
    let env_args: Vec<OsString> = launcher_env_args(kind, env)
        .into_iter()
        .map(OsString::from)
        .collect();
    let mut out = env_args.clone();
    for a in args {
        out.push(a.clone());
        if kind == LauncherKind::OpenMpi && a == ":" {
            out.extend(env_args.iter().cloned());
        }
    }
    out
}

/// The program a launcher command line starts: the first argument that is
/// neither an option nor the value of one of the launcher's options that
/// take values ([`value_count`]), and names an executable file. Skipping the
/// values matters where one names an executable itself: `--mca
/// plm_rsh_agent /path/agent` (Open MPI), `-launcher-exec /path/agent`
/// (Hydra), whose program would otherwise be taken for the application (its
/// MPI decides the collector's build; its name, the trace's).
pub(super) fn find_launched_program(kind: LauncherKind, args: &[OsString]) -> Option<PathBuf> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let text = arg.to_string_lossy();
        if text.starts_with('-') {
            for _ in 0..value_count(kind, &text) {
                rest.next();
            }
            continue;
        }
        if let Some(p) = resolve_in_path(Path::new(arg)).filter(|p| is_executable(p)) {
            return Some(p);
        }
    }
    None
}

/// How many of the following arguments option `option` of a `kind`
/// launcher takes (`--opt=value` takes none). The options with values of
/// Open MPI 4.1's `mpirun --help all`, MPICH 4's `mpiexec --help` and
/// Slurm's `srun` (its short options, and the long ones most used); an
/// option missing here only matters when its value names an executable.
fn value_count(kind: LauncherKind, option: &str) -> usize {
    if option.contains('=') {
        return 0;
    }
    let name = option.trim_start_matches('-');
    match kind {
        LauncherKind::OpenMpi => match name {
            "mca" | "gmca" => 2,
            "am" | "app" | "bind-to" | "c" | "np" | "cf" | "cartofile" | "cpu-list" | "cpu-set"
            | "cpus-per-proc" | "cpus-per-rank" | "debugger" | "default-hostfile" | "H"
            | "host" | "hnp" | "hostfile" | "launch-agent" | "machinefile" | "map-by"
            | "max-restarts" | "max-vm-size" | "N" | "n" | "npernode" | "npersocket"
            | "ompi-server" | "output-filename" | "path" | "personality" | "ppr" | "prefix"
            | "preload-files" | "rank-by" | "report-events" | "report-pid" | "report-uri"
            | "rf" | "rankfile" | "stdin" | "timeout" | "tune" | "wd" | "wdir" | "x"
            | "xml-file" | "xterm" => 1,
            _ => 0,
        },
        LauncherKind::Hydra => match name {
            "genv" | "env" => 2,
            "genvlist" | "envlist" | "f" | "hostfile" | "machinefile" | "hosts" | "host"
            | "wdir" | "configfile" | "n" | "np" | "launcher" | "launcher-exec" | "bootstrap"
            | "bootstrap-exec" | "rmk" | "topolib" | "bind-to" | "binding" | "map-by"
            | "membind" | "demux" | "iface" | "ppn" | "prepend-pattern" | "outfile-pattern"
            | "errfile-pattern" | "nameserver" | "order-nodes" | "localhost" | "usize"
            | "gpus-per-proc" => 1,
            _ => 0,
        },
        LauncherKind::Srun => match option {
            "-A" | "-b" | "-c" | "-d" | "-D" | "-e" | "-i" | "-J" | "-L" | "-m" | "-M" | "-n"
            | "-N" | "-o" | "-p" | "-q" | "-S" | "-t" | "-T" | "-w" | "-x" | "-W" | "-C" | "-G"
            | "-B" | "--account" | "--begin" | "--cpus-per-task" | "--dependency" | "--chdir"
            | "--error" | "--input" | "--job-name" | "--licenses" | "--distribution"
            | "--clusters" | "--ntasks" | "--nodes" | "--output" | "--partition" | "--qos"
            | "--time" | "--nodelist" | "--exclude" | "--constraint" | "--gpus" | "--cpu-bind"
            | "--mem" | "--mem-per-cpu" | "--gres" | "--mpi" | "--ntasks-per-node" | "--export"
            | "--reservation" | "--hint" | "--het-group" | "--mem-bind" | "--gpus-per-task" => 1,
            _ => 0,
        },
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `p` itself if it names a path, else its location on `PATH`.
pub(super) fn resolve_in_path(p: &Path) -> Option<PathBuf> {
    if p.components().count() > 1 || p.is_absolute() {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| is_executable(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_args() {
        let env: BTreeMap<String, String> = [
            ("A".to_string(), "1".to_string()),
            ("B".to_string(), "x y".to_string()),
        ]
        .into();
        assert_eq!(
            launcher_env_args(LauncherKind::OpenMpi, &env),
            ["-x", "A=1", "-x", "B=x y"]
        );
        assert_eq!(
            launcher_env_args(LauncherKind::Hydra, &env),
            ["-genv", "A", "1", "-genv", "B", "x y"]
        );
        assert_eq!(
            launcher_env_args(LauncherKind::Srun, &env),
            ["--export=ALL,A=1,B=x y"]
        );
    }

    /// Open MPI's `-x` holds for one application context: each context of
    /// an MPMD command line gets the variables.
    #[test]
    fn every_application_context_gets_the_variables() {
        let env: BTreeMap<String, String> = [("A".to_string(), "1".to_string())].into();
        let args: Vec<OsString> = ["-np", "1", "a", ":", "-np", "1", "b"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(
            launch_args(LauncherKind::OpenMpi, &env, &args),
            [
                "-x", "A=1", "-np", "1", "a", ":", "-x", "A=1", "-np", "1", "b"
            ]
            .map(OsString::from)
        );
        assert_eq!(
            launch_args(LauncherKind::Hydra, &env, &args),
            ["-genv", "A", "1", "-np", "1", "a", ":", "-np", "1", "b"].map(OsString::from)
        );
    }

    /// Option values that name executables are not the program: a launch
    /// agent (Open MPI's `--mca plm_rsh_agent`, Hydra's `-launcher-exec`)
    /// before the application.
    #[test]
    fn the_launched_program_is_not_an_option_s_value() {
        let dir = tempfile::tempdir().unwrap();
        let exe = |name: &str| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let (agent, app) = (exe("agent"), exe("app"));
        let args = |words: &[&str]| -> Vec<OsString> {
            words
                .iter()
                .map(|w| match *w {
                    "AGENT" => agent.clone().into_os_string(),
                    "APP" => app.clone().into_os_string(),
                    w => w.into(),
                })
                .collect()
        };
        let open_mpi = args(&["--mca", "plm_rsh_agent", "AGENT", "-np", "2", "APP", "x"]);
        assert_eq!(
            find_launched_program(LauncherKind::OpenMpi, &open_mpi),
            Some(app.clone())
        );
        let agent_opt = args(&["--launch-agent", "AGENT", "-x", "A=1", "APP"]);
        assert_eq!(
            find_launched_program(LauncherKind::OpenMpi, &agent_opt),
            Some(app.clone())
        );
        let hydra = args(&[
            "-genv",
            "A",
            "AGENT",
            "-launcher-exec",
            "AGENT",
            "-n",
            "2",
            "APP",
        ]);
        assert_eq!(
            find_launched_program(LauncherKind::Hydra, &hydra),
            Some(app.clone())
        );
        let srun = args(&["-n", "2", "--export=ALL", "--chdir", "AGENT", "APP"]);
        assert_eq!(
            find_launched_program(LauncherKind::Srun, &srun),
            Some(app.clone())
        );
        // A value not in the lists but no executable: passed over as before.
        let unknown = args(&["--some-option", "value", "APP"]);
        assert_eq!(
            find_launched_program(LauncherKind::OpenMpi, &unknown),
            Some(app.clone())
        );
        assert_eq!(
            find_launched_program(LauncherKind::Hydra, &args(&["-n", "2"])),
            None
        );
    }
}

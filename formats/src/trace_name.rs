//! The default name of a trace directory, `hyscope-<program>-<YYYYMMDD-HHMMSS>`
//! (UTC): `hyscope record` names it so, and so does the collector when a job
//! runs it without the launcher, so that both name a job's trace alike.
//!
//! The ranks of an MPI job each decide it on their own, before any MPI call,
//! and must all decide the same: [`job_dir_name`]. The time is their
//! parent's start (the launcher's daemon on their node), and the daemons of
//! different nodes may start in different seconds; so the first rank of the
//! job to get there names the directory for all, through a symbolic link
//! made atomically in `.hyscope-jobs/` of the working directory, keyed by
//! what the launcher tells every rank about its job ([`job_key`]).

use std::path::Path;

/// The default trace directory name for `program` started at `unix_secs`.
pub fn default_dir_name(program: &str, unix_secs: i64) -> String {
    let (y, mo, d, h, mi, s) = civil(unix_secs);
    format!("hyscope-{program}-{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}")
}

/// Seconds since the epoch, now.
pub fn unix_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The start time of the calling process's parent, seconds since the epoch
/// (from `/proc`; `None` where it cannot be read).
pub fn parent_start_unix_secs() -> Option<i64> {
    // Field 22: starttime, clock ticks since boot.
    let ticks: i64 = stat_field(std::os::unix::process::parent_id(), 22)?;
    let btime: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Some(btime + ticks / hz)
}

/// (year, month, day, hour, minute, second) in UTC of a Unix time in seconds
/// (Howard Hinnant's `civil_from_days`).
pub fn civil(unix_secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = unix_secs.div_euclid(86_400);
    let tod = unix_secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (tod / 3600) as u32,
        (tod % 3600 / 60) as u32,
        (tod % 60) as u32,
    )
}

/// Where the ranks of a job agree on their trace directory's name (in the
/// working directory): one symbolic link per job, named by its key,
/// pointing to the name.
pub const JOBS_DIR: &str = ".hyscope-jobs";

/// How old a job's link may get before a later job removes it.
const STALE_SECS: u64 = 7 * 24 * 3600;

/// A link older than this is an earlier job's whose key came back (the
/// ranks of one job all start within minutes): replaced, not joined.
const START_WINDOW_SECS: u64 = 3600;

/// What every rank of the calling process's MPI job is told about the job,
/// the same on every node, as a file name: Slurm's job and step, Open MPI's
/// launcher address (`OMPI_MCA_orte_hnp_uri`: its job family, address and
/// port), the PMIx namespace (Open MPI 5, Slurm with PMIx), or MPICH Hydra's
/// control port (the command line of the rank's parent, `hydra_pmi_proxy`).
/// None outside a launcher, or where none of them is found.
pub fn job_key() -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let key = if let (Some(job), Some(step)) = (var("SLURM_JOB_ID"), var("SLURM_STEP_ID")) {
        format!("slurm-{job}.{step}")
    } else if let Some(uri) = var("OMPI_MCA_orte_hnp_uri") {
        format!("ompi-{uri}")
    } else if let Some(ns) = var("PMIX_NAMESPACE") {
        format!("pmix-{ns}")
    } else {
        format!("hydra-{}", hydra_control_port()?)
    };
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(200)
        .collect();
    Some(safe)
}

/// The `--control-port` of the `hydra_pmi_proxy` that started this process
/// (mpiexec's address, which every proxy of the job is given): the parent,
/// or a nearer ancestor's parent where a rank runs behind a wrapper (a
/// script, or `hyscope record`, which starts rank 0's program as a child and
/// the other ranks' in its own place).
fn hydra_control_port() -> Option<String> {
    let mut pid = std::os::unix::process::parent_id();
    for _ in 0..4 {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let mut args = cmdline.split(|&b| b == 0).map(String::from_utf8_lossy);
        if args.next()?.ends_with("hydra_pmi_proxy") {
            return args
                .skip_while(|a| a != "--control-port")
                .nth(1)
                .map(|p| p.into_owned());
        }
        pid = parent_of(pid).filter(|&p| p > 1)?;
    }
    None
}

/// The parent of process `pid` (from `/proc`).
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 4)
}

/// Field `n` (from 1, as `proc(5)` numbers them; n ≥ 3) of `/proc/<pid>/stat`,
/// counted after the ")" that ends the command, which may hold spaces.
fn stat_field<T: std::str::FromStr>(pid: u32, n: usize) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

/// The default trace directory name of `program` for a rank of an MPI job,
/// the same in every rank (module documentation): the name the first rank
/// to get here derived from its parent's start time, agreed through a
/// symbolic link `dir/.hyscope-jobs/<job key>` → name, which only one rank
/// can create. Without a job key, or where the link cannot be made (a
/// directory that cannot be written: the trace cannot be either), the name
/// from this rank's parent's start time, as every rank of one node derives
/// it alike.
pub fn job_dir_name(dir: &Path, program: &str) -> String {
    let own = default_dir_name(program, parent_start_unix_secs().unwrap_or_else(unix_secs));
    let Some(key) = job_key() else {
        return own;
    };
    let jobs = dir.join(JOBS_DIR);
    let _ = std::fs::create_dir(&jobs);
    let link = jobs.join(&key);
    match std::os::unix::fs::symlink(&own, &link) {
        Ok(()) => {
            remove_stale_links(&jobs);
            own
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if age_secs(&link).is_some_and(|age| age > START_WINDOW_SECS) {
                // An earlier job's (its key came back): replaced, atomically.
                let tmp = jobs.join(format!(".{key}.{}", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                if std::os::unix::fs::symlink(&own, &tmp).is_ok()
                    && std::fs::rename(&tmp, &link).is_ok()
                {
                    return own;
                }
                let _ = std::fs::remove_file(&tmp);
            }
            std::fs::read_link(&link)
                .ok()
                .and_then(|t| t.to_str().map(str::to_string))
                .filter(|t| !t.is_empty() && !t.contains('/'))
                .unwrap_or(own)
        }
        Err(_) => own,
    }
}

/// Seconds since `path` (not followed) was made.
fn age_secs(path: &Path) -> Option<u64> {
    let made = path.symlink_metadata().and_then(|m| m.modified()).ok()?;
    Some(
        std::time::SystemTime::now()
            .duration_since(made)
            .ok()?
            .as_secs(),
    )
}

/// Remove the links of jobs older than [`STALE_SECS`] (a job key may come
/// back: an Open MPI launcher's port and job family, months later).
fn remove_stale_links(jobs: &Path) {
    let Ok(entries) = std::fs::read_dir(jobs) else {
        return;
    };
    for e in entries.flatten() {
        if age_secs(&e.path()).is_some_and(|age| age > STALE_SECS) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_fields_read_back() {
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        // The parent started before this process, after the epoch.
        let started = parent_start_unix_secs().expect("the parent's start time");
        assert!(started > 0 && started <= unix_secs(), "{started}");
        assert_eq!(stat_field::<u32>(std::process::id(), 2), None);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        // 2026-11-22T06:43:07Z
        assert_eq!(civil(1_795_329_787), (2026, 11, 22, 6, 43, 7));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil(-1), (1969, 12, 31, 23, 59, 59));
    }

    #[test]
    fn names() {
        assert_eq!(default_dir_name("a", 0), "hyscope-a-19700101-000000");
        // 2026-11-22 10:12:05 UTC
        assert_eq!(
            default_dir_name("stencil", 1_795_342_325),
            "hyscope-stencil-20261122-101205"
        );
    }

    #[test]
    fn the_parent_started_before_now() {
        let t = parent_start_unix_secs().expect("/proc is readable");
        assert!(t <= unix_secs() && t > 1_000_000_000, "{t}");
    }
}

//! One TSC calibration per node (and user), shared by the ranks an MPI
//! launcher starts there while it is fresh.
//!
//! A process calibrating alone gets a rate that is off by a few parts per
//! million (two ~15 ns-wide samples 5 ms apart), so two ranks of one node
//! drift apart by microseconds per second of run: enough to turn a late
//! sender into a late receiver, and what made `mpich_ring_4_ranks` fail now
//! and then (offsets at MPI_Finalize beyond their round-trip bound). With one
//! calibration, every rank of the node turns the same ticks into the same
//! nanoseconds.
//!
//! The file `/dev/shm/hyscope-tsc-<uid>-<job>` holds `boot_id tsc0 ns0
//! mult`. `<job>` is what the ranks of one job on a node have in common:
//! `HYSCOPE_CLOCK_GROUP` (set by `hyscope record` when it runs as one rank),
//! else the PMIx namespace (Open MPI, `srun --mpi=pmix`), else the parent
//! process (`mpirun`, `hydra_pmi_proxy`, `slurmstepd`). Another job gets its
//! own file, so a calibration about to expire is never used by some ranks of
//! a job and replaced by others. A process takes an exclusive `flock` on it
//! and uses what it holds if it is from this boot and still within
//! [`FRESH_NS`] of CLOCK_MONOTONIC (a reused parent pid finds an old one
//! stale); otherwise it calibrates, rewrites it and removes this user's
//! calibration files older than a minute. The lock makes ranks that start
//! together wait for the first one's calibration instead of each making its
//! own. Whatever fails (no `/dev/shm`, someone else's file, garbage) falls
//! back to calibrating alone, silently: the clock works either way.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::Calibration;

/// How far a shared calibration may be from CLOCK_MONOTONIC to be used:
/// 50 µs, reached after ~10 s at a typical rate error of 5 ppm.
const FRESH_NS: i64 = 50_000;

/// The node's calibration (shared: true), or what `measure` gives, written
/// for the others when it is a calibration (`None`: this process does not
/// use the TSC, and neither need the others). `measure` runs at most once.
pub(super) fn calibration(
    measure: impl FnOnce() -> Option<Calibration>,
) -> (Option<Calibration>, bool) {
    calibration_at(&path(), measure)
}

/// This user's calibration files start with this.
fn prefix() -> String {
    // SAFETY: getuid has no preconditions.
    format!("hyscope-tsc-{}-", unsafe { libc::getuid() })
}

fn path() -> PathBuf {
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("{}{}", prefix(), job_key()))
}

/// What the ranks of one job on this node share (see the module documentation),
/// reduced to characters safe in a file name.
fn job_key() -> String {
    let named = [
        crate::settings::settings().clock_group.clone(),
        std::env::var("PMIX_NAMESPACE").ok(),
    ]
    .into_iter()
    .flatten()
    .map(|v| {
        v.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .take(64)
            .collect::<String>()
    })
    .find(|v| !v.is_empty());
    // SAFETY: getppid has no preconditions.
    named.unwrap_or_else(|| format!("ppid{}", unsafe { libc::getppid() }))
}

/// Remove this user's calibration files in `dir` not written for a minute
/// (one per job would otherwise pile up), except `keep`.
fn remove_old(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = prefix();
    let old = |e: &std::fs::DirEntry| {
        e.metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 60))
    };
    for e in entries.flatten() {
        let ours = e.file_name().to_string_lossy().starts_with(&prefix);
        if ours && e.path() != keep && old(&e) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

pub(super) fn calibration_at(
    path: &Path,
    measure: impl FnOnce() -> Option<Calibration>,
) -> (Option<Calibration>, bool) {
    let Some(mut file) = open_own(path) else {
        return (measure(), false);
    };
    // SAFETY: a valid descriptor; the lock goes with the file when it closes.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return (measure(), false);
    }
    let boot = boot_id();
    let mut text = String::new();
    if file.read_to_string(&mut text).is_ok()
        && let Some(cal) = parse(&text, &boot)
        && cal.error_now() < FRESH_NS
    {
        return (Some(cal), true);
    }
    let Some(cal) = measure() else {
        return (None, false);
    };
    let line = format!("{boot} {} {} {}\n", cal.tsc0, cal.ns0, cal.mult);
    // Measured here either way: a failed write only means the next process
    // calibrates on its own too.
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(line.as_bytes()));
    if let Some(dir) = path.parent() {
        remove_old(dir, path);
    }
    (Some(cal), false)
}

/// The file, created if missing (mode 0600), only if it is a regular file of ours.
fn open_own(path: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    // SAFETY: getuid has no preconditions.
    let mine = meta.uid() == unsafe { libc::getuid() };
    (mine && meta.is_file()).then_some(file)
}

pub(super) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `boot_id tsc0 ns0 mult` of this boot.
fn parse(text: &str, boot: &str) -> Option<Calibration> {
    let mut it = text.split_whitespace();
    if it.next()? != boot {
        return None;
    }
    let cal = Calibration {
        tsc0: it.next()?.parse().ok()?,
        ns0: it.next()?.parse().ok()?,
        mult: it.next()?.parse().ok()?,
    };
    (cal.mult > 0).then_some(cal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Calibration {
        Calibration::measure().expect("the TSC advances")
    }

    #[test]
    fn the_first_process_calibrates_and_the_next_one_shares_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tsc");
        let first = measured();
        assert_eq!(calibration_at(&path, || Some(first)), (Some(first), false));
        // The next process finds it fresh and must not measure.
        let next = calibration_at(&path, || panic!("measured again"));
        assert_eq!(next, (Some(first), true));
    }

    #[test]
    fn a_stale_or_foreign_calibration_is_measured_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tsc");
        let now = measured();
        // 1 % off: far from CLOCK_MONOTONIC at once.
        let stale = Calibration {
            mult: now.mult + now.mult / 100,
            ..now
        };
        let boot = boot_id();
        for text in [
            format!("{boot} {} {} {}\n", stale.tsc0, stale.ns0, stale.mult),
            format!("another-boot {} {} {}\n", now.tsc0, now.ns0, now.mult),
            "garbage\n".to_string(),
            format!("{boot} {} {} 0\n", now.tsc0, now.ns0),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(calibration_at(&path, || Some(now)), (Some(now), false));
            let line = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                line,
                format!("{boot} {} {} {}\n", now.tsc0, now.ns0, now.mult)
            );
        }
    }

    #[test]
    fn a_process_that_does_not_use_the_tsc_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tsc");
        assert_eq!(calibration_at(&path, || None), (None, false));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        let cal = measured();
        assert_eq!(calibration_at(&path, || Some(cal)), (Some(cal), false));
    }

    #[test]
    fn a_new_calibration_removes_this_users_old_files() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(format!("{}1", prefix()));
        let recent = dir.path().join(format!("{}2", prefix()));
        let other = dir.path().join("hyscope-tsc-of-someone-else");
        for p in [&old, &recent, &other] {
            std::fs::write(p, "x").unwrap();
        }
        let two_minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
        for p in [&old, &other] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(two_minutes_ago)
                .unwrap();
        }
        let path = dir.path().join(format!("{}3", prefix()));
        calibration_at(&path, || Some(measured()));
        assert!(!old.exists());
        assert!(recent.exists() && other.exists() && path.exists());
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        let link = dir.path().join("tsc");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let alone = measured();
        assert_eq!(calibration_at(&link, || Some(alone)), (Some(alone), false));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}

//! The default name of a trace directory, `hyscope-<program>-<YYYYMMDD-HHMMSS>`
//! (UTC): `hyscope record` names it so, and so does the collector when a job
//! runs it without the launcher, so that both name a job's trace alike. Ranks
//! started by an MPI launcher take the time from their parent (the launcher's
//! daemon), so that the ranks of one node agree on the name.

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
    let ppid = std::os::unix::process::parent_id();
    let stat = std::fs::read_to_string(format!("/proc/{ppid}/stat")).ok()?;
    // Field 22 (starttime, clock ticks since boot), counted after the ")" of the command.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: i64 = rest.split_whitespace().nth(19)?.parse().ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Process memory from `/proc/self/status` and `/proc/self/maps`.
//!
//! Pure parsers (tested on fixture text) plus the `memory` sampler.

use super::{Emit, MetricDef, Probe, Sampler};

pub use hyscope_format::proc_status::{VmStatus, parse_status};

/// Bytes mapped from MPI shared-memory segments, per `/proc/<pid>/maps`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShmMaps {
    /// Every mapping of a file under `/dev/shm` (Open MPI vader/sm, MPICH, PMIx).
    pub dev_shm_bytes: u64,
    /// Of those, Open MPI's vader (shared-memory BTL) segments.
    pub vader_bytes: u64,
    /// Shared mappings of the launcher's session files elsewhere (PMIx data
    /// stores under Open MPI's `/tmp/ompi.<host>.<uid>/` session directory).
    pub session_bytes: u64,
    /// Number of distinct files counted in either of the above.
    pub files: u64,
}

/// A shared mapping of an MPI runtime's session file outside `/dev/shm`.
fn is_session_file(path: &str, perms: &str) -> bool {
    perms.ends_with('s') && (path.contains("/ompi.") || path.contains("pmix_dstor"))
}

/// Sum the sizes of MPI shared-memory mappings in a `/proc/<pid>/maps` text.
/// Line format (proc(5)): `start-end perms offset dev inode pathname`.
pub fn parse_maps(text: &str) -> ShmMaps {
    let mut out = ShmMaps::default();
    let mut seen: Vec<&str> = Vec::new();
    for line in text.lines() {
        let mut f = line.splitn(6, char::is_whitespace);
        let (Some(range), Some(perms), Some(_off), Some(_dev), Some(_inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let path = f.next().unwrap_or("").trim();
        let dev_shm = path.starts_with("/dev/shm/");
        if !dev_shm && !is_session_file(path, perms) {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let len = b.saturating_sub(a);
        let name = path.trim_end_matches(" (deleted)");
        if dev_shm {
            out.dev_shm_bytes += len;
            if name.contains("vader_segment") {
                out.vader_bytes += len;
            }
        } else {
            out.session_bytes += len;
        }
        if !seen.contains(&name) {
            seen.push(name);
            out.files += 1;
        }
    }
    out
}

/// Current VmRSS of this process in bytes (None if /proc is unreadable).
pub fn current_rss() -> Option<u64> {
    parse_status(&std::fs::read_to_string("/proc/self/status").ok()?).rss
}

/// `/proc/self/maps` is read every this many ticks.
pub const MAPS_EVERY: u32 = 10;

/// The `memory` sampler: VmRSS, VmHWM, VmPin and the `/dev/shm` mappings.
pub struct Memory {
    proc_dir: String,
    /// Ticks since `/proc/self/maps` was last read.
    ticks: u32,
}

impl Default for Memory {
    fn default() -> Memory {
        Memory::new()
    }
}

impl Memory {
    pub fn new() -> Memory {
        Memory {
            proc_dir: "/proc/self".into(),
            ticks: 0,
        }
    }

    /// Read another `/proc/<pid>` directory (or a fixture copy of one).
    pub fn with_proc_dir(dir: &str) -> Memory {
        Memory {
            proc_dir: dir.into(),
            ticks: 0,
        }
    }
}

impl Sampler for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn probe(&mut self) -> Probe {
        match std::fs::read_to_string(format!("{}/status", self.proc_dir)) {
            Ok(t) if parse_status(&t).rss.is_some() => Probe::Available(format!(
                "{0}/status (VmRSS, VmHWM, VmPin), {0}/maps (/dev/shm)",
                self.proc_dir
            )),
            Ok(_) => Probe::Unavailable(format!("{}/status has no VmRSS line", self.proc_dir)),
            Err(e) => Probe::Unavailable(format!("cannot read {}/status: {e}", self.proc_dir)),
        }
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            MetricDef::new("mem.vmrss", "bytes", "resident set size (VmRSS)"),
            MetricDef::new("mem.vmhwm", "bytes", "peak resident set size (VmHWM)"),
            MetricDef::new(
                "mem.vmpin",
                "bytes",
                "pinned memory (VmPin), e.g. registered RDMA buffers",
            ),
            MetricDef::new(
                "mem.shm_mapped",
                "bytes",
                "bytes mapped from /dev/shm files (MPI shared-memory segments)",
            ),
            MetricDef::new(
                "mem.shm_vader",
                "bytes",
                "bytes mapped from Open MPI vader segments",
            ),
            MetricDef::new(
                "mem.shm_session",
                "bytes",
                "bytes of shared mappings of the MPI launcher's session files (PMIx data stores)",
            ),
        ]
    }

    fn full_sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        self.ticks = 0;
        self.sample(now_ns, emit);
    }

    fn sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        if let Ok(t) = std::fs::read_to_string(format!("{}/status", self.proc_dir)) {
            let s = parse_status(&t);
            for (m, v) in [
                ("mem.vmrss", s.rss),
                ("mem.vmhwm", s.hwm),
                ("mem.vmpin", s.pin),
            ] {
                if let Some(v) = v {
                    emit(now_ns, m, -1, v as f64);
                }
            }
        }
        // The maps file of an MPI process has thousands of lines and its shared
        // segments change only at init and communicator creation: read it every
        // MAPS_EVERY ticks (and at the first), the status file every tick.
        let read_maps = self.ticks.is_multiple_of(MAPS_EVERY);
        self.ticks = self.ticks.wrapping_add(1);
        if !read_maps {
            return;
        }
        if let Ok(t) = std::fs::read_to_string(format!("{}/maps", self.proc_dir)) {
            let m = parse_maps(&t);
            emit(now_ns, "mem.shm_mapped", -1, m.dev_shm_bytes as f64);
            emit(now_ns, "mem.shm_vader", -1, m.vader_bytes as f64);
            emit(now_ns, "mem.shm_session", -1, m.session_bytes as f64);
        }
    }
}

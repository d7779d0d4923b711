//! RDMA resources of this process: queue pairs, completion queues, memory
//! regions, from the RDMA netlink resource dump as printed by iproute2's
//! `rdma -j res show qp|cq|mr` (one JSON object per resource, with `pid`).
//!
//! Per-process QPs are the endpoint cost of Didelot 2014 (§2.2.2, §3.1.1: RC needs
//! one QP per connected peer, so QPs grow as O(n²) per job).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Emit, MetricDef, Probe, Sampler};

/// Resources of one process counted from the dumps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResCount {
    pub qps: u64,
    /// QPs by transport type (`RC`, `UD`, `XRC_INI`, ...).
    pub qps_by_type: BTreeMap<String, u64>,
    /// RC QPs in state RTS: connected endpoints.
    pub rc_rts: u64,
    pub cqs: u64,
    /// Sum of `cqe` (completion queue entries) of its CQs.
    pub cqes: u64,
    pub mrs: u64,
    /// Sum of `mrlen` (registered bytes) of its MRs, when the dump shows it (`-d`).
    pub mr_bytes: u64,
}

/// Every resource object in a `rdma -j` dump. iproute2 prints a JSON array of
/// objects; some versions nest one array per resource, so nested arrays are
/// flattened.
fn objects(json: &str) -> Result<Vec<serde_json::Map<String, Value>>, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.into_iter().rev()),
            Value::Object(o) => out.push(o),
            _ => return Err("expected an array of objects".into()),
        }
    }
    Ok(out)
}

fn u64_field(o: &serde_json::Map<String, Value>, k: &str) -> Option<u64> {
    o.get(k)?.as_u64()
}

/// Objects of the dump that belong to `pid` (kernel resources have no `pid`).
fn of_pid(json: &str, pid: u32) -> Result<Vec<serde_json::Map<String, Value>>, String> {
    Ok(objects(json)?
        .into_iter()
        .filter(|o| u64_field(o, "pid") == Some(u64::from(pid)))
        .collect())
}

/// Count the QPs of `pid` in a `rdma -j res show qp` dump.
pub fn count_qps(json: &str, pid: u32, into: &mut ResCount) -> Result<(), String> {
    for o in of_pid(json, pid)? {
        into.qps += 1;
        let ty = o
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if ty == "RC" && o.get("state").and_then(Value::as_str) == Some("RTS") {
            into.rc_rts += 1;
        }
        *into.qps_by_type.entry(ty).or_default() += 1;
    }
    Ok(())
}

/// Count the CQs of `pid` in a `rdma -j res show cq` dump.
pub fn count_cqs(json: &str, pid: u32, into: &mut ResCount) -> Result<(), String> {
    for o in of_pid(json, pid)? {
        into.cqs += 1;
        into.cqes += u64_field(&o, "cqe").unwrap_or(0);
    }
    Ok(())
}

/// Count the MRs of `pid` in a `rdma -j res show mr` dump.
pub fn count_mrs(json: &str, pid: u32, into: &mut ResCount) -> Result<(), String> {
    for o in of_pid(json, pid)? {
        into.mrs += 1;
        into.mr_bytes += u64_field(&o, "mrlen").unwrap_or(0);
    }
    Ok(())
}

/// RDMA devices under `<sysfs>/class/infiniband`.
pub fn devices(sysfs: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sysfs.join("class/infiniband"))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The `rdma` sampler: runs `rdma -j -d res show qp|cq|mr` (iproute2) at most
/// every [`Rdma::PERIOD`], since each run is a process spawn.
pub struct Rdma {
    sysfs: PathBuf,
    tool: Option<PathBuf>,
    pid: u32,
    last: Option<Instant>,
}

impl Rdma {
    /// Resource dumps cost a process spawn and a netlink walk over every QP of the node.
    pub const PERIOD: Duration = Duration::from_secs(5);

    pub fn new(sysfs: PathBuf) -> Rdma {
        Rdma {
            sysfs,
            tool: None,
            pid: std::process::id(),
            last: None,
        }
    }

    /// The longest one `rdma` call may take. The probe runs in the
    /// application's start-up and the last sample in its exit path: a tool
    /// that hangs (a wedged RDMA netlink) must not hang the application.
    pub const TOOL_TIMEOUT: Duration = Duration::from_secs(2);

    /// `rdma -j -d res show <what> pid <pid>`: its output, or why there is none.
    fn dump(&self, what: &str) -> Result<String, DumpError> {
        let tool = self.tool.as_ref().ok_or(DumpError::Failed)?;
        let mut command = std::process::Command::new(tool);
        command
            .args([
                "-j",
                "-d",
                "res",
                "show",
                what,
                "pid",
                &self.pid.to_string(),
            ])
            // Not recorded: with the collector preloaded the tool would start
            // a sampler of its own, which would run the tool, and so on.
            .env_remove("LD_PRELOAD")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        // The probe runs under the samplers' lock, in the application's
        // start-up: should the spawn fork, it must not wait for that lock.
        let mut child =
            crate::diag::as_collector_thread(|| command.spawn()).map_err(|_| DumpError::Failed)?;
        // Its output is read to the end beside the wait: a dump larger than
        // the pipe would otherwise stall the tool.
        let mut stdout = child.stdout.take().ok_or(DumpError::Failed)?;
        let (done, output) = std::sync::mpsc::channel();
        let reader = crate::threads::spawn("hyscope-rdma", move || {
            let mut bytes = Vec::new();
            let read = std::io::Read::read_to_end(&mut stdout, &mut bytes);
            let _ = done.send(read.map(|_| bytes));
        });
        let deadline = Instant::now() + Self::TOOL_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if reader.is_ok() && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                // Past the deadline (or nothing reads its output):
                // Child::kill, which never reaches another process, even if
                // the tool just ended.
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(DumpError::TimedOut);
                }
                Err(_) => return Err(DumpError::Failed),
            }
        };
        // The output ends with the tool (unless something it started keeps
        // the pipe open: the same bound).
        let remaining = deadline.saturating_duration_since(Instant::now());
        match output.recv_timeout(remaining.max(Duration::from_millis(100))) {
            Ok(Ok(bytes)) if status.success() => Ok(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(_) => Err(DumpError::Failed),
            Err(_) => Err(DumpError::TimedOut),
        }
    }
}

/// Why a dump gave nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DumpError {
    /// The tool failed (or could not be started).
    Failed,
    /// The tool did not answer within [`Rdma::TOOL_TIMEOUT`] (it was killed).
    TimedOut,
}

fn find_tool() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/sbin".into(), "/usr/sbin".into()])
        .map(|d| d.join("rdma"))
        .find(|p| p.is_file())
}

impl Sampler for Rdma {
    fn name(&self) -> &'static str {
        "rdma"
    }

    fn probe(&mut self) -> Probe {
        let devs = devices(&self.sysfs);
        if devs.is_empty() {
            return Probe::Unavailable(format!(
                "no RDMA device ({} absent or empty); QPs are estimated from connections",
                self.sysfs.join("class/infiniband").display()
            ));
        }
        self.tool = find_tool();
        let Some(tool) = &self.tool else {
            return Probe::Unavailable(format!(
                "RDMA devices {} present but the `rdma` tool (iproute2) is not installed",
                devs.join(",")
            ));
        };
        match self.dump("qp") {
            Ok(_) => Probe::Available(format!(
                "{} -j res show qp/cq/mr pid {} every {} s on {}",
                tool.display(),
                self.pid,
                Self::PERIOD.as_secs(),
                devs.join(",")
            )),
            Err(DumpError::Failed) => Probe::Unavailable(format!(
                "`{} res show qp` failed (RDMA netlink unavailable or not permitted)",
                tool.display()
            )),
            Err(DumpError::TimedOut) => Probe::Unavailable(format!(
                "`{} res show qp` did not answer within {} s (killed)",
                tool.display(),
                Self::TOOL_TIMEOUT.as_secs()
            )),
        }
    }

    fn metrics(&self) -> Vec<MetricDef> {
        vec![
            MetricDef::new(
                "rdma.qps",
                "count",
                "queue pairs of this process (RDMA netlink)",
            ),
            MetricDef::new("rdma.rc_connected", "count", "RC queue pairs in state RTS"),
            MetricDef::new("rdma.cqs", "count", "completion queues of this process"),
            MetricDef::new("rdma.cqes", "count", "completion queue entries of its CQs"),
            MetricDef::new("rdma.mrs", "count", "memory regions of this process"),
            MetricDef::new(
                "rdma.mr_bytes",
                "bytes",
                "bytes registered in its memory regions",
            ),
        ]
    }

    fn sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        if self.last.is_some_and(|t| t.elapsed() < Self::PERIOD) {
            return;
        }
        self.last = Some(Instant::now());
        let mut c = ResCount::default();
        let ok = [
            (
                "qp",
                count_qps as fn(&str, u32, &mut ResCount) -> Result<(), String>,
            ),
            ("cq", count_cqs),
            ("mr", count_mrs),
        ]
        .iter()
        .all(|(what, f)| match self.dump(what) {
            Ok(j) => f(&j, self.pid, &mut c).is_ok(),
            Err(DumpError::Failed) => false,
            Err(DumpError::TimedOut) => {
                crate::diag::warn(&format!(
                    "`rdma res show {what}` did not answer within {} s; RDMA sampling stops",
                    Self::TOOL_TIMEOUT.as_secs()
                ));
                self.tool = None;
                false
            }
        });
        if !ok {
            return;
        }
        for (m, v) in [
            ("rdma.qps", c.qps),
            ("rdma.rc_connected", c.rc_rts),
            ("rdma.cqs", c.cqs),
            ("rdma.cqes", c.cqes),
            ("rdma.mrs", c.mrs),
            ("rdma.mr_bytes", c.mr_bytes),
        ] {
            emit(now_ns, m, -1, v as f64);
        }
    }
}

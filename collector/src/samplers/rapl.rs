//! RAPL energy: the perf `power` PMU (through perf-event2's dynamic PMU
//! events), falling back to powercap sysfs.
//!
//! RAPL is per package, so one process per node reads it (see
//! `samplers::on_mpi_init_end` for the election). Energy is written as joules
//! accumulated since this reader started (`energy.pkg`, `energy.ram`, ...,
//! key = package index), so a wrap of the hardware counter never shows.
//! Counters that read zero are reported unavailable, never as 0 J
//! (Carretero 2015 §4: energy is measured
//! per package and aggregated, and modelled values must not pass as measured).

use std::path::{Path, PathBuf};
use std::time::Duration;

use perf_event::Builder;
use perf_event::events::Dynamic;

use super::{Emit, MetricDef, Probe, Sampler};

/// The sysfs root: `HYSCOPE_SYSFS_ROOT` (tests point it at fixture trees), else `/sys`.
pub fn sysfs_root() -> PathBuf {
    crate::settings::settings()
        .sysfs_root
        .clone()
        .unwrap_or_else(|| PathBuf::from("/sys"))
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Metric name of a RAPL domain (perf event `energy-X` or powercap zone name).
pub fn domain_metric(domain: &str) -> Option<&'static str> {
    Some(match domain {
        "pkg" | "package" => "energy.pkg",
        "cores" | "core" => "energy.cores",
        "ram" | "dram" => "energy.ram",
        "gpu" | "uncore" => "energy.gpu",
        "psys" => "energy.psys",
        _ => return None,
    })
}

/// Parse a sysfs CPU list (`0`, `0,18`, `0-3,8`).
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b.min(a.saturating_add(4096)));
                }
            }
            None => {
                if let Ok(c) = part.trim().parse() {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// How raw counts become joules. Division by 1e6 (powercap µJ) and
/// multiplication by a power of two (PMU scale 2^-32) are both exact in f64
/// for the integer counts seen here, so fixture energies compare exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Mul(f64),
    Div(f64),
}

impl Scale {
    pub fn joules(self, raw: u128) -> f64 {
        match self {
            Scale::Mul(m) => raw as f64 * m,
            Scale::Div(d) => raw as f64 / d,
        }
    }
}

/// Accumulates a raw counter across reads, undoing wraparound.
#[derive(Debug, Clone, PartialEq)]
pub struct Accumulator {
    last: u64,
    total: u128,
    /// The value at which the counter wraps to 0 (powercap `max_energy_range_uj`);
    /// None for perf counters, which the kernel already keeps as 64-bit totals.
    wrap: Option<u64>,
}

impl Accumulator {
    pub fn new(first: u64, wrap: Option<u64>) -> Accumulator {
        Accumulator {
            last: first,
            total: 0,
            wrap,
        }
    }

    /// Add a new raw reading; returns the total raw count since the first one.
    /// A decrease is a wrap at `max_energy_range_uj` (delta = max - last + now, the
    /// convention of the kernel's powercap documentation and of PAPI/likwid).
    pub fn update(&mut self, now: u64) -> u128 {
        let delta = if now >= self.last {
            now - self.last
        } else {
            match self.wrap {
                Some(max) if self.last <= max => max - self.last + now,
                // A perf counter never decreases; a reset: count from here.
                _ => 0,
            }
        };
        self.total += u128::from(delta);
        self.last = now;
        self.total
    }

    pub fn total(&self) -> u128 {
        self.total
    }
}

/// One event of the `power` PMU as sysfs describes it.
#[derive(Debug, Clone)]
pub struct PmuEvent {
    /// `energy-pkg`, ...
    pub name: String,
    pub metric: &'static str,
    pub event: Dynamic,
    /// Joules per count (from `<event>.scale`).
    pub scale: f64,
    /// From `<event>.unit` (`Joules`).
    pub unit: String,
}

/// The `power` PMU: its events and one CPU per package to open them on.
#[derive(Debug, Clone)]
pub struct PmuDesc {
    pub dir: PathBuf,
    /// (cpu, package index) from `cpumask` and the CPU topology.
    pub cpus: Vec<(u32, i64)>,
    pub events: Vec<PmuEvent>,
    /// Events that could not be described, with why.
    pub skipped: Vec<String>,
}

/// Read `<root>/bus/event_source/devices/power` with perf-event2's dynamic
/// PMU builder (type, format, events, scale and unit files).
pub fn describe_pmu(root: &Path) -> Result<PmuDesc, String> {
    let dir = root.join("bus/event_source/devices/power");
    if !dir.is_dir() {
        return Err(format!("no perf power PMU ({} absent)", dir.display()));
    }
    let cpumask = read_trim(&dir.join("cpumask")).unwrap_or_else(|| "0".into());
    let cpus: Vec<(u32, i64)> = parse_cpu_list(&cpumask)
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let pkg = read_trim(&root.join(format!(
                "devices/system/cpu/cpu{c}/topology/physical_package_id"
            )))
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(i as i64);
            (c, pkg)
        })
        .collect();
    let mut names: Vec<String> = std::fs::read_dir(dir.join("events"))
        .map_err(|e| format!("cannot list {}/events: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("energy-") && !n.contains('.'))
        .collect();
    names.sort();
    let mut events = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let Some(metric) = domain_metric(&name["energy-".len()..]) else {
            skipped.push(format!("{name}: unknown domain"));
            continue;
        };
        let described = (|| -> std::io::Result<(Dynamic, Option<f64>, Option<String>)> {
            let mut b = Dynamic::builder(&dir)?;
            b.event(&name)?;
            let scale = b.scale()?;
            let unit = b.unit()?;
            Ok((b.build()?, scale, unit))
        })();
        match described {
            Ok((event, Some(scale), unit)) if scale > 0.0 && scale.is_finite() => {
                let unit = unit.unwrap_or_default();
                if unit != "Joules" {
                    skipped.push(format!("{name}: unit `{unit}`, not Joules"));
                    continue;
                }
                events.push(PmuEvent {
                    name,
                    metric,
                    event,
                    scale,
                    unit,
                });
            }
            Ok(_) => skipped.push(format!("{name}: no valid scale file")),
            Err(e) => skipped.push(format!("{name}: {e}")),
        }
    }
    Ok(PmuDesc {
        dir,
        cpus,
        events,
        skipped,
    })
}

/// A powercap zone (`intel-rapl:0`, `intel-rapl:0:0`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct PowercapZone {
    pub dir: PathBuf,
    pub metric: &'static str,
    pub package: i64,
    pub max_energy_range_uj: u64,
}

/// Find the powercap zones under `<root>/class/powercap` whose name is a
/// known RAPL domain. Subzones inherit the package of their parent.
pub fn describe_powercap(root: &Path) -> Result<Vec<PowercapZone>, String> {
    let base = root.join("class/powercap");
    let entries =
        std::fs::read_dir(&base).map_err(|_| format!("no powercap ({} absent)", base.display()))?;
    let mut dirs: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("intel-rapl:"))
        .collect();
    dirs.sort();
    let mut zones = Vec::new();
    for d in dirs {
        let dir = base.join(&d);
        let Some(name) = read_trim(&dir.join("name")) else {
            continue;
        };
        let parts: Vec<&str> = d["intel-rapl:".len()..].split(':').collect();
        // Top-level zone `package-N` names its package; subzones take the parent's.
        let (domain, package) = if let Some(n) = name.strip_prefix("package-") {
            ("package", n.parse::<i64>().unwrap_or(-1))
        } else if parts.len() >= 2 {
            let parent = base.join(format!("intel-rapl:{}", parts[0]));
            let pkg = read_trim(&parent.join("name"))
                .and_then(|p| p.strip_prefix("package-")?.parse::<i64>().ok())
                .unwrap_or(-1);
            (name.as_str(), pkg)
        } else {
            (name.as_str(), 0)
        };
        let Some(metric) = domain_metric(domain) else {
            continue;
        };
        let Some(max) = read_trim(&dir.join("max_energy_range_uj")).and_then(|s| s.parse().ok())
        else {
            continue;
        };
        zones.push(PowercapZone {
            dir,
            metric,
            package,
            max_energy_range_uj: max,
        });
    }
    if zones.is_empty() {
        return Err(format!("no RAPL zone under {}", base.display()));
    }
    Ok(zones)
}

enum Source {
    Perf(perf_event::Counter),
    File(PathBuf),
}

impl Source {
    fn read(&mut self) -> Option<u64> {
        self.try_read().ok()
    }

    /// Read, saying why not (e.g. `energy_uj` is root-only since Linux 5.10).
    fn try_read(&mut self) -> Result<u64, String> {
        match self {
            Source::Perf(c) => c.read().map_err(|e| e.to_string()),
            Source::File(p) => {
                let t = std::fs::read_to_string(&*p).map_err(|e| e.to_string())?;
                t.trim()
                    .parse()
                    .map_err(|_| format!("not a number: `{}`", t.trim()))
            }
        }
    }
}

/// One open counter (a domain of a package).
struct Counter {
    metric: &'static str,
    key: i64,
    label: String,
    source: Source,
    scale: Scale,
    acc: Accumulator,
}

/// The `rapl` sampler.
pub struct Rapl {
    root: PathBuf,
    counters: Vec<Counter>,
    /// Whether this process writes samples (the node leader) — undecided
    /// processes read (to follow wraps) but write nothing.
    pub(crate) writes: bool,
    pub(crate) reader_ranks: Vec<u32>,
    /// How long to wait before re-reading a counter that read 0 at probe.
    settle: Duration,
}

impl Rapl {
    pub fn new(root: PathBuf, writes: bool) -> Rapl {
        Rapl {
            root,
            counters: Vec::new(),
            writes,
            reader_ranks: Vec::new(),
            // RAPL registers update about every millisecond.
            settle: Duration::from_millis(5),
        }
    }

    fn open_pmu(&mut self, notes: &mut Vec<String>) -> Result<String, String> {
        let desc = describe_pmu(&self.root)?;
        notes.extend(desc.skipped.iter().cloned());
        if desc.events.is_empty() {
            return Err(format!(
                "perf power PMU has no energy events ({})",
                desc.skipped.join("; ")
            ));
        }
        for ev in &desc.events {
            for &(cpu, pkg) in &desc.cpus {
                // RAPL events are system-wide counters: any pid, one CPU per package,
                // and the PMU refuses any exclude_* flag.
                let built = Builder::new(ev.event)
                    .any_pid()
                    .one_cpu(cpu as usize)
                    .include_kernel()
                    .include_hv()
                    .build();
                let mut c = match built {
                    Ok(c) => c,
                    Err(e) => {
                        notes.push(format!(
                            "{} on cpu {cpu}: perf_event_open failed: {e}",
                            ev.name
                        ));
                        continue;
                    }
                };
                if let Err(e) = c.enable() {
                    notes.push(format!("{} on cpu {cpu}: cannot enable: {e}", ev.name));
                    continue;
                }
                self.counters.push(Counter {
                    metric: ev.metric,
                    key: pkg,
                    label: format!("{} pkg {pkg}", ev.name),
                    source: Source::Perf(c),
                    scale: Scale::Mul(ev.scale),
                    acc: Accumulator::new(0, None),
                });
            }
        }
        Ok(format!("perf power PMU ({})", desc.dir.display()))
    }

    fn open_powercap(&mut self) -> Result<String, String> {
        let zones = describe_powercap(&self.root)?;
        for z in zones {
            self.counters.push(Counter {
                metric: z.metric,
                key: z.package,
                label: format!(
                    "{} ({})",
                    z.metric,
                    z.dir
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ),
                source: Source::File(z.dir.join("energy_uj")),
                scale: Scale::Div(1e6),
                acc: Accumulator::new(0, Some(z.max_energy_range_uj)),
            });
        }
        Ok(format!(
            "powercap sysfs ({})",
            self.root.join("class/powercap").display()
        ))
    }

    /// Take the first reading of every counter; drop those that cannot be read or read 0.
    fn first_reads(&mut self, notes: &mut Vec<String>) {
        let settle = self.settle;
        let mut keep = Vec::new();
        for mut c in std::mem::take(&mut self.counters) {
            let mut v = c.source.try_read();
            if v == Ok(0) {
                std::thread::sleep(settle);
                v = c.source.try_read();
            }
            match v {
                Err(e) => notes.push(format!("{}: unreadable ({e})", c.label)),
                Ok(0) => notes.push(format!("{}: reads 0", c.label)),
                Ok(v) => {
                    c.acc = Accumulator::new(v, c.acc.wrap);
                    keep.push(c);
                }
            }
        }
        self.counters = keep;
    }

    /// Joules since the first reading, per (metric, package), after a fresh read.
    pub fn read_all(&mut self) -> Vec<(&'static str, i64, f64)> {
        let mut out = Vec::with_capacity(self.counters.len());
        for c in &mut self.counters {
            if let Some(v) = c.source.read() {
                c.acc.update(v);
            }
            out.push((c.metric, c.key, c.scale.joules(c.acc.total())));
        }
        out
    }
}

impl Sampler for Rapl {
    fn name(&self) -> &'static str {
        "rapl"
    }

    fn probe(&mut self) -> Probe {
        self.counters.clear();
        let mut notes = Vec::new();
        let mut why = Vec::new();
        let mut what = None;
        match self.open_pmu(&mut notes) {
            Ok(w) => {
                self.first_reads(&mut notes);
                if self.counters.is_empty() {
                    why.push(format!("{w}: {}", notes.join("; ")));
                    notes.clear();
                } else {
                    what = Some(w);
                }
            }
            Err(e) => why.push(e),
        }
        if what.is_none() {
            match self.open_powercap() {
                Ok(w) => {
                    self.first_reads(&mut notes);
                    if self.counters.is_empty() {
                        why.push(format!("{w}: {}", notes.join("; ")));
                        notes.clear();
                    } else {
                        what = Some(w);
                    }
                }
                Err(e) => why.push(e),
            }
        }
        match what {
            Some(w) => {
                let mut s = format!(
                    "{w}: {}",
                    self.counters
                        .iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                if !notes.is_empty() {
                    s.push_str(&format!(" (not reported: {})", notes.join("; ")));
                }
                if !why.is_empty() {
                    s.push_str(&format!(" (not used: {})", why.join("; ")));
                }
                Probe::Available(s)
            }
            None => Probe::Unavailable(why.join("; ")),
        }
    }

    fn metrics(&self) -> Vec<MetricDef> {
        let mut m: Vec<MetricDef> = Vec::new();
        for c in &self.counters {
            if m.iter().any(|d| d.name == c.metric) {
                continue;
            }
            let what = match c.metric {
                "energy.pkg" => "package",
                "energy.cores" => "cores (PP0)",
                "energy.ram" => "DRAM",
                "energy.gpu" => "uncore/GPU (PP1)",
                _ => "platform (psys)",
            };
            m.push(MetricDef::new(
                c.metric,
                "J",
                &format!("RAPL energy of the {what} domain, cumulative since the reader started; key = package"),
            ));
        }
        m
    }

    fn sample(&mut self, now_ns: i64, emit: &mut Emit<'_>) {
        let values = self.read_all();
        if self.writes {
            for (metric, key, j) in values {
                emit(now_ns, metric, key, j);
            }
        }
    }

    fn ranks(&self) -> Option<Vec<u32>> {
        (!self.reader_ranks.is_empty()).then(|| self.reader_ranks.clone())
    }

    fn elect(&mut self, leader: bool, readers: &[u32]) {
        self.reader_ranks = readers.to_vec();
        self.writes = leader;
        if !leader {
            self.close();
        }
    }

    fn close(&mut self) {
        self.counters.clear();
    }
}

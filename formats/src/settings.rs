//! Every `HYSCOPE_*` variable, written once: its name, `hyscope record`'s
//! option for it, its default, its meaning and what a valid value is.
//!
//! The collector reads its configuration through [`Settings::from_env`],
//! `hyscope record` builds its options, their `--help` and the variables it
//! hands to the ranks from [`ALL`], and a test checks the README's table
//! against [`Setting::markdown_row`]. A value that is not valid is replaced
//! by the value named in the warning [`Setting::check`] returns, so a bad
//! variable never stops the application, and never passes silently.

use std::path::PathBuf;

use crate::schema::OmpKind;

/// What a valid value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Any non-empty text (a path, a name).
    Text,
    /// One of these words (case-insensitive).
    Choice(&'static [&'static str]),
    /// `on` or `off` (also `1`/`0`, `true`/`false`, `yes`/`no`).
    OnOff,
    /// A whole number from `min` to `max`.
    Number { min: u64, max: u64 },
    /// A comma-separated list of [`OMP_GROUPS`] names, or `all`.
    Groups,
}

/// `hyscope record`'s option for a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    pub long: &'static str,
    pub short: Option<char>,
    /// The value's name in `--help` and the README (choices are listed instead).
    pub value_name: &'static str,
}

/// Which program reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `libhyscope.so` in the recorded processes (`hyscope record` checks and forwards it).
    Collector,
    /// `hyscope record` itself.
    Record,
    /// `hyscope report`, `tui`, `gui`.
    Viewer,
}

/// One `HYSCOPE_*` variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub var: &'static str,
    pub option: Option<Opt>,
    /// The value used when the variable is unset, empty or not valid (None: no value).
    pub default: Option<&'static str>,
    /// The default as the README and `--help` describe it.
    pub default_doc: &'static str,
    /// What it does (Markdown: backticks for names).
    pub meaning: &'static str,
    pub kind: Kind,
    pub reader: Reader,
}

/// A value that is not valid: why, and the value used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// What is wrong, e.g. "is not one of trace, profile".
    pub reason: String,
    /// The value used instead (None: as if unset).
    pub used: Option<String>,
}

/// Event groups of `HYSCOPE_GROUPS` and the OpenMP kinds each one records.
pub const OMP_GROUPS: &[(&str, &[OmpKind])] = &[
    ("thread", &[OmpKind::Thread]),
    (
        "parallel",
        &[
            OmpKind::Parallel,
            OmpKind::ImplicitTask,
            OmpKind::InitialTask,
        ],
    ),
    ("work", &[OmpKind::Work]),
    ("chunk", &[OmpKind::Chunk]),
    ("sync", &[OmpKind::Sync, OmpKind::SyncWait]),
    (
        "mutex",
        &[
            OmpKind::MutexWait,
            OmpKind::MutexHold,
            OmpKind::LockLifetime,
        ],
    ),
    (
        "task",
        &[
            OmpKind::TaskCreate,
            OmpKind::TaskRun,
            OmpKind::TaskDependence,
        ],
    ),
    ("masked", &[OmpKind::Masked]),
    ("reduction", &[OmpKind::Reduction]),
    ("cancel", &[OmpKind::Cancel]),
    ("flush", &[OmpKind::Flush]),
];

const fn opt(long: &'static str, value_name: &'static str) -> Option<Opt> {
    Some(Opt {
        long,
        short: None,
        value_name,
    })
}

pub const OUTPUT: Setting = Setting {
    var: "HYSCOPE_OUTPUT",
    option: Some(Opt {
        long: "output",
        short: Some('o'),
        value_name: "DIR",
    }),
    default: None,
    default_doc: "`hyscope-<program>-<date>-<time>`",
    meaning: "trace directory; must not exist (record refuses to overwrite; a run preloaded by hand that finds another run's trace there writes to `DIR-2`, `DIR-3`, … and says so). Ranks that name it themselves (`mpirun -np N hyscope record -- ./app`, or the library preloaded by hand) agree on one name across nodes through a link per job in `.hyscope-jobs/` of the working directory (keyed by Slurm's job and step, Open MPI's launcher address, the PMIx namespace or Hydra's control port; links older than a week are removed)",
    kind: Kind::Text,
    reader: Reader::Collector,
};
pub const MODE: Setting = Setting {
    var: "HYSCOPE_MODE",
    option: opt("mode", ""),
    default: Some("trace"),
    default_doc: "`trace`",
    meaning: "`trace`: every interval; `profile`: per (kind, construct, thread) aggregates only, no loop chunks",
    kind: Kind::Choice(&["trace", "profile"]),
    reader: Reader::Collector,
};
pub const GROUPS: Setting = Setting {
    var: "HYSCOPE_GROUPS",
    option: opt("groups", "LIST"),
    default: Some("all"),
    default_doc: "all",
    meaning: "OpenMP event groups: thread, parallel, work, chunk, sync, mutex, task, masked, reduction, cancel, flush",
    kind: Kind::Groups,
    reader: Reader::Collector,
};
pub const DISPATCH: Setting = Setting {
    var: "HYSCOPE_DISPATCH",
    option: opt("dispatch", ""),
    default: Some("on"),
    default_doc: "on",
    meaning: "loop chunks from OMPT dispatch (libomp ≥ 15)",
    kind: Kind::OnOff,
    reader: Reader::Collector,
};
/// 64 MB hold about 0.8 s of events at 1 M events/s, so a writer that falls
/// behind on a busy node rarely drops; the cap is allocated as needed, and
/// above 1 TiB it is a typo.
pub const BUFFER_MB: Setting = Setting {
    var: "HYSCOPE_BUFFER_MB",
    option: opt("buffer-mb", "MB"),
    default: Some("64"),
    default_doc: "64 (allocated as needed)",
    meaning: "cap on event-buffer memory per process, 1 to 1048576 (64 MB hold ~8 M encoded OpenMP events; it is allocated in 256 KiB blocks, at least one per recording thread); beyond it events are dropped and counted, never blocking",
    kind: Kind::Number {
        min: 1,
        max: 1 << 20,
    },
    reader: Reader::Collector,
};
/// 100 ms gives 10 points per second of phase, ~36 000 ticks per hour (a
/// few hundred thousand rows, ~1 MB per rank on disk) and stays far below the
/// RAPL wrap period (32-bit counters of 15-61 µJ units wrap after 65-262 kJ:
/// minutes at server power); the cost is measured in `benchmarks/samplers.md`.
pub const SAMPLE_MS: Setting = Setting {
    var: "HYSCOPE_SAMPLE_MS",
    option: opt("sample-ms", "MS"),
    default: Some("100"),
    default_doc: "100",
    meaning: "sampler interval (energy, memory, MPI_T queues, RDMA), at most 3600000; 0 = off",
    kind: Kind::Number {
        min: 0,
        max: 3_600_000,
    },
    reader: Reader::Collector,
};
pub const LIB: Setting = Setting {
    var: "HYSCOPE_LIB",
    option: opt("lib", "FILE"),
    default: None,
    default_doc: "next to `hyscope`, `../lib`, target dir",
    meaning: "the collector library",
    kind: Kind::Text,
    reader: Reader::Record,
};
pub const LIBOMP: Setting = Setting {
    var: "HYSCOPE_LIBOMP",
    option: None,
    default: Some("/usr/lib/llvm-19/lib/libomp.so.5"),
    default_doc: "`/usr/lib/llvm-19/lib/libomp.so.5`",
    meaning: "LLVM's OpenMP runtime for `--openmp-runtime llvm`",
    kind: Kind::Text,
    reader: Reader::Record,
};
pub const SYSFS_ROOT: Setting = Setting {
    var: "HYSCOPE_SYSFS_ROOT",
    option: None,
    default: None,
    default_doc: "`/`",
    meaning: "read sysfs (RAPL) from another root (tests use fixture trees)",
    kind: Kind::Text,
    reader: Reader::Collector,
};
pub const CLOCK: Setting = Setting {
    var: "HYSCOPE_CLOCK",
    option: None,
    default: Some("auto"),
    default_doc: "auto",
    meaning: "`auto` (the TSC where it is invariant and cheaper to read), `tsc` (the same) or `monotonic`. The ranks of a job on one node share one TSC calibration (`/dev/shm/hyscope-tsc-*`), keyed by `HYSCOPE_CLOCK_GROUP`, else the PMIx namespace, else the parent process",
    kind: Kind::Choice(&["auto", "tsc", "monotonic"]),
    reader: Reader::Collector,
};
pub const CLOCK_GROUP: Setting = Setting {
    var: "HYSCOPE_CLOCK_GROUP",
    option: None,
    default: None,
    default_doc: "PMIx namespace",
    meaning: "the processes that share one TSC calibration (`record` sets it when it runs as one rank)",
    kind: Kind::Text,
    reader: Reader::Collector,
};
pub const CLOCK_SYNC: Setting = Setting {
    var: "HYSCOPE_CLOCK_SYNC",
    option: None,
    default: Some("shared"),
    default_doc: "shared",
    meaning: "`shared`: a rank whose clock is its parent's in the clock synchronisation tree (same node, same calibration: the same `clock.id`) takes its offset without measuring it; `measure`: every rank ping-pongs with its parent, to check that a node's ranks do read one clock",
    kind: Kind::Choice(&["shared", "measure"]),
    reader: Reader::Collector,
};
pub const OMPT: Setting = Setting {
    var: "HYSCOPE_OMPT",
    option: None,
    default: Some("on"),
    default_doc: "on",
    meaning: "`off`: do not register as OpenMP tool (measures the preload without OMPT)",
    kind: Kind::OnOff,
    reader: Reader::Collector,
};
pub const CACHE_DIR: Setting = Setting {
    var: "HYSCOPE_CACHE_DIR",
    option: None,
    default: None,
    default_doc: "`$XDG_CACHE_HOME/hyscope`, else `~/.cache/hyscope`",
    meaning: "where the TUI and GUI keep their timeline caches",
    kind: Kind::Text,
    reader: Reader::Viewer,
};
pub const TIMING: Setting = Setting {
    var: "HYSCOPE_TIMING",
    option: None,
    default: None,
    default_doc: "unset",
    meaning: "set (to any value): print when each step of the analysis ends (under `mpirun`, also each process's CPUs, threads and ranks); `ranks`: also how long each rank's decoding and pass take",
    kind: Kind::Text,
    reader: Reader::Viewer,
};

pub const TEST_SIGNAL_IN_HANDOFF: Setting = Setting {
    var: "HYSCOPE_TEST_SIGNAL_IN_HANDOFF",
    option: None,
    default: None,
    default_doc: "unset",
    meaning: "for tests only: the first full buffer handed to the writer raises this signal (a number, 1 to 64) at its thread while it holds a collector lock, so a test program's handler (`exit`, an exec) runs there every time",
    kind: Kind::Number { min: 1, max: 64 },
    reader: Reader::Collector,
};

/// Every setting, in the README's order.
pub const ALL: &[&Setting] = &[
    &OUTPUT,
    &MODE,
    &GROUPS,
    &DISPATCH,
    &BUFFER_MB,
    &SAMPLE_MS,
    &LIB,
    &LIBOMP,
    &SYSFS_ROOT,
    &CLOCK,
    &CLOCK_GROUP,
    &CLOCK_SYNC,
    &OMPT,
    &CACHE_DIR,
    &TIMING,
    &TEST_SIGNAL_IN_HANDOFF,
];

/// `a, b or c`.
fn alternatives(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn group_names() -> Vec<&'static str> {
    OMP_GROUPS.iter().map(|(g, _)| *g).collect()
}

impl Setting {
    /// The canonical form of a valid `raw` value, or why it is not valid and
    /// what to use instead. Leading and trailing blanks are ignored.
    pub fn check(&self, raw: &str) -> Result<String, Invalid> {
        let v = raw.trim();
        let fallback = || self.default.map(str::to_string);
        match self.kind {
            Kind::Text if !v.is_empty() => Ok(v.to_string()),
            Kind::Text => Err(Invalid {
                reason: "is empty".into(),
                used: fallback(),
            }),
            Kind::Choice(words) => words
                .iter()
                .find(|w| w.eq_ignore_ascii_case(v))
                .map(|w| w.to_string())
                .ok_or_else(|| Invalid {
                    reason: format!("is not {}", alternatives(words)),
                    used: fallback(),
                }),
            Kind::OnOff => match v.to_ascii_lowercase().as_str() {
                "on" | "1" | "true" | "yes" => Ok("on".into()),
                "off" | "0" | "false" | "no" => Ok("off".into()),
                _ => Err(Invalid {
                    reason: "is not on or off".into(),
                    used: fallback(),
                }),
            },
            Kind::Number { min, max } => v
                .parse::<u64>()
                .ok()
                .filter(|n| (min..=max).contains(n))
                .map(|n| n.to_string())
                .ok_or_else(|| Invalid {
                    reason: format!("is not a whole number from {min} to {max}"),
                    used: fallback(),
                }),
            Kind::Groups => {
                let names: Vec<&str> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .collect();
                if names.is_empty() || names.contains(&"all") {
                    return Ok("all".into());
                }
                let known = group_names();
                let (good, bad): (Vec<&str>, Vec<&str>) =
                    names.iter().partition(|n| known.contains(n));
                if bad.is_empty() {
                    return Ok(good.join(","));
                }
                let bad: Vec<String> = bad.iter().map(|n| format!("`{n}`")).collect();
                Err(Invalid {
                    reason: format!(
                        "names unknown group{} {} (known: {}, all)",
                        if bad.len() > 1 { "s" } else { "" },
                        bad.join(", "),
                        known.join(", ")
                    ),
                    used: Some(if good.is_empty() {
                        "all".into()
                    } else {
                        good.join(",")
                    }),
                })
            }
        }
    }

    /// The value to use for the variable's raw value (unset or empty: the
    /// default), and the warning when it was not valid: the variable, the bad
    /// value and the value used instead.
    pub fn resolve(&self, raw: Option<&str>) -> (Option<String>, Option<String>) {
        let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
            return (self.default.map(str::to_string), None);
        };
        match self.check(raw) {
            Ok(v) => (Some(v), None),
            Err(e) => {
                let used = match &e.used {
                    Some(u) => format!("using {u}"),
                    None => "ignoring it".into(),
                };
                let warning = format!("{}=`{raw}` {}; {used}", self.var, e.reason);
                (e.used, Some(warning))
            }
        }
    }

    /// [`Setting::resolve`] on the variable's value in this process's
    /// environment (a value that is not UTF-8 counts as unset).
    pub fn from_env(&self) -> (Option<String>, Option<String>) {
        self.resolve(std::env::var(self.var).ok().as_deref())
    }

    /// How the value is named in `--help` and the README: the choices, or the option's value name.
    pub fn value_name(&self) -> String {
        match self.kind {
            Kind::Choice(words) => words.join("|"),
            Kind::OnOff => "on|off".into(),
            _ => self.option.map_or("", |o| o.value_name).to_string(),
        }
    }

    /// The option as the README's first column shows it (`—` when there is none).
    pub fn option_doc(&self) -> String {
        match self.option {
            Some(o) => {
                let flag = match o.short {
                    Some(c) => format!("-{c}"),
                    None => format!("--{}", o.long),
                };
                format!("`{flag} {}`", self.value_name().replace('|', "\\|"))
            }
            None => "—".into(),
        }
    }

    /// The setting's row of the README's table.
    pub fn markdown_row(&self) -> String {
        format!(
            "| {} | `{}` | {} | {} |",
            self.option_doc(),
            self.var,
            self.default_doc,
            self.meaning
        )
    }

    /// `--help` text: the meaning, the variable and the default, without Markdown.
    pub fn help(&self) -> String {
        format!(
            "{} ({}) [default: {}]",
            self.meaning.replace('`', ""),
            self.var,
            self.default_doc.replace('`', "")
        )
    }
}

/// `HYSCOPE_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Trace,
    Profile,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Trace => "trace",
            Mode::Profile => "profile",
        }
    }
}

/// `HYSCOPE_CLOCK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The TSC where it is invariant and cheaper to read than the monotonic clock.
    Auto,
    Monotonic,
}

/// The collector's settings, each valid (see [`Setting::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub output: Option<PathBuf>,
    pub mode: Mode,
    /// Bit `1 << kind` for every [`OmpKind`] of the groups chosen.
    pub groups: u32,
    pub dispatch: bool,
    pub buffer_mb: u64,
    /// 0: no sampling.
    pub sample_ms: u64,
    pub sysfs_root: Option<PathBuf>,
    pub clock: Clock,
    pub clock_group: Option<String>,
    /// `HYSCOPE_CLOCK_SYNC=measure`: measure offsets between ranks that share a clock too.
    pub clock_sync_measure: bool,
    pub ompt: bool,
    /// `HYSCOPE_TEST_SIGNAL_IN_HANDOFF` (tests only).
    pub test_signal_in_handoff: Option<i32>,
}

/// Bit `1 << kind` for every kind of `kinds`.
pub fn kind_bits(kinds: &[OmpKind]) -> u32 {
    kinds.iter().fold(0, |m, k| m | 1 << (*k as u32))
}

impl Settings {
    /// From the process environment, with one warning per invalid value.
    pub fn from_env() -> (Settings, Vec<String>) {
        Settings::from_lookup(|k| std::env::var(k).ok())
    }

    /// From `get(variable)`, with one warning per invalid value.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> (Settings, Vec<String>) {
        let mut warnings = Vec::new();
        let mut value = |s: &Setting| {
            let (v, w) = s.resolve(get(s.var).as_deref());
            warnings.extend(w);
            v
        };
        let number = |v: Option<String>| v.and_then(|v| v.parse().ok()).unwrap_or(0);
        let on = |v: Option<String>| v.as_deref() == Some("on");
        let groups = value(&GROUPS).unwrap_or_default();
        let groups = OMP_GROUPS
            .iter()
            .filter(|(g, _)| groups == "all" || groups.split(',').any(|n| n == *g))
            .fold(0, |m, (_, k)| m | kind_bits(k));
        let settings = Settings {
            output: value(&OUTPUT).map(PathBuf::from),
            mode: match value(&MODE).as_deref() {
                Some("profile") => Mode::Profile,
                _ => Mode::Trace,
            },
            groups,
            dispatch: on(value(&DISPATCH)),
            buffer_mb: number(value(&BUFFER_MB)),
            sample_ms: number(value(&SAMPLE_MS)),
            sysfs_root: value(&SYSFS_ROOT).map(PathBuf::from),
            clock: match value(&CLOCK).as_deref() {
                Some("monotonic") => Clock::Monotonic,
                _ => Clock::Auto,
            },
            clock_group: value(&CLOCK_GROUP),
            clock_sync_measure: value(&CLOCK_SYNC).as_deref() == Some("measure"),
            ompt: on(value(&OMPT)),
            test_signal_in_handoff: value(&TEST_SIGNAL_IN_HANDOFF).and_then(|v| v.parse().ok()),
        };
        (settings, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warn(s: &Setting, raw: &str) -> String {
        s.resolve(Some(raw)).1.unwrap_or_default()
    }

    #[test]
    fn bad_values_name_the_variable_the_value_and_the_value_used() {
        assert_eq!(
            warn(&MODE, "xyz"),
            "HYSCOPE_MODE=`xyz` is not trace or profile; using trace"
        );
        for bad in ["-1", "0", "1e20", "99999999999999999999999"] {
            assert_eq!(
                warn(&BUFFER_MB, bad),
                format!(
                    "HYSCOPE_BUFFER_MB=`{bad}` is not a whole number from 1 to 1048576; using 64"
                )
            );
        }
        assert_eq!(
            warn(&DISPATCH, "maybe"),
            "HYSCOPE_DISPATCH=`maybe` is not on or off; using on"
        );
        assert_eq!(
            warn(&CLOCK, "bogus"),
            "HYSCOPE_CLOCK=`bogus` is not auto, tsc or monotonic; using auto"
        );
        assert_eq!(
            GROUPS.resolve(Some("parallel, bogus")),
            (
                Some("parallel".into()),
                Some(
                    "HYSCOPE_GROUPS=`parallel, bogus` names unknown group `bogus` (known: thread, \
                     parallel, work, chunk, sync, mutex, task, masked, reduction, cancel, flush, \
                     all); using parallel"
                        .into()
                )
            )
        );
        assert_eq!(GROUPS.resolve(Some("mpi")).0.as_deref(), Some("all"));
    }

    #[test]
    fn valid_unset_and_empty_values() {
        assert_eq!(
            MODE.resolve(Some(" Profile ")),
            (Some("profile".into()), None)
        );
        assert_eq!(MODE.resolve(Some("")), (Some("trace".into()), None));
        assert_eq!(MODE.resolve(None), (Some("trace".into()), None));
        assert_eq!(DISPATCH.resolve(Some("0")), (Some("off".into()), None));
        assert_eq!(SAMPLE_MS.resolve(Some("0")), (Some("0".into()), None));
        assert_eq!(OUTPUT.resolve(None), (None, None));
        assert_eq!(
            GROUPS.resolve(Some("sync,work")).0.as_deref(),
            Some("sync,work")
        );
    }

    #[test]
    fn settings_from_a_lookup() {
        let (s, w) = Settings::from_lookup(|_| None);
        assert!(w.is_empty());
        assert_eq!((s.mode, s.buffer_mb, s.sample_ms), (Mode::Trace, 64, 100));
        assert!(s.dispatch && s.ompt && s.output.is_none());
        assert_eq!(
            s.groups,
            OMP_GROUPS.iter().fold(0, |m, (_, k)| m | kind_bits(k))
        );
        let vars = [
            ("HYSCOPE_MODE", "xyz"),
            ("HYSCOPE_BUFFER_MB", "0"),
            ("HYSCOPE_GROUPS", "sync"),
            ("HYSCOPE_CLOCK", "monotonic"),
        ];
        let (s, w) = Settings::from_lookup(|k| {
            vars.iter()
                .find(|(v, _)| *v == k)
                .map(|(_, x)| x.to_string())
        });
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(
            (s.mode, s.buffer_mb, s.clock),
            (Mode::Trace, 64, Clock::Monotonic)
        );
        assert_eq!(s.groups, kind_bits(&[OmpKind::Sync, OmpKind::SyncWait]));
    }
}

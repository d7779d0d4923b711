//! `hyscope record` and the `HYSCOPE_*` variables: a bad value in the
//! environment gives one warning naming the variable, the value and the value
//! used, and the program runs as without it; a variable already set is used
//! unless `record`'s own option is given; the options and `--help` come from
//! the settings table.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::Path;
use std::process::{Command, Output};

use hyscope_format::settings::{self, ALL};
use hyscope_format::{OmpKind, Trace};
use record_support::*;

include!("../../tests/settings/bad_values.rs");

/// `hyscope record -o <dir> [args] -- <exe>` with `env` added and every other
/// `HYSCOPE_*` variable removed.
fn record(dir: &Path, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = hyscope();
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("HYSCOPE_")) {
        cmd.env_remove(k);
    }
    cmd.arg("record")
        .arg("-o")
        .arg(dir)
        .args(args)
        .arg("--")
        .arg(exe);
    cmd.envs(env.iter().copied());
    cmd.output_within_limit().unwrap()
}

/// The lines of `stderr` that mention `var`.
fn lines_naming(out: &Output, var: &str) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(var))
        .map(str::to_string)
        .collect()
}

#[test]
fn bad_values_in_the_environment_warn_once_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let plain = Command::new(&exe).output_within_limit().unwrap();
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "sum 14850\n");
    for (i, (var, value, rest)) in BAD_VALUES.iter().enumerate() {
        let dir = tmp.path().join(format!("trace{i}"));
        let out = record(&dir, &exe, &[], &[(var, value)]);
        assert_eq!(
            out.status.code(),
            plain.status.code(),
            "{var}={value}: {}",
            stderr(&out)
        );
        assert_eq!(out.stdout, plain.stdout, "{var}={value}");
        assert_eq!(
            lines_naming(&out, var),
            vec![format!("hyscope: warning: {var}=`{value}` {rest}")],
            "{var}={value}: {}",
            stderr(&out)
        );
        // The value used instead is what the trace shows.
        let trace = Trace::open(&dir).unwrap();
        assert_eq!(trace.manifest.mode, "trace");
        assert!(trace.manifest.ranks[0].warnings.is_empty());
        let chunks = count_kind(&omp_rows(&trace), 0, OmpKind::Chunk);
        assert!(chunks >= OMP_REGIONS * 4, "{var}={value}: {chunks} chunks");
        // The run over, `record` removed the ranks' shared spool directory.
        assert!(!dir.join("spool").exists());
    }
}

#[test]
fn the_environment_is_used_unless_the_option_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let mode = |args: &[&str], env: &[(&str, &str)], name: &str| {
        let dir = tmp.path().join(name);
        let out = record(&dir, &exe, args, env);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let trace = Trace::open(&dir).unwrap();
        let chunks = count_kind(&omp_rows(&trace), 0, OmpKind::Chunk);
        (trace.manifest.mode.clone(), chunks)
    };
    assert_eq!(
        mode(&[], &[("HYSCOPE_MODE", "profile")], "env").0,
        "profile"
    );
    assert_eq!(
        mode(
            &["--mode", "trace"],
            &[("HYSCOPE_MODE", "profile")],
            "option"
        )
        .0,
        "trace"
    );
    assert_eq!(
        mode(&["--mode", "profile"], &[], "option-only").0,
        "profile"
    );
    assert_eq!(mode(&[], &[], "default").0, "trace");
    // The same for an on/off setting: the environment turns chunks off, the option back on.
    assert_eq!(
        mode(&[], &[("HYSCOPE_DISPATCH", "off")], "dispatch-env").1,
        0
    );
    assert!(
        mode(
            &["--dispatch", "on"],
            &[("HYSCOPE_DISPATCH", "off")],
            "dispatch-opt"
        )
        .1 > 0
    );
    // HYSCOPE_OUTPUT names the trace when -o is not given.
    let dir = tmp.path().join("from-env");
    let mut cmd = hyscope();
    cmd.env_remove("HYSCOPE_MODE")
        .env("HYSCOPE_OUTPUT", &dir)
        .arg("record")
        .arg("--")
        .arg(&exe);
    run_ok(&mut cmd);
    assert!(Trace::open(&dir).is_ok());
}

#[test]
fn bad_options_are_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    for (option, value, reason) in [
        ("--mode", "xyz", "is not trace or profile"),
        (
            "--buffer-mb",
            "0",
            "is not a whole number from 1 to 1048576",
        ),
        ("--dispatch", "maybe", "is not on or off"),
        ("--groups", "parallel,mpi", "names unknown group `mpi`"),
    ] {
        let out = hyscope()
            .args(["record", option, value, "-o"])
            .arg(tmp.path().join("never"))
            .arg("--")
            .arg(&exe)
            .arg("0")
            .arg(&marker)
            .output_within_limit()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{option} {value}");
        assert!(stderr(&out).contains(reason), "{}", stderr(&out));
        assert!(!marker.exists());
        assert!(!tmp.path().join("never").exists());
    }
}

#[test]
fn help_lists_every_option_of_the_settings_table() {
    let out = hyscope()
        .args(["record", "--help"])
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for s in ALL {
        if let Some(opt) = s.option {
            assert!(
                help.contains(&format!("--{}", opt.long)),
                "--{}: {help}",
                opt.long
            );
            assert!(help.contains(s.var), "{}: {help}", s.var);
        }
    }
    assert!(help.contains("-o, --output <DIR>"), "{help}");
    assert!(
        help.contains(&format!("--mode <{}>", settings::MODE.value_name())),
        "{help}"
    );
}

/// What the collector warned about on a program's standard error while it
/// ran (here a bad setting in a job started without `hyscope record`, with
/// the collector preloaded) is kept in the trace, so every later reading of
/// it says it too: the report's Warnings section and its JSON name the
/// message and the rank.
#[test]
fn the_collectors_warnings_reach_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let dir = tmp.path().join("trace");
    let mut cmd = Command::new(&exe);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("HYSCOPE_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .env(
            "LD_PRELOAD",
            beside_hyscope("libhyscope.so", "cargo build --workspace"),
        )
        .env("HYSCOPE_OUTPUT", &dir)
        .env("HYSCOPE_SAMPLE_MS", "-5")
        .output_within_limit()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = "HYSCOPE_SAMPLE_MS=`-5` is not a whole number from 0 to 3600000; using 100";
    assert!(stderr(&out).contains(said), "{}", stderr(&out));
    let text = run_ok(hyscope().arg("report").arg(&dir));
    let text = String::from_utf8_lossy(&text.stdout);
    let warnings = &text[text.find("\nWarnings\n").expect("a Warnings section")..];
    let line = warnings
        .lines()
        .find(|l| l.contains(said))
        .unwrap_or_else(|| panic!("{warnings}"));
    assert!(
        line.trim_start().starts_with("collector (rank 0): "),
        "{line}"
    );
    let json = report_json(&dir);
    let listed: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains(said))
        .collect();
    assert_eq!(listed, vec![line.trim()], "{json:#}");
    // What the collector could not do comes before the analysis's own notes.
    assert_eq!(json["warnings"][0].as_str(), Some(line.trim()), "{json:#}");
}

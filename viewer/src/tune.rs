//! `hyscope tune <trace> -- <command>`: re-run the program under the collector
//! with `OMP_SCHEDULE` set to the analyzer's recommendation (it applies to
//! `schedule(runtime)` loops) and report predicted against achieved speedup per
//! loop.
//!
//! The re-run goes through `hyscope record` (this executable, as a subprocess),
//! so the tuned run is a trace like any other and can be reported or compared.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use hyscope_analyzer::{AnalyzeOptions, analyze};
use serde::Serialize;

use crate::units;

#[derive(clap::Args)]
pub struct Args {
    /// The trace of the untuned run (the baseline).
    pub trace: PathBuf,
    /// Use this OMP_SCHEDULE value instead of the recommendation (e.g. `dynamic,64`).
    #[arg(long)]
    pub schedule: Option<String>,
    /// Take the recommendation of this loop (`file:line` as in the report) instead of the one with the largest predicted gain.
    #[arg(long = "loop", value_name = "FILE:LINE")]
    pub loop_label: Option<String>,
    /// Trace directory of the tuned run [default: <trace>-tuned-<schedule>].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The program to run (as given to `hyscope record`), after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Predicted against achieved, per loop.
#[derive(Debug, Clone, Serialize)]
pub struct LoopOutcome {
    pub loop_label: String,
    pub recommended: Option<String>,
    /// Mean loop time per instance, before and after.
    pub before_s: f64,
    pub after_s: Option<f64>,
    pub predicted_speedup: Option<f64>,
    pub achieved_speedup: Option<f64>,
    /// (achieved − 1) / (predicted − 1): the share of the predicted gain obtained.
    pub share_of_predicted_gain: Option<f64>,
    pub chunks_before: Option<u64>,
    pub chunks_after: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    pub baseline: String,
    pub tuned: String,
    pub omp_schedule: String,
    pub run_before_s: f64,
    pub run_after_s: f64,
    /// Why the two runs may differ for more than the schedule: another
    /// command, rank or thread count, a partial trace
    /// (`compare::caveats_between`).
    pub caveats: Vec<String>,
    pub loops: Vec<LoopOutcome>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = AnalyzeOptions::default();
    let before = analyze(&args.trace, &options)?;
    crate::partial::say(&args.trace, &before);
    let schedule = match &args.schedule {
        Some(s) => s.clone(),
        None => pick_schedule(&before, args.loop_label.as_deref())?,
    };
    let output = args.output.clone().unwrap_or_else(|| {
        let name = args
            .trace
            .file_name()
            .map_or("trace".into(), |n| n.to_string_lossy().into_owned());
        let parent = args.trace.parent().unwrap_or(Path::new("."));
        parent.join(format!("{name}-tuned-{}", schedule.replace(',', "_")))
    });
    if output.exists() {
        bail!(
            "{}: already exists (choose another with --output)",
            output.display()
        );
    }
    let command = with_forwarded_schedule(&args.command);
    let exe = std::env::current_exe().context("cannot find the hyscope executable")?;
    eprintln!(
        "hyscope: tune: OMP_SCHEDULE={schedule} {}",
        command
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let status = Command::new(&exe)
        .arg("record")
        .arg("-o")
        .arg(&output)
        .arg("--")
        .args(&command)
        .env("OMP_SCHEDULE", &schedule)
        .status()
        .with_context(|| format!("cannot run {} record", exe.display()))?;
    if !status.success() {
        bail!(
            "the tuned run failed ({status}); its trace, if any, is in {}",
            output.display()
        );
    }
    let after = analyze(&output, &options)?;
    crate::partial::say(&output, &after);
    let report = compare_runs(&before, &after, &args.trace, &output, &schedule);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The recommendation to apply: the named loop's, else the one with the largest predicted gain.
pub fn pick_schedule(
    a: &hyscope_analyzer::Analysis,
    label: Option<&str>,
) -> anyhow::Result<String> {
    let Some(loops) = a.loops.get() else {
        bail!("no loop advice: {}", a.loops.reason().unwrap_or("no loops"));
    };
    if let Some(x) = label
        && !loops.iter().any(|l| l.location.label == x)
    {
        let labels: Vec<&str> = loops.iter().map(|l| l.location.label.as_str()).collect();
        bail!(
            "no loop {x} in {}: its loops are {} (--loop takes a label of the report's loop table)",
            a.trace_dir,
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.join(", ")
            }
        );
    }
    let mut candidates: Vec<&hyscope_analyzer::Recommendation> = loops
        .iter()
        .filter(|l| label.is_none_or(|x| l.location.label == x))
        .filter_map(|l| l.recommendation.get())
        .filter(|r| !r.clause.starts_with("keep"))
        .collect();
    candidates.sort_by(|x, y| y.predicted_gain_s.total_cmp(&x.predicted_gain_s));
    // Threads that took turns on CPUs gain nothing from a schedule: say so.
    let turns = loops
        .iter()
        .filter(|l| label.is_none_or(|x| l.location.label == x))
        .filter_map(|l| l.recommendation.get())
        .find(|r| {
            r.rule
                .starts_with(hyscope_analyzer::tuner::THREADS_TOOK_TURNS)
        })
        .map_or(String::new(), |r| format!(" ({})", r.rule));
    match candidates.first() {
        Some(r) => Ok(r.omp_schedule.clone()),
        None => bail!(
            "nothing to tune: no loop{} has a schedule predicted to gain 5 % or more{turns}",
            label.map_or(String::new(), |l| format!(" at {l}"))
        ),
    }
}

/// Open MPI's mpirun does not forward the environment to remote ranks: add `-x OMP_SCHEDULE`.
/// MPICH's Hydra forwards the environment by default.
fn with_forwarded_schedule(cmd: &[OsString]) -> Vec<OsString> {
    let mut out = cmd.to_vec();
    let launcher = cmd
        .first()
        .and_then(|c| Path::new(c).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if matches!(launcher.as_str(), "mpirun" | "mpiexec" | "orterun")
        && let Ok(o) = Command::new(&cmd[0]).arg("--version").output()
        && String::from_utf8_lossy(&o.stdout).contains("Open MPI")
    {
        out.insert(1, "-x".into());
        out.insert(2, "OMP_SCHEDULE".into());
    }
    out
}

pub fn compare_runs(
    before: &hyscope_analyzer::Analysis,
    after: &hyscope_analyzer::Analysis,
    before_dir: &Path,
    after_dir: &Path,
    schedule: &str,
) -> TuneReport {
    let mut loops = Vec::new();
    let after_loops = after.loops.get().cloned().unwrap_or_default();
    if let Some(bl) = before.loops.get() {
        for l in bl {
            let per = |x: &hyscope_analyzer::LoopStats| x.time_s / x.instances.max(1) as f64;
            let b = per(l);
            let a = after_loops
                .iter()
                .find(|x| x.location.label == l.location.label)
                .map(|x| (per(x), x.chunks.get().copied()));
            let rec = l.recommendation.get();
            let predicted = rec.map(|r| r.predicted_speedup);
            let achieved = a.and_then(|(t, _)| (t > 0.0).then(|| b / t));
            let share = match (predicted, achieved) {
                (Some(p), Some(x)) if p > 1.0 => Some((x - 1.0) / (p - 1.0)),
                _ => None,
            };
            loops.push(LoopOutcome {
                loop_label: l.location.label.clone(),
                recommended: rec.map(|r| r.omp_schedule.clone()),
                before_s: b,
                after_s: a.map(|(t, _)| t),
                predicted_speedup: predicted,
                achieved_speedup: achieved,
                share_of_predicted_gain: share,
                chunks_before: l.chunks.get().copied(),
                chunks_after: a.and_then(|(_, c)| c),
            });
        }
    }
    let caveats = hyscope_analyzer::compare::caveats_between(
        (before, "the baseline"),
        (after, "the tuned run"),
        true,
    );
    TuneReport {
        caveats,
        baseline: before_dir.display().to_string(),
        tuned: after_dir.display().to_string(),
        omp_schedule: schedule.to_string(),
        run_before_s: before.run.duration_s,
        run_after_s: after.run.duration_s,
        loops,
    }
}

pub fn render(r: &TuneReport) -> String {
    let mut out = format!(
        "hyscope tune — OMP_SCHEDULE={}\n  baseline {}  ({})\n  tuned    {}  ({})\n\n",
        r.omp_schedule,
        r.baseline,
        units::secs(r.run_before_s),
        r.tuned,
        units::secs(r.run_after_s)
    );
    for c in &r.caveats {
        out.push_str(&format!("  ! {c}\n"));
    }
    if !r.caveats.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!(
        "  {:<24} {:>14} {:>12} {:>12} {:>10} {:>10} {:>10} {:>15}\n",
        "loop", "recommended", "before", "after", "predicted", "achieved", "of gain", "chunks"
    ));
    for l in &r.loops {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".to_string(), f);
        out.push_str(&format!(
            "  {:<24} {:>14} {:>12} {:>12} {:>10} {:>10} {:>10} {:>15}\n",
            l.loop_label,
            l.recommended.clone().unwrap_or_else(|| "—".into()),
            units::secs(l.before_s),
            opt(l.after_s, &units::secs),
            opt(l.predicted_speedup, &|x| format!("{x:.2}×")),
            opt(l.achieved_speedup, &|x| format!("{x:.2}×")),
            opt(l.share_of_predicted_gain, &units::percent),
            format!(
                "{} → {}",
                l.chunks_before.map_or("?".into(), |c| c.to_string()),
                l.chunks_after.map_or("?".into(), |c| c.to_string())
            ),
        ));
    }
    out.push_str(
        "\n  OMP_SCHEDULE changes only schedule(runtime) loops; other loops show the run-to-run noise.\n",
    );
    out
}

//! The one rule for how a subcommand ends on a trace that is not whole
//! (`report`, `report A B`, `export`, `tune`; `tui` and `gui` show the same
//! in their windows):
//!
//! - **partial** (rows lost, a rank left out for a damaged part, but
//!   something left to analyse): the subcommand does its work on what is
//!   left, exits 0, and says so on stderr in one `hyscope:` line per trace,
//!   naming the first loss and how many more there are ([`losses_line`]);
//! - **nothing analysable** (every rank damaged, the manifest or a rank file
//!   unreadable): exit [`FAILED`] with one `hyscope: error:` line naming the
//!   file and the problem ([`failed`]), as every other error.

use std::path::Path;
use std::process::ExitCode;

use hyscope_analyzer::Analysis;

/// The exit status of a subcommand that could not do its work: nothing of
/// the trace can be analysed, or any other error.
pub const FAILED: u8 = 2;

/// Say `err` in one `hyscope: error:` line and give [`FAILED`].
pub fn failed(err: &anyhow::Error) -> ExitCode {
    eprintln!("hyscope: error: {err:#}");
    ExitCode::from(FAILED)
}

/// The one line that says the trace in `dir` is partial: its first loss and
/// how many more (None when nothing is lost). `losses` in the order the
/// views list them.
pub fn losses_line(dir: &Path, losses: &[String]) -> Option<String> {
    let first = losses.first()?;
    let more = match losses.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more loss: `hyscope report` lists it)".to_string(),
        n => format!(" (and {n} more losses: `hyscope report` lists them)"),
    };
    Some(format!(
        "hyscope: partial trace {}: {first}{more}",
        dir.display()
    ))
}

/// The losses of an analysis, as its report lists them (the integrity
/// problems that lose data).
pub fn losses(a: &Analysis) -> Vec<String> {
    a.integrity
        .problems
        .iter()
        .filter(|p| p.data_lost)
        .map(ToString::to_string)
        .collect()
}

/// [`losses_line`] of the analysis of the trace in `dir`, on stderr.
pub fn say(dir: &Path, a: &Analysis) {
    if let Some(line) = losses_line(dir, &losses(a)) {
        eprintln!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_names_the_first_loss_and_counts_the_others() {
        let dir = Path::new("/t/run");
        assert_eq!(losses_line(dir, &[]), None);
        let one = ["rank 0 left out: omp/rank=0/part-0.parquet cannot be read (x)".to_string()];
        assert_eq!(
            losses_line(dir, &one).unwrap(),
            "hyscope: partial trace /t/run: rank 0 left out: omp/rank=0/part-0.parquet cannot be read (x)"
        );
        let three = [one[0].clone(), "b".into(), "c".into()];
        assert_eq!(
            losses_line(dir, &three).unwrap(),
            "hyscope: partial trace /t/run: rank 0 left out: omp/rank=0/part-0.parquet cannot be read (x) (and 2 more losses: `hyscope report` lists them)"
        );
    }
}

//! `hyscope`: the command users run. It parses the command line and calls the
//! subcommand's `run` in the `hyscope_viewer` library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use hyscope_viewer::{export, gui, install, partial, record, recover, report, tui, tune};

/// Performance analysis for hybrid MPI+OpenMP applications.
#[derive(Parser)]
#[command(name = "hyscope", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program (or an MPI launcher) under the collector and write a trace.
    Record(record::Args),
    /// Encode what crashed or killed processes left in a trace's spool/ (done by `record` after the job).
    Recover(recover::Args),
    /// Print the analysis of a trace (or compare two traces).
    Report(report::Args),
    /// Re-run a program with the recommended loop schedules and compare predicted vs achieved.
    Tune(tune::Args),
    /// Explore a trace in the terminal.
    Tui(tui::Args),
    /// Explore a trace in a desktop window.
    Gui(gui::Args),
    /// Convert a trace to OTF2 or Perfetto.
    Export(export::Args),
    /// Install the hyscope binary and libhyscope.so into a prefix.
    Install(install::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Report(args) => report::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Tui(args) => tui::run(args),
        Command::Gui(args) => gui::run(args),
        Command::Export(args) => export::run(args),
        Command::Install(args) => install::run(args),
    };
    // How every subcommand ends on an error, a trace with nothing to
    // analyse included: `hyscope_viewer::partial`.
    result.unwrap_or_else(|err| partial::failed(&err))
}

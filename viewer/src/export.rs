//! `hyscope export`: not built yet.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Arguments (not used yet).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    eprintln!("hyscope: `hyscope export` is not built yet in this version");
    Ok(ExitCode::from(2))
}

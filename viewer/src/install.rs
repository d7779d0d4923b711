//! `hyscope install --prefix DIR`: copy the `hyscope` binary to `DIR/bin` and the
//! collector libraries (`libhyscope.so`, and `libhyscope-mpich.so` when built) and
//! the parallel report's MPI libraries (`libhyscope_par.so`,
//! `libhyscope_par-mpich.so`) to `DIR/lib`, where `hyscope record` and
//! `mpirun hyscope report` look for them (`<bin>/../lib`), and the
//! phase annotation API (`hyscope.h`, the Fortran module `hyscope.f90`) to
//! `DIR/include`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

/// Install the hyscope binary and the collector library into a prefix.
///
/// Example: hyscope install --prefix $HOME/.local
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Installation prefix: the binary goes to PREFIX/bin, the libraries to
    /// PREFIX/lib, `hyscope.h` and `hyscope.f90` to PREFIX/include.
    #[arg(long, value_name = "DIR")]
    prefix: PathBuf,
}

/// The phase annotation API, header-only: installed from the binary itself.
const HEADERS: [(&str, &str); 2] = [
    ("hyscope.h", include_str!("../../include/hyscope.h")),
    ("hyscope.f90", include_str!("../../include/hyscope.f90")),
];

/// Collector builds and the parallel report's MPI libraries, one per MPI
/// flavour (each copied when built).
const LIBRARIES: [&str; 4] = [
    "libhyscope.so",
    "libhyscope-mpich.so",
    "libhyscope_par.so",
    "libhyscope_par-mpich.so",
];

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .context("cannot locate the running hyscope binary")?;
    let bin = args.prefix.join("bin");
    let lib = args.prefix.join("lib");
    for d in [&bin, &lib] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let mut installed = Vec::new();
    let dest = bin.join("hyscope");
    copy(&exe, &dest)?;
    installed.push(dest);

    // The first directory holding libhyscope.so is the build that goes with this binary.
    let dirs = crate::record::library_dirs();
    let Some(src_dir) = dirs.iter().find(|d| d.join(LIBRARIES[0]).is_file()) else {
        let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        bail!(
            "cannot find libhyscope.so (looked in {}); build it first with `cargo build -p hyscope-collector`",
            looked.join(", ")
        );
    };
    for name in LIBRARIES {
        let src = src_dir.join(name);
        if src.is_file() {
            let dest = lib.join(name);
            copy(&src, &dest)?;
            installed.push(dest);
        }
    }
    let include = args.prefix.join("include");
    std::fs::create_dir_all(&include)
        .with_context(|| format!("cannot create {}", include.display()))?;
    for (name, text) in HEADERS {
        let dest = include.join(name);
        std::fs::write(&dest, text).with_context(|| format!("cannot write {}", dest.display()))?;
        installed.push(dest);
    }
    for p in &installed {
        println!("installed {}", p.display());
    }
    if !lib.join("libhyscope-mpich.so").exists() {
        println!(
            "note: no MPICH build of the collector was found; MPICH programs cannot be recorded"
        );
    }
    println!(
        "next: {} record -- <command>",
        dest_display(&bin.join("hyscope"))
    );
    Ok(ExitCode::SUCCESS)
}

/// Copy through a temporary name and rename, so a running copy of the old file
/// is not overwritten in place ("text file busy") and readers never see half a file.
fn copy(src: &Path, dest: &Path) -> anyhow::Result<()> {
    if src == dest {
        return Ok(());
    }
    let tmp = dest.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::copy(src, &tmp)
        .with_context(|| format!("cannot copy {} to {}", src.display(), tmp.display()))?;
    std::fs::rename(&tmp, dest)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), dest.display()))?;
    Ok(())
}

fn dest_display(p: &Path) -> String {
    p.display().to_string()
}

//! Picks the MPI flavour the collector is built for: `cfg(hyscope_mpich)` when
//! `MPICC` (the variable mpi-sys also reads) is an MPICH compiler wrapper.
//! Unset or Open MPI's wrapper: the default Open MPI build. Compiles the
//! variadic exec calls' shim (`src/exec_variadic.c`, see `src/exec.rs`).

use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=src/exec_variadic.c");
    cc::Build::new()
        .file("src/exec_variadic.c")
        .flag_if_supported("-fvisibility=hidden")
        .compile("hyscope_exec_variadic");
    println!("cargo::rustc-check-cfg=cfg(hyscope_mpich)");
    println!("cargo::rerun-if-env-changed=MPICC");
    println!("cargo::rerun-if-changed=build.rs");
    let Ok(mpicc) = std::env::var("MPICC") else {
        return;
    };
    // `mpicc -show` prints the underlying command: MPICH links `-lmpich`.
    let show = Command::new(&mpicc)
        .arg("-show")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if show.contains("mpich") || mpicc.contains("mpich") {
        println!("cargo::rustc-cfg=hyscope_mpich");
    }
}

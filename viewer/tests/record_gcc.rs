//! A GCC-built OpenMP program: GCC's libgomp has no OMPT, so `hyscope record`
//! warns and writes nothing; with `--openmp-runtime=llvm` it runs on libomp
//! through the GOMP ABI and the regions and loop chunks are recorded.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::path::{Path, PathBuf};
use std::process::Command;

use hyscope_format::{OmpKind, Trace};
use record_support::*;

fn build_gcc(dir: &Path) -> PathBuf {
    let c = dir.join("gcc_app.c");
    std::fs::write(&c, OMP_SRC).unwrap();
    let exe = dir.join("gcc_app");
    let out = Command::new("gcc")
        .args(["-fopenmp", "-g", "-O1"])
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    exe
}

#[test]
fn gcc_program_on_libomp_with_the_runtime_swap() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_gcc(tmp.path());
    let dir = tmp.path().join("trace");
    let out = hyscope()
        .arg("record")
        .arg("--openmp-runtime=llvm")
        .arg("-o")
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum 14850\n");
    assert!(
        err.contains("GCC-built OpenMP code on LLVM's libomp"),
        "{err}"
    );
    let trace = Trace::open(&dir).unwrap();
    let omp = trace.manifest.openmp.as_ref().unwrap();
    assert!(omp.runtime_path.contains("llvm-19"), "{}", omp.runtime_path);
    let rows = omp_rows(&trace);
    assert_eq!(count_kind(&rows, 0, OmpKind::Parallel), OMP_REGIONS);
    let iterations: u64 = rows
        .iter()
        .filter(|(_, r)| r.kind == OmpKind::Chunk as u8)
        .map(|(_, r)| r.count)
        .sum();
    assert_eq!(iterations, 100 * OMP_REGIONS as u64);
}

#[test]
fn gcc_program_without_the_swap_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = build_gcc(tmp.path());
    let dir = tmp.path().join("trace");
    let out = record_into(&dir)
        .arg(&exe)
        .arg("4")
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("GCC's libgomp, which has no OMPT"), "{err}");
    assert!(err.contains("no trace written"), "{err}");
    assert!(!dir.exists());
}

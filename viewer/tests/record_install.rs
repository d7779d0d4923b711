//! `hyscope install --prefix DIR`, then `DIR/bin/hyscope record` finds `DIR/lib/libhyscope.so`.

use crate::record_support;
use hyscope_testkit::OutputWithin;

use std::process::Command;

use hyscope_format::{OmpKind, Trace};
use record_support::*;

#[test]
fn installed_hyscope_records_with_the_installed_library() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    let out = hyscope()
        .args(["install", "--prefix"])
        .arg(&prefix)
        .output_within_limit()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bin = prefix.join("bin/hyscope");
    let lib = prefix.join("lib/libhyscope.so");
    assert!(bin.is_file() && lib.is_file());
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_hyscope"))
        .parent()
        .unwrap()
        .join("libhyscope.so");
    assert_eq!(std::fs::read(&lib).unwrap(), std::fs::read(&built).unwrap());
    // The phase annotation API, as in the source tree.
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
    for name in ["hyscope.h", "hyscope.f90"] {
        assert_eq!(
            std::fs::read(prefix.join("include").join(name)).unwrap(),
            std::fs::read(source.join(name)).unwrap()
        );
    }

    let exe = build_omp(tmp.path(), "omp_app", OMP_SRC);
    let dir = tmp.path().join("trace");
    let out = Command::new(&bin)
        .env_remove("HYSCOPE_LIB")
        .args(["record", "--verbose", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(&exe)
        .output_within_limit()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let used = format!(
        "hyscope: collector {}",
        lib.canonicalize().unwrap().display()
    );
    assert!(err.lines().any(|l| l == used), "{err}");
    let trace = Trace::open(&dir).unwrap();
    assert_eq!(
        count_kind(&omp_rows(&trace), 0, OmpKind::Parallel),
        OMP_REGIONS
    );

    // Installing again over a previous installation works (atomic replace).
    let again = hyscope()
        .args(["install", "--prefix"])
        .arg(&prefix)
        .output_within_limit()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

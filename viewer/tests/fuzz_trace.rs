//! Property test: a recorded trace with random damage to `manifest.json`, a
//! rank file or the bytes of a part is analysed without a panic or an abort,
//! under a 4 GiB address-space limit (a count from a damaged file that sized
//! memory would abort). One flipped byte in a part's checksummed data is
//! always an error naming the part.
//!
//! Bounded for the test suite (48 cases per property); longer runs:
//! `scripts/fuzz-trace.sh [CASES]` (`HYSCOPE_FUZZ_CASES`).

use crate::damage_support;

use std::path::{Path, PathBuf};

use damage_support::*;
use hyscope_analyzer::{AnalyzeOptions, analyze};
use proptest::prelude::*;
use serde_json::Value;

fn cases() -> u32 {
    std::env::var("HYSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48)
}

/// Limit this test process' address space once (every property of this file runs in it).
fn limit_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let limit = libc::rlimit {
            rlim_cur: 4 << 30,
            rlim_max: 4 << 30,
        };
        // SAFETY: a valid rlimit for this process.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    });
}

/// The fixture, re-encoded once per process; each case copies it.
fn pristine() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        copy_fixture(&d.path().join("t"));
        d
    })
    .path()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    copy_tree(&pristine().join("t"), &dir);
    (tmp, dir)
}

/// Paths of every number in a JSON value.
fn numbers(v: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Number(_) => out.push(path.clone()),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.into());
                numbers(x, path, out);
                path.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                path.push(k.clone().into());
                numbers(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'v>(v: &'v mut Value, path: &[Value]) -> &'v mut Value {
    path.iter().fold(v, |v, k| match k {
        Value::String(s) => &mut v[s.as_str()],
        k => &mut v[k.as_u64().unwrap() as usize],
    })
}

/// A damaging value: the limits of every integer type, and random ones.
fn bad_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(0)),
        Just(Value::from(-1)),
        Just(Value::from(u32::MAX)),
        Just(Value::from(u64::from(u32::MAX) + 1)),
        Just(Value::from(i64::MAX)),
        Just(Value::from(i64::MIN)),
        Just(Value::from(u64::MAX)),
        Just(Value::from(1e300)),
        Just(Value::Null),
        Just(Value::from("x")),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
    ]
}

/// Set numbers of a JSON file of the trace (chosen by index) to damaging values.
fn damage_json(path: &Path, edits: &[(prop::sample::Index, Value)]) {
    edit_json(path, |v| {
        let mut paths = Vec::new();
        numbers(v, &mut Vec::new(), &mut paths);
        for (i, value) in edits {
            let p = i.get(&paths).clone();
            *at(v, &p) = value.clone();
        }
    });
}

/// Analysing must end in a result or an error, and an error names a file of the trace.
fn analyse(dir: &Path) -> Result<hyscope_analyzer::Analysis, String> {
    limit_memory();
    match analyze(dir, &AnalyzeOptions::default()) {
        Ok(a) => Ok(a),
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(dir.to_str().unwrap()), "{text}");
            Err(text)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn damaged_manifest(edits in prop::collection::vec((any::<prop::sample::Index>(), bad_value()), 1..4)) {
        let (_tmp, dir) = fresh();
        damage_json(&dir.join("manifest.json"), &edits);
        let _ = analyse(&dir);
    }

    #[test]
    fn damaged_rank_file(rank in 0u32..2, edits in prop::collection::vec((any::<prop::sample::Index>(), bad_value()), 1..4)) {
        let (_tmp, dir) = fresh();
        damage_json(&dir.join(format!("ranks/rank-{rank}.json")), &edits);
        let _ = analyse(&dir);
    }

    #[test]
    fn damaged_part(part in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), bits in 1u8..=255, truncate in any::<bool>()) {
        let (_tmp, dir) = fresh();
        let trace = hyscope_format::Trace::open(&dir).unwrap();
        let parts: Vec<PathBuf> = hyscope_format::Table::ALL
            .iter()
            .flat_map(|&t| trace.parts(t).iter().map(|p| p.path.clone()))
            .collect();
        let path = part.get(&parts).clone();
        let covered = hyscope_format::checksummed_bytes(&path).unwrap().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let i = at.index(bytes.len());
        if truncate {
            bytes.truncate(i);
        } else {
            bytes[i] ^= bits;
        }
        std::fs::write(&path, &bytes).unwrap();
        let result = analyse(&dir);
        // The checksums cover everything from the magic up to the page indexes and footer.
        // A damaged part is an error naming it, or leaves its rank out of the
        // analysis naming it (an OpenMP, MPI or samples part of one rank).
        if !truncate && i < covered as usize {
            let relative = path.strip_prefix(&dir).unwrap().to_str().unwrap().to_string();
            match result {
                Err(err) => prop_assert!(err.contains(path.to_str().unwrap()), "{}", err),
                Ok(a) => prop_assert!(
                    a.ranks_left_out.iter().any(|p| p.file == relative),
                    "a flipped byte in {} was not detected: left out {:?}",
                    relative,
                    a.ranks_left_out
                ),
            }
        }
    }
}

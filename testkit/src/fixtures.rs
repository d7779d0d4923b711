//! Copies of recorded traces with one fact of their manifest changed, for
//! tests whose subject needs that fact and whose fixture predates it.

use std::path::{Path, PathBuf};

/// A copy of the recorded trace `from` (in a fresh temporary directory,
/// kept while the returned guard lives) whose manifest says Open MPI ran ob1
/// over openib (format 1.8's `mpi.components`): a trace older than 1.8 does
/// not say which transport ran, so its network buffers are not modelled and
/// the memory projection makes no finding; over openib, the projection
/// charges Open MPI's receive queues and queue pairs, which at 1 M ranks
/// exceed any memory per core.
pub fn over_openib(from: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("trace");
    copy(from, &dir);
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the manifest")).expect("JSON");
    m["mpi"]["components"] = serde_json::json!(["btl_openib", "btl_self", "btl_vader", "pml_ob1"]);
    std::fs::write(&path, serde_json::to_vec(&m).expect("JSON")).expect("write the manifest");
    (tmp, dir)
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for e in std::fs::read_dir(from).expect("read the fixture") {
        let e = e.expect("a fixture entry");
        if e.file_type().expect("its type").is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy a file");
        }
    }
}

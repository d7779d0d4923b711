//! Which module paths of a trace are one binary, so that code without a
//! line merges over ranks that ran copies of one program from different
//! paths (a per-node copy: `/scratch/node1/app`, `/scratch/node2/app`).
//!
//! The `symbols` table names a module by its path alone (format 1.7 records
//! no build-id nor size), so the evidence is what the rows say of the code:
//! two paths are one binary when
//! - their file names are the same (`app`);
//! - they place code at one offset at least (`module_offset`), and every
//!   offset both place is in the same function;
//! - their offsets together keep each function in one run: in one binary a
//!   function's code is contiguous, so no offset of another function lies
//!   between two offsets of one function.
//!
//! Paths are joined in path order, each to the first binary (set of paths)
//! whose offsets it agrees with, so the answer depends on the rows alone. A
//! path whose own rows put two functions at one offset (different binaries
//! behind one path on different nodes) is joined to none. Two different
//! programs of one file name (an MPMD job of two `app`s) stay apart unless
//! the code at every offset they both place is in the same function and
//! their functions interleave nowhere; only a build-id in the trace would
//! tell apart two builds whose code is laid out alike.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Each offset a path (or a binary, several paths) places, with the
/// function there (`None`: a stripped module).
type Offsets = BTreeMap<u64, Option<String>>;

/// For each module path met in `places` (module, function, offset: the
/// rows without a line), the path that stands for its binary: the least
/// path of the binary. Paths that are their own binary are left out.
pub(super) fn same_binaries<'a>(
    places: impl IntoIterator<Item = (&'a str, Option<&'a str>, u64)>,
) -> HashMap<String, String> {
    // Per file name, per path: its offsets; `None` once its own rows disagree.
    let mut by_name: BTreeMap<String, BTreeMap<&'a str, Option<Offsets>>> = BTreeMap::new();
    for (module, function, offset) in places {
        let name = Path::new(module)
            .file_name()
            .map_or_else(|| module.to_string(), |n| n.to_string_lossy().into_owned());
        let entry = by_name
            .entry(name)
            .or_default()
            .entry(module)
            .or_insert_with(|| Some(Offsets::new()));
        if let Some(offsets) = entry {
            let function = function.map(str::to_string);
            match offsets.get(&offset) {
                Some(f) if *f != function => *entry = None,
                Some(_) => {}
                None => {
                    offsets.insert(offset, function);
                }
            }
        }
    }
    let mut out = HashMap::new();
    for paths in by_name.into_values() {
        // Each binary: its least path and every offset its paths place.
        let mut binaries: Vec<(&str, Offsets)> = Vec::new();
        for (path, offsets) in paths {
            let Some(offsets) = offsets else { continue };
            match binaries.iter_mut().find(|(_, b)| agree(b, &offsets)) {
                Some((first, b)) => {
                    out.insert(path.to_string(), first.to_string());
                    b.extend(offsets);
                }
                None => binaries.push((path, offsets)),
            }
        }
    }
    out
}

/// Whether the code at `a`'s and `b`'s offsets can be one binary's: one
/// offset at least in both, each such offset in the same function, and
/// every function's offsets one run when both are taken together.
fn agree(a: &Offsets, b: &Offsets) -> bool {
    let mut shared = false;
    for (offset, f) in b {
        if let Some(g) = a.get(offset) {
            if f != g {
                return false;
            }
            shared = true;
        }
    }
    if !shared {
        return false;
    }
    let mut both: Vec<(u64, &Option<String>)> = a.iter().chain(b).map(|(o, f)| (*o, f)).collect();
    both.sort_unstable();
    both.dedup();
    // A function met again after another one's offset has two runs.
    let mut ended: std::collections::HashSet<&Option<String>> = std::collections::HashSet::new();
    let mut current: Option<&Option<String>> = None;
    for (_, f) in both {
        if current != Some(f) {
            if ended.contains(f) {
                return false;
            }
            if let Some(c) = current {
                ended.insert(c);
            }
            current = Some(f);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::same_binaries;

    /// One program copied to two nodes' paths: one binary, named by the
    /// least path; a third copy that saw other code of it joins too.
    #[test]
    fn copies_of_one_program_are_one_binary() {
        let m = same_binaries([
            ("/scratch/node2/app", Some("main"), 0x11a3),
            ("/scratch/node2/app", Some("main"), 0x1240),
            ("/scratch/node1/app", Some("main"), 0x11a3),
            ("/scratch/node1/app", Some("main"), 0x1240),
            ("/scratch/node3/app", Some("main"), 0x1240),
            ("/scratch/node3/app", Some("work"), 0x1400),
        ]);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(m["/scratch/node2/app"], "/scratch/node1/app");
        assert_eq!(m["/scratch/node3/app"], "/scratch/node1/app");
    }

    /// Different programs stay apart: another file name; one name with
    /// another function at a shared offset; functions that would interleave;
    /// no offset in common; a path whose own rows disagree.
    #[test]
    fn different_programs_stay_apart() {
        let m = same_binaries([
            ("/a/app", Some("main"), 0x11a3),
            ("/b/other", Some("main"), 0x11a3),
            ("/c/app", Some("solve"), 0x11a3),
        ]);
        assert!(m.is_empty(), "{m:?}");
        // main's code around 0x1200 in one, `step` there in the other.
        let m = same_binaries([
            ("/a/app", Some("main"), 0x1100),
            ("/a/app", Some("main"), 0x1300),
            ("/b/app", Some("main"), 0x1100),
            ("/b/app", Some("step"), 0x1200),
        ]);
        assert!(m.is_empty(), "{m:?}");
        let m = same_binaries([
            ("/a/app", Some("main"), 0x1100),
            ("/b/app", Some("main"), 0x1200),
        ]);
        assert!(m.is_empty(), "{m:?}");
        let m = same_binaries([
            ("/a/app", Some("main"), 0x1100),
            ("/a/app", Some("step"), 0x1100),
            ("/b/app", Some("main"), 0x1100),
        ]);
        assert!(m.is_empty(), "{m:?}");
    }
}

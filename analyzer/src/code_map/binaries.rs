//! Which modules of a trace are one binary, so that code without a line
//! merges over ranks that ran copies of one program from different paths (a
//! per-node copy: `/scratch/node1/app`, `/scratch/node2/app`), and stays
//! apart where ranks ran different builds.
//!
//! - **A module with a GNU build-id** (`symbols.module_build_id`, format
//!   1.9; linkers write one by default) is the binary of that build-id:
//!   modules with the same one are one binary whatever their paths and file
//!   names, and modules with different ones are different binaries, also at
//!   one path (a program rebuilt on one node) and also when their code is
//!   laid out alike (two builds of one program that differ by a constant).
//! - **A module without one** (linked with `--build-id=none`, a trace before
//!   1.9) is never one binary with a module that has one. Among such
//!   modules the rows' own evidence decides, as before build-ids were
//!   recorded: two paths are one binary when
//!   - their file names are the same (`app`);
//!   - they place code at one offset at least (`module_offset`), and every
//!     offset both place is in the same function;
//!   - their offsets together keep each function in one run: in one binary
//!     a function's code is contiguous, so no offset of another function
//!     lies between two offsets of one function.
//!
//!   Paths are joined in path order, each to the first binary (set of paths)
//!   whose offsets it agrees with, so the answer depends on the rows alone.
//!   A path whose own rows put two functions at one offset (different
//!   binaries behind one path on different nodes) is joined to none. This
//!   is evidence, not proof: two builds of one file name whose code is laid
//!   out alike are joined. Every such join is said in a note
//!   ([`Binaries::notes`]), which the report prints.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The binary a module's code is in, for code without a line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Binary {
    /// A module with a GNU build-id: every module with that build-id.
    Build(String),
    /// A module without one: the least path of the paths joined to it by
    /// the layout rule (its own path where none is).
    Path(String),
}

/// One row without a line: module path, its build-id, function, offset.
pub(super) type Place<'a> = (&'a str, Option<&'a str>, Option<&'a str>, u64);

/// Which binary each module of a trace is ([`module documentation`](self)).
#[derive(Debug, Default)]
pub(super) struct Binaries {
    /// Each path without a build-id joined to another such path: the least
    /// path of their binary.
    joined: HashMap<String, String>,
}

impl Binaries {
    /// The binaries of the modules met in `places` (the rows without a line).
    pub(super) fn new<'a>(places: impl IntoIterator<Item = Place<'a>>) -> Binaries {
        Binaries {
            joined: same_layout(
                places
                    .into_iter()
                    .filter(|(_, build_id, _, _)| build_id_of(*build_id).is_none())
                    .map(|(module, _, function, offset)| (module, function, offset)),
            ),
        }
    }

    /// The binary of the module at `path` with `build_id`.
    pub(super) fn binary(&self, path: &str, build_id: Option<&str>) -> Binary {
        match build_id_of(build_id) {
            Some(id) => Binary::Build(id.to_string()),
            None => Binary::Path(
                self.joined
                    .get(path)
                    .map_or(path, String::as_str)
                    .to_string(),
            ),
        }
    }

    /// One sentence per binary whose paths were joined without a build-id
    /// to prove it: the analysis counts their code as one.
    pub(super) fn notes(&self) -> Vec<String> {
        let mut by_binary: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (path, first) in &self.joined {
            by_binary.entry(first).or_default().push(path);
        }
        by_binary
            .into_iter()
            .map(|(first, mut paths)| {
                paths.sort_unstable();
                let what = if paths.len() == 1 { "a copy" } else { "copies" };
                // A copy per node of a big job: the first few paths name it.
                let mut named = paths[..paths.len().min(NAMED)].join(", ");
                if paths.len() > NAMED {
                    named += &format!(" and {} more paths", paths.len() - NAMED);
                }
                format!(
                    "code locations: {named} counted as {what} of {first} (same file name, code laid out alike) without a GNU build-id to prove it (linked with --build-id=none, or a trace before format 1.9): a different build laid out alike would be merged too"
                )
            })
            .collect()
    }
}

/// The paths a note names of one binary's copies; the rest are counted.
const NAMED: usize = 3;

/// A build-id as the row gives it; an empty one is none.
fn build_id_of(build_id: Option<&str>) -> Option<&str> {
    build_id.filter(|b| !b.is_empty())
}

/// Each offset a path (or a binary, several paths) places, with the
/// function there (`None`: a stripped module).
type Offsets = BTreeMap<u64, Option<String>>;

/// For each module path met in `places` (module, function, offset: the
/// rows without a line of modules without a build-id), the path that stands
/// for its binary by the layout rule: the least path of the binary. Paths
/// that are their own binary are left out.
fn same_layout<'a>(
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
    use super::{Binaries, Binary, same_layout};

    /// One program copied to two nodes' paths: one binary, named by the
    /// least path; a third copy that saw other code of it joins too.
    #[test]
    fn copies_of_one_program_are_one_binary() {
        let m = same_layout([
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
        let m = same_layout([
            ("/a/app", Some("main"), 0x11a3),
            ("/b/other", Some("main"), 0x11a3),
            ("/c/app", Some("solve"), 0x11a3),
        ]);
        assert!(m.is_empty(), "{m:?}");
        // main's code around 0x1200 in one, `step` there in the other.
        let m = same_layout([
            ("/a/app", Some("main"), 0x1100),
            ("/a/app", Some("main"), 0x1300),
            ("/b/app", Some("main"), 0x1100),
            ("/b/app", Some("step"), 0x1200),
        ]);
        assert!(m.is_empty(), "{m:?}");
        let m = same_layout([
            ("/a/app", Some("main"), 0x1100),
            ("/b/app", Some("main"), 0x1200),
        ]);
        assert!(m.is_empty(), "{m:?}");
        let m = same_layout([
            ("/a/app", Some("main"), 0x1100),
            ("/a/app", Some("step"), 0x1100),
            ("/b/app", Some("main"), 0x1100),
        ]);
        assert!(m.is_empty(), "{m:?}");
    }

    /// With build-ids: one build-id is one binary whatever the paths and
    /// file names; two build-ids are two, also at one path and with the
    /// code laid out alike; a module without one is never one binary with a
    /// module that has one, and no note is written.
    #[test]
    fn build_ids_decide_where_modules_have_them() {
        let (x, y) = (Some("aa01"), Some("bb02"));
        let b = Binaries::new([
            ("/p1/app", x, Some("main"), 0x11a3),
            ("/p2/app", y, Some("main"), 0x11a3),
            ("/p3/renamed", x, Some("main"), 0x11a3),
            ("/p4/app", None, Some("main"), 0x11a3),
        ]);
        assert_eq!(b.binary("/p1/app", x), b.binary("/p3/renamed", x));
        assert_eq!(b.binary("/p1/app", x), Binary::Build("aa01".into()));
        assert_ne!(b.binary("/p1/app", x), b.binary("/p2/app", y));
        assert_ne!(
            b.binary("/p1/app", x),
            b.binary("/p1/app", y),
            "one path, two builds"
        );
        assert_eq!(b.binary("/p4/app", None), Binary::Path("/p4/app".into()));
        assert!(b.notes().is_empty(), "{:?}", b.notes());
    }

    /// Without build-ids the layout rule joins copies, and says so: one note
    /// per binary naming its paths; an empty build-id is none.
    #[test]
    fn without_build_ids_the_layout_rule_joins_and_says_so() {
        let b = Binaries::new([
            ("/n2/app", None, Some("main"), 0x11a3),
            ("/n1/app", Some(""), Some("main"), 0x11a3),
            ("/n3/app", None, Some("main"), 0x11a3),
            ("/n1/other", None, Some("main"), 0x11a3),
        ]);
        let one = Binary::Path("/n1/app".into());
        assert_eq!(b.binary("/n2/app", None), one);
        assert_eq!(b.binary("/n3/app", Some("")), one);
        assert_eq!(b.binary("/n1/app", None), one);
        assert_eq!(
            b.binary("/n1/other", None),
            Binary::Path("/n1/other".into())
        );
        let notes = b.notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("code locations: /n2/app, /n3/app counted as copies of /n1/app (same file name, code laid out alike) without a GNU build-id"),
            "{notes:?}"
        );
        // A copy per node of 100 nodes: three paths named, the rest counted.
        let paths: Vec<String> = (0..100).map(|n| format!("/node{n:03}/app")).collect();
        let b = Binaries::new(
            paths
                .iter()
                .map(|p| (p.as_str(), None, Some("main"), 0x11a3)),
        );
        assert_eq!(
            b.notes(),
            [
                "code locations: /node001/app, /node002/app, /node003/app and 96 more paths counted as copies of /node000/app (same file name, code laid out alike) without a GNU build-id to prove it (linked with --build-id=none, or a trace before format 1.9): a different build laid out alike would be merged too"
            ]
        );
    }
}

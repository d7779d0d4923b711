//! Which code location a rank's code address is: the one rule by which the
//! analysis merges ranks ([`crate::load`]) and the viewers find the rows of a
//! location the analysis names (the GUI's highlight).
//!
//! A (rank, address) resolves through that rank's own `symbols` rows only:
//! each process loads its program where it likes (ASLR), and in an MPMD job
//! (`mpirun -np 1 a : -np 1 b`) one address is different code on different
//! ranks. Ranks are merged by the resolved location, never by raw address:
//! - with a line (debug information): by file, function and line;
//! - without one (code built without `-g`): by binary, function and the
//!   address's place in the module's link-time layout (`module_offset`, the
//!   same for the same code on every rank of one binary whatever ASLR did),
//!   so that the call sites of one function stay apart; in a module without
//!   symbols (stripped) the offset alone places the code. A binary is every
//!   module with one GNU build-id, whatever its path (ranks on different
//!   nodes running copies `/scratch/node1/app` and `/scratch/node2/app`),
//!   and two builds are two binaries even where their code is laid out
//!   alike; a module without a build-id (`--build-id=none`, traces before
//!   format 1.9) is its path, or several paths of one file name whose rows
//!   place the code alike, said in a note ([`binaries`], [`CodeMap::notes`]);
//! - without a line nor an offset (traces before format 1.7): by file,
//!   function and line, so a function's call sites are one location.
//!
//! An address its rank does not resolve (its row has neither file nor
//! function nor a place in a module, or the rank has no row for it) is a
//! location of its own, on that rank only, and its label says so.
//!
//! Each location has an id, which the analysis keys its aggregates by and
//! writes as [`CodeLocation::address`]:
//! - a resolved location: the smallest of its addresses (on any rank) that
//!   no location before it took, locations taken in order of their smallest
//!   address, then file, function and line; where every one of its addresses
//!   is another location's id (different code at the same addresses on
//!   different ranks), [`RENUMBERED`] plus its number among such locations;
//! - an address its rank does not resolve: [`UNRESOLVED`] plus a 62-bit mix
//!   of the rank and the address, computed without the table, so that every
//!   view gives a rank without symbols the same ids;
//! - address 0 (the runtime gave none): 0 on every rank, `(unknown)`.
//!
//! The id depends on the symbols alone, never on the rows or the order they
//! are read in: the analysis and the GUI, each building a map from the same
//! `symbols` table, agree on every id.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Mutex;

use hyscope_format::SymbolRecord;

use crate::model::CodeLocation;

mod binaries;

use binaries::{Binaries, Binary};

/// Ids of the resolved locations whose addresses were all taken (top bits 11).
pub const RENUMBERED: u64 = 0b11 << 62;
/// Ids of the addresses their rank does not resolve (top bits 10).
pub const UNRESOLVED: u64 = 0b10 << 62;
/// Addresses at or above this are never ids themselves (no user-space code is there).
const ID_LIMIT: u64 = 1 << 62;

/// Label of a resolved symbol: `file:line` with the file name only, else
/// [`code_label`], else the address.
pub fn label_of(s: &SymbolRecord) -> String {
    match source_line(s) {
        Some((file, line)) => format!("{}:{line}", file_name(file)),
        None => code_label(s).unwrap_or_else(|| format!("{:#x}", s.address)),
    }
}

/// The code of a symbol, its source line aside: the function as its source
/// names it ([`crate::demangle::demangle`]); where the symbol has no line,
/// followed by where the code is in its module, `main (app+0x11a3)` (the
/// module's file name and `module_offset`, as `addr2line -f -e app 0x11a3`
/// takes them), or that place alone without a function (a stripped module).
/// `None` when the symbol names neither.
pub fn code_label(s: &SymbolRecord) -> Option<String> {
    let function = s.function.as_deref().map(crate::demangle::demangle);
    match (function, module_place(s)) {
        (Some(f), Some((module, offset))) => {
            Some(format!("{f} ({}+{offset:#x})", file_name(module)))
        }
        (None, Some((module, offset))) => Some(format!("{}+{offset:#x}", file_name(module))),
        (Some(f), None) => Some(f.into_owned()),
        (None, None) => None,
    }
}

/// The file and line of a symbol with debug information (a line of 0 is
/// none: code the compiler gives no line).
fn source_line(s: &SymbolRecord) -> Option<(&str, u32)> {
    match (&s.file, s.line) {
        (Some(f), Some(l)) if l > 0 => Some((f, l)),
        _ => None,
    }
}

/// Where the code of a symbol without a line is: its module and the offset
/// in it, where both are known.
fn module_place(s: &SymbolRecord) -> Option<(&str, u64)> {
    if source_line(s).is_some() {
        return None;
    }
    let offset = s.module_offset?;
    (!s.module.is_empty()).then_some((s.module.as_str(), offset))
}

/// The last component of a path.
fn file_name(path: &str) -> std::borrow::Cow<'_, str> {
    Path::new(path)
        .file_name()
        .map_or(path.into(), |n| n.to_string_lossy())
}

/// The code location a symbol resolves to ([`module documentation`](self)).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum SourceKey {
    /// File, function and line: with a line, or without a place in a module.
    Source(Option<String>, Option<String>, Option<u32>),
    /// Binary, function and offset in the module: without a line.
    Place(Binary, Option<String>, u64),
}

/// `None` when the symbol gives neither file, function nor a place in a
/// module. `binaries` tells which binary a module is ([`binaries`]).
fn source_key(s: &SymbolRecord, binaries: &Binaries) -> Option<SourceKey> {
    let source = || SourceKey::Source(s.file.clone(), s.function.clone(), s.line);
    if source_line(s).is_some() {
        return Some(source());
    }
    if let Some((module, offset)) = module_place(s) {
        let binary = binaries.binary(module, s.module_build_id.as_deref());
        return Some(SourceKey::Place(binary, s.function.clone(), offset));
    }
    (s.file.is_some() || s.function.is_some()).then(source)
}

/// The id of `address` on `rank` where the rank does not resolve it.
fn unresolved_id(rank: u32, address: u64) -> u64 {
    // SplitMix64's finaliser: every bit of the rank and address moves the id.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    UNRESOLVED | (mix(mix(address) ^ u64::from(rank).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 2)
}

/// A rank and one of its code addresses.
type RankAddress = (u32, u64);

/// An address its rank does not resolve, as a location.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unresolved {
    rank: u32,
    address: u64,
    /// The module the rank's row names, if it has one.
    module: Option<String>,
}

/// Every rank's code addresses and the code locations they are
/// ([`module documentation`](self)).
#[derive(Debug, Default)]
pub struct CodeMap {
    /// Per rank, (address, id) of each address it resolves, by address.
    resolved: HashMap<u32, Vec<(u64, u64)>>,
    /// The resolved locations by id.
    locations: HashMap<u64, CodeLocation>,
    /// The addresses with a `symbols` row that does not resolve them, by id.
    unresolved: HashMap<u64, Unresolved>,
    /// Those without a row, met by [`CodeMap::note`].
    met: Mutex<HashMap<u64, Unresolved>>,
    /// Two unresolved (rank, address) pairs whose ids coincide, each pair once.
    clashes: Mutex<BTreeSet<(RankAddress, RankAddress)>>,
    /// Module paths taken for one binary without a build-id to prove it.
    notes: Vec<String>,
}

impl Clone for CodeMap {
    fn clone(&self) -> CodeMap {
        CodeMap {
            resolved: self.resolved.clone(),
            locations: self.locations.clone(),
            unresolved: self.unresolved.clone(),
            met: Mutex::new(lock(&self.met).clone()),
            clashes: Mutex::new(lock(&self.clashes).clone()),
            notes: self.notes.clone(),
        }
    }
}

/// Where one resolved location's addresses are, while the ids are chosen.
struct Group {
    /// (address, rank) of each, sorted.
    members: Vec<(u64, u32)>,
    /// The row of the least (address, rank) (its module is the location's).
    first: ((u64, u32), SymbolRecord),
}

/// A lock, also when a thread panicked holding it (the maps stay whole:
/// each change is one insert).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl CodeMap {
    /// The map of the `symbols` rows of a trace, each with its rank (in any
    /// order). A (rank, address) with several rows (a damaged table) takes
    /// the least of them, so the order the parts are read in never matters.
    pub fn new(symbols: impl IntoIterator<Item = (u32, SymbolRecord)>) -> CodeMap {
        let least = |s: &SymbolRecord| {
            (
                s.file.clone(),
                s.function.clone(),
                s.line,
                s.module.clone(),
                s.module_offset,
                s.module_build_id.clone(),
            )
        };
        let mut rows: BTreeMap<(u32, u64), SymbolRecord> = BTreeMap::new();
        for (rank, s) in symbols {
            if s.address == 0 {
                continue; // not a code address: (unknown) on every rank
            }
            match rows.entry((rank, s.address)) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(s);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    if least(&s) < least(e.get()) {
                        e.insert(s);
                    }
                }
            }
        }
        let binaries = Binaries::new(rows.values().filter_map(|s| {
            module_place(s).map(|(module, offset)| {
                let build_id = s.module_build_id.as_deref();
                (module, build_id, s.function.as_deref(), offset)
            })
        }));
        let mut map = CodeMap {
            notes: binaries.notes(),
            ..CodeMap::default()
        };
        let mut groups: HashMap<SourceKey, Group> = HashMap::new();
        for ((rank, address), s) in rows {
            match source_key(&s, &binaries) {
                Some(key) => {
                    let here = (address, rank);
                    match groups.entry(key) {
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(Group {
                                members: vec![here],
                                first: (here, s),
                            });
                        }
                        std::collections::hash_map::Entry::Occupied(mut e) => {
                            let g = e.get_mut();
                            g.members.push(here);
                            if here < g.first.0 {
                                g.first = (here, s);
                            }
                        }
                    }
                }
                None => {
                    let u = Unresolved {
                        rank,
                        address,
                        module: (!s.module.is_empty()).then_some(s.module),
                    };
                    map.add_unresolved(u);
                }
            }
        }
        let mut groups: Vec<(SourceKey, Group)> = groups
            .into_iter()
            .map(|(k, mut g)| {
                g.members.sort_unstable();
                (k, g)
            })
            .collect();
        groups.sort_by(|(ka, a), (kb, b)| (a.members[0].0, ka).cmp(&(b.members[0].0, kb)));
        let mut taken: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut renumbered = 0u64;
        for (_, g) in groups {
            let id = match g
                .members
                .iter()
                .map(|m| m.0)
                .find(|a| *a < ID_LIMIT && !taken.contains(a))
            {
                Some(a) => a,
                None => {
                    renumbered += 1;
                    RENUMBERED | renumbered
                }
            };
            taken.insert(id);
            for &(address, rank) in &g.members {
                map.resolved.entry(rank).or_default().push((address, id));
            }
            let s = g.first.1;
            let module_offset = module_place(&s).map(|(_, offset)| offset);
            map.locations.insert(
                id,
                CodeLocation {
                    address: id,
                    label: label_of(&s),
                    module: Some(s.module),
                    function: s.function,
                    file: s.file,
                    line: s.line,
                    module_offset,
                },
            );
        }
        for table in map.resolved.values_mut() {
            table.sort_unstable();
        }
        map
    }

    /// The id of `rank`'s code address `address` ([`module documentation`](self)).
    pub fn id(&self, rank: u32, address: u64) -> u64 {
        if address == 0 {
            return 0;
        }
        self.resolved
            .get(&rank)
            .and_then(|t| {
                t.binary_search_by_key(&address, |e| e.0)
                    .ok()
                    .map(|i| t[i].1)
            })
            .unwrap_or_else(|| unresolved_id(rank, address))
    }

    /// Whether `rank`'s code address `address` is the location `id`.
    pub fn matches(&self, id: u64, rank: u32, address: u64) -> bool {
        self.id(rank, address) == id
    }

    /// [`CodeMap::id`], remembering an address of a rank without a `symbols`
    /// row for it, so that [`CodeMap::location`] can name it.
    pub fn note(&self, rank: u32, address: u64) -> u64 {
        let id = self.id(rank, address);
        if id & RENUMBERED == UNRESOLVED {
            let known = self.unresolved.get(&id).map(|u| (u.rank, u.address));
            let mut met = lock(&self.met);
            let first = known.or_else(|| met.get(&id).map(|u| (u.rank, u.address)));
            match first {
                None => {
                    met.insert(
                        id,
                        Unresolved {
                            rank,
                            address,
                            module: None,
                        },
                    );
                }
                Some(f) if f != (rank, address) => {
                    lock(&self.clashes).insert((f, (rank, address)));
                }
                Some(_) => {}
            }
        }
        id
    }

    /// The location `id` stands for: resolved, or one rank's unresolved
    /// address (labelled `0x… (rank r, unresolved)`), or `(unknown)` for 0.
    pub fn location(&self, id: u64) -> CodeLocation {
        if let Some(l) = self.locations.get(&id) {
            return l.clone();
        }
        let met = lock(&self.met);
        let u = self.unresolved.get(&id).or_else(|| met.get(&id));
        match u {
            Some(u) => CodeLocation {
                address: id,
                label: format!("{:#x} (rank {}, unresolved)", u.address, u.rank),
                module: u.module.clone(),
                ..CodeLocation::default()
            },
            None => CodeLocation {
                address: id,
                label: if id == 0 {
                    "(unknown)".to_string()
                } else {
                    format!("{id:#x}")
                },
                ..CodeLocation::default()
            },
        }
    }

    /// What cannot be told apart: unresolved addresses whose ids coincide
    /// (their rows are added as one location), one sentence each.
    pub fn clashes(&self) -> Vec<String> {
        lock(&self.clashes)
            .iter()
            .map(|((ra, a), (rb, b))| {
                format!(
                    "code address {a:#x} of rank {ra} and {b:#x} of rank {rb}, which their ranks do not resolve, have one id: the analysis counts them as one location"
                )
            })
            .collect()
    }

    /// How the code locations were told apart where that is not proven: the
    /// module paths without a GNU build-id taken for copies of one binary
    /// by file name and code layout ([`binaries`]), one sentence each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn add_unresolved(&mut self, u: Unresolved) {
        let id = unresolved_id(u.rank, u.address);
        match self.unresolved.get(&id) {
            Some(f) => {
                let pair = ((f.rank, f.address), (u.rank, u.address));
                lock(&self.clashes).insert(pair);
            }
            None => {
                self.unresolved.insert(id, u);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(address: u64, file: &str, line: u32) -> SymbolRecord {
        SymbolRecord {
            address,
            module: "/bin/app".into(),
            function: Some("main._omp_fn.1".into()),
            file: Some(format!("/src/{file}")),
            line: Some(line),
            module_offset: None,
            module_build_id: None,
        }
    }

    fn bare(address: u64) -> SymbolRecord {
        SymbolRecord {
            address,
            module: String::new(),
            function: None,
            file: None,
            line: None,
            module_offset: None,
            module_build_id: None,
        }
    }

    /// `main` of a PIE built without `-g`, loaded at `base`: a function and
    /// no line, at `offset` in the module.
    fn no_line(base: u64, offset: u64) -> SymbolRecord {
        SymbolRecord {
            address: base + offset,
            module: "/work/bin/app-nog".into(),
            function: Some("main".into()),
            file: None,
            line: None,
            module_offset: Some(offset),
            module_build_id: None,
        }
    }

    /// Code without debug information: two call sites in one function, on
    /// two ranks loaded at different addresses (ASLR), are two locations,
    /// each one over both ranks, labelled by function, module and offset.
    #[test]
    fn call_sites_without_a_line_stay_apart_and_merge_across_ranks() {
        let (base0, base1) = (0x5600_0000_0000, 0x5500_0000_0000);
        let m = CodeMap::new([
            (0, no_line(base0, 0x11a3)),
            (0, no_line(base0, 0x1240)),
            (1, no_line(base1, 0x11a3)),
            (1, no_line(base1, 0x1240)),
        ]);
        let a = m.id(0, base0 + 0x11a3);
        let b = m.id(0, base0 + 0x1240);
        assert_ne!(a, b, "two call sites of main are two locations");
        assert_eq!(m.id(1, base1 + 0x11a3), a, "one call site on both ranks");
        assert_eq!(m.id(1, base1 + 0x1240), b);
        assert_eq!(m.location(a).label, "main (app-nog+0x11a3)");
        assert_eq!(m.location(b).label, "main (app-nog+0x1240)");
        assert_eq!(m.location(a).module_offset, Some(0x11a3));
        assert_eq!(m.location(a).function.as_deref(), Some("main"));
        // A stripped module gives no function: its offset alone places the code.
        let stripped = |base: u64| SymbolRecord {
            function: None,
            ..no_line(base, 0x2000)
        };
        let m = CodeMap::new([(0, stripped(base0)), (1, stripped(base1))]);
        let s = m.id(0, base0 + 0x2000);
        assert_eq!(s & RENUMBERED, 0, "resolved");
        assert_eq!(m.id(1, base1 + 0x2000), s);
        assert_eq!(m.location(s).label, "app-nog+0x2000");
    }

    /// One program run from a copy per node (`/scratch/node1/app-nog`,
    /// `/scratch/node2/app-nog`): its call sites merge over the ranks as in
    /// one path; the location keeps the least (address, rank)'s path.
    #[test]
    fn copies_of_one_binary_at_different_paths_are_one_location() {
        let (base0, base1) = (0x5600_0000_0000, 0x5500_0000_0000);
        let at = |path: &str, base: u64, offset: u64| SymbolRecord {
            module: path.into(),
            ..no_line(base, offset)
        };
        let m = CodeMap::new([
            (0, at("/scratch/node1/app-nog", base0, 0x11a3)),
            (0, at("/scratch/node1/app-nog", base0, 0x1240)),
            (1, at("/scratch/node2/app-nog", base1, 0x11a3)),
            (1, at("/scratch/node2/app-nog", base1, 0x1240)),
        ]);
        let (a, b) = (m.id(0, base0 + 0x11a3), m.id(0, base0 + 0x1240));
        assert_ne!(a, b);
        assert_eq!(m.id(1, base1 + 0x11a3), a);
        assert_eq!(m.id(1, base1 + 0x1240), b);
        assert_eq!(m.location(a).label, "main (app-nog+0x11a3)");
        assert_eq!(
            m.location(a).module.as_deref(),
            Some("/scratch/node2/app-nog")
        );
        // Another program of the same name, `main` elsewhere: its own.
        let m = CodeMap::new([
            (0, at("/p1/app-nog", base0, 0x11a3)),
            (0, at("/p1/app-nog", base0, 0x1240)),
            (1, at("/p2/app-nog", base1, 0x11a3)),
            (
                1,
                SymbolRecord {
                    function: Some("solve".into()),
                    ..at("/p2/app-nog", base1, 0x1200)
                },
            ),
        ]);
        assert_ne!(m.id(0, base0 + 0x11a3), m.id(1, base1 + 0x11a3));
    }

    /// `main` of a build whose GNU build-id is `id`, at `path`, loaded at
    /// `base`, at `offset` in the module.
    fn built(id: Option<&str>, path: &str, base: u64, offset: u64) -> SymbolRecord {
        SymbolRecord {
            module: path.into(),
            module_build_id: id.map(str::to_string),
            ..no_line(base, offset)
        }
    }

    /// Two builds of one program that differ by a constant: one file name,
    /// the code laid out alike (same functions at the same offsets), other
    /// build-ids. Their call sites are two locations, each on its own rank,
    /// at two paths or at one (a program rebuilt on one node). Without the
    /// build-ids, the same rows would be one location.
    #[test]
    fn two_builds_laid_out_alike_are_two_locations() {
        let (base0, base1) = (0x5600_0000_0000, 0x5500_0000_0000);
        let (x, y) = (Some("41a9"), Some("702d"));
        for (p0, p1) in [("/a/app-nog", "/b/app-nog"), ("/a/app-nog", "/a/app-nog")] {
            let m = CodeMap::new([
                (0, built(x, p0, base0, 0x11a3)),
                (0, built(x, p0, base0, 0x1240)),
                (1, built(y, p1, base1, 0x11a3)),
                (1, built(y, p1, base1, 0x1240)),
            ]);
            for offset in [0x11a3, 0x1240] {
                let (a, b) = (m.id(0, base0 + offset), m.id(1, base1 + offset));
                assert_ne!(a, b, "{p0} and {p1} at {offset:#x}");
                assert_eq!(m.location(a).label, m.location(b).label);
            }
            assert!(m.notes().is_empty(), "{:?}", m.notes());
        }
        let m = CodeMap::new([
            (0, built(None, "/a/app-nog", base0, 0x11a3)),
            (1, built(None, "/b/app-nog", base1, 0x11a3)),
        ]);
        assert_eq!(m.id(0, base0 + 0x11a3), m.id(1, base1 + 0x11a3));
    }

    /// Copies of one build (one build-id) are one location per call site,
    /// also under another file name, which the layout rule would not join;
    /// a copy without a build-id is not that build's. Only copies joined by
    /// the layout rule give a note.
    #[test]
    fn one_build_id_at_any_path_is_one_location() {
        let (base0, base1, base2) = (0x5600_0000_0000, 0x5500_0000_0000, 0x5400_0000_0000);
        let x = Some("41a9");
        let m = CodeMap::new([
            (0, built(x, "/n1/app-nog", base0, 0x11a3)),
            (0, built(x, "/n1/app-nog", base0, 0x1240)),
            (1, built(x, "/n2/renamed", base1, 0x11a3)),
            (1, built(x, "/n2/renamed", base1, 0x1240)),
            (2, built(None, "/n3/app-nog", base2, 0x11a3)),
        ]);
        let (a, b) = (m.id(0, base0 + 0x11a3), m.id(0, base0 + 0x1240));
        assert_ne!(a, b);
        assert_eq!(m.id(1, base1 + 0x11a3), a);
        assert_eq!(m.id(1, base1 + 0x1240), b);
        assert_ne!(m.id(2, base2 + 0x11a3), a, "no build-id: not that build");
        assert!(m.notes().is_empty(), "{:?}", m.notes());
        let m = CodeMap::new([
            (0, built(None, "/n1/app-nog", base0, 0x11a3)),
            (1, built(None, "/n2/app-nog", base1, 0x11a3)),
        ]);
        assert_eq!(m.id(0, base0 + 0x11a3), m.id(1, base1 + 0x11a3));
        assert_eq!(m.notes().len(), 1, "{:?}", m.notes());
        assert!(m.notes()[0].contains("/n2/app-nog counted as a copy of /n1/app-nog"));
    }

    /// Without an offset (a trace before format 1.7) a function without a
    /// line is one location, as it always was; with a line the offset changes
    /// nothing (two instructions of one line are one location) and the label
    /// stays `file:line`.
    #[test]
    fn without_an_offset_or_with_a_line_the_offset_changes_nothing() {
        let old = |base: u64, offset: u64| SymbolRecord {
            module_offset: None,
            ..no_line(base, offset)
        };
        let m = CodeMap::new([
            (0, old(0x5600_0000_0000, 0x11a3)),
            (0, old(0x5600_0000_0000, 0x1240)),
        ]);
        assert_eq!(m.id(0, 0x5600_0000_11a3), m.id(0, 0x5600_0000_1240));
        assert_eq!(m.location(m.id(0, 0x5600_0000_11a3)).label, "main");
        let line = |address: u64, offset: u64| SymbolRecord {
            module_offset: Some(offset),
            ..sym(address, "a.c", 47)
        };
        let m = CodeMap::new([
            (0, line(0x5600_0000_1000, 0x1000)),
            (0, line(0x5600_0000_1008, 0x1008)),
        ]);
        let id = m.id(0, 0x5600_0000_1000);
        assert_eq!(m.id(0, 0x5600_0000_1008), id);
        assert_eq!(m.location(id).label, "a.c:47");
        assert_eq!(m.location(id).module_offset, None);
        // Its code, the line aside, is the function alone (the exports'
        // names, with the file and line beside them).
        let with_line = line(0x5600_0000_1000, 0x1000);
        assert_eq!(code_label(&with_line).as_deref(), Some("main._omp_fn.1"));
        assert_eq!(
            code_label(&no_line(0x5600_0000_0000, 0x11a3)).as_deref(),
            Some("main (app-nog+0x11a3)")
        );
        assert_eq!(code_label(&bare(0x401000)), None);
    }

    /// ASLR: each rank has its own address for one line; the location is
    /// one on every rank, named by the smallest of them.
    #[test]
    fn one_line_at_each_ranks_own_address_is_one_location() {
        let m = CodeMap::new([
            (0, sym(0x5600_0000_1000, "a.c", 47)),
            (1, sym(0x5500_0000_1000, "a.c", 47)),
            (0, sym(0x5600_0000_2000, "a.c", 39)),
        ]);
        assert_eq!(m.id(0, 0x5600_0000_1000), 0x5500_0000_1000);
        assert_eq!(m.id(1, 0x5500_0000_1000), 0x5500_0000_1000);
        assert_eq!(m.location(0x5500_0000_1000).label, "a.c:47");
        assert!(m.matches(0x5500_0000_1000, 0, 0x5600_0000_1000));
        assert!(!m.matches(0x5500_0000_1000, 0, 0x5600_0000_2000));
    }

    /// MPMD: one address is a.c:10 on rank 0 and b.c:20 on rank 1, and
    /// rank 1 has b.c:20 at another address too: two locations, each with
    /// its own id and label, whatever order the rows come in.
    #[test]
    fn one_address_with_different_code_on_two_ranks_is_two_locations() {
        let rows = vec![
            (0, sym(0x401000, "a.c", 10)),
            (1, sym(0x401000, "b.c", 20)),
            (2, sym(0x401000, "b.c", 20)),
        ];
        let m = CodeMap::new(rows.clone());
        let (a, b) = (m.id(0, 0x401000), m.id(1, 0x401000));
        assert_ne!(a, b);
        assert_eq!(m.id(2, 0x401000), b);
        assert_eq!(m.location(a).label, "a.c:10");
        assert_eq!(m.location(b).label, "b.c:20");
        assert_eq!(a, 0x401000, "a.c:10 sorts first and keeps its address");
        assert_eq!(b, RENUMBERED | 1);
        assert!(!m.matches(a, 1, 0x401000));
        let mut reversed = rows;
        reversed.reverse();
        let r = CodeMap::new(reversed);
        assert_eq!((r.id(0, 0x401000), r.id(1, 0x401000)), (a, b));
    }

    /// A location whose smallest address is taken keeps another of its own.
    #[test]
    fn a_taken_address_gives_the_next_one_of_the_location() {
        let m = CodeMap::new([
            (0, sym(0x401000, "a.c", 10)),
            (1, sym(0x401000, "b.c", 20)),
            (2, sym(0x402000, "b.c", 20)),
        ]);
        assert_eq!(m.id(1, 0x401000), 0x402000);
        assert_eq!(m.id(2, 0x402000), 0x402000);
    }

    /// An address its rank does not resolve is its own location on that
    /// rank only, even where another rank resolves the same address.
    #[test]
    fn an_unresolved_address_stays_with_its_rank() {
        let m = CodeMap::new([(0, sym(0x401000, "a.c", 10)), (1, bare(0x401000))]);
        let u1 = m.id(1, 0x401000);
        assert_ne!(u1, 0x401000);
        assert_eq!(u1 & RENUMBERED, UNRESOLVED);
        assert_eq!(m.location(u1).label, "0x401000 (rank 1, unresolved)");
        // Without any row: the same rule, on every rank its own id.
        let u3 = m.note(3, 0x401000);
        assert!(u3 != u1 && u3 & RENUMBERED == UNRESOLVED);
        assert_eq!(m.location(u3).label, "0x401000 (rank 3, unresolved)");
        assert_eq!(m.id(3, 0x401000), u3);
        assert!(m.clashes().is_empty());
        // 0 is no address: one (unknown) everywhere.
        assert_eq!((m.id(0, 0), m.id(5, 0)), (0, 0));
        assert_eq!(m.location(0).label, "(unknown)");
    }

    /// A repeated (rank, address) row takes the least, in any order.
    #[test]
    fn repeated_rows_give_one_answer_in_any_order() {
        let a = CodeMap::new([(0, sym(0x401000, "b.c", 2)), (0, sym(0x401000, "a.c", 1))]);
        let b = CodeMap::new([(0, sym(0x401000, "a.c", 1)), (0, sym(0x401000, "b.c", 2))]);
        assert_eq!(a.location(a.id(0, 0x401000)).label, "a.c:1");
        assert_eq!(b.location(b.id(0, 0x401000)).label, "a.c:1");
    }
}

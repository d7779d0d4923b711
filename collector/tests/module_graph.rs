//! The modules of each crate import one another in one direction only.
//!
//! A newcomer reads a crate from its lower layers up; an import cycle means no
//! module of the cycle can be understood (or changed, or tested) without the
//! others. This test reads the sources of the workspace's crates, builds the
//! graph of references between their modules and fails, naming the cycle and
//! the lines that close it, if one comes back.
//!
//! What counts as a reference from module A to module B: a path that starts at
//! `crate::`, `super::`, `self::` or at one of A's own submodules and resolves
//! into B, in a `use` or anywhere in the code (macro bodies included). A
//! `mod b;` declaration is not a reference, nor is a re-export (`pub use b::X`):
//! a path through a re-export is followed to the module that defines the item.
//!
//! Two graphs are checked in each crate (the collector, the analyzer, the
//! viewer, the format): its top-level modules, `crate` (the root file)
//! included; and in every directory, its files among themselves (the
//! directory's `mod.rs` and its files may use one another: it is their
//! face). Test code (`#[cfg(test)]` modules) sits above everything and is left
//! out. `ompt-tool` is not checked: its root file holds the sink and the
//! configuration that its modules read on the hot path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Rust tokens without comments, strings, characters, lifetimes and numbers,
/// each with its line.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'r' || c == 'b' || c == 'c') && raw_or_byte_string(&b, i)) {
            // Plain, byte, C and raw strings.
            let mut j = i;
            while b[j] != '"' && b[j] != '#' {
                j += 1;
            }
            let raw = b[i..j].contains(&'r');
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1; // opening quote
            while j < b.len() {
                if b[j] == '\n' {
                    line += 1;
                }
                if !raw && b[j] == '\\' {
                    j += 2;
                    continue;
                }
                if b[j] == '"' && (0..hashes).all(|k| at(j + 1 + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == '\'' {
            if at(i + 1) == '\\' {
                // An escaped character literal.
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or label.
                i += 1;
                while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                if b[i] == '.' && !at(i + 1).is_ascii_digit() {
                    break;
                }
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && at(i + 1) == '#' {
                i += 2;
            }
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[start..i].iter().collect()), line));
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// Whether `r"`, `r#"`, `b"`, `br"`, `br#"`, `c"`, `cr"` starts at `i` (and not an identifier).
fn raw_or_byte_string(b: &[char], i: usize) -> bool {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return false;
    }
    let mut j = i;
    if b[j] == 'b' || b[j] == 'c' {
        j += 1;
    }
    if b.get(j) == Some(&'r') {
        j += 1;
        while b.get(j) == Some(&'#') {
            j += 1;
        }
    }
    j > i && b.get(j) == Some(&'"')
}

/// Whether the item at `i` follows `#[cfg(test)]` (test code sits above every
/// module and may use any of them).
fn after_cfg_test(toks: &[(Tok, usize)], i: usize) -> bool {
    let want = [
        Tok::Punct('#'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    i >= want.len() && toks[i - want.len()..i].iter().map(|t| &t.0).eq(want.iter())
}

/// The index after the block that opens at `i` (`{`).
fn skip_block(toks: &[(Tok, usize)], mut i: usize) -> usize {
    let mut depth = 0;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// One path of a use tree or expression: its segments and the name it binds (`as`).
struct UsePath {
    segments: Vec<String>,
    alias: Option<String>,
}

/// Parses the rest of a path or use tree after `prefix::`, from `i`; returns where it ends.
fn tree(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>, out: &mut Vec<UsePath>) -> usize {
    match toks.get(i).map(|t| &t.0) {
        Some(Tok::Punct('{')) => {
            i += 1;
            loop {
                match toks.get(i).map(|t| &t.0) {
                    None => return i,
                    Some(Tok::Punct('}')) => return i + 1,
                    Some(Tok::Punct(',')) => i += 1,
                    _ => {
                        let before = i;
                        i = tree(toks, i, prefix.clone(), out);
                        if i == before {
                            i += 1;
                        }
                    }
                }
            }
        }
        Some(Tok::Ident(name)) if name != "as" => {
            let mut segments = prefix;
            segments.push(name.clone());
            i += 1;
            if toks.get(i).map(|t| &t.0) == Some(&Tok::Path) {
                return tree(toks, i + 1, segments, out);
            }
            let mut alias = None;
            if toks.get(i).map(|t| &t.0) == Some(&Tok::Ident("as".into()))
                && let Some((Tok::Ident(a), _)) = toks.get(i + 1)
            {
                alias = Some(a.clone());
                i += 2;
            }
            out.push(UsePath { segments, alias });
            i
        }
        _ => {
            out.push(UsePath {
                segments: prefix,
                alias: None,
            });
            i
        }
    }
}

/// A module backed by a file, with what it refers to.
#[derive(Default)]
struct Module {
    file: PathBuf,
    /// Names imported here (`use`), to the absolute path they stand for (None: another crate's).
    imports: BTreeMap<String, Option<Vec<String>>>,
    /// Absolute paths this module refers to, with the line.
    refs: Vec<(Vec<String>, usize)>,
    /// `macro_rules!` defined here (an exported one is `crate::name`).
    macros: Vec<String>,
}

/// Every file module of the crate whose root is `root` (`lib.rs`), by module path.
fn read_crate(root: &Path) -> BTreeMap<Vec<String>, Module> {
    let mut modules = BTreeMap::new();
    read_module(root, Vec::new(), true, &mut modules);
    // `crate::m!` is the exported macro `m`, wherever it is defined.
    let macros: Vec<(String, Vec<String>)> = modules
        .iter()
        .flat_map(|(path, m)| {
            m.macros
                .iter()
                .map(move |name| (name.clone(), path.clone()))
        })
        .collect();
    let root = modules.get_mut(&Vec::new()).expect("the crate root");
    for (name, path) in macros {
        let mut target = path;
        target.push(name.clone());
        root.imports.entry(name).or_insert(Some(target));
    }
    modules
}

/// Walks the tokens of a file, keeping track of the inline module each is in
/// and leaving out `#[cfg(test)]` modules. `visit(i, inline)` sees every
/// other token (a `mod` too) and returns where to go on, or None for the
/// next token.
fn walk(toks: &[(Tok, usize)], mut visit: impl FnMut(usize, &[String]) -> Option<usize>) {
    let mut stack: Vec<(String, usize)> = Vec::new(); // inline modules open, with brace depth
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        if toks[i].0 == Tok::Ident("mod".into()) && after_cfg_test(toks, i) {
            i = match toks.get(i + 2).map(|t| &t.0) {
                Some(Tok::Punct('{')) => skip_block(toks, i + 2),
                _ => i + 1, // a test module's file is not read
            };
            continue;
        }
        let inline: Vec<String> = stack.iter().map(|s| s.0.clone()).collect();
        if let Some(next) = visit(i, &inline) {
            i = next;
            continue;
        }
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|s| s.1 == depth) {
                    stack.pop();
                }
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    stack.push((name.clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

fn read_module(
    file: &Path,
    path: Vec<String>,
    owns_dir: bool,
    modules: &mut BTreeMap<Vec<String>, Module>,
) {
    let src = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let toks = lex(&src);
    let dir = if owns_dir {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    // First pass: the submodules, file-backed (`mod x;`) or inline (`mod x { … }`).
    let mut children: Vec<(Vec<String>, String)> = Vec::new(); // (inline path, name)
    let mut child_files = Vec::new();
    walk(&toks, |i, inline| {
        if toks[i].0 != Tok::Ident("mod".into()) {
            return None;
        }
        if let (Some((Tok::Ident(name), _)), Some((next, _))) = (toks.get(i + 1), toks.get(i + 2)) {
            children.push((inline.to_vec(), name.clone()));
            if *next == Tok::Punct(';') {
                let mut d = dir.clone();
                d.extend(inline.iter());
                let flat = d.join(format!("{name}.rs"));
                let (f, owns) = if flat.exists() {
                    (flat, false)
                } else {
                    (d.join(name).join("mod.rs"), true)
                };
                let mut p = path.clone();
                p.extend(inline.iter().cloned());
                p.push(name.clone());
                child_files.push((f, p, owns));
            }
        }
        None
    });
    // Second pass: the references, resolved to absolute paths.
    let mut module = Module {
        file: file.to_path_buf(),
        ..Default::default()
    };
    walk(&toks, |i, inline| {
        let here: Vec<String> = path.iter().chain(inline).cloned().collect();
        let is_child = |name: &str| children.iter().any(|(p, n)| p == inline && n == name);
        let line = toks[i].1;
        match &toks[i].0 {
            Tok::Ident(m) if m == "macro_rules" => {
                if let Some((Tok::Ident(name), _)) = toks.get(i + 2) {
                    module.macros.push(name.clone());
                }
                None
            }
            Tok::Ident(u) if u == "use" => {
                let public = i > 0
                    && (toks[i - 1].0 == Tok::Ident("pub".into())
                        || (toks[i - 1].0 == Tok::Punct(')')
                            && toks[..i]
                                .iter()
                                .rev()
                                .position(|t| t.0 == Tok::Punct('('))
                                .is_some_and(|k| {
                                    i >= k + 3 && toks[i - k - 3].0 == Tok::Ident("pub".into())
                                })));
                let mut paths = Vec::new();
                let end = tree(&toks, i + 1, Vec::new(), &mut paths);
                for p in paths {
                    let abs = absolute(&here, &p.segments, &is_child);
                    if inline.is_empty()
                        && let Some(name) = p.alias.clone().or_else(|| p.segments.last().cloned())
                    {
                        module.imports.insert(name, abs.clone());
                    }
                    if let Some(abs) = abs
                        && !public
                    {
                        module.refs.push((abs, line));
                    }
                }
                Some(end)
            }
            Tok::Ident(first)
                if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path)
                    && (i == 0 || toks[i - 1].0 != Tok::Path)
                    && (first == "crate"
                        || first == "super"
                        || first == "self"
                        || is_child(first)) =>
            {
                let mut paths = Vec::new();
                let end = tree(&toks, i, Vec::new(), &mut paths);
                for p in paths {
                    if let Some(abs) = absolute(&here, &p.segments, &is_child) {
                        module.refs.push((abs, line));
                    }
                }
                Some(end.max(i + 1))
            }
            _ => None,
        }
    });
    modules.insert(path, module);
    for (f, p, owns) in child_files {
        read_module(&f, p, owns, modules);
    }
}

/// `segments` (as written in module `here`) as an absolute path, or None for another crate's.
fn absolute(
    here: &[String],
    segments: &[String],
    is_child: &dyn Fn(&str) -> bool,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if is_child(first) => {}
        _ => return None,
    }
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The file module an absolute path lands in, following imports and re-exports
/// (None: an item of another crate imported by that module).
fn resolve(modules: &BTreeMap<Vec<String>, Module>, path: &[String]) -> Option<Vec<String>> {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let n = (0..=path.len())
            .rev()
            .find(|&n| modules.contains_key(&path[..n]))
            .unwrap_or(0);
        let module = &modules[&path[..n]];
        match path.get(n).and_then(|name| module.imports.get(name)) {
            Some(None) => return None,
            Some(Some(target)) if *target != path => {
                let mut next = target.clone();
                next.extend(path[n + 1..].iter().cloned());
                path = next;
            }
            _ => return Some(path[..n].to_vec()),
        }
    }
    Some(path)
}

type Graph = BTreeMap<String, BTreeMap<String, String>>; // from → to → evidence

/// The graph between modules, each file module mapped by `node` (e.g. to its top-level module).
fn graph(
    modules: &BTreeMap<Vec<String>, Module>,
    src: &Path,
    node: impl Fn(&[String]) -> String,
) -> Graph {
    let mut g = Graph::new();
    for (path, module) in modules {
        let from = node(path);
        g.entry(from.clone()).or_default();
        for (target, line) in &module.refs {
            let Some(to) = resolve(modules, target).map(|m| node(&m)) else {
                continue;
            };
            if to != from {
                let file = module
                    .file
                    .strip_prefix(src)
                    .unwrap_or(&module.file)
                    .display();
                g.get_mut(&from)
                    .unwrap()
                    .entry(to)
                    .or_insert_with(|| format!("{file}:{line} `{}`", target.join("::")));
            }
        }
    }
    g
}

fn name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

/// One cycle of `g`, as its nodes in order, if there is one.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        n: &str,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.into(), 1);
        stack.push(n.into());
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap();
                    return Some(stack[start..].to_vec());
                }
                0 => {
                    if let Some(c) = visit(g, m, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.into(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n).copied().unwrap_or(0) == 0
            && let Some(c) = visit(g, n, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn describe(g: &Graph) -> String {
    let mut s = String::new();
    for (from, to) in g {
        let names: BTreeSet<&String> = to.keys().collect();
        s += &format!(
            "  {from} → {}\n",
            names.into_iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    s
}

fn assert_acyclic(what: &str, g: &Graph) {
    if let Some(cycle) = find_cycle(g) {
        let mut msg = format!(
            "{what}: import cycle {} → {}\n",
            cycle.join(" → "),
            cycle[0]
        );
        for (k, from) in cycle.iter().enumerate() {
            let to = &cycle[(k + 1) % cycle.len()];
            msg += &format!("  {from} → {to}: {}\n", g[from][to]);
        }
        panic!("{msg}the whole graph:\n{}", describe(g));
    }
    eprintln!("{what}: acyclic\n{}", describe(g));
}

fn crate_src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src")
}

/// The graph between the direct submodules of `parent` (each with its own
/// submodules), leaving out references to and from anything else.
fn siblings(modules: &BTreeMap<Vec<String>, Module>, src: &Path, parent: &[String]) -> Graph {
    let inside = |p: &[String]| p.len() > parent.len() && p.starts_with(parent);
    let mut g = graph(modules, src, |p| {
        if inside(p) {
            name(&p[..parent.len() + 1])
        } else {
            String::new()
        }
    });
    g.remove("");
    for to in g.values_mut() {
        to.remove("");
    }
    g
}

/// The crate's top-level modules (the root included) and, in every
/// directory, its files among themselves (a `mod.rs` and its files may use
/// one another: it is the directory's face).
fn check(dir: &str) {
    let src = crate_src(dir);
    let modules = read_crate(&src.join("lib.rs"));
    assert!(modules.len() > 1, "{}: no modules found", src.display());
    let g = graph(&modules, &src, |p| name(&p[..p.len().min(1)]));
    assert_acyclic(&format!("{dir}: top-level modules"), &g);
    for parent in modules.keys().filter(|p| !p.is_empty()) {
        let g = siblings(&modules, &src, parent);
        if g.len() > 1 {
            assert_acyclic(&format!("{dir}: the files of {}", name(parent)), &g);
        }
    }
}

#[test]
fn collector_modules_import_one_way() {
    check("collector");
}

#[test]
fn analyzer_modules_import_one_way() {
    check("analyzer");
}

#[test]
fn viewer_modules_import_one_way() {
    check("viewer");
}

#[test]
fn formats_modules_import_one_way() {
    check("formats");
}

/// The checker itself sees a cycle through a re-export, a `super::` path and a submodule path.
#[test]
fn a_cycle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("low")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod low;\nmod high;\n").unwrap();
    std::fs::write(src.join("low/mod.rs"), "mod slots;\npub use slots::Slot;\n").unwrap();
    std::fs::write(
        src.join("low/slots.rs"),
        "// crate::high::never (a comment)\nconst S: &str = \"crate::high::x\";\npub struct Slot;\nfn f() { super::super::high::run(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("high.rs"),
        "use crate::low::Slot;\npub fn run() {}\n",
    )
    .unwrap();
    let modules = read_crate(&src.join("lib.rs"));
    let top = graph(&modules, src, |p| name(&p[..p.len().min(1)]));
    assert_eq!(
        find_cycle(&top).map(|mut c| {
            c.sort();
            c
        }),
        Some(vec!["high".to_string(), "low".to_string()])
    );
    let files = graph(&modules, src, name);
    assert!(
        files["high"].contains_key("low::slots"),
        "{}",
        describe(&files)
    );
    assert!(
        !files["low::slots"].contains_key("crate"),
        "{}",
        describe(&files)
    );
    // Test code may use anything: a `#[cfg(test)]` module is not a reference.
    std::fs::write(
        src.join("low/slots.rs"),
        "pub struct Slot;\n#[cfg(test)]\nmod tests {\n    fn t() { crate::high::run(); }\n}\n#[cfg(test)]\nmod more;\n",
    )
    .unwrap();
    let modules = read_crate(&src.join("lib.rs"));
    assert_eq!(find_cycle(&graph(&modules, src, name)), None);
    // Without the call up, no cycle: comments and strings are not references.
    std::fs::write(
        src.join("low/slots.rs"),
        "// crate::high::never\nconst S: &str = \"crate::high::x\";\npub struct Slot;\n",
    )
    .unwrap();
    let modules = read_crate(&src.join("lib.rs"));
    assert_eq!(find_cycle(&graph(&modules, src, name)), None);
}

//! The README's table of `HYSCOPE_*` variables is the settings table
//! (`hyscope_format::settings::ALL`), row for row and in the same order.

use hyscope_format::settings::ALL;

#[test]
fn readme_table_is_the_settings_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let heading = "## `hyscope record` options and `HYSCOPE_*` variables";
    let section = &readme[readme.find(heading).expect("the settings section") + heading.len()..];
    // The table: the first run of lines starting with `|`; its rows that name a variable.
    let rows: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| {
            // The second column; `\|` inside a cell separates no columns.
            let cells = l.replace("\\|", "");
            cells
                .split('|')
                .nth(2)
                .is_some_and(|c| c.trim().starts_with("`HYSCOPE_"))
        })
        .collect();
    let expected: Vec<String> = ALL.iter().map(|s| s.markdown_row()).collect();
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(rows.get(i).copied(), Some(want.as_str()), "README row {i}");
    }
    assert_eq!(rows.len(), expected.len(), "README rows: {rows:#?}");
}

#[test]
fn every_variable_named_once() {
    let mut vars: Vec<&str> = ALL.iter().map(|s| s.var).collect();
    vars.sort();
    let n = vars.len();
    vars.dedup();
    assert_eq!(vars.len(), n);
    assert!(vars.iter().all(|v| v.starts_with("HYSCOPE_")));
}

/// Every `HYSCOPE_*` name the programs' sources mention is a setting of the table.
#[test]
fn every_variable_the_sources_read_is_in_the_table() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut unknown = Vec::new();
    let mut dirs: Vec<std::path::PathBuf> =
        ["formats", "ompt-tool", "collector", "analyzer", "viewer"]
            .iter()
            .map(|c| root.join(c).join("src"))
            .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("HYSCOPE_") {
                let name: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                // `HYSCOPE_` alone is the prefix; `HYSCOPE_*` names them all.
                if name.len() > "HYSCOPE_".len() && !ALL.iter().any(|s| s.var == name) {
                    unknown.push(format!("{}: {name}", path.display()));
                }
            }
        }
    }
    assert!(unknown.is_empty(), "not in settings::ALL: {unknown:#?}");
}

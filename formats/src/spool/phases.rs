//! The phases' spool: a line journal the collector appends finished phase
//! intervals to while the application runs, encoded into the `phases`
//! table's Parquet part when the process ends (or by `hyscope record` for a
//! process that was killed).
//!
//! Phases are user annotations (a few per time step at most), so they do not
//! need the binary frame codec of [`crate::spool`]: a text journal is as
//! crash-proof (every complete line is a complete row) and readable with
//! `cat`. File `spool/phases-rank<r>-pid<p>.txt`:
//!
//! ```text
//! hyscope-phases 1
//! N <id> <name>                                                  a phase name, interned once
//! P <thread> <id> <start_ns> <end_ns> <depth> <source> <iteration>  one phase interval
//! ```
//!
//! Names are escaped (`\\` and `\n`) so a line is a line. A name line comes
//! before the first row that uses it. A last line without its newline was
//! cut by the end of the process and is ignored (reported as truncated).

use std::io::Write;
use std::path::Path;

use crate::error::FormatError;
use crate::schema::{PhaseRecord, Table};
use crate::writer::{PartWriter, WriterOptions};

/// First line of a journal.
pub const HEADER: &str = "hyscope-phases 1";

/// The journal's name in `spool/`.
pub fn journal_file_name(rank: u32, pid: u32) -> String {
    format!("phases-rank{rank}-pid{pid}.txt")
}

/// A phase interval as the collector holds it: its name interned as an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PhaseRow {
    pub thread: u32,
    pub name: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub depth: u32,
    pub source: u8,
    pub iteration: i64,
}

fn escape(name: &str) -> String {
    name.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The journal text for new names (`(id, name)`) and rows, appended as one
/// write: the names first, so every row's name precedes it.
pub fn encode(new_names: &[(u32, &str)], rows: &[PhaseRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(new_names.len() * 24 + rows.len() * 64);
    for (id, name) in new_names {
        let _ = writeln!(out, "N {id} {}", escape(name));
    }
    for r in rows {
        let _ = writeln!(
            out,
            "P {} {} {} {} {} {} {}",
            r.thread, r.name, r.start_ns, r.end_ns, r.depth, r.source, r.iteration
        );
    }
    out
}

/// What [`read`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Journal {
    pub rows: Vec<PhaseRecord>,
    /// The last line was cut (the process ended while writing it).
    pub truncated: bool,
    /// Lines that were not understood (skipped), e.g. `line 7: ...`.
    pub bad_lines: Vec<String>,
}

/// Parse a journal's text.
pub fn parse(text: &str) -> Journal {
    let mut journal = Journal::default();
    let mut names: std::collections::HashMap<u32, String> = Default::default();
    let (complete, truncated) = super::complete_lines(text);
    journal.truncated = truncated;
    for (i, line) in complete.lines().enumerate() {
        if i == 0 && line == HEADER {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}", i + 1);
        if let Some(rest) = line.strip_prefix("N ") {
            match rest
                .split_once(' ')
                .and_then(|(id, n)| Some((id.parse().ok()?, n)))
            {
                Some((id, name)) => {
                    names.insert(id, unescape(name));
                }
                None => journal.bad_lines.push(bad("a name line without id")),
            }
        } else if let Some(rest) = line.strip_prefix("P ") {
            let f: Vec<i64> = rest.split(' ').filter_map(|v| v.parse().ok()).collect();
            let row = (f.len() == 7)
                .then(|| {
                    Some(PhaseRecord {
                        thread: u32::try_from(f[0]).ok()?,
                        name: names.get(&u32::try_from(f[1]).ok()?)?.clone(),
                        start_ns: f[2],
                        end_ns: f[3],
                        depth: u32::try_from(f[4]).ok()?,
                        source: u8::try_from(f[5]).ok()?,
                        iteration: f[6],
                    })
                })
                .flatten();
            match row {
                Some(r) if r.end_ns >= r.start_ns => journal.rows.push(r),
                _ => journal
                    .bad_lines
                    .push(bad("a phase row with bad fields or an unknown name")),
            }
        } else {
            journal.bad_lines.push(bad("not a journal line"));
        }
    }
    journal
}

/// Encode the journal at `path` into a `phases` part of `rank` in
/// `trace_dir` (rows sorted by thread and start) and return what was read.
/// The journal is left in place; the caller removes it.
pub fn journal_to_part(
    path: &Path,
    trace_dir: &Path,
    rank: u32,
    layout: crate::layout::Layout,
) -> Result<Journal, FormatError> {
    let text = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let mut journal = parse(&String::from_utf8_lossy(&text));
    if !journal.rows.is_empty() {
        crate::schema::sort_phases(&mut journal.rows);
        let options = WriterOptions {
            layout,
            ..WriterOptions::default()
        };
        let mut w = PartWriter::create(trace_dir, Table::Phases, rank, options)?;
        w.write_records(&journal.rows)?;
        w.finish()?;
    }
    Ok(journal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_cut_line() {
        let rows = [
            PhaseRow {
                thread: 0,
                name: 0,
                start_ns: 10,
                end_ns: 90,
                depth: 0,
                source: 1,
                iteration: -1,
            },
            PhaseRow {
                thread: 1,
                name: 1,
                start_ns: 20,
                end_ns: 30,
                depth: 1,
                source: 2,
                iteration: 7,
            },
        ];
        let mut text = format!("{HEADER}\n").into_bytes();
        text.extend(encode(&[(0, "solve"), (1, "a\\b\nc d")], &rows));
        text.extend(b"P 0 0 1");
        let j = parse(std::str::from_utf8(&text).unwrap());
        assert!(j.truncated);
        assert!(j.bad_lines.is_empty(), "{:?}", j.bad_lines);
        assert_eq!(j.rows.len(), 2);
        assert_eq!(j.rows[0].name, "solve");
        assert_eq!(j.rows[1].name, "a\\b\nc d");
        assert_eq!((j.rows[1].depth, j.rows[1].iteration), (1, 7));
        let j = parse("hyscope-phases 1\nP 0 9 1 2 0 1 -1\nX\n");
        assert_eq!(j.rows.len(), 0);
        assert_eq!(j.bad_lines.len(), 2);
    }
}

//! The report's text building blocks: section titles, aligned tables, the
//! "not observable" line and counts.

use std::fmt::Write as _;

use hyscope_analyzer::Observable;

pub use crate::units::count;

/// A text table: the first column left-aligned, the others right-aligned.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    pub fn render(&self, out: &mut String) {
        let n = self.header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &[String], out: &mut String| {
            let mut s = String::from("  ");
            for (i, wi) in w.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = wi.saturating_sub(c.chars().count());
                if i == 0 {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str("  ");
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.header, out);
        let total: usize = w.iter().sum::<usize>() + 2 * (n - 1);
        out.push_str(&format!("  {}\n", "─".repeat(total)));
        for r in &self.rows {
            line(r, out);
        }
    }
}

pub fn section(out: &mut String, title: &str) {
    let _ = write!(out, "\n{title}\n{}\n", "═".repeat(title.chars().count()));
}

/// A section's title, then its value, or the line saying why it is not
/// observable (and `None`).
pub fn observed_section<'a, T>(
    out: &mut String,
    title: &str,
    o: &'a Observable<T>,
) -> Option<&'a T> {
    section(out, title);
    if not_obs(out, o) { None } else { o.get() }
}

fn not_obs<T>(out: &mut String, o: &Observable<T>) -> bool {
    if let Some(r) = o.reason() {
        let _ = writeln!(out, "  not observable: {r}");
        true
    } else {
        false
    }
}

//! The samples' spool (`spool/samples-rank<r>-pid<p>.spool`): sampled metric
//! values appended as they are taken, so that the samples of a process that
//! dies are in the trace like its events ([`crate::spool::to_parquet`] encodes it with
//! the others). Samples are few (a handful of metrics per tick), so the spool
//! is plain text, one value per line: `<time_ns> <key> <value> <metric>`. A
//! line the process could not finish (killed while writing) is dropped.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::FormatError;
use crate::schema::{SampleRecord, Table};
use crate::writer::{PartWriter, WriterOptions};

/// An open samples spool.
pub struct SampleSpool {
    file: std::fs::File,
    path: PathBuf,
    rows: u64,
    line: String,
}

impl SampleSpool {
    /// Create (or truncate) the spool at `path`.
    pub fn create(path: &Path) -> Result<SampleSpool, FormatError> {
        let file = std::fs::File::create(path).map_err(|e| FormatError::io(path, e))?;
        Ok(SampleSpool {
            file,
            path: path.to_path_buf(),
            rows: 0,
            line: String::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows appended so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Append rows: one `write` for the batch, so a kill loses at most the
    /// line it cuts.
    pub fn append(&mut self, rows: &[SampleRecord]) -> Result<(), FormatError> {
        use std::fmt::Write as _;
        self.line.clear();
        for r in rows {
            let metric: String = r
                .metric
                .chars()
                .map(|c| if c == '\n' { ' ' } else { c })
                .collect();
            let _ = writeln!(self.line, "{} {} {} {metric}", r.time_ns, r.key, r.value);
        }
        self.file
            .write_all(self.line.as_bytes())
            .map_err(|e| FormatError::io(&self.path, e))?;
        self.rows += rows.len() as u64;
        Ok(())
    }
}

/// The rows of a samples spool, and whether its last line was cut short.
pub fn read(path: &Path) -> Result<(Vec<SampleRecord>, bool), FormatError> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let (complete, truncated) = super::complete_lines(&text);
    let mut rows = Vec::new();
    for (n, line) in complete.lines().enumerate() {
        let mut f = line.splitn(4, ' ');
        let row = (|| {
            Some(SampleRecord {
                time_ns: f.next()?.parse().ok()?,
                key: f.next()?.parse().ok()?,
                value: f.next()?.parse().ok()?,
                metric: f.next()?.to_string(),
            })
        })();
        match row {
            Some(r) => rows.push(r),
            None => {
                return Err(FormatError::Invalid {
                    path: path.to_path_buf(),
                    message: format!("line {} is not a sample (`{line}`)", n + 1),
                });
            }
        }
    }
    Ok((rows, truncated))
}

/// Encode a samples spool into one part of the `samples` table for `rank`;
/// the rows encoded and whether the last line was cut short. The spool is
/// left in place (the caller removes it).
pub fn to_part(
    path: &Path,
    trace_dir: &Path,
    rank: u32,
    options: WriterOptions,
) -> Result<(u64, bool), FormatError> {
    let (rows, truncated) = read(path)?;
    if !rows.is_empty() {
        let mut w = PartWriter::create(trace_dir, Table::Samples, rank, options)?;
        w.write_records(&rows)?;
        w.finish()?;
    }
    Ok((rows.len() as u64, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: i64, metric: &str, key: i64, value: f64) -> SampleRecord {
        SampleRecord {
            time_ns: t,
            metric: metric.into(),
            key,
            value,
        }
    }

    #[test]
    fn rows_come_back_exactly_and_a_cut_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.spool");
        let rows = vec![
            row(1, "mem.vmrss", -1, 123456789.0),
            row(-5, "energy.pkg.0", 3, 0.1 + 0.2),
            row(i64::MAX, "odd metric name", i64::MIN, f64::INFINITY),
            row(7, "x", 0, 1e-300),
        ];
        let mut s = SampleSpool::create(&path).unwrap();
        s.append(&rows[..2]).unwrap();
        s.append(&rows[2..]).unwrap();
        assert_eq!(s.rows(), 4);
        let (back, truncated) = read(&path).unwrap();
        assert_eq!(back, rows);
        assert!(!truncated);
        // Killed in the middle of a line.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"99 -1 4.5 mem.v").unwrap();
        let (back, truncated) = read(&path).unwrap();
        assert_eq!(back, rows);
        assert!(truncated);
    }

    #[test]
    fn a_damaged_line_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.spool");
        std::fs::write(&path, "1 -1 2.0 a\nnot a sample\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("s.spool") && e.contains("line 2"), "{e}");
    }
}

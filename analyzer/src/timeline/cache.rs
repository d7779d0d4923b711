//! An on-disk cache of built indexes, so that reopening a large trace shows its
//! timeline at once (the build reads every event; the cache is ~5 bytes per
//! segment and loads at disk speed).
//!
//! The cache file lives in `$HYSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hyscope`,
//! else `~/.cache/hyscope`. Its name hashes the trace's canonical path; inside,
//! a key lists every part file (path, size, modification time) of the `omp`
//! and `mpi` tables plus the manifest's clock offsets, and the cache is used
//! only when the key matches exactly. Any problem reading it means a rebuild.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hyscope_format::schema::Table;
use hyscope_format::{FormatError, Trace};

use super::{Block, RowData, RowInfo, STATES, TimelineIndex};

const MAGIC: &[u8; 8] = b"HYTLIDX1";

/// The directory holding cached indexes.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("HYSCOPE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("hyscope"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("hyscope"))
}

/// What the cached index was built from.
fn key(trace: &Trace) -> String {
    let mut k = format!(
        "{}\n",
        std::fs::canonicalize(&trace.dir)
            .unwrap_or_else(|_| trace.dir.clone())
            .display()
    );
    for table in [Table::Omp, Table::Mpi] {
        for p in trace.parts(table) {
            let mtime = std::fs::metadata(&p.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            k.push_str(&format!("{} {} {mtime}\n", p.path.display(), p.bytes));
        }
    }
    for r in &trace.manifest.ranks {
        k.push_str(&format!(
            "rank {} {} {:?}\n",
            r.rank,
            r.host,
            r.clock_offsets.first().map(|o| o.offset_ns)
        ));
    }
    k
}

fn cache_file(trace: &Trace) -> Option<PathBuf> {
    let dir = cache_dir()?;
    let canonical = std::fs::canonicalize(&trace.dir).unwrap_or_else(|_| trace.dir.clone());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical.hash(&mut h);
    Some(dir.join(format!("timeline-{:016x}.idx", h.finish())))
}

impl TimelineIndex {
    /// Load the cached index of `trace` if it is up to date, else build it
    /// (with `progress`) and try to cache it. Returns the index and whether it
    /// came from the cache. A cache that cannot be written is not an error.
    pub fn open_cached(
        trace: &Trace,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<(TimelineIndex, bool), FormatError> {
        let file = cache_file(trace);
        let key = key(trace);
        if let Some(f) = &file
            && let Ok(index) = load(trace, f, &key)
        {
            return Ok((index, true));
        }
        let index = TimelineIndex::build_with_progress(trace, progress)?;
        if let Some(f) = &file {
            let _ = save(&index, f, &key);
        }
        Ok((index, false))
    }
}

fn put_u64(w: &mut impl Write, v: u64) -> std::io::Result<()> {
    w.write_all(&v.to_le_bytes())
}

fn put_bytes(w: &mut impl Write, b: &[u8]) -> std::io::Result<()> {
    put_u64(w, b.len() as u64)?;
    w.write_all(b)
}

pub(super) fn save(index: &TimelineIndex, path: &Path, key: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        w.write_all(MAGIC)?;
        put_bytes(&mut w, key.as_bytes())?;
        put_u64(&mut w, index.rows.len() as u64)?;
        for (info, d) in index.rows.iter().zip(&index.data) {
            put_u64(&mut w, u64::from(info.rank))?;
            put_u64(&mut w, u64::from(info.thread))?;
            put_bytes(&mut w, info.host.as_bytes())?;
            put_u64(&mut w, info.shift_ns as u64)?;
            put_u64(&mut w, d.end as u64)?;
            put_u64(&mut w, d.blocks.len() as u64)?;
            let mut buf = Vec::with_capacity(d.blocks.len() * (12 + 8 * STATES));
            for b in &d.blocks {
                buf.extend_from_slice(&b.base.to_le_bytes());
                buf.extend_from_slice(&b.first.to_le_bytes());
                for c in b.cum {
                    buf.extend_from_slice(&c.to_le_bytes());
                }
            }
            w.write_all(&buf)?;
            put_u64(&mut w, d.packed.len() as u64)?;
            for chunk in d.packed.chunks(1 << 16) {
                let bytes: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
                w.write_all(&bytes)?;
            }
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, path)
}

/// Reads little-endian values from a byte slice, failing on truncation.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> std::io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "truncated cache",
            ));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> std::io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn len(&mut self, item: usize) -> std::io::Result<usize> {
        let n = self.u64()? as usize;
        if n.checked_mul(item).is_none_or(|b| b > self.0.len()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "bad length",
            ));
        }
        Ok(n)
    }
}

pub(super) fn load(trace: &Trace, path: &Path, key: &str) -> std::io::Result<TimelineIndex> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let mut c = Cursor(&bytes);
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    if c.take(8)? != MAGIC {
        return Err(bad("not a timeline cache"));
    }
    let n = c.len(1)?;
    if c.take(n)? != key.as_bytes() {
        return Err(bad("stale cache"));
    }
    let rows_n = c.u64()? as usize;
    let mut rows = Vec::new();
    let mut data = Vec::new();
    for _ in 0..rows_n {
        let rank = c.u64()? as u32;
        let thread = c.u64()? as u32;
        let n = c.len(1)?;
        let host = String::from_utf8_lossy(c.take(n)?).into_owned();
        let shift_ns = c.u64()? as i64;
        let end = c.u64()? as i64;
        let nb = c.len(12 + 8 * STATES)?;
        let raw = c.take(nb * (12 + 8 * STATES))?;
        let blocks = raw
            .chunks_exact(12 + 8 * STATES)
            .map(|b| {
                let mut cum = [0u64; STATES];
                for (s, v) in cum.iter_mut().enumerate() {
                    *v = u64::from_le_bytes(b[12 + 8 * s..20 + 8 * s].try_into().expect("8"));
                }
                Block {
                    base: i64::from_le_bytes(b[0..8].try_into().expect("8")),
                    first: u32::from_le_bytes(b[8..12].try_into().expect("4")),
                    cum,
                }
            })
            .collect::<Vec<_>>();
        let np = c.len(4)?;
        let packed: Vec<u32> = c
            .take(np * 4)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
            .collect();
        // The structure the queries rely on: blocks in order, indices in range.
        let ok = blocks
            .windows(2)
            .all(|w| w[0].base <= w[1].base && w[0].first < w[1].first)
            && blocks
                .last()
                .is_none_or(|b| (b.first as usize) < packed.len())
            && blocks.first().is_none_or(|b| b.first == 0);
        if !ok {
            return Err(bad("inconsistent cache"));
        }
        rows.push(RowInfo {
            rank,
            thread,
            host,
            shift_ns,
        });
        data.push(RowData::new(blocks, packed, end));
    }
    Ok(TimelineIndex::from_parts(trace, rows, data))
}

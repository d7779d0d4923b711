//! An on-disk cache of built indexes, so that reopening a large trace shows its
//! timeline at once (the build reads every event; the cache is ~5 bytes per
//! segment and loads at disk speed).
//!
//! The cache file lives in `$HYSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hyscope`,
//! else `~/.cache/hyscope`. Its name hashes the trace's canonical path; inside,
//! a key lists every part file (path, size, modification time) of the `omp`,
//! `mpi` and `samples` tables (a damaged part of any leaves its rank out,
//! [`crate::damaged_parts::RANK_TABLES`]) plus each rank's clock map (the
//! offsets as mapped), and the cache is used only when the key matches
//! exactly. Any problem reading it means a rebuild. An index with ranks left
//! out is not cached: it is built again at each open. The key cannot see a
//! part that rotted in place (a flipped bit, its size and modification time
//! kept): before a cache is used, every part's checksums are verified
//! ([`crate::damaged_parts::check_ranks`], in `progressive`), and a damaged
//! one makes both caches stale.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use hyscope_format::Trace;

use super::{Block, RowData, RowInfo, STATES, TimelineIndex};

/// The file format and what the index means: bumped whenever either changes,
/// so that older caches are rebuilt (2: barriers split by the team's arrivals).
const MAGIC: &[u8; 8] = b"HYTLIDX3";

/// The directory holding cached indexes.
pub fn cache_dir() -> Option<PathBuf> {
    if let (Some(d), _) = hyscope_format::settings::CACHE_DIR.from_env() {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("hyscope"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("hyscope"))
}

/// What the cached index was built from.
pub(super) fn key(trace: &Trace) -> String {
    let mut k = format!(
        "{}\n",
        std::fs::canonicalize(&trace.dir)
            .unwrap_or_else(|_| trace.dir.clone())
            .display()
    );
    // The samples too: a damaged part of theirs leaves the rank out.
    for table in crate::damaged_parts::RANK_TABLES {
        for p in trace.parts(table) {
            let mtime = std::fs::metadata(&p.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            k.push_str(&format!("{} {} {mtime}\n", p.path.display(), p.bytes));
        }
    }
    // The clock map itself, not only the offsets measured: the index holds
    // global times, which change with the offsets and with how they are
    // mapped (a new rule rebuilds the caches built under the old one).
    for r in &trace.manifest.ranks {
        k.push_str(&format!("rank {} {}", r.rank, r.host));
        let map = crate::aligned::clock::ClockMap::new(&r.clock_offsets);
        if !map.is_identity() {
            for p in map.points() {
                k.push_str(&format!(" {}@{}", p.offset_ns, p.local_ns));
            }
        }
        k.push('\n');
    }
    k
}

/// The cache file of `trace` with extension `ext` (`idx`: the index,
/// `overview`: its coarse overview).
pub(super) fn cache_file(trace: &Trace, ext: &str) -> Option<PathBuf> {
    Some(cache_file_in(&cache_dir()?, trace, ext))
}

/// [`cache_file`] in the cache directory `dir`.
pub(super) fn cache_file_in(dir: &Path, trace: &Trace, ext: &str) -> PathBuf {
    let canonical = std::fs::canonicalize(&trace.dir).unwrap_or_else(|_| trace.dir.clone());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical.hash(&mut h);
    dir.join(format!("timeline-{:016x}.{ext}", h.finish()))
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

const BLOCK_BYTES: usize = 12 + 8 * STATES;

fn bad(m: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string())
}

fn get_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// A length read from the file, checked against what is left of it.
fn get_len(r: &mut impl Read, item: u64, left: u64) -> std::io::Result<u64> {
    let n = get_u64(r)?;
    if n.checked_mul(item).is_none_or(|b| b > left) {
        return Err(bad("bad length"));
    }
    Ok(n)
}

/// Where a row's arrays are in the file.
struct RowMeta {
    info: RowInfo,
    end: i64,
    blocks_at: u64,
    blocks: u64,
    packed_at: u64,
    packed: u64,
}

/// Load in two passes: the row headers (seeking over the arrays), then the
/// rows' arrays in parallel, each through its own file handle. Memory stays at
/// the index plus one read buffer per thread.
pub(super) fn load(trace: &Trace, path: &Path, key: &str) -> std::io::Result<TimelineIndex> {
    use std::io::{Seek, SeekFrom};
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut r = std::io::BufReader::new(file);
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(bad("not a timeline cache"));
    }
    let n = get_len(&mut r, 1, size)? as usize;
    let mut k = vec![0u8; n];
    r.read_exact(&mut k)?;
    if k != key.as_bytes() {
        return Err(bad("stale cache"));
    }
    let rows_n = get_len(&mut r, 8, size)?;
    let mut metas = Vec::new();
    for _ in 0..rows_n {
        let rank = get_u64(&mut r)? as u32;
        let thread = get_u64(&mut r)? as u32;
        let n = get_len(&mut r, 1, size)? as usize;
        let mut host = vec![0u8; n];
        r.read_exact(&mut host)?;
        let end = get_u64(&mut r)? as i64;
        let blocks = get_len(&mut r, BLOCK_BYTES as u64, size)?;
        let blocks_at = r.stream_position()?;
        r.seek(SeekFrom::Current((blocks * BLOCK_BYTES as u64) as i64))?;
        let packed = get_len(&mut r, 4, size)?;
        let packed_at = r.stream_position()?;
        if packed_at + packed * 4 > size {
            return Err(bad("truncated cache"));
        }
        r.seek(SeekFrom::Current((packed * 4) as i64))?;
        metas.push(RowMeta {
            info: RowInfo {
                rank,
                thread,
                host: String::from_utf8_lossy(&host).into_owned(),
            },
            end,
            blocks_at,
            blocks,
            packed_at,
            packed,
        });
    }
    if r.stream_position()? != size {
        return Err(bad("trailing bytes in cache"));
    }
    use rayon::prelude::*;
    let data: Vec<RowData> = metas
        .par_iter()
        .map(|m| load_row(path, m))
        .collect::<std::io::Result<_>>()?;
    let rows = metas.into_iter().map(|m| m.info).zip(data).collect();
    Ok(TimelineIndex::from_parts(trace, rows, Vec::new()))
}

fn load_row(path: &Path, m: &RowMeta) -> std::io::Result<RowData> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(m.blocks_at))?;
    let mut raw = vec![0u8; m.blocks as usize * BLOCK_BYTES];
    f.read_exact(&mut raw)?;
    let blocks: Vec<Block> = raw
        .chunks_exact(BLOCK_BYTES)
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
        .collect();
    drop(raw);
    f.seek(SeekFrom::Start(m.packed_at))?;
    let mut packed: Vec<u32> = Vec::with_capacity(m.packed as usize);
    let mut buf = vec![0u8; 4 << 20];
    let mut left = m.packed as usize * 4;
    while left > 0 {
        let n = left.min(buf.len());
        f.read_exact(&mut buf[..n])?;
        packed.extend(
            buf[..n]
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4"))),
        );
        left -= n;
    }
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
    Ok(RowData::new(blocks, packed, m.end))
}

//! Code addresses → module, function, file:line, for the `symbols` table.
//!
//! At exit (when the module map is final) we read `/proc/self/maps`, find the
//! module of every distinct address the trace holds and resolve it with DWARF
//! through `addr2line`. OMPT code pointers are return addresses, so the line
//! is looked up at `address - 1` (the call instruction), while the row keeps
//! the address as recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use hyscope_format::schema::{SymbolRecord, Table};
use hyscope_format::writer::{PartWriter, WriterOptions};

use crate::events::{self, lock};
use crate::session;

/// Addresses already written (finish may run more than once).
static DONE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// One file-backed mapping of `/proc/self/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub path: String,
}

/// File-backed mappings of a maps file's text.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let range = f.next()?;
            let _perms = f.next()?;
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            let _dev = f.next()?;
            let _inode = f.next()?;
            let path = f.collect::<Vec<_>>().join(" ");
            if !path.starts_with('/') {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset,
                path,
            })
        })
        .collect()
}

/// Resolve addresses of this process against its current module map.
pub fn resolve(addresses: &[u64]) -> Vec<SymbolRecord> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    resolve_with_maps(addresses, &parse_maps(&maps))
}

/// Resolve addresses against a module map (addresses outside every module get a row
/// with an empty module and no source).
pub fn resolve_with_maps(addresses: &[u64], maps: &[Mapping]) -> Vec<SymbolRecord> {
    // Group the addresses by module so each file is loaded once.
    let mut by_module: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut out = Vec::new();
    for &a in addresses {
        match maps.iter().find(|m| a >= m.start && a < m.end) {
            Some(m) => by_module.entry(m.path.as_str()).or_default().push(a),
            None => out.push(SymbolRecord {
                address: a,
                module: String::new(),
                function: None,
                file: None,
                line: None,
            }),
        }
    }
    for (module, addrs) in by_module {
        // Load bias: shared objects and PIEs are linked at 0 and mapped at the start
        // of their offset-0 mapping; fixed-address executables (ET_EXEC) have none.
        let bias = if elf_is_exec(Path::new(module)) {
            0
        } else {
            maps.iter()
                .filter(|m| m.path == module)
                .map(|m| m.start - m.offset)
                .min()
                .unwrap_or(0)
        };
        let loader = addr2line::Loader::new(module).ok();
        for a in addrs {
            let mut rec = SymbolRecord {
                address: a,
                module: module.to_string(),
                function: None,
                file: None,
                line: None,
            };
            if let Some(loader) = &loader {
                let probe = a.wrapping_sub(bias).wrapping_sub(1);
                if let Ok(mut frames) = loader.find_frames(probe) {
                    // The innermost frame is first; its location is the line of the call.
                    while let Ok(Some(frame)) = frames.next() {
                        if rec.function.is_none() {
                            rec.function = frame
                                .function
                                .as_ref()
                                .and_then(|f| f.raw_name().ok().map(|n| n.into_owned()));
                        }
                        if rec.file.is_none()
                            && let Some(loc) = &frame.location
                        {
                            rec.file = loc.file.map(str::to_string);
                            rec.line = loc.line;
                        }
                        if rec.function.is_some() && rec.file.is_some() {
                            break;
                        }
                    }
                }
                if rec.function.is_none() {
                    rec.function = loader.find_symbol(probe).map(str::to_string);
                }
            }
            out.push(rec);
        }
    }
    out.sort_by_key(|r| r.address);
    out
}

fn elf_is_exec(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 18];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|_| {
            &header[..4] == b"\x7fELF" && u16::from_le_bytes([header[16], header[17]]) == 2
        })
}

/// Resolve the addresses seen since the last call and append them to the `symbols` table.
pub(crate) fn write_new(dir: &Path, rank: u32) {
    let new: Vec<u64> = {
        let done = lock(&DONE);
        events::seen_addresses()
            .into_iter()
            .filter(|a| !done.contains(a))
            .collect()
    };
    if new.is_empty() {
        return;
    }
    let rows = resolve(&new);
    let result = PartWriter::create(dir, Table::Symbols, rank, WriterOptions::default()).and_then(
        |mut w| {
            w.write_records(&rows)?;
            w.finish()
        },
    );
    match result {
        Ok(_) => lock(&DONE).extend(new),
        Err(e) => session::warn(&format!("cannot write the symbols table ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_maps_lines() {
        let text = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/app
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/app
7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 2);
        assert_eq!(maps[1].start, 0x55d0c0a01000);
        assert_eq!(maps[1].offset, 0x1000);
        assert_eq!(maps[1].path, "/usr/bin/app");
    }

    #[inline(never)]
    fn marker() -> u64 {
        // A return address inside this test's own code.
        marker as *const () as usize as u64 + 1
    }

    #[test]
    fn resolves_an_address_of_this_test_binary() {
        let addr = marker();
        let rows = resolve(&[addr, 8]);
        assert_eq!(rows.len(), 2);
        let unknown = rows.iter().find(|r| r.address == 8).unwrap();
        assert_eq!(unknown.module, "");
        let row = rows.iter().find(|r| r.address == addr).unwrap();
        assert!(row.module.contains("hyscope"), "{row:?}");
        assert!(
            row.function.as_deref().unwrap_or("").contains("marker"),
            "{row:?}"
        );
        assert!(
            row.file.as_deref().unwrap_or("").ends_with("symbols.rs"),
            "{row:?}"
        );
    }
}

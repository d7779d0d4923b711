//! Code addresses → module, function, file:line (the `symbols` table), from
//! a process's module map (`/proc/<pid>/maps` text) and the modules' DWARF
//! through `addr2line`. The collector resolves at exit against its own map;
//! `hyscope record` resolves the addresses of a process that died before
//! that against the map it recorded early. OMPT code pointers are return
//! addresses, so the line is looked up at `address - 1` (the call
//! instruction), while the row keeps the address as recorded.

use std::collections::BTreeMap;
use std::path::Path;

use crate::schema::SymbolRecord;

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

//! Code addresses → module, function, file:line (the `symbols` table), from
//! a process's module map (`/proc/<pid>/maps` text) and the modules' DWARF
//! through `addr2line`. The collector resolves at exit against its own map;
//! `hyscope record` resolves the addresses of a process that died before
//! that against the map it recorded early. OMPT code pointers are return
//! addresses, so the line is looked up at `address - 1` (the call
//! instruction), while the row keeps the address as recorded, and its
//! `module_offset` the same return address in the module's link-time layout
//! (the address less the module's load bias), and its `module_build_id` the
//! module's GNU build-id (both from the module's headers, [`crate::elf`]).
//! A live process also gives each module as its loader mapped it
//! ([`LoadedImage`]): then the load bias and the build-id are those of the
//! image that ran, not of whatever file is at the path by the time of the
//! exit (a binary replaced on disk during the run, by a rebuild or an
//! installation, is another file, and its path in the map then ends in
//! ` (deleted)`).

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

/// A module as the dynamic loader of a live process mapped it: the address
/// ranges of its loadable segments, its load bias (`dlpi_addr`) and the
/// build-id of the note segments mapped with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedImage {
    pub ranges: Vec<std::ops::Range<u64>>,
    pub bias: u64,
    pub build_id: Option<String>,
}

/// Resolve addresses against a module map (addresses outside every module get a row
/// with an empty module and no source), every module's bias and build-id
/// read from its file's headers: for a process that is gone (`hyscope
/// record` resolving what a dead rank left).
pub fn resolve_with_maps(addresses: &[u64], maps: &[Mapping]) -> Vec<SymbolRecord> {
    resolve_with_images(addresses, maps, &[])
}

/// [`resolve_with_maps`] for a live process, with the `images` its loader
/// mapped: a module holding an address of one of them takes that image's
/// bias and build-id; only a module not among them (mapped some other way
/// than by the loader) is read from its file.
pub fn resolve_with_images(
    addresses: &[u64],
    maps: &[Mapping],
    images: &[LoadedImage],
) -> Vec<SymbolRecord> {
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
                module_offset: None,
                module_build_id: None,
            }),
        }
    }
    for (module, addrs) in by_module {
        let image = images
            .iter()
            .find(|i| i.ranges.iter().any(|r| r.contains(&addrs[0])));
        let (bias, build_id) = match image {
            Some(image) => (image.bias, image.build_id.clone()),
            None => file_bias_and_build_id(module, maps),
        };
        let loader = addr2line::Loader::new(module).ok();
        for a in addrs {
            // The address in the module's link-time layout: the same for the
            // same code in every process of one binary, whatever ASLR did.
            let offset = a.wrapping_sub(bias);
            let mut rec = SymbolRecord {
                address: a,
                module: module.to_string(),
                function: None,
                file: None,
                line: None,
                module_offset: Some(offset),
                module_build_id: build_id.clone(),
            };
            if let Some(loader) = &loader {
                let probe = offset.wrapping_sub(1);
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

/// The load bias and build-id of `module` from its file's headers and its
/// mappings in `maps`.
fn file_bias_and_build_id(module: &str, maps: &[Mapping]) -> (u64, Option<String>) {
    let elf = crate::elf::read(Path::new(module));
    // Load bias: shared objects and PIEs are mapped at the start of their
    // offset-0 mapping, less the address they were linked at (0 but for
    // one linked at a base of its own, `-Wl,-Ttext-segment`: its first
    // segment's); fixed-address executables (ET_EXEC) have none.
    let bias = if elf.exec {
        0
    } else {
        maps.iter()
            .filter(|m| m.path == module)
            .map(|m| m.start - m.offset)
            .min()
            .unwrap_or(0)
            .wrapping_sub(elf.link_base)
    };
    (bias, elf.build_id)
}

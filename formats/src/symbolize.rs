//! Code addresses → module, function, file:line (the `symbols` table), from
//! a process's module map (`/proc/<pid>/maps` text) and the modules' DWARF
//! through `addr2line`. The collector resolves at exit against its own map;
//! `hyscope record` resolves the addresses of a process that died before
//! that against the map it recorded early. OMPT code pointers are return
//! addresses, so the line is looked up at `address - 1` (the call
//! instruction), while the row keeps the address as recorded, and its
//! `module_offset` the same return address in the module's link-time layout
//! (the address less the module's load bias).

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
                module_offset: None,
            }),
        }
    }
    for (module, addrs) in by_module {
        // Load bias: shared objects and PIEs are mapped at the start of their
        // offset-0 mapping, less the address they were linked at (0 but for
        // one linked at a base of its own, `-Wl,-Ttext-segment`: its first
        // segment's); fixed-address executables (ET_EXEC) have none.
        let bias = if elf_is_exec(Path::new(module)) {
            0
        } else {
            maps.iter()
                .filter(|m| m.path == module)
                .map(|m| m.start - m.offset)
                .min()
                .unwrap_or(0)
                .wrapping_sub(elf_link_base(Path::new(module)))
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

/// The address a 64-bit little-endian ELF file was linked at: its first
/// loadable segment's address less its file offset (0 when it cannot be
/// read). Only the ELF header and the program headers up to the first
/// loadable one are read, a few hundred bytes, however large the file (an
/// HPC executable may be hundreds of MB; the collector does this for every
/// module at exit).
fn elf_link_base(path: &Path) -> u64 {
    use std::os::unix::fs::FileExt;
    let Ok(file) = std::fs::File::open(path) else {
        return 0;
    };
    link_base_of(|offset, buf| file.read_exact_at(buf, offset).ok()).unwrap_or(0)
}

/// [`elf_link_base`] over `read_at(offset, buf)`, which fills `buf` with the
/// file's bytes at `offset` (`None` past its end or on an error).
fn link_base_of(read_at: impl Fn(u64, &mut [u8]) -> Option<()>) -> Option<u64> {
    let mut header = [0u8; 64];
    read_at(0, &mut header)?;
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    // ELFCLASS64, ELFDATA2LSB.
    if &header[..6] != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = u64_at(&header, 0x20);
    let (phentsize, phnum) = (u64::from(u16_at(&header, 0x36)), u16_at(&header, 0x38));
    (0..u64::from(phnum)).find_map(|i| {
        // p_type at 0, p_offset at 8, p_vaddr at 16.
        let mut ph = [0u8; 24];
        read_at(phoff.checked_add(i.checked_mul(phentsize)?)?, &mut ph)?;
        // PT_LOAD.
        (u32_at(&ph, 0) == 1).then(|| u64_at(&ph, 16).wrapping_sub(u64_at(&ph, 8)))
    })
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

#[cfg(test)]
mod tests {
    use super::{elf_link_base, link_base_of};
    use std::path::Path;
    use std::process::Command;

    /// [`link_base_of`] over the bytes of a file.
    fn base(elf: &[u8]) -> Option<u64> {
        link_base_of(|offset, buf| {
            let start = usize::try_from(offset).ok()?;
            buf.copy_from_slice(elf.get(start..start.checked_add(buf.len())?)?);
            Some(())
        })
    }

    /// An ELF64 header and `loads` (offset, vaddr) PT_LOAD headers after a PT_PHDR.
    fn elf(loads: &[(u64, u64)]) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&(loads.len() as u16 + 1).to_le_bytes());
        let mut ph = |kind: u32, offset: u64, vaddr: u64| {
            let mut h = vec![0u8; 56];
            h[..4].copy_from_slice(&kind.to_le_bytes());
            h[8..16].copy_from_slice(&offset.to_le_bytes());
            h[16..24].copy_from_slice(&vaddr.to_le_bytes());
            b.extend(h);
        };
        ph(6, 64, 0x1000_0040);
        for &(o, v) in loads {
            ph(1, o, v);
        }
        b
    }

    /// A library linked at a base of its own (`-Wl,-Ttext-segment=0x10000000`)
    /// is resolved relative to that base; one linked at 0 as before.
    #[test]
    fn the_link_base_is_the_first_loadable_segment_s() {
        assert_eq!(
            base(&elf(&[(0, 0x1000_0000), (0x1000, 0x1000_1000)])),
            Some(0x1000_0000)
        );
        assert_eq!(base(&elf(&[(0, 0), (0x1000, 0x1000)])), Some(0));
        assert_eq!(base(&elf(&[])), None);
        assert_eq!(base(b"\x7fELF\x01\x01"), None, "32-bit");
        assert_eq!(base(&elf(&[(0, 0)])[..80]), None, "cut short");
    }

    /// A real library linked at a base of its own, built by `cc`, in `dir`.
    fn library_at_0x10000000(dir: &Path) -> std::path::PathBuf {
        let (source, lib) = (dir.join("f.c"), dir.join("libf.so"));
        std::fs::write(&source, "int f(int x) { return x + 1; }\n").unwrap();
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-Wl,-Ttext-segment=0x10000000", "-o"])
            .arg(&lib)
            .arg(&source)
            .output()
            .expect("cc runs");
        assert!(
            out.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        lib
    }

    /// The bytes this thread has read from files so far (`rchar` of
    /// `/proc/thread-self/io`: every `read`/`pread` of this thread, whatever
    /// the other tests' threads read meanwhile).
    fn bytes_read_by_this_thread() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no rchar in /proc/thread-self/io:\n{io}"))
    }

    /// A 256 MiB module (a real library with a long tail, as an HPC
    /// executable's debug information or embedded data make one): its link
    /// base is found reading the header and program headers only, not the
    /// file.
    #[test]
    fn the_link_base_of_a_large_module_reads_its_headers_only() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library_at_0x10000000(dir.path());
        // A sparse tail: the file is 256 MiB long, the disk holds the library
        // (reading the whole file counts 268435551 bytes here; the headers
        // alone, 183).
        std::fs::OpenOptions::new()
            .write(true)
            .open(&lib)
            .and_then(|f| f.set_len(256 << 20))
            .unwrap();
        let before = bytes_read_by_this_thread();
        let link_base = elf_link_base(&lib);
        let read = bytes_read_by_this_thread() - before;
        assert_eq!(link_base, 0x1000_0000);
        // The header (64 bytes) and a few 24-byte reads of program headers,
        // plus the read of `/proc/thread-self/io` itself.
        assert!(
            read < 4096,
            "{read} bytes read to find the link base of a 256 MiB file"
        );
    }

    /// A module cut short, or not an ELF file, or gone: no panic, no link base.
    #[test]
    fn a_damaged_module_has_no_link_base() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library_at_0x10000000(dir.path());
        let bytes = std::fs::read(&lib).unwrap();
        let cut = dir.path().join("cut.so");
        for len in [0, 6, 63, 64, 80] {
            std::fs::write(&cut, &bytes[..len]).unwrap();
            assert_eq!(elf_link_base(&cut), 0, "cut to {len} bytes");
        }
        // Program headers said to be 65535 of 65535 bytes each, past the end.
        let mut huge = bytes[..64].to_vec();
        huge[0x36..0x3a].copy_from_slice(&[0xff; 4]);
        std::fs::write(&cut, &huge).unwrap();
        assert_eq!(elf_link_base(&cut), 0);
        assert_eq!(elf_link_base(&dir.path().join("f.c")), 0, "not ELF");
        assert_eq!(elf_link_base(&dir.path().join("gone.so")), 0);
    }
}

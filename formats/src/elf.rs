//! What the symbolizer reads of a module's ELF file: whether it is a
//! fixed-address executable, the address it was linked at, and its GNU
//! build-id. Only the ELF header, the program headers and the note segments
//! are read (a few hundred bytes), never the file: an HPC executable may be
//! hundreds of MB, and the collector reads every module it resolves at exit.
//! Any file that is not a readable 64-bit little-endian ELF file (cut short,
//! damaged, gone) gives what is not known, never a panic.

use std::os::unix::fs::FileExt;
use std::path::Path;

/// What [`read`] finds in a module's headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfFacts {
    /// A fixed-address executable (`ET_EXEC`): loaded where it was linked.
    pub exec: bool,
    /// Its first loadable segment's address less its file offset (0 when not known).
    pub link_base: u64,
    /// The `NT_GNU_BUILD_ID` note's bytes in lowercase hex, as `readelf -n`
    /// prints them; `None` without one (linked with `--build-id=none`).
    pub build_id: Option<String>,
}

/// The facts of the ELF file at `path` (the defaults where it cannot be read).
pub fn read(path: &Path) -> ElfFacts {
    let Ok(file) = std::fs::File::open(path) else {
        return ElfFacts::default();
    };
    facts_of(|offset, buf| file.read_exact_at(buf, offset).ok()).unwrap_or_default()
}

/// A program header's type: a loadable segment.
const PT_LOAD: u32 = 1;
/// A program header's type: a segment of notes.
const PT_NOTE: u32 = 4;
/// The GNU note holding the build-id.
const NT_GNU_BUILD_ID: u32 = 3;
/// The longest note segment read: a build-id note is 36 bytes, a
/// segment of every note of a module a few hundred.
const MAX_NOTES: u64 = 64 << 10;

/// [`read`] over `read_at(offset, buf)`, which fills `buf` with the file's
/// bytes at `offset` (`None` past its end or on an error).
pub(crate) fn facts_of(read_at: impl Fn(u64, &mut [u8]) -> Option<()>) -> Option<ElfFacts> {
    let mut header = [0u8; 64];
    read_at(0, &mut header)?;
    // ELFCLASS64, ELFDATA2LSB.
    if &header[..6] != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = u64_at(&header, 0x20);
    let (phentsize, phnum) = (u64::from(u16_at(&header, 0x36)), u16_at(&header, 0x38));
    let mut facts = ElfFacts {
        exec: u16_at(&header, 16) == 2,
        ..ElfFacts::default()
    };
    let mut found_base = false;
    for i in 0..u64::from(phnum) {
        // p_type at 0, p_offset at 8, p_vaddr at 16, p_filesz at 32, p_align at 48.
        let mut ph = [0u8; 56];
        let at = i.checked_mul(phentsize).and_then(|o| phoff.checked_add(o));
        if phentsize < 56 || at.and_then(|at| read_at(at, &mut ph)).is_none() {
            break;
        }
        match u32_at(&ph, 0) {
            PT_LOAD if !found_base => {
                facts.link_base = u64_at(&ph, 16).wrapping_sub(u64_at(&ph, 8));
                found_base = true;
            }
            PT_NOTE if facts.build_id.is_none() => {
                facts.build_id =
                    build_id_in(&read_at, u64_at(&ph, 8), u64_at(&ph, 32), u64_at(&ph, 48));
            }
            _ => {}
        }
        if found_base && facts.build_id.is_some() {
            break;
        }
    }
    Some(facts)
}

/// The build-id in the note segment of `size` bytes at `offset` of the
/// file (notes padded to `align`), if it holds one.
fn build_id_in(
    read_at: &impl Fn(u64, &mut [u8]) -> Option<()>,
    offset: u64,
    size: u64,
    align: u64,
) -> Option<String> {
    if size > MAX_NOTES {
        return None;
    }
    let mut notes = vec![0u8; usize::try_from(size).ok()?];
    read_at(offset, &mut notes)?;
    build_id_in_notes(&notes, align)
}

/// The `NT_GNU_BUILD_ID` note's bytes in lowercase hex, if `notes` (the
/// bytes of one `PT_NOTE` segment, read from the file or from the image
/// the loader mapped, notes padded to `align`: 8 or 4) holds one. Notes cut
/// short or claiming more than `notes` holds give none, never a panic.
pub fn build_id_in_notes(notes: &[u8], align: u64) -> Option<String> {
    let pad = |n: usize| {
        if align == 8 {
            n.checked_next_multiple_of(8)
        } else {
            n.checked_next_multiple_of(4)
        }
    };
    let mut at = 0usize;
    while at.checked_add(12)? <= notes.len() {
        let namesz = u32_at(notes, at) as usize;
        let descsz = u32_at(notes, at + 4) as usize;
        let kind = u32_at(notes, at + 8);
        let name = at + 12;
        let desc = name.checked_add(pad(namesz)?)?;
        let end = desc.checked_add(pad(descsz)?)?;
        if desc.checked_add(descsz)? > notes.len() {
            return None;
        }
        if kind == NT_GNU_BUILD_ID && &notes[name..name + namesz] == b"GNU\0" && descsz > 0 {
            let id = &notes[desc..desc + descsz];
            return Some(id.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = end;
    }
    None
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::{ElfFacts, build_id_in_notes, facts_of, read};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// [`facts_of`] over the bytes of a file.
    fn facts(elf: &[u8]) -> Option<ElfFacts> {
        facts_of(|offset, buf| {
            let start = usize::try_from(offset).ok()?;
            buf.copy_from_slice(elf.get(start..start.checked_add(buf.len())?)?);
            Some(())
        })
    }

    fn base(elf: &[u8]) -> Option<u64> {
        facts(elf).map(|f| f.link_base)
    }

    /// An ELF64 header and `loads` (offset, vaddr) PT_LOAD headers after a
    /// PT_PHDR; then, where `notes` is given, a PT_NOTE segment holding those
    /// bytes (aligned to 4) after the headers.
    fn elf_with(loads: &[(u64, u64)], notes: Option<&[u8]>) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..6].copy_from_slice(b"\x7fELF\x02\x01");
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        let count = loads.len() + 1 + usize::from(notes.is_some());
        b[0x38..0x3a].copy_from_slice(&(count as u16).to_le_bytes());
        let notes_at = 64 + 56 * count as u64;
        let mut ph = |kind: u32, offset: u64, vaddr: u64, size: u64| {
            let mut h = vec![0u8; 56];
            h[..4].copy_from_slice(&kind.to_le_bytes());
            h[8..16].copy_from_slice(&offset.to_le_bytes());
            h[16..24].copy_from_slice(&vaddr.to_le_bytes());
            h[32..40].copy_from_slice(&size.to_le_bytes());
            h[48..56].copy_from_slice(&4u64.to_le_bytes());
            b.extend(h);
        };
        ph(6, 64, 0x1000_0040, 0);
        for &(o, v) in loads {
            ph(1, o, v, 0);
        }
        if let Some(n) = notes {
            ph(4, notes_at, notes_at, n.len() as u64);
            b.extend(n);
        }
        b
    }

    fn elf(loads: &[(u64, u64)]) -> Vec<u8> {
        elf_with(loads, None)
    }

    /// One note: name, type and descriptor, each padded to 4 bytes.
    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        n.extend((name.len() as u32).to_le_bytes());
        n.extend((desc.len() as u32).to_le_bytes());
        n.extend(kind.to_le_bytes());
        n.extend(name);
        n.resize(n.len().next_multiple_of(4), 0);
        n.extend(desc);
        n.resize(n.len().next_multiple_of(4), 0);
        n
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
        assert_eq!(base(&elf(&[])), Some(0), "no loadable segment");
        assert_eq!(base(b"\x7fELF\x01\x01"), None, "32-bit");
        assert_eq!(base(&elf(&[(0, 0)])[..80]), Some(0), "cut short");
    }

    /// The build-id is the GNU note of type 3, after other notes; a note of
    /// another owner or type is not one; a note cut short or claiming more
    /// than its segment holds gives none, without a panic.
    #[test]
    fn the_build_id_is_the_gnu_build_id_note() {
        let id = note(b"GNU\0", 3, &[0xde, 0xad, 0xbe, 0xef, 0x01]);
        let abi = note(
            b"GNU\0",
            1,
            &[0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
        );
        let other = note(b"Go\0\0", 3, &[1, 2, 3, 4]);
        let notes = [abi.clone(), other, id.clone()].concat();
        let f = facts(&elf_with(&[(0, 0)], Some(&notes))).unwrap();
        assert_eq!(f.build_id.as_deref(), Some("deadbeef01"));
        assert!(!f.exec);
        let f = facts(&elf_with(&[(0, 0)], Some(&abi))).unwrap();
        assert_eq!(f.build_id, None, "no build-id note");
        let mut claims_more = id.clone();
        claims_more[4..8].copy_from_slice(&200u32.to_le_bytes());
        let f = facts(&elf_with(&[(0, 0)], Some(&claims_more))).unwrap();
        assert_eq!(f.build_id, None);
        let mut huge_name = id.clone();
        huge_name[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            facts(&elf_with(&[(0, 0)], Some(&huge_name)))
                .unwrap()
                .build_id,
            None
        );
        assert_eq!(
            facts(&elf_with(&[(0, 0)], Some(&id[..10])))
                .unwrap()
                .build_id,
            None
        );
        // The segment past the end of the file.
        let whole = elf_with(&[(0, 0)], Some(&id));
        assert_eq!(facts(&whole[..whole.len() - 4]).unwrap().build_id, None);
    }

    /// The note parser over bytes alone (a note segment as mapped in
    /// memory): the build-id after another note; none
    /// in bytes cut short or empty.
    #[test]
    fn the_build_id_is_found_in_the_bytes_of_a_note_segment() {
        let id = note(b"GNU\0", 3, &[0xab, 0xcd]);
        let notes = [note(b"GNU\0", 1, &[0; 16]), id.clone()].concat();
        assert_eq!(build_id_in_notes(&notes, 4).as_deref(), Some("abcd"));
        assert_eq!(build_id_in_notes(&notes[..notes.len() - 4], 4), None);
        assert_eq!(build_id_in_notes(&[], 4), None);
    }

    /// `cc` run in `dir` on `source` (written as `name.c`) with `args`.
    fn cc(dir: &Path, name: &str, source: &str, args: &[&str]) -> PathBuf {
        let (c, out) = (dir.join(format!("{name}.c")), dir.join(name));
        std::fs::write(&c, source).unwrap();
        let run = Command::new("cc")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg(&c)
            .output()
            .expect("cc runs");
        assert!(
            run.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        out
    }

    /// A real library linked at a base of its own, built by `cc`, in `dir`.
    fn library_at_0x10000000(dir: &Path) -> PathBuf {
        cc(
            dir,
            "libf.so",
            "int f(int x) { return x + 1; }\n",
            &[
                "-shared",
                "-fPIC",
                "-Wl,-Ttext-segment=0x10000000",
                "-Wl,--build-id",
            ],
        )
    }

    /// The build-id `readelf -n` prints for `path`, if any.
    fn readelf_build_id(path: &Path) -> Option<String> {
        let out = Command::new("readelf")
            .arg("-n")
            .arg(path)
            .output()
            .expect("readelf runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
    }

    /// Real modules built by `cc`: the build-id `readelf -n` prints, for
    /// the default (sha1) and an md5 one; a program that differs by one
    /// constant has another; `--build-id=none` gives none; a fixed-address
    /// executable is one.
    #[test]
    fn real_modules_have_the_build_id_readelf_prints() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library_at_0x10000000(dir.path());
        let f = read(&lib);
        assert_eq!(f.link_base, 0x1000_0000);
        assert_eq!(f.build_id.as_ref().map(String::len), Some(40), "{f:?}");
        assert_eq!(f.build_id, readelf_build_id(&lib));
        let one = "int k = 1; int main(void) { return k; }\n";
        let md5 = cc(dir.path(), "md5", one, &["-Wl,--build-id=md5"]);
        assert_eq!(read(&md5).build_id.as_ref().map(String::len), Some(32));
        assert_eq!(read(&md5).build_id, readelf_build_id(&md5));
        let a = cc(dir.path(), "a", one, &["-Wl,--build-id"]);
        let sub = dir.path().join("b");
        std::fs::create_dir(&sub).unwrap();
        let b = cc(
            &sub,
            "a",
            &one.replace("k = 1", "k = 2"),
            &["-Wl,--build-id"],
        );
        assert_eq!(
            std::fs::metadata(&a).unwrap().len(),
            std::fs::metadata(&b).unwrap().len()
        );
        assert_ne!(read(&a).build_id, read(&b).build_id);
        let none = cc(dir.path(), "none", one, &["-Wl,--build-id=none"]);
        assert_eq!(readelf_build_id(&none), None);
        assert_eq!(read(&none).build_id, None);
        let exec = cc(dir.path(), "exec", one, &["-no-pie", "-Wl,--build-id"]);
        let f = read(&exec);
        assert!(f.exec && f.build_id == readelf_build_id(&exec), "{f:?}");
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
    /// base and build-id are found reading the headers and the note segments
    /// only, not the file.
    #[test]
    fn the_facts_of_a_large_module_read_its_headers_only() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library_at_0x10000000(dir.path());
        let id = readelf_build_id(&lib);
        // A sparse tail: the file is 256 MiB long, the disk holds the library
        // (reading the whole file counts 268435551 bytes here).
        std::fs::OpenOptions::new()
            .write(true)
            .open(&lib)
            .and_then(|f| f.set_len(256 << 20))
            .unwrap();
        let before = bytes_read_by_this_thread();
        let f = read(&lib);
        let read = bytes_read_by_this_thread() - before;
        assert_eq!(f.link_base, 0x1000_0000);
        assert!(id.is_some() && f.build_id == id, "{f:?}");
        // The header (64 bytes), program headers of 56 bytes and the notes,
        // plus the read of `/proc/thread-self/io` itself.
        assert!(
            read < 4096,
            "{read} bytes read to find the facts of a 256 MiB file"
        );
    }

    /// A module cut short, or not an ELF file, or gone: no panic, nothing known.
    #[test]
    fn a_damaged_module_has_no_facts() {
        let dir = tempfile::tempdir().unwrap();
        let lib = library_at_0x10000000(dir.path());
        let bytes = std::fs::read(&lib).unwrap();
        let cut = dir.path().join("cut.so");
        for len in [0, 6, 63, 64, 80] {
            std::fs::write(&cut, &bytes[..len]).unwrap();
            assert_eq!(read(&cut), ElfFacts::default(), "cut to {len} bytes");
        }
        // Program headers said to be 65535 of 65535 bytes each, past the end.
        let mut huge = bytes[..64].to_vec();
        huge[0x36..0x3a].copy_from_slice(&[0xff; 4]);
        std::fs::write(&cut, &huge).unwrap();
        assert_eq!(read(&cut), ElfFacts::default());
        assert_eq!(
            read(&dir.path().join("libf.so.c")),
            ElfFacts::default(),
            "not ELF"
        );
        assert_eq!(read(&dir.path().join("gone.so")), ElfFacts::default());
    }
}

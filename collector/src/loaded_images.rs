//! The modules this process's dynamic loader has mapped, as mapped
//! (`dl_iterate_phdr`): each one's loadable segments, load bias and GNU
//! build-id, the build-id read from the note segments in memory
//! (`hyscope_format::elf::build_id_in_notes`). The symbols are resolved at
//! exit, and by then the file at a module's path may be another build (a
//! rebuild or an installation during the run replaces it; the map then names
//! the old one ` (deleted)`): the image in memory is the code that ran. A
//! module mapped some other way than by the loader is not listed, and is
//! read from its file (`hyscope_format::resolve_with_images`).

use std::ops::Range;

use hyscope_format::LoadedImage;

/// A program header's type: a loadable segment.
const PT_LOAD: u32 = 1;
/// A program header's type: a segment of notes.
const PT_NOTE: u32 = 4;
/// A segment's flag: readable.
const PF_R: u32 = 4;

/// Every module the loader has mapped into this process now.
pub fn images() -> Vec<LoadedImage> {
    let mut out: Vec<LoadedImage> = Vec::new();
    // SAFETY: `collect` gets `out` as its data, which outlives the call; the
    // loader holds its lock across the callbacks, so no module is unmapped
    // while its headers and notes are read.
    unsafe {
        libc::dl_iterate_phdr(Some(collect), (&raw mut out).cast());
    }
    out
}

/// One module's [`LoadedImage`], pushed onto the `Vec` behind `data`.
unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid `info` for the duration of the
    // callback, and `data` is the `Vec` of `images`.
    let (info, out) = unsafe { (&*info, &mut *data.cast::<Vec<LoadedImage>>()) };
    let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
        &[]
    } else {
        // SAFETY: `dlpi_phdr` points at `dlpi_phnum` mapped program headers.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    // A panic must not unwind into the loader.
    if let Ok(image) = std::panic::catch_unwind(|| image_of(info.dlpi_addr, headers)) {
        out.push(image);
    }
    0
}

/// The image whose program headers are `headers`, loaded at `bias`.
fn image_of(bias: u64, headers: &[libc::Elf64_Phdr]) -> LoadedImage {
    let loads: Vec<&libc::Elf64_Phdr> = headers.iter().filter(|h| h.p_type == PT_LOAD).collect();
    let build_id = headers
        .iter()
        .filter(|h| h.p_type == PT_NOTE)
        .filter_map(|note| {
            let notes = mapped_file_bytes(bias, note.p_vaddr, note.p_filesz, &loads)?;
            hyscope_format::elf::build_id_in_notes(notes, note.p_align)
        })
        .next();
    LoadedImage {
        ranges: loads
            .iter()
            .filter_map(|h| {
                let start = bias.checked_add(h.p_vaddr)?;
                Some(start..start.checked_add(h.p_memsz)?)
            })
            .collect(),
        bias,
        build_id,
    }
}

/// The `size` bytes at link-time address `vaddr` of a module loaded at
/// `bias`, if a readable loadable segment maps them from the file (a note
/// segment outside every loadable one is in the file only, not in memory).
fn mapped_file_bytes(
    bias: u64,
    vaddr: u64,
    size: u64,
    loads: &[&libc::Elf64_Phdr],
) -> Option<&'static [u8]> {
    let want: Range<u64> = vaddr..vaddr.checked_add(size)?;
    let mapped = loads.iter().any(|l| {
        l.p_flags & PF_R != 0
            && l.p_vaddr <= want.start
            && l.p_vaddr
                .checked_add(l.p_filesz)
                .is_some_and(|end| want.end <= end)
    });
    if !mapped || size == 0 {
        return None;
    }
    let start = usize::try_from(bias.checked_add(vaddr)?).ok()?;
    // SAFETY: the bytes lie inside a readable segment the loader mapped from
    // the file, which stays mapped while the loader's lock is held (the
    // slice is used within the callback only).
    Some(unsafe { std::slice::from_raw_parts(start as *const u8, usize::try_from(size).ok()?) })
}

#[cfg(test)]
mod tests {
    use super::images;

    #[inline(never)]
    fn marker() -> u64 {
        marker as *const () as usize as u64
    }

    /// This test binary is among the images, with the bias and the build-id
    /// its file has (it is not replaced while it runs); a library it links
    /// (libc) too.
    #[test]
    fn this_binary_is_loaded_with_its_files_build_id() {
        let all = images();
        let me = all
            .iter()
            .find(|i| i.ranges.iter().any(|r| r.contains(&marker())))
            .expect("the image holding this test's code");
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let facts = hyscope_format::elf::read(&exe);
        assert!(facts.build_id.is_some(), "{}: no build-id", exe.display());
        assert_eq!(me.build_id, facts.build_id);
        let start = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| l.ends_with(exe.to_str().unwrap()))
            .filter_map(|l| {
                let (range, rest) = l.split_once(' ')?;
                let offset = rest.split_whitespace().nth(1)?;
                let start = u64::from_str_radix(range.split_once('-')?.0, 16).ok()?;
                Some(start - u64::from_str_radix(offset, 16).ok()?)
            })
            .min()
            .expect("this binary in the map");
        assert_eq!(me.bias, start.wrapping_sub(facts.link_base));
        let libc_addr = libc::getpid as *const () as usize as u64;
        assert!(
            all.iter()
                .any(|i| i.build_id.is_some() && i.ranges.iter().any(|r| r.contains(&libc_addr))),
            "{all:#?}"
        );
    }
}

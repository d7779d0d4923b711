//! Code addresses → module, function, file:line, for the `symbols` table.
//!
//! At exit (when the module map is final) we read `/proc/self/maps` and
//! resolve every distinct address the trace holds with
//! `hyscope_format::resolve_with_maps`, which also gives each row its
//! module's place (`module_offset`) and GNU build-id (`module_build_id`),
//! both of the image the loader mapped ([`crate::loaded_images`]): the file
//! at the module's path may have been replaced since it was loaded. The map is also copied into the spool
//! directory early ([`write_maps`]), so that `hyscope record` can resolve the
//! addresses of a process that died before its exit.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

pub use hyscope_format::{Mapping, parse_maps, resolve_with_images, resolve_with_maps};
use hyscope_format::{PartWriter, SymbolRecord, Table, WriterOptions};

use crate::diag::{self, lock};

/// Addresses already written (finish may run more than once).
static DONE: Mutex<BTreeSet<u64>> = Mutex::new(BTreeSet::new());

/// The written addresses' lock, to hold across a `fork` (see `forking`).
pub(crate) fn hold_for_fork() -> crate::diag::Held {
    crate::diag::hold(&DONE)
}

/// In a forked child that takes an id of its own: the parent's written
/// addresses are not in the child's symbols table.
pub(crate) fn forget_written() {
    if let Ok(mut done) = DONE.try_lock() {
        done.clear();
    }
}

/// Resolve addresses of this process against its current module map and
/// the images its loader mapped.
pub fn resolve(addresses: &[u64]) -> Vec<SymbolRecord> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    resolve_with_images(
        addresses,
        &parse_maps(&maps),
        &crate::loaded_images::images(),
    )
}

/// Copy this process's module map to `path` (early: a process killed later
/// is resolved against it by `hyscope record`).
pub(crate) fn write_maps(path: &Path) {
    if let Ok(text) = std::fs::read("/proc/self/maps") {
        let _ = std::fs::write(path, text);
    }
}

/// Resolve the `addresses` seen (those not written before) and append them to the `symbols` table.
pub(crate) fn write_new(dir: &Path, rank: u32, options: WriterOptions, addresses: &[u64]) {
    let new: Vec<u64> = {
        let done = lock(&DONE);
        addresses
            .iter()
            .copied()
            .filter(|a| !done.contains(a))
            .collect()
    };
    if new.is_empty() {
        return;
    }
    let rows = resolve(&new);
    let result = PartWriter::create(dir, Table::Symbols, rank, options).and_then(|mut w| {
        w.write_records(&rows)?;
        w.finish()
    });
    match result {
        Ok(_) => lock(&DONE).extend(new),
        Err(e) => diag::warn(&format!("cannot write the symbols table ({e})")),
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
        // Its place in the module: the address less the load bias, a whole
        // number of pages; none for the address outside every module.
        let offset = row.module_offset.expect("an offset in the module");
        assert!(
            offset <= addr && (addr - offset).is_multiple_of(4096),
            "{row:x?}"
        );
        assert_eq!(unknown.module_offset, None);
        // Its module's build-id, as `readelf -n` prints it (the test binary
        // is linked with one: `cc`'s default), none outside every module.
        let readelf = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&row.module)
            .output()
            .expect("readelf runs");
        let want = String::from_utf8_lossy(&readelf.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string));
        assert!(want.is_some(), "{}: no build-id", row.module);
        assert_eq!(row.module_build_id, want, "{row:?}");
        assert_eq!(unknown.module_build_id, None);
    }
}

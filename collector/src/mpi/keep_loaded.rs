//! Libraries Open MPI loads in `MPI_Init` and unloads again, held loaded
//! until the collector's `MPI_T_init_thread` loads them a second time.
//!
//! Debian's Open MPI packages `libpsm2` and `libpsm_infinipath` (its `psm`,
//! `psm2` and `ofi` components link them, used or not), and each one's
//! constructor calibrates a timer in a loop of short sleeps: ≈ 0.1 s per
//! library each time it is loaded (docs/platform.md, "MPI"). `MPI_Init`
//! loads them while it opens those components and unloads them when it
//! closes the ones it does not select; `MPI_T_init_thread` opens every
//! component again and pays the same 0.2 s a second time. That second
//! time was the collector's: hidden in a background thread while the
//! application runs ([`super::mpit_background`]), but waited for at
//! `MPI_Finalize` by a job shorter than it.
//!
//! So, right before the real `MPI_Init`, the collector loads those libraries
//! itself and never unloads them: their constructors run once, here instead
//! of inside `MPI_Init` (which then finds them loaded), and MPI_T opens in
//! milliseconds. `MPI_Init` as the application sees it takes as long as
//! without the collector: the `MPI_Init` row starts where the loading did.
//!
//! Only where `MPI_Init` would load them anyway, as far as the environment
//! tells: an Open MPI with one of those components installed, and no
//! `OMPI_MCA_pml`, `OMPI_MCA_mtl` or `OMPI_MCA_btl` setting (which may leave
//! them unopened; then loading them here would add their 0.2 s to
//! `MPI_Init`, and the background thread pays it as before). The
//! application's MPI is unchanged: the same components are selected, and
//! the libraries would be loaded for MPI_T from shortly after `MPI_Init`
//! to `MPI_Finalize` in any case.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::clock;

/// The libraries, and the Open MPI components that load them.
const LIBRARIES: [&str; 2] = ["libpsm2.so.2", "libpsm_infinipath.so.1"];
const COMPONENTS: [&str; 4] = [
    "mca_mtl_psm2.so",
    "mca_mtl_psm.so",
    "mca_mtl_ofi.so",
    "mca_btl_ofi.so",
];

/// Settings that choose Open MPI's transports.
const TRANSPORT_SETTINGS: [&str; 3] = ["OMPI_MCA_pml", "OMPI_MCA_mtl", "OMPI_MCA_btl"];

/// When the loading started (collector clock, ns), if it ran.
static STARTED_NS: OnceLock<i64> = OnceLock::new();

/// Before the real `MPI_Init` (Open MPI only): load the libraries if
/// `MPI_Init` would (see the module documentation). Silent either way:
/// whatever fails leaves the collector's MPI_T to load them as before.
pub fn before_init() {
    if super::FLAVOUR != "openmpi" || STARTED_NS.get().is_some() {
        return;
    }
    if TRANSPORT_SETTINGS
        .iter()
        .any(|s| std::env::var_os(s).is_some())
    {
        return;
    }
    if !component_dirs()
        .iter()
        .any(|d| COMPONENTS.iter().any(|c| d.join(c).is_file()))
    {
        return;
    }
    let _ = STARTED_NS.set(clock::now_ns());
    for name in LIBRARIES {
        let Ok(c) = CString::new(name) else {
            continue;
        };
        // SAFETY: a NUL-terminated name; the handle is kept (never closed),
        // which is what keeps the library loaded.
        let _ = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    }
}

/// When [`before_init`] started loading, to start the `MPI_Init` row there.
pub fn started_ns() -> Option<i64> {
    STARTED_NS.get().copied()
}

/// Where Open MPI's components may be, next to the `libmpi` that defines
/// `PMPI_Init`: `<libdir>/openmpi` (an Open MPI built from source),
/// `<libdir>/openmpi/lib/openmpi3` (Debian, whose `libmpi.so.40` is in the
/// multiarch directory itself) or `<libdir>/openmpi3`.
fn component_dirs() -> Vec<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: the address of a function of the MPI library; `info` is ours.
    let found = unsafe { libc::dladdr(mpi_sys::PMPI_Init as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return Vec::new();
    }
    // SAFETY: dladdr returned a NUL-terminated path.
    let lib = PathBuf::from(std::ffi::OsStr::from_bytes(
        unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes(),
    ));
    // Where the file is, not the link the loader found it by.
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    let Some(libdir) = lib.parent() else {
        return Vec::new();
    };
    ["openmpi", "openmpi/lib/openmpi3", "openmpi3"]
        .iter()
        .map(|d| libdir.join(d))
        .collect()
}

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
//! time was the collector's: hidden in a thread beside the application
//! ([`super::mpit_background`]), but waited for at `MPI_Finalize` by a job
//! shorter than it.
//!
//! So, right before the real `MPI_Init`, the collector loads those libraries
//! itself and never unloads them: their constructors run once, here instead
//! of inside `MPI_Init` (which then finds them loaded), and MPI_T opens in
//! milliseconds. `MPI_Init` as the application sees it takes as long as
//! without the collector: the `MPI_Init` row starts where the loading did.
//!
//! Only where `MPI_Init` loads them itself: when a component that links
//! one of them is installed and Open MPI's settings let `MPI_Init` open it
//! ([`libraries_mpi_init_loads`]: the `pml`, `mtl` and `btl` settings from
//! the environment, the user's and the system's parameter files, in Open
//! MPI's order). Elsewhere (`OMPI_MCA_pml=ob1`, say) loading them here would
//! add their 0.2 s to `MPI_Init`, and the background thread pays it as
//! before. The application's MPI is unchanged: the same components are
//! selected, and the libraries would be loaded for MPI_T from shortly after
//! `MPI_Init` to `MPI_Finalize` in any case.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::clock;

const PSM2: &str = "libpsm2.so.2";
const PSM: &str = "libpsm_infinipath.so.1";

/// Open MPI's components that link the libraries: (framework, component,
/// component file, libraries). An `mtl` is opened only through the `cm` pml.
const LOADERS: [(&str, &str, &str, &[&str]); 4] = [
    ("mtl", "psm2", "mca_mtl_psm2.so", &[PSM2]),
    ("mtl", "psm", "mca_mtl_psm.so", &[PSM]),
    ("mtl", "ofi", "mca_mtl_ofi.so", &[PSM2, PSM]),
    ("btl", "ofi", "mca_btl_ofi.so", &[PSM2, PSM]),
];

/// When the loading started (collector clock, ns), if it ran.
static STARTED_NS: OnceLock<i64> = OnceLock::new();

/// Before the real `MPI_Init` (Open MPI only): load the libraries
/// `MPI_Init` would (see the module documentation). Silent either way:
/// whatever fails leaves the collector's MPI_T to load them as before.
pub fn before_init() {
    if super::FLAVOUR != "openmpi" || STARTED_NS.get().is_some() {
        return;
    }
    // Parameter files other than the usual ones: not read here.
    if std::env::var_os("OMPI_MCA_mca_base_param_files").is_some() {
        return;
    }
    let Some(libdir) = mpi_libdir() else {
        return;
    };
    let files = parameter_files(&libdir);
    let setting = |name: &str| {
        std::env::var(format!("OMPI_MCA_{name}"))
            .ok()
            .or_else(|| files.iter().find_map(|f| file_setting(f, name)))
    };
    let selection = Selection {
        pml: setting("pml"),
        mtl: setting("mtl"),
        btl: setting("btl"),
    };
    let dirs = component_dirs(&libdir);
    let libraries = libraries_mpi_init_loads(&selection, |file| installed(&dirs, file));
    if libraries.is_empty() {
        return;
    }
    let _ = STARTED_NS.set(clock::now_ns());
    for name in libraries {
        let Ok(c) = CString::new(name) else {
            continue;
        };
        // SAFETY: a NUL-terminated name; the handle is kept (never closed),
        // which is what keeps the library loaded.
        let _ = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    }
}

/// Whether opening MPI_T now loads none of the slow libraries: every one
/// that an installed component links is loaded already (by `MPI_Init`, and
/// kept by [`before_init`]), or no such component is installed; then Open
/// MPI's `MPI_T_init_thread` costs milliseconds of CPU and no sleep
/// ([`super::mpit_background`]). MPICH's MPI_T loads nothing. False where
/// Open MPI's component directory cannot be found.
pub fn mpi_t_opens_quickly() -> bool {
    if super::FLAVOUR != "openmpi" {
        return true;
    }
    let Some(libdir) = mpi_libdir() else {
        return false;
    };
    let dirs = component_dirs(&libdir);
    LOADERS
        .iter()
        .filter(|(_, _, file, _)| installed(&dirs, file))
        .flat_map(|(_, _, _, libraries)| libraries.iter())
        .all(|name| is_loaded(name))
}

/// Whether Open MPI's component `file` is in one of its component directories.
fn installed(dirs: &[PathBuf], file: &str) -> bool {
    dirs.iter().any(|d| d.join(file).is_file())
}

/// Whether the library `name` is loaded in this process (no loading).
fn is_loaded(name: &str) -> bool {
    let Ok(c) = CString::new(name) else {
        return false;
    };
    // SAFETY: a NUL-terminated name; RTLD_NOLOAD loads nothing, and the
    // reference it takes on a loaded library is given back at once.
    unsafe {
        let handle = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}

/// Open MPI's `pml`, `mtl` and `btl` settings: a list of components to
/// use, or to leave out after a `^`; None for all.
#[derive(Debug, Default)]
struct Selection {
    pml: Option<String>,
    mtl: Option<String>,
    btl: Option<String>,
}

/// Whether a setting lets its framework open `component`.
fn allows(setting: Option<&str>, component: &str) -> bool {
    let Some(v) = setting.map(str::trim) else {
        return true;
    };
    let listed = |list: &str| list.split(',').any(|c| c.trim() == component);
    match v.strip_prefix('^') {
        Some(excluded) => !listed(excluded),
        None => listed(v),
    }
}

/// The libraries `MPI_Init` loads under `selection`, given which component
/// files are installed.
fn libraries_mpi_init_loads(
    selection: &Selection,
    installed: impl Fn(&str) -> bool,
) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (framework, component, file, libraries) in LOADERS {
        let opened = match framework {
            "mtl" => {
                allows(selection.pml.as_deref(), "cm")
                    && allows(selection.mtl.as_deref(), component)
            }
            _ => allows(selection.btl.as_deref(), component),
        };
        if opened && installed(file) {
            for l in libraries {
                if !out.contains(l) {
                    out.push(l);
                }
            }
        }
    }
    out
}

/// Open MPI's parameter files, the first one's settings first: the user's,
/// then the system's (Debian's `/etc/openmpi`, or `<prefix>/etc`).
fn parameter_files(libdir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        files.push(Path::new(&home).join(".openmpi/mca-params.conf"));
    }
    files.push(PathBuf::from("/etc/openmpi/openmpi-mca-params.conf"));
    if let Some(prefix) = libdir.parent() {
        files.push(prefix.join("etc/openmpi-mca-params.conf"));
    }
    files
}

/// `name`'s value in a parameter file (`name = value` lines, `#` comments).
fn file_setting(file: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    parse_setting(&text, name)
}

fn parse_setting(text: &str, name: &str) -> Option<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().to_string())
        .next_back()
}

/// When [`before_init`] started loading, to start the `MPI_Init` row there.
pub fn started_ns() -> Option<i64> {
    STARTED_NS.get().copied()
}

/// The directory of the `libmpi` that defines `PMPI_Init`.
fn mpi_libdir() -> Option<PathBuf> {
    let lib = hyscope_ompt::module_of(mpi_sys::PMPI_Init as *const () as usize);
    Path::new(&lib).parent().map(Path::to_path_buf)
}

/// Where Open MPI's components may be: `<libdir>/openmpi` (an Open MPI
/// built from source), `<libdir>/openmpi/lib/openmpi3` (Debian, whose
/// `libmpi.so.40` is in the multiarch directory itself) or `<libdir>/openmpi3`.
fn component_dirs(libdir: &Path) -> Vec<PathBuf> {
    ["openmpi", "openmpi/lib/openmpi3", "openmpi3"]
        .iter()
        .map(|d| libdir.join(d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(pml: Option<&str>, mtl: Option<&str>, btl: Option<&str>) -> Selection {
        Selection {
            pml: pml.map(String::from),
            mtl: mtl.map(String::from),
            btl: btl.map(String::from),
        }
    }

    const ALL: fn(&str) -> bool = |_| true;

    #[test]
    fn debian_s_defaults_load_both_through_the_psm_mtls() {
        // /etc/openmpi/openmpi-mca-params.conf of Debian 12's Open MPI 4.1.
        let file =
            "btl_base_warn_component_unused=0\nmtl = ^ofi\nbtl = ^uct,openib,ofi\npml = ^ucx\n";
        let s = selection(
            parse_setting(file, "pml").as_deref(),
            parse_setting(file, "mtl").as_deref(),
            parse_setting(file, "btl").as_deref(),
        );
        assert_eq!(s.mtl.as_deref(), Some("^ofi"));
        assert_eq!(libraries_mpi_init_loads(&s, ALL), vec![PSM2, PSM]);
        // Only the components installed count.
        let only_psm2 = |f: &str| f == "mca_mtl_psm2.so";
        assert_eq!(libraries_mpi_init_loads(&s, only_psm2), vec![PSM2]);
        assert!(libraries_mpi_init_loads(&s, |_| false).is_empty());
    }

    #[test]
    fn settings_that_leave_the_components_out_load_nothing() {
        // ob1 without cm opens no mtl; Debian's file leaves the ofi btl out.
        let s = selection(Some("ob1"), Some("^ofi"), Some("^uct,openib,ofi"));
        assert!(libraries_mpi_init_loads(&s, ALL).is_empty());
        let s = selection(None, Some("^psm,psm2,ofi"), Some("^ofi"));
        assert!(libraries_mpi_init_loads(&s, ALL).is_empty());
        // One mtl named: its library only.
        let s = selection(None, Some("psm2"), Some("self,vader"));
        assert_eq!(libraries_mpi_init_loads(&s, ALL), vec![PSM2]);
        // The btls alone do not decide: the psm mtls still load both.
        let s = selection(None, Some("^ofi"), Some("self,vader"));
        assert_eq!(libraries_mpi_init_loads(&s, ALL), vec![PSM2, PSM]);
    }

    #[test]
    fn parameter_lines() {
        let text = "# comment\n pml = ob1 # trailing\nmtl=psm2\nmtl = ^ofi\n";
        assert_eq!(parse_setting(text, "pml").as_deref(), Some("ob1"));
        // The last line of a name wins, as in Open MPI.
        assert_eq!(parse_setting(text, "mtl").as_deref(), Some("^ofi"));
        assert_eq!(parse_setting(text, "btl"), None);
        assert!(allows(None, "cm"));
        assert!(allows(Some(" ^ucx "), "cm"));
        assert!(!allows(Some("ob1"), "cm"));
        assert!(allows(Some("ob1, cm"), "cm"));
    }
}

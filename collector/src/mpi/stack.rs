//! Which transport the MPI library selected, for the analyzer's memory
//! model (`formats/README.md`, `mpi.components` and `mpi.environment`):
//! the transport components and libraries mapped in the process at the end
//! of `MPI_Init` (before the collector's MPI_T opens every component again:
//! Open MPI closes the components it did not select), and the `UCX_*` and
//! `FI_*` settings of the environment, which are no control variables.

use std::collections::BTreeMap;

/// The environment variables kept, by prefix.
const ENV_PREFIXES: [&str; 2] = ["UCX_", "FI_"];
/// At most this many of them (a job's environment is the user's).
const ENV_MAX: usize = 64;

/// The transport components and libraries of a `/proc/self/maps` text:
/// Open MPI's `mca_pml_ob1.so` as `pml_ob1` (likewise `btl_`, `mtl_`),
/// `ucx` for `libucp`, `libfabric` for `libfabric`; sorted, each once.
pub fn components(maps: &str) -> Vec<String> {
    let mut out: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|path| {
            let file = path.rsplit('/').next()?;
            if let Some(c) = file
                .strip_prefix("mca_")
                .and_then(|f| f.split(".so").next())
                && ["pml_", "btl_", "mtl_"].iter().any(|p| c.starts_with(p))
            {
                return Some(c.to_string());
            }
            if file.starts_with("libucp.so") {
                return Some("ucx".into());
            }
            if file.starts_with("libfabric.so") {
                return Some("libfabric".into());
            }
            None
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The transport settings among `vars` (the environment's).
pub fn environment(vars: impl Iterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
        .take(ENV_MAX)
        .collect()
}

/// This process's components now (empty where the maps cannot be read).
pub fn components_now() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|m| components(&m))
        .unwrap_or_default()
}

/// This process's transport settings.
pub fn environment_now() -> BTreeMap<String, String> {
    environment(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selected_components_and_libraries_are_named() {
        let maps = "\
7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7f01-7f02 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7f03-7f04 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_coll_tuned.so
7f04-7f05 r-xp 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libucp.so.0.0.0
7f05-7f06 r-xp 00000000 08:01 5 /usr/lib/x86_64-linux-gnu/libfabric.so.1.18.0
7f06-7f07 rw-p 00000000 00:00 0
7f07-7f08 r-xp 00000000 08:01 6 /usr/lib/x86_64-linux-gnu/libmca_common_sm.so.40.30.0
";
        assert_eq!(components(maps), ["btl_tcp", "libfabric", "pml_ob1", "ucx"]);
        let env = environment(
            [
                ("UCX_TLS", "rc,sm"),
                ("PATH", "/bin"),
                ("FI_PROVIDER", "tcp"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        assert_eq!(env.keys().collect::<Vec<_>>(), ["FI_PROVIDER", "UCX_TLS"]);
    }
}

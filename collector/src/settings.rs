//! The `HYSCOPE_*` settings as the collector reads them: validated once
//! ([`hyscope_format::settings`]), apart from the process's state because
//! the clock reads them while that state is being made.

use std::sync::OnceLock;

use hyscope_format::settings::Settings;

/// The `HYSCOPE_*` settings, validated once ([`hyscope_format::settings`]),
/// and the warnings about values that were not valid. Apart from the
/// session: the clock reads them while the session is being made.
pub fn settings() -> &'static Settings {
    &settings_and_warnings().0
}

pub(crate) fn settings_and_warnings() -> &'static (Settings, Vec<String>) {
    static SETTINGS: OnceLock<(Settings, Vec<String>)> = OnceLock::new();
    SETTINGS.get_or_init(Settings::from_env)
}

/// Whether an MPI launcher started this process (its rank variables are set).
pub(crate) fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .any(|k| std::env::var_os(k).is_some())
}

//! The format's version, written into every manifest and part and checked by
//! the readers (apart from the manifest, so the errors can name it too).

/// `major.minor`. Readers refuse a different major version.
pub const FORMAT_VERSION: &str = "1.11";
/// The major part of [`FORMAT_VERSION`].
pub const FORMAT_MAJOR: u32 = 1;

/// Whether `version` (`major.minor`, as a manifest or a part states it)
/// is `since` or later, minor versions compared as numbers (1.10 after
/// 1.9); false where it does not read as one.
pub fn version_at_least(version: &str, since: (u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= since,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minor_versions_compare_as_numbers() {
        assert!(version_at_least("1.10", (1, 10)));
        assert!(version_at_least("1.10", (1, 9)));
        assert!(!version_at_least("1.9", (1, 10)));
        assert!(version_at_least("2.0", (1, 10)));
        assert!(!version_at_least("1", (1, 0)));
        assert!(!version_at_least("", (1, 0)));
        assert!(version_at_least(FORMAT_VERSION, (1, 11)));
    }
}

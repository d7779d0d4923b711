//! The format's version, written into every manifest and part and checked by
//! the readers (apart from the manifest, so the errors can name it too).

/// `major.minor`. Readers refuse a different major version.
pub const FORMAT_VERSION: &str = "1.8";
/// The major part of [`FORMAT_VERSION`].
pub const FORMAT_MAJOR: u32 = 1;

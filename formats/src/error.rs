//! Errors of the format crate. Every error names the file it is about.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a hyscope trace (no manifest.json)")]
    MissingManifest { path: PathBuf },
    #[error("{path}: invalid manifest: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("{path}: trace format version {found} is not supported (this hyscope reads {supported}.x)", supported = crate::version::FORMAT_MAJOR)]
    Version { path: PathBuf, found: String },
    #[error("{path}: corrupt or truncated Parquet file: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: wrong schema for table `{table}`: {message}")]
    Schema {
        path: PathBuf,
        table: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl FormatError {
    /// True when the error is the disk (or the quota) being full.
    pub fn is_disk_full(&self) -> bool {
        is_disk_full_message(&self.to_string())
    }

    pub fn io(path: &Path, source: std::io::Error) -> FormatError {
        FormatError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn parquet(path: &Path, err: impl std::fmt::Display) -> FormatError {
        FormatError::Parquet {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FormatError::Io { path, .. }
            | FormatError::MissingManifest { path }
            | FormatError::Manifest { path, .. }
            | FormatError::Version { path, .. }
            | FormatError::Parquet { path, .. }
            | FormatError::Schema { path, .. }
            | FormatError::Invalid { path, .. } => path,
        }
    }
}

/// True when an error's text is the disk (or the quota) being full: an I/O
/// error shows its errno as `(os error N)` whatever the locale, also when
/// another library (Parquet) wrapped it into text.
pub fn is_disk_full_message(text: &str) -> bool {
    text.contains("(os error 28)") || text.contains("(os error 122)")
}

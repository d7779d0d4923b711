//! Why a trace could not be analysed.

use std::path::PathBuf;

/// Why a trace could not be analysed. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Format(#[from] hyscope_format::FormatError),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// Another process of a parallel analysis failed: its error, as it said it.
    #[error("{0}")]
    Remote(String),
    /// The processes of a parallel analysis could not exchange their results.
    #[error("parallel analysis: {message}")]
    Exchange { message: String },
}

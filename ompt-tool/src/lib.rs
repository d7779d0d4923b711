//! hyscope-ompt

//! hyscope-analyzer

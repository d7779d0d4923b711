//! hyscope-collector

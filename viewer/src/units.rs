//! The one way hyscope writes times, bytes and other quantities for people
//! (`hyscope_analyzer::units`): the analyzer's findings and warnings use it
//! too, so it lives there; the viewers reach it here.

pub use hyscope_analyzer::units::*;

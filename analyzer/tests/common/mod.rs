//! Synthetic traces written with the real format writer, whose answers are
//! known: `hyscope_testkit::trace` (shared with the viewer's tests).

pub use hyscope_testkit::trace::*;

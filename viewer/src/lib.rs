//! The `hyscope` command as a library: one module per subcommand, each with its
//! own `Args` (clap) and `run`. `main.rs` only parses the command line and
//! calls in; the tests drive the same modules (the TUI's `App` and `draw`, the
//! report's `render`) through this crate's API.

pub mod aggregate;
pub mod export;
pub mod gui;
pub mod install;
pub mod loading;
pub mod partial;
pub mod record;
pub mod recover;
pub mod report;
pub mod samples;
pub mod tui;
pub mod tune;
pub mod units;

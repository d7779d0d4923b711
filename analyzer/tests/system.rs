//! Every system test of the analyzer, in one test binary: one link and one
//! executable instead of one per file keeps the build small enough for a CI
//! machine with little disk. Each module is one file of tests; run one with
//! `cargo test -p <crate> --test system <module>::`.

mod common;
#[path = "common/synth.rs"]
mod synth;

mod code_locations;
mod compare;
mod findings_text;
mod memory_energy_pop;
mod memory_limit;
mod mpi;
mod mpi_received;
mod openmp;
mod real_trace;
mod run_window;

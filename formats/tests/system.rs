//! Every system test of the trace format, in one test binary: one link and one
//! executable instead of one per file keeps the build small enough for a CI
//! machine with little disk. Each module is one file of tests; run one with
//! `cargo test -p <crate> --test system <module>::`.

mod common;

mod bad_input;
mod layout;
mod outside_client;
mod phases;
mod proptest_rows;
mod roundtrip;
mod settings_readme;
mod spool;
mod summary_sum_sq;
mod unspool;
mod version_1_0;

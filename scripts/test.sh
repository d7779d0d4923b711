#!/usr/bin/env bash
# The whole test suite: build everything, then run every test. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo build --workspace
scripts/build-mpich.sh  # target/debug/libhyscope-mpich.so (MPICH flavour, own target dir)
cargo test --workspace --no-fail-fast

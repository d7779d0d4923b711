#!/usr/bin/env bash
# The whole test suite, in three named groups, fastest first:
#   1. checks:  formatting, clippy (-D warnings) on every target, and the modules'
#               import graph (collector/tests/module_graph.rs: no cycle);
#   2. unit:    each crate's in-crate tests and doc tests (no compiler, MPI or display needed);
#   3. system:  the integration tests under */tests/ — real clang-19/libomp, real mpirun
#               (Open MPI and MPICH), Xvfb, tmux, pyarrow, otf2-print.
# Exits non-zero on any failure; a failing group does not stop the later ones.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

failed=()
group() {
    local name=$1
    shift
    echo "=== test group: $name ==="
    if "$@"; then
        echo "=== test group: $name: passed ==="
    else
        echo "=== test group: $name: FAILED ==="
        failed+=("$name")
    fi
}

checks() {
    cargo fmt --all --check &&
        cargo clippy --workspace --all-targets -- -D warnings &&
        cargo test -p hyscope-collector --test module_graph
}
build() {
    cargo build --workspace &&
        scripts/build-mpich.sh # target/debug/libhyscope-mpich.so (MPICH flavour, own target dir)
}

group checks checks
group build build
unit() {
    cargo test --workspace --lib --bins --no-fail-fast &&
        cargo test --workspace --doc --no-fail-fast
}
group unit unit
group system cargo test --workspace --test '*' --no-fail-fast

if ((${#failed[@]})); then
    echo "test groups failed: ${failed[*]}"
    exit 1
fi
echo "all test groups passed"

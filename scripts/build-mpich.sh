#!/usr/bin/env bash
# The MPICH flavour of the collector: target/<profile>/libhyscope-mpich.so, next to
# the Open MPI build (libhyscope.so), and of the parallel report's MPI library
# (par/): libhyscope_par-mpich.so next to libhyscope_par.so. mpi-sys and
# collector/build.rs read MPICC; a separate target directory keeps the two mpi-sys
# builds from invalidating each other.
# Usage: scripts/build-mpich.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=debug
if [ "${1:-}" = "--release" ]; then profile=release; fi
target="${CARGO_TARGET_DIR:-target}"
MPICC="${MPICC_MPICH:-mpicc.mpich}" CARGO_TARGET_DIR="$target/mpich" \
    cargo build -p hyscope-collector -p hyscope-par --lib "$@"
mkdir -p "$target/$profile"
for pair in libhyscope.so:libhyscope-mpich.so libhyscope_par.so:libhyscope_par-mpich.so; do
    from=${pair%%:*} to=${pair##*:}
    cp "$target/mpich/$profile/$from" "$target/$profile/$to.tmp"
    mv "$target/$profile/$to.tmp" "$target/$profile/$to"
done

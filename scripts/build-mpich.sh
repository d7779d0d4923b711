#!/usr/bin/env bash
# The MPICH flavour of the collector: target/<profile>/libhyscope-mpich.so, next to
# the Open MPI build (libhyscope.so). mpi-sys and collector/build.rs read MPICC; a
# separate target directory keeps the two mpi-sys builds from invalidating each other.
# Usage: scripts/build-mpich.sh [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=debug
if [ "${1:-}" = "--release" ]; then profile=release; fi
target="${CARGO_TARGET_DIR:-target}"
MPICC="${MPICC_MPICH:-mpicc.mpich}" CARGO_TARGET_DIR="$target/mpich" \
    cargo build -p hyscope-collector --lib "$@"
mkdir -p "$target/$profile"
cp "$target/mpich/$profile/libhyscope.so" "$target/$profile/libhyscope-mpich.so.tmp"
mv "$target/$profile/libhyscope-mpich.so.tmp" "$target/$profile/libhyscope-mpich.so"

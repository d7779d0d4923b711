#!/usr/bin/env bash
# Longer runs of the damaged-trace property test (viewer/tests/fuzz_trace.rs):
# random damage to manifest.json, the rank files and the bytes of the parts
# of a recorded trace; no panic, no abort under a 4 GiB address-space limit,
# and every flipped byte in a part's checksummed data an error naming it.
#   scripts/fuzz-trace.sh [CASES]     (default 5000 per property)
set -euo pipefail
cd "$(dirname "$0")/.."
HYSCOPE_FUZZ_CASES="${1:-5000}" cargo test --release -p hyscope-viewer --test system fuzz_trace:: -- --test-threads=1

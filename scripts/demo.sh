#!/usr/bin/env bash
# The README's first command: install what is missing, build hyscope, build the
# bundled example, record it with 2 MPI ranks x 2 OpenMP threads and print the report.
#
#   bash scripts/demo.sh            # trace in ./hyscope-demo (override: HYSCOPE_DEMO_DIR)
#
# Idempotent: a previous demo trace is removed, but only one this script made
# (it leaves a .hyscope-demo marker in it); anything else at that path is refused.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DEMO_DIR=${HYSCOPE_DEMO_DIR:-$ROOT/hyscope-demo}
MARKER=.hyscope-demo
say() { echo "demo: $*" >&2; }

# 1. Dependencies (Debian packages need root; as another user the script only checks).
bash scripts/install-deps.sh

# 2. hyscope and the collector library (debug build of the whole workspace).
say "cargo build --workspace"
cargo build --workspace
HYSCOPE=$ROOT/target/debug/hyscope

# 3. The example, with clang-19 so it runs on libomp 19 (full OMPT support).
say "building examples/hybrid"
make -s -C examples/hybrid

# 4. Record it. A launcher started as root needs --allow-run-as-root.
if [[ -e $DEMO_DIR ]]; then
    if [[ -f $DEMO_DIR/$MARKER ]]; then
        rm -rf -- "$DEMO_DIR"
    else
        say "$DEMO_DIR exists and was not made by this script; remove it or set HYSCOPE_DEMO_DIR"
        exit 1
    fi
fi
MPIRUN=(mpirun --oversubscribe -np 2 -x OMP_NUM_THREADS=2)
if [[ $(id -u) -eq 0 ]]; then
    MPIRUN+=(--allow-run-as-root)
fi
say "${HYSCOPE#"$ROOT"/} record -o ${DEMO_DIR#"$ROOT"/} -- ${MPIRUN[*]} ./examples/hybrid/hybrid"
"$HYSCOPE" record -o "$DEMO_DIR" -- "${MPIRUN[@]}" ./examples/hybrid/hybrid
touch "$DEMO_DIR/$MARKER"

# 5. The analysis.
say "${HYSCOPE#"$ROOT"/} report ${DEMO_DIR#"$ROOT"/}"
"$HYSCOPE" report "$DEMO_DIR"

say "next: ${HYSCOPE#"$ROOT"/} tui ${DEMO_DIR#"$ROOT"/}   (terminal UI)"
say "      ${HYSCOPE#"$ROOT"/} export --format perfetto -o demo.json ${DEMO_DIR#"$ROOT"/}   (open in ui.perfetto.dev)"

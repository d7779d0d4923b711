#!/bin/sh
# Wrapper cost side by side: the same binary alternately without and with
# libhyscope.so (release build), ROUNDS times; prints every run.
# Usage: tests/mpi/bench.sh [iterations] [rounds]   (from the repository root)
set -e
N=${1:-100000}
ROUNDS=${2:-5}
LIB=${HYSCOPE_LIB:-$PWD/target/release/libhyscope.so}
OUT=${TMPDIR:-/tmp}/hyscope-mpi-bench
mkdir -p "$OUT"
mpicc -O2 -o "$OUT/bench" tests/mpi/bench.c
MPIRUN="mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core"
for i in $(seq "$ROUNDS"); do
  printf 'without '; $MPIRUN "$OUT/bench" "$N"
  rm -rf "$OUT/trace"
  printf 'with    '; $MPIRUN -x LD_PRELOAD="$LIB" -x HYSCOPE_OUTPUT="$OUT/trace" "$OUT/bench" "$N"
done
python3 -c "
import json
m = json.load(open('$OUT/trace/manifest.json'))
for r in m['ranks']:
    print('rank', r['rank'], 'clock_offsets', [(o['offset_ns'], o['rtt_ns']) for o in r['clock_offsets']])
"

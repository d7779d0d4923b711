#!/bin/sh
# Wrapper cost side by side (tests/mpi/bench.c compares wrapped MPI_* and direct
# PMPI_* loops in one process), with libhyscope.so (release build) preloaded,
# at 1 rank (Iprobe) and 2 ranks (Iprobe, 0-byte ping-pong and Irecv + Isend +
# Waitall exchange); then the clock
# offsets of the last 2-rank run.
# Usage (from the repository root): tests/mpi/bench.sh [iterations] [runs]
set -e
N=${1:-200000}
RUNS=${2:-3}
LIB=${HYSCOPE_LIB:-$PWD/target/release/libhyscope.so}
OUT=${TMPDIR:-/tmp}/hyscope-mpi-bench
mkdir -p "$OUT"
mpicc -O2 -o "$OUT/bench" tests/mpi/bench.c
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
echo "== without the collector (both columns are bare MPI)"
$MPIRUN -np 2 "$OUT/bench" "$N"
for np in 1 2; do
  for i in $(seq "$RUNS"); do
    rm -rf "$OUT/trace"
    echo "== np=$np with libhyscope.so"
    $MPIRUN -np $np -x LD_PRELOAD="$LIB" -x HYSCOPE_OUTPUT="$OUT/trace" "$OUT/bench" "$N"
  done
done
python3 -c "
import json
m = json.load(open('$OUT/trace/manifest.json'))
for r in m['ranks']:
    print('rank', r['rank'], 'clock_offsets (offset_ns, rtt_ns)', [(o['offset_ns'], o['rtt_ns']) for o in r['clock_offsets']])
"

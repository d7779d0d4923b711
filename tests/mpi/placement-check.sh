#!/usr/bin/env bash
# Checks the "OpenMP threads share CPUs" finding's predicted gain against the
# gain achieved by following its advice: examples/hybrid, 1 rank × 2 OpenMP
# threads, recorded under Open MPI's default binding for one rank (one core)
# and under `--bind-to none`, alternating. Prints per run the job duration,
# the parallel regions' time and the gain the bound run's report predicts.
# usage: tests/mpi/placement-check.sh [rounds]     (default 4)
# Needs: cargo build --workspace (target/debug/hyscope and libhyscope.so).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rounds=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s -C examples/hybrid >/dev/null
echo "| run | binding | job s | parallel regions s | predicted gain s |"
echo "|---|---|---|---|---|"
for i in $(seq "$rounds"); do
    for bind in core none; do
        rm -rf "$work/t"
        target/debug/hyscope record -o "$work/t" -- \
            mpirun -np 1 --bind-to "$bind" -x OMP_NUM_THREADS=2 ./examples/hybrid/hybrid >/dev/null 2>&1
        target/debug/hyscope report "$work/t" --json >"$work/a.json"
        python3 - "$work/a.json" "$i" "$bind" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
regions = sum(r["time_s"] for r in a["regions"]["observed"])
gain = sum(f["cost_s"] for f in a["findings"] if f["title"].startswith("OpenMP threads share CPUs"))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {a['run']['duration_s']:.3f} | {regions:.3f} | {gain:.3f} |")
PY
    done
done

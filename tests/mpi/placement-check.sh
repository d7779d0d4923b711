#!/usr/bin/env bash
# Checks the "OpenMP threads share CPUs" finding's predicted gain against the
# gain achieved by following its advice: examples/hybrid, 1 rank × 2 OpenMP
# threads, alternating the shared and the fixed placement. Prints per run the
# job duration, the parallel regions' time and the gain each run's report
# predicts (the shared run's is the prediction; the fixed run's should be 0).
# usage: tests/mpi/placement-check.sh [rounds]     (default 4)
#   CASE=launcher (default): Open MPI's default binding for one rank (one core)
#                            against `--bind-to none`
#   CASE=runtime:            `--bind-to none` with OMP_PROC_BIND=master (both
#                            threads on one CPU) against OMP_PROC_BIND=close
#   MODE=trace (default) or profile: the recording mode (`record --mode`)
# Needs: cargo build --workspace (target/debug/hyscope and libhyscope.so).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
rounds=${1:-4}
case=${CASE:-launcher}
mode=${MODE:-trace}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s -C examples/hybrid >/dev/null
case $case in
launcher) placements="core none" ;;
runtime) placements="master close" ;;
*) echo "CASE must be launcher or runtime" >&2; exit 2 ;;
esac
echo "$case placement, $mode mode"
echo
echo "| run | placement | job s | parallel regions s | predicted gain s |"
echo "|---|---|---|---|---|"
for i in $(seq "$rounds"); do
    for placement in $placements; do
        rm -rf "$work/t"
        if [ "$case" = launcher ]; then
            launch=(mpirun -np 1 --bind-to "$placement" -x OMP_NUM_THREADS=2)
        else
            launch=(mpirun -np 1 --bind-to none -x OMP_NUM_THREADS=2 -x OMP_PLACES=cores
                -x OMP_PROC_BIND="$placement")
        fi
        target/debug/hyscope record --mode "$mode" -o "$work/t" -- \
            "${launch[@]}" ./examples/hybrid/hybrid >/dev/null 2>&1
        target/debug/hyscope report "$work/t" --json >"$work/a.json"
        python3 - "$work/a.json" "$i" "$placement" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
regions = sum(r["time_s"] for r in a["regions"]["observed"])
gain = sum(f["cost_s"] for f in a["findings"] if f["title"].startswith("OpenMP threads share CPUs"))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {a['run']['duration_s']:.3f} | {regions:.3f} | {gain:.3f} |")
PY
    done
done

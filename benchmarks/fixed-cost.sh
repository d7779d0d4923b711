#!/usr/bin/env bash
# The fixed cost of recording a job: benchmarks/fixed_cost.c (MPI_Init, one
# parallel region, MPI_Finalize) under mpirun, in alternating rounds: no
# tool; libhyscope.so preloaded (trace mode, samplers on); preloaded with
# HYSCOPE_SAMPLE_MS=0; and the whole `hyscope record`. Prints the median wall
# time of each and what it adds to the plain run. APP_MS makes the job sleep
# that long between its region and MPI_Finalize, as an application computes:
# the collector's background work (MPI_T) then overlaps it.
# usage: benchmarks/fixed-cost.sh [ROUNDS] [RANKS] [APP_MS]   (defaults 21, 1, 0)
# HYSCOPE: the hyscope binary (default target/release/hyscope, else target/debug/hyscope);
# HYSCOPE_LIB: the collector (default target/release/libhyscope.so).
# BASELINE_LIB: another build of the collector (e.g. the previous commit's),
#   preloaded in the same rounds as a fifth run, `baseline`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-21}
ranks=${2:-1}
app_ms=${3:-0}
lib=$(realpath "${HYSCOPE_LIB:-$root/target/release/libhyscope.so}")
hyscope=${HYSCOPE:-$root/target/release/hyscope}
[ -x "$hyscope" ] || hyscope=$root/target/debug/hyscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OMPI_CC=clang-19 mpicc -fopenmp -O2 "$root/benchmarks/fixed_cost.c" -o "$work/job" \
    -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib
launch=(mpirun --oversubscribe -np "$ranks" --bind-to none)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
export OMP_NUM_THREADS=2
unset HYSCOPE_MODE HYSCOPE_OUTPUT HYSCOPE_SAMPLE_MS

timed() { # label command...: appends the wall time to $work/<label>
    local label=$1 t0 t1
    shift
    rm -rf "$work/t"
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }' >>"$work/$label"
}
for _ in $(seq "$rounds"); do
    timed none "${launch[@]}" "$work/job" "$app_ms"
    timed preload "${launch[@]}" -x LD_PRELOAD="$lib" -x HYSCOPE_OUTPUT="$work/t" "$work/job" "$app_ms"
    timed no-sampler "${launch[@]}" -x LD_PRELOAD="$lib" -x HYSCOPE_OUTPUT="$work/t" -x HYSCOPE_SAMPLE_MS=0 "$work/job" "$app_ms"
    HYSCOPE_LIB=$lib timed record "$hyscope" record -o "$work/t" -- "${launch[@]}" "$work/job" "$app_ms"
    if [ -n "${BASELINE_LIB:-}" ]; then
        timed baseline "${launch[@]}" -x LD_PRELOAD="$(realpath "$BASELINE_LIB")" -x HYSCOPE_OUTPUT="$work/t" "$work/job" "$app_ms"
    fi
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
base=$(median "$work/none")
echo "fixed cost, $ranks rank(s) × 2 threads, application time $app_ms ms, $rounds alternating rounds; $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run | median wall | added |"
echo "|---|---|---|"
for l in none preload no-sampler record ${BASELINE_LIB:+baseline}; do
    m=$(median "$work/$l")
    awk -v l="$l" -v m="$m" -v b="$base" 'BEGIN { printf "| %s | %.3f s | %+.0f ms |\n", l, m, 1000 * (m - b) }'
done

#!/usr/bin/env bash
# EPCC OpenMP micro-benchmarks (syncbench) with and without hyscope, in
# alternating rounds: no tool, an OMPT tool that registers hyscope's callbacks
# and does nothing in them (tests/omp/empty_tool.c: what libomp's tool support
# costs by itself), then libhyscope.so preloaded in trace mode, then in profile
# mode, every round. Prints, per construct, the median time of
# each and what the tool adds (µs per construct, by the median and by the
# median of the per-round differences).
#
# EPCC is not part of this repository: get https://github.com/vadikp-intel/openmpbench
# (a clone, or the fetch tool's mirror:
#   mkdir -p /tmp/epcc && git --git-dir=/work/.mirror/vadikp-intel+openmpbench/repo archive HEAD | tar -x -C /tmp/epcc)
# and pass its directory. Its common.c includes "windows.h" for min/max; this
# script supplies those two macros in a header of its own, nothing else.
#
# usage: benchmarks/epcc.sh EPCC_DIR [ROUNDS] [THREADS] [TEST_TIME_US]
#   defaults: 11 rounds, 2 threads, 1000 µs per measurement (syncbench's default)
# HYSCOPE_LIB: the collector (default target/release/libhyscope.so):
#   cargo build --release -p hyscope-collector --lib
# BASE_TOOL: the C source of the OMPT tool run as the second variant
#   (default tests/omp/empty_tool.c, which does nothing in its callbacks);
#   BASE_TOOL=benchmarks/raw_log_tool.c takes the floor of a per-event tracer
#   (a TSC read and a 24-byte store per callback) instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(realpath "$1")
rounds=${2:-11}
threads=${3:-2}
test_time=${4:-1000}
lib=$(realpath "${HYSCOPE_LIB:-$root/target/release/libhyscope.so}")
[ -f "$lib" ] || { echo "no $lib: cargo build --release -p hyscope-collector --lib" >&2; exit 1; }
[ -f "$src/syncbench.c" ] || { echo "$src has no syncbench.c (see the header of this script)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include"
printf '#define min(a, b) ((a) < (b) ? (a) : (b))\n#define max(a, b) ((a) > (b) ? (a) : (b))\n' \
    >"$work/include/windows.h"
# The OpenMP 3 constructs, as the repository's Makefile.defs builds them.
clang-19 -fopenmp -O3 -DOMPVER2 -DOMPVER3 -I"$work/include" "$src/syncbench.c" "$src/common.c" \
    -o "$work/syncbench" -lm -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib
base_tool=$(realpath "${BASE_TOOL:-$root/tests/omp/empty_tool.c}")
base_name=$(basename "$base_tool" .c | tr _ ' ')
clang-19 -O2 -shared -fPIC "$base_tool" -o "$work/base_tool.so"
export OMP_NUM_THREADS=$threads
unset HYSCOPE_MODE HYSCOPE_OUTPUT OMP_TOOL

# One run: appends "round construct µs" for every construct to $work/<label>.
run() {
    local label=$1 round=$2
    shift 2
    rm -rf "$work/trace"
    "$@" "$work/syncbench" --outer-repetitions 20 --test-time "$test_time" 2>"$work/stderr" \
        | awk -v r="$round" '/^(reference time|Running)/ { next } NF >= 2 && $NF ~ /^[0-9.]+$/ {
              name = $1; for (i = 2; i < NF; i++) name = name "_" $i; print r, name, $NF }' \
            >>"$work/$label" || { cat "$work/stderr" >&2; exit 1; }
}
: >"$work/none" ; : >"$work/empty-tool" ; : >"$work/trace-mode" ; : >"$work/profile-mode"
for r in $(seq "$rounds"); do
    run none "$r" env
    run empty-tool "$r" env LD_PRELOAD="$work/base_tool.so"
    run trace-mode "$r" env LD_PRELOAD="$lib" HYSCOPE_OUTPUT="$work/trace"
    run profile-mode "$r" env LD_PRELOAD="$lib" HYSCOPE_OUTPUT="$work/trace" HYSCOPE_MODE=profile
done

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "EPCC syncbench, $threads threads, $rounds alternating rounds, µs per construct; $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| construct | no tool | $base_name | added (median / median of pairs) | trace | added | profile | added |"
echo "|---|---|---|---|---|---|---|---|"
for c in $(awk '{print $2}' "$work/none" | awk '!seen[$0]++'); do
    none=$(awk -v c="$c" '$2 == c {print $3}' "$work/none" | median)
    line="| ${c//_/ } | $none"
    for l in empty-tool trace-mode profile-mode; do
        m=$(awk -v c="$c" '$2 == c {print $3}' "$work/$l" | median)
        pairs=$(join <(awk -v c="$c" '$2 == c {print $1, $3}' "$work/none" | sort -k1,1) \
                     <(awk -v c="$c" '$2 == c {print $1, $3}' "$work/$l" | sort -k1,1) \
                | awk '{print $3 - $2}' | median)
        line+=" | $m | $(awk -v a="$m" -v b="$none" -v p="$pairs" 'BEGIN { printf "%+.3f / %+.3f", a - b, p }')"
    done
    echo "$line |"
done

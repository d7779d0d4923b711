#!/usr/bin/env bash
# One EPCC construct (tests/omp/epcc.c, 2 threads) under several tool
# configurations in the same alternating rounds: no tool, then each
# LABEL:LIB[:VAR=VALUE,...] in turn, every round. Prints the no-tool time and,
# for each configuration, the time it adds by the median and by the 10th
# percentile of the rounds (this VM has episodes where a fork takes 4x longer,
# with or without a tool; many cheap rounds and a low percentile see past them).
# usage: tests/omp/ab-epcc.sh ROUNDS CONSTRUCT LABEL:LIB[:VAR=VALUE,...] ...
# e.g.   tests/omp/ab-epcc.sh 201 parallel old:/tmp/old.so: new:target/release/libhyscope.so: \
#            new-profile:target/release/libhyscope.so:HYSCOPE_MODE=profile
# (an empty OMPT tool: clang-19 -O2 -shared -fPIC tests/omp/empty_tool.c -o /tmp/empty.so)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rounds=$1
construct=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clang-19 -fopenmp -O2 -g -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib \
    "$root/tests/omp/epcc.c" -o "$work/epcc"
export OMP_NUM_THREADS=2
unset OMP_TOOL HYSCOPE_MODE HYSCOPE_GROUPS HYSCOPE_DISPATCH

overhead() { sed -n 's/.*overhead_us=\([-0-9.]*\).*/\1/p'; }
: >"$work/none"
for spec in "$@"; do : >"$work/${spec%%:*}"; done
for _ in $(seq "$rounds"); do
    "$work/epcc" "$construct" | overhead >>"$work/none"
    for spec in "$@"; do
        IFS=: read -r label lib vars <<<"$spec"
        rm -rf "$work/trace"
        # shellcheck disable=SC2046 # VAR=VALUE words for env
        env $(tr , ' ' <<<"$vars") LD_PRELOAD="$(realpath "$lib")" HYSCOPE_OUTPUT="$work/trace" \
            "$work/epcc" "$construct" | overhead >>"$work/$label"
    done
done
# The p-quantile of a file of numbers (nearest rank).
quantile() { sort -g "$1" | awk -v p="$2" '{v[NR] = $1} END {i = int(NR * p + 0.5); if (i < 1) i = 1; print v[i]}'; }
echo "EPCC $construct, $rounds alternating rounds, µs per construct; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| configuration | median | 10th percentile |"
echo "|---|---|---|"
b50=$(quantile "$work/none" 0.5)
b10=$(quantile "$work/none" 0.1)
echo "| no tool | $b50 | $b10 |"
for spec in "$@"; do
    label=${spec%%:*}
    awk -v l="$label" -v m="$(quantile "$work/$label" 0.5)" -v p="$(quantile "$work/$label" 0.1)" \
        -v bm="$b50" -v bp="$b10" 'BEGIN { printf "| %s | %+.3f | %+.3f |\n", l, m - bm, p - bp }'
done

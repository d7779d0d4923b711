#!/usr/bin/env bash
# Two builds of libhyscope.so side by side, for a change to the OMPT hot path:
# 1. instructions per callback (callgrind, deterministic) of each library,
#    for the sequences of tests/omp/callback_cost.c;
# 2. ns per callback of the same sequences, the libraries alternating;
# 3. EPCC overhead per construct (tests/omp/epcc.c, 2 threads), no tool and
#    the libraries alternating: median and minimum of the rounds (this VM has
#    episodes where a region fork or a contended critical takes 4x longer, with
#    or without a tool; the minimum is the undisturbed run).
# usage: tests/omp/ab-ompt.sh OLD.so NEW.so [rounds] [mode]   (mode: trace|profile, default trace)
# e.g.   git stash; cargo build --release -p hyscope-collector --lib; cp target/release/libhyscope.so /tmp/old.so
#        git stash pop; cargo build --release -p hyscope-collector --lib
#        tests/omp/ab-ompt.sh /tmp/old.so target/release/libhyscope.so 15
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-9}
mode=${4:-trace}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clang-19 -O2 "$root/tests/omp/callback_cost.c" -o "$work/callback_cost" -ldl
# Not inlined, so callgrind can collect one sequence function at a time.
clang-19 -O2 -fno-inline "$root/tests/omp/callback_cost.c" -o "$work/callback_cost_ni" -ldl
clang-19 -fopenmp -O2 -g -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib \
    "$root/tests/omp/epcc.c" -o "$work/epcc"
export OMP_NUM_THREADS=2 HYSCOPE_MODE=$mode
unset OMP_TOOL HYSCOPE_GROUPS HYSCOPE_DISPATCH

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
minimum() { sort -g | head -1; }
echo "old: $old"
echo "new: $new"
echo "mode: $mode, machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "| sequence | old instructions/callback | new instructions/callback |"
echo "|---|---|---|"
# sequence name, its function in callback_cost.c, callbacks per sequence
# (callback_cost runs reps/10 warm-up sequences first; "dynamic" runs 4x reps).
reps=100000
for s in parallel:primary_region:8 parallel-worker:worker_region:6 barrier:barrier:4 \
    critical:critical:3 dynamic:chunk:1; do
    IFS=: read -r name fn n <<<"$s"
    [ "$mode" = profile ] && [ "$name" = dynamic ] && continue # profile mode records no chunks
    runs=$reps; [ "$name" = dynamic ] && runs=$((reps * 4))
    calls=$(( (runs + runs / 10) * n ))
    row="| $name"
    for lib in "$old" "$new"; do
        rm -rf "$work/t"
        LD_PRELOAD=$lib HYSCOPE_OUTPUT=$work/t valgrind --tool=callgrind --toggle-collect="$fn" \
            --callgrind-out-file="$work/cg.out" "$work/callback_cost_ni" "$reps" "$name" >/dev/null 2>&1
        total=$(callgrind_annotate "$work/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
        row="$row | $(awk -v t="$total" -v c="$calls" 'BEGIN { printf "%.0f", t / c }')"
    done
    echo "$row |"
done

echo
echo "| sequence | old ns/callback | new ns/callback |"
echo "|---|---|---|"
: >"$work/cb"
for r in $(seq "$rounds"); do
    for which in old new; do
        lib=$old; [ "$which" = new ] && lib=$new
        rm -rf "$work/t"
        LD_PRELOAD=$lib HYSCOPE_OUTPUT=$work/t "$work/callback_cost" |
            sed -n "s/^\([^ ]*\) ns_per_callback=\([0-9.]*\).*/$which \1 \2/p" >>"$work/cb"
    done
done
for name in $(awk '$1 == "old" {print $2}' "$work/cb" | sort -u); do
    o=$(awk -v k="$name" '$1 == "old" && $2 == k {print $3}' "$work/cb" | median)
    n=$(awk -v k="$name" '$1 == "new" && $2 == k {print $3}' "$work/cb" | median)
    echo "| $name | $o | $n |"
done

echo
echo "EPCC, µs per construct (median / minimum of $rounds alternating rounds), added over no tool by the minimum:"
echo
echo "| construct | no tool | old | new | old added | new added |"
echo "|---|---|---|---|---|---|"
field() { sed -n "s/.*$1=\([-0-9.]*\).*/\1/p"; }
for c in parallel for barrier critical dynamic; do
    : >"$work/none"; : >"$work/old"; : >"$work/new"
    for r in $(seq "$rounds"); do
        "$work/epcc" "$c" | field overhead_us >>"$work/none"
        for which in old new; do
            lib=$old; [ "$which" = new ] && lib=$new
            rm -rf "$work/t"
            LD_PRELOAD=$lib HYSCOPE_OUTPUT=$work/t "$work/epcc" "$c" | field overhead_us >>"$work/$which"
        done
    done
    b=$(minimum <"$work/none"); o=$(minimum <"$work/old"); n=$(minimum <"$work/new")
    awk -v c="$c" -v bm="$(median <"$work/none")" -v om="$(median <"$work/old")" -v nm="$(median <"$work/new")" \
        -v b="$b" -v o="$o" -v n="$n" 'BEGIN {
        printf "| %s | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %+.3f | %+.3f |\n", c, bm, b, om, o, nm, n, o - b, n - b
    }'
done

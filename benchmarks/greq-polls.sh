#!/usr/bin/env bash
# Polling loops (issue 29): benchmarks/greq_polls.c, a copy of MPICH's
# threads/pt2pt/greq_test with the nap as an argument, 1 rank, bare and with
# libhyscope.so preloaded (trace mode) in alternating rounds. Prints, per
# round and as medians: the job's wall time, the polls per second of the
# polling loops (the cost of one poll), and the mpi rows the trace holds
# (without folding, one per poll: the polls count).
# usage: benchmarks/greq-polls.sh [ROUNDS] [SECONDS]   (defaults 5, 3)
# HYSCOPE_LIB: the collector (default target/release/libhyscope.so, from
# `cargo build --release -p hyscope-collector --lib`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
nap=${2:-3}
lib=$(realpath "${HYSCOPE_LIB:-$root/target/release/libhyscope.so}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 "$root/benchmarks/greq_polls.c" -o "$work/greq" -lpthread
launch=(mpirun --oversubscribe -np 1 --bind-to none)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
unset HYSCOPE_MODE HYSCOPE_OUTPUT

run() { # label command...: appends "wall polls seconds rows" to $work/<label>
    local label=$1 t0 t1 rows=-
    shift
    rm -rf "$work/t"
    t0=$EPOCHREALTIME
    "$@" >"$work/out" 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    t1=$EPOCHREALTIME
    if [ -d "$work/t" ]; then
        rows=$(python3 -c "import pyarrow.dataset as d; print(d.dataset('$work/t/mpi', format='parquet').count_rows())")
    fi
    awk -v a="$t0" -v b="$t1" -v r="$rows" '/^polls/ {p = $2} /^seconds/ {s = $2}
        END { printf "%.3f %d %.3f %s\n", b - a, p, s, r }' "$work/out" >>"$work/$label"
}
echo "greq_polls ($nap s per loop, 3 loops), $rounds alternating rounds; $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) cores"
for i in $(seq "$rounds"); do
    echo "round $i: load $(cut -d' ' -f1-3 /proc/loadavg)"
    run bare "${launch[@]}" "$work/greq" "$nap"
    run traced "${launch[@]}" -x LD_PRELOAD="$lib" -x HYSCOPE_OUTPUT="$work/t" "$work/greq" "$nap"
done
median() { awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "| run | wall (median) | polls/s (median) | mpi rows (median) |"
echo "|---|---|---|---|"
for l in bare traced; do
    w=$(median "$work/$l" 1)
    rate=$(awk '{print $2 / $3}' "$work/$l" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
    echo "| $l | $w s | $rate | $(median "$work/$l" 4) |"
done
echo "rounds (wall s, polls, loop s, rows):"
paste -d'|' "$work/bare" "$work/traced" | sed 's/^/  bare | traced: /'
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

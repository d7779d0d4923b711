#!/usr/bin/env bash
# `hyscope report` alone against `mpirun -np N hyscope report`, on the same
# trace in alternating rounds: each round's wall time, CPU seconds (all
# processes) and largest peak RSS, and whether the JSON is byte-identical.
# Prints the median of each. Make a trace with
#   cargo build --release -p hyscope-analyzer --example synth_trace
#   target/release/examples/synth_trace /tmp/s1e9 1000000000 4096 4   # 4.7 GB, ≈ 2.5 min
# usage: benchmarks/report-parallel.sh TRACE [ROUNDS] [PROCESSES]   (defaults 3, 4)
# HYSCOPE: the hyscope binary (default target/release/hyscope, with
# target/release/libhyscope_par.so next to it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trace=$1
rounds=${2:-3}
np=${3:-4}
hyscope=${HYSCOPE:-$root/target/release/hyscope}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
launch=(mpirun --oversubscribe -np "$np")
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)

# label command...: runs it under /usr/bin/time per process, appends
# "wall cpu peak_kb" to $work/<label>.
timed() {
    local label=$1 t0 t1
    shift
    rm -f "$work"/time.*
    t0=$EPOCHREALTIME
    "$@" 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
    t1=$EPOCHREALTIME
    cat "$work"/time.* | awk -v a="$t0" -v b="$t1" '
        { cpu += $1 + $2; if ($3 > peak) peak = $3 }
        END { printf "%.1f %.1f %d\n", b - a, cpu, peak }' >>"$work/$label"
}
for _ in $(seq "$rounds"); do
    # Written with -o, as a job would: through mpirun's forwarding of
    # process 0's output, the JSON takes seconds more.
    timed alone /usr/bin/time -f "%U %S %M" -o "$work/time.0" "$hyscope" report --json -o "$work/alone.json" "$trace"
    timed parallel "${launch[@]}" sh -c \
        '/usr/bin/time -f "%U %S %M" -o "$0/time.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" "$1" report --json -o "$0/parallel.json" "$2"' \
        "$work" "$hyscope" "$trace"
    cmp -s "$work/alone.json" "$work/parallel.json" || { echo "the JSON differs" >&2; exit 1; }
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-22s %8s %8s %10s\n' "" "wall s" "CPU s" "peak MiB"
for label in alone parallel; do
    name=$label
    [ "$label" = parallel ] && name="$np processes"
    printf '%-22s %8s %8s %10s\n' "$name" \
        "$(cut -d' ' -f1 "$work/$label" | median)" \
        "$(cut -d' ' -f2 "$work/$label" | median)" \
        "$(( $(cut -d' ' -f3 "$work/$label" | median) / 1024 ))"
done
echo "rounds: $rounds; every round's JSON byte-identical"

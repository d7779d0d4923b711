#!/usr/bin/env bash
# The collector's job-level work in MPI_Finalize (clock offsets, rank files,
# manifest) at several job sizes on this node, oversubscribed: runs
# tests/mpi/scale.c under LIB with `mpirun --oversubscribe -np N` ROUNDS times
# per size and prints, per size, the round with the median slowest rank: the
# slowest rank's and rank 0's time (the rank files' `finalize_ns`, which
# includes waiting for the other ranks to arrive). A library built with a
# timer that prints `hyscope-bench finalize <rank> <start_ns> <end_ns>`
# (CLOCK_MONOTONIC) on stderr when HYSCOPE_BENCH_FINALIZE is set gives also
# the time after the last rank arrived (max end − max start), which arrival
# skew does not blur; BENCHMARKS.md's figures were taken so.
# Usage: benchmarks/finalize-scale.sh LIB [ROUNDS] [SIZES...]
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(realpath "$1")
rounds=${2:-3}
shift 2 || shift $#
sizes=("${@:-8 32 64}")
# shellcheck disable=SC2206
sizes=(${sizes[*]})
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OMPI_CC=clang-19 mpicc -fopenmp -O1 tests/mpi/scale.c -o "$work/scale" \
    -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib
root=()
if [ "$(id -u)" = 0 ]; then root=(--allow-run-as-root); fi
for np in "${sizes[@]}"; do
    for r in $(seq "$rounds"); do
        t="$work/trace-$np-$r"
        mpirun "${root[@]}" --oversubscribe -np "$np" \
            -x LD_PRELOAD="$lib" -x HYSCOPE_OUTPUT="$t" -x HYSCOPE_BENCH_FINALIZE=1 \
            "$work/scale" >/dev/null 2>"$t.err"
        python3 - "$t" "$t.err" <<'PY'
import glob, json, sys
trace, err = sys.argv[1], sys.argv[2]
# rank -> (start, end) in ns of CLOCK_MONOTONIC (same on every rank of a node)
# from a timer printed on stderr, or (0, finalize_ns) from the rank files.
ns = {}
for line in open(err):
    p = line.split()
    if line.startswith("hyscope-bench finalize") and len(p) == 5:
        ns[int(p[2])] = (int(p[3]), int(p[4]))
if not ns:
    for f in glob.glob(trace + "/ranks/**/rank-*.json", recursive=True):
        r = json.load(open(f))
        if r.get("finalize_ns"):
            ns[r["rank"]] = (0, r["finalize_ns"])
dur = {r: e - s for r, (s, e) in ns.items()}
timed = all(s > 0 for s, _ in ns.values())
# After the last rank arrived: what the work adds to a collective that has to
# wait for every rank anyway.
after = (max(e for _, e in ns.values()) - max(s for s, _ in ns.values())) / 1e6 if timed else -1
print(f"{len(ns)} {max(dur.values()) / 1e6:.2f} {dur.get(0, 0) / 1e6:.2f} {after:.2f}")
PY
    done | sort -k2 -n | awk -v np="$np" -v n="$rounds" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
        '{ a[NR] = $0 } END { split(a[int((n + 1) / 2)], m, " ");
           printf "np %d: %d ranks timed, slowest rank %.2f ms, rank 0 %.2f ms, after the last arrival %s ms (median of %d rounds; load %s)\n",
                  np, m[1], m[2], m[3], (m[4] < 0 ? "-" : m[4]), n, load }'
done

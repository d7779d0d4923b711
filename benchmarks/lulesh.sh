#!/usr/bin/env bash
# LULESH 2.0 with and without hyscope, in alternating rounds: no tool, then
# `hyscope record` in trace mode, then in profile mode, every round. Prints
# each round and a table of LULESH's own grind time (µs per zone per cycle)
# and of the whole job's wall time (`mpirun …`, under `hyscope record` with
# the encoding it does at exit), by median and by median of the per-round
# ratios.
#
# LULESH is not part of this repository: get https://github.com/LLNL/LULESH
# (a clone, or the fetch tool's mirror:
#   mkdir -p /tmp/lulesh && git --git-dir=/work/.mirror/LLNL+LULESH/repo archive HEAD | tar -x -C /tmp/lulesh)
# and pass its directory.
#
# usage: benchmarks/lulesh.sh LULESH_DIR [ROUNDS] [RANKS] [THREADS] [SIZE] [ITERATIONS]
#   defaults: 11 rounds, 1 rank × 2 threads, -s 20 -i 200
#   (the 8-rank case: benchmarks/lulesh.sh DIR 11 8 1 10 100; LULESH needs a cube number of ranks)
# HYSCOPE: the hyscope binary (default target/release/hyscope; libhyscope.so beside it):
#   cargo build --release -p hyscope-viewer -p hyscope-collector
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(realpath "$1")
rounds=${2:-11}
ranks=${3:-1}
threads=${4:-2}
size=${5:-20}
iters=${6:-200}
hyscope=${HYSCOPE:-$root/target/release/hyscope}
[ -x "$hyscope" ] || { echo "no $hyscope: cargo build --release -p hyscope-viewer -p hyscope-collector" >&2; exit 1; }
[ -f "$src/lulesh.cc" ] || { echo "$src has no lulesh.cc (see the header of this script)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
OMPI_CXX=clang++-19 mpicxx -fopenmp -O3 -g -DUSE_MPI=1 -I"$src" \
    "$src"/lulesh.cc "$src"/lulesh-comm.cc "$src"/lulesh-viz.cc "$src"/lulesh-util.cc "$src"/lulesh-init.cc \
    -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib -o "$work/lulesh2.0"
launch=(mpirun --oversubscribe -np "$ranks" -x OMP_NUM_THREADS="$threads" --bind-to none)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
export OMP_NUM_THREADS=$threads
unset HYSCOPE_MODE HYSCOPE_OUTPUT

# One run: prints "grind wall".
run() {
    local t0 t1 out
    t0=$EPOCHREALTIME
    out=$("$@" 2>"$work/stderr") || { cat "$work/stderr" >&2; exit 1; }
    t1=$EPOCHREALTIME
    grind=$(sed -n 's/.*Grind time (us\/z\/c) *= *\([0-9.e+-]*\).*/\1/p' <<<"$out" | head -1)
    awk -v g="$grind" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.3f\n", g, b - a }'
}

: >"$work/rounds"
echo "LULESH -s $size -i $iters, $ranks rank(s) × $threads thread(s), $rounds rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round | none grind wall | trace grind wall | profile grind wall"
for r in $(seq "$rounds"); do
    none=$(run "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    rm -rf "$work/t"
    trace=$(run "$hyscope" record -o "$work/t" -- "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    rm -rf "$work/t"
    profile=$(run "$hyscope" record --mode profile -o "$work/t" -- "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    echo "$r | $none | $trace | $profile" | tee -a "$work/rounds"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rounds" <<'PY'
import statistics as st, sys
rows = [l.split("|") for l in open(sys.argv[1])]
cols = {name: [tuple(map(float, r[i].split())) for r in rows] for i, name in ((1, "none"), (2, "trace"), (3, "profile"))}
print()
print("| measure | no tool | trace | profile |")
print("|---|---|---|---|")
for k, label, unit in ((0, "grind time", "µs/z/c"), (1, "wall time", "s")):
    base = [v[k] for v in cols["none"]]
    cells = [f"{st.median(base):.4g} {unit}"]
    for name in ("trace", "profile"):
        vals = [v[k] for v in cols[name]]
        ratios = [t / b - 1 for t, b in zip(vals, base)]
        cells.append(f"{st.median(vals):.4g} {unit}: {100 * (st.median(vals) / st.median(base) - 1):+.1f} % (pairs {100 * st.median(ratios):+.1f} %)")
    print(f"| {label} | " + " | ".join(cells) + " |")
PY

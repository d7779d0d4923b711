#!/usr/bin/env bash
# LULESH 2.0 with and without hyscope, in alternating rounds: no tool, then
# `hyscope record` in trace mode, then in profile mode, every round. Prints
# each round and a table of LULESH's own grind time (µs per zone per cycle),
# over every round and over the steady rounds (every variant at the host's
# faster speed), and of the whole job's wall time (`mpirun …`, under `hyscope record` with
# the encoding it does at exit), by median and by median of the per-round
# ratios; and the wall time less the Parquet encoding at exit that `hyscope
# record` reports (the target is for the job without it).
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
# RECORD_ARGS: more `hyscope record` options for both recorded variants, e.g.
#   RECORD_ARGS="--groups parallel,sync" (what a lighter configuration costs)
# BASE_TOOL: the C source of the OMPT tool run as the second variant
#   (default tests/omp/empty_tool.c, which does nothing in its callbacks);
#   BASE_TOOL=benchmarks/raw_log_tool.c takes the floor of a per-event tracer
#   (a TSC read and a 24-byte store per callback) instead.
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
# An OMPT tool that registers hyscope's callbacks and does nothing in them:
# what libomp does differently once any tool is attached is then told apart
# from what hyscope itself adds over this one.
#
# HEAP=steady (the default) runs every rank of every variant with glibc's
# heap trimming and mmap threshold fixed (GLIBC_TUNABLES below). LULESH
# allocates and frees about 4 MB of temporaries every step; with glibc's
# defaults `free` gives the heap's top back to the system and the next step
# faults it in again (≈ 200,000 minor page faults in a 1 × 2 run), unless any
# allocation that outlives the step sits above them, which the tool's
# threads, libomp's tool support and MPI_T make happen in some runs and not
# in others (14,000 to 210,000 faults with the tool): LULESH then ran up to
# 25 % faster with a tool than without one. Fixed thresholds make every
# variant keep its heap, so the rounds compare the tool's cost and not where
# glibc's heap top happened to land. HEAP=default leaves glibc as it is. The
# minor page faults of each run are printed beside its times.
base_tool=$(realpath "${BASE_TOOL:-$root/tests/omp/empty_tool.c}")
base_name=$(basename "$base_tool" .c | tr _ ' ')
clang-19 -O2 -shared -fPIC "$base_tool" -o "$work/base_tool.so"
launch=(mpirun --oversubscribe -np "$ranks" -x OMP_NUM_THREADS="$threads" --bind-to none)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
heap=${HEAP:-steady}
case $heap in
steady) launch+=(-x GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=33554432) ;;
default) ;;
*) echo "HEAP is steady or default, not $heap" >&2; exit 1 ;;
esac
export OMP_NUM_THREADS=$threads
unset HYSCOPE_MODE HYSCOPE_OUTPUT
read -r -a record_args <<<"${RECORD_ARGS:-}"

# One run: prints "grind wall encoding faults", the encoding the seconds
# `hyscope record` reports for the Parquet encoding at exit (0 without it),
# faults the minor page faults of the job's processes (GNU time's %R).
run() {
    local t0 t1 out enc faults
    t0=$EPOCHREALTIME
    out=$(/usr/bin/time -f %R -o "$work/faults" "$@" 2>"$work/stderr") || { cat "$work/stderr" >&2; exit 1; }
    t1=$EPOCHREALTIME
    faults=$(tail -1 "$work/faults")
    grind=$(sed -n 's/.*Grind time (us\/z\/c) *= *\([0-9.e+-]*\).*/\1/p' <<<"$out" | head -1)
    enc=$(sed -n 's/.*encoding \([0-9.]*\) \(ms\|s\|µs\) at exit.*/\1 \2/p' "$work/stderr" | head -1)
    awk -v g="$grind" -v a="$t0" -v b="$t1" -v e="$enc" -v f="$faults" 'BEGIN {
        split(e, x, " "); enc = x[1] / (x[2] == "ms" ? 1e3 : x[2] == "µs" ? 1e6 : 1)
        printf "%s %.3f %.3f %d\n", g, b - a, enc, f }'
}

: >"$work/rounds"
echo "LULESH -s $size -i $iters, $ranks rank(s) × $threads thread(s), $rounds rounds, HEAP=$heap, record ${record_args[*]:-(defaults)}; $(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round | none grind wall enc faults | $base_name grind wall enc faults | trace grind wall enc faults | profile grind wall enc faults"
for r in $(seq "$rounds"); do
    none=$(run "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    empty=$(run "${launch[@]}" -x LD_PRELOAD="$work/base_tool.so" "$work/lulesh2.0" -s "$size" -i "$iters")
    rm -rf "$work/t"
    trace=$(run "$hyscope" record "${record_args[@]}" -o "$work/t" -- "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    rm -rf "$work/t"
    profile=$(run "$hyscope" record "${record_args[@]}" --mode profile -o "$work/t" -- "${launch[@]}" "$work/lulesh2.0" -s "$size" -i "$iters")
    echo "$r | $none | $empty | $trace | $profile" | tee -a "$work/rounds"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/rounds" "$base_name" <<'PY'
import statistics as st, sys
tool = sys.argv[2]
rows = [l.split("|") for l in open(sys.argv[1])]
cols = {name: [tuple(map(float, r[i].split())) for r in rows]
        for i, name in ((1, "none"), (2, tool), (3, "trace"), (4, "profile"))}
faults = {n: st.median(v[3] for v in vals) for n, vals in cols.items()}
cols = {n: [(g, w, w - e) for g, w, e, _ in v] for n, v in cols.items()}
measures = ((0, "grind time", "µs/z/c"), (1, "wall time", "s"),
            (2, "wall time less the encoding record reports", "s"))

def cell(name, k, unit, against):
    vals = [v[k] for v in cols[name]]
    base = [v[k] for v in cols[against]]
    ratios = [t / b - 1 for t, b in zip(vals, base)]
    return (f"{st.median(vals):.4g} {unit}: {100 * (st.median(vals) / st.median(base) - 1):+.1f} % "
            f"(pairs {100 * st.median(ratios):+.1f} %)")

print("minor page faults per job (median): " + ", ".join(f"{n} {faults[n]:,.0f}" for n in faults))
# This VM's speed switches between levels from one run to the next (grind
# time ≈ 0.41 or ≈ 0.65 µs/z/c on 1 × 2), and a set's median moves with how
# many runs of each variant fell at the slower one. Rounds where every
# variant ran at the faster level (each grind time within 1.25 × the set's
# fastest no-tool run: any tool's cost is well under that) compare like
# with like.
floor = min(v[0] for v in cols["none"])
steady = [i for i in range(len(rows)) if all(cols[n][i][0] <= 1.25 * floor for n in cols)]
if steady:
    print(f"steady rounds (every variant's grind time within 1.25 × the fastest no-tool run): {len(steady)} of {len(rows)}")
    print(f"| grind time | none | {tool} | trace | profile |")
    print("|---|---|---|---|---|")
    base = [cols["none"][i][0] for i in steady]
    line = f"| steady rounds | {st.median(base):.4g} µs/z/c"
    for n in (tool, "trace", "profile"):
        vals = [cols[n][i][0] for i in steady]
        pairs = [v / b - 1 for v, b in zip(vals, base)]
        line += f" | {100 * (st.median(vals) / st.median(base) - 1):+.1f} % (pairs {100 * st.median(pairs):+.1f} %)"
    print(line + " |")
for against in ("none", tool):
    print()
    print(f"against {'no tool' if against == 'none' else 'the ' + tool + ' (what hyscope adds to it)'}:")
    print(f"| measure | {against} | trace | profile |")
    print("|---|---|---|---|")
    for k, label, unit in measures:
        base = st.median(v[k] for v in cols[against])
        print(f"| {label} | {base:.4g} {unit} | {cell('trace', k, unit, against)} | {cell('profile', k, unit, against)} |")
PY

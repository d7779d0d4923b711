#!/usr/bin/env bash
# The OSU micro-benchmarks with and without hyscope, in alternating rounds:
# no tool, then `hyscope record` in trace mode, then in profile mode, every
# round, for osu_latency, osu_bw, osu_allreduce and osu_barrier on 2 ranks.
# Each benchmark times its own loop, so the figures are per message (or per
# collective call) and leave out the job's start and the encoding at exit.
# Prints, per benchmark and message size, the median over the rounds for no
# tool and what each mode adds (latency: ns per call; bandwidth: %).
#
# The OSU micro-benchmarks are not part of this repository: get them from
# https://mvapich.cse.ohio-state.edu/benchmarks/ or a mirror (the fetch
# tool's: `git --git-dir=/work/.mirror/forresti+osu-micro-benchmarks/repo
# archive HEAD | tar -x -C /tmp/osu`, version 5.3) and pass the source
# directory; they are configured and built out of tree with `mpicc`.
#
# usage: benchmarks/osu.sh OSU_DIR [ROUNDS]   (default 5 rounds)
# OSU_BUILD: where to build (default: a temporary directory; give one to
#   build once and reuse it)
# HYSCOPE: the hyscope binary (default target/release/hyscope; libhyscope.so
#   beside it): cargo build --release -p hyscope-viewer -p hyscope-collector
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(realpath "$1")
rounds=${2:-5}
hyscope=${HYSCOPE:-$root/target/release/hyscope}
[ -x "$hyscope" ] || { echo "no $hyscope: cargo build --release -p hyscope-viewer -p hyscope-collector" >&2; exit 1; }
[ -x "$src/configure" ] && [ -f "$src/mpi/pt2pt/osu_latency.c" ] || { echo "$src is not an OSU micro-benchmarks source tree (see the header of this script)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=${OSU_BUILD:-$work/build}
if [ ! -x "$build/mpi/pt2pt/osu_latency" ]; then
    mkdir -p "$build"
    (cd "$build" && "$src/configure" CC=mpicc CXX=mpicxx >"$work/configure.log" 2>&1 && make -j"$(nproc)" >"$work/make.log" 2>&1) ||
        { tail -n 20 "$work/configure.log" "$work/make.log" >&2; exit 1; }
fi

launch=(mpirun -np 2 --bind-to core)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
unset HYSCOPE_MODE HYSCOPE_OUTPUT
benches=(pt2pt/osu_latency pt2pt/osu_bw "collective/osu_allreduce -m 4:65536" collective/osu_barrier)

# One run: the benchmark's "size value" lines ("- value" for one without
# sizes), tagged with the benchmark's name.
run() {
    local name=$1
    shift
    "$@" 2>"$work/stderr" | awk -v b="$name" '/^ *[0-9]/ { if (NF == 1) print b, "-", $1; else print b, $1, $2 }' ||
        { cat "$work/stderr" >&2; exit 1; }
}

echo "OSU micro-benchmarks, 2 ranks (bound to a core each), $rounds rounds; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/results"
for r in $(seq "$rounds"); do
    for b in "${benches[@]}"; do
        read -ra cmd <<<"$b"
        name=$(basename "${cmd[0]}")
        exe=("$build/mpi/${cmd[0]}" "${cmd[@]:1}")
        run "$name" "${launch[@]}" "${exe[@]}" | sed "s/^/$r none /" >>"$work/results"
        for mode in trace profile; do
            rm -rf "$work/t"
            run "$name" "$hyscope" record --mode "$mode" -o "$work/t" -- "${launch[@]}" "${exe[@]}" |
                sed "s/^/$r $mode /" >>"$work/results"
        done
    done
    echo "round $r done, load $(cut -d' ' -f1 /proc/loadavg)"
done
python3 - "$work/results" <<'PY'
import statistics as st, sys
from collections import defaultdict
vals = defaultdict(list)  # (bench, size, variant) -> values
order = []
for line in open(sys.argv[1]):
    r, variant, bench, size, v = line.split()
    key = (bench, size)
    if key not in order:
        order.append(key)
    vals[(bench, size, variant)].append(float(v))
bench = None
for b, size in order:
    if b != bench:
        bench = b
        bw = b in ("osu_bw", "osu_bibw")
        unit = "MB/s" if bw else "µs"
        print()
        print(f"{b} ({'bandwidth' if bw else 'latency'}, median of the rounds)")
        print(f"| size (B) | no tool ({unit}) | trace | profile |")
        print("|---|---|---|---|")
    base = st.median(vals[(b, size, "none")])
    cells = []
    for mode in ("trace", "profile"):
        m = st.median(vals[(b, size, mode)])
        if bw:
            cells.append(f"{m:.1f} ({100 * (m / base - 1):+.1f} %)")
        else:
            cells.append(f"{m:.2f} ({1000 * (m - base):+.0f} ns)")
    print(f"| {size} | {base:.2f} | {cells[0]} | {cells[1]} |")
PY

#!/usr/bin/env bash
# Windows of small nonblocking sends (benchmarks/isend_window.c, the pattern of
# osu_bw): ns per message without the collector and with each given build of
# it, in alternating rounds, under Open MPI or MPICH. Prints every round and
# the median of each variant.
# usage: benchmarks/isend-window.sh openmpi|mpich ROUNDS LIB.so [LIB.so ...]
#   (the builds of the flavour: target/release/libhyscope.so for Open MPI,
#   target/release/libhyscope-mpich.so for MPICH, scripts/build-mpich.sh --release)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
flavour=$1 rounds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $flavour in
openmpi)
    mpicc -O2 -o "$work/bw" "$root/benchmarks/isend_window.c"
    launch=(mpirun -np 2 --bind-to core)
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
    preload() { echo -x "LD_PRELOAD=$1" -x "HYSCOPE_OUTPUT=$2"; } ;;
mpich)
    mpicc.mpich -O2 -o "$work/bw" "$root/benchmarks/isend_window.c"
    launch=(mpiexec.mpich -np 2 -bind-to core)
    preload() { echo -env LD_PRELOAD "$1" -env HYSCOPE_OUTPUT "$2"; } ;;
*) echo "usage: $0 openmpi|mpich ROUNDS LIB.so [LIB.so ...]" >&2; exit 2 ;;
esac
for r in $(seq "$rounds"); do
    echo "bare $("${launch[@]}" "$work/bw" | awk '/ns_per_message/ {print $2}')"
    i=0
    for lib in "$@"; do
        i=$((i + 1))
        # shellcheck disable=SC2046
        x=$("${launch[@]}" $(preload "$lib" "$work/trace") "$work/bw" 2>/dev/null | awk '/ns_per_message/ {print $2}')
        rm -rf "$work/trace"
        echo "lib$i $x"
    done
done | tee "$work/rounds"
echo "median ns per message (lib1 = $1${2:+, lib2 = $2}):"
sort -k1,1 -k2,2n "$work/rounds" | awk '{v[$1] = v[$1] " " $2; n[$1]++}
    END {for (k in v) {split(substr(v[k], 2), a, " "); print k, a[int((n[k] + 1) / 2)]}}'

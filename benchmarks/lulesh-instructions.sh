#!/usr/bin/env bash
# What hyscope adds to LULESH's application threads, in instructions rather
# than seconds: callgrind (valgrind) counts every instruction each thread
# executes, the same count for the same binary and input whatever else the
# machine is doing, so it resolves what LULESH's grind time cannot on a
# shared 2-core VM (its rounds spread ±9 %). Runs LULESH three ways — no
# tool, trace mode, profile mode — and prints, per application thread (the
# main thread up to the return of `main`, so the encoding at exit is left
# out; each OpenMP worker in full): the instructions, the difference to no
# tool, and how much of it is hyscope's own code (every instruction in the
# collector library, HYSCOPE_LIB) and how much the OpenMP runtime's tool
# support (libomp's own instructions over its no-tool count), counted per
# object from callgrind's files.
#
# Instructions are not time: a descheduled thread, a cache miss or a
# writer thread competing for a core costs time without instructions. This
# measures the work the tool puts on the application's threads; the
# time-based figures come from benchmarks/lulesh.sh.
#
# LULESH is not part of this repository: see benchmarks/lulesh.sh for where to
# get it.
#
# usage: benchmarks/lulesh-instructions.sh LULESH_DIR [SIZE] [ITERATIONS]
#   defaults: -s 20 -i 50 (1 rank × 2 threads; per iteration as -i 200)
# RANKS, THREADS: the job's shape (default 1 × 2; the 8-rank case:
#   RANKS=8 THREADS=1 benchmarks/lulesh-instructions.sh DIR 10 100). With
#   several ranks, the main threads are summed over the ranks, and so are
#   the OpenMP workers.
# HYSCOPE_LIB: the collector (default target/release/libhyscope.so):
#   cargo build --release -p hyscope-collector --lib
#   Any OMPT tool library works: HYSCOPE_LIB=raw_log_tool.so (built from
#   benchmarks/raw_log_tool.c) for the floor of a per-event tracer,
#   HYSCOPE_LIB=empty_tool.so (tests/omp/empty_tool.c) for libomp's tool
#   support alone; their two columns are then the same tool run twice.
# HYSCOPE_GROUPS (and the other HYSCOPE_* settings) in the environment reach
#   the ranks (mpirun passes its environment on to local processes): e.g.
#   HYSCOPE_GROUPS=parallel for what recording only the regions costs.
# KEEP_DIR: keep LULESH's build and callgrind's output files there (for
#   `callgrind_annotate` per function), and reuse the build and the no-tool
#   run found there (neither depends on the collector): the way to compare
#   two collectors on the same LULESH binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(realpath "$1")
size=${2:-20}
iters=${3:-50}
lib=$(realpath "${HYSCOPE_LIB:-$root/target/release/libhyscope.so}")
[ -f "$lib" ] || { echo "no $lib: cargo build --release -p hyscope-collector --lib" >&2; exit 1; }
[ -f "$src/lulesh.cc" ] || { echo "$src has no lulesh.cc (see benchmarks/lulesh.sh)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
if [ -n "${KEEP_DIR:-}" ]; then
    mkdir -p "$KEEP_DIR"
    work=$(realpath "$KEEP_DIR")
    rm -rf "$work"/t-* "$work"/trace.* "$work"/profile.*
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
# DWARF 4: Debian 12's valgrind 3.19 does not read clang-19's default DWARF 5.
[ -x "$work/lulesh2.0" ] || OMPI_CXX=clang++-19 mpicxx -fopenmp -O3 -gdwarf-4 -DUSE_MPI=1 -I"$src" \
    "$src"/lulesh.cc "$src"/lulesh-comm.cc "$src"/lulesh-viz.cc "$src"/lulesh-util.cc "$src"/lulesh-init.cc \
    -Wl,-rpath,/usr/lib/llvm-19/lib -L/usr/lib/llvm-19/lib -o "$work/lulesh2.0"
ranks=${RANKS:-1}
threads=${THREADS:-2}
launch=(mpirun --oversubscribe -np "$ranks" -x OMP_NUM_THREADS="$threads" -x KMP_BLOCKTIME=0)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
# KMP_BLOCKTIME=0: threads sleep at once instead of spinning at barriers,
# which under valgrind's serialised threads would count instructions of
# waiting, not of work.
for mode in none trace profile; do
    # The no-tool run of a kept directory is reused (same binary, same input).
    [ "$mode" = none ] && [ -n "${KEEP_DIR:-}" ] && [ -s "$work/none.out" ] \
        && grep -q -- "-s $size -i $iters $ranks×$threads\$" "$work/none.args" 2>/dev/null && continue
    rm -f "$work/$mode".*
    pre=()
    [ "$mode" != none ] && pre=(-x LD_PRELOAD="$lib" -x HYSCOPE_OUTPUT="$work/t-$mode" -x HYSCOPE_MODE="$mode")
    # --dump-before: the main thread's counts up to MPI_Finalize (hyscope's
    # wrapper, or Open MPI's PMPI_Finalize) go to a part of their own; in
    # MPI_Finalize hyscope encodes its trace into Parquet, which the target
    # leaves out.
    "${launch[@]}" "${pre[@]}" valgrind --tool=callgrind --separate-threads=yes '--dump-before=*MPI_Finalize' \
        --callgrind-out-file="$work/$mode.%p" "$work/lulesh2.0" -s "$size" -i "$iters" \
        >"$work/$mode.out" 2>"$work/$mode.err" || { tail "$work/$mode.err" >&2; exit 1; }
    if [ "$mode" = none ]; then echo "-s $size -i $iters $ranks×$threads" >"$work/none.args"; fi
done
echo "LULESH -s $size -i $iters, $ranks rank(s) × $threads thread(s), callgrind; $(valgrind --version)"
python3 - "$work" "$lib" <<'PY'
import glob, os, re, subprocess, sys

work, lib = sys.argv[1], sys.argv[2]
line = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+(\S.*)$")

def annotate(path, inclusive):
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100", path],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for l in out.splitlines():
        m = line.match(l)
        if m and "PROGRAM TOTALS" not in l:
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return rows

def per_object(path):
    """Each object's own instructions (self cost), read from callgrind's
    file itself: `callgrind_annotate` names a function without a symbol by
    its offset and merges such functions of different objects under one
    object (libomp's allocator, 6 M instructions of the 1 × 1 run, once came
    out under another library)."""
    names, cost = {}, {}
    ob, skip, npos = None, False, 1
    for l in open(path):
        if l.startswith("positions:"):
            npos = len(l.split()) - 1
        elif l.startswith("ob="):
            m = re.match(r"\((\d+)\)(?:\s+(.*))?", l[3:].strip())
            if m.group(2):
                names[m.group(1)] = m.group(2)
            ob = names.get(m.group(1))
        elif l.startswith("cob="):
            m = re.match(r"\((\d+)\)(?:\s+(.*))?", l[4:].strip())
            if m.group(2):
                names[m.group(1)] = m.group(2)
        elif l.startswith("calls="):
            skip = True  # the next cost line is the call's inclusive cost
        elif l[:1] in "0123456789+-*":
            if skip:
                skip = False
                continue
            parts = l.split()
            if len(parts) > npos:
                cost[ob] = cost.get(ob, 0) + int(parts[npos])
    return cost

def threads(mode):
    """(label, instructions, hyscope's, libomp's) per kind of application
    thread, summed over the ranks: the main threads up to MPI_Finalize (the
    dump made there, part 1), then the OpenMP workers in full (each thread's
    file at exit)."""
    res = {}
    mains = glob.glob(os.path.join(work, f"{mode}.*.1-01"))
    workers = [p for p in sorted(glob.glob(os.path.join(work, f"{mode}.*-*")))
               if re.search(r"\.\d+-\d+$", p) and not p.endswith("-01")]
    for label, path in [("main thread, to MPI_Finalize", p) for p in mains] + \
                       [("OpenMP worker", p) for p in workers]:
        incl = annotate(path, True)
        if label == "OpenMP worker" and not any("__kmp_invoke_microtask" in d for _, d in incl):
            continue  # MPI's, the collector's own threads
        total = int(re.search(r"^summary: (\d+)", open(path).read(), re.M).group(1))
        own = per_object(path)
        tool = sum(n for o, n in own.items() if o and (o == lib or "libhyscope" in o))
        omp = sum(n for o, n in own.items() if o and "libomp" in o)
        count, t0, t1, t2 = res.get(label, (0, 0, 0, 0))
        res[label] = (count + 1, t0 + total, t1 + tool, t2 + omp)
    plural = {"main thread, to MPI_Finalize": "main threads, to MPI_Finalize", "OpenMP worker": "OpenMP workers"}
    return [(f"{plural[label]} ({count})" if count > 1 else label, total, tool, omp)
            for label, (count, total, tool, omp) in res.items()]

runs = {m: threads(m) for m in ("none", "trace", "profile")}
print()
print("| thread | no tool | trace | profile |")
print("|---|---|---|---|")
for i, (label, base, _, base_omp) in enumerate(runs["none"]):
    cells = [f"{base / 1e6:,.1f} M"]
    for m in ("trace", "profile"):
        _, n, tool, omp = runs[m][i]
        cells.append(f"{n / 1e6:,.1f} M: {100 * (n / base - 1):+.2f} % (hyscope's code {100 * tool / base:.2f} %, "
                     f"libomp's tool support {100 * (omp - base_omp) / base:+.2f} %)")
    print(f"| {label} | " + " | ".join(cells) + " |")
PY

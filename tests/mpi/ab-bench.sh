#!/usr/bin/env bash
# Two builds of libhyscope.so side by side for the MPI wrapper cost: rounds of
# tests/mpi/bench.sh (1 and 2 ranks), the old and the new library alternating in
# one run, then the median and the minimum over the rounds of each "added" figure
# (wrapped minus PMPI in the same process; the bare line is bench.sh's control,
# both columns bare MPI).
# usage (from the repository root): tests/mpi/ab-bench.sh OLD.so NEW.so [rounds] [iterations]
# e.g.   git worktree add --detach /tmp/old OLD_COMMIT
#        (cd /tmp/old && cargo build --release -p hyscope-collector --lib)
#        cargo build --release -p hyscope-collector --lib
#        tests/mpi/ab-bench.sh /tmp/old/target/release/libhyscope.so target/release/libhyscope.so 7
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
rounds=${3:-5}
n=${4:-200000}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "old: $old"
echo "new: $new"
echo "rounds: $rounds of bench.sh $n 1, machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
    for which in old new; do
        lib=$old
        [ "$which" = new ] && lib=$new
        # bench.sh prints "== without …" then "== np=N with …" before each run's lines.
        HYSCOPE_LIB="$lib" tests/mpi/bench.sh "$n" 1 2>&1 |
            awk -v w="$which" '/^== without/ {np = "bare"} /^== np=/ {split($2, a, "="); np = "np" a[2]}
                /added/ {print w, np, $0}' >> "$log"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$log" <<'EOF'
import collections, re, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    which, np, rest = line.split(" ", 2)
    metric = rest.split()[0]
    if metric == "iprobe_short_ns":
        m = re.search(r"min: .*?added (\S+);", rest)
        v[(np, "iprobe_short_ns min", which)].append(float(m.group(1)))
    else:
        v[(np, metric, which)].append(float(re.search(r"added (\S+)", rest).group(1)))
print("\n| ranks | figure (ns added per call, wrapped − PMPI) | old: median (min … max) | new: median (min … max) |")
print("|---|---|---|---|")
keys = sorted({(np, m) for np, m, _ in v})
for np, m in keys:
    cells = []
    for w in ("old", "new"):
        x = v.get((np, m, w), [])
        cells.append(f"{statistics.median(x):+.1f} ({min(x):+.1f} … {max(x):+.1f}), n={len(x)}" if x else "—")
    print(f"| {np} | {m} | {cells[0]} | {cells[1]} |")
EOF

#!/usr/bin/env bash
# MPICH's own test suite (test/mpi of pmodels/mpich) as a transparency check of the
# collector: every test runs twice, bare and with libhyscope.so preloaded (a fresh
# HYSCOPE_OUTPUT per test), and the two status lists must be identical, with no
# `hyscope:` line on any output and every trace readable by `hyscope report --json`.
#
# The MPICH sources are not part of this repository and this script never downloads
# them: check pmodels/mpich out yourself and give the checkout (or its bare git
# directory) as MPICH_SRC, e.g.
#     git clone --depth 1 https://github.com/pmodels/mpich /opt/src/mpich
#     scripts/mpich-suite.sh /opt/src/mpich
# Only test/mpi, confdb/ and maint/version.m4 are copied out of it, into WORK.
#
# Usage: scripts/mpich-suite.sh [options] MPICH_SRC
#   --flavour openmpi|mpich  the MPI the tests are built with and run on (default openmpi):
#                            openmpi = Debian's Open MPI 4.1 (mpicc, mpirun) with
#                            target/release/libhyscope.so; mpich = Debian's MPICH
#                            (mpicc.mpich, mpiexec.mpich) with libhyscope-mpich.so
#                            (scripts/build-mpich.sh --release builds it)
#   --dirs "D ..."           test directories (default: pt2pt coll comm group datatype rma
#                            threads/pt2pt, and f77/pt2pt f90/pt2pt when gfortran exists)
#   --timeout S              seconds per test (default 180, MPICH's runtests default; a
#                            testlist's larger timeLimit wins)
#   --reruns N               an entry whose status differs is run N more times both ways
#                            before it is called a difference (default 2)
#   --summary                only print the summary of what WORK holds (runs are resumable:
#                            entries already run are not run again; --fresh starts over)
#   --fresh                  forget earlier results
#   --build-only             prepare, configure and build, run nothing
# Environment: WORK (default /tmp/hyscope-mpich-suite), HYSCOPE_LIB (the collector),
# HYSCOPE_BIN (default target/release/hyscope), JOBS (make -j, default 2),
# CARGO_TARGET_DIR (where the two defaults are looked for).
#
# Needs autoconf, automake, libtool and python3 (test/mpi is configured from its
# autotools sources): `apt-get install autoconf automake libtool` on Debian. Tests run
# one at a time. The threads/ directories run with OMP_NUM_THREADS=2 (both ways).
# Output: WORK/FLAVOUR/{build,results.jsonl,summary.txt}; traces are removed once read
# (KEEP_TRACES=1 keeps them in WORK/FLAVOUR/traces).
# To stop a run, signal its whole process group (start it with `setsid`, then
# `kill -- -PGID`): killing the shell alone leaves the Python driver running, and
# two drivers on one WORK remove each other's trace directories.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
flavour=openmpi
dirs=""
timeout=180
reruns=2
summary_only=0
build_only=0
fresh=0
src=""
while [ $# -gt 0 ]; do
    case "$1" in
    --flavour) flavour="$2"; shift 2 ;;
    --dirs) dirs="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --reruns) reruns="$2"; shift 2 ;;
    --summary) summary_only=1; shift ;;
    --fresh) fresh=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mpich-suite: unknown option $1" >&2; exit 2 ;;
    *) src="$1"; shift ;;
    esac
done

work="${WORK:-/tmp/hyscope-mpich-suite}"
target="${CARGO_TARGET_DIR:-$repo/target}"
case "$flavour" in
openmpi)
    lib="${HYSCOPE_LIB:-$target/release/libhyscope.so}"
    cc=mpicc; f77=mpif77; fc=mpifort; cxx=mpicxx; launcher=mpirun ;;
mpich)
    lib="${HYSCOPE_LIB:-$target/release/libhyscope-mpich.so}"
    cc=mpicc.mpich; f77=mpif77.mpich; fc=mpif90.mpich; cxx=mpicxx.mpich; launcher=mpiexec.mpich ;;
*) echo "mpich-suite: --flavour is openmpi or mpich, not $flavour" >&2; exit 2 ;;
esac
hyscope="${HYSCOPE_BIN:-$target/release/hyscope}"
if [ -z "$dirs" ]; then
    dirs="pt2pt coll comm group datatype rma threads/pt2pt"
    if command -v gfortran > /dev/null; then dirs="$dirs f77/pt2pt f90/pt2pt"; fi
fi
fw="$work/$flavour"
build="$fw/build"
mkdir -p "$fw"
if [ "$fresh" = 1 ]; then rm -f "$fw/results.jsonl"; fi

if [ "$summary_only" = 0 ]; then
    for f in "$lib" "$hyscope"; do
        [ "$build_only" = 1 ] || [ -e "$f" ] || { echo "mpich-suite: $f does not exist (cargo build --release -p hyscope-collector --lib -p hyscope-viewer; scripts/build-mpich.sh --release for MPICH)" >&2; exit 2; }
    done
    for t in autoreconf automake libtoolize python3 "$cc" "$launcher"; do
        command -v "$t" > /dev/null || { echo "mpich-suite: $t is missing (apt-get install autoconf automake libtool python3; MPI: scripts/install-deps.sh)" >&2; exit 2; }
    done

    # 1. test/mpi's autotools sources, copied out of the user's MPICH tree, made once.
    if [ ! -e "$work/src/.autogen-done" ]; then
        [ -n "$src" ] || { echo "mpich-suite: give the pmodels/mpich checkout as MPICH_SRC (see the top of $0)" >&2; exit 2; }
        rm -rf "$work/src"
        mkdir -p "$work/src"
        if [ -d "$src/test/mpi" ]; then
            (cd "$src" && cp -a --parents test/mpi confdb maint/version.m4 "$work/src/")
        elif git --git-dir="$src" rev-parse --verify -q HEAD > /dev/null; then
            git --git-dir="$src" archive HEAD test/mpi confdb maint/version.m4 | tar -x -C "$work/src"
        else
            echo "mpich-suite: $src is neither an MPICH checkout (no test/mpi) nor its git directory" >&2
            exit 2
        fi
        echo "mpich-suite: autogen in $work/src/test/mpi"
        (cd "$work/src/test/mpi" && MPICH_CONFDB="$work/src/confdb" ./autogen.sh > "$work/src/autogen.log" 2>&1) ||
            { echo "mpich-suite: autogen failed, see $work/src/autogen.log" >&2; exit 1; }
        touch "$work/src/.autogen-done"
    fi

    # 2. configure against the flavour's compiler wrappers (MPI-standard tests only:
    # neither MPI has every MPIX extension of MPICH's development tree).
    if [ ! -e "$build/.configured" ]; then
        rm -rf "$build"
        mkdir -p "$build"
        echo "mpich-suite: configure ($flavour) in $build"
        fortran=""
        command -v gfortran > /dev/null || fortran="--disable-fortran"
        (cd "$build" && "$work/src/test/mpi/configure" MPICC="$cc" MPIF77="$f77" MPIFC="$fc" MPICXX="$cxx" \
            --enable-strictmpi --disable-spawn --disable-cxx --disable-io --disable-ft-tests \
            --disable-perftest $fortran > configure.log 2>&1) ||
            { echo "mpich-suite: configure failed, see $build/configure.log" >&2; exit 1; }
        touch "$build/.configured"
    fi

    # 3. build the subset, each directory once; a program that does not compile is
    # "notbuilt", not an error.
    for d in util dtpools $dirs; do
        [ -d "$build/$d" ] && [ ! -e "$build/$d/.hyscope-built" ] || continue
        echo "mpich-suite: make -k in $d, log $build/build.log"
        make -k -j"${JOBS:-2}" -C "$build/$d" >> "$build/build.log" 2>&1 || true
        touch "$build/$d/.hyscope-built"
    done
fi
if [ "$build_only" = 1 ]; then exit 0; fi

# 4. run every entry bare and preloaded, then the summary.
FLAVOUR="$flavour" LIB="$lib" HYSCOPE="$hyscope" BUILD="$build" SRCDIR="$work/src/test/mpi" \
    FW="$fw" DIRS="$dirs" TIMEOUT="$timeout" RERUNS="$reruns" SUMMARY_ONLY="$summary_only" \
    python3 - <<'EOF'
import collections, json, os, re, shlex, signal, subprocess, sys, time

E = os.environ
flavour, lib, hyscope, build, srcdir, fw = (E[k] for k in ("FLAVOUR", "LIB", "HYSCOPE", "BUILD", "SRCDIR", "FW"))
dirs = E["DIRS"].split()
timeout = int(E["TIMEOUT"])
reruns = int(E["RERUNS"])
results_path = os.path.join(fw, "results.jsonl")
keep = E.get("KEEP_TRACES") == "1"


def entries():
    """The testlist entries of the chosen directories, as MPICH's runtests reads them."""
    out = []
    for d in dirs:
        path = next((p for p in (os.path.join(build, d, "testlist"), os.path.join(srcdir, d, "testlist"))
                     if os.path.exists(p)), None)
        if path is None:
            continue
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tok = line.split()
            if os.path.isdir(os.path.join(build, d, tok[0])):
                continue  # a subdirectory: only the chosen directories run
            e = {"dir": d, "prog": tok[0], "np": int(tok[1]) if len(tok) > 1 else 2,
                 "args": [], "env": [], "mpiexecargs": [], "timeLimit": 0, "resultTest": "", "skip": ""}
            for kv in tok[2:]:
                k, _, v = kv.partition("=")
                if k == "arg":
                    e["args"].append(v)
                elif k == "env":
                    e["env"].append(v)
                elif k == "mpiexecarg":
                    e["mpiexecargs"].append(v)
                elif k == "timeLimit" and v.isdigit():
                    e["timeLimit"] = int(v)
                elif k == "resultTest":
                    e["resultTest"] = v
                elif k == "xfail":
                    e["skip"] = "xfail"  # runtests skips these unless --enable-xfail
                elif k == "strict" and v == "false":
                    e["skip"] = "strict=false"  # not run against --enable-strictmpi
            e["id"] = " ".join([f"{d}/{e['prog']}", f"np={e['np']}"] + e["args"] + e["env"])
            out.append(e)
    return out


def judge(e, rc, text):
    """runtests' verdict (TestNormal and its resultTest variants) on stdout+stderr."""
    noerr = skipped = stray = warn = 0
    for l in text.splitlines():
        if re.match(r"^\s*No [Ee]rrors\s*$", l) and not noerr:
            noerr = 1
        elif re.match(r"^\s*Test Skipped\s*$", l):
            skipped += 1
        elif re.match(r"^(MPICH: |WARNING: |(Abort.*)?application called MPI_Abort)", l):
            warn += 1
        elif re.search(r"(FORTRAN STOP|requesting checkpoint|checkpoint completed)\s*$", l):
            pass
        else:
            stray += 1
    rt = e["resultTest"]
    if rt in ("TestStatus", "TestErrFatal"):
        return "pass" if rc != 0 else "fail"
    if rt == "TestStatusNoErrors":
        return "pass" if noerr and not stray and rc != 0 else "fail"
    if not noerr and not skipped:
        return "fail"
    if stray or (warn and rt != "TestAllowWarnings") or rc != 0:
        return "fail"
    return "skip" if skipped and not noerr else "pass"


def descendants(pid):
    """pid and every process below it (from /proc)."""
    children = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
                children[int(stat.rsplit(")", 1)[1].split()[1])].append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        out.append(q)
        todo += children.get(q, [])
    return out


def kill(pids, sig):
    for q in pids:
        try:
            os.kill(q, sig)
        except ProcessLookupError:
            pass


def run(e, mode, n):
    prog = os.path.join(build, e["dir"], e["prog"])
    rec = {"id": e["id"], "mode": mode, "run": n}
    if not os.access(prog, os.X_OK):
        rec.update(status="notbuilt")
        return rec
    trace = os.path.join(fw, "traces", re.sub(r"[^A-Za-z0-9_.-]", "_", e["id"]))
    subprocess.run(["rm", "-rf", trace])
    os.makedirs(os.path.dirname(trace), exist_ok=True)
    env = dict(os.environ)
    if e["dir"].startswith("threads"):
        env["OMP_NUM_THREADS"] = "2"
    pre = {"LD_PRELOAD": lib, "HYSCOPE_OUTPUT": trace} if mode == "hyscope" else {}
    tenv = [v.partition("=") for v in e["env"]]
    if flavour == "openmpi":
        session = os.path.join(fw, "ompi-session")
        os.makedirs(session, exist_ok=True)
        cmd = ["mpirun", "--oversubscribe", "--mca", "orte_tmpdir_base", session, "-np", str(e["np"])]
        if os.geteuid() == 0:
            cmd.insert(1, "--allow-run-as-root")
        for k, _, v in tenv:
            cmd += ["-x", f"{k}={v}"]
        for k, v in pre.items():
            cmd += ["-x", f"{k}={v}"]
    else:
        cmd = ["mpiexec.mpich", "-n", str(e["np"])]
        for k, _, v in tenv:
            cmd += ["-genv", k, v]
        for k, v in pre.items():
            cmd += ["-genv", k, v]
    cmd += [a for m in e["mpiexecargs"] for a in shlex.split(m)] + [prog] + e["args"]
    limit = max(timeout, e["timeLimit"])
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=os.path.join(build, e["dir"]), env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        status = None
    except subprocess.TimeoutExpired:
        # Hydra starts each rank in a session of its own: the launcher's process
        # group is not enough, every descendant is signalled.
        tree = descendants(p.pid)
        kill(tree, signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            kill(tree + descendants(p.pid), signal.SIGKILL)
            out, _ = p.communicate()
        status = "timeout"
    text = out.decode(errors="replace")
    rec["secs"] = round(time.monotonic() - t0, 2)
    rec["rc"] = p.returncode
    rec["status"] = status or judge(e, p.returncode, text)
    rec["hyscope"] = [l for l in text.splitlines() if "hyscope:" in l]
    if rec["status"] != "pass":
        rec["tail"] = text.splitlines()[-8:]
    if mode == "hyscope":
        if os.path.isdir(trace):
            r = subprocess.run([hyscope, "report", "--json", trace], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            rec["trace_rc"] = r.returncode
            if r.returncode != 0:
                rec["trace_err"] = r.stderr.decode(errors="replace").strip().splitlines()[-3:]
        else:
            rec["trace_rc"] = None
        if not keep:
            subprocess.run(["rm", "-rf", trace])
    return rec


def load():
    recs = []
    if os.path.exists(results_path):
        for l in open(results_path):
            if l.strip():
                recs.append(json.loads(l))
    return recs


def save(rec):
    with open(results_path, "a") as f:
        f.write(json.dumps(rec) + "\n")


todo = entries()
if E["SUMMARY_ONLY"] != "1":
    done = {(r["id"], r["mode"], r["run"]) for r in load()}
    for i, e in enumerate(todo):
        if e["skip"]:
            continue
        for mode in ("bare", "hyscope"):
            if (e["id"], mode, 0) in done:
                continue
            rec = run(e, mode, 0)
            save(rec)
            print(f"[{i + 1}/{len(todo)}] {mode:7} {rec['status']:8} {rec.get('secs', 0):7.1f}s {e['id']}", flush=True)
    # An entry whose status differs is run again both ways before it is called a difference.
    recs = load()
    first = {(r["id"], r["mode"]): r["status"] for r in recs if r["run"] == 0}
    done = {(r["id"], r["mode"], r["run"]) for r in recs}
    for e in todo:
        if e["skip"] or first.get((e["id"], "bare")) == first.get((e["id"], "hyscope")):
            continue
        for n in range(1, reruns + 1):
            for mode in ("bare", "hyscope"):
                if (e["id"], mode, n) not in done:
                    rec = run(e, mode, n)
                    save(rec)
                    print(f"rerun {n} {mode:7} {rec['status']:8} {e['id']}", flush=True)

# Summary.
recs = load()
by = collections.defaultdict(list)
for r in recs:
    by[(r["id"], r["mode"])].append(r)
lines = []
p = lines.append
ids = [e["id"] for e in todo]
skipped = [e for e in todo if e["skip"]]
ran = [e for e in todo if not e["skip"] and (e["id"], "bare") in by and (e["id"], "hyscope") in by]
p(f"MPICH test suite, flavour {flavour}, collector {lib}")
p(f"directories: {' '.join(dirs)}")
p(f"entries: {len(todo)}; run both ways: {len(ran)}; not run (testlist xfail / strict=false, as runtests): {len(skipped)}"
  + ("" if len(ran) + len(skipped) == len(todo) else f"; NOT YET RUN: {len(todo) - len(ran) - len(skipped)}"))
statuses = ["pass", "fail", "timeout", "skip", "notbuilt"]
first = {}
for k in by:
    by[k].sort(key=lambda r: r["run"])
    first[k] = by[k][0]["status"]
p("")
p(f"{'status':10} {'without':>8} {'with':>8}")
for s in statuses:
    p(f"{s:10} {sum(first[(e['id'], 'bare')] == s for e in ran):8} {sum(first[(e['id'], 'hyscope')] == s for e in ran):8}")
for mode, name in (("bare", "without"), ("hyscope", "with")):
    for s in statuses[1:]:
        l = [e["id"] for e in ran if first[(e["id"], mode)] == s]
        if l:
            p(f"{s} {name} the collector ({len(l)}): " + "; ".join(l))
diff = [e for e in ran if first[(e["id"], "bare")] != first[(e["id"], "hyscope")]]
p("")
p(f"status differs between the first bare and preloaded runs: {len(diff)}")
confirmed = 0
for e in diff:
    b = [r["status"] for r in by[(e["id"], "bare")]]
    h = [r["status"] for r in by[(e["id"], "hyscope")]]
    real = len(set(b)) == 1 and len(set(h)) == 1 and b[0] != h[0] and len(b) > 1
    confirmed += real
    label = "DIFFERENCE" if real else ("flaky" if len(b) > 1 else "not re-run")
    p(f"  {label:10} {e['id']}: without {' '.join(b)}; with {' '.join(h)}")
p(f"confirmed differences (same status on every rerun, different with the collector): {confirmed}")
warn = collections.defaultdict(list)
for e in ran:
    for r in by[(e["id"], "hyscope")] + by[(e["id"], "bare")]:
        for l in r.get("hyscope", []):
            key = re.sub(r"\d+", "N", re.sub(r"/\S*/traces/\S*?(?=/|\s|$)", "<trace>", l.strip()))
            warn[key].append(e["id"])
p("")
p(f"`hyscope:` lines: {sum(len(v) for v in warn.values())}")
for k, v in sorted(warn.items(), key=lambda kv: -len(kv[1])):
    p(f"  {len(v):5} x {k}")
    p(f"          in: {'; '.join(sorted(set(v))[:12])}{' ...' if len(set(v)) > 12 else ''}")
pre = [r for e in ran for r in by[(e["id"], "hyscope")] if r["status"] != "notbuilt"]
left = [r for r in pre if r.get("trace_rc") is not None]
bad = [r for r in left if r["trace_rc"] != 0]
p("")
p(f"preloaded runs: {len(pre)}; left a trace: {len(left)}; readable by `hyscope report --json`: {len(left) - len(bad)}; unreadable: {len(bad)}")
for r in bad:
    p(f"  {r['id']} (run {r['run']}): exit {r['trace_rc']}: {' | '.join(r.get('trace_err', []))}")
none = [f"{r['id']} ({r['status']})" for r in pre if r.get("trace_rc") is None]
if none:
    p(f"  no trace directory ({len(none)}; a test that skips itself before MPI_Init leaves none): " + "; ".join(none))
tb = sum(r.get("secs", 0) for e in ran for r in by[(e["id"], "bare")][:1])
th = sum(r.get("secs", 0) for e in ran for r in by[(e["id"], "hyscope")][:1])
p(f"wall time of the first runs: without {tb:.0f} s, with {th:.0f} s (the preloaded runs include the encoding at exit)")
slow = sorted(((by[(e["id"], "hyscope")][0].get("secs", 0), by[(e["id"], "bare")][0].get("secs", 0), e["id"]) for e in ran),
              key=lambda t: t[1] - t[0])[:5]
p("largest added wall times: " + "; ".join(f"{i} {b:.1f} → {h:.1f} s" for h, b, i in slow))
text = "\n".join(lines)
print(text)
open(os.path.join(fw, "summary.txt"), "w").write(text + "\n")
EOF

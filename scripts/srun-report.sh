#!/usr/bin/env bash
# `srun -n N hyscope report` against the single process, on this machine as a
# one-node Slurm cluster: the JSON and the text must be byte-identical, with
# Slurm's PMIx plugin (`--mpi=pmix`: Open MPI), its PMI-2 (`--mpi=pmi2`: MPICH,
# `libhyscope_par-mpich.so` from scripts/build-mpich.sh) and without either
# (`--mpi=none`, where Open MPI cannot start under srun and process 0
# analyses alone, saying why).
#
# Needs root: installs slurm-wlm and munge where they are missing, writes a
# one-node /etc/slurm/slurm.conf where there is none, and starts munged,
# slurmctld and slurmd unless they run. Not part of scripts/test.sh (CI
# machines run no Slurm daemons).
#
# usage: scripts/srun-report.sh [TASKS...]   (default 2 4)
# HYSCOPE: the hyscope binary (default target/release/hyscope, else target/debug/hyscope)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(2 4)
hyscope=${HYSCOPE:-$root/target/release/hyscope}
[ -x "$hyscope" ] || hyscope=$root/target/debug/hyscope
synth=$root/target/release/examples/synth_trace
[ -x "$synth" ] || synth=$root/target/debug/examples/synth_trace
[ -x "$synth" ] || { echo "no synth_trace: cargo build -p hyscope-analyzer --example synth_trace" >&2; exit 1; }

if ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi
host=$(hostname -s)
if [ ! -f /etc/slurm/slurm.conf ]; then
    mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
    cat >/etc/slurm/slurm.conf <<CONF
ClusterName=hyscope
SlurmctldHost=$host
MpiDefault=none
ProctrackType=proctrack/linuxproc
ReturnToService=2
SlurmUser=root
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SwitchType=switch/none
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
fi
[ -f /etc/munge/munge.key ] || mungekey -c
chown munge /etc/munge/munge.key
mkdir -p /run/munge && chown munge /run/munge
pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 30); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$synth" "$work/trace" 400000 16 4 >/dev/null 2>&1
"$hyscope" report --json "$work/trace" >"$work/alone.json"
"$hyscope" report "$work/trace" >"$work/alone.txt"
status=0
for n in "${tasks[@]}"; do
    for mpi in pmix pmi2 none; do
        for form in json txt; do
            args=(report "$work/trace")
            [ "$form" = json ] && args+=(--json)
            srun -n "$n" -O --mpi="$mpi" "$hyscope" "${args[@]}" >"$work/srun.$form" 2>"$work/srun.err" || true
            # Any warning (the MPI library not found, or seeing fewer
            # processes) means the processes did not share the analysis.
            said=$(grep -c 'hyscope: warning' "$work/srun.err" || true)
            pmix=$(grep -c 'hyscope: warning: srun started these processes without PMIx' "$work/srun.err" || true)
            want=$([ "$mpi" = none ] && echo 1 || echo 0)
            if cmp -s "$work/alone.$form" "$work/srun.$form" && [ "$said" = "$want" ] && [ "$pmix" = "$want" ]; then
                echo "srun -n $n --mpi=$mpi ($form): identical to one process, $said warning line(s)"
            else
                echo "srun -n $n --mpi=$mpi ($form): DIFFERS (warning lines $said, want $want)"; cat "$work/srun.err"
                status=1
            fi
        done
    done
done
exit $status

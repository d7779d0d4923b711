#!/bin/sh
# Stands in for ssh as the remote launcher of Open MPI (`--mca plm_rsh_agent`)
# and MPICH's Hydra (`-launcher ssh -launcher-exec`), so that one machine runs
# a job on several "nodes": the command given for host H runs here, in new UTS
# and mount namespaces with hostname H, a boot id and a machine id of H's own
# (bound over /proc/sys/kernel/random/boot_id and /etc/machine-id, which MPI
# libraries and UCX read to tell whether a peer shares their memory) and a
# /dev/shm of its own. Each node's
# processes then share memory and a clock calibration only among themselves,
# and talk to the other nodes over TCP, as on a cluster; but all run on one
# kernel and one TSC, so the true clock offset between the nodes is known: 0.
#
# Hosts are given as addresses that are not this machine's own (127.0.0.2,
# 127.0.0.3, ...: loopback, but not an address of an interface), so that the
# launchers start a daemon per host instead of running everything locally.
#
# Needs root (or CAP_SYS_ADMIN) for the namespaces and mounts; check with
# `unshare --uts --mount true`. HYSCOPE_FAKE_NODES: the directory holding each
# node's ids (default $TMPDIR/hyscope-fake-nodes). HYSCOPE_FAKE_NODE_DELAY:
# `HOST=SECONDS ...`, how long a node's daemon takes to start (a cluster's
# nodes start theirs at different times).
#
# usage (as ssh): node-agent.sh [ssh options] HOST COMMAND...
set -eu
while [ $# -gt 0 ]; do
    case "$1" in
        -o | -p | -l | -i | -F) shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "node-agent.sh: usage: node-agent.sh [ssh options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
nodes=${HYSCOPE_FAKE_NODES:-${TMPDIR:-/tmp}/hyscope-fake-nodes}
mkdir -p "$nodes/$host"
[ -s "$nodes/$host/boot_id" ] || cat /proc/sys/kernel/random/uuid >"$nodes/$host/boot_id"
[ -s "$nodes/$host/machine-id" ] || tr -d '-' </proc/sys/kernel/random/uuid >"$nodes/$host/machine-id"
for d in ${HYSCOPE_FAKE_NODE_DELAY:-}; do
    [ "${d%%=*}" = "$host" ] && sleep "${d#*=}"
done
# ssh joins the remote command's words with spaces and has the remote shell
# run the line: the same here.
exec unshare --uts --mount /bin/sh -c '
    hostname "$1"
    mount --bind "$2/boot_id" /proc/sys/kernel/random/boot_id
    if [ -e /etc/machine-id ]; then mount --bind "$2/machine-id" /etc/machine-id; fi
    mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    exec /bin/sh -c "$3"' node-agent "$host" "$nodes/$host" "$*"

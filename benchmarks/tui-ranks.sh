#!/usr/bin/env bash
# The TUI on a trace with thousands of ranks (BENCHMARKS.md, "TUI at 4,096
# ranks"): `hyscope tui --timing` in a 200×50 terminal through tmux. Opens the
# timeline (the coarse overview first, then the detailed index), waits for
# the aggregated lines, zooms, pans, opens a group and a rank, closes the
# group, quits, and prints the timings (first frame, first frame with the
# coarse and with the detailed timeline, each redraw, each aggregation) and
# three captures.
# Usage: benchmarks/tui-ranks.sh TRACE [BIN]   (trace: analyzer's synth_trace)
set -euo pipefail
TRACE=$1; BIN=${2:-target/release/hyscope}
LOG=/tmp/hyscope-tui-ranks.log; S=hyscope-tui-ranks
tmux kill-session -t $S 2>/dev/null || true; rm -f $LOG
tmux new-session -d -s $S -x 200 -y 50 "$BIN tui --timing $TRACE 2>$LOG; sleep 5"
wait_for() {
    for _ in $(seq 1 3000); do
        tmux capture-pane -p -t $S | grep -q "$1" && return 0; sleep 0.1
    done
    echo "timed out waiting for: $1"; exit 1
}
wait_gone() {
    for _ in $(seq 1 3000); do
        tmux capture-pane -p -t $S | grep -q "$1" || return 0; sleep 0.1
    done
    echo "timed out waiting for the end of: $1"; exit 1
}
tmux send-keys -t $S 2; wait_for "shown)"
tmux capture-pane -p -t $S > /tmp/hyscope-tui-ranks-0.txt
wait_gone "detail loading"
sleep 5
tmux capture-pane -p -t $S > /tmp/hyscope-tui-ranks-1.txt
for k in + + + + - - L L H 0 Enter j j Enter BSpace; do tmux send-keys -t $S "$k"; sleep 0.5; done
sleep 3
tmux capture-pane -p -t $S > /tmp/hyscope-tui-ranks-2.txt
tmux send-keys -t $S q; sleep 1
cat $LOG
echo "captures: /tmp/hyscope-tui-ranks-0.txt (first timeline), /tmp/hyscope-tui-ranks-1.txt (detailed), /tmp/hyscope-tui-ranks-2.txt (after the keys)"

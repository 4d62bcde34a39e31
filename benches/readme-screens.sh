#!/bin/bash
# Captures docs/tui.md's TUI screens from the demo (100x30, NO_COLOR) into
# /tmp/shot-*.txt: the queue, a two-person draft, a bulk settle and its result, the
# ledger and the decision log. Needs tmux and a built binary (B=..., default
# target/debug/send-once). docs/tui.md's blocks are these files with the demo's
# directory shortened to /tmp/send-once-demo-…/.
set -e
B=${B:-target/debug/send-once}
S=shots
tmux kill-session -t $S 2>/dev/null || true
tmux new-session -d -s $S -x 100 -y 30 "env NO_COLOR=1 SEND_ONCE_USER=dana $B tui --demo"
sleep 4
cap() { tmux capture-pane -p -t $S > "/tmp/shot-$1.txt"; }
cap queue
tmux send-keys -t $S j j j j j; sleep 1
cap quorum
tmux send-keys -t $S k k k k k; sleep 0.5
tmux send-keys -t $S 2; sleep 1.5
tmux send-keys -t $S Space Space Space; sleep 0.5
tmux send-keys -t $S f; sleep 1
tmux send-keys -t $S "gateway outage 02:10-02:40; provider log shows none"; sleep 0.5
tmux send-keys -t $S Enter; sleep 1
cap confirm
tmux send-keys -t $S y; sleep 2
cap result
tmux send-keys -t $S 3; sleep 1.5
cap ledger
tmux send-keys -t $S 4; sleep 2
tmux send-keys -t $S j j j j; sleep 1
cap decisions
tmux send-keys -t $S q; sleep 1
tmux kill-session -t $S 2>/dev/null || true

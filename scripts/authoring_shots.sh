#!/usr/bin/env bash
# Reproduces the screenshots of docs/authoring.md (docs/authoring/*.png): the walk-through run
# for real under a virtual X server. Needs xvfb-run (Debian: xvfb xauth) and a built binary:
#   cargo build && scripts/authoring_shots.sh [STEPS]
# STEPS: env steps of the training run (default 2,000,000; a few minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin="${GRIDARENA:-$root/target/debug/gridarena}"
steps="${1:-2000000}"
out="$root/docs/authoring"
work="$(mktemp -d)"
trap 'kill -TERM -- -"${view_pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/gridarena-xdg}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

# Waits until the viewer's log has a line equal to $1 (at most a minute).
wait_line() {
    for _ in $(seq 600); do
        grep -qxF "$1" view.log 2>/dev/null && return 0
        sleep 0.1
    done
    echo "no line '$1' in the viewer's log:" >&2
    cat view.log >&2
    exit 1
}

# Starts `gridarena view ARGS --reload-shots shots` in its own process group.
view() {
    rm -rf shots view.log
    setsid xvfb-run -a "$bin" view "$@" --reload-shots shots > view.log 2>&1 &
    view_pid=$!
}

stop_view() {
    kill -TERM -- -"$view_pid" 2>/dev/null || true
    wait "$view_pid" 2>/dev/null || true
}

"$bin" new pursuit my_arena.ron
"$bin" check --explain my_arena.ron > explain.txt

# 1. The template, live under the random policy; then a wall drawn, a typo, the fix.
view --scenario my_arena.ron --watch --fps 6
wait_line "wrote shots/00_start.png"
cp my_arena.ron good.ron
sed -i 's/"\*\.\.\.#\.\.\.\*",/"*.#####.*",/' my_arena.ron
wait_line "wrote shots/01_reloaded.png"
sed -i 's/"\*\.#####\.\*",/"*.#####.*,/' my_arena.ron
wait_line "wrote shots/02_error.png"
sed -i 's/"\*\.#####\.\*,/"*.#####.*",/' my_arena.ron
wait_line "wrote shots/03_recovered.png"
stop_view
cp shots/00_start.png "$out/1_template.png"
cp shots/01_reloaded.png "$out/2_reloaded.png"
cp shots/02_error.png "$out/3_error.png"

# 2. Train on it, then watch the trained pursuers while editing the map.
"$bin" train --scenario my_arena.ron --steps "$steps" --out run
"$bin" eval --run run --episodes 100 | tee eval.txt
view --run run --scenario my_arena.ron --watch --agent 0 --fps 6
wait_line "wrote shots/00_start.png"
# A fifth pursuer: the networks still fit (same window, same actions), but not the learner count.
sed -i 's/(kind: pursuer, count: 4, control: learner)/(kind: pursuer, count: 5, control: learner)/' my_arena.ron
wait_line "wrote shots/01_reloaded.png"
stop_view
cp shots/00_start.png "$out/4_trained.png"
cp shots/01_reloaded.png "$out/5_does_not_fit.png"
echo "wrote $out/{1_template,2_reloaded,3_error,4_trained,5_does_not_fit}.png"

#!/usr/bin/env bash
# gridarena's overcooked beside JaxMARL's, env steps/s under uniformly random actions, interleaved:
#   `gridarena bench env --scenario assets/scenarios/overcooked_LAYOUT.ron --arenas ENVS`
#   against overcooked.py (JaxMARL's Overcooked, the same layout, ENVS environments vmapped inside
#   one jitted lax.scan on the CPU, compile excluded).
# Prints every run's figure, the medians and the ratio gridarena / JaxMARL.
#
# Usage: benches/peers/overcooked.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: ENVS (arenas / environments, default 4096), STEPS (timed steps per run, default
# 100), LAYOUTS (default all five: cramped_room asymm_advantages coord_ring forced_coord
# counter_circuit), PEERS_VENV (the virtualenv; default benches/peers/.venv, created and filled on first use
# from requirements.txt pinned by requirements.lock, as run.sh does).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
envs="${ENVS:-4096}"
steps="${STEPS:-100}"
LAYOUTS="${LAYOUTS:-cramped_room asymm_advantages coord_ring forced_coord counter_circuit}"
venv="${PEERS_VENV:-$here/.venv}"

cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
for v in "$runs" "$envs" "$steps"; do
    if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
        echo "RUNS, ENVS and STEPS must be positive integers" >&2
        exit 2
    fi
done

source "$here/venv.sh"
peers_venv "$venv" .peers-requirements "the peers" "$here/requirements.txt" "$here/requirements.lock"
py="$venv/bin/python"

figure() { # figure PATTERN COMMAND...: runs COMMAND, echoes its output to stderr, prints the figure
    local pattern="$1" out
    shift
    out="$("$@" 2>&1)" || {
        echo "$out" >&2
        echo "failed: $*" >&2
        exit 1
    }
    echo "$out" | grep -v -i 'submoduled environments' | sed 's/^/    /' >&2
    echo "$out" | sed -n "s/^$pattern *\([0-9.]*\).*/\1/p" | tail -1
}
ga() { figure 'env-steps\/s (median):' "$gridarena" bench env \
    --scenario "assets/scenarios/overcooked_$1.ron" --arenas "$envs" --steps "$steps" --repeat 3; }
jx() { figure 'env steps\/s:' "$py" "$here/overcooked.py" --layout "$1" \
    --envs "$envs" --steps "$steps" --runs 3; }

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for layout in $LAYOUTS; do
    ga_all="" jx_all=""
    for r in $(seq 1 "$runs"); do
        echo "== $layout, run $r/$runs: gridarena" >&2
        ga_all="$ga_all $(ga "$layout")"
        echo "== $layout, run $r/$runs: JaxMARL" >&2
        jx_all="$jx_all $(jx "$layout")"
    done
    ga_med="$(echo "$ga_all" | median)"
    jx_med="$(echo "$jx_all" | median)"
    echo "overcooked $layout, $envs arenas, random actions, env steps/s"
    echo "  gridarena runs:$ga_all"
    echo "  JaxMARL runs:  $jx_all"
    echo "  gridarena median: $ga_med"
    echo "  JaxMARL median:   $jx_med"
    awk -v g="$ga_med" -v j="$jx_med" 'BEGIN {printf "  ratio gridarena / JaxMARL: %.1fx\n", g / j}'
done

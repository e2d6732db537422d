#!/usr/bin/env bash
# gridarena beside Melting Pot (dm-meltingpot 2.4.1) on its own substrates, runs interleaved:
#   `gridarena bench env --scenario assets/scenarios/commons_harvest_open.ron --threads 1`
#   against meltingpot.py --substrate commons_harvest__open, and the same for clean_up:
#   environment steps per second on one core under uniformly random actions, episodes of the
#   default length on both sides (gridarena steps a batch of arenas on one thread; Melting Pot
#   steps one environment).
# Prints every run's figure, the medians and the ratios gridarena / Melting Pot.
#
# Usage: benches/peers/meltingpot.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: MP_STEPS (timed Melting Pot steps per run; default 3000). Melting Pot runs in
# python/scripts/.venv-meltingpot, which python/scripts/meltingpot_sample.py creates and fills
# (pinned versions, offline asset workaround) on first use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
mp_steps="${MP_STEPS:-3000}"

cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ && "$mp_steps" =~ ^[1-9][0-9]*$ ]]; then
    echo "RUNS and MP_STEPS must be positive integers" >&2
    exit 2
fi
py="python/scripts/.venv-meltingpot/bin/python"
if [[ ! -x "$py" ]]; then
    echo "== building Melting Pot's venv (once)"
    "${PYTHON:-python3.11}" python/scripts/meltingpot_sample.py --help >/dev/null
fi

figure() { # figure PATTERN COMMAND...: runs COMMAND, echoes its output to stderr, prints the figure
    local pattern="$1" out
    shift
    out="$("$@" 2>&1)" || {
        echo "$out" >&2
        echo "failed: $*" >&2
        exit 1
    }
    echo "$out" | grep -v -i 'warning' | sed 's/^/    /' >&2
    echo "$out" | sed -n "s/^$pattern *\([0-9.]*\).*/\1/p" | tail -1
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for pair in commons_harvest_open:commons_harvest__open clean_up:clean_up; do
    asset="${pair%%:*}"
    substrate="${pair##*:}"
    ga=()
    mp=()
    for r in $(seq 1 "$runs"); do
        echo "== $asset run $r/$runs: gridarena" >&2
        ga+=("$(figure 'env-steps\/s (median):' "$gridarena" bench env \
            --scenario "assets/scenarios/$asset.ron" --threads 1)")
        echo "== $asset run $r/$runs: Melting Pot" >&2
        mp+=("$(figure 'env steps\/s:' "$py" "$here/meltingpot.py" \
            --substrate "$substrate" --steps "$mp_steps" --seed "$r")")
    done
    g="$(median "${ga[@]}")"
    m="$(median "${mp[@]}")"
    echo "$asset: gridarena env steps/s per core ${ga[*]} (median $g); Melting Pot ${mp[*]} (median $m); ratio $(awk -v g="$g" -v m="$m" 'BEGIN {printf "%.0f", g / m}')x"
done

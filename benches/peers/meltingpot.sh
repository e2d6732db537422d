#!/usr/bin/env bash
# gridarena beside Melting Pot (dm-meltingpot 2.4.1) on its own substrates, runs interleaved,
# every process under `taskset -c 0`:
#   `gridarena bench env --scenario assets/scenarios/commons_harvest_open.ron --threads 1`
#   (gridarena's default batch, 1024 arenas) against meltingpot.py --substrate
#   commons_harvest__open, and the same for clean_up: environment steps per second on one core
#   under uniformly random actions, episodes of the default length on both sides (gridarena
#   steps a batch of arenas on one thread; Melting Pot steps one environment).
#   benches/ceilings/meltingpot_step.sh compares at gridarena's best batch on one core.
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
source "$here/one_core.sh"
check_args "$gridarena" "RUNS and MP_STEPS" "$runs" "$mp_steps"
py="$(meltingpot_python)"

machine_line "gridarena's default batch"
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
    echo "$asset: gridarena env steps/s per core ${ga[*]} (median $g); Melting Pot ${mp[*]} (median $m); ratio $(ratio "$g" "$m")"
done

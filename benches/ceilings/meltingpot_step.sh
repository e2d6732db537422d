#!/usr/bin/env bash
# How far the Melting Pot substrates' step is from 1,000x Melting Pot on one core, and how much
# of the way the observations stand in. Runs interleaved, every process under `taskset -c 0`:
#   - `gridarena bench env --scenario assets/scenarios/{commons_harvest_open,clean_up}.ron
#     --threads 1 --arenas ENVS`: the step as it trains;
#   - the same with `--observations filled`: each step fills the observations with one byte
#     instead of computing the facing-rotated windows, the same bytes written. A ceiling for
#     any way of computing the windows: the rules and the observations' stores cost this much;
#   - dm-meltingpot 2.4.1 (benches/peers/meltingpot.py, one environment, as meltingpot.sh runs
#     it).
# Prints every run's figures, the medians, both gridarena figures per core against Melting Pot,
# and the observations' share of the step (1 - computed / filled).
#
# Usage: benches/ceilings/meltingpot_step.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: ENVS (arenas, default 64: gridarena's best batch on one core), MP_STEPS (Melting
# Pot's timed steps per run, default 2000). Melting Pot runs in python/scripts/.venv-meltingpot,
# which python/scripts/meltingpot_sample.py creates on first use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peers="$root/benches/peers"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
envs="${ENVS:-64}"
mp_steps="${MP_STEPS:-2000}"
cd "$root"
source "$peers/one_core.sh"
check_args "$gridarena" "RUNS, ENVS and MP_STEPS" "$runs" "$envs" "$mp_steps"
ga_steps="$(steps_per_repeat "$envs")"
mp_py="$(meltingpot_python)"

machine_line "$envs arenas"
for pair in commons_harvest_open:commons_harvest__open clean_up:clean_up; do
    IFS=: read -r asset mp <<<"$pair"
    declare -a c=() f=() m=()
    for ((i = 1; i <= runs; i++)); do
        echo "== $asset, run $i of $runs" >&2
        bench=("$gridarena" bench env --scenario "assets/scenarios/$asset.ron" --threads 1
            --arenas "$envs" --steps "$ga_steps")
        c+=("$(figure 'env-steps\/s (median):' "${bench[@]}")")
        f+=("$(figure 'env-steps\/s (median):' "${bench[@]}" --observations filled)")
        m+=("$(figure 'env steps\/s:' "$mp_py" "$peers/meltingpot.py" --substrate "$mp" \
            --steps "$mp_steps" --seed "$i")")
        echo "run $i: $asset env steps/s: gridarena ${c[-1]}, observations filled ${f[-1]}, Melting Pot ${m[-1]}"
    done
    cm="$(median "${c[@]}")"
    fm="$(median "${f[@]}")"
    mm="$(median "${m[@]}")"
    share="$(awk -v c="$cm" -v f="$fm" 'BEGIN {printf "%.0f%%", 100 * (1 - c / f)}')"
    echo "$asset: gridarena $cm, observations filled $fm, Melting Pot $mm (medians); per core against Melting Pot: gridarena $(ratio "$cm" "$mm"), observations filled $(ratio "$fm" "$mm"); the observations' share of the step $share"
done

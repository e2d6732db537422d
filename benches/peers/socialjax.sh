#!/usr/bin/env bash
# Commons Harvest (open) and Clean Up env steps/s on ONE core, three implementations side by
# side, runs interleaved:
#   - `gridarena bench env --scenario assets/scenarios/{commons_harvest_open,clean_up}.ron
#     --threads 1 --arenas ENVS --steps S`, S steps so that a repeat takes about a million
#     env steps whatever the batch;
#   - SocialJax's harvest_common_open and clean_up (socialjax_env.py: ENVS environments vmapped
#     in one jitted lax.scan on the CPU, XLA held to one thread, compile excluded), with the
#     settings its IPPO configurations train with: 7 players, 1,000 steps per episode;
#   - dm-meltingpot 2.4.1 (meltingpot.py, one environment, as meltingpot.sh runs it).
# Every process runs under `taskset -c 0`. Prints every run's figures, the medians and the
# ratios to Melting Pot: how far the fastest other implementation here gets towards gridarena.
#
# Usage: benches/peers/socialjax.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: ENVS (arenas / vmapped environments, default 64: the best batch of both on one
# core; meltingpot.sh steps gridarena's default 1024), STEPS (SocialJax's timed steps per run,
# default 100), MP_STEPS (Melting Pot's timed steps per run, default 2000),
# SOCIALJAX_SRC (a SocialJax checkout, default benches/peers/.socialjax; SocialJax is not on
# PyPI). Virtualenvs: benches/peers/.venv-socialjax (created on first use from
# requirements-socialjax.txt pinned by requirements-socialjax.lock) and
# python/scripts/.venv-meltingpot (python/scripts/meltingpot_sample.py makes it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
envs="${ENVS:-64}"
steps="${STEPS:-100}"
mp_steps="${MP_STEPS:-2000}"
src="${SOCIALJAX_SRC:-$here/.socialjax}"
# The SocialJax commit these figures were measured with.
pinned=9df972d07657c7e2d4cd4fec1ed1f437099cb128
venv="$here/.venv-socialjax"
cd "$root"
source "$here/one_core.sh"
check_args "$gridarena" "RUNS, ENVS, STEPS and MP_STEPS" "$runs" "$envs" "$steps" "$mp_steps"
if [[ ! -f "$src/socialjax/__init__.py" ]]; then
    echo "no SocialJax checkout at $src; get one with" >&2
    echo "  git clone https://github.com/cooperativex/SocialJax $src && git -C $src checkout $pinned" >&2
    exit 2
fi
commit="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
if [[ "$commit" != "$pinned" ]]; then
    echo "warning: SocialJax at $commit, not $pinned (the commit these figures were measured with)" >&2
fi

ga_steps="$(steps_per_repeat "$envs")"

source "$here/venv.sh"
peers_venv "$venv" .peers-requirements SocialJax "$here/requirements-socialjax.txt" "$here/requirements-socialjax.lock"
mp_py="$(meltingpot_python)"

machine_line "SocialJax $commit"
for pair in commons_harvest_open:harvest_common_open:commons_harvest__open clean_up:clean_up:clean_up; do
    IFS=: read -r asset sj mp <<<"$pair"
    declare -a g=() j=() m=()
    for ((i = 1; i <= runs; i++)); do
        echo "== $asset, run $i of $runs" >&2
        g+=("$(figure 'env-steps\/s (median):' "$gridarena" bench env \
            --scenario "assets/scenarios/$asset.ron" --threads 1 --arenas "$envs" --steps "$ga_steps")")
        j+=("$(PYTHONPATH="$src" XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
            figure 'env steps\/s:' "$venv/bin/python" "$here/socialjax_env.py" --env "$sj" \
            --envs "$envs" --steps "$steps" --runs 3)")
        m+=("$(figure 'env steps\/s:' "$mp_py" "$here/meltingpot.py" --substrate "$mp" \
            --steps "$mp_steps" --seed "$i")")
        echo "run $i: $asset env steps/s: gridarena ${g[-1]}, SocialJax ${j[-1]}, Melting Pot ${m[-1]}"
    done
    gm="$(median "${g[@]}")"
    jm="$(median "${j[@]}")"
    mm="$(median "${m[@]}")"
    echo "$asset: gridarena $gm, SocialJax $jm, Melting Pot $mm (medians); per core against Melting Pot: gridarena $(ratio "$gm" "$mm"), SocialJax $(ratio "$jm" "$mm"); gridarena / SocialJax $(ratio "$gm" "$jm")"
done

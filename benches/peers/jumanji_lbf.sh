#!/usr/bin/env bash
# Level-Based Foraging env steps/s on ONE core, three implementations side by side, runs
# interleaved, for every shipped lbf_*.ron scenario:
#   - `gridarena bench env --scenario ... --threads 1 --arenas ENVS` (ENVS 1024 by default);
#   - Jumanji's LevelBasedForaging (jumanji_lbf.py: ENVS environments vmapped in one jitted
#     lax.scan on the CPU, XLA held to one thread, compile excluded), the same field, agents,
#     foods, sight, force_coop and episode length;
#   - lbforaging 2.0.0 (lbf.py, one environment, as lbf.sh runs it).
# Every process runs under `taskset -c 0`. Prints every run's figures, the medians and the
# ratios to lbforaging: how far the fastest other implementation here gets towards gridarena.
#
# Usage: benches/peers/jumanji_lbf.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: ENVS (arenas / vmapped environments, default 1024: the best batch of both on one
# core), STEPS (Jumanji's timed steps
# per run, default 100), SECONDS_PER_RUN (lbforaging's, default 5), SCENARIOS (space-separated
# names, default every assets/scenarios/lbf_*.ron). Virtualenvs: benches/peers/.venv-jumanji
# (created on first use from requirements-jumanji.txt pinned by requirements-jumanji.lock) and
# python/scripts/.venv-lbf (python/scripts/lbforaging_sample.py --venv-only).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
envs="${ENVS:-1024}"
steps="${STEPS:-100}"
secs="${SECONDS_PER_RUN:-5}"
SCENARIOS="${SCENARIOS:-$(cd "$root/assets/scenarios" && ls lbf_*.ron | sed 's/\.ron$//' | sort -V)}"
venv="$here/.venv-jumanji"
cd "$root"
source "$here/one_core.sh"
check_args "$gridarena" "RUNS, ENVS, STEPS and SECONDS_PER_RUN" "$runs" "$envs" "$steps" "$secs"

source "$here/venv.sh"
peers_venv "$venv" .peers-requirements Jumanji "$here/requirements-jumanji.txt" "$here/requirements-jumanji.lock"
python3 python/scripts/lbforaging_sample.py --venv-only
lbf_py=python/scripts/.venv-lbf/bin/python

machine_line
for scenario in $SCENARIOS; do
    # lbf_10x10_3p_3f_2s -> grid 10, 3 agents, 3 foods, sight 2; lbforaging's 10x10-3p-3f-2s.
    name="$(echo "${scenario#lbf_}" | tr _ -)"
    if ! [[ "$name" =~ ^([0-9]+)x[0-9]+-([0-9]+)p-([0-9]+)f(-([0-9]+)s)?(-coop)?$ ]]; then
        echo "skipping $scenario: not an lbforaging name" >&2
        continue
    fi
    jargs=(--grid "${BASH_REMATCH[1]}" --agents "${BASH_REMATCH[2]}" --foods "${BASH_REMATCH[3]}")
    [[ -n "${BASH_REMATCH[5]}" ]] && jargs+=(--sight "${BASH_REMATCH[5]}")
    [[ -n "${BASH_REMATCH[6]}" ]] && jargs+=(--force-coop)
    declare -a g=() j=() l=()
    for ((i = 1; i <= runs; i++)); do
        echo "== $scenario, run $i of $runs" >&2
        g+=("$(figure 'env-steps\/s (median):' "$gridarena" bench env \
            --scenario "assets/scenarios/$scenario.ron" --threads 1 --arenas "$envs")")
        j+=("$(XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \
            figure 'env steps\/s:' "$venv/bin/python" "$here/jumanji_lbf.py" "${jargs[@]}" \
            --envs "$envs" --steps "$steps")")
        l+=("$(figure 'lbforaging env steps\/s:' "$lbf_py" "$here/lbf.py" --config "$name" --seconds "$secs")")
        echo "run $i: $scenario env steps/s: gridarena ${g[-1]}, jumanji ${j[-1]}, lbforaging ${l[-1]}"
    done
    gm="$(median "${g[@]}")"
    jm="$(median "${j[@]}")"
    lm="$(median "${l[@]}")"
    echo "$scenario: gridarena $gm, jumanji $jm, lbforaging $lm (medians); per core against lbforaging: gridarena $(ratio "$gm" "$lm"), jumanji $(ratio "$jm" "$lm"); gridarena / jumanji $(ratio "$gm" "$jm")"
done

#!/usr/bin/env bash
# JaxMARL's own IPPO baseline for Overcooked beside gridarena's IPPO, on the CPU, one after the
# other: the same layout (cramped_room), hyperparameters, seeds and env-step budget.
#   gridarena: `gridarena train --config assets/runs/ippo_overcooked_cramped_room.ron
#              --set device=cpu --steps STEPS --seeds SEEDS` (the seeds as replicas in one
#              process), then `gridarena eval --json` of every replica's greedy policy;
#   JaxMARL:   jaxmarl_ippo/ippo_ff_overcooked.py (vendored from JaxMARL, its header lists the
#              edits) with jaxmarl_ippo/ippo_ff_overcooked.yaml, layout cramped_room, NUM_SEEDS
#              seeds vmapped under one jit as its main() does, driven by jaxmarl_ippo.py.
# Prints both wall times (JaxMARL with and without its compile), their ratios and both final
# returns (sparse, per cook, mean and 95% interval over seeds), draws both learning curves into
# FIGURE and keeps everything in OUT.
#
# Usage: benches/peers/jaxmarl_ippo.sh [GRIDARENA_BINARY]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
# Environment: STEPS (env steps per seed, default 5000000; rounded down to whole updates of
# 16 x 128 = 2048 steps, as JaxMARL does), SEEDS (default 5; both sides run them all at once
# on however many cores there are), SEED (JaxMARL's SEED and gridarena's first seed, default
# 30, the upstream config's), OUT (default runs/jaxmarl_ippo_<date>), FIGURE (default
# docs/jaxmarl_ippo_cramped_room.png), EVAL_EPISODES (default 100), PEERS_VENV (the
# virtualenv; default benches/peers/.venv-ippo, created on first use from
# requirements-ippo.txt pinned by requirements-ippo.lock, and refilled when they change),
# PJRT_NPROC (JAX's CPU thread pool for JaxMARL's side; default the number of cores, at least
# 5: see below).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
steps="${STEPS:-5000000}"
seeds="${SEEDS:-5}"
seed="${SEED:-30}"
episodes="${EVAL_EPISODES:-100}"
out="${OUT:-runs/jaxmarl_ippo_$(date +%Y%m%d_%H%M%S)}"
figure="${FIGURE:-docs/jaxmarl_ippo_cramped_room.png}"
venv="${PEERS_VENV:-$here/.venv-ippo}"

cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
for v in "$steps" "$seeds" "$episodes"; do
    if ! [[ "$v" =~ ^[1-9][0-9]*$ ]]; then
        echo "STEPS, SEEDS and EVAL_EPISODES must be positive integers" >&2
        exit 2
    fi
done
if ! [[ "$seed" =~ ^[0-9]+$ ]]; then
    echo "SEED must be a non-negative integer" >&2
    exit 2
fi
per_update=$((16 * 128))
steps=$((steps / per_update * per_update))
if ((steps == 0)); then
    echo "STEPS must be at least one update, $per_update env steps" >&2
    exit 2
fi
if [[ -e "$out" ]]; then
    echo "$out exists; give OUT a new directory" >&2
    exit 2
fi

source "$here/venv.sh"
peers_venv "$venv" .ippo-requirements "JaxMARL's IPPO requirements" \
    "$here/requirements-ippo.txt" "$here/requirements-ippo.lock"
py="$venv/bin/python"

mkdir -p "$out"
now() { date +%s.%N; }
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "gridarena: $gridarena ($("$gridarena" --version 2>/dev/null || echo 'no --version'))"
    echo "steps per seed: $steps, seeds: $seeds, first seed: $seed"
} | tee "$out/machine.txt"

echo "== gridarena IPPO ($seeds seeds as replicas, $steps env steps each)"
t0="$(now)"
"$gridarena" train --config assets/runs/ippo_overcooked_cramped_room.ron --out "$out/gridarena" \
    --set device=cpu --steps "$steps" --seed "$seed" --seeds "$seeds" 2>&1 | tee "$out/gridarena.log"
t1="$(now)"
ga_wall="$(echo "$t1 - $t0" | bc -l)"
evals=()
for r in $(seq 0 $((seeds - 1))); do
    "$gridarena" eval --run "$out/gridarena" --episodes "$episodes" --device cpu --json \
        --replica "$r" >"$out/gridarena_eval_$r.json"
    evals+=("$out/gridarena_eval_$r.json")
done

# XLA's CPU client runs a program's independent operations concurrently on its intra-op pool
# (one thread per core unless PJRT_NPROC says otherwise). The network's orthogonal
# initialisers are QR factorisations, batched over the vmapped seeds; jaxlib's LAPACK kernel
# splits a batch into tasks on that same pool and blocks its thread until they finish, so when
# every thread of the pool blocks so (two QRs on two cores) none is left to run the tasks and
# the program never finishes (seen here at random, in 4 runs of 7 with 2 seeds). Four
# such QRs can block at once (the two 520 x 64 and two 64 x 64 kernels), so the pool gets at
# least 5 threads.
jx_threads="${PJRT_NPROC:-$(($(nproc) > 5 ? $(nproc) : 5))}"
echo "== JaxMARL IPPO ($seeds seeds vmapped, $steps env steps each; PJRT_NPROC=$jx_threads)"
t0="$(now)"
PJRT_NPROC="$jx_threads" "$py" "$here/jaxmarl_ippo.py" jaxmarl --layout cramped_room --steps "$steps" --seeds "$seeds" \
    --seed "$seed" --out "$out/jaxmarl.json" 2>&1 | grep -v -i 'submoduled environments' |
    tee "$out/jaxmarl.log"
t1="$(now)"
jx_wall="$(echo "$t1 - $t0" | bc -l)"

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
echo "gridarena_wall_s=$ga_wall jaxmarl_wall_s=$jx_wall" >"$out/walls.txt"
echo "== results"
"$py" "$here/jaxmarl_ippo.py" report --jaxmarl "$out/jaxmarl.json" --jaxmarl-wall "$jx_wall" \
    --gridarena "$out/gridarena" --gridarena-wall "$ga_wall" --eval "${evals[@]}" \
    --eval-episodes "$episodes" --figure "$figure" --summary "$out/summary.txt"

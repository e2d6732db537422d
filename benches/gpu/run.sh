#!/usr/bin/env bash
# The GPU figures, in one invocation on a machine with an NVIDIA GPU, side by side:
#   the stacked critic update: `gridarena bench critic --device gpu` (WGSL through wgpu/Vulkan)
#     against benches/peers/critic_torch.py --device cuda (PyTorch bmm, the same shapes, f32),
#     and gridarena's CPU backend on all of the machine's cores, rows/s;
#   PQN training on the coin game: `gridarena bench train --config assets/runs/pqn_coin.ron`
#     with the critic on the GPU and on the CPU, at several arena counts, env steps/s.
# Each figure is the median of RUNS processes (the critic benchmarks take their own median of 5
# repeats inside each). Prints every figure, then a Markdown table with the ratios.
#
# Usage: benches/gpu/run.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena
#   RUNS              default 3
# Environment: PYTHON (default python3; needs torch with CUDA), STEP_TIMEOUT (seconds per
# process, default 120). A process that fails or times out shows as "-" and the rest go on.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
py="${PYTHON:-python3}"
step_timeout="${STEP_TIMEOUT:-120}"
cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (cargo build --release, or pass its path)" >&2
    exit 2
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "RUNS must be a positive integer" >&2
    exit 2
fi

# figure PATTERN COMMAND...: runs COMMAND, echoes its output (indented) to stderr, prints the
# number after PATTERN on its last matching line, or "-" when it failed.
figure() {
    local pattern="$1" out
    shift
    if ! out="$(timeout "$step_timeout" "$@" 2>&1)"; then
        echo "$out" | tail -5 | sed 's/^/    /' >&2
        echo "    failed or timed out: $*" >&2
        echo "-"
        return
    fi
    echo "$out" | grep -v XDG_RUNTIME_DIR | sed 's/^/    /' >&2
    local value
    value="$(echo "$out" | sed -n "s/^$pattern *\([0-9.]*\).*/\1/p" | tail -1)"
    echo "${value:--}"
}
# median VALUES...: the median of the numeric values ("-" when none).
median() {
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
        awk '{v[NR] = $1} END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
             else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# ratio A B: A / B to two decimals ("-" when either is missing).
ratio() {
    [[ "$1" == "-" || "$2" == "-" ]] && { echo "-"; return; }
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/== GPU: /'
"$py" -c 'import torch; print("== PyTorch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.is_available())' 2>&1
"$gridarena" devices 2>&1 | grep -v XDG_RUNTIME_DIR
echo "== $runs runs of each figure; gridarena: $gridarena"

# ---- the critic update, shapes as `bench critic` names them: NETS ROWS ----
shapes=("8 4096" "8 16384" "8 65536" "64 65536" "64 262144")
declare -A crit
for shape in "${shapes[@]}"; do
    read -r nets rows <<<"$shape"
    for ((i = 1; i <= runs; i++)); do
        echo "== critic K=$nets rows=$rows, run $i of $runs" >&2
        crit[$shape,wgsl,$i]="$(figure 'rows\/s (median):' "$gridarena" bench critic --device gpu \
            --nets "$nets" --rows "$rows")"
        crit[$shape,torch,$i]="$(figure 'rows\/s (median):' "$py" "$here/../peers/critic_torch.py" \
            --device cuda --nets "$nets" --rows "$rows")"
        crit[$shape,cpu,$i]="$(figure 'rows\/s (median):' "$gridarena" bench critic --device cpu \
            --nets "$nets" --rows "$rows" --updates 5 --repeat 3)"
    done
done

# ---- PQN on the coin game: critic on the GPU and on the CPU, by arena count ----
arenas=(256 4096 16384)
declare -A pqn
for a in "${arenas[@]}"; do
    for ((i = 1; i <= runs; i++)); do
        for dev in gpu cpu; do
            echo "== PQN coin game, $a arenas, critic on $dev, run $i of $runs" >&2
            pqn[$a,$dev,$i]="$(figure 'env steps\/s including learning:' "$gridarena" bench train \
                --config assets/runs/pqn_coin.ron --set device="$dev" --set arenas="$a" \
                --updates "$((a > 4096 ? 4 : 10))")"
        done
    done
done

med() { # med TABLE KEY: median over runs of TABLE[KEY,i]
    local -n t="$1"
    local vals=()
    for ((i = 1; i <= runs; i++)); do vals+=("${t[$2,$i]}"); done
    median "${vals[@]}"
}
echo
echo "### Critic update, rows/s (median of $runs runs)"
echo
echo "| K | rows per update | WGSL (gridarena, GPU) | PyTorch CUDA bmm | gridarena CPU, $(nproc) cores | WGSL / PyTorch | WGSL / CPU |"
echo "|---|---|---|---|---|---|---|"
for shape in "${shapes[@]}"; do
    read -r nets rows <<<"$shape"
    w="$(med crit "$shape,wgsl")"; t="$(med crit "$shape,torch")"; c="$(med crit "$shape,cpu")"
    echo "| $nets | $rows | $w | $t | $c | $(ratio "$w" "$t") | $(ratio "$w" "$c") |"
done
echo
echo "### PQN on the coin game, env steps/s including learning (median of $runs runs)"
echo
echo "| arenas | critic on GPU | critic on CPU, $(nproc) cores | GPU / CPU |"
echo "|---|---|---|---|"
for a in "${arenas[@]}"; do
    g="$(med pqn "$a,gpu")"; c="$(med pqn "$a,cpu")"
    echo "| $a | $g | $c | $(ratio "$g" "$c") |"
done

#!/usr/bin/env bash
# gridarena beside its peers, in one invocation, runs interleaved:
#   PQN on the coin game: `gridarena bench train --config assets/runs/pqn_coin.ron --set device=cpu`
#     against pqn_coin.py (JAX + JaxMARL's coin game, the same configuration), env steps/s;
#   the stacked critic update: `gridarena bench critic --device cpu` against critic_torch.py
#     (PyTorch bmm, the same shapes), rows/s.
# Prints every run's figure, the medians and the ratios gridarena / peer.
#
# Usage: benches/peers/run.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: UPDATES (timed PQN updates per run, both sides; default 40), PEERS_VENV (the
# virtualenv; default benches/peers/.venv, created and filled on first use from
# requirements.txt pinned by requirements.lock, with PYTHON, default python3: 3.11, as the lock).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
updates="${UPDATES:-40}"
venv="${PEERS_VENV:-$here/.venv}"

cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ && "$updates" =~ ^[1-9][0-9]*$ ]]; then
    echo "RUNS and UPDATES must be positive integers" >&2
    exit 2
fi

# ---- the virtualenv: installed once, again when the requirements change ----
source "$here/venv.sh"
peers_venv "$venv" .peers-requirements "the peers (torch's CUDA libraries make it ~6 GB)" \
    "$here/requirements.txt" "$here/requirements.lock"
py="$venv/bin/python"

# ---- one measurement = one process; each prints its figure on a known line ----
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
ga_pqn() { figure 'env steps\/s including learning:' "$gridarena" bench train \
    --config assets/runs/pqn_coin.ron --set device=cpu --updates "$updates"; }
jax_pqn() { figure 'env steps\/s:' "$py" "$here/pqn_coin.py" --updates "$updates"; }
ga_critic() { figure 'rows\/s (median):' "$gridarena" bench critic --device cpu; }
torch_critic() { figure 'rows\/s (median):' "$py" "$here/critic_torch.py" --threads 2; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# How many cores other processes keep busy right now, sampled over 2 s from /proc/stat (the
# load average would still count a job that finished a minute ago).
busy_cores() {
    local a b
    a=($(head -1 /proc/stat)); sleep 2; b=($(head -1 /proc/stat))
    awk -v n="$(nproc)" 'BEGIN {
        split(ARGV[1], a, " "); split(ARGV[2], b, " "); tot = 0; idle = 0
        for (i = 2; i <= 9; i++) tot += b[i] - a[i]
        idle = (b[5] - a[5]) + (b[6] - a[6])
        printf "%.2f", (tot > 0 ? n * (1 - idle / tot) : 0); exit }' "${a[*]}" "${b[*]}"
}
busy_start="$(busy_cores)"
echo "== cores busy at the start: $busy_start of $(nproc) (over 2 s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== gridarena: $gridarena; $runs runs, $updates timed PQN updates per run"
declare -a ga_p jx_p ga_c pt_c
for ((i = 1; i <= runs; i++)); do
    echo "== run $i of $runs" >&2
    # Alternate which side goes first so a drift in the machine's load favours neither.
    if ((i % 2)); then
        a="$(ga_pqn)"; b="$(jax_pqn)"; c="$(ga_critic)"; d="$(torch_critic)"
    else
        b="$(jax_pqn)"; a="$(ga_pqn)"; d="$(torch_critic)"; c="$(ga_critic)"
    fi
    ga_p+=("$a"); jx_p+=("$b"); ga_c+=("$c"); pt_c+=("$d")
    echo "run $i: PQN coin env steps/s: gridarena ${ga_p[-1]}, JAX ${jx_p[-1]};" \
        "critic update rows/s: gridarena ${ga_c[-1]}, PyTorch ${pt_c[-1]}"
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$py" - "${ga_p[*]}" "${jx_p[*]}" "${ga_c[*]}" "${pt_c[*]}" "$busy_start" "$(nproc)" <<'EOF'
import statistics
import sys

ga_p, jx_p, ga_c, pt_c = ([float(x) for x in arg.split()] for arg in sys.argv[1:5])
busy, cores = float(sys.argv[5]), int(sys.argv[6])
rows = [
    ("PQN coin game, env steps/s", "gridarena", ga_p, "JAX + JaxMARL", jx_p),
    ("critic update, rows/s", "gridarena", ga_c, "PyTorch bmm", pt_c),
]
print("== results (medians of %d runs)" % len(ga_p))
for what, a, xs, b, ys in rows:
    mx, my = statistics.median(xs), statistics.median(ys)
    runs = lambda v: " / ".join(f"{x:,.0f}" for x in v)
    paired = statistics.median(x / y for x, y in zip(xs, ys))
    print(f"{what}: {a} {runs(xs)} (median {mx:,.0f}); {b} {runs(ys)} (median {my:,.0f}); "
          f"ratio {a}/{b} {mx / my:.2f}x (median of the runs' own ratios {paired:.2f}x)")
if busy > 0.5:
    print(f"NOTE: the machine was busy ({busy} of {cores} cores in use at the start): PyTorch's spinning "
          "OpenMP threads suffer most from that; do not quote these ratios (README.md)")
EOF

#!/usr/bin/env bash
# Side-by-side throughput of two gridarena binaries (e.g. before and after a change), run
# interleaved on this machine so both see the same load: `gridarena bench env` on four
# substrates and `gridarena bench train` on the default Pursuit run and the coin-game config.
# Prints each run's figure and the median of RUNS per binary.
#
# Usage: benches/compare/before_after.sh OLD_BINARY NEW_BINARY [RUNS=3]
# Build the old binary from a worktree of the old commit:
#   git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release)
set -euo pipefail
old=${1:?old binary}; new=${2:?new binary}; runs=${3:-3}
cd "$(dirname "$0")/../.."

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

env_rate() { # binary scenario arenas -> env-steps/s
    "$1" bench env --scenario "assets/scenarios/$2.ron" --arenas "$3" 2>/dev/null |
        awk '/^env-steps\/s \(median\)/ {print $NF}'
}
train_rate() { # binary [config] -> env steps/s including learning
    local args=(bench train --set device=cpu)
    [ -n "${2:-}" ] && args+=(--config "$2")
    "$1" "${args[@]}" 2>/dev/null | awk '/^env steps\/s including learning/ {print $NF}'
}

compare() { # label command...
    local label=$1; shift
    local a=() b=()
    for _ in $(seq "$runs"); do
        a+=("$("$@" "$old")"); b+=("$("$@" "$new")")
    done
    local ma mb
    ma=$(printf '%s\n' "${a[@]}" | median); mb=$(printf '%s\n' "${b[@]}" | median)
    printf '%-34s old %s | new %s | median old %.0f new %.0f ratio %.3f\n' "$label" \
        "${a[*]}" "${b[*]}" "$ma" "$mb" "$(echo "$mb / $ma" | bc -l)"
}

bench_env() { env_rate "$3" "$1" "$2"; }
bench_train() { train_rate "$2" "$1"; }

compare "env pursuit x1024" bench_env pursuit 1024
compare "env gift_refinements x1024" bench_env gift_refinements 1024
compare "env chemistry_two_cycles x1024" bench_env chemistry_two_cycles 1024
compare "env coin_game x4096" bench_env coin_game 4096
compare "train pursuit (default)" bench_train ""
# The flat form of assets/runs/pqn_coin.ron: binaries before and after the sectioned config read it.
compare "train coin (pqn_coin.ron)" bench_train tests/data/flat_runs/pqn_coin.ron

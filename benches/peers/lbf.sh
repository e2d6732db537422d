#!/usr/bin/env bash
# Level-Based Foraging env steps/s on ONE core: lbforaging 2.0.0 (benches/peers/lbf.py, random
# valid actions, resets included) beside `gridarena bench env --scenario ... --threads 1`
# (uniformly random actions; invalid ones are taken as none), for every shipped lbf_*.ron
# scenario and the configuration lbforaging registers under its name, in one invocation, runs
# interleaved. Prints every run's figures, the medians and the ratio gridarena / lbforaging per
# core.
#
# Usage: benches/peers/lbf.sh [GRIDARENA_BINARY] [RUNS]
#   GRIDARENA_BINARY  default target/release/gridarena (build it with `cargo build --release`)
#   RUNS              default 3
# Environment: SECONDS_PER_RUN (lbforaging's timed seconds per run; default 5), SCENARIOS
# (space-separated scenario names, default every assets/scenarios/lbf_*.ron). The
# virtualenv is python/scripts/.venv-lbf, created with pinned versions by
# python/scripts/lbforaging_sample.py --venv-only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gridarena="${1:-target/release/gridarena}"
runs="${2:-3}"
secs="${SECONDS_PER_RUN:-5}"
SCENARIOS="${SCENARIOS:-$(cd "$root/assets/scenarios" && ls lbf_*.ron | sed 's/\.ron$//' | sort -V)}"
cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
python3 python/scripts/lbforaging_sample.py --venv-only
py=python/scripts/.venv-lbf/bin/python

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ga() { # ga SCENARIO: env steps/s (arena-steps/s) of gridarena bench env on one thread
    local out
    out="$(taskset -c 0 "$gridarena" bench env --scenario "assets/scenarios/$1.ron" --threads 1 2>&1)"
    echo "$out" | sed 's/^/    /' >&2
    echo "$out" | sed -n 's/^env-steps\/s (median): *\([0-9.]*\).*/\1/p' | tail -1
}
lbf() { # lbf CONFIG
    local out
    out="$(taskset -c 0 "$py" "$here/lbf.py" --config "$1" --seconds "$secs" 2>&1)"
    echo "    $out" >&2
    echo "$out" | sed -n 's/^lbforaging env steps\/s: *\([0-9.]*\).*/\1/p'
}

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for scenario in $SCENARIOS; do
    # lbf_10x10_3p_3f_2s -> 10x10-3p-3f-2s
    set -- "$scenario" "$(echo "${scenario#lbf_}" | tr _ -)"
    declare -a g=() l=()
    for ((i = 1; i <= runs; i++)); do
        echo "== $1, run $i of $runs" >&2
        g+=("$(ga "$1")")
        l+=("$(lbf "$2")")
        echo "run $i: $1 env steps/s: gridarena ${g[-1]}, lbforaging ${l[-1]}"
    done
    gm="$(median "${g[@]}")"
    lm="$(median "${l[@]}")"
    echo "$1: gridarena ${g[*]} (median $gm); lbforaging ${l[*]} (median $lm); ratio per core $(awk -v a="$gm" -v b="$lm" 'BEGIN {printf "%.0fx", a / b}')"
done

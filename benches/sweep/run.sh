#!/bin/bash
# One sweep in one process vs the same runs one after another, side by side on this machine.
#
#   benches/sweep/run.sh [BINARY] [REPEATS]
#
# Runs PQN on the coin game (assets/runs/pqn_coin.ron, CPU critic) as a 4 learning rates x
# 4 seeds sweep in one process (16 replicas in one stack), then the same 16 configurations as
# 16 separate `gridarena train` runs, REPEATS times (default 3), and prints each wall time and
# the ratio of the medians. STEPS (default 300000) env steps per replica. Output under
# ${OUT:-/tmp/gridarena-sweep-bench}.
set -euo pipefail
bin=${1:-target/release/gridarena}
repeats=${2:-3}
steps=${STEPS:-300000}
out=${OUT:-/tmp/gridarena-sweep-bench}
lrs=(1e-3 5e-4 2.5e-4 1e-4)
seeds=4
[ -x "$bin" ] || { echo "no binary $bin (cargo build --release)" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out"
common=(train --config assets/runs/pqn_coin.ron --set device=cpu --steps "$steps")
now() { date +%s.%N; }
one=(); many=()
for r in $(seq 1 "$repeats"); do
    t0=$(now)
    "$bin" "${common[@]}" --seeds $seeds --sweep "lr=[$(IFS=,; echo "${lrs[*]}")]" \
        --out "$out/sweep_$r" > "$out/sweep_$r.log"
    t1=$(now)
    for lr in "${lrs[@]}"; do
        for s in $(seq 0 $((seeds - 1))); do
            "$bin" "${common[@]}" --seed "$s" --set "lr=$lr" --out "$out/single_${r}_${lr}_$s" \
                > /dev/null
        done
    done
    t2=$(now)
    a=$(awk "BEGIN {print $t1 - $t0}"); b=$(awk "BEGIN {print $t2 - $t1}")
    one+=("$a"); many+=("$b")
    printf 'repeat %d: one process %.1f s, %d runs one after another %.1f s (%.2fx)\n' \
        "$r" "$a" $(( ${#lrs[@]} * seeds )) "$b" "$(awk "BEGIN {print $b / $a}")"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m1=$(median "${one[@]}"); m2=$(median "${many[@]}")
printf 'median: one process %.1f s, one after another %.1f s: the sweep is %.2fx faster\n' \
    "$m1" "$m2" "$(awk "BEGIN {print $m2 / $m1}")"
echo "ranking of the last sweep ($out/sweep_$repeats/sweep.csv):"
sed -n '/^sweep: grid points/,$p' "$out/sweep_$repeats.log"

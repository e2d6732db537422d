#!/usr/bin/env bash
# Wall time to cooperation on the 3x3 coin game, side by side on this machine:
#   gridarena: LOQA and Advantage Alignment, `gridarena train --config
#              assets/runs/{loqa,advantage_alignment}_coin.ron --set device=cpu` (one seed each);
#   LOQA:      the authors' own code (github.com/MiladInk/loqa at commit 32f50c9, JAX on the
#              CPU), `coin_train.py` with the 3x3 coin-game flags of its README (batch 512,
#              episodes of 50 steps, self-play with a replay buffer of past agents).
# "Cooperation" is an own-colour share of the coins picked up of at least THRESHOLD (default
# 0.9), for both players, over the last 3 measurements (gridarena: its training updates'
# `own_coin_proportion`; LOQA: 1 - `adversarial_pickup_div_all_pickup` of its evaluation
# episodes, every EVAL_EVERY iterations). Prints each side's wall time, iterations and env steps
# to that point, or that it did not get there within CAP_SECONDS.
#
# Usage: benches/peers/loqa_coin.sh LOQA_CHECKOUT [GRIDARENA_BINARY]
#   LOQA_CHECKOUT     a clone of github.com/MiladInk/loqa at commit 32f50c9 (the repository
#                     has no licence file, so it is not vendored here: clone it yourself)
#   GRIDARENA_BINARY  default target/release/gridarena
# Environment: CAP_SECONDS (per side, default 7200), THRESHOLD (default 0.9), EVAL_EVERY
# (default 10), SEED (default 42, LOQA's first paper seed; gridarena's seed too), LOQA_VENV
# (default benches/peers/.venv-loqa, created from requirements-loqa.txt pinned by
# requirements-loqa.lock).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [[ $# -lt 1 ]]; then
    sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
loqa="$(cd "$1" && pwd)"
gridarena="${2:-target/release/gridarena}"
cd "$root"
if [[ ! -x "$gridarena" ]]; then
    echo "no gridarena binary at $gridarena (build it with cargo build --release, or pass its path)" >&2
    exit 2
fi
want=32f50c91bbff05236883221d9ab4372878ddbec8
got="$(git -C "$loqa" rev-parse HEAD 2>/dev/null || echo none)"
if [[ "$got" != "$want" ]]; then
    echo "$loqa is at $got; check out $want (git -C $loqa checkout $want)" >&2
    exit 2
fi
venv="${LOQA_VENV:-$here/.venv-loqa}"
stamp="$venv/.installed-$(cat "$here/requirements-loqa.txt" "$here/requirements-loqa.lock" | sha256sum | cut -c1-16)"
if [[ ! -e "$stamp" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$here/requirements-loqa.txt" -c "$here/requirements-loqa.lock"
    touch "$stamp"
fi
exec "$venv/bin/python" "$here/loqa_coin.py" --loqa "$loqa" --gridarena "$gridarena" \
    --cap "${CAP_SECONDS:-7200}" --threshold "${THRESHOLD:-0.9}" --eval-every "${EVAL_EVERY:-10}" \
    --seed "${SEED:-42}"

#!/usr/bin/env bash
# The PyTorch examples (examples/python/ppo_torch_pursuit.py, pqn_torch_coin.py): they learn,
# and their throughput beside the same PyTorch script on PettingZoo's pursuit_v5 (SuperSuit)
# and beside gridarena's Rust learners. Builds the release binary and the release wheel,
# installs the wheel into a virtualenv with torch, runs the torch and JAX DLPack tests
# (benches/peers/test_dlpack_frameworks.py), then benches/peers/python_examples.py.
#
# Usage: benches/peers/python_examples.sh [ARGS for python_examples.py]
#   e.g. benches/peers/python_examples.sh --write-readme
#        benches/peers/python_examples.sh --ppo-steps 200000 --pqn-steps 200000 --rounds 1
# Environment: EXAMPLES_VENV (default benches/peers/.venv-examples, made from
# requirements-examples.txt on first use), PYTHON (default python3), CARGO_TARGET_DIR.
# The README's figures: --ppo-steps 12000000 --pqn-steps 8000000 --write-readme, about 5 minutes
# on 2 cores once the virtualenv and the builds exist (the defaults: about 2.5 minutes).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${EXAMPLES_VENV:-$here/.venv-examples}"
cd "$root"

source "$here/venv.sh"
peers_venv "$venv" .examples-requirements "torch, PettingZoo, SuperSuit (~6 GB with torch's CUDA libraries)" \
    "$here/requirements-examples.txt"

echo "== cargo build --release; maturin build --release (the wheel users install)"
cargo build --release --quiet
target="${CARGO_TARGET_DIR:-$root/target}"
rm -rf target/wheels-examples
"$venv/bin/maturin" build --release -m python/Cargo.toml --out target/wheels-examples
"$venv/bin/pip" install --quiet --force-reinstall --no-deps target/wheels-examples/gridarena-*.whl

echo "== torch and JAX through DLPack"
(cd /tmp && "$venv/bin/python" -m pytest -q "$here/test_dlpack_frameworks.py")

echo "== learning and throughput"
"$venv/bin/python" "$here/python_examples.py" --gridarena "$target/release/gridarena" "$@"

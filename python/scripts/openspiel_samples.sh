#!/usr/bin/env bash
# Builds python/scripts/.venv-openspiel with open_spiel==2.0.2 (pip wheels for CPython 3.11) and
# writes the PSRO reference samples to tests/data/openspiel/ (openspiel_psro_sample.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv-openspiel"
python="${PYTHON:-python3.11}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet "open_spiel==2.0.2" "numpy<2" "scipy==1.11.4"
fi
mkdir -p "$root/tests/data/openspiel"
"$venv/bin/python" "$here/openspiel_psro_sample.py" "$root/tests/data/openspiel"

#!/usr/bin/env bash
# The GEMM candidates for the CPU learner, side by side in one run on the critic's shapes,
# single precision, 1 and 2 threads:
#   matrixmultiply (what the engine multiplied with, through ndarray, until it moved to faer's);
#   faer's `gemm` crate with its AVX-512 kernels (`x86-v4`), dispatched at run time (what the
#     engine multiplies with: src/simd/gemm.rs, one thread per call);
#   numpy's OpenBLAS choosing its own kernel (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for
#     that command alone), and forced onto its Haswell (AVX2) kernel;
#   PyTorch `mm`, when the Python given has torch.
# Each figure is the median over RUNS rounds (each round the best of 9 timed batches), the
# rounds interleaved. Prints the CPU, whether it has AVX-512, every round's lines, and a
# Markdown table of the medians, which it also writes, with the CPU lines, to
# benches/figures/gemm.md.
#
# Usage: benches/gemm/run.sh [RUNS]          (default 3)
# Environment: PYTHON, a Python with numpy (and torch, optionally); default the peers' virtualenv
# (benches/peers/.venv) when it exists, else the repository's .venv, else python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs="${1:-3}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "RUNS must be a positive integer" >&2
    exit 2
fi
py="${PYTHON:-}"
if [[ -z "$py" ]]; then
    for p in "$root/benches/peers/.venv/bin/python" "$root/.venv/bin/python" python3; do
        if "$p" -c "import numpy" 2>/dev/null; then py="$p"; break; fi
    done
fi
has_torch=0
if [[ -n "$py" ]] && "$py" -c "import torch" 2>/dev/null; then has_torch=1; fi

cpu_lines="$(
echo "== CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores"
if grep -qw avx512f /proc/cpuinfo; then
    echo "== AVX-512: yes ($(grep -m1 flags /proc/cpuinfo | tr ' ' '\n' | grep '^avx512' | tr '\n' ' '))"
else
    echo "== AVX-512: no (AVX2: $(grep -qw avx2 /proc/cpuinfo && echo yes || echo no), FMA: $(grep -qw fma /proc/cpuinfo && echo yes || echo no))"
fi
echo "== environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}"
)"
echo "$cpu_lines"

target="${CARGO_TARGET_DIR:-$root/target}/gemm-candidates"
echo "== building the Rust candidates (release) into $target"
CARGO_TARGET_DIR="$target" cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="$target/release/gemm-candidates"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$runs"); do
    echo "== round $r of $runs"
    for t in 1 2; do
        MATMUL_NUM_THREADS=$t "$bin" "$t" | sed 's/^/rust /' | tee -a "$out"
        if [[ -n "$py" ]]; then
            env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=$t \
                "$py" "$here/blas_gemm.py" numpy "$t" | sed 's/^numpy/py openblas-own/' | tee -a "$out"
            OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=$t \
                "$py" "$here/blas_gemm.py" numpy "$t" | sed 's/^numpy/py openblas-haswell/' | tee -a "$out"
            if [[ $has_torch == 1 ]]; then
                OPENBLAS_NUM_THREADS=$t "$py" "$here/blas_gemm.py" torch "$t" | sed 's/^/py /' | tee -a "$out"
            fi
        fi
    done
done

table="$("${py:-python3}" - "$out" <<'PY'
import statistics, sys, collections
rows = collections.defaultdict(list)
diffs = {}
shapes = []
for line in open(sys.argv[1]):
    _, name, threads, shape, gflops, diff = line.split()
    rows[(name, threads, shape)].append(float(gflops))
    diffs[(name, threads, shape)] = diff
    if shape not in shapes:
        shapes.append(shape)
names = []
for (name, threads, _) in rows:
    if (name, threads) not in names:
        names.append((name, threads))
print("| GEMM | threads | " + " | ".join(shapes) + " |")
print("|---|---|" + "---|" * len(shapes))
for name, threads in names:
    cells = []
    for s in shapes:
        v = rows.get((name, threads, s))
        cells.append(f"{statistics.median(v):.1f}" if v else "-")
    print(f"| {name} | {threads} | " + " | ".join(cells) + " |")
PY
)"
echo
echo "== medians of $runs rounds, GFLOP/s (single precision, M x K x N)"
echo "$table"
{
    echo "# GEMM candidates on the critic's shapes"
    echo
    echo "\`benches/gemm/run.sh $runs\` on $(date -u +%Y-%m-%d): medians of $runs rounds, GFLOP/s, single precision, M x K x N."
    echo
    echo "$cpu_lines" | sed 's/^== /- /'
    echo
    echo "$table"
} > "$root/benches/figures/gemm.md"
echo "wrote benches/figures/gemm.md"

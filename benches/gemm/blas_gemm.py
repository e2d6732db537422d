"""Times numpy's matmul (OpenBLAS, whichever kernel the environment lets it choose) and, when
installed, PyTorch's `mm`, on the shapes of benches/gemm/src/main.rs, printing lines in its
format: `NAME THREADS MxKxN GFLOPS MAXDIFF` (MAXDIFF against numpy's float64 product).

Usage: python blas_gemm.py NAME THREADS   (NAME: numpy or torch; the thread count must also be
in OPENBLAS_NUM_THREADS, which run.sh sets, since OpenBLAS reads it at import)
"""

import sys
import time

import numpy as np

SHAPES = [(512, 512, 512), (1024, 128, 128), (1024, 147, 128), (4096, 38, 128), (128, 1024, 128)]


def seconds(flop, f):
    for _ in range(3):
        f()
    reps = max(1, int(2e8 / flop))
    best = float("inf")
    for _ in range(9):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def main():
    name, threads = sys.argv[1], int(sys.argv[2])
    if name == "torch":
        import torch

        torch.set_num_threads(threads)
    for m, k, n in SHAPES:
        a = ((np.arange(m * k) * 7919) % 97 / 97.0 - 0.5).astype(np.float32).reshape(m, k)
        b = ((np.arange(k * n) * 104729) % 89 / 89.0 - 0.5).astype(np.float32).reshape(k, n)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        flop = 2.0 * m * k * n
        if name == "torch":
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            s = seconds(flop, lambda: torch.mm(ta, tb))
            c = torch.mm(ta, tb).numpy()
        else:
            s = seconds(flop, lambda: a @ b)
            c = a @ b
        diff = float(np.max(np.abs(c - exact)))
        print(f"{name} {threads} {m}x{k}x{n} {flop / s / 1e9:.1f} {diff:e}", flush=True)


if __name__ == "__main__":
    main()

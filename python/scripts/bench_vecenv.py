#!/usr/bin/env python3
"""VecEnv.step from Python against `gridarena bench env` (Rust) and PettingZoo's pursuit_v5, side
by side in one run on this machine.

    python python/scripts/bench_vecenv.py [--arenas 1024] [--steps 1000] [--repeats 5] \
        [--bin target/release/gridarena]

Prints pursuer-steps/s (learning agents x arena-steps per second) as the median of the repeats
for: VecEnv with actions drawn beforehand (the engine's cost seen from Python), the Rust
benchmark on the same batch, and PettingZoo's pursuit_v5 ParallelEnv (one arena, random actions;
a few episodes only: it is slow). Build the package in release mode first
(`maturin build --release` in python/, then pip install the wheel).
"""

import argparse
import re
import statistics
import subprocess
import time

import numpy as np

import gridarena


def vecenv(arenas, steps):
    env = gridarena.VecEnv("pursuit", arenas, seed=1)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 5, size=(arenas, env.num_agents)) for _ in range(16)]
    for i in range(50):
        env.step(actions[i % 16])
    t = time.perf_counter()
    for i in range(steps):
        env.step(actions[i % 16])
    return steps * arenas * env.num_agents / (time.perf_counter() - t)


def rust(binary, arenas, steps):
    out = subprocess.run(
        [binary, "bench", "env", "--arenas", str(arenas), "--steps", str(steps), "--repeat", "1"],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"agent-steps/s \(median\):\s*(\d+)", out)
    if not m:
        raise SystemExit(f"cannot read `bench env`'s output:\n{out}")
    return float(m.group(1))


def pettingzoo(episodes):
    from pettingzoo.sisl import pursuit_v5

    env = pursuit_v5.parallel_env()
    rng = np.random.default_rng(0)
    steps, t = 0, time.perf_counter()
    for e in range(episodes):
        env.reset(seed=e)
        while env.agents:
            env.step({a: int(rng.integers(5)) for a in env.agents})
            steps += len(env.possible_agents)
    return steps / (time.perf_counter() - t)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--arenas", type=int, default=1024)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--bin", default="target/release/gridarena")
    p.add_argument("--pz-episodes", type=int, default=3)
    a = p.parse_args()
    # Interleaved, so drift in this machine's speed hits both sides alike.
    py, rs = [], []
    for _ in range(a.repeats):
        py.append(vecenv(a.arenas, a.steps))
        rs.append(rust(a.bin, a.arenas, a.steps))
    pz = pettingzoo(a.pz_episodes)
    mpy, mrs = statistics.median(py), statistics.median(rs)
    print(f"VecEnv.step from Python: {mpy / 1e6:.2f}M pursuer-steps/s (runs {[round(x / 1e6, 2) for x in py]})")
    print(f"gridarena bench env:     {mrs / 1e6:.2f}M pursuer-steps/s (runs {[round(x / 1e6, 2) for x in rs]})")
    print(f"PettingZoo pursuit_v5:   {pz / 1e3:.1f}K pursuer-steps/s ({a.pz_episodes} episodes)")
    pairs = statistics.median(x / y for x, y in zip(py, rs))
    print(f"Python / Rust: {mpy / mrs:.2f} (median of the paired runs' ratios {pairs:.2f}); "
          f"Python / PettingZoo: {mpy / pz:.0f}x")


if __name__ == "__main__":
    main()

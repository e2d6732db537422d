"""Timing of a jitted JAX rollout, shared by the peer scripts that step JAX environments.

`env_steps_per_second(run, key, runs, env_steps)` calls `run(key)` once to compile and warm up,
then times `runs` calls, each until its result is ready, printing every call's rate
(`run R: N env steps/s`), and returns the median rate.
"""

import time

import jax
import numpy as np


def env_steps_per_second(run, key, runs, env_steps):
    run(key).block_until_ready()  # compile + warm-up
    rates = []
    for r in range(runs):
        key, k = jax.random.split(key)
        t0 = time.perf_counter()
        run(k).block_until_ready()
        rates.append(env_steps / (time.perf_counter() - t0))
        print(f"run {r + 1}: {rates[-1]:.0f} env steps/s", flush=True)
    return float(np.median(rates))

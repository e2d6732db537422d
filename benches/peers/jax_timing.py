"""Timing of a jitted JAX rollout, shared by the peer scripts that step JAX environments.

`rollout(reset, step, steps)` makes the function of a key that such a script times: `reset(key)`
gives the batch's state, then one `lax.scan` calls `step(state, key)` (which returns the next
state and a number that keeps the step's outputs alive) `steps` times and sums those numbers.
`env_steps_per_second(run, key, runs, env_steps)` calls `run(key)` once to compile and warm up,
then times `runs` calls, each until its result is ready, printing every call's rate
(`run R: N env steps/s`), and returns the median rate. `report(reset, step, a, what)` does
both for a script's parsed arguments `a` (`envs`, `steps`, `runs`, `seed`), then prints JAX's
version and devices with `what` and the line `env steps/s: N` the shell scripts read.
"""

import time

import jax
import numpy as np


def rollout(reset, step, steps):
    def run(key):
        key, k0 = jax.random.split(key)

        def one(carry, _):
            state, key = carry
            key, k = jax.random.split(key)
            state, check = step(state, k)
            return (state, key), check

        _, checks = jax.lax.scan(one, (reset(k0), key), None, length=steps)
        return checks.sum()

    return run


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


def report(reset, step, a, what):
    run = jax.jit(rollout(reset, step, a.steps))
    rate = env_steps_per_second(run, jax.random.PRNGKey(a.seed), a.runs, a.envs * a.steps)
    print(f"jax {jax.__version__}, devices {jax.devices()}, {what}, envs {a.envs}, "
          f"steps {a.steps}")
    print(f"env steps/s: {rate:.0f}")

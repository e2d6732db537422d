"""SocialJax's Commons Harvest (open) or Clean Up stepped under uniformly random actions, timed
in env steps/s.

`envs` environments vmapped inside one jitted `lax.scan` of `steps` steps (SocialJax's `step`,
auto-reset included, every agent's observation computed every step as SocialJax always does),
on the CPU, with the settings its IPPO configurations train with (7 players, 1,000 steps per
episode, CNN observations). The whole observation is reduced into the scan's output, so none
of it can be left uncomputed. The first call compiles and warms up; each following call is timed
until its results are ready. Prints every run's figure and one line `env steps/s: N` (the
median; env steps = environments x steps, as `gridarena bench env` counts them).

SocialJax is not on PyPI: put a checkout on PYTHONPATH (socialjax.sh does).

    python benches/peers/socialjax_env.py --env harvest_common_open --envs 64 --steps 100 --runs 5
"""

import argparse
import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
warnings.filterwarnings("ignore")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import socialjax  # noqa: E402
from jax_timing import report  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env", default="harvest_common_open", choices=["harvest_common_open", "clean_up"])
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if min(a.envs, a.steps, a.runs) < 1:
        p.error("--envs, --steps and --runs must be at least 1")
    env = socialjax.make(a.env, num_agents=7, num_inner_steps=1000, cnn=True, jit=True)
    n, actions = env.num_agents, env.action_space().n

    def reset(key):
        return jax.vmap(env.reset)(jax.random.split(key, a.envs))[1]

    def step(state, key):
        ka, ks = jax.random.split(key)
        acts = jax.random.randint(ka, (n, a.envs), 0, actions)
        obs, state, rew, _, _ = jax.vmap(env.step)(
            jax.random.split(ks, a.envs), state, [acts[i] for i in range(n)]
        )
        # Keep every output alive (the observation is part of the work).
        return state, jnp.sum(jnp.asarray(rew, jnp.float32)) + jnp.sum(obs, dtype=jnp.float32)

    report(reset, step, a, f"env {a.env}, agents {n}")


if __name__ == "__main__":
    main()

"""JaxMARL's Overcooked stepped under uniformly random actions, timed in env steps/s.

`envs` environments vmapped inside one jitted `lax.scan` of `steps` steps (JaxMARL's `step`,
auto-reset included, observations computed every step as JaxMARL always does), on the CPU.
The first call compiles and warms up; each following call is timed until its results are
ready. Prints every run's figure and one line `env steps/s: N` (the median; env steps =
environments x steps, as `gridarena bench env` counts them).

    python benches/peers/overcooked.py --layout cramped_room --envs 4096 --steps 100 --runs 5
"""

import argparse
import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
warnings.filterwarnings("ignore")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax_timing import env_steps_per_second  # noqa: E402
from jaxmarl.environments.overcooked import Overcooked, overcooked_layouts  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layout", default="cramped_room")
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    env = Overcooked(layout=overcooked_layouts[a.layout])

    def rollout(key):
        key, k0 = jax.random.split(key)
        _, state = jax.vmap(env.reset)(jax.random.split(k0, a.envs))

        def one(carry, _):
            state, key = carry
            key, ka, k0, k1 = jax.random.split(key, 4)
            acts = jax.random.randint(ka, (2, a.envs), 0, 6)
            obs, state, rew, done, _ = jax.vmap(env.step)(
                jax.random.split(k0, a.envs), state, {"agent_0": acts[0], "agent_1": acts[1]}
            )
            # Keep the step's outputs alive: the reward and one element of each observation.
            # XLA may then compute less of the observation than a learner would read; summing
            # all of it instead cost JaxMARL 4-8% on cramped_room with 4096 environments, the
            # reduction included, so this is the measure kinder to JaxMARL.
            check = rew["agent_0"].sum() + obs["agent_0"][:, 0, 0, 0].sum() + obs["agent_1"][:, 0, 0, 0].sum()
            return (state, key), check

        (state, _), checks = jax.lax.scan(one, (state, key), None, length=a.steps)
        return checks.sum()

    rate = env_steps_per_second(jax.jit(rollout), jax.random.PRNGKey(a.seed), a.runs,
                                a.envs * a.steps)
    print(f"jax {jax.__version__}, devices {jax.devices()}, layout {a.layout}, envs {a.envs}, steps {a.steps}")
    print(f"env steps/s: {rate:.0f}")


if __name__ == "__main__":
    main()

"""Jumanji's Level-Based Foraging stepped under uniformly random actions, timed in env steps/s.

Jumanji (InstaDeep's JAX environments; Mava reports its LBF results on it) is the fastest
other LBF implementation installable here. `envs` environments are stepped by
`VmapAutoResetWrapper` inside one jitted `lax.scan` of `steps` steps (observations and action
masks computed every step, as Jumanji always does), on the CPU. The first call compiles and
warms up; each following call is timed until its results are ready. Prints every run's figure
and one line `env steps/s: N` (the median; env steps = environments x steps, as `gridarena
bench env` counts them).

Run it on one core (`taskset -c 0`, with XLA_FLAGS as jumanji_lbf.sh sets them) to compare per
core.

    python benches/peers/jumanji_lbf.py --grid 8 --agents 2 --foods 2 --envs 4096
"""

import argparse
import os
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")
warnings.filterwarnings("ignore")

import jax  # noqa: E402
from jax_timing import report  # noqa: E402
from jumanji.environments.routing.lbf import LevelBasedForaging  # noqa: E402
from jumanji.environments.routing.lbf.generator import RandomGenerator  # noqa: E402
from jumanji.wrappers import VmapAutoResetWrapper  # noqa: E402


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return v


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grid", type=positive, default=8, help="field side (default 8)")
    p.add_argument("--agents", type=positive, default=2)
    p.add_argument("--foods", type=positive, default=2)
    p.add_argument("--sight", type=positive, default=None,
                   help="field of view (default: the whole field)")
    p.add_argument("--max-level", type=positive, default=2, help="highest agent level (default 2)")
    p.add_argument("--force-coop", action="store_true")
    p.add_argument("--time-limit", type=positive, default=50,
                   help="episode length (lbforaging's registered 50; Jumanji's own default is 100)")
    p.add_argument("--envs", type=positive, default=4096)
    p.add_argument("--steps", type=positive, default=100)
    p.add_argument("--runs", type=positive, default=5)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.max_level < 2:
        p.error("Jumanji needs --max-level of at least 2")
    generator = RandomGenerator(
        grid_size=a.grid,
        num_agents=a.agents,
        num_food=a.foods,
        fov=a.sight if a.sight is not None else a.grid,
        max_agent_level=a.max_level,
        force_coop=a.force_coop,
    )
    env = VmapAutoResetWrapper(LevelBasedForaging(generator=generator, time_limit=a.time_limit))

    def reset(key):
        return env.reset(jax.random.split(key, a.envs))[0]

    def step(state, key):
        acts = jax.random.randint(key, (a.envs, a.agents), 0, 6)
        state, ts = env.step(state, acts)
        # Keep every output alive (the observation and the mask are part of the work).
        obs = ts.observation
        return state, ts.reward.sum() + obs.agents_view.sum() + obs.action_mask.sum()

    report(reset, step, a,
           f"grid {a.grid}, agents {a.agents}, foods {a.foods}, sight {a.sight or a.grid}")


if __name__ == "__main__":
    main()

"""Melting Pot substrate steps per second in one process, under uniformly random actions.

Builds the substrate with its default configuration (default players, default episode
ending: a random end from step 1000 on, at most 5000 steps) through dm-meltingpot 2.4.1's
public `substrate.build`, resets it, and times STEPS steps of uniformly random joint actions,
resets at episode ends included (as gridarena's batch auto-resets). Prints `env steps/s: N`.

Run inside python/scripts/.venv-meltingpot (python/scripts/meltingpot_sample.py builds it):
    python benches/peers/meltingpot.py --substrate clean_up [--steps 3000]
"""

import argparse
import os
import sys
import time
from unittest import mock

# This file is named meltingpot.py: keep its folder off the path so `import meltingpot` finds
# the package.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--substrate", default="clean_up")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    # Only Melting Pot's bots import tensorflow; the substrates do not use it.
    sys.modules.setdefault("tensorflow", mock.MagicMock())
    import numpy as np
    from meltingpot import substrate

    config = substrate.get_config(args.substrate)
    roles = config.default_player_roles
    env = substrate.build(args.substrate, roles=roles)
    actions = len(config.action_set)
    rng = np.random.default_rng(args.seed)
    joint = rng.integers(0, actions, (args.steps, len(roles)))
    env.reset()
    episodes = 0
    start = time.perf_counter()
    for t in range(args.steps):
        ts = env.step(joint[t])
        if ts.last():
            env.reset()
            episodes += 1
    seconds = time.perf_counter() - start
    env.close()
    print(f"{args.substrate}: {len(roles)} players, {args.steps} steps, "
          f"{episodes} episode ends, {seconds:.2f} s")
    print(f"env steps/s: {args.steps / seconds:.1f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PettingZoo's own pursuit_v5 under uniformly random actions: catches per 500-step episode and
each pursuer's return, written as the JSON sample the fidelity test compares gridarena against.

    python python/scripts/pettingzoo_pursuit_sample.py --episodes 400 --surround true \
        --out python/tests/data/pettingzoo_pursuit_surround.json

PettingZoo steps ~2-5 s per episode on a laptop core, so the test reads this committed sample
instead of running PettingZoo; rerun this script whenever gridarena's Pursuit rules change.
Needs `pip install pettingzoo pygame scipy`.
"""

import argparse
import json
import os
import platform

import numpy as np
import pettingzoo
from pettingzoo.sisl import pursuit_v5


def episode(env, rng):
    env.reset(seed=int(rng.integers(2**31)))
    base = env.unwrapped.env
    start = base.evader_layer.n_agents()
    returns = dict.fromkeys(env.agents, 0.0)
    while env.agents:
        actions = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
        _, rewards, _, _, _ = env.step(actions)
        for a, r in rewards.items():
            returns[a] += r
    catches = start - base.evader_layer.n_agents()
    return catches, [returns[a] for a in sorted(returns, key=lambda s: int(s.split("_")[1]))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=200)
    p.add_argument("--surround", choices=["true", "false"], default="true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    env = pursuit_v5.parallel_env(surround=a.surround == "true")
    rng = np.random.default_rng(a.seed)
    catches, returns = [], []
    source = (
        f"pettingzoo {pettingzoo.__version__} sisl.pursuit_v5, surround={a.surround}, "
        f"uniform random actions, seed {a.seed}, python {platform.python_version()}"
    )
    for k in range(a.episodes):
        c, r = episode(env, rng)
        catches.append(c)
        returns.append(r)
        print(f"episode {k + 1}/{a.episodes}: {c} catches", flush=True)
        if (k + 1) % 10 == 0 or k + 1 == a.episodes:
            # Written as it goes (atomically): a stopped run keeps the episodes it finished.
            tmp = a.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"source": source, "catches": catches, "returns": returns}, f)
            os.replace(tmp, a.out)

if __name__ == "__main__":
    main()

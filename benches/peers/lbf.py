#!/usr/bin/env python3
"""lbforaging 2.0.0's ForagingEnv stepped from Python on one core: uniformly random *valid*
actions (from its own valid-action lists), resets included. Prints `lbforaging env steps/s: X`
(env steps: one joint step of all agents).

    benches/peers/lbf.sh   (runs this beside `gridarena bench env`, interleaved)
    python benches/peers/lbf.py --config 8x8-2p-2f --seconds 5
"""

import argparse
import random
import time

from lbforaging.foraging.environment import ForagingEnv


def make(config):
    """The environment lbforaging 2.0 registers for CONFIG: `SxS-Pp-Ff`, then optionally
    `-coop` (force_coop) and `-Ns` (sight N; the field's side otherwise), e.g. 8x8-2p-2f-2s
    for Foraging-2s-8x8-2p-2f-v3."""
    parts = config.split("-")
    if len(parts) < 3:
        raise SystemExit(f"--config {config!r}: expected SxS-Pp-Ff[-coop][-Ns]")
    size, players, food = parts[:3]
    size = int(size.split("x")[0])
    coop, sight = False, size
    for flag in parts[3:]:
        if flag == "coop":
            coop = True
        elif flag.endswith("s") and flag[:-1].isdigit():
            sight = int(flag[:-1])
        else:
            raise SystemExit(f"--config {config!r}: unknown part {flag!r} (coop or Ns)")
    return ForagingEnv(
        players=int(players[:-1]),
        min_player_level=1,
        max_player_level=2,
        field_size=(size, size),
        min_food_level=1,
        max_food_level=None,
        max_num_food=int(food[:-1]),
        sight=sight,
        max_episode_steps=50,
        force_coop=coop,
        grid_observation=False,
        penalty=0.0,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="8x8-2p-2f",
                   help="SxS-Pp-Ff[-coop][-Ns], e.g. 15x15-4p-3f or 10x10-3p-3f-2s")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    env = make(a.config)
    rng = random.Random(a.seed)
    env.reset(seed=a.seed)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < a.seconds:
        for _ in range(100):
            actions = [rng.choice(env._valid_actions[pl]).value for pl in env.players]
            _, _, done, _, _ = env.step(actions)
            steps += 1
            if done:
                env.reset()
    elapsed = time.perf_counter() - start
    print(f"lbforaging env steps/s: {steps / elapsed:.1f}")


if __name__ == "__main__":
    main()

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
    size, players, food = config.split("-")
    size = int(size.split("x")[0])
    return ForagingEnv(
        players=int(players[:-1]),
        min_player_level=1,
        max_player_level=2,
        field_size=(size, size),
        min_food_level=1,
        max_food_level=None,
        max_num_food=int(food[:-1]),
        sight=size,
        max_episode_steps=50,
        force_coop=False,
        grid_observation=False,
        penalty=0.0,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default="8x8-2p-2f", help="SxS-Pp-Ff, e.g. 15x15-4p-3f")
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

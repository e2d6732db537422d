"""gridarena as a PettingZoo ParallelEnv: the API test, the dict loop, overrides and rendering.

`gridarena.parallel_env(scenario, seed=None, render_mode=None, **overrides)` is one arena of a
scenario as a standard PettingZoo ParallelEnv: agents `agent_0`, `agent_1`, ... (the scenario's
learning agents in slot order), `Box(0, 255, (O,), uint8)` observations, `Discrete(A)` actions,
`terminated` when the rules end the episode (e.g. every evader caught) and `truncated` at the
scenario's `max_steps`. Keyword overrides change the scenario's fields (`max_steps=100`,
`surround=False`, `**{"observation.radius": 2}`).

This script
1. runs PettingZoo's own `parallel_api_test` on the env,
2. plays `--episodes` episodes with random actions through the dict API (reset -> step(dict of
   actions) -> dicts of observations, rewards, terminations, truncations, infos) and prints each
   episode's length, how it ended and the agents' returns,
3. with `--render`, builds the env with `render_mode="rgb_array"` and prints the frame's shape.

Run (from the repository root, with the gridarena package installed):

    python examples/python/pettingzoo_wrapper.py    # pursuit, max_steps=100, surround=False
    python examples/python/pettingzoo_wrapper.py --episodes 2 --render
    python examples/python/pettingzoo_wrapper.py --scenario coin_game --max-steps 16
"""

import argparse

import numpy as np
from pettingzoo.test import parallel_api_test

import gridarena


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="pursuit", help="shipped name or .ron path")
    p.add_argument("--episodes", type=int, default=3, help="random-action episodes to play")
    p.add_argument("--max-steps", type=int, default=100,
                   help="override of the scenario's max_steps (episode length limit)")
    p.add_argument("--api-cycles", type=int, default=200, help="num_cycles of parallel_api_test")
    p.add_argument("--render", action="store_true", help='also show render_mode="rgb_array"')
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    overrides = {"max_steps": args.max_steps}
    if args.scenario.startswith("pursuit"):
        # A Pursuit field: one pursuer on an evader's cell catches it (no surrounding needed).
        overrides["surround"] = False
    print(f"scenario {args.scenario}, overrides {overrides}")

    # 1. PettingZoo's own API test (spaces, dict keys, dtypes, agents emptied at episode end).
    parallel_api_test(gridarena.parallel_env(args.scenario, seed=args.seed, **overrides),
                      num_cycles=args.api_cycles)
    print("parallel_api_test: passed")

    # 2. The dict API, as with any ParallelEnv.
    env = gridarena.parallel_env(args.scenario, **overrides)
    agent = env.possible_agents[0]
    print(f"{len(env.possible_agents)} agents {env.possible_agents[:3]}"
          f"{' ...' if len(env.possible_agents) > 3 else ''}; "
          f"observation_space {env.observation_space(agent)}, "
          f"action_space {env.action_space(agent)}")
    for episode in range(args.episodes):
        observations, infos = env.reset(seed=args.seed + episode)
        returns = dict.fromkeys(env.agents, 0.0)
        steps = 0
        while env.agents:
            actions = {a: env.action_space(a).sample() for a in env.agents}
            observations, rewards, terminations, truncations, infos = env.step(actions)
            for a, r in rewards.items():
                returns[a] += r
            steps += 1
        # After the last step `env.agents` is empty; the dicts still describe that step.
        how = "terminated" if any(terminations.values()) else "truncated"
        values = np.array(list(returns.values()))
        print(f"episode {episode}: {steps} steps, {how}; "
              f"return per agent mean {values.mean():+.2f} "
              f"(min {values.min():+.2f}, max {values.max():+.2f}); "
              f"last observation of {agent}: {observations[agent].dtype} "
              f"{observations[agent].shape}")
    env.close()

    # 3. Rendering: an [H, W, 3] uint8 RGB array of the arena.
    if args.render:
        env = gridarena.parallel_env(args.scenario, render_mode="rgb_array", **overrides)
        env.reset(seed=args.seed)
        env.step({a: env.action_space(a).sample() for a in env.agents})
        frame = env.render()
        print(f"render(): {frame.dtype} array of shape {frame.shape} "
              f"(backend: {gridarena.render_backend()})")
        env.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""lbforaging 2.0.0's own ForagingEnv under random actions (valid and invalid alike; LOAD favoured next to food):
exact trajectories and many resets, written as the JSON samples tests/lbf_fidelity.rs replays
and compares gridarena's LBF substrate against.

    python3 python/scripts/lbforaging_sample.py [--venv-only]

The script creates (or reuses) its own virtualenv at python/scripts/.venv-lbf with pinned
versions, re-runs itself inside it and writes tests/data/lbf/*.json. Rerun it whenever
gridarena's LBF rules change.

Coordinates are lbforaging's (row, col): row 0 is the top, NORTH is row - 1. Per configuration:
  trajectories: for each episode the reset state (agent positions and levels, food cells and
  levels, valid-action masks, vector observations), then per step the actions given, the agent
  positions, the food left, rewards, done, masks and observations after the step.
  A mask is a bit set over action indices (bit k set when action k is valid).
  resets: one line per reset: agent levels, agent positions, food cells and levels.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv-lbf")
PINS = [
    "lbforaging==2.0.0",
    "gymnasium==1.4.0",
    "numpy==2.4.6",
    "pyglet==1.5.31",
    "cloudpickle==3.1.3",
    "farama-notifications==0.0.6",
    "typing-extensions==4.16.0",
    "six==1.17.0",
]
OUT = os.path.join(HERE, "..", "..", "tests", "data", "lbf")


def ensure_venv():
    """Re-runs this script inside the pinned venv (created on first use)."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(VENV):
        return
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call([py, "-m", "pip", "install", "-q", *PINS])
    os.execv(py, [py, os.path.abspath(__file__), *sys.argv[1:]])


def kwargs_for(size, players, food, coop, two_sight, penalty=0.0):
    """The kwargs lbforaging/__init__.py registers Foraging{-2s}-SxS-Pp-Ff{-coop}-v3 with
    (penalty is registered only as 0.0; a nonzero one tests the option)."""
    return dict(
        players=players,
        min_player_level=1,
        max_player_level=2,
        field_size=(size, size),
        min_food_level=1,
        max_food_level=None,
        max_num_food=food,
        sight=2 if two_sight else size,
        max_episode_steps=50,
        force_coop=coop,
        grid_observation=False,
        penalty=penalty,
    )


# (sample name, registered id or None, kwargs, episodes, seed)
TRAJECTORIES = [
    ("8x8_2p_2f", "Foraging-8x8-2p-2f-v3", kwargs_for(8, 2, 2, False, False), 10, 1),
    ("8x8_2p_2f_coop", "Foraging-8x8-2p-2f-coop-v3", kwargs_for(8, 2, 2, True, False), 10, 2),
    ("8x8_3p_3f_pen", None, kwargs_for(8, 3, 3, False, False, penalty=0.1), 8, 3),
    ("10x10_3p_3f_2s", "Foraging-2s-10x10-3p-3f-v3", kwargs_for(10, 3, 3, False, True), 8, 4),
    ("5x5_4p_1f_2s_coop", "Foraging-2s-5x5-4p-1f-coop-v3", kwargs_for(5, 4, 1, True, True), 8, 5),
    ("15x15_4p_3f", "Foraging-15x15-4p-3f-v3", kwargs_for(15, 4, 3, False, False), 6, 6),
]
RESETS = [
    ("8x8_2p_2f", kwargs_for(8, 2, 2, False, False), 2000, 11),
    ("15x15_4p_3f", kwargs_for(15, 4, 3, False, False), 2000, 12),
    ("10x10_3p_3f_coop", kwargs_for(10, 3, 3, True, False), 1000, 13),
]


def state(env):
    pos = [[int(p.position[0]), int(p.position[1])] for p in env.players]
    rows, cols = env.field.nonzero()
    food = [[int(r), int(c), int(env.field[r, c])] for r, c in zip(rows, cols)]
    return pos, food


def masks(env):
    return [sum(1 << a.value for a in env._valid_actions[p]) for p in env.players]


def obs_ints(nobs):
    return [[int(v) for v in o] for o in nobs]


def trajectories(name, env_id, kw, episodes, seed):
    import numpy as np
    from lbforaging.foraging.environment import ForagingEnv

    env = ForagingEnv(**kw)
    rng = np.random.default_rng(seed)
    out = []
    for e in range(episodes):
        nobs, _ = env.reset(seed=seed * 1000 + e)
        pos, food = state(env)
        ep = {
            "levels": [int(p.level) for p in env.players],
            "food_spawned": int(env._food_spawned),
            "pos": pos,
            "food": food,
            "mask": masks(env),
            "obs": obs_ints(nobs),
            "steps": [],
        }
        done = False
        while not done:
            # Uniform over all 6 actions (valid or not), except that an agent next to food
            # loads with probability 1/2, so that cooperative loads happen often enough to test.
            actions = [
                5 if env.adjacent_food(*p.position) > 0 and rng.random() < 0.5
                else int(rng.integers(0, 6))
                for p in env.players
            ]
            nobs, rewards, done, _, _ = env.step(actions)
            pos, food = state(env)
            ep["steps"].append(
                {
                    "a": actions,
                    "pos": pos,
                    "food": food,
                    "r": [float(r) for r in rewards],
                    "done": bool(done),
                    "mask": masks(env),
                    "obs": obs_ints(nobs),
                }
            )
        out.append(ep)
    return {"name": name, "env_id": env_id, "kwargs": kw, "episodes": out}


def resets(name, kw, count, seed):
    from lbforaging.foraging.environment import ForagingEnv

    env = ForagingEnv(**kw)
    env.reset(seed=seed)
    lines = []
    for _ in range(count):
        pos, food = state(env)
        lines.append({"levels": [int(p.level) for p in env.players], "pos": pos, "food": food})
        env.reset()
    return {"name": name, "kwargs": kw, "resets": lines}


def check_registration():
    """The registered kwargs of the ids named above, to show the configurations are lbforaging's."""
    import gymnasium as gym
    import lbforaging  # noqa: F401  (registers the ids)

    for _, env_id, kw, _, _ in TRAJECTORIES:
        if env_id is None:
            continue
        spec = gym.spec(env_id)
        reg = {k: (tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in spec.kwargs.items()}
        mine = {k: (tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in kw.items()}
        assert reg == mine, f"{env_id}: registered {reg}, sampled {mine}"


def write(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def main():
    ensure_venv()
    if "--venv-only" in sys.argv:
        return
    import platform

    import lbforaging  # noqa: F401

    check_registration()
    os.makedirs(OUT, exist_ok=True)
    source = (
        f"lbforaging 2.0.0 ForagingEnv, random actions over all 6 (LOAD with probability 1/2 next to food), "
        f"python {platform.python_version()}, python/scripts/lbforaging_sample.py"
    )
    write(
        os.path.join(OUT, "trajectories.json"),
        {"source": source, "configs": [trajectories(*t) for t in TRAJECTORIES]},
    )
    write(
        os.path.join(OUT, "resets.json"),
        {"source": source, "configs": [resets(*r) for r in RESETS]},
    )
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)), "bytes")


if __name__ == "__main__":
    main()

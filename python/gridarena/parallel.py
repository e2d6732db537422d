"""A PettingZoo ParallelEnv over one arena of the engine.

Every learning agent of the scenario is a PettingZoo agent (`agent_0`, `agent_1`, ... in slot
order); observations are the engine's u8 observation rows (`Box(0, 255, (O,), uint8)`), actions
`Discrete(A)`. The engine resets an arena in the step that ends its episode; this wrapper hands
PettingZoo the observation that ended it (`final_obs`) and empties `agents`, as the API wants.
`render_mode="rgb_array"`: `render()` returns the arena as an `[H, W, 3]` uint8 image (the
engine's renderer, on the CPU when no GPU adapter exists).
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ._gridarena import VecEnv


class GridarenaParallelEnv(ParallelEnv):
    """One arena of `scenario` (a shipped name or a `.ron` path) as a PettingZoo ParallelEnv."""

    metadata = {
        "name": "gridarena_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 10,
        "is_parallelizable": True,
    }

    def __init__(self, scenario="pursuit", seed=None, render_mode=None, **overrides):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: use None or 'rgb_array'")
        self.scenario = scenario
        self.overrides = overrides
        self.render_mode = render_mode
        probe = VecEnv(scenario, 1, 0, 1, **overrides)
        self._n, self._o, self._a = probe.num_agents, probe.obs_len, probe.num_actions
        self.possible_agents = [f"agent_{i}" for i in range(self._n)]
        self.agents = []
        self._obs_space = spaces.Box(0, 255, (self._o,), np.uint8)
        self._act_space = spaces.Discrete(self._a)
        self._env = None
        self._seed = seed
        self._actions = np.zeros((1, self._n), dtype=np.int64)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observations(self, rows):
        return {a: rows[0, i].copy() for i, a in enumerate(self.possible_agents)}

    def reset(self, seed=None, options=None):
        if seed is None:
            seed = self._seed if self._seed is not None else int(np.random.SeedSequence().entropy % 2**63)
            self._seed = None
        self._env = VecEnv(self.scenario, 1, int(seed), 1, **self.overrides)
        self.agents = list(self.possible_agents)
        return self._observations(self._env.obs), {a: {} for a in self.agents}

    def step(self, actions):
        if self._env is None or not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        for i, a in enumerate(self.possible_agents):
            self._actions[0, i] = actions.get(a, 0)
        rewards, terminated, truncated = self._env.step(self._actions)
        ended = bool(terminated[0]) or bool(truncated[0])
        rows = self._env.final_obs if ended else self._env.obs
        agents = self.agents
        obs = self._observations(rows)
        rew = {a: float(rewards[0, i]) for i, a in enumerate(self.possible_agents)}
        term = {a: bool(terminated[0]) for a in agents}
        trunc = {a: bool(truncated[0]) and not bool(terminated[0]) for a in agents}
        infos = {a: {} for a in agents}
        if ended:
            self.agents = []
        return obs, rew, term, trunc, infos

    def render(self, cell=16):
        """The arena as an `[H, W, 3]` uint8 image (`render_mode="rgb_array"`); None otherwise."""
        if self.render_mode is None:
            return None
        if self._env is None:
            raise RuntimeError("render() before reset()")
        return self._env.render(0, cell)

    def close(self):
        self._env = None


def parallel_env(scenario="pursuit", seed=None, render_mode=None, **overrides):
    """The PettingZoo ParallelEnv of one arena of `scenario` (a shipped name or a `.ron` path).

    Keyword overrides change the scenario's fields: `max_steps=100`, `surround=False`,
    `move_order="pettingzoo"`, `**{"observation.radius": 2}`.
    """
    return GridarenaParallelEnv(scenario=scenario, seed=seed, render_mode=render_mode, **overrides)

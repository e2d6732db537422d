"""PettingZoo environments over one arena of the engine: `parallel_env` (a ParallelEnv) and
`aec_env` (the AEC env PettingZoo's own conversion makes of it).

Every learning agent of the scenario is a PettingZoo agent (`agent_0`, `agent_1`, ... in slot
order); observations are the engine's u8 observation rows (`Box(0, 255, (O,), uint8)`), actions
`Discrete(A)`. The engine resets an arena in the step that ends its episode; this wrapper hands
PettingZoo the observation that ended it and empties `agents`, as the API wants.

- Scenarios with illegal actions put each agent's mask in `infos[agent]["action_mask"]`
  (`int8`, 1 = legal), PettingZoo's convention.
- `state()` is the arena's global state (`state_space`, `Box(0, 255, (S,), uint8)`).
- `compat="pursuit_v5"` (with `pursuit_pz`) presents PettingZoo SISL's `pursuit_v5` instead:
  agents `pursuer_i`, `(7, 7, 3)` float32 observations indexed `[y, x, channel]`, its action
  numbering (see `compat.py`).
- `render_mode="rgb_array"`: `render()` returns the arena as an `[H, W, 3]` uint8 image.
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

from ._gridarena import VecEnv
from .compat import presenter


class GridarenaParallelEnv(ParallelEnv):
    """One arena of `scenario` (a shipped name or a `.ron` path) as a PettingZoo ParallelEnv."""

    metadata = {
        "name": "gridarena_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 10,
        "is_parallelizable": True,
    }

    def __init__(self, scenario="pursuit", seed=None, render_mode=None, compat=None, **overrides):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: use None or 'rgb_array'")
        self.scenario = scenario
        self.overrides = overrides
        self.render_mode = render_mode
        self._args = dict(scenario=scenario, seed=seed, render_mode=render_mode, compat=compat)
        self._env = VecEnv(scenario, 1, 0, 1, True, **overrides)
        n, o, a = self._env.num_agents, self._env.obs_len, self._env.num_actions
        self._view = presenter(compat, scenario, n, o, a, self._env.observation_blocks)
        if self._view.name:
            self.metadata = dict(self.metadata, name=self._view.name)
        self.possible_agents = list(self._view.agents)
        self.agents = []
        self._obs_space = self._view.observation_space
        self._act_space = spaces.Discrete(a)
        self.state_space = spaces.Box(0, 255, (self._env.state_len,), np.uint8)
        self._seed = seed
        self._started = False
        self._actions = np.zeros((1, n), dtype=np.int64)

    def observation_space(self, agent):
        return self._obs_space

    def action_space(self, agent):
        return self._act_space

    def _observations(self, rows):
        return {a: self._view.observation(rows[0, i]) for i, a in enumerate(self.possible_agents)}

    def _infos(self, agents):
        mask = self._env.action_mask
        if mask is None:
            return {a: {} for a in agents}
        index = {a: i for i, a in enumerate(self.possible_agents)}
        return {a: {"action_mask": mask[0, index[a]].astype(np.int8)} for a in agents}

    def reset(self, seed=None, options=None):
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        if seed is None and not self._started:
            seed = int(np.random.SeedSequence().entropy % 2**63)
        self._env.reset(seed=None if seed is None else int(seed))
        self._started = True
        self.agents = list(self.possible_agents)
        return self._observations(self._env.obs), self._infos(self.agents)

    def step(self, actions):
        if not self._started or not self.agents:
            raise RuntimeError("step() after the episode ended: call reset()")
        for i, a in enumerate(self.possible_agents):
            act = actions.get(a, None)
            self._actions[0, i] = self._view.action(0 if act is None else act)
        rewards, terminated, truncated = self._env.step(self._actions)
        ended = bool(terminated[0]) or bool(truncated[0])
        rows = self._env.final_obs if ended else self._env.obs
        agents = self.agents
        obs = self._observations(rows)
        rew = {a: float(rewards[0, i]) for i, a in enumerate(self.possible_agents)}
        term = {a: bool(terminated[0]) for a in agents}
        trunc = {a: bool(truncated[0]) and not bool(terminated[0]) for a in agents}
        infos = self._infos(agents)
        if ended:
            self.agents = []
        return obs, rew, term, trunc, infos

    def state(self):
        """The arena's global state, `state_space`-shaped uint8 (a copy)."""
        if not self._started:
            raise RuntimeError("state() before reset()")
        rows = self._env.final_state if not self.agents else self._env.state
        return rows[0].copy()

    def render(self, cell=16):
        """The arena as an `[H, W, 3]` uint8 image (`render_mode="rgb_array"`); None otherwise."""
        if self.render_mode is None:
            return None
        if not self._started:
            raise RuntimeError("render() before reset()")
        return self._env.render(0, cell)

    def close(self):
        pass

    def __reduce__(self):
        # Pickling (SuperSuit's vector constructors copy envs that way) makes a fresh env of
        # the same arguments, as PettingZoo's EzPickle does; the episode in progress is not kept.
        return (_rebuild, (self._args, self.overrides))


def _rebuild(args, overrides):
    return GridarenaParallelEnv(**args, **overrides)


def parallel_env(scenario="pursuit", seed=None, render_mode=None, compat=None, **overrides):
    """The PettingZoo ParallelEnv of one arena of `scenario` (a shipped name or a `.ron` path).

    Keyword overrides change the scenario's fields: `max_steps=100`, `surround=False`,
    `move_order="pettingzoo"`, `**{"observation.radius": 2}`. `compat="pursuit_v5"` presents
    PettingZoo's `pursuit_v5` names, shapes and action numbering (scenario `pursuit_pz`).
    """
    return GridarenaParallelEnv(
        scenario=scenario, seed=seed, render_mode=render_mode, compat=compat, **overrides
    )


def aec_env(scenario="pursuit", seed=None, render_mode=None, compat=None, **overrides):
    """The AEC env of `parallel_env(...)`, through PettingZoo's own `parallel_to_aec`: agents
    act in turn and the arena steps once all of them have chosen."""
    return parallel_to_aec(
        parallel_env(scenario, seed=seed, render_mode=render_mode, compat=compat, **overrides)
    )

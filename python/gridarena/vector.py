"""A Gymnasium vector environment over a batch of arenas: every learning agent of every arena is
one sub-environment.

`GridarenaVectorEnv(scenario, num_arenas)` steps `B` arenas of `N` learning agents as a
`gymnasium.vector.VectorEnv` of `num_envs = B * N` sub-environments, the layout that
shared-parameter learners (CleanRL, PufferLib) train on. Sub-environment `i` is agent `i % N` of
arena `i // N`. `agent_axis=True` keeps the arena and agent axes apart instead: `num_envs = B`,
observations `[B, N, O]`, actions, rewards and dones `[B, N]`.

Arrays returned by `reset` and `step` are views of the engine's buffers (no copy): they are valid
until the next `step` or `reset`, which rewrite them in place. Copy what you keep. They export
through DLPack without a copy (`torch.from_dlpack(obs)`; see docs/python.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._gridarena import VecEnv


class GridarenaVectorEnv(VectorEnv):
    """`num_arenas` arenas of `scenario` (a shipped name or a `.ron` path) as one Gymnasium
    vector env of `num_arenas * N` sub-environments (`agent_axis=False`, the default) or of
    `num_arenas` sub-environments with an agent axis (`agent_axis=True`).

    Episodes end for every agent of an arena at once; the arena restarts within the same step
    (`metadata["autoreset_mode"]` is `AutoresetMode.SAME_STEP`): `infos["final_obs"]` holds the
    observation that ended it, where `infos["_final_obs"]` is True. `infos["action_mask"]`
    (`uint8`, 1 = legal) is there for scenarios with illegal actions. `state()` returns every
    arena's global state `[B, S]` when made with `global_state=True`.
    """

    metadata = {
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": ["rgb_array"],
    }

    def __init__(
        self,
        scenario: str = "pursuit",
        num_arenas: int = 64,
        *,
        seed: int | None = None,
        threads: int | None = None,
        agent_axis: bool = False,
        global_state: bool = False,
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **overrides: Any,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: use None or 'rgb_array'")
        if AutoresetMode(autoreset_mode) != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"autoreset_mode {AutoresetMode(autoreset_mode).value}: the engine restarts an "
                "arena in the step that ends its episode, so only AutoresetMode.SAME_STEP is "
                "offered (the final observation is in infos['final_obs'])"
            )
        if not isinstance(agent_axis, bool):
            raise TypeError(f"agent_axis must be a bool, got {agent_axis!r}")
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % 2**63)
        self._engine = VecEnv(scenario, num_arenas, seed, threads, global_state, **overrides)
        # The first reset without a seed starts from the constructor's.
        self._first_seed = seed
        self.scenario = scenario
        self.render_mode = render_mode
        self.agent_axis = agent_axis
        e = self._engine
        b, n, o, a = e.num_arenas, e.num_agents, e.obs_len, e.num_actions
        self.num_arenas, self.agents_per_arena = b, n
        if agent_axis:
            self.num_envs = b
            self.single_observation_space = spaces.Box(0, 255, (n, o), np.uint8)
            self.single_action_space = spaces.MultiDiscrete(np.full(n, a, dtype=np.int64))
            lead = (b, n)
        else:
            self.num_envs = b * n
            self.single_observation_space = spaces.Box(0, 255, (o,), np.uint8)
            self.single_action_space = spaces.Discrete(a)
            lead = (b * n,)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # The engine's buffers never move (not even on a reseeding reset): make the views once.
        self._obs = e.obs.reshape(*lead, o)
        self._final_obs = e.final_obs.reshape(*lead, o)
        self._rewards = e.rewards.reshape(lead)
        self._terminated, self._truncated = e.terminated, e.truncated
        mask = e.action_mask
        self._mask = None if mask is None else mask.reshape(*lead, a)
        # Per-agent dones: one arena's flag for each of its agents (rewritten every step).
        self._term = np.zeros((b, n), dtype=bool)
        self._trunc = np.zeros((b, n), dtype=bool)
        self._done = np.zeros((b, n), dtype=bool)
        self._shape = lead

    # ---- the vector API ----

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts a new episode in every arena and returns `(obs, infos)`.

        `seed` (an int) makes every arena draw from that seed from now on: the same seed gives
        the same episodes. A list of per-sub-environment seeds is refused: the arenas share one
        seed, each drawing its own streams from it.
        """
        if self._engine is None:
            raise RuntimeError("reset() after close()")
        if options:
            raise ValueError(f"options {sorted(options)}: this env takes no reset options")
        if seed is None:
            seed = self._first_seed
        self._first_seed = None
        if seed is not None:
            if isinstance(seed, (list, tuple, np.ndarray)):
                raise ValueError(
                    "seed: one int for the whole batch (each arena draws its own streams from "
                    "it), not one per sub-environment"
                )
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise ValueError(f"seed {seed!r}: a non-negative int")
            super().reset(seed=int(seed))
            self._engine.reset(seed=int(seed))
        else:
            self._engine.reset()
        return self._obs, self._infos(None)

    def step(self, actions):
        """Steps every arena with `actions` (any integer dtype, `action_space`'s shape) and
        returns `(obs, rewards, terminations, truncations, infos)` as views valid until the next
        step."""
        if self._engine is None:
            raise RuntimeError("step() after close()")
        a = np.asarray(actions)
        want = (self.num_arenas, self.agents_per_arena)
        if a.shape != self._shape and a.shape != want:
            raise ValueError(f"actions of shape {a.shape}; this env needs {self._shape}")
        self._engine.step(a.reshape(want))
        np.copyto(self._term, self._terminated.view(bool)[:, None])
        np.copyto(self._trunc, self._truncated.view(bool)[:, None])
        np.logical_or(self._term, self._trunc, out=self._done)
        return (
            self._obs,
            self._rewards,
            self._term.reshape(self._shape),
            self._trunc.reshape(self._shape),
            self._infos(self._done),
        )

    def _infos(self, done):
        infos: dict[str, Any] = {}
        if done is not None and (self._terminated.any() or self._truncated.any()):
            infos["final_obs"] = self._final_obs
            infos["_final_obs"] = done.reshape(self._shape)
        if self._mask is not None:
            infos["action_mask"] = self._mask
        return infos

    def render(self, arena: int = 0, cell: int = 16):
        """Arena `arena` as an `[H, W, 3]` uint8 image (`render_mode="rgb_array"`); None
        otherwise."""
        if self.render_mode is None:
            return None
        return self._engine.render(arena, cell)

    def close_extras(self, **kwargs):
        self._engine = None

    # ---- beyond the vector API ----

    def state(self):
        """`[B, S]` uint8: every arena's global state (a view), or None unless made with
        `global_state=True`. Sub-environment `i` is in arena `i // agents_per_arena`."""
        return self._engine.state

    def episodes(self):
        """The episodes finished since the last call: dicts of `arena`, `length`,
        `terminated`, `returns` (per agent slot) and `counters` (the engine's own log, cheaper
        than `RecordEpisodeStatistics`)."""
        return self._engine.episodes()

    @property
    def engine(self) -> VecEnv:
        """The underlying `VecEnv` (its views keep the `[B, N, ...]` axes)."""
        return self._engine

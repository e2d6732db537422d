"""How a PettingZoo env presents the engine's agents: names, observation space, observation and
action conversion.

The default presenter shows the engine as it is (`agent_i`, u8 rows). `pursuit_v5` shows
PettingZoo SISL's Pursuit as `pettingzoo.sisl.pursuit_v5` does, so that code written for it runs
unchanged on `pursuit_pz`:

- agents `pursuer_0 .. pursuer_{N-1}`;
- observations `Box(0, max, (R, R, 3), float32)` indexed `[y, x, channel]` (pursuit_v5's
  `observe` swaps the axes of `collect_obs_by_idx`'s `[channel, x, y]`): the engine's window
  `[row, column, channel]` has rows along y and columns along x, so only the dtype changes;
- actions numbered as PettingZoo's `motion_range` `[[-1,0],[1,0],[0,1],[0,-1],[0,0]]`
  (x-1, x+1, y+1, y-1, stay); the engine's Move5 is left, right, up (y-1), down (y+1), stay.

Known difference: `state()` stays the engine's global state, the whole map flattened as u8
`[row, column, channel]` (obstacles, pursuers, evaders), where pursuit_v5's is the same layers
as a `(16, 16, 3)` float32 array indexed `[x, y, channel]`.
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
from gymnasium import spaces


@dataclass(frozen=True)
class Presenter:
    name: str | None
    agents: list
    observation_space: spaces.Space
    observation: Callable
    action: Callable


def _checked(num_actions, mapping=None):
    def action(a):
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"action {a!r}: an int in 0..{num_actions}")
        if not 0 <= a < num_actions:
            raise ValueError(f"action {a}: actions are 0..{num_actions}")
        return a if mapping is None else mapping[a]

    return action


def _engine(n, o, a):
    return Presenter(
        name=None,
        agents=[f"agent_{i}" for i in range(n)],
        observation_space=spaces.Box(0, 255, (o,), np.uint8),
        observation=lambda row: row.copy(),
        action=_checked(a),
    )


# pursuit_v5 action k is the engine's action _PURSUIT_V5_ACTIONS[k].
_PURSUIT_V5_ACTIONS = (0, 1, 3, 2, 4)


def _pursuit_v5(scenario, n, o, a, blocks):
    window = blocks[0] if len(blocks) == 1 else None
    shape = [length for _, length in window["shape"]] if window else []
    if (
        window is None
        or [axis for axis, _ in window["shape"]] != ["row", "column", "channel"]
        or list(window["entries"]) != ["obstacle", "pursuers", "evaders"]
        or shape[0] != shape[1]
        or a != 5
    ):
        raise ValueError(
            f"compat='pursuit_v5' needs a Pursuit scenario with its square window observation "
            f"and 5 moves (pursuit_pz); {scenario!r} observes "
            f"{[(b['name'], b['shape']) for b in blocks]} with {a} actions"
        )
    side = shape[0]
    return Presenter(
        name="pursuit_v5",
        agents=[f"pursuer_{i}" for i in range(n)],
        observation_space=spaces.Box(0, float(window["max"]), (side, side, 3), np.float32),
        observation=lambda row: row.reshape(side, side, 3).astype(np.float32),
        action=_checked(a, _PURSUIT_V5_ACTIONS),
    )


def presenter(compat, scenario, n, o, a, blocks):
    """The presenter named `compat` (None: the engine's own) for a scenario of `n` learners,
    `o` observation bytes in `blocks`, and `a` actions."""
    if compat is None:
        return _engine(n, o, a)
    if compat == "pursuit_v5":
        return _pursuit_v5(scenario, n, o, a, blocks)
    raise ValueError(f"compat {compat!r}: None or 'pursuit_v5'")

"""The global state and action masks as numpy views: off unless asked for, the explained
layout, kept at episode ends, and the mask following the rules."""

import numpy as np
import pytest

import gridarena

ROOM = """Scenario(
    name: "room",
    substrate: WalkToGoal(()),
    map: ["#####", "#*.G#", "#####"],
    roles: [(kind: player, count: 1)],
    max_steps: 6,
)
"""

LEFT, RIGHT, UP, DOWN, STAY = range(5)


def test_the_global_state_is_off_by_default_and_a_view_when_kept():
    env = gridarena.VecEnv("coin_game", 4, seed=1)
    assert env.state is None and env.final_state is None
    env = gridarena.VecEnv("coin_game", 4, seed=1, global_state=True)
    state = env.state
    assert state.shape == (4, env.state_len) and state.dtype == np.uint8
    assert not state.flags.writeable
    blocks = env.global_state_blocks
    assert sum(np.prod([n for _, n in b["shape"]]) for b in blocks) == env.state_len
    # The coin game's default state: both players' observations in slot order.
    assert blocks[0]["name"] == "observations"
    assert np.array_equal(state, env.obs.reshape(4, -1))
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(120):
        _, terminated, truncated = env.step(rng.integers(0, 5, size=(4, 2)))
        assert np.shares_memory(state, env.state)
        assert np.array_equal(env.state, env.obs.reshape(4, -1))
        done = (terminated | truncated).astype(bool)
        ended += done.sum()
        assert np.array_equal(env.final_state[done], env.final_obs.reshape(4, -1)[done])
    assert ended > 0


def test_observation_blocks_tile_the_observation():
    env = gridarena.VecEnv("pursuit", 2, seed=0)
    blocks = env.observation_blocks
    assert blocks[0]["shape"] == [("row", 7), ("column", 7), ("channel", 3)]
    assert blocks[0]["entries"] == ["obstacle", "pursuers", "evaders"]
    end = blocks[-1]["offset"] + int(np.prod([n for _, n in blocks[-1]["shape"]]))
    assert end == env.obs_len


def test_the_action_mask_follows_the_walls(tmp_path):
    path = tmp_path / "room.ron"
    path.write_text(ROOM)
    env = gridarena.VecEnv(str(path), 3, seed=0)
    mask = env.action_mask
    assert mask.shape == (3, 1, 5) and mask.dtype == np.uint8
    assert mask[:, 0].tolist() == [[0, 1, 0, 0, 1]] * 3
    env.step(np.full((3, 1), RIGHT, dtype=np.uint8))
    assert np.shares_memory(mask, env.action_mask)
    assert env.action_mask[:, 0].tolist() == [[1, 1, 0, 0, 1]] * 3
    assert gridarena.VecEnv("pursuit", 2, seed=0).action_mask is None


def test_global_state_must_be_a_bool():
    with pytest.raises(TypeError):
        gridarena.VecEnv("coin_game", 2, global_state="yes")

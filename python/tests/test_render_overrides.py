"""Rendering an arena to an RGB array, and keyword overrides of a scenario's fields."""

import os
import subprocess
import sys

import numpy as np
import pytest

import gridarena

WALL = [52, 56, 64]
FLOOR = [236, 236, 230]


def cell_centre(img, x, y, cell):
    return img[y * cell + cell // 2, x * cell + cell // 2].tolist()


def test_vecenv_renders_the_arena_with_walls_floor_and_agents():
    env = gridarena.VecEnv("pursuit", 2, seed=1)
    img = env.render(1, cell=8)
    assert img.shape == (128, 128, 3) and img.dtype == np.uint8
    # pursuit.ron: obstacle block x 5..=11, y 4..=12.
    assert cell_centre(img, 8, 8, 8) == WALL
    colours = {tuple(cell_centre(img, x, y, 8)) for x in range(16) for y in range(16)}
    assert len(colours - {tuple(WALL), tuple(FLOOR)}) >= 2, "agents in their colours"
    # The image follows the state.
    before = env.render(0, cell=8)
    env.step(np.full((2, env.num_agents), 1))
    assert not np.array_equal(before, env.render(0, cell=8))


def test_render_refuses_a_missing_arena_and_a_bad_cell_size():
    env = gridarena.VecEnv("pursuit_3", 1)
    with pytest.raises(ValueError, match="arenas 0..1"):
        env.render(1)
    with pytest.raises(ValueError, match="cell 0"):
        env.render(0, cell=0)


def test_the_cpu_fallback_draws_what_the_default_backend_draws(tmp_path):
    script = (
        "import gridarena, numpy as np, sys;"
        "e = gridarena.VecEnv('gift_refinements', 1, seed=4);"
        "[e.step(np.full((1, e.num_agents), 2)) for _ in range(3)];"
        "sys.stdout.buffer.write(gridarena.render_backend().encode() + b'\\n');"
        "sys.stdout.buffer.write(e.render(0, 12).tobytes())"
    )

    def run(env):
        # Run away from the source tree, so the installed package is imported.
        done = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, **env},
            capture_output=True,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr.decode()
        backend, pixels = done.stdout.split(b"\n", 1)
        return backend.decode(), np.frombuffer(pixels, np.uint8)

    cpu_backend, cpu = run({"GRIDARENA_RENDER": "cpu"})
    backend, default = run({})
    assert cpu_backend == "cpu"
    if backend == "cpu":
        # A build without the GPU renderer (CI's Python build) or a machine without an
        # adapter: there is no second backend to compare with, so say so in pytest's summary.
        pytest.skip("the default backend is the CPU rasterizer too: nothing to compare")
    assert cpu.shape == default.shape
    differ = (cpu.reshape(-1, 3) != default.reshape(-1, 3)).any(axis=1).mean()
    assert differ < 0.005, f"{differ:.2%} of pixels differ between cpu and {backend}"


def test_parallel_env_renders_in_rgb_array_mode_only():
    env = gridarena.parallel_env("pursuit_3", render_mode="rgb_array")
    assert "rgb_array" in env.metadata["render_modes"]
    env.reset(seed=2)
    img = env.render()
    assert img.shape == (7 * 16, 7 * 16, 3)
    env.step({a: 4 for a in env.agents})
    assert env.render().shape == img.shape
    quiet = gridarena.parallel_env("pursuit_3")
    quiet.reset(seed=2)
    assert quiet.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        gridarena.parallel_env("pursuit_3", render_mode="human")


def test_overrides_change_the_scenario():
    env = gridarena.VecEnv("pursuit", 4, seed=0, max_steps=10)
    for _ in range(9):
        _, _, truncated = env.step(np.zeros((4, env.num_agents), np.int64))
        assert not truncated.any()
    _, _, truncated = env.step(np.zeros((4, env.num_agents), np.int64))
    assert truncated.all(), "max_steps=10 truncates at the 10th step"
    assert gridarena.VecEnv("pursuit", 1, **{"observation.radius": 2}).obs_len == 5 * 5 * 3
    assert gridarena.VecEnv("pursuit", 1, radius=1).obs_len == 3 * 3 * 3
    pz = gridarena.parallel_env("pursuit", surround=False, move_order="pettingzoo", n_catch=np.int64(3))
    obs, _ = pz.reset(seed=1)
    assert len(obs) == 8


def test_bad_overrides_are_refused_with_the_field_and_what_is_allowed():
    with pytest.raises(ValueError, match="speed.*max_steps"):
        gridarena.VecEnv("pursuit", 1, speed=2)
    with pytest.raises(ValueError, match="max_steps"):
        gridarena.VecEnv("pursuit", 1, max_steps="long")
    with pytest.raises(ValueError, match="move_order"):
        gridarena.parallel_env("pursuit", move_order="sideways")
    with pytest.raises(ValueError, match="radius"):
        gridarena.VecEnv("pursuit", 1, radius=9)
    with pytest.raises(ValueError, match="finite"):
        gridarena.VecEnv("pursuit", 1, tag_reward=float("nan"))

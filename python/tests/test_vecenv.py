"""VecEnv: the engine's buffers as live, read-only numpy views; bad input refused."""

import pathlib

import numpy as np
import pytest

import gridarena


def test_views_are_the_engines_buffers_and_follow_each_step():
    env = gridarena.VecEnv("pursuit", 16, seed=3, threads=1)
    obs = env.obs
    assert obs.shape == (16, env.num_agents, env.obs_len) == (16, 8, 147)
    assert obs.dtype == np.uint8 and not obs.flags.writeable and not obs.flags.owndata
    before = obs.copy()
    rewards, terminated, truncated = env.step(np.zeros((16, 8), dtype=np.int64))
    assert rewards.shape == (16, 8) and terminated.shape == truncated.shape == (16,)
    # The same memory, now showing the new step.
    assert np.shares_memory(obs, env.obs)
    assert (obs != before).any()


def test_same_seed_and_actions_give_the_same_observations():
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 5, size=(8, 8)) for _ in range(50)]
    runs = []
    for threads in (1, 2):
        env = gridarena.VecEnv("pursuit", 8, seed=11, threads=threads)
        seen = [env.obs.copy()]
        for a in actions:
            env.step(a)
            seen.append(env.obs.copy())
        runs.append(np.stack(seen))
    assert np.array_equal(runs[0], runs[1])


def test_bad_input_is_refused_with_a_message():
    env = gridarena.VecEnv("coin_game", 4, seed=0)
    with pytest.raises(ValueError, match="actions are 0..5"):
        env.step(np.full((4, 2), 5))
    with pytest.raises(ValueError, match=r"needs \[4, 2\]"):
        env.step(np.zeros((4, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="not a shipped scenario"):
        gridarena.VecEnv("no_such_scenario", 4)
    with pytest.raises(ValueError, match="threads"):
        gridarena.VecEnv("pursuit", 4, threads=0)



@pytest.mark.parametrize(
    "dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32, np.uint64]
)
def test_every_integer_dtype_steps_alike(dtype):
    rng = np.random.default_rng(4)
    actions = [rng.integers(0, 5, size=(6, 8)) for _ in range(30)]
    seen = []
    for as_dtype in (np.int64, dtype):
        env = gridarena.VecEnv("pursuit", 6, seed=5, threads=1)
        for a in actions:
            env.step(a.astype(as_dtype))
        seen.append(env.obs.copy())
    assert np.array_equal(seen[0], seen[1])


def test_actions_of_another_kind_are_refused_by_name():
    env = gridarena.VecEnv("coin_game", 4, seed=0)
    with pytest.raises(TypeError, match="dtype float32"):
        env.step(np.zeros((4, 2), dtype=np.float32))
    with pytest.raises(TypeError, match="got a list"):
        env.step([[0, 0]] * 4)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        env.step(np.zeros(4, dtype=np.int32))
    with pytest.raises(ValueError, match="action -1 for arena 0, agent 0 "):
        env.step(np.full((4, 2), -1, dtype=np.int8))
    bad = np.zeros((4, 2), dtype=np.uint16)
    bad[2, 1] = 300
    with pytest.raises(ValueError, match=r"action 300 for arena 2, agent 1 \(entry 5 "):
        env.step(bad)
    # A policy's uint8 actions go straight in.
    env.step(np.ones((4, 2), dtype=np.uint8))

def test_no_allocation_growth_over_ten_thousand_steps():
    import tracemalloc

    env = gridarena.VecEnv("pursuit", 64, seed=2, threads=1)
    rng = np.random.default_rng(1)
    actions = [rng.integers(0, 5, size=(64, 8)) for _ in range(16)]
    for i in range(200):  # warm up: first episodes, lazily grown buffers
        env.step(actions[i % 16])
    def resident_bytes():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    rss = resident_bytes()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    for i in range(10_000):
        env.step(actions[i % 16])
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Python-side memory after 10,000 steps is what it was (each step's views are freed), and
    # the process (the engine's side included) has not grown.
    assert current - base < 64 * 1024, f"Python memory grew {current - base} bytes"
    grown = resident_bytes() - rss
    assert grown < 4 << 20, f"resident memory grew {grown} bytes"


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_vecenv_observations_equal_the_engines(scenario):
    from gridarena._gridarena import engine_observations

    env = gridarena.VecEnv(scenario, 6, seed=21, threads=2)
    rng = np.random.default_rng(5)
    actions = rng.integers(0, env.num_actions, size=(40, 6, env.num_agents))
    seen = [env.obs.copy()]
    for a in actions:
        env.step(a)
        seen.append(env.obs.copy())
    want = engine_observations(scenario, 6, 21, actions)
    assert np.array_equal(np.stack(seen), want)


def test_every_asset_is_shipped():
    assets = pathlib.Path(__file__).parents[2] / "assets" / "scenarios"
    on_disk = sorted(p.stem for p in assets.glob("*.ron"))
    assert sorted(gridarena.scenarios()) == on_disk

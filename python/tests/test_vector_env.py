"""The Gymnasium vector env: the vector API on every shipped scenario, Gymnasium's own checks
that apply to vector envs, same-step autoreset with final observations, seeding, the agent-axis
flag, actions of any integer dtype, and Gymnasium's vector wrappers."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.passive_env_checker import check_obs, check_space
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import gridarena
from gridarena import GridarenaVectorEnv


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_every_scenario_steps_through_the_vector_api(scenario):
    env = GridarenaVectorEnv(scenario, 3, seed=0, max_steps=8)
    assert isinstance(env, VectorEnv)
    n = env.agents_per_arena
    assert env.num_envs == 3 * n
    check_space(env.single_observation_space, "observation", lambda s: None)
    check_space(env.single_action_space, "action", lambda s: None)
    assert env.observation_space.shape == (3 * n, *env.single_observation_space.shape)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, infos = env.reset(seed=5)
    check_obs(obs, env.observation_space, "reset")
    assert isinstance(infos, dict)
    env.action_space.seed(1)
    ended = 0
    for t in range(17):
        obs, rew, term, trunc, infos = env.step(env.action_space.sample())
        check_obs(obs, env.observation_space, "step")
        assert rew.shape == term.shape == trunc.shape == (3 * n,)
        assert rew.dtype == np.float32 and term.dtype == trunc.dtype == np.bool_
        done = term | trunc
        if done.any():
            ended += 1
            assert np.array_equal(infos["_final_obs"], done)
            check_obs(infos["final_obs"], env.observation_space, "step")
        else:
            assert "final_obs" not in infos
    # max_steps=8: every arena ends by step 8 and again by step 16.
    assert ended >= 2, scenario
    env.close()


def test_same_seed_same_episodes_and_reset_seed_repeats_them():
    def rollout(env, seed):
        first, _ = env.reset(seed=seed)
        out = [first.copy()]
        rng = np.random.default_rng(0)
        for _ in range(60):
            acts = rng.integers(0, env.single_action_space.n, env.num_envs)
            obs, rew, term, trunc, infos = env.step(acts)
            out.append((obs.copy(), rew.copy(), term.copy(), trunc.copy()))
        return out

    a = GridarenaVectorEnv("pursuit", 4, max_steps=25)
    ra = rollout(a, 11)
    # A stepped env reset with the same seed repeats its episodes; another env does too.
    assert data_equivalence(ra, rollout(a, 11))
    b = GridarenaVectorEnv("pursuit", 4, max_steps=25)
    assert data_equivalence(ra, rollout(b, 11))
    assert not data_equivalence(ra, rollout(b, 12))
    # The constructor's seed is the first reset's.
    c = GridarenaVectorEnv("pursuit", 4, seed=11, max_steps=25)
    first, _ = c.reset()
    assert np.array_equal(first, ra[0])


def test_final_obs_is_the_observation_that_ended_the_episode():
    env = GridarenaVectorEnv("coin_game", 2, seed=3, max_steps=4)
    engine = gridarena.VecEnv("coin_game", 2, 3, max_steps=4)
    env.reset(seed=3)
    engine.reset(seed=3)
    rng = np.random.default_rng(1)
    for t in range(4):
        acts = rng.integers(0, 5, (2, 2))
        obs, _, term, trunc, infos = env.step(acts.reshape(-1))
        engine.step(acts)
    assert trunc.all() and not term.any()
    assert infos["_final_obs"].all()
    assert np.array_equal(infos["final_obs"], engine.final_obs.reshape(4, -1))
    assert np.array_equal(obs, engine.obs.reshape(4, -1))
    # The episode restarted in the same step: the new first observation is not the final one.
    assert not np.array_equal(obs, infos["final_obs"])


def test_agent_axis_keeps_arenas_and_agents_apart():
    flat = GridarenaVectorEnv("lbf_8x8_2p_2f", 5, seed=2)
    axis = GridarenaVectorEnv("lbf_8x8_2p_2f", 5, seed=2, agent_axis=True)
    assert axis.num_envs == 5 and flat.num_envs == 10
    assert axis.single_observation_space.shape == (2, flat.single_observation_space.shape[0])
    assert list(axis.single_action_space.nvec) == [6, 6]
    o1, i1 = flat.reset(seed=4)
    o2, i2 = axis.reset(seed=4)
    assert np.array_equal(o1, o2.reshape(10, -1))
    assert i2["action_mask"].shape == (5, 2, 6) and i1["action_mask"].shape == (10, 6)
    acts = np.random.default_rng(0).integers(0, 6, (5, 2))
    r1 = flat.step(acts.reshape(-1))
    r2 = axis.step(acts)
    for x, y in zip(r1[:4], r2[:4]):
        assert np.array_equal(x, y.reshape(x.shape))
    assert r2[1].shape == (5, 2)


def test_actions_of_any_integer_dtype_and_refusals_that_name_the_agent():
    env = GridarenaVectorEnv("coin_game", 3, seed=0)
    env.reset(seed=0)
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        env.step(np.ones(6, dtype=dt))
    env.step([0, 1, 2, 3, 4, 0])  # a list of ints becomes an int64 array
    bad = np.zeros(6, dtype=np.int32)
    bad[3] = 9
    with pytest.raises(ValueError, match=r"action 9 for arena 1, agent 1 \(entry 3 "):
        env.step(bad)
    with pytest.raises(TypeError, match="float64"):
        env.step(np.full(6, np.nan))
    with pytest.raises(TypeError, match="float32"):
        env.step(np.zeros(6, dtype=np.float32))
    with pytest.raises(TypeError):
        env.step(np.array([None] * 6))
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        env.step(np.zeros(5, dtype=np.int64))


def test_bad_arguments_are_refused_with_a_message():
    with pytest.raises(ValueError, match="only AutoresetMode.SAME_STEP"):
        GridarenaVectorEnv("coin_game", 2, autoreset_mode=AutoresetMode.NEXT_STEP)
    with pytest.raises(ValueError, match="render_mode"):
        GridarenaVectorEnv("coin_game", 2, render_mode="human")
    env = GridarenaVectorEnv("coin_game", 2)
    with pytest.raises(ValueError, match="one int for the whole batch"):
        env.reset(seed=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="non-negative int"):
        env.reset(seed=-3)
    with pytest.raises(ValueError, match="no reset options"):
        env.reset(options={"x": 1})
    with pytest.raises(ValueError):
        GridarenaVectorEnv("coin_game", 0)
    env.close()
    with pytest.raises(RuntimeError, match="after close"):
        env.step(np.zeros(4, dtype=np.int64))


def test_record_episode_statistics_agrees_with_the_engines_episode_log():
    env = RecordEpisodeStatistics(GridarenaVectorEnv("coin_game", 4, seed=1, max_steps=10))
    env.reset(seed=1)
    inner = env.env
    inner.episodes()
    rng = np.random.default_rng(2)
    wrapped = []
    for _ in range(25):
        *_, infos = env.step(rng.integers(0, 5, 8))
        if "episode" in infos:
            wrapped.extend(infos["episode"]["r"][infos["_episode"]].tolist())
    logged = [r for e in inner.episodes() for r in e["returns"][:2]]
    assert len(wrapped) == len(logged) == 2 * 4 * 2
    np.testing.assert_allclose(sorted(wrapped), sorted(logged), rtol=1e-6)


def test_views_export_through_dlpack_without_a_copy():
    env = GridarenaVectorEnv("pursuit", 2, seed=0)
    obs, _ = env.reset(seed=0)
    alias = np.from_dlpack(obs)
    assert alias.ctypes.data == obs.ctypes.data
    before = alias.copy()
    obs2, rew, *_ = env.step(np.zeros(env.num_envs, dtype=np.int64))
    assert obs2 is obs
    assert np.array_equal(alias, env.engine.obs.reshape(alias.shape))
    assert not np.array_equal(alias, before)
    assert np.from_dlpack(rew).ctypes.data == rew.ctypes.data

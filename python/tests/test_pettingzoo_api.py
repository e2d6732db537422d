"""PettingZoo's own API and seed tests on every shipped scenario, parallel and AEC; action masks
and the global state; the `pursuit_v5` drop-in against PettingZoo's own pursuit_v5; SuperSuit's
common wrappers."""

import numpy as np
import pytest
import supersuit
from pettingzoo.sisl import pursuit_v5
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

import gridarena


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_parallel_api(scenario):
    parallel_api_test(gridarena.parallel_env(scenario=scenario, seed=1), num_cycles=200)


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_parallel_seed(scenario):
    parallel_seed_test(lambda: gridarena.parallel_env(scenario=scenario))


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_aec_api(scenario):
    api_test(gridarena.aec_env(scenario=scenario, seed=1, max_steps=40), num_cycles=100)


def test_action_masks_are_in_infos_and_state_has_its_space():
    env = gridarena.parallel_env("lbf_8x8_2p_2f", seed=3)
    obs, infos = env.reset(seed=3)
    for agent in env.agents:
        mask = infos[agent]["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (env.action_space(agent).n,)
        assert mask[0] == 1  # noop is always legal
    rng = np.random.default_rng(0)
    for _ in range(50):
        acts = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents}
        obs, rew, term, trunc, infos = env.step(acts)
        if not env.agents:
            obs, infos = env.reset()
        state = env.state()
        assert env.state_space.contains(state)
    assert "action_mask" not in gridarena.parallel_env("pursuit").reset(seed=0)[1]["agent_0"]


def test_compat_refuses_a_scenario_it_does_not_fit():
    with pytest.raises(ValueError, match="needs a Pursuit scenario"):
        gridarena.parallel_env("coin_game", compat="pursuit_v5")
    with pytest.raises(ValueError, match="compat 'pong'"):
        gridarena.parallel_env("pursuit_pz", compat="pong")


# ---- the pursuit_v5 drop-in, beside PettingZoo's own pursuit_v5 ----



def test_pursuit_v5_compat_presents_pursuit_v5s_names_spaces_and_dtypes():
    ours = gridarena.parallel_env("pursuit_pz", compat="pursuit_v5")
    theirs = pursuit_v5.parallel_env()
    assert ours.possible_agents == theirs.possible_agents
    assert ours.metadata["name"] == theirs.metadata["name"] == "pursuit_v5"
    for agent in theirs.possible_agents:
        assert ours.observation_space(agent) == theirs.observation_space(agent)
        assert ours.action_space(agent) == theirs.action_space(agent)
    o1, _ = ours.reset(seed=0)
    o2, _ = theirs.reset(seed=0)
    for agent in theirs.possible_agents:
        assert o1[agent].shape == o2[agent].shape and o1[agent].dtype == o2[agent].dtype


def pursuit_v5_training_snippet(env, episodes=2, seed=0):
    """Code written for pursuit_v5, unchanged: a linear softmax policy shared by the pursuers,
    trained by REINFORCE on whole episodes; returns the episodes' total rewards."""
    rng = np.random.default_rng(seed)
    agent = env.possible_agents[0]
    obs_dim = int(np.prod(env.observation_space(agent).shape))
    n_actions = env.action_space(agent).n
    w = np.zeros((obs_dim, n_actions))
    totals = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        grads, rewards = [], []
        while env.agents:
            actions, step_grads = {}, []
            for a in env.agents:
                x = obs[a].reshape(-1) / 30.0
                logits = x @ w
                p = np.exp(logits - logits.max())
                p /= p.sum()
                act = int(rng.choice(n_actions, p=p))
                actions[a] = act
                step_grads.append(np.outer(x, np.eye(n_actions)[act] - p))
            obs, rew, term, trunc, _ = env.step(actions)
            grads.append(sum(step_grads))
            rewards.append(sum(rew.values()))
        returns = np.cumsum(rewards[::-1])[::-1]
        for g, ret in zip(grads, returns):
            w += 1e-4 * g * (ret - returns.mean())
        totals.append(float(sum(rewards)))
    return totals


def test_a_pursuit_v5_training_snippet_runs_unchanged_on_both():
    theirs = pursuit_v5_training_snippet(pursuit_v5.parallel_env(max_cycles=60))
    ours = pursuit_v5_training_snippet(
        gridarena.parallel_env("pursuit_pz", compat="pursuit_v5", max_steps=60)
    )
    assert len(ours) == len(theirs) == 2
    # Random-ish pursuers on the same rules: per-episode totals in the same range.
    assert all(-60 < t < 200 for t in ours + theirs), (ours, theirs)


@pytest.mark.parametrize("make", ["ours", "theirs"])
@pytest.mark.parametrize("action, ahead", [(0, (3, 2)), (1, (3, 4)), (2, (4, 3)), (3, (2, 3))])
def test_pursuit_v5_compat_moves_and_observes_along_pursuit_v5s_axes(make, action, ahead):
    # pursuit_v5's actions move by (x, y) += (-1, 0), (1, 0), (0, 1), (0, -1), and its window
    # is indexed [y, x] around the pursuer at [3, 3] (its observe() swaps the axes of
    # collect_obs_by_idx's [channel, x, y]). A pursuer that repeats one move for 20
    # steps stands at the map's edge or against the building: the window cell one move ahead
    # is solid. Either a swapped axis or a wrong action number breaks this for ours.
    if make == "ours":
        env = gridarena.parallel_env("pursuit_pz", compat="pursuit_v5", max_steps=30)
    else:
        env = pursuit_v5.parallel_env(max_cycles=30)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        for _ in range(20):
            obs, *_ = env.step({a: action for a in env.agents})
        assert all(o[ahead][0] == 1.0 for o in obs.values()), seed


# ---- SuperSuit ----



def test_supersuits_common_wrappers_work():
    env = gridarena.parallel_env("pursuit_pz", compat="pursuit_v5", max_steps=20)
    env = supersuit.dtype_v0(env, np.float32)
    env = supersuit.normalize_obs_v0(env, env_min=0, env_max=1)
    env = supersuit.frame_stack_v1(env, 3)
    obs, _ = env.reset(seed=0)
    assert obs["pursuer_0"].shape == (7, 7, 9) and obs["pursuer_0"].dtype == np.float32
    assert 0.0 <= obs["pursuer_0"].min() and obs["pursuer_0"].max() <= 1.0
    flat = supersuit.flatten_v0(gridarena.parallel_env("coin_game", max_steps=20))
    assert flat.observation_space("agent_0").shape == (flat.reset(seed=0)[0]["agent_0"].size,)
    vec = supersuit.pettingzoo_env_to_vec_env_v1(gridarena.parallel_env("coin_game", max_steps=20))
    vec = supersuit.concat_vec_envs_v1(vec, 3, num_cpus=0, base_class="gymnasium")
    obs, _ = vec.reset(seed=0)
    assert obs.shape[0] == 3 * 2
    for _ in range(25):
        obs, rew, term, trunc, infos = vec.step(np.zeros(6, dtype=np.int64))
    assert obs.shape[0] == 6 and rew.shape == (6,)

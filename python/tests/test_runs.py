"""A run trained from Python loads and acts from Python, and evaluates like `eval --json`."""

from pathlib import Path

import numpy as np
import pytest

import gridarena


def test_train_load_act_and_eval(tmp_path):
    # Keys as `--set` takes them: bare names, or dotted paths through a dict.
    run = gridarena.train(
        out=str(tmp_path / "run"),
        device="cpu",
        arenas=4,
        rollout=8,
        layers=1,
        total_steps=4 * 8 * 2,
        **{"pqn.minibatches": 2, "network.hidden": 16},
    )
    config = (Path(run) / "config.ron").read_text()
    assert "network: (" in config and "hidden: 16," in config and "minibatches: 2," in config
    policy = gridarena.load_policy(run)
    assert policy.update == 2
    env = gridarena.VecEnv("pursuit", 3, seed=5)
    actions = policy(env.obs)
    assert actions.shape == (3, 8) and actions.dtype == np.uint8 and (actions < 5).all()
    q = policy.q_values(env.obs)
    assert q.shape == (3 * 8, 5)
    # The greedy action is the argmax of the values.
    assert (q.argmax(axis=1).reshape(3, 8) == actions).all()
    env.step(actions.astype(np.int64))
    report = gridarena.eval(run, episodes=2)
    assert report["episodes"] == 2 and report["update"] == 2
    assert {"policy", "random"} <= set(report)


def test_ippo_trains_loads_and_acts_on_its_policy_mode(tmp_path):
    run = gridarena.train(
        out=str(tmp_path / "ippo"),
        algo="ippo",
        device="cpu",
        arenas=4,
        rollout=8,
        layers=1,
        hidden=16,
        total_steps=4 * 8 * 2,
        **{"ppo.minibatches": 2, "ppo.clip": 0.1},
    )
    config = (Path(run) / "config.ron").read_text()
    assert "algo: ippo," in config and "clip: 0.1," in config
    policy = gridarena.load_policy(run)
    assert policy.update == 2
    env = gridarena.VecEnv("pursuit", 3, seed=5)
    logits = policy.q_values(env.obs)
    assert logits.shape == (3 * 8, 5) and np.isfinite(logits).all()
    # The greedy action is the policy's mode.
    assert (logits.argmax(axis=1).reshape(3, 8) == policy(env.obs)).all()


@pytest.mark.parametrize("algo", ["vdn", "qmix"])
def test_team_value_learners_train_and_load(tmp_path, algo):
    run = gridarena.train(
        out=str(tmp_path / algo),
        algo=algo,
        device="cpu",
        arenas=4,
        rollout=8,
        layers=1,
        hidden=16,
        total_steps=4 * 8 * 3,
        **{"iql.batch_size": 8, "iql.min_replay": 16, "qmix.embed": 4},
    )
    config = (Path(run) / "config.ron").read_text()
    assert f"algo: {algo}," in config and "embed: 4," in config
    policy = gridarena.load_policy(run)
    assert policy.update == 3
    env = gridarena.VecEnv("pursuit", 2, seed=1)
    q = policy.q_values(env.obs)
    assert q.shape == (2 * 8, 5) and np.isfinite(q).all()
    assert (q.argmax(axis=1).reshape(2, 8) == policy(env.obs)).all()


def test_bad_overrides_and_observations_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown field"):
        gridarena.train(out=str(tmp_path / "x"), no_such_field=1)
    with pytest.raises(ValueError, match="use a str, bool, int or float"):
        gridarena.train(out=str(tmp_path / "y"), lr=[1])
    # A bare name several sections hold goes to the section the run's algo reads (`algo` is
    # set first, wherever it stands), or is refused naming the candidates.
    with pytest.raises(ValueError, match="`pqn.epochs`, `pr2.epochs`, `online_dqn.epochs` or `ppo.epochs`"):
        gridarena.train(out=str(tmp_path / "z"), epochs=2, algo="iql")
    with pytest.raises(ValueError, match="it is `network.hidden`"):
        gridarena.train(out=str(tmp_path / "w"), **{"learn.hidden": 16})


def test_a_recurrent_policy_carries_its_hidden_state_until_told_an_episode_starts(tmp_path):
    scenario = str(Path(__file__).resolve().parents[2] / "assets/scenarios/cue_memory.ron")
    run = gridarena.train(
        out=str(tmp_path / "gru"),
        scenario=scenario,
        device="cpu",
        network="gru",
        layers=1,
        hidden=16,
        arenas=4,
        rollout=8,
        minibatches=2,
        total_steps=4 * 8 * 2,
    )
    policy = gridarena.load_policy(run)
    assert policy.recurrent
    env = gridarena.VecEnv("cue_memory", 3, seed=1)
    fresh = policy.q_values(env.obs)
    actions = policy(env.obs)
    # The values of the observations just acted on are those the action was chosen by.
    np.testing.assert_array_equal(policy.q_values(env.obs), fresh)
    env.step(actions.astype(np.int64))
    carried = policy.q_values(env.obs)
    policy.episodes_start(np.ones(3, dtype=np.uint8))  # as `terminated | truncated` come
    restarted = policy.q_values(env.obs)
    # The hidden state carried from the first step changes the values; a restart forgets it.
    assert np.abs(carried - restarted).max() > 1e-4
    memoryless = gridarena.load_policy(
        gridarena.train(out=str(tmp_path / "mlp"), device="cpu", arenas=4, rollout=8,
                        minibatches=2, hidden=16, layers=1, total_steps=4 * 8 * 2))
    assert not memoryless.recurrent


@pytest.mark.parametrize("algo,key,saved", [
    ("advantage_alignment", "alignment.beta", "beta: 2.0"),
    ("loqa", "loqa.weight", "weight: 2.0"),
])
def test_opponent_shaping_trains_and_eval_reports_the_policy_by_state(tmp_path, algo, key, saved):
    # The repeated prisoner's dilemma: eval lists each player's probabilities in each
    # memory-one state (start, then each previous joint action).
    scenario = str(Path(__file__).resolve().parents[2] / "assets/scenarios/prisoners_dilemma.ron")
    run = gridarena.train(
        out=str(tmp_path / algo),
        scenario=scenario,
        algo=algo,
        device="cpu",
        arenas=4,
        rollout=16,
        layers=1,
        hidden=8,
        total_steps=4 * 16 * 2,
        **{key: 2.0, "network.shared": True},
    )
    config = (Path(run) / "config.ron").read_text()
    assert f"algo: {algo}," in config and saved in config
    report = gridarena.eval(run, episodes=2)
    table = report["states"]
    assert table["states"] == ["start", "cooperate/cooperate", "cooperate/defect",
                               "defect/cooperate", "defect/defect"]
    assert table["actions"] == ["cooperate", "defect"] and table["stochastic"] is True
    probs = np.array(table["probs"])
    assert probs.shape == (2, 5, 2)
    assert np.allclose(probs.sum(axis=2), 1.0) and (probs > 0).all()
    # A Pursuit run has no such table.
    assert "states" not in gridarena.eval(
        gridarena.train(out=str(tmp_path / "pqn"), device="cpu", arenas=2, rollout=4, layers=1,
                        hidden=8, total_steps=2 * 4, **{"pqn.minibatches": 2}),
        episodes=1,
    )

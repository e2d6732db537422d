"""A run trained from Python loads and acts from Python, and evaluates like `eval --json`."""

import numpy as np
import pytest

import gridarena


def test_train_load_act_and_eval(tmp_path):
    run = gridarena.train(
        out=str(tmp_path / "run"),
        device="cpu",
        arenas=4,
        rollout=8,
        minibatches=2,
        hidden=16,
        layers=1,
        total_steps=4 * 8 * 2,
    )
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


def test_bad_overrides_and_observations_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown field"):
        gridarena.train(out=str(tmp_path / "x"), no_such_field=1)
    with pytest.raises(ValueError, match="use a str, bool, int or float"):
        gridarena.train(out=str(tmp_path / "y"), lr=[1])

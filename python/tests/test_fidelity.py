"""gridarena's Pursuit against PettingZoo's own pursuit_v5 under uniformly random actions.

PettingZoo's side is a committed sample (`tests/data/pettingzoo_pursuit_*.json`, written by
`scripts/pettingzoo_pursuit_sample.py`, which runs PettingZoo itself: ~3 s per episode). The
distributions of catches per 500-step episode and of per-pursuer return are compared with
two-sample tests (Welch's z on the means, Kolmogorov-Smirnov on the distributions), with and
without surround.

gridarena's side is `pursuit_pz.ron`, PettingZoo's move order. The pursuers' returns within
one episode are not independent (with the shared reward they are equal), so the unit of
comparison is the episode: its mean per-pursuer return.
"""

import json
import pathlib

import numpy as np
import pytest

import gridarena

DATA = pathlib.Path(__file__).parent / "data"
ASSETS = pathlib.Path(__file__).parents[2] / "assets" / "scenarios"


def gridarena_sample(asset, surround, episodes, tmp_path):
    text = (ASSETS / f"{asset}.ron").read_text()
    if not surround:
        text = text.replace("surround: true", "surround: false")
    path = tmp_path / f"{asset}_surround_{surround}.ron"
    path.write_text(text)
    env = gridarena.VecEnv(str(path), 64, seed=7)
    rng = np.random.default_rng(3)
    done = []
    while len(done) < episodes:
        env.step(rng.integers(0, env.num_actions, size=(64, env.num_agents)))
        done.extend(env.episodes())
    done = done[:episodes]
    catches = np.array([e["counters"]["catches"] for e in done], dtype=float)
    returns = np.array([e["returns"][: env.num_agents] for e in done], dtype=float)
    return catches, returns.mean(axis=1)


def welch_z(a, b):
    """The difference of the means in standard errors."""
    se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return abs(a.mean() - b.mean()) / se if se > 0 else 0.0


def ks_distance(a, b):
    xs = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), xs, side="right") / len(a)
    fb = np.searchsorted(np.sort(b), xs, side="right") / len(b)
    return np.abs(fa - fb).max()


@pytest.mark.parametrize("surround", [True, False])
def test_random_pursuit_matches_pettingzoo(surround, tmp_path):
    name = "surround" if surround else "no_surround"
    sample = DATA / f"pettingzoo_pursuit_{name}.json"
    if not sample.exists():
        pytest.fail(f"{sample} is missing: run scripts/pettingzoo_pursuit_sample.py")
    pz = json.loads(sample.read_text())
    pz_catches = np.array(pz["catches"], dtype=float)
    pz_returns = np.array(pz["returns"], dtype=float).mean(axis=1)
    ours_catches, ours_returns = gridarena_sample("pursuit_pz", surround, 4000, tmp_path)
    report = (
        f"catches: gridarena {ours_catches.mean():.3f} (sd {ours_catches.std():.3f}), "
        f"PettingZoo {pz_catches.mean():.3f} (sd {pz_catches.std():.3f}); "
        f"per-pursuer return: gridarena {ours_returns.mean():.2f}, "
        f"PettingZoo {pz_returns.mean():.2f}"
    )
    print(report)
    # Means within 3 standard errors, distributions within the KS 99% critical distance.
    n, m = len(ours_catches), len(pz_catches)
    se = np.sqrt(ours_catches.var(ddof=1) / n + pz_catches.var(ddof=1) / m)
    if not surround:
        # Enough episodes that a real 15% difference in mean catches would fail the test.
        assert 3 * se < 0.15 * pz_catches.mean(), f"too few episodes: 3 SE = {3 * se:.3f}"
    ks_crit = 1.63 * np.sqrt((n + m) / (n * m))
    assert welch_z(ours_catches, pz_catches) < 3.0, report
    assert ks_distance(ours_catches, pz_catches) < ks_crit, report
    assert welch_z(ours_returns, pz_returns) < 3.0, report
    assert ks_distance(ours_returns, pz_returns) < ks_crit, report


def test_the_fidelity_test_tells_simultaneous_pursuit_apart(tmp_path):
    """The power check: `pursuit.ron` (everyone moves at once) pays a per-pursuer return that the
    same comparison rejects, with surround. Its catches still agree."""
    pz = json.loads((DATA / "pettingzoo_pursuit_surround.json").read_text())
    pz_returns = np.array(pz["returns"], dtype=float).mean(axis=1)
    _, ours_returns = gridarena_sample("pursuit", True, 4000, tmp_path)
    n, m = len(ours_returns), len(pz_returns)
    ks_crit = 1.63 * np.sqrt((n + m) / (n * m))
    assert ks_distance(ours_returns, pz_returns) > ks_crit
    assert welch_z(ours_returns, pz_returns) > 3.0

"""Populations from Python: cross-play, scenario sets and Schelling diagrams give the dicts of
`gridarena eval --json`, with the prisoner's dilemma's exact payoffs (16 steps: R 3, S 0, T 5,
P 1) as the oracle, and bad input raises ValueError, never crashes."""

from pathlib import Path

import pytest

import gridarena

ROOT = Path(__file__).resolve().parents[2]
PD = ROOT / "assets" / "scenarios" / "prisoners_dilemma.ron"


def manifest(tmp_path, *members):
    p = tmp_path / "pd.ron"
    listed = ", ".join(f'Scripted("{m}")' for m in members)
    p.write_text(f'Population(name: "pd", members: [{listed}])')
    return str(p)


def test_crossplay_is_the_payoff_table(tmp_path):
    pop = manifest(tmp_path, "always cooperate", "always defect")
    m = gridarena.crossplay(pop, pop, scenario=str(PD), episodes=4)
    assert m["rows"] == ["always cooperate", "always defect"]
    assert m["mean"] == [[48.0, 40.0], [40.0, 16.0]]
    assert m["row_mean"] == [[48.0, 0.0], [80.0, 16.0]]


def test_scenario_set_scores_members_by_scenario(tmp_path):
    pop = manifest(tmp_path, "always defect", "always cooperate")
    s = tmp_path / "set.ron"
    s.write_text(
        f"""ScenarioSet(name: "pd", scenarios: [(
            name: "beside_cooperators", scenario: "{PD}", focal_slots: [0],
            background: Members(members: [Scripted("always cooperate")]),
            zero: Scripted("always cooperate"), one: Scripted("always defect"))])"""
    )
    r = gridarena.evaluate_scenario_set(str(s), pop, episodes=10)
    assert r["scenarios"][0]["per_member"] == [80.0, 48.0]
    assert r["scores"]["tasks"] == ["beside_cooperators"]
    assert r["scores"]["algorithms"]["pd"] == [[1.0], [0.0]]


def test_schelling_diagram_of_the_prisoners_dilemma():
    s = gridarena.schelling(
        "scripted:always cooperate", "scripted:always defect", scenario=str(PD), episodes=4
    )
    got = [(p["others_cooperating"], p["cooperator_return"], p["defector_return"]) for p in s["points"]]
    assert got == [(0, 0.0, 16.0), (1, 48.0, 80.0)]


def test_bad_input_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="learner slots 0..2"):
        pop = manifest(tmp_path, "always cooperate")
        gridarena.crossplay(pop, pop, scenario=str(PD), row_slots=[5], episodes=2)
    with pytest.raises(ValueError, match="no scripted baseline"):
        pop = manifest(tmp_path, "always betray")
        gridarena.crossplay(pop, pop, scenario=str(PD), episodes=2)
    with pytest.raises(ValueError, match="name the scenario"):
        pop = manifest(tmp_path, "always cooperate")
        gridarena.crossplay(pop, pop, episodes=2)
    with pytest.raises(ValueError):
        gridarena.evaluate_scenario_set(str(tmp_path / "missing.ron"), str(tmp_path), episodes=2)
    with pytest.raises(ValueError, match="not `random`"):
        gridarena.schelling("scripted:x", "no/such/run", scenario=str(PD))

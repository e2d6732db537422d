"""The figure scripts' README blocks carry no date and no commit hash; their records do.

README.md and docs/ describe the project as it is (tests/docs_history.rs fails on an ISO date or
a commit hash there); the measurement's day and commit live in the records under
benches/figures/. Each script that rewrites a README block with --write-readme builds the block
in a function of its own: these tests build each block from made-up figures, write it into a
small README with the markers, and check that the README holds neither a date nor a hash, while
the record's text, built beside it, keeps the date (and the commit, where the record names one).
The scripts themselves take minutes to hours and are not run here.
"""

import datetime
import importlib.util
import os
import re
import sys
from importlib.machinery import SourceFileLoader
from types import SimpleNamespace

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DATE = re.compile(r"20\d\d-\d\d-\d\d")
# 7 to 40 hex digits with at least one letter and one digit, as a word: a commit hash.
HASH = re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,40}\b")

WHEN = datetime.datetime(2026, 12, 6, 3, 42, tzinfo=datetime.timezone.utc)
DAY = "2026-12-06"
REV = "896399c+dirty"
CPU, CORES = "Intel(R) Xeon(R) Processor", 2


def load(rel):
    """A script by its path (most have no .py suffix), with scripts/ on the module path as
    when it runs (shaping_figure imports shaping_svg from there)."""
    name = "readme_blocks_" + re.sub(r"\W", "_", rel)
    scripts = os.path.join(ROOT, "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    loader = SourceFileLoader(name, os.path.join(ROOT, rel))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def fake_readme(*names):
    """A README with the blocks `names`, each holding a dated, hashed line to be replaced."""
    blocks = "".join(f"<!-- figures:{n} -->\nMeasured on 2024-01-02 at 0b30b5e3f.\n"
                     f"<!-- /figures:{n} -->\n\n" for n in names)
    return f"# A project\n\nBefore the blocks.\n\n{blocks}After the blocks.\n"


def assert_no_history(readme, *bodies):
    """readme holds each body, its text around the blocks, and no date and no hash."""
    for body in bodies:
        assert body in readme
    assert readme.startswith("# A project\n\nBefore the blocks.\n\n")
    assert readme.endswith("After the blocks.\n")
    assert DATE.findall(readme) == [], readme
    assert HASH.findall(readme) == [], readme


def test_the_patterns_see_a_date_and_a_hash():
    assert_no_history(fake_readme(), "")
    with pytest.raises(AssertionError):
        assert_no_history(fake_readme("x"), "")


def test_figures_blocks_name_the_script_and_machine_and_the_records_keep_date_and_commit():
    fig = load("scripts/figures")
    tables = {m: f"| {m} | 3,391,505 agent-steps/s |" for m in fig.MARKERS}
    texts = {m: fig.readme_block(t, "benches/figures", m, CPU, CORES) for m, t in tables.items()}
    readme = fig.replace_blocks(fake_readme(*fig.MARKERS), texts)
    assert_no_history(readme, *texts.values())
    assert texts["learning"].endswith(
        "\n\nMeasured by `scripts/figures` on an Intel(R) Xeon(R) Processor (2 cores); every "
        "run's figure: [benches/figures/learning.md](benches/figures/learning.md).")
    assert fig.on_machine("AMD EPYC", 16) == "an AMD EPYC (16 cores)"
    assert fig.on_machine("Xeon", 2) == "a Xeon (2 cores)"
    # The guard before writing sees what tests/docs_history.rs sees, and only that.
    assert all(fig.history(t) == [] for t in texts.values())
    assert fig.history(f"on {DAY} at e5e42d5, 1000000 steps, deadbeef") == [DAY, "e5e42d5"]
    header = fig.record_header(CPU, CORES, "24 GiB memory", WHEN, REV, "/bin/gridarena")
    assert f"Date: {DAY} 03:42 UTC" in header and f"Commit: {REV}" in header


def test_algorithms_table_block_has_no_date_and_its_record_keeps_date_and_commit():
    alg = load("scripts/algorithms_table")
    cols = [c for c, _, _ in alg.SCENARIOS]
    cells = {("pqn", c): (0.5, 0.1, 12.0) for c in cols}
    baselines = {c: ({"mean_return": -1.0, "ci95": 0.2},
                     {"name": "nearest coin", "mean_return": 0.3, "ci95": 0.1}) for c in cols}
    table = alg.table_text(100_000, 5, 20, False, [("PQN", "pqn")], cells, baselines, CPU, CORES)
    readme = alg.FIG.replace_blocks(fake_readme("algorithms"), {"algorithms": table})
    assert_no_history(readme, table)
    assert table.splitlines()[-1] == (
        "Measured by `scripts/algorithms_table --steps 100000` on an Intel(R) Xeon(R) Processor "
        "(2 cores); every seed's figure: [benches/figures/algorithms.md](benches/figures/algorithms.md).")
    header = alg.FIG.record_header(CPU, CORES, "24 GiB memory", WHEN, REV, "/bin/gridarena")
    record = alg.record_text(header, table, ["$ gridarena train ..."])
    assert DAY in record and REV in record and table in record


def test_evaluation_example_block_has_no_date_and_its_record_keeps_it():
    ev = load("scripts/evaluation_example")
    est = lambda p, lo, hi: {"point": p, "lo": lo, "hi": hi}
    rep = {"algorithms": {"pqn_coin": [None, {"IQM": est(0.955, 0.933, 0.978)}],
                          "ippo_coin": [None, {"IQM": est(0.999, 0.975, 1.028)}]},
           "improvement": [("ippo_coin", "pqn_coin", est(0.76, 0.57, 0.93))], "reps": 2000}
    summary = ev.summary(rep, {"row_mean": [[0.03, 0.53], [0.1, 0.2]]}, CPU, CORES)
    readme = ev.replace_block(fake_readme("evaluation"), ev.MARK, summary)
    assert_no_history(readme, summary)
    assert summary.endswith("(`scripts/evaluation_example`, Intel(R) Xeon(R) Processor, 2 cores; "
                            "[benches/figures/evaluation.md](benches/figures/evaluation.md)).")
    assert ev.replace_block("no markers here", ev.MARK, summary) is None
    assert DAY in ev.record_head(CPU, CORES, WHEN)


def test_exploitability_figure_block_has_no_date_and_its_record_keeps_it():
    ex = load("scripts/exploitability_figure")
    full = {"states": 85_184, "nashconv": 2.5395483328892636, "seconds": 218.3,
            "cache": {"bytes_used": 170_813_030}}
    summary = ex.summary(full, 190_976, "", CPU, CORES)
    readme = ex.replace_block(fake_readme("exploitability"), ex.MARK, summary)
    assert_no_history(readme, summary)
    assert "(`scripts/exploitability_figure`, Intel(R) Xeon(R) Processor, 2 cores; " in summary
    assert ex.replace_block("no markers here", ex.MARK, summary) is None
    assert DAY in ex.record_head(CPU, CORES, WHEN.date())


def test_shaping_figure_block_has_no_date_and_its_record_keeps_it():
    sh = load("scripts/shaping_figure")
    rows = [("PQN", "pqn_coin", (0.501, 0.004), (0.03, 0.08), (20.6, 0.4), [0.5] * 5),
            ("LOQA", "loqa_coin", (0.871, 0.059), (2.32, 1.55), (6.0, 3.1), [0.9] * 5)]
    block = sh.readme_block(rows, 2_000_000, 100, CPU, CORES)
    readme = sh.replace_block(fake_readme("shaping"), "shaping", block)
    assert_no_history(readme, block)
    assert "(`scripts/shaping_figure`, Intel(R) Xeon(R) Processor, 2 cores; " in block
    assert sh.replace_block("no markers here", "shaping", block) is None
    assert DAY in "\n".join(sh.record_head(2_000_000, 100, CPU, CORES, WHEN.date()))


def test_python_examples_block_has_no_date_and_its_record_keeps_date_and_commit():
    py = load("benches/peers/python_examples.py")
    med = {"ppo_gridarena": 29_100.0, "ppo_pettingzoo": 1_000.0, "ippo_rust": 37_830.0,
           "pqn_gridarena": 10_000.0, "pqn_rust": 34_000.0}
    args = SimpleNamespace(ppo_steps=12_000_000, pqn_steps=8_000_000, arenas=32, rounds=3)
    summary = py.readme_summary({"episode_return": -34.9, "agent_steps": 262_144},
                                {"episode_return": 27.4}, {"coins_per_episode": 3.0},
                                {"coins_per_episode": 19.4}, -46.3, 2.9, med, args, CPU, CORES)
    readme = py.FIG.replace_blocks(fake_readme("python-examples"), {"python-examples": summary})
    assert_no_history(readme, summary)
    assert "(medians of 3 rounds, Intel(R) Xeon(R) Processor, 2 cores; " in summary
    head = py.record_head(REV, WHEN)
    assert DAY in head and REV in head

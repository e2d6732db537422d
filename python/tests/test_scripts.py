"""The figure and peer scripts start: each answers --help from a folder outside the repository.

Several load scripts/figures by its path (SourceFileLoader), where Python does not put scripts/
on the module path; their imports must still resolve. The scripts themselves take minutes to
hours, so this checks only that they load and parse their arguments.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPTS = [
    "scripts/figures",
    "scripts/algorithms_table",
    "scripts/evaluation_example",
    "scripts/exploitability_figure",
    "scripts/shaping_figure",
    "scripts/agent_scaling",
    "benches/peers/python_examples.py",
    "benches/peers/plot_peer_speed.py",
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_answers_help_from_elsewhere(script, tmp_path):
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, script), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_the_peer_plot_reads_both_three_way_scripts_summaries():
    """plot_peer_speed.py's summary pattern takes jumanji_lbf.sh's and socialjax.sh's lines
    (their names, figures and the other sides' names), and no per-run line."""
    import importlib.util

    path = os.path.join(ROOT, "benches/peers/plot_peer_speed.py")
    spec = importlib.util.spec_from_file_location("plot_peer_speed", path)
    plot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot)
    lbf = ("lbf_8x8_2p_2f: gridarena 13088774, jumanji 495020, lbforaging 10763.8 (medians); "
           "per core against lbforaging: gridarena 1216x, jumanji 46x; gridarena / jumanji 26x")
    mp = ("clean_up: gridarena 963018, SocialJax 2242, Melting Pot 1114.7 (medians); per core "
          "against Melting Pot: gridarena 864x, SocialJax 2.0x; gridarena / SocialJax 430x")
    run = "run 1: clean_up env steps/s: gridarena 958714, SocialJax 2254, Melting Pot 1088.8"
    m = plot.SUMMARY.match(lbf)
    assert m.groups() == ("lbf_8x8_2p_2f", "13088774", "jumanji", "495020", "lbforaging",
                          "10763.8")
    m = plot.SUMMARY.match(mp)
    assert m.groups() == ("clean_up", "963018", "SocialJax", "2242", "Melting Pot", "1114.7")
    assert plot.SUMMARY.match(run) is None


def test_the_peer_plot_refuses_a_file_without_summaries(tmp_path):
    """Given a run with no summary line, plot_peer_speed.py says so and exits non-zero."""
    run = tmp_path / "run.txt"
    run.write_text("run 1: clean_up env steps/s: gridarena 958714, SocialJax 2254, Melting Pot 1088.8\n")
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benches/peers/plot_peer_speed.py"), str(run),
         "--out", str(tmp_path / "out.png")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0
    assert "no summary lines" in done.stderr
    assert not (tmp_path / "out.png").exists()


@pytest.mark.parametrize(
    "script", ["benches/ceilings/meltingpot_step.sh", "benches/peers/meltingpot.sh"]
)
@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent/gridarena", "3"], "no gridarena binary"),
        (["/bin/true", "0"], "must be positive integers"),
        (["/bin/true", "three"], "must be positive integers"),
    ],
)
def test_the_melting_pot_timings_refuse_bad_arguments_before_any_work(
    script, args, message, tmp_path
):
    """The Melting Pot timing scripts check their binary and counts before they build a
    virtualenv or run anything, and say what is wrong."""
    done = subprocess.run(
        ["bash", os.path.join(ROOT, script), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "==" not in done.stdout

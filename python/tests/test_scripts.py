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

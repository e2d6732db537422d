"""Ctrl-C inside `gridarena.train` saves a checkpoint, then raises KeyboardInterrupt; the run
resumes from it with `resume_if_exists=True`."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import gridarena

SCENARIO = str(Path(__file__).resolve().parents[2] / "tests/data/chase.ron")
# 8 arenas x 4 steps per update, a tiny network: many quick updates.
SMALL = dict(scenario=SCENARIO, device="cpu", arenas=8, rollout=4, layers=1, hidden=16,
             checkpoint_every=1_000_000, **{"pqn.minibatches": 2})


def metric_lines(run):
    path = Path(run) / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_ctrl_c_checkpoints_then_raises_keyboard_interrupt_and_the_run_resumes(tmp_path):
    run = tmp_path / "run"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import gridarena
            try:
                gridarena.train(out={str(run)!r}, total_steps=100_000_000, **{SMALL!r})
            except KeyboardInterrupt:
                print("KeyboardInterrupt", flush=True)
                raise SystemExit(3)
            print("finished", flush=True)
        """)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    while metric_lines(run) < 2:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() - start < 60, "no update in 60 s"
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 3, (out, err)
    assert "KeyboardInterrupt" in out
    # checkpoint_every is huge: the one checkpoint is the interrupt's, after the last update
    # the metrics show.
    stopped_at = metric_lines(run)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [f"update_{stopped_at:08d}"]
    last = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["update"] == stopped_at
    # The same call with resume_if_exists continues it (to two updates further).
    total = (stopped_at + 2) * 32
    resumed = gridarena.train(out=str(run), resume_if_exists=True, total_steps=total, **SMALL)
    assert gridarena.load_policy(resumed).update == stopped_at + 2
    assert metric_lines(run) == stopped_at + 2


def test_resume_if_exists_needs_out_and_refuses_another_config(tmp_path):
    with pytest.raises(ValueError, match="resume_if_exists=True needs out=DIR"):
        gridarena.train(resume_if_exists=True, **SMALL)
    run = str(tmp_path / "run")
    gridarena.train(out=run, resume_if_exists=True, total_steps=64, **SMALL)
    with pytest.raises(ValueError, match="network.hidden: 16 -> 32"):
        gridarena.train(out=run, resume_if_exists=True, total_steps=64, **{**SMALL, "hidden": 32})

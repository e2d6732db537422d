"""The Python examples in examples/python/ run, briefly, and print what they promise.

Each runs as its own process with this interpreter, from a temporary directory (away from the
source tree, so the installed package is imported), with short arguments: the whole file takes a
few seconds.
"""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(name, args, cwd, timeout=120):
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_random_rollout_reports_throughput_and_episodes(tmp_path):
    # 600 steps: past pursuit's 500-step episodes, so every arena finishes one.
    out = run_example(
        "random_rollout.py",
        ["--steps", "600", "--arenas", "8", "--gif", "arena0.gif", "--gif-frames", "5"],
        tmp_path,
    )
    assert re.search(r"env steps in [\d.]+ s: [\d,]+ env steps/s", out), out
    assert "finished episodes: 8 (" in out, out
    mean_return = float(re.search(r"mean return per agent: ([+-][\d.]+)", out).group(1))
    assert mean_return < 0, "random pursuers pay the urgency cost every step"
    assert re.search(r"mean catches per episode: [\d.]+", out), out
    # The GIF is written with Pillow if it is installed, else skipped with a message.
    gif = tmp_path / "arena0.gif"
    if "skipped, Pillow (PIL) is not installed" in out:
        assert not gif.exists()
    else:
        assert "wrote arena0.gif: 5 frames" in out, out
        assert gif.read_bytes()[:6] in (b"GIF87a", b"GIF89a")


def test_pqn_numpy_logs_and_learns(tmp_path):
    out = run_example("pqn_numpy.py", ["--updates", "400", "--log-every", "100"], tmp_path)
    lines = re.findall(r"^update +(\d+) .* mean_return ([+-][\d.]+) .*catches ([\d.]+)", out, re.M)
    assert [int(u) for u, _, _ in lines] == [100, 200, 300, 400], out
    first, last = float(lines[0][1]), float(lines[-1][1])
    # A uniform-random policy scores about +0.03 on this task; 400 updates reach ~+0.58.
    assert last > 0.3 and last > first + 0.15, out
    assert re.search(r"^done: mean return per agent [+-][\d.]+ in the first", out, re.M), out


def test_pettingzoo_wrapper_passes_the_api_test_and_plays(tmp_path):
    out = run_example(
        "pettingzoo_wrapper.py", ["--episodes", "2", "--api-cycles", "50", "--render"], tmp_path
    )
    assert "overrides {'max_steps': 100, 'surround': False}" in out, out
    assert "parallel_api_test: passed" in out, out
    assert "action_space Discrete(5)" in out, out
    # max_steps=100 overrides pursuit's 500; with 30 evaders a random episode runs to the limit.
    assert len(re.findall(r"^episode \d: 100 steps, truncated", out, re.M)) == 2, out
    assert "render(): uint8 array of shape (256, 256, 3)" in out, out

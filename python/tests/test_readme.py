"""README.md's Python quickstart runs.

Every fenced block whose info string is `python quickstart` is taken from README.md (or from
the file `GRIDARENA_README` names), in order, into one script whose line numbers are the
README's own (blank lines stand in for the rest), so a traceback points at the README line.
The script runs with this interpreter in a temporary directory whose `assets` links to the
repository's (so `assets/scenarios/...` paths work), away from the source tree (so the
installed package is imported).

Less work than written: a training length (`total_steps=...`, `steps=...`, `br_steps=...`,
an integer, product or power of integers) above `STEPS` becomes `STEPS`, `episodes=...` above 2
becomes 2 and `seeds=...` above 2 becomes 2 (the `REDUCE` regexes below). The rest runs as
written.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = Path(os.environ.get("GRIDARENA_README", ROOT / "README.md"))

# Two updates of the default run (256 arenas x 32 steps): a few seconds.
STEPS = 16_384
# keyword = integer, product or power (`200_000`, `4 * 8 * 2`, `10**6`), not in a longer name.
_INT = r"\d[\d_]*(?:\s*\*\*?\s*\d[\d_]*)*"
REDUCE = [
    (re.compile(rf"(?<![\w.])((?:total_|br_)?steps\s*=\s*)({_INT})"), STEPS),
    (re.compile(rf"(?<![\w.])(episodes\s*=\s*)({_INT})"), 2),
    (re.compile(rf"(?<![\w.])(seeds\s*=\s*)({_INT})"), 2),
]
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


def quickstart_blocks(text):
    """The `python quickstart` blocks as (first content line number, lines), fence indentation
    removed."""
    blocks, open_fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if open_fence is None:
            if m:
                info = m.group(3).split()
                wanted = info[:1] == ["python"] and "quickstart" in info
                open_fence = (m.group(2)[0], len(m.group(2)), len(m.group(1)), wanted)
                if wanted:
                    blocks.append((n + 1, []))
            continue
        char, length, indent, wanted = open_fence
        closing = line.strip()
        if closing and set(closing) == {char} and len(closing) >= length:
            open_fence = None
        elif wanted:
            strip = len(line) - len(line.lstrip(" "))
            blocks[-1][1].append(line[min(strip, indent):])
    return blocks


def _value(expr):
    # Digits, `_`, `*` and spaces only (the regex's match): safe to evaluate.
    return int(eval(expr, {"__builtins__": {}}))


def reduce(code):
    """`code` with its training lengths, episodes and seeds capped; returns it and the
    changes made."""
    notes = []
    for pattern, cap in REDUCE:

        def sub(m, cap=cap):
            value = _value(m.group(2))
            if value <= cap:
                return m.group(0)
            notes.append(f"{m.group(1).strip()}{m.group(2)} -> {cap}")
            return f"{m.group(1)}{cap}"

        code = pattern.sub(sub, code)
    return code, notes


def script(text):
    """One script of every quickstart block, each at its README line numbers."""
    lines = []
    for first, block in quickstart_blocks(text):
        lines.extend([""] * (first - 1 - len(lines)))
        lines.extend(block)
    return "\n".join(lines) + "\n"


def test_readme_python_quickstart_runs(tmp_path):
    blocks = quickstart_blocks(README.read_text())
    assert blocks, f"{README} has no ```python quickstart block"
    assert any(line.strip() for _, b in blocks for line in b), "its quickstart blocks are empty"
    code, notes = reduce(script(README.read_text()))
    (tmp_path / "assets").symlink_to(ROOT / "assets")
    path = tmp_path / "README_quickstart.py"
    path.write_text(code)
    done = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (
        f"{README}'s python quickstart exited {done.returncode} (line numbers below are the "
        f"README's; reduced: {', '.join(notes) or 'nothing'}):\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


def test_the_reduction_caps_training_and_keeps_the_rest():
    code, notes = reduce(
        "gridarena.train(total_steps=4_000_000, steps=8, br_steps=10**6, lr=1e-3)\n"
        "gridarena.eval(run, episodes=20, max_episodes=50)\n"
        "gridarena.train(total_steps=4 * 8 * 2, seeds=5)\n"
    )
    assert code == (
        f"gridarena.train(total_steps={STEPS}, steps=8, br_steps={STEPS}, lr=1e-3)\n"
        "gridarena.eval(run, episodes=2, max_episodes=50)\n"
        "gridarena.train(total_steps=4 * 8 * 2, seeds=2)\n"
    ), code
    assert len(notes) == 4, notes


def test_blocks_keep_the_readme_line_numbers():
    text = "# t\n\n```python quickstart\na = 1\n```\n\n```python\nb = 2\n```\n" \
        "  ```python quickstart\n  c = 3\n  ```\n"
    assert script(text).splitlines() == ["", "", "", "a = 1", "", "", "", "", "", "", "c = 3"]

#!/usr/bin/env python3
"""Apples standing over an episode of Commons Harvest (or Clean Up): a trained run's greedy
policy against uniformly random players, from the arenas' global state. The picture shows
whether selfish learners deplete the orchard (the tragedy of the commons) or not.

    .venv/bin/python scripts/apples_over_time.py --run RUN [--run RUN2 ...] \\
        --out docs/harvest_apples.png

Each policy plays --arenas arenas for --steps steps from the same seed; apples are counted in
the global state's `apple` entry (the whole map), averaged over the arenas at every step.
Prints the curve's mean over the episode and its last value for every policy, with the
apples eaten per finished episode. Needs the gridarena package (`pip install ./python`) and
pillow.
"""

import argparse
import json
import os
import sys

import numpy as np

import gridarena

COLOURS = [(200, 60, 40), (40, 110, 200), (60, 160, 80), (150, 80, 170)]


def apple_counter(env):
    """Where the apple byte sits in the global state: (block offset, cell bytes, apple index)."""
    for b in env.global_state_blocks:
        if "apple" in b["entries"]:
            cell = b["shape"][-1][1]
            return b["offset"], cell, b["entries"].index("apple"), b
    sys.exit("apples_over_time: this scenario's global state has no `apple` entry")


def curve(scenario, policy, arenas, steps, seed):
    env = gridarena.VecEnv(scenario, arenas, seed=seed, global_state=True)
    offset, cell, apple, block = apple_counter(env)
    n_cells = int(np.prod([n for _, n in block["shape"]])) // cell
    rng = np.random.default_rng(seed)
    means, eaten = [], []
    for _ in range(steps):
        state = env.state[:, offset:offset + n_cells * cell].reshape(arenas, n_cells, cell)
        means.append(float(state[:, :, apple].sum(axis=1).mean()))
        if policy is None:
            actions = rng.integers(0, env.num_actions, (arenas, env.num_agents))
        else:
            actions = policy(env.obs)
        env.step(actions)
        for e in env.episodes():
            eaten.append(e["counters"].get("apples_eaten", 0))
    return np.array(means), eaten


def draw(curves, out, title):
    from PIL import Image, ImageDraw

    w, h, left, bottom, top, right = 900, 420, 70, 50, 40, 20
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    ymax = max(c.max() for _, c in curves) * 1.1 or 1.0
    steps = max(len(c) for _, c in curves)
    px = lambda t: left + (w - left - right) * t / max(steps - 1, 1)
    py = lambda v: h - bottom - (h - bottom - top) * v / ymax
    d.line([(left, top), (left, h - bottom), (w - right, h - bottom)], fill="black")
    for k in range(6):
        v = ymax * k / 5
        d.line([(left - 4, py(v)), (left, py(v))], fill="black")
        d.text((8, py(v) - 6), f"{v:.0f}", fill="black")
        t = (steps - 1) * k / 5
        d.text((px(t) - 12, h - bottom + 6), f"{t:.0f}", fill="black")
    d.text((w // 2 - 40, h - 20), "step of the episode", fill="black")
    d.text((left, 10), title, fill="black")
    for i, (label, c) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        d.line([(px(t), py(v)) for t, v in enumerate(c)], fill=colour, width=2)
        d.text((w - 330, top + 16 * i), label, fill=colour)
    tmp = f"{out}.{os.getpid()}.tmp.png"
    img.save(tmp)
    os.replace(tmp, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="append", default=[], help="a trained run (repeatable)")
    p.add_argument("--scenario", default="assets/scenarios/commons_harvest_open.ron")
    p.add_argument("--arenas", type=int, default=16)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="PNG to write (default: none, print only)")
    a = p.parse_args()
    if a.arenas < 1 or a.steps < 2:
        p.error("--arenas must be >= 1 and --steps >= 2")
    curves, summary = [], {}
    policies = [(f"trained: {os.path.basename(os.path.normpath(r))}", r) for r in a.run]
    for label, run in policies + [("uniformly random", None)]:
        policy = gridarena.load_policy(run) if run else None
        c, eaten = curve(a.scenario, policy, a.arenas, a.steps, a.seed)
        curves.append((label, c))
        summary[label] = {"mean_apples": round(float(c.mean()), 2),
                          "last_apples": round(float(c[-1]), 2),
                          "apples_eaten_per_episode": round(float(np.mean(eaten)), 2) if eaten else None}
        print(f"{label}: apples standing mean {c.mean():.1f}, at the last step {c[-1]:.1f}",
              file=sys.stderr)
    print(json.dumps(summary, indent=1))
    if a.out:
        draw(curves, a.out, f"apples standing, {os.path.basename(a.scenario)}, "
                            f"mean of {a.arenas} arenas")


if __name__ == "__main__":
    main()

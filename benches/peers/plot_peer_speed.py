#!/usr/bin/env python3
"""Plots what a three-way peer script printed (jumanji_lbf.sh, socialjax.sh): env steps/s per
core of gridarena, the fastest other implementation and the reference on every scenario, bars on
a log scale, with the 1,000x-reference mark.

    benches/peers/jumanji_lbf.sh BIN 3 | tee run.txt
    benches/peers/.venv-jumanji/bin/python benches/peers/plot_peer_speed.py run.txt --out docs/lbf_speed.png
    benches/peers/socialjax.sh BIN 3 | tee run.txt
    benches/peers/.venv-jumanji/bin/python benches/peers/plot_peer_speed.py run.txt \
        --out docs/meltingpot_speed.png --title "Commons Harvest and Clean Up on one core"

Reads the summary lines (`NAME: gridarena G, PEER P, REFERENCE R (medians); ...`, all of one
script's run); the virtualenv jumanji_lbf.sh creates has matplotlib.
"""

import argparse
import re
import sys

SUMMARY = re.compile(
    r"^(\S+): gridarena ([0-9.]+), ([A-Za-z]+) ([0-9.]+), ([A-Za-z ]+?) ([0-9.]+) \(medians\)"
)
# How the scripts' names for the other sides read in the legend.
LABELS = {"jumanji": "Jumanji (JAX, vmapped)", "SocialJax": "SocialJax (JAX, vmapped)"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="the peer script's standard output")
    p.add_argument("--out", default="docs/lbf_speed.png")
    p.add_argument("--title", default="Level-Based Foraging on one core")
    a = p.parse_args()
    rows, sides = [], set()
    with open(a.run, encoding="utf-8") as f:
        for line in f:
            m = SUMMARY.match(line.strip())
            if m:
                name = m.group(1)
                name = name[len("lbf_"):].replace("_", "-") if name.startswith("lbf_") else name
                rows.append((name, float(m.group(2)), float(m.group(4)), float(m.group(6))))
                sides.add((m.group(3), m.group(5)))
    if not rows:
        sys.exit(f"{a.run}: no summary lines of a three-way peer script in it")
    if len(sides) != 1:
        sys.exit(f"{a.run}: summary lines of more than one script: {sorted(sides)}")
    peer, reference = sides.pop()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(7.5, 1.25 * len(rows) + 1.5), 4.2), dpi=110)
    width = 0.27
    xs = range(len(rows))
    bars = [("gridarena", 1, "#2a6f97"), (LABELS.get(peer, peer), 2, "#e09f3e"),
            (reference, 3, "#9e2a2b")]
    for k, (label, col, colour) in enumerate(bars):
        ax.bar([x + (k - 1) * width for x in xs], [r[col] for r in rows], width,
               label=label, color=colour)
    # 1,000x the reference: the target per core.
    for x, r in zip(xs, rows):
        ax.plot([x - 1.5 * width, x + 1.5 * width], [1000 * r[3]] * 2, color="black",
                linestyle="--", linewidth=1)
    ax.plot([], [], color="black", linestyle="--", linewidth=1, label=f"1,000x {reference}")
    ax.set_yscale("log")
    few = len(rows) <= 3
    ax.set_xticks(list(xs), [r[0] for r in rows], rotation=0 if few else 20,
                  ha="center" if few else "right")
    ax.set_ylabel("env steps/s, one core")
    ax.set_title(a.title)
    ax.legend(fontsize=8, ncol=2 if few else 4, loc="upper center",
              bbox_to_anchor=(0.5, -0.12 if few else -0.28))
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out)
    for name, g, j, ref in rows:
        print(f"{name}: gridarena {g / ref:,.0f}x {reference}, {peer} {j / ref:,.1f}x, "
              f"gridarena / {peer} {g / j:,.0f}x")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

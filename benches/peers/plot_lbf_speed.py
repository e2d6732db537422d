#!/usr/bin/env python3
"""Plots what benches/peers/jumanji_lbf.sh printed: env steps/s per core of gridarena, Jumanji
and lbforaging on every LBF scenario, bars on a log scale, with the 1,000x-lbforaging mark.

    benches/peers/jumanji_lbf.sh BIN 3 | tee run.txt
    benches/peers/.venv-jumanji/bin/python benches/peers/plot_lbf_speed.py run.txt --out docs/lbf_speed.png

Reads the summary lines (`lbf_...: gridarena G, jumanji J, lbforaging L (medians); ...`); the
virtualenv jumanji_lbf.sh creates has matplotlib.
"""

import argparse
import re
import sys

SUMMARY = re.compile(
    r"^(lbf_\S+): gridarena ([0-9.]+), jumanji ([0-9.]+), lbforaging ([0-9.]+) \(medians\)"
)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="jumanji_lbf.sh's standard output")
    p.add_argument("--out", default="docs/lbf_speed.png")
    p.add_argument("--title", default="Level-Based Foraging on one core")
    a = p.parse_args()
    rows = []
    with open(a.run, encoding="utf-8") as f:
        for line in f:
            m = SUMMARY.match(line.strip())
            if m:
                rows.append((m.group(1)[len("lbf_"):].replace("_", "-"),
                             *(float(m.group(k)) for k in (2, 3, 4))))
    if not rows:
        sys.exit(f"{a.run}: no summary lines of jumanji_lbf.sh in it")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.2), dpi=110)
    width = 0.27
    xs = range(len(rows))
    sides = [("gridarena", 1, "#2a6f97"), ("Jumanji (JAX, vmapped)", 2, "#e09f3e"),
             ("lbforaging", 3, "#9e2a2b")]
    for k, (label, col, colour) in enumerate(sides):
        ax.bar([x + (k - 1) * width for x in xs], [r[col] for r in rows], width,
               label=label, color=colour)
    # 1,000x lbforaging: the target per core.
    for x, r in zip(xs, rows):
        ax.plot([x - 1.5 * width, x + 1.5 * width], [1000 * r[3]] * 2, color="black",
                linestyle="--", linewidth=1)
    ax.plot([], [], color="black", linestyle="--", linewidth=1, label="1,000x lbforaging")
    ax.set_yscale("log")
    ax.set_xticks(list(xs), [r[0] for r in rows], rotation=20, ha="right")
    ax.set_ylabel("env steps/s, one core")
    ax.set_title(a.title)
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.28))
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out)
    for name, g, j, lbf in rows:
        print(f"{name}: gridarena {g / lbf:,.0f}x lbforaging, Jumanji {j / lbf:,.0f}x, "
              f"gridarena / Jumanji {g / j:,.0f}x")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

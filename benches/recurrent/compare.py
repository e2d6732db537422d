#!/usr/bin/env python3
"""PQN with a GRU network against PQN with an MLP, side by side on this machine.

    python benches/recurrent/compare.py cue    [--bin target/release/gridarena] [--seeds 5]
    python benches/recurrent/compare.py pursuit [--steps 2000000] [--repeats 3]

`cue` trains both networks on assets/scenarios/cue_memory.ron (1M env steps, 5 seeds each in one
process), evaluates every seed's greedy policy over 1,000 episodes, prints the table and writes
docs/recurrent_cue.png (mean return per env step, one thin line per seed). `pursuit` first trains both
on the default Pursuit scenario (8 pursuers, 30 evaders) in the short configuration of
tests/baselines.rs (one shared network, 64 arenas, rollout 16, lr 3e-3; `--mlp-set` and
`--gru-set KEY=VALUE` override either network's settings) for `--steps` env steps (default
400k) x `--seeds` seeds from `--seed`, prints each seed's mean return over the last 10% of env
steps (its own episodes only) and its greedy return over `--episodes` episodes, then per tenth
of the run each network's mean return and the difference GRU - MLP with its standard error, and
writes docs/recurrent_pursuit.png (each seed's return binned over env steps); then it measures
training throughput in the default configuration (256 arenas, one network per pursuer, hidden
128), `--throughput-steps` env steps per run, `--repeats` times interleaved, and prints each
run and the medians' ratio. Needs matplotlib
(benches/recurrent/requirements.txt). Runs go under --out (default /tmp/gridarena-recurrent).
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

NETWORKS = {
    "cue": {
        "MLP": ["--set", "hidden=128", "--set", "layers=2"],
        "GRU": ["--set", "network=gru", "--set", "layers=1", "--set", "hidden=64"],
    },
    "pursuit": {
        "MLP": ["--set", "layers=2"],
        "GRU": ["--set", "network=gru", "--set", "layers=1"],
    },
}


def train(bin_, task, name, args, out, extra=()):
    run = out / name
    shutil.rmtree(run, ignore_errors=True)
    cmd = [bin_, "train", "--algo", "pqn", "--device", "cpu", "--out", str(run)] + args
    if task == "cue":
        cmd += ["--scenario", "assets/scenarios/cue_memory.ron"]
    # The network's own settings, then the caller's overrides (later `--set`s win).
    cmd += NETWORKS[task][name.split("_")[0]] + list(extra)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    return run, seconds


def seed_returns(run):
    """(last env step, [(env steps, per-seed returns)]) of every update that finished episodes;
    a seed that finished none in an update has None there (never its last value, so a seed's
    figures do not depend on which other seeds trained beside it)."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    updates = []
    for m in rows:
        seeds = m.get("seeds_return_per_seed")
        if not seeds:  # a one-seed run writes [] here: its own figure is `return_mean`
            if not m.get("episodes"):
                continue
            seeds = [m["return_mean"]]
        updates.append((m["env_steps"], seeds))
    return max(m["env_steps"] for m in rows), updates


def tail_means(run, fraction=0.1):
    """Each seed's mean return over its own episodes in the last `fraction` of env steps."""
    last, updates = seed_returns(run)
    per_seed = [[] for _ in updates[0][1]]
    for steps, seeds in updates:
        if steps >= (1 - fraction) * last:
            for k, v in enumerate(seeds):
                if v is not None:
                    per_seed[k].append(v)
    return [statistics.mean(v) for v in per_seed]


def greedy(bin_, run, replica, episodes):
    text = subprocess.run(
        [bin_, "eval", "--run", str(run), "--replica", str(replica), "--episodes",
         str(episodes), "--json", "--device", "cpu"],
        check=True, capture_output=True, text=True).stdout
    report = json.loads(text)
    return report["policy"]["mean_return"], report["random"]["mean_return"]


def binned(run, bins=40):
    """(bin centres in env steps, per-seed curves): each seed's mean return over its own episodes
    in each of `bins` equal spans of env steps (NaN where it finished none)."""
    last, updates = seed_returns(run)
    sums = [[[] for _ in range(bins)] for _ in updates[0][1]]
    for steps, seeds in updates:
        j = min(bins - 1, steps * bins // last)
        for k, v in enumerate(seeds):
            if v is not None:
                sums[k][j].append(v)
    centres = [(j + 0.5) * last / bins for j in range(bins)]
    return centres, [[statistics.mean(x) if x else float("nan") for x in s] for s in sums]


def spans(mlp, gru, bins=10):
    """Prints, for `bins` equal spans of env steps, each network's mean over seeds of each seed's
    mean return in the span, and the difference GRU - MLP with its standard error (the two
    seed sets independent); the last column is the whole run (each seed's mean over spans)."""
    _, m = binned(mlp, bins)
    centres, g = binned(gru, bins)
    width = centres[0] * 2
    k = lambda x: f"{round(x, -4) / 1e3:.0f}"  # labels to the nearest 10k env steps
    cols = [f"{k(j * width)}-{k((j + 1) * width)}k" for j in range(bins)] + ["whole"]
    def column(seeds, j):
        return [s[j] if j < bins else statistics.mean(s) for s in seeds]
    def se(xs):
        return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else float("nan")
    print("env steps    " + "".join(f"{c:>16}" for c in cols))
    for name, seeds in [("MLP", m), ("GRU", g)]:
        print(f"PQN-{name}      " + "".join(
            f"{statistics.mean(column(seeds, j)):>16.2f}" for j in range(bins + 1)))
    diffs = []
    for j in range(bins + 1):
        a, b = column(m, j), column(g, j)
        d = statistics.mean(b) - statistics.mean(a)
        diffs.append(f"{d:.2f} ± {(se(a) ** 2 + se(b) ** 2) ** 0.5:.2f}")
    print("GRU - MLP    " + "".join(f"{x:>16}" for x in diffs))


def plot(runs, path, title):
    """`runs`: network name -> run directories whose seeds are drawn together."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for (name, dirs), color in zip(runs.items(), ["tab:orange", "tab:blue", "tab:green", "tab:red"]):
        seeds = []
        for run in dirs:
            steps, per_seed = binned(run)
            seeds += per_seed
        for curve in seeds:
            ax.plot(steps, curve, color=color, alpha=0.25, lw=0.8)
        mean = [statistics.mean(c[j] for c in seeds) for j in range(len(steps))]
        ax.plot(steps, mean, color=color, lw=2,
                label=f"PQN-{name} (mean of {len(seeds)})")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean return per episode (training, epsilon-greedy)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("task", choices=["cue", "pursuit"])
    p.add_argument("--bin", default="target/release/gridarena")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0,
                   help="`pursuit`: the first seed (replica k trains seed + k)")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--throughput-steps", type=int, default=100_000)
    p.add_argument("--episodes", type=int, default=1000)
    p.add_argument("--out", default="/tmp/gridarena-recurrent")
    p.add_argument("--mlp-set", action="append", default=[], metavar="KEY=VALUE",
                   help="`pursuit`: a config override for PQN-MLP's learning run (repeatable)")
    p.add_argument("--gru-set", action="append", default=[], metavar="KEY=VALUE",
                   help="`pursuit`: a config override for PQN-GRU's learning run (repeatable)")
    a = p.parse_args()
    if not Path(a.bin).exists():
        sys.exit(f"no binary {a.bin} (cargo build --release)")
    out = Path(a.out) / a.task
    out.mkdir(parents=True, exist_ok=True)
    if a.task == "cue":
        steps = a.steps or 1_000_000
        runs = {}
        for name in ["MLP", "GRU"]:
            run, seconds = train(a.bin, "cue", name, ["--steps", str(steps), "--seeds",
                                                      str(a.seeds)], out)
            runs[name] = run
            results = [greedy(a.bin, run, k, a.episodes) for k in range(a.seeds)]
            optimal = sum(g >= 0.99 for g, _ in results)
            print(f"PQN-{name}: {steps} env steps x {a.seeds} seeds in {seconds:.0f} s; "
                  f"greedy return per seed {[round(g, 3) for g, _ in results]} "
                  f"(random {statistics.mean(r for _, r in results):.3f}); "
                  f"optimal (>= 0.99) on {optimal}/{a.seeds} seeds")
        plot({k: [v] for k, v in runs.items()}, "docs/recurrent_cue.png",
             "cue_memory: the cue at step 1, the choice at step 8")
    else:
        steps = a.steps or 400_000
        short = ["--set", "shared=true", "--set", "arenas=64", "--set", "rollout=16",
                 "--set", "minibatches=4", "--set", "lr=3e-3", "--set", "hidden=64"]
        runs = {}
        overrides = {"MLP": a.mlp_set, "GRU": a.gru_set}
        for name in ["MLP", "GRU"]:
            extra = [x for kv in overrides[name] for x in ("--set", kv)]
            run, seconds = train(a.bin, "pursuit", f"{name}_learn",
                                 short + ["--steps", str(steps), "--seed", str(a.seed),
                                          "--seeds", str(a.seeds)], out,
                                 extra)
            runs[name] = run
            seeds = tail_means(run)
            print(f"PQN-{name}: {steps} env steps x {a.seeds} seeds from seed {a.seed} "
                  f"({seconds:.0f} s); mean return over the last 10% of env steps per seed "
                  f"{[round(x, 2) for x in seeds]}, mean {statistics.mean(seeds):.2f}")
            # The trained greedy policies, each over `--episodes` fresh episodes.
            results = [greedy(a.bin, run, k, a.episodes) for k in range(a.seeds)]
            print(f"PQN-{name}: greedy return per seed over {a.episodes} episodes "
                  f"{[round(g, 2) for g, _ in results]}, mean "
                  f"{statistics.mean(g for g, _ in results):.2f} (random "
                  f"{statistics.mean(r for _, r in results):.2f})")
        spans(runs["MLP"], runs["GRU"])
        # Each line is labelled with its network's overrides (`--mlp-set` / `--gru-set`).
        labels = {k: ", ".join([k] + overrides[k]) for k in runs}
        plot({labels[k]: [v] for k, v in runs.items()}, "docs/recurrent_pursuit.png",
             "Pursuit (8 pursuers, 30 evaders), one shared network")
        sps = {"MLP": [], "GRU": []}
        t_steps = a.throughput_steps
        for r in range(a.repeats):
            for name in ["MLP", "GRU"]:
                _, seconds = train(a.bin, "pursuit", f"{name}_{r}", ["--steps", str(t_steps),
                                   "--set", "hidden=128"], out)
                sps[name].append(t_steps / seconds)
                print(f"repeat {r}: PQN-{name} {t_steps / seconds:,.0f} env steps/s "
                      f"({seconds:.1f} s, start-up included)")
        med = {k: statistics.median(v) for k, v in sps.items()}
        print(f"median env steps/s: MLP {med['MLP']:,.0f}, GRU {med['GRU']:,.0f}, "
              f"GRU/MLP {med['GRU'] / med['MLP']:.2f}")


if __name__ == "__main__":
    main()

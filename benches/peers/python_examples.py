#!/usr/bin/env python3
"""The PyTorch examples: do they learn, and how fast do they run beside their peers?

Run by benches/peers/python_examples.sh, in the virtualenv it makes (torch, PettingZoo's
pursuit_v5, SuperSuit, matplotlib, and gridarena's release wheel). Two parts:

1. Learning: `examples/python/ppo_torch_pursuit.py` on Pursuit and `pqn_torch_coin.py` on the
   coin game at their default hyperparameters, for --ppo-steps and --pqn-steps agent steps,
   beside uniformly random play measured on the same envs. Draws docs/python_examples.png.
2. Throughput, interleaved rounds, the same number of arenas on every side (--arenas):
   - PPO: the PyTorch script on gridarena's vector env, the same script on PettingZoo's own
     pursuit_v5 through SuperSuit's `concat_vec_envs_v1` (`--env pettingzoo`), and gridarena's
     Rust IPPO (`gridarena bench train`, assets/runs/ippo_pursuit.ron with shared parameters);
   - PQN: the PyTorch script on the coin game, and gridarena's Rust PQN (assets/runs/pqn_coin.ron).
   Every figure is arena steps per second including learning, timed after a first update (the
   Rust bench's warm-up; the scripts' logs give each update's wall time).

Writes benches/figures/python_examples.md (every command and figure, the commit and the date)
and, with --write-readme, the README's block between <!-- figures:python-examples --> and its end
marker (the figures and the machine, no date and no commit).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIG = SourceFileLoader("figures", os.path.join(ROOT, "scripts", "figures")).load_module()
PPO = os.path.join(ROOT, "examples", "python", "ppo_torch_pursuit.py")
PQN = os.path.join(ROOT, "examples", "python", "pqn_torch_coin.py")


def run(cmd, log):
    log.append("$ " + " ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def script_rate(script, extra, log, workdir, tag):
    """Arena steps/s of a torch script after its first update, from its JSON log."""
    path = os.path.join(workdir, f"{tag}.jsonl")
    run([sys.executable, script, *extra, "--log", path], log)
    rows = [json.loads(x) for x in open(path)]
    first, last = rows[0], rows[-1]
    rate = (last["arena_steps"] - first["arena_steps"]) / (last["wall"] - first["wall"])
    log.append(f"  -> {rate:,.0f} arena steps/s over updates 2..{last['update']}")
    return rate


def rust_rate(binary, config, sets, updates, log):
    out = run([binary, "bench", "train", "--config", config, "--updates", str(updates),
               "--set", "device=cpu", *sum((["--set", s] for s in sets), [])], log)
    rate = float(FIG.grab(out, r"env steps/s including learning: *([0-9.]+)"))
    log.append(f"  -> {rate:,.0f} arena steps/s")
    return rate


def random_play(scenario, arenas, steps, counter_sum):
    import numpy as np

    import gridarena

    env = gridarena.GridarenaVectorEnv(scenario, arenas, seed=7)
    env.reset(seed=7)
    rng = np.random.default_rng(7)
    for _ in range(steps):
        env.step(rng.integers(0, env.single_action_space.n, env.num_envs))
    eps = env.episodes()
    n = env.agents_per_arena
    ret = statistics.mean(r for e in eps for r in e["returns"][:n])
    coins = statistics.mean(sum(e["counters"].values()) for e in eps) if counter_sum else None
    return ret, coins, len(eps)


def plot(ppo_rows, pqn_rows, rand_pursuit, rand_coin_ret, rand_coins, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    xs = [r["agent_steps"] / 1e6 for r in ppo_rows if r["episode_return"] == r["episode_return"]]
    ys = [r["episode_return"] for r in ppo_rows if r["episode_return"] == r["episode_return"]]
    ax[0].plot(xs, ys, label="PPO (PyTorch, shared parameters)")
    ax[0].axhline(rand_pursuit, color="grey", ls="--", label="uniformly random")
    ax[0].set(title="Pursuit: return per pursuer per episode", xlabel="agent steps (M)")
    for i, (key, rand, title) in enumerate([
        ("coins_per_episode", rand_coins, "Coin game: coins picked up per episode"),
        ("episode_return", rand_coin_ret, "Coin game: return per player per episode"),
    ], start=1):
        pts = [(r["agent_steps"] / 1e6, r[key]) for r in pqn_rows if r[key] == r[key]]
        ax[i].plot(*zip(*pts), color="C1", label="PQN (PyTorch)")
        ax[i].axhline(rand, color="grey", ls="--", label="uniformly random")
        ax[i].set(title=title, xlabel="agent steps (M)")
    for a in ax:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def readme_summary(first_ppo, last_ppo, first_pqn, last_pqn, rand_pursuit, rand_coins, med, a,
                   cpu, cores):
    """The README's block: the learning and throughput figures and the machine, without the
    date or the commit (the record keeps those). first_/last_: the examples' log rows; med: the
    median arena steps/s per side; a: the arguments (ppo_steps, pqn_steps, arenas, rounds)."""
    return (
        f"PPO on Pursuit: return per pursuer {first_ppo['episode_return']:.1f} in the first "
        f"episodes ({first_ppo['agent_steps'] / 1e6:.2g}M agent steps in), "
        f"{last_ppo['episode_return']:.1f} after {a.ppo_steps / 1e6:g}M (random "
        f"{rand_pursuit:.1f}). PQN on the coin game: coins per episode "
        f"{first_pqn['coins_per_episode']:.1f} to {last_pqn['coins_per_episode']:.1f} in "
        f"{a.pqn_steps / 1e6:g}M (random {rand_coins:.1f}). The same PyTorch PPO runs "
        f"{med['ppo_gridarena'] / med['ppo_pettingzoo']:.1f}x faster on gridarena than on "
        f"pursuit_v5 through SuperSuit ({a.arenas} arenas each); gridarena's Rust IPPO runs "
        f"{med['ippo_rust'] / med['ppo_gridarena']:.1f}x the PyTorch PPO, its Rust PQN "
        f"{med['pqn_rust'] / med['pqn_gridarena']:.1f}x the PyTorch PQN (medians of {a.rounds} "
        f"rounds, {cpu}, {cores} cores; "
        "[benches/figures/python_examples.md](benches/figures/python_examples.md))."
    )


def record_head(rev, when):
    """The record's first line under its title: the script, the commit and the time (UTC)."""
    return f"Generated by `benches/peers/python_examples.py` at {rev}, {when:%Y-%m-%d %H:%M} UTC."


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gridarena", default=os.path.join(ROOT, "target", "release", "gridarena"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--arenas", type=int, default=32, help="arenas per side in the throughput runs")
    p.add_argument("--updates", type=int, default=6, help="timed updates per throughput run (PettingZoo: 2)")
    p.add_argument("--ppo-steps", type=int, default=3_000_000)
    p.add_argument("--ppo-arenas", type=int, default=64, help="arenas of the PPO learning run (64 x 8 x 32 = 16,384 samples an update)")
    p.add_argument("--pqn-steps", type=int, default=2_000_000)
    p.add_argument("--write-readme", action="store_true")
    a = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="python-examples-")
    log = []
    when = datetime.datetime.now(datetime.timezone.utc)
    rev = FIG.commit()
    cpu, cores, _ = FIG.machine()

    # ---- 1. learning ----
    print("learning: PPO on Pursuit, PQN on the coin game", flush=True)
    ppo_log, pqn_log = os.path.join(workdir, "ppo.jsonl"), os.path.join(workdir, "pqn.jsonl")
    ppo_out = run([sys.executable, PPO, "--total-steps", str(a.ppo_steps), "--arenas", str(a.ppo_arenas), "--log", ppo_log], log)
    pqn_out = run([sys.executable, PQN, "--total-steps", str(a.pqn_steps), "--log", pqn_log], log)
    ppo_rows = [json.loads(x) for x in open(ppo_log)]
    pqn_rows = [json.loads(x) for x in open(pqn_log)]
    rand_pursuit, _, n1 = random_play("pursuit", 64, 1500, False)
    rand_coin_ret, rand_coins, n2 = random_play("coin_game", 256, 400, True)
    plot(ppo_rows, pqn_rows, rand_pursuit, rand_coin_ret, rand_coins,
         os.path.join(ROOT, "docs", "python_examples.png"))
    first_ppo = next((r for r in ppo_rows if r["episode_return"] == r["episode_return"]), None)
    if first_ppo is None:
        sys.exit("no PPO episode finished (Pursuit's last 500 steps): raise --ppo-steps")
    last_ppo, last_pqn, first_pqn = ppo_rows[-1], pqn_rows[-1], pqn_rows[0]

    # ---- 2. throughput ----
    A, U = str(a.arenas), str(a.updates)
    common = ["--arenas", A, "--max-updates", U]
    sides = {
        "ppo_gridarena": lambda: script_rate(PPO, common, log, workdir, "t-ppo-ga"),
        "ppo_pettingzoo": lambda: script_rate(PPO, ["--env", "pettingzoo", "--arenas", A, "--max-updates", "2"], log, workdir, "t-ppo-pz"),
        "ippo_rust": lambda: rust_rate(a.gridarena, "assets/runs/ippo_pursuit.ron", [f"arenas={A}", "network.shared=true"], a.updates, log),
        "pqn_gridarena": lambda: script_rate(PQN, common, log, workdir, "t-pqn-ga"),
        "pqn_rust": lambda: rust_rate(a.gridarena, "assets/runs/pqn_coin.ron", [f"arenas={A}"], a.updates, log),
    }
    got = {k: [] for k in sides}
    for r in range(a.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for k in order:
            print(f"round {r + 1}/{a.rounds}: {k}", flush=True)
            got[k].append(sides[k]())
    med = {k: statistics.median(v) for k, v in got.items()}
    runs = lambda k: " / ".join(f"{x:,.0f}" for x in got[k])

    table = "\n".join([
        f"PyTorch examples ({cpu}, {cores} cores; {when:%Y-%m-%d}; `benches/peers/python_examples.sh`):",
        "",
        "| example | first episodes | last episodes | uniformly random |",
        "|---|---|---|---|",
        f"| PPO, Pursuit, return per pursuer ({a.ppo_steps / 1e6:g}M agent steps) | "
        f"{first_ppo['episode_return']:.1f} | {last_ppo['episode_return']:.1f} | {rand_pursuit:.1f} |",
        f"| PQN, coin game, coins per episode ({a.pqn_steps / 1e6:g}M agent steps) | "
        f"{first_pqn['coins_per_episode']:.1f} | {last_pqn['coins_per_episode']:.1f} | {rand_coins:.1f} |",
        f"| PQN, coin game, return per player | {first_pqn['episode_return']:+.2f} | "
        f"{last_pqn['episode_return']:+.2f} | {rand_coin_ret:+.2f} |",
        "",
        f"Throughput, arena steps/s including learning, {a.arenas} arenas on every side, medians of "
        f"{a.rounds} interleaved rounds (every round's figure in brackets):",
        "",
        "| | on gridarena's vector env | on PettingZoo's pursuit_v5 (SuperSuit) | gridarena's Rust learner |",
        "|---|---|---|---|",
        f"| PPO, Pursuit | {med['ppo_gridarena']:,.0f} ({runs('ppo_gridarena')}) | "
        f"{med['ppo_pettingzoo']:,.0f} ({runs('ppo_pettingzoo')}) | "
        f"{med['ippo_rust']:,.0f} ({runs('ippo_rust')}) |",
        f"| PQN, coin game | {med['pqn_gridarena']:,.0f} ({runs('pqn_gridarena')}) | - | "
        f"{med['pqn_rust']:,.0f} ({runs('pqn_rust')}) |",
        "",
        f"The same PyTorch PPO runs {med['ppo_gridarena'] / med['ppo_pettingzoo']:.1f}x faster on "
        f"gridarena than on pursuit_v5; gridarena's Rust IPPO runs "
        f"{med['ippo_rust'] / med['ppo_gridarena']:.1f}x the PyTorch PPO and its Rust PQN "
        f"{med['pqn_rust'] / med['pqn_gridarena']:.1f}x the PyTorch PQN.",
    ])
    print(table)
    summary = readme_summary(first_ppo, last_ppo, first_pqn, last_pqn, rand_pursuit, rand_coins,
                             med, a, cpu, cores)
    record = "\n".join([
        "# PyTorch examples: learning and throughput", "",
        record_head(rev, when), "",
        table, "", "![learning curves](../../docs/python_examples.png)", "",
        "## Output of the learning runs", "", "```", ppo_out.strip(), "", pqn_out.strip(), "```", "",
        f"Random play: Pursuit over {n1} episodes, coin game over {n2}.", "",
        "## Every command", "", "```", *log, "```", "",
    ])
    FIG.write_atomic(os.path.join(ROOT, "benches", "figures", "python_examples.md"), record.encode())
    if a.write_readme:
        if FIG.history(summary):
            sys.exit(f"the README block holds {FIG.history(summary)}; README untouched")
        readme_path = os.path.join(ROOT, "README.md")
        readme = FIG.replace_blocks(open(readme_path).read(), {"python-examples": summary})
        FIG.write_atomic(readme_path, readme.encode())


if __name__ == "__main__":
    main()

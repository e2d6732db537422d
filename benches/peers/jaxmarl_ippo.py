"""JaxMARL's own IPPO on Overcooked beside gridarena's (driver of jaxmarl_ippo.sh).

Two subcommands:

  jaxmarl   runs JaxMARL's baseline (jaxmarl_ippo/ippo_ff_overcooked.py, vendored) as its main()
            does: config from jaxmarl_ippo/ippo_ff_overcooked.yaml with the layout, the steps,
            NUM_SEEDS and SEED set here; rngs = split(PRNGKey(SEED), NUM_SEEDS);
            jax.vmap(jax.jit(make_train(config)))(rngs). It is compiled ahead of time
            (lower, compile) and then run once, each timed; the per-update metrics of every
            seed go to a JSON file.
  report    reads that file and a gridarena run directory (metrics.jsonl, plus the JSON of
            `gridarena eval` per replica), prints both sides' wall times, their ratio and final
            returns, and draws the learning curves.

Returns compared: JaxMARL's `returned_episode_returns` (LogWrapper) sums the environment's
reward only, the sparse delivery reward (20 to each cook per soup served): the shaped reward
is added to the learner's reward after the wrapper and never enters it. gridarena's
`return_mean` includes the annealed shaped reward, so its sparse return is taken as
20 x `deliveries` (the arena's deliveries per finished episode, from the counters). Both are
per-cook returns of stochastic training episodes.
"""

import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DELIVERY_REWARD = 20.0
# Updates over which the final return is averaged, per seed, on both sides.
FINAL_WINDOW = 10


def load_config(layout, steps, seeds, seed):
    import yaml

    with open(os.path.join(HERE, "jaxmarl_ippo", "ippo_ff_overcooked.yaml")) as f:
        config = yaml.safe_load(f)

    # Hydra's OmegaConf reads 5e6 and 2.5e6 as floats; PyYAML (YAML 1.1) as strings.
    def num(v):
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                return v
        return v

    config = {k: num(v) for k, v in config.items()}
    config["ENV_KWARGS"] = {"layout": layout}
    config["TOTAL_TIMESTEPS"] = float(steps)
    config["NUM_SEEDS"] = seeds
    config["SEED"] = seed
    config["WANDB_MODE"] = "disabled"
    return config


def cmd_jaxmarl(args):
    t_start = time.perf_counter()
    sys.path.insert(0, os.path.join(HERE, "jaxmarl_ippo"))
    import jax
    import numpy as np
    from jaxmarl.environments.overcooked import overcooked_layouts

    import ippo_ff_overcooked as upstream

    config = load_config(args.layout, args.steps, args.seeds, args.seed)
    printable = json.loads(json.dumps(config))
    # As upstream's main(): the layout name is replaced by its layout dict.
    config["ENV_KWARGS"]["layout"] = overcooked_layouts[args.layout]
    print("JaxMARL config:", json.dumps(printable), flush=True)

    rng = jax.random.PRNGKey(config["SEED"])
    rngs = jax.random.split(rng, config["NUM_SEEDS"])
    train_jit = jax.jit(upstream.make_train(config))
    run = jax.jit(jax.vmap(train_jit))
    t_imported = time.perf_counter()

    t0 = time.perf_counter()
    compiled = run.lower(rngs).compile()
    t1 = time.perf_counter()
    out = compiled(rngs)
    jax.block_until_ready(out)
    t2 = time.perf_counter()

    metrics = {k: np.asarray(v) for k, v in out["metrics"].items() if not isinstance(v, dict)}
    env_step = metrics["env_step"][0].astype(int).tolist()
    record = {
        "side": "jaxmarl",
        "layout": args.layout,
        "seeds": args.seeds,
        "seed": args.seed,
        "config": printable,
        "num_updates": int(config["NUM_UPDATES"]),
        "env_steps_per_seed": int(env_step[-1]),
        "jax_version": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
        "pjrt_nproc": os.environ.get("PJRT_NPROC"),
        "seconds_setup": t_imported - t_start,
        "seconds_compile": t1 - t0,
        "seconds_run": t2 - t1,
        "env_step": env_step,
        # [seed][update]: the mean over the update's steps, environments and cooks
        "returned_episode_returns": metrics["returned_episode_returns"].tolist(),
        "shaped_reward": metrics["shaped_reward"].tolist(),
        "shaped_reward_annealed": metrics["shaped_reward_annealed"].tolist(),
        "returned_episode_lengths": metrics["returned_episode_lengths"].tolist(),
    }
    with open(args.out, "w") as f:
        json.dump(record, f)
    last = metrics["returned_episode_returns"][:, -1]
    print(
        f"JaxMARL: {args.seeds} seeds x {env_step[-1]} env steps; compile {t1 - t0:.1f} s, "
        f"run {t2 - t1:.1f} s; last update's returned_episode_returns per seed: "
        + ", ".join(f"{x:.2f}" for x in last),
        flush=True,
    )


def t95(n):
    """Two-sided 95% Student-t quantile with n - 1 degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1))


def mean_ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, t95(n) * sd / math.sqrt(n)


def gridarena_curves(run_dir):
    """Per seed, per update: env steps, sparse return (20 x deliveries per episode) and the
    return with the annealed shaping (`seeds_return_per_seed`); None where no episode ended."""
    steps, sparse, shaped = [], [], []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            steps.append(m["env_steps"])
            per_seed_counters = m.get("seeds_counters_per_seed")
            per_seed_return = m.get("seeds_return_per_seed")
            if per_seed_counters is None:  # one seed: the top-level fields
                per_seed_counters = [m["counters"] if m["episodes"] else None]
                per_seed_return = [m["return_mean"]]
            sparse.append(
                [None if c is None else DELIVERY_REWARD * c["deliveries"] for c in per_seed_counters]
            )
            shaped.append(per_seed_return)
    # transpose to [seed][update]
    seeds = len(sparse[0])
    return (
        steps,
        [[u[s] for u in sparse] for s in range(seeds)],
        [[u[s] for u in shaped] for s in range(seeds)],
    )


def window_mean(xs, k):
    tail = [x for x in xs[-k:] if x is not None]
    return sum(tail) / len(tail) if tail else float("nan")


def smooth(xs, k):
    """Trailing moving average over k updates, skipping updates without an episode."""
    out = []
    for i in range(len(xs)):
        w = [x for x in xs[max(0, i - k + 1) : i + 1] if x is not None]
        out.append(sum(w) / len(w) if w else float("nan"))
    return out


def cmd_report(args):
    import numpy as np

    with open(args.jaxmarl) as f:
        jx = json.load(f)
    ga_steps, ga_sparse, ga_shaped = gridarena_curves(args.gridarena)
    evals = []
    for path in args.eval or []:
        with open(path) as f:
            evals.append(json.load(f))

    jx_ret = jx["returned_episode_returns"]
    jx_final = [window_mean(s, FINAL_WINDOW) for s in jx_ret]
    jx_last = [s[-1] for s in jx_ret]
    ga_final = [window_mean(s, FINAL_WINDOW) for s in ga_sparse]
    ga_last = [s[-1] for s in ga_sparse]
    ga_final_shaped = [window_mean(s, FINAL_WINDOW) for s in ga_shaped]

    jx_total = jx["seconds_compile"] + jx["seconds_run"]
    lines = []
    p = lines.append
    p(f"IPPO on Overcooked {jx['layout']}: {jx['seeds']} seeds, {jx['env_steps_per_seed']} env steps per seed "
      f"(JaxMARL {jx['num_updates']} updates, gridarena {len(ga_steps)} updates, "
      f"{ga_steps[-1]} env steps per seed)")
    p("wall time:")
    p(f"  JaxMARL  run only (compile excluded): {jx['seconds_run']:.1f} s")
    p(f"  JaxMARL  compile (lower + XLA compile): {jx['seconds_compile']:.1f} s")
    p(f"  JaxMARL  compile + run: {jx_total:.1f} s")
    p(f"  (JaxMARL's CPU thread pool: PJRT_NPROC={jx.get('pjrt_nproc') or 'unset (one per core)'})")
    p(f"  JaxMARL  whole process (Python start, imports, compile, run, write): {args.jaxmarl_wall:.1f} s")
    p(f"  gridarena train, whole process: {args.gridarena_wall:.1f} s")
    p(f"  ratio JaxMARL / gridarena: {jx['seconds_run'] / args.gridarena_wall:.2f}x (JaxMARL run only), "
      f"{jx_total / args.gridarena_wall:.2f}x (JaxMARL compile + run), "
      f"{args.jaxmarl_wall / args.gridarena_wall:.2f}x (both whole processes)")
    p(f"final return per cook, sparse (deliveries x 20), stochastic training episodes, the mean over the "
      f"last {FINAL_WINDOW} updates per seed; across seeds mean +- 95% t-interval:")
    m, ci = mean_ci(jx_final)
    p(f"  JaxMARL   returned_episode_returns: {m:.1f} +- {ci:.1f}  [{m - ci:.1f}, {m + ci:.1f}]  per seed: "
      + ", ".join(f"{x:.1f}" for x in jx_final))
    jm, jci = m, ci
    m, ci = mean_ci(ga_final)
    p(f"  gridarena 20 x deliveries:          {m:.1f} +- {ci:.1f}  [{m - ci:.1f}, {m + ci:.1f}]  per seed: "
      + ", ".join(f"{x:.1f}" for x in ga_final))
    gm, gci = m, ci
    where = "above" if gm > jm + jci else ("below" if gm < jm - jci else "within")
    back = "within" if gm - gci <= jm <= gm + gci else "outside"
    p(f"  gridarena's mean is {where} JaxMARL's interval; JaxMARL's mean is {back} gridarena's")
    m, ci = mean_ci(jx_last)
    p(f"  (the last update alone: JaxMARL {m:.1f} +- {ci:.1f}; "
      + "gridarena {:.1f} +- {:.1f})".format(*mean_ci([x for x in ga_last if x is not None])))
    m, ci = mean_ci(ga_final_shaped)
    p(f"  (gridarena's return_mean, shaping included at its annealed scale, same window: {m:.1f} +- {ci:.1f})")
    if evals:
        sparse = []
        for e in evals:
            sparse.append(e_deliveries(e) * DELIVERY_REWARD)
        m, ci = mean_ci(sparse)
        p(f"gridarena eval, greedy policy, {args.eval_episodes} episodes per seed, sparse return per cook: "
          f"{m:.1f} +- {ci:.1f}  per seed: " + ", ".join(f"{x:.1f}" for x in sparse)
          + " (JaxMARL's script has no greedy evaluation)")
        ref = []
        for name, get in (
            ("uniformly random actions", lambda e: e["random"]),
            ("the 'greedy cook' heuristic", lambda e: e["heuristics"][0]),
        ):
            try:
                ref.append(f"{name} {float(np.mean([get(e)['counters']['deliveries'] for e in evals])) * DELIVERY_REWARD:.1f}")
            except (KeyError, IndexError):
                pass
        if ref:
            p("  for reference, the same evaluation's sparse return of " + ", ".join(ref))
    text = "\n".join(lines)
    print(text)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text + "\n")

    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        k = args.smooth
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for name, xs, curves, colour in (
            ("JaxMARL IPPO (returned_episode_returns)", jx["env_step"], jx_ret, "tab:orange"),
            ("gridarena IPPO (20 x deliveries)", ga_steps, ga_sparse, "tab:blue"),
        ):
            ys = np.array([smooth(c, k) for c in curves])
            mean = np.nanmean(ys, axis=0)
            ax.plot(xs, mean, color=colour, label=f"{name}, mean of {len(curves)} seeds")
            ax.fill_between(xs, np.nanmin(ys, axis=0), np.nanmax(ys, axis=0), color=colour, alpha=0.2)
        horizon = float(jx["config"]["REW_SHAPING_HORIZON"])
        if horizon <= jx["env_step"][-1]:
            ax.axvline(horizon, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("env steps per seed")
        ax.set_ylabel("episode return per cook (sparse)")
        ax.set_title(f"IPPO, Overcooked {jx['layout']}, CPU: training episodes\n"
                     f"band: min-max over seeds; moving average over {k} updates"
                     + ("; dashed: shaping reaches 0" if horizon <= jx["env_step"][-1] else ""),
                     fontsize=9)
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.figure, dpi=120)
        print(f"figure: {args.figure}")


def e_deliveries(e):
    """Deliveries per episode of the greedy policy from `gridarena eval --json`."""
    for key in ("trained", "greedy", "policy"):
        if key in e and isinstance(e[key], dict):
            c = e[key].get("counters", {})
            if "deliveries" in c:
                return float(c["deliveries"])
    raise KeyError(f"no deliveries counter in the eval JSON: {sorted(e)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("jaxmarl")
    a.add_argument("--layout", default="cramped_room")
    a.add_argument("--steps", type=int, required=True)
    a.add_argument("--seeds", type=int, required=True)
    a.add_argument("--seed", type=int, default=30, help="upstream config's SEED")
    a.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--jaxmarl", required=True)
    r.add_argument("--jaxmarl-wall", type=float, required=True)
    r.add_argument("--gridarena", required=True, help="run directory")
    r.add_argument("--gridarena-wall", type=float, required=True)
    r.add_argument("--eval", nargs="*", help="gridarena eval --json output per replica")
    r.add_argument("--eval-episodes", type=int, default=100)
    r.add_argument("--smooth", type=int, default=10)
    r.add_argument("--figure")
    r.add_argument("--summary")
    args = ap.parse_args()
    {"jaxmarl": cmd_jaxmarl, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()

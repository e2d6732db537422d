"""A random-action rollout on a batched gridarena VecEnv: throughput and episode statistics.

Shows the VecEnv loop: `VecEnv(scenario, num_arenas)` steps B arenas together; `.obs` is a
read-only `[B, N, O]` uint8 view of the engine's own buffer (rewritten in place by every step,
so copy it if you keep it); `.step(actions [B, N])` returns views of the rewards `[B, N]` and the
terminated / truncated flags `[B]`; arenas reset automatically in the step that ends their
episode, and `.episodes()` hands back the episodes that finished since the last call (length,
returns per slot, counters such as Pursuit's `catches`).

With `--gif PATH` it also records `render()` frames of arena 0 (an `[H, W, 3]` uint8 image
each) for the first `--gif-frames` steps and writes them as a GIF with Pillow (which imageio
also writes GIFs with); without Pillow it says so and skips the GIF.

Run (from the repository root, with the gridarena package installed):

    python examples/python/random_rollout.py                    # pursuit, 64 arenas, 2000 steps
    python examples/python/random_rollout.py --scenario coin_game --arenas 1024 --steps 500
    python examples/python/random_rollout.py --steps 200 --gif pursuit.gif
"""

import argparse
import time

import numpy as np

import gridarena


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="pursuit",
                   help=f"shipped name ({', '.join(gridarena.scenarios())}) or a .ron path")
    p.add_argument("--arenas", type=int, default=64, help="arenas stepped together")
    p.add_argument("--steps", type=int, default=2000, help="batch steps (each steps every arena)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="engine threads (default: all cores)")
    p.add_argument("--gif", metavar="PATH", default=None, help="write a GIF of arena 0 here")
    p.add_argument("--gif-frames", type=int, default=100, help="frames in the GIF (first steps)")
    p.add_argument("--cell", type=int, default=12, help="pixels per map cell in the GIF")
    return p.parse_args()


def gif_writer():
    """A function (path, frames, fps) writing a GIF with Pillow, or None without Pillow.

    Pillow only: imageio writes GIFs through Pillow too (without it `imageio.mimsave(...gif)`
    fails), so an installed imageio always brings what this needs."""
    try:
        from PIL import Image
    except ImportError:
        return None

    def write(path, frames, fps):
        images = [Image.fromarray(f) for f in frames]
        images[0].save(path, save_all=True, append_images=images[1:],
                       duration=int(1000 / fps), loop=0)

    return write


def main():
    args = parse_args()
    env = gridarena.VecEnv(args.scenario, args.arenas, seed=args.seed, threads=args.threads)
    B, N, A = env.num_arenas, env.num_agents, env.num_actions
    print(f"scenario {args.scenario}: {B} arenas x {N} learning agents, obs {env.obs_len} bytes, "
          f"{A} actions; counters {env.counter_names}")
    obs = env.obs  # a view: it shows the current step's observations after every step()
    print(f"obs: {obs.dtype} {obs.shape} (read-only view: writeable={obs.flags.writeable}), "
          f"{np.count_nonzero(obs) / obs.size:.1%} non-zero")

    write_gif = None
    frames = []
    if args.gif:
        write_gif = gif_writer()
        if write_gif is None:
            print(f"--gif {args.gif}: skipped, Pillow (PIL) is not installed "
                  "(pip install pillow)")
        else:
            frames.append(env.render(0, args.cell).copy())

    rng = np.random.default_rng(args.seed)
    # Draw all actions up front so the timed loop is the engine (plus the numpy call overhead).
    actions = rng.integers(0, A, size=(args.steps, B, N), dtype=np.int64)
    reward_sum = np.zeros(N)
    start = time.perf_counter()
    for t in range(args.steps):
        rewards, terminated, truncated = env.step(actions[t])
        reward_sum += rewards.sum(0)  # rewards is a view of this step only: use it now
        if write_gif is not None and len(frames) < args.gif_frames:
            frames.append(env.render(0, args.cell).copy())
    elapsed = time.perf_counter() - start

    env_steps = args.steps * B
    rendered = " (including the GIF's render() calls)" if frames else ""
    print(f"{args.steps} steps x {B} arenas = {env_steps} env steps in {elapsed:.2f} s: "
          f"{env_steps / elapsed:,.0f} env steps/s, {env_steps * N / elapsed:,.0f} agent steps/s"
          f"{rendered}")
    print(f"mean reward per agent per step: {reward_sum.sum() / (env_steps * N):+.4f}")

    episodes = env.episodes()
    if episodes:
        returns = np.array([ep["returns"][:N] for ep in episodes])  # learners first
        lengths = np.array([ep["length"] for ep in episodes])
        ended = sum(ep["terminated"] for ep in episodes)
        print(f"finished episodes: {len(episodes)} ({ended} ended by the rules, "
              f"{len(episodes) - ended} by the step limit), mean length {lengths.mean():.1f}")
        print(f"mean return per agent: {returns.mean():+.3f}  (per slot: "
              + " ".join(f"{r:+.2f}" for r in returns.mean(0)) + ")")
        for name in env.counter_names:
            counts = np.array([ep["counters"][name] for ep in episodes])
            print(f"mean {name} per episode: {counts.mean():.2f}")
    else:
        print("finished episodes: 0 (run more --steps to finish one; "
              "an episode is at most the scenario's max_steps)")

    if write_gif is not None:
        write_gif(args.gif, frames, fps=10)
        h, w, _ = frames[0].shape
        print(f"wrote {args.gif}: {len(frames)} frames of {w}x{h} (arena 0)")


if __name__ == "__main__":
    main()

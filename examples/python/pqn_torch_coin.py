"""PQN (parallel Q-learning, Q(lambda) targets, no replay, no target network) in PyTorch on
gridarena's coin game through the Gymnasium vector API. A CleanRL-style single file (after
CleanRL's `pqn.py`).

    pip install torch ./python          # then
    python examples/python/pqn_torch_coin.py --total-steps 2000000

Both players of every arena are sub-environments of `gridarena.GridarenaVectorEnv` (B arenas x 2
rows) and share one Q-network: a 2 x 128 MLP with LayerNorm, as PQN prescribes and as
gridarena's own `assets/runs/pqn_coin.ron` (whose values are the defaults here) trains it.
Each update collects `--rollout` steps of every row with epsilon-greedy actions, turns them into
Q(lambda) targets backwards over the rollout, and regresses the taken actions' Q-values onto
them for `--epochs` passes of `--minibatches` minibatches:

    G_t = r_t + gamma * (1 - terminated_t) * B_t
    B_t = max_a Q(final_obs_t, a)                          if step t truncated the episode
          (1 - lambda) max_a Q(s_{t+1}, a) + lambda G_{t+1}   otherwise
    G_T = max_a Q(s_T, a)

The env restarts an arena in the step that ends its episode: the observation that ended it is
`infos["final_obs"]`, which a truncation bootstraps from.

The coin game's return is a poor yardstick for selfish learners (a stolen coin costs its owner
2, so grabbing every coin nets about 0): the log shows coins picked up per episode, from the
engine's episode log (`env.episodes()`), beside the return.

Threads: as in ppo_torch_pursuit.py, `OMP_NUM_THREADS` is set before torch loads and the
engine and torch take turns on every core (docs/python.md).
"""

import argparse
import json
import os
import sys
import time


def _threads_arg():
    for i, a in enumerate(sys.argv):
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return None


os.environ.setdefault("OMP_NUM_THREADS", _threads_arg() or str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import gridarena  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="coin_game")
    p.add_argument("--total-steps", type=int, default=2_000_000, help="arena steps x players")
    p.add_argument("--arenas", type=int, default=256)
    p.add_argument("--rollout", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.65)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--eps-start", type=float, default=1.0)
    p.add_argument("--eps-finish", type=float, default=0.05)
    p.add_argument("--eps-fraction", type=float, default=0.1)
    p.add_argument("--max-grad-norm", type=float, default=10.0)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=None, help="env and torch threads (default: all cores)")
    p.add_argument("--max-updates", type=int, default=None, help="stop after this many updates (benchmarks)")
    p.add_argument("--log", default=None, help="write one JSON line per update here")
    return p.parse_args()


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.LayerNorm(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x):
        return self.net(x)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    env = gridarena.GridarenaVectorEnv(args.scenario, args.arenas, seed=args.seed, threads=args.threads)
    num_envs, players = env.num_envs, env.agents_per_arena
    obs_dim = env.single_observation_space.shape[0]
    n_actions = env.single_action_space.n
    q = QNetwork(obs_dim, n_actions, args.hidden)
    optim = torch.optim.RAdam(q.parameters(), lr=args.lr)

    T, batch = args.rollout, args.rollout * num_envs
    minibatch = batch // args.minibatches
    updates = max(1, args.total_steps // batch)
    if args.max_updates:
        updates = min(updates, args.max_updates)
    obs_buf = torch.zeros((T + 1, num_envs, obs_dim))
    act_buf = torch.zeros((T, num_envs), dtype=torch.long)
    rew_buf, term_buf, trunc_buf = (torch.zeros((T, num_envs)) for _ in range(3))
    final_q = torch.zeros((T, num_envs))  # max_a Q(final_obs), where a step truncated

    def observe(o):
        # A zero-copy view of the engine's buffer (DLPack); .float() copies it.
        return torch.from_dlpack(o).float()

    obs, _ = env.reset(seed=args.seed)
    obs_buf[0] = observe(obs)
    env.episodes()
    coins, returns = [], []
    log = open(args.log, "w") if args.log else None
    start, env_time = time.perf_counter(), 0.0
    for update in range(1, updates + 1):
        frac = min(1.0, (update - 1) / max(1.0, args.eps_fraction * updates))
        eps = args.eps_start + (args.eps_finish - args.eps_start) * frac
        optim.param_groups[0]["lr"] = args.lr * (1.0 - (update - 1) / updates)
        for t in range(T):
            with torch.no_grad():
                greedy = q(obs_buf[t]).argmax(-1).numpy()
            explore = rng.random(num_envs) < eps
            action = np.where(explore, rng.integers(0, n_actions, num_envs), greedy)
            act_buf[t] = torch.from_numpy(action)
            tick = time.perf_counter()
            obs, r, term, trunc, infos = env.step(action)
            env_time += time.perf_counter() - tick
            obs_buf[t + 1] = observe(obs)
            rew_buf[t] = torch.from_dlpack(r)
            term_buf[t] = torch.from_numpy(term.astype(np.float32))
            trunc_buf[t] = torch.from_numpy((trunc & ~term).astype(np.float32))
            if trunc.any():
                with torch.no_grad():
                    final_q[t] = q(observe(infos["final_obs"])).max(-1).values * trunc_buf[t]
        for e in env.episodes():
            coins.append(sum(e["counters"].values()))
            returns.extend(e["returns"][:players])

        with torch.no_grad():
            next_max = q(obs_buf.reshape(-1, obs_dim)).max(-1).values.reshape(T + 1, num_envs)
            targets = torch.zeros((T, num_envs))
            g = next_max[T]
            for t in reversed(range(T)):
                boot = (1 - args.lam) * next_max[t + 1] + args.lam * g
                boot = torch.where(trunc_buf[t] > 0, final_q[t], boot)
                g = rew_buf[t] + args.gamma * (1.0 - term_buf[t]) * boot
                targets[t] = g

        b_obs, b_act, b_tgt = obs_buf[:T].reshape(batch, obs_dim), act_buf.reshape(batch), targets.reshape(batch)
        for _ in range(args.epochs):
            order = torch.randperm(batch)
            for s in range(0, batch, minibatch):
                mb = order[s : s + minibatch]
                chosen = q(b_obs[mb]).gather(1, b_act[mb, None]).squeeze(1)
                loss = 0.5 * ((chosen - b_tgt[mb]) ** 2).mean()
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(q.parameters(), args.max_grad_norm)
                optim.step()
        obs_buf[0] = obs_buf[T]

        steps, wall = update * batch, time.perf_counter() - start
        recent_coins = float(np.mean(coins[-args.arenas:])) if coins else float("nan")
        recent_ret = float(np.mean(returns[-num_envs:])) if returns else float("nan")
        row = {
            "update": update, "agent_steps": steps, "arena_steps": steps // players, "eps": eps,
            "coins_per_episode": recent_coins, "episode_return": recent_ret,
            "agent_steps_per_s": steps / wall, "env_share": env_time / wall, "wall": wall,
        }
        if log:
            log.write(json.dumps(row) + "\n")
            log.flush()
        if update == 1 or update % 20 == 0 or update == updates:
            print(
                f"update {update}/{updates}  steps {steps:,}  eps {eps:.2f}  coins/episode "
                f"{recent_coins:5.1f}  return/player {recent_ret:+.2f}  "
                f"{steps / wall:,.0f} agent-steps/s  (env {100 * env_time / wall:.0f}%)",
                flush=True,
            )
    wall = time.perf_counter() - start
    print(
        f"done: {updates * batch:,} agent steps in {wall:.1f} s, {updates * batch / wall:,.0f} "
        f"agent-steps/s, coins per episode {recent_coins:.1f}, return per player {recent_ret:+.2f}"
    )
    env.close()


if __name__ == "__main__":
    main()

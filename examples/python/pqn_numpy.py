"""PQN (parallel Q-learning with Q(lambda) targets) on a gridarena VecEnv, in plain numpy.

A CleanRL-style single file: no torch, no replay buffer, no target network. B arenas step
together; one small MLP (one hidden ReLU layer), shared by every agent (the agent's slot is
appended to its observation as a one-hot), picks epsilon-greedy actions for the whole batch.
Every update collects a rollout of T steps, turns it into Q(lambda) targets and regresses the
Q-values of the taken actions onto them for a few epochs of minibatches with a hand-written Adam.

Targets (the same rule as the engine's own trainer, `src/train/kit/returns.rs`), backwards over the
rollout, per row (one agent in one arena):

    G_t = r_t + gamma * (1 - terminated_t) * B_t
    B_t = max_a Q(final_obs_t, a)                       if step t truncated the episode
          (1 - lambda) max_a Q(s_{t+1}, a) + lambda G_{t+1}   otherwise
    G_T = max_a Q(s_T, a)

A termination cuts the return (zero bootstrap); a truncation (time limit) bootstraps from
`VecEnv.final_obs`, the observation that ended the episode: the arena has already auto-reset,
so `VecEnv.obs` belongs to the next episode there.

Observations are the engine's u8 rows, scaled to [0, 1] as `min(obs, scale) / scale`
(`--obs-scale`, default 2: a pursuit_3 cell counts the pursuers on it, at most 2; the coin
game's cells are 0/1 bits, so pass `--obs-scale 1` there).

Default task: `pursuit_3` (2 pursuers, 1 evader on a 7x7 map, 50-step episodes, a catch ends
the episode) with the evader random-walking instead of learning (`--evader random_walk`, a
`roles=[...]` override of the scenario; `--evader learner` keeps the shipped learning evader).
The pursuers share a reward (each gets the mean of the two): a catch pays 1 to each pursuer on
the evader's cell, and every step costs 0.01. So a return near 1 means a quick catch by both
pursuers at once; a uniform-random policy scores about +0.03.

Run (from the repository root, with the gridarena package installed):

    python examples/python/pqn_numpy.py                  # 3000 updates, 30-35 s on 2 cores
    python examples/python/pqn_numpy.py --updates 20 --log-every 10   # a smoke run
    python examples/python/pqn_numpy.py --scenario coin_game --obs-scale 1

Measured on 2 CPU cores (numpy 2.4, seed 0), the default command
`python examples/python/pqn_numpy.py` (3000 updates x 64 arenas x 16 steps = 3.07M env steps,
30-35 s, 90k-110k env steps/s including learning; two runs gave identical numbers). Each log
line averages the episodes that finished in its 100 updates (mean return per pursuer, catches
per episode):

    update   100  eps 0.90  mean_return +0.063  catches 0.69   (~random: a uniform-random
                                                                 policy gets +0.033, 0.66 catches,
                                                                 30-step episodes)
    update   500  eps 0.47  mean_return +0.355  catches 0.96
    update  1000  eps 0.05  mean_return +0.601  catches 0.97
    update  2000  eps 0.05  mean_return +0.670  catches 0.98
    update  3000  eps 0.05  mean_return +0.679  catches 0.98   (episodes ~14 steps long)
    done: mean return per agent +0.063 in the first log window, +0.679 in the last (29.2 s)

It learns clearly here (0.06 -> 0.68: the evader is caught in 98% of the episodes instead of
66%, in about half the steps, mostly by both pursuers together), but not everywhere, and the
return is not always the right yardstick:

- `--scenario coin_game --obs-scale 1` (same 3000 updates): coins picked up per episode go from
  2.9 (random) to 19.1 (both players grab every coin, near the nearest-coin heuristic's 21),
  yet the mean return stays at 0.00 +- 0.01 from start to end: with one network shared by both
  players they grab each other's coins as often as their own, and the -2 for a stolen coin
  cancels the +1s (the README's nearest-coin heuristic gets -0.01 for the same reason).
- `--evader learner` (pursuit_3 as shipped): no visible progress in 3000 updates (windows of 1000
  updates: pursuer return +0.10, +0.06, +0.07; evader -0.46, -0.37, -0.39; catches 0.72, 0.67,
  0.69): both sides learn against each other through one shared network, and the mean over all
  three agents says little.
"""

import argparse
import os
import time

# One BLAS thread: the matrices here are tiny, and OpenBLAS's worker threads fighting the
# engine's own (rayon) threads for the cores made a run ~25x slower on 2 cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import gridarena  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="pursuit_3", help="shipped name or .ron path")
    p.add_argument("--arenas", type=int, default=64, help="B: arenas stepped together")
    p.add_argument("--rollout", type=int, default=16, help="T: steps per arena per update")
    p.add_argument("--updates", type=int, default=3000, help="number of updates (the run length)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.65, help="lambda of the Q(lambda) targets")
    p.add_argument("--eps-start", type=float, default=1.0)
    p.add_argument("--eps-end", type=float, default=0.05)
    p.add_argument("--eps-fraction", type=float, default=0.3,
                   help="share of the updates over which epsilon decays linearly")
    p.add_argument("--max-grad-norm", type=float, default=10.0)
    p.add_argument("--obs-scale", type=float, default=2.0,
                   help="observation bytes are clipped to this and divided by it")
    p.add_argument("--log-every", type=int, default=100, help="print a log line every N updates")
    p.add_argument("--evader", choices=["random_walk", "learner"], default="random_walk",
                   help="pursuit_3 only: the evader random-walks (an override of the scenario's "
                        "roles, the default) or learns as shipped")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="engine threads (default: all cores)")
    return p.parse_args()


class MLP:
    """x [R, D] -> ReLU(x W1 + b1) W2 + b2 = Q [R, A], with Adam state and manual backprop."""

    def __init__(self, d_in, hidden, n_out, rng, lr):
        # PyTorch's default Linear init: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
        def lin(fan_in, fan_out):
            k = 1.0 / np.sqrt(fan_in)
            w = rng.uniform(-k, k, (fan_in, fan_out)).astype(np.float32)
            b = rng.uniform(-k, k, fan_out).astype(np.float32)
            return w, b

        w1, b1 = lin(d_in, hidden)
        w2, b2 = lin(hidden, n_out)
        self.params = [w1, b1, w2, b2]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        self.lr, self.b1, self.b2, self.eps = lr, 0.9, 0.999, 1e-8

    def forward(self, x):
        w1, b1, w2, b2 = self.params
        h = np.maximum(x @ w1 + b1, 0.0)
        return h @ w2 + b2, h

    def grads(self, x, h, dq):
        """Gradients of the loss for dloss/dQ = dq [R, A] (h from forward(x))."""
        _, _, w2, _ = self.params
        gw2 = h.T @ dq
        gb2 = dq.sum(0)
        dh = (dq @ w2.T) * (h > 0)
        gw1 = x.T @ dh
        gb1 = dh.sum(0)
        return [gw1, gb1, gw2, gb2]

    def adam_step(self, grads, max_norm):
        norm = float(np.sqrt(sum(float((g * g).sum()) for g in grads)))
        scale = max_norm / (norm + 1e-6) if norm > max_norm else 1.0
        self.t += 1
        c1 = 1.0 - self.b1**self.t
        c2 = 1.0 - self.b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            g = g * scale
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * g * g
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + self.eps)
        return norm


def main():
    args = parse_args()
    rng = np.random.default_rng(args.seed)
    overrides = {}
    if args.scenario == "pursuit_3" and args.evader == "random_walk":
        overrides["roles"] = [
            {"kind": "pursuer", "count": 2, "control": "learner"},
            {"kind": "evader", "count": 1, "control": "random_walk"},
        ]
    env = gridarena.VecEnv(args.scenario, args.arenas, seed=args.seed, threads=args.threads,
                           **overrides)
    B, N, O, A = env.num_arenas, env.num_agents, env.obs_len, env.num_actions
    T, R = args.rollout, args.arenas * env.num_agents  # R: rows (agent-arenas) per step
    eye = np.eye(N, dtype=np.float32)

    def inputs(obs_u8):
        """[k, N, O] u8 observations -> [k * N, O + N] float32 inputs (row r is agent r % N)."""
        x = np.minimum(obs_u8.reshape(-1, O), args.obs_scale).astype(np.float32)
        x /= args.obs_scale
        ids = np.tile(eye, (x.shape[0] // N, 1))
        return np.concatenate([x, ids], axis=1)

    net = MLP(O + N, args.hidden, A, rng, args.lr)
    print(f"scenario {args.scenario}: {B} arenas x {N} agents, obs {O} bytes, {A} actions; "
          f"MLP {O + N}-{args.hidden}-{A} shared by the agents, "
          f"{T * B} env steps per update")

    obs_buf = np.zeros((T, R, O + N), np.float32)
    act_buf = np.zeros((T, R), np.int64)
    rew_buf = np.zeros((T, R), np.float32)
    term_buf = np.zeros((T, R), np.float32)
    trunc_buf = np.zeros((T, R), np.float32)
    qmax_buf = np.zeros((T + 1, R), np.float32)
    finalq_buf = np.zeros((T, R), np.float32)
    returns = np.zeros((T, R), np.float32)

    decay_updates = max(1, int(args.eps_fraction * args.updates))
    recent_returns, recent_counters = [], {k: [] for k in env.counter_names}
    first_window = None
    start = time.time()
    env_steps = 0
    for update in range(1, args.updates + 1):
        frac = min(1.0, (update - 1) / decay_updates)
        eps = args.eps_start + frac * (args.eps_end - args.eps_start)

        # Rollout: T steps of B arenas, epsilon-greedy on the whole batch.
        for t in range(T):
            x = inputs(env.obs)
            q, _ = net.forward(x)
            qmax_buf[t] = q.max(1)
            greedy = q.argmax(1)
            explore = rng.random(R) < eps
            actions = np.where(explore, rng.integers(0, A, R), greedy)
            rewards, terminated, truncated = env.step(actions.reshape(B, N))
            obs_buf[t] = x
            act_buf[t] = actions
            rew_buf[t] = rewards.reshape(R)
            term_buf[t] = np.repeat(terminated, N)
            trunc_buf[t] = np.repeat(truncated & (terminated == 0), N)
            finalq_buf[t] = 0.0
            if truncated.any():
                ended = np.flatnonzero(truncated & (terminated == 0))
                if ended.size:
                    fq, _ = net.forward(inputs(env.final_obs[ended]))
                    rows = (ended[:, None] * N + np.arange(N)).reshape(-1)
                    finalq_buf[t, rows] = fq.max(1)
        env_steps += T * B
        q, _ = net.forward(inputs(env.obs))
        qmax_buf[T] = q.max(1)

        # Q(lambda) targets, backwards over the rollout.
        nxt = qmax_buf[T]
        for t in reversed(range(T)):
            boot = np.where(trunc_buf[t] > 0, finalq_buf[t],
                            (1 - args.lam) * qmax_buf[t + 1] + args.lam * nxt)
            nxt = rew_buf[t] + args.gamma * (1 - term_buf[t]) * boot
            returns[t] = nxt

        # Regress Q(s_t, a_t) onto G_t: E epochs x M minibatches, loss 0.5 * mean (Q - G)^2.
        xs, acts, targets = obs_buf.reshape(T * R, -1), act_buf.reshape(-1), returns.reshape(-1)
        losses = []
        for _ in range(args.epochs):
            perm = rng.permutation(T * R)
            for mb in np.array_split(perm, args.minibatches):
                q, h = net.forward(xs[mb])
                q_a = q[np.arange(mb.size), acts[mb]]
                err = q_a - targets[mb]
                losses.append(0.5 * float((err * err).mean()))
                dq = np.zeros_like(q)
                dq[np.arange(mb.size), acts[mb]] = err / mb.size
                net.adam_step(net.grads(xs[mb], h, dq), args.max_grad_norm)

        # Finished episodes: mean return per learning agent, and the scenario's counters.
        for ep in env.episodes():
            recent_returns.append(np.asarray(ep["returns"][:N], dtype=np.float64))
            for k, c in ep["counters"].items():
                recent_counters[k].append(c)

        if update % args.log_every == 0 or update == args.updates:
            per_agent = np.mean(recent_returns, axis=0) if recent_returns else np.full(N, np.nan)
            mean_ret = float(per_agent.mean())
            slots = ""
            if N <= 4:
                slots = "  per_agent [" + " ".join(f"{r:+.2f}" for r in per_agent) + "]"
            counters = " ".join(f"{k} {np.mean(v):.2f}" for k, v in recent_counters.items() if v)
            if first_window is None:
                first_window = mean_ret
            elapsed = time.time() - start
            print(f"update {update:5d}  env_steps {env_steps:9d}  eps {eps:.2f}  "
                  f"loss {np.mean(losses):.4f}  episodes {len(recent_returns):5d}  "
                  f"mean_return {mean_ret:+.3f}{slots}  {counters}  "
                  f"({env_steps / elapsed:,.0f} env steps/s)", flush=True)
            recent_returns.clear()
            for v in recent_counters.values():
                v.clear()

    print(f"done: mean return per agent {first_window:+.3f} in the first log window, "
          f"{mean_ret:+.3f} in the last ({time.time() - start:.1f} s)")


if __name__ == "__main__":
    main()

"""PPO with parameters shared by every pursuer, in PyTorch, on gridarena's Pursuit through the
Gymnasium vector API. A CleanRL-style single file (after CleanRL's `ppo.py`).

    pip install torch ./python          # then
    python examples/python/ppo_torch_pursuit.py --total-steps 2000000

Every pursuer of every arena is one sub-environment of `gridarena.GridarenaVectorEnv`: B arenas
x 8 pursuers = `num_envs` rows, one actor and one critic (2 x 128 tanh MLPs) for all of them.
The hyperparameters default to gridarena's own `assets/runs/ippo_pursuit.ron` (JaxMARL's IPPO
values), so the Rust learner can be timed on the same work (benches/peers/python_examples.sh).

`--env pettingzoo` steps PettingZoo's own `pursuit_v5` instead, vectorised by SuperSuit
(`concat_vec_envs_v1`, one process): the same rows, the same network, for a throughput
comparison. Both present the pursuer's 7x7x3 window in the same `[y, x, channel]` order.

Threads: the env steps, then the network learns; they never run at once. Give each all the
cores (`--threads`, default: every core) but only one pool at a time: torch's OpenMP workers
and the engine's rayon workers each spin for a while after their work, so this script sets
`OMP_NUM_THREADS` before torch is imported and keeps torch's inter-op pool at one thread.
docs/python.md explains the rule.

Episodes: Pursuit truncates at 500 steps; as in CleanRL's ppo.py, a truncation ends the GAE
recursion like a termination (no bootstrap from the final observation).
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


# Before torch (and its OpenMP runtime) loads: see the docstring.
os.environ.setdefault("OMP_NUM_THREADS", _threads_arg() or str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributions import Categorical  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", choices=["gridarena", "pettingzoo"], default="gridarena")
    p.add_argument("--scenario", default="pursuit", help="gridarena scenario (pursuit_pz: PettingZoo's move order)")
    p.add_argument("--total-steps", type=int, default=2_000_000, help="arena steps x pursuers")
    p.add_argument("--arenas", type=int, default=256)
    p.add_argument("--rollout", type=int, default=32)
    p.add_argument("--lr", type=float, default=2.5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=None, help="env and torch threads (default: all cores)")
    p.add_argument("--max-updates", type=int, default=None, help="stop after this many updates (benchmarks)")
    p.add_argument("--log", default=None, help="write one JSON line per update here")
    return p.parse_args()


def make_env(args):
    """A Gymnasium vector env of `arenas x 8` pursuer rows, and the number of pursuers."""
    if args.env == "gridarena":
        import gridarena

        env = gridarena.GridarenaVectorEnv(args.scenario, args.arenas, seed=args.seed, threads=args.threads)
        return env, env.agents_per_arena
    import supersuit as ss
    from pettingzoo.sisl import pursuit_v5

    pz = pursuit_v5.parallel_env()
    n = len(pz.possible_agents)
    vec = ss.pettingzoo_env_to_vec_env_v1(pz)
    return ss.concat_vec_envs_v1(vec, args.arenas, num_cpus=0, base_class="gymnasium"), n


def layer(i, o, std=np.sqrt(2)):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden):
        super().__init__()
        self.critic = nn.Sequential(
            layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, 1, 1.0)
        )
        self.actor = nn.Sequential(
            layer(obs_dim, hidden), nn.Tanh(), layer(hidden, hidden), nn.Tanh(), layer(hidden, n_actions, 0.01)
        )

    def value(self, x):
        return self.critic(x).squeeze(-1)

    def act(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    env, pursuers = make_env(args)
    num_envs = env.num_envs
    # SuperSuit's vector envs name the single spaces observation_space and action_space.
    obs_dim = int(np.prod(getattr(env, "single_observation_space", env.observation_space).shape))
    n_actions = getattr(env, "single_action_space", env.action_space).n
    agent = Agent(obs_dim, n_actions, args.hidden)
    optim = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    T, batch = args.rollout, args.rollout * num_envs
    minibatch = batch // args.minibatches
    updates = max(1, args.total_steps // batch)
    if args.max_updates:
        updates = min(updates, args.max_updates)
    obs_buf = torch.zeros((T, num_envs, obs_dim))
    act_buf = torch.zeros((T, num_envs), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((T, num_envs)) for _ in range(4))

    def observe(o):
        # gridarena: a zero-copy view of the engine.s buffer (DLPack); .float() copies it.
        return torch.from_dlpack(np.ascontiguousarray(o)).reshape(num_envs, obs_dim).float()

    next_obs = observe(env.reset(seed=args.seed)[0])
    next_done = torch.zeros(num_envs)
    running = np.zeros(num_envs)
    finished = []
    log = open(args.log, "w") if args.log else None
    start = time.perf_counter()
    env_time = 0.0
    for update in range(1, updates + 1):
        optim.param_groups[0]["lr"] = args.lr * (1.0 - (update - 1) / updates)
        for t in range(T):
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            tick = time.perf_counter()
            o, r, term, trunc, _ = env.step(action.numpy())
            env_time += time.perf_counter() - tick
            done = np.logical_or(term, trunc)
            rew_buf[t] = torch.as_tensor(np.asarray(r, dtype=np.float32))
            next_obs, next_done = observe(o), torch.as_tensor(done, dtype=torch.float32)
            running += np.asarray(r)
            if done.any():
                finished.extend(running[done].tolist())
                running[done] = 0.0

        # GAE over the rollout (dones mark the first step of the next episode, as in CleanRL).
        with torch.no_grad():
            next_value = agent.value(next_obs)
            adv = torch.zeros((T, num_envs))
            last = torch.zeros(num_envs)
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else done_buf[t + 1])
                nv = next_value if t == T - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * nv * nonterminal - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            returns = adv + val_buf

        b_obs, b_act = obs_buf.reshape(batch, obs_dim), act_buf.reshape(batch)
        b_logp, b_adv = logp_buf.reshape(batch), adv.reshape(batch)
        b_ret, b_val = returns.reshape(batch), val_buf.reshape(batch)
        for _ in range(args.epochs):
            order = torch.randperm(batch)
            for s in range(0, batch, minibatch):
                mb = order[s : s + minibatch]
                _, logp, entropy, value = agent.act(b_obs[mb], b_act[mb])
                ratio = (logp - b_logp[mb]).exp()
                a = b_adv[mb]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip, 1 + args.clip)).mean()
                v_clip = b_val[mb] + (value - b_val[mb]).clamp(-args.clip, args.clip)
                v_loss = 0.5 * torch.max((value - b_ret[mb]) ** 2, (v_clip - b_ret[mb]) ** 2).mean()
                loss = pg - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optim.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optim.step()

        steps = update * batch
        wall = time.perf_counter() - start
        recent = float(np.mean(finished[-num_envs:])) if finished else float("nan")
        row = {
            "update": update,
            "agent_steps": steps,
            "arena_steps": steps // pursuers,
            "episode_return": recent,
            "agent_steps_per_s": steps / wall,
            "wall": wall,
            "env_share": env_time / wall,
        }
        if log:
            log.write(json.dumps(row) + "\n")
            log.flush()
        if update == 1 or update % 10 == 0 or update == updates:
            print(
                f"update {update}/{updates}  steps {steps:,}  return/pursuer {recent:7.2f}  "
                f"{steps / wall:,.0f} agent-steps/s  (env {100 * env_time / wall:.0f}%)",
                flush=True,
            )
    print(
        f"done: {updates * batch:,} agent steps in {time.perf_counter() - start:.1f} s, "
        f"{updates * batch / (time.perf_counter() - start):,.0f} agent-steps/s, "
        f"last return per pursuer {recent:.2f}"
    )
    env.close()


if __name__ == "__main__":
    main()

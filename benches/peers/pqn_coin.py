"""PQN on JaxMARL's coin game, purejaxql-style, timed in env steps/s.

The configuration is gridarena's assets/runs/pqn_coin.ron with the defaults of
src/train/config/sections.rs: 256 arenas x 32 steps per rollout, 2 epochs x 4 minibatches, one
38-128-128-5 LayerNorm MLP shared by both players (the observation plus the player's one-hot
index), RAdam after global-norm clipping at 10, lr 5e-4 decaying linearly to 0, gamma 0.99,
lambda 0.65, epsilon 1.0 -> 0.05 over the first 10% of the updates, loss 0.5 (Q(s,a) - G)^2.

The structure follows purejaxql's pqn_minatar.py (Gallici et al.): vectorised environments,
epsilon-greedy acting from the current network, Q-values stored while acting, lambda-returns by
a reverse scan, `epochs` x `minibatches` shuffled updates, the whole update jitted. Here a
whole block of updates is one `lax.scan` under one `jax.jit`: the first call compiles and warms
up, the second is timed (until its results are ready).

Prints one line `env steps/s: N` (env steps = environments x steps, as gridarena counts them).
"""

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
from flax.training.train_state import TrainState
from jaxmarl.environments.coin_game import CoinGame

# ------------------------------------------------------------------------------------------
# Configuration (gridarena's assets/runs/pqn_coin.ron + src/train/config/sections.rs defaults)
# ------------------------------------------------------------------------------------------

CONFIG = {
    "NUM_ENVS": 256,  # arenas
    "NUM_STEPS": 32,  # rollout
    "NUM_EPOCHS": 2,  # epochs
    "NUM_MINIBATCHES": 4,  # minibatches
    "TOTAL_TIMESTEPS": 2_000_000,  # total_steps (sets the schedules' lengths)
    "HIDDEN": 128,
    "LAYERS": 2,
    "LR": 5e-4,
    "LR_LINEAR_DECAY": True,
    "GAMMA": 0.99,
    "LAMBDA": 0.65,
    "EPS_START": 1.0,
    "EPS_FINISH": 0.05,
    "EPS_DECAY": 0.1,  # eps_fraction
    "MAX_GRAD_NORM": 10.0,
    "EPISODE_STEPS": 16,  # the scenario's max_steps
}


# ------------------------------------------------------------------------------------------
# Network
# ------------------------------------------------------------------------------------------


class QNetwork(nn.Module):
    """`layers` x (Dense -> LayerNorm -> ReLU), then a Dense head (purejaxql's QNetwork)."""

    action_dim: int
    hidden_size: int
    num_layers: int

    @nn.compact
    def __call__(self, x):
        for _ in range(self.num_layers):
            x = nn.Dense(self.hidden_size)(x)
            x = nn.LayerNorm()(x)
            x = nn.relu(x)
        return nn.Dense(self.action_dim)(x)


def eps_greedy_exploration(rng, q_vals, eps):
    """purejaxql's epsilon-greedy: a uniform action with probability eps, else the argmax."""
    rng_a, rng_e = jax.random.split(rng)
    greedy = jnp.argmax(q_vals, axis=-1)
    random = jax.random.randint(rng_a, greedy.shape, 0, q_vals.shape[-1])
    return jnp.where(jax.random.uniform(rng_e, greedy.shape) < eps, random, greedy)


# ------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------


def make_update(config):
    """Returns (init, update): the runner state and one PQN update (rollout, targets, learning)."""
    env = CoinGame(num_inner_steps=config["EPISODE_STEPS"], num_outer_steps=1)
    agents = env.agents
    n_agents = len(agents)
    n_actions = env.num_actions
    n_envs, n_steps = config["NUM_ENVS"], config["NUM_STEPS"]
    rows = n_steps * n_envs * n_agents
    mb_rows = rows // config["NUM_MINIBATCHES"]
    num_updates = config["TOTAL_TIMESTEPS"] // n_steps // n_envs
    agent_ids = jnp.eye(n_agents, dtype=jnp.float32)

    def to_input(obs):
        """`{agent: [E, 36] int8}` -> `[E, N, 38]` float: the observation + one-hot index."""
        x = jnp.stack([obs[a] for a in agents], axis=1).astype(jnp.float32)
        ids = jnp.broadcast_to(agent_ids, x.shape[:-1] + (n_agents,))
        return jnp.concatenate([x, ids], axis=-1)

    network = QNetwork(n_actions, config["HIDDEN"], config["LAYERS"])
    eps_scheduler = optax.linear_schedule(
        config["EPS_START"], config["EPS_FINISH"], config["EPS_DECAY"] * num_updates
    )
    grad_steps = config["NUM_EPOCHS"] * config["NUM_MINIBATCHES"] * num_updates
    lr = (
        (lambda count: config["LR"] * (1.0 - count / grad_steps))
        if config["LR_LINEAR_DECAY"]
        else config["LR"]
    )
    tx = optax.chain(
        optax.clip_by_global_norm(config["MAX_GRAD_NORM"]), optax.radam(learning_rate=lr)
    )
    reset = jax.vmap(env.reset)
    step = jax.vmap(env.step)

    def init(rng):
        rng, rng_net, rng_env = jax.random.split(rng, 3)
        params = network.init(rng_net, jnp.zeros((1, 36 + n_agents)))
        train_state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        obs, env_state = reset(jax.random.split(rng_env, n_envs))
        return (train_state, env_state, obs, jnp.zeros((), jnp.int32), rng)

    def update(runner_state, _):
        train_state, env_state, last_obs, n_updates, rng = runner_state

        # ---- rollout: T steps of epsilon-greedy acting in every environment ----
        def _step_env(carry, _):
            env_state, last_obs, rng = carry
            rng, rng_a, rng_s = jax.random.split(rng, 3)
            x = to_input(last_obs)
            q_vals = network.apply(train_state.params, x)  # [E, N, A]
            eps = eps_scheduler(n_updates)
            actions = jax.vmap(eps_greedy_exploration, in_axes=(0, 0, None))(
                jax.random.split(rng_a, n_envs * n_agents),
                q_vals.reshape(n_envs * n_agents, n_actions),
                eps,
            ).reshape(n_envs, n_agents)
            act = {a: actions[:, i] for i, a in enumerate(agents)}
            obs, env_state, reward, done, _ = step(
                jax.random.split(rng_s, n_envs), env_state, act
            )
            reward = jnp.stack([reward[a] for a in agents], axis=1)
            done = jnp.broadcast_to(done["__all__"][:, None], (n_envs, n_agents))
            transition = (x, actions, reward, done.astype(jnp.float32), q_vals)
            return (env_state, obs, rng), transition

        (env_state, last_obs, rng), (xs, actions, rewards, dones, q_vals) = jax.lax.scan(
            _step_env, (env_state, last_obs, rng), None, n_steps
        )

        # ---- lambda-returns from the stored Q-values (purejaxql's _compute_targets) ----
        last_q = jnp.max(network.apply(train_state.params, to_input(last_obs)), axis=-1)

        def _get_target(carry, rew_q_done):
            lambda_returns, next_q = carry
            reward, q, done = rew_q_done
            bootstrap = reward + config["GAMMA"] * (1 - done) * next_q
            delta = lambda_returns - next_q
            lambda_returns = bootstrap + config["GAMMA"] * config["LAMBDA"] * delta
            lambda_returns = (1 - done) * lambda_returns + done * reward
            return (lambda_returns, jnp.max(q, axis=-1)), lambda_returns

        last_returns = rewards[-1] + config["GAMMA"] * (1 - dones[-1]) * last_q
        _, targets = jax.lax.scan(
            _get_target,
            (last_returns, jnp.max(q_vals[-1], axis=-1)),
            (rewards[:-1], q_vals[:-1], dones[:-1]),
            reverse=True,
        )
        targets = jnp.concatenate([targets, last_returns[None]])

        # ---- learning: epochs x shuffled minibatches of 0.5 (Q(s,a) - G)^2 ----
        flat = (xs.reshape(rows, -1), actions.reshape(rows), targets.reshape(rows))

        def _learn_epoch(carry, _):
            train_state, rng = carry
            rng, rng_p = jax.random.split(rng)
            perm = jax.random.permutation(rng_p, rows)
            minibatches = jax.tree.map(
                lambda a: a[perm].reshape((config["NUM_MINIBATCHES"], mb_rows) + a.shape[1:]),
                flat,
            )

            def _learn_phase(train_state, minibatch):
                x, action, target = minibatch

                def _loss_fn(params):
                    q = network.apply(params, x)
                    chosen = jnp.take_along_axis(q, action[:, None], axis=-1).squeeze(-1)
                    return 0.5 * jnp.square(chosen - target).mean()

                loss, grads = jax.value_and_grad(_loss_fn)(train_state.params)
                return train_state.apply_gradients(grads=grads), loss

            train_state, losses = jax.lax.scan(_learn_phase, train_state, minibatches)
            return (train_state, rng), losses

        (train_state, rng), losses = jax.lax.scan(
            _learn_epoch, (train_state, rng), None, config["NUM_EPOCHS"]
        )
        metrics = {"loss": losses.mean(), "reward": rewards.mean()}
        return (train_state, env_state, last_obs, n_updates + 1, rng), metrics

    return init, update, env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=40, help="timed updates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="also print a JSON line")
    args = parser.parse_args()

    init, update, env = make_update(CONFIG)
    obs_shape = env.observation_space(env.agents[0]).shape

    @jax.jit
    def run(runner_state):
        return jax.lax.scan(update, runner_state, None, args.updates)

    runner_state = init(jax.random.PRNGKey(args.seed))
    start = time.perf_counter()
    runner_state, _ = jax.block_until_ready(run(runner_state))  # compile + warm-up
    warm = time.perf_counter() - start
    start = time.perf_counter()
    runner_state, metrics = jax.block_until_ready(run(runner_state))
    secs = time.perf_counter() - start
    env_steps = CONFIG["NUM_ENVS"] * CONFIG["NUM_STEPS"] * args.updates
    sps = env_steps / secs
    print(
        f"JAX {jax.__version__} on {jax.devices()[0].platform}: PQN coin game, "
        f"{CONFIG['NUM_ENVS']} envs x {CONFIG['NUM_STEPS']} steps, "
        f"{CONFIG['NUM_EPOCHS']} epochs x {CONFIG['NUM_MINIBATCHES']} minibatches, "
        f"{CONFIG['LAYERS']}x{CONFIG['HIDDEN']} LayerNorm MLP shared, "
        f"observation {obs_shape} + {len(env.agents)} one-hot, {env.num_actions} actions; "
        f"compile + {args.updates} warm-up updates {warm:.1f} s, "
        f"{args.updates} timed updates {secs:.2f} s, "
        f"mean reward per agent-step {float(np.mean(metrics['reward'])):.3f}"
    )
    print(f"env steps/s: {sps:.0f}")
    if args.json:
        print(json.dumps({"env_steps_per_s": sps, "seconds": secs, "updates": args.updates}))


if __name__ == "__main__":
    main()

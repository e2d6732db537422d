#!/usr/bin/env python3
"""JaxMARL's own `overcooked` on its five classic layouts: full trajectories (start state, then
per step both players' actions, positions, facings, held items, the kitchen's objects and pot
states, the sparse and the shaped rewards, done, and both observations every few steps) under
uniformly random actions and under a scripted cook (greedy, BFS over the kitchen, a little
random) that cooks and serves soup, plus 2000 resets' start positions and facings. Written as the
compact JSON samples tests/overcooked_fidelity.rs replays gridarena against.

    python3 python/scripts/jaxmarl_overcooked_sample.py            # all five layouts
    python3 python/scripts/jaxmarl_overcooked_sample.py --venv benches/peers/.venv

The script runs itself inside a virtualenv holding the pinned JAX and JaxMARL (the versions of
benches/peers/requirements.lock): `--venv PATH` or the VENV environment variable names one to use
(created and filled when it lacks jaxmarl); default python/scripts/.venv-jaxmarl. Rerun it when
gridarena's overcooked rules change on purpose.

Encoding (see tests/overcooked_fidelity.rs): directions are JaxMARL's indices (0 north, 1 south,
2 east, 3 west); held items and objects JaxMARL's OBJECT_TO_INDEX codes (1 empty, 2 counter,
3 onion, 4 onion pile, 5 plate, 6 plate pile, 7 serving cell, 8 pot, 9 dish, 10 agent), the
kitchen written one character per cell, "0123456789A"[code], row-major; pot statuses in row-major
pot order (23 empty, 22/21 one/two onions, 20..1 cooking, 0 ready).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PINS = ["jax==0.10.2", "jaxlib==0.10.2", "jaxmarl==0.2.0", "flax==0.12.8"]
LAYOUTS = ["cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit"]
CODE = "0123456789A"


def ensure_venv(venv):
    """Re-executes this script under `venv`'s python, creating and filling it first if needed."""
    py = os.path.join(venv, "bin", "python")
    if os.path.abspath(sys.prefix) == os.path.abspath(venv):
        return
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    has = subprocess.call([py, "-c", "import jaxmarl"], stderr=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL) == 0
    if not has:
        lock = os.path.join(ROOT, "benches", "peers", "requirements.lock")
        subprocess.check_call([py, "-m", "pip", "install", "--quiet", *PINS, "-c", lock])
    os.execv(py, [py, os.path.abspath(__file__), *sys.argv[1:]])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--venv", default=os.environ.get("VENV", os.path.join(HERE, ".venv-jaxmarl")))
    p.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "overcooked"))
    p.add_argument("--layouts", nargs="*", default=LAYOUTS)
    p.add_argument("--random-episodes", type=int, default=2)
    p.add_argument("--scripted-episodes", type=int, default=2)
    p.add_argument("--resets", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    ensure_venv(a.venv)
    sample(a)


def sample(a):
    import warnings

    warnings.filterwarnings("ignore")
    import jax
    import jax.numpy as jnp
    import numpy as np
    import jaxmarl
    from jaxmarl.environments.overcooked import Overcooked, overcooked_layouts

    os.makedirs(a.out, exist_ok=True)
    for li, name in enumerate(a.layouts):
        env = Overcooked(layout=overcooked_layouts[name])
        w, h = env.width, env.height
        pad = (env.agent_view_size - 1)
        pot_xy = [tuple(int(v) for v in p) for p in np.asarray(
            [[i % w, i // w] for i in np.asarray(overcooked_layouts[name]["pot_idx"]).tolist()])]
        pot_order = sorted(range(len(pot_xy)), key=lambda k: (pot_xy[k][1], pot_xy[k][0]))
        step = jax.jit(env.step_env)
        reset = jax.jit(env.reset)
        obs_of = jax.jit(env.get_obs)

        def snapshot(state):
            mm = np.asarray(state.maze_map)[pad:pad + h, pad:pad + w]
            objects = "".join(CODE[int(c)] for c in mm[:, :, 0].reshape(-1))
            pots = [int(mm[pot_xy[k][1], pot_xy[k][0], 2]) for k in pot_order]
            return objects, pots

        def sparse_obs(obs):
            out = []
            for agent in ("agent_0", "agent_1"):
                flat = np.asarray(obs[agent]).reshape(-1)
                nz = np.nonzero(flat)[0]
                out.append([[int(i), int(flat[i])] for i in nz])
            return out

        def run(kind, k, policy):
            seed = a.seed + 1000 * li + 100 * (kind == "scripted") + k
            rng = np.random.default_rng(seed)
            obs, state = reset(jax.random.PRNGKey(seed))
            objects, pots = snapshot(state)
            ep = {
                "layout": name, "kind": kind, "seed": seed, "width": w, "height": h,
                "start": {
                    "pos": np.asarray(state.agent_pos).astype(int).tolist(),
                    "dir": np.asarray(state.agent_dir_idx).astype(int).tolist(),
                    "inv": np.asarray(state.agent_inv).astype(int).tolist(),
                    "objects": objects, "pots": pots,
                },
                "steps": [], "obs": [[0, sparse_obs(obs)]],
            }
            for t in range(1, env.max_steps + 1):
                acts = policy(state, rng)
                obs, state, rew, done, info = step(
                    jax.random.PRNGKey(t), state,
                    {"agent_0": jnp.uint32(acts[0]), "agent_1": jnp.uint32(acts[1])})
                objects, pots = snapshot(state)
                pos = np.asarray(state.agent_pos).astype(int)
                sh = info["shaped_reward"]
                ep["steps"].append([
                    int(acts[0]), int(acts[1]),
                    int(pos[0, 0]), int(pos[0, 1]), int(pos[1, 0]), int(pos[1, 1]),
                    *np.asarray(state.agent_dir_idx).astype(int).tolist(),
                    *np.asarray(state.agent_inv).astype(int).tolist(),
                    float(rew["agent_0"]), float(sh["agent_0"]), float(sh["agent_1"]),
                    int(bool(done["__all__"])), objects, pots,
                ])
                if t < env.max_steps and (t % 20 == 0 or t in (1, 2, 3, 359, 360, 361, 399)):
                    ep["obs"].append([t, sparse_obs(obs)])
            return ep

        def random_policy(state, rng):
            return [int(rng.integers(6)), int(rng.integers(6))]

        scripted = Scripted(np, name, w, h, pad)
        episodes = [run("random", k, random_policy) for k in range(a.random_episodes)]
        episodes += [run("scripted", k, scripted) for k in range(a.scripted_episodes)]

        # Resets: start positions and facings of `resets` keys.
        keys = jax.random.split(jax.random.PRNGKey(a.seed + 7), a.resets)
        _, states = jax.vmap(env.reset)(keys)
        pos = np.asarray(states.agent_pos).astype(int).reshape(a.resets, 4)
        dirs = np.asarray(states.agent_dir_idx).astype(int)
        distinct_pos = sorted({tuple(r) for r in pos.tolist()})
        counts = np.zeros((4, 4), dtype=int)
        for d0, d1 in dirs.tolist():
            counts[d0, d1] += 1
        out = {
            "source": f"jaxmarl {jaxmarl.__version__ if hasattr(jaxmarl, '__version__') else '0.2.0'}"
                      f" overcooked (random_reset=False, max_steps=400), jax {jax.__version__}, "
                      f"layout {name}, seed {a.seed}",
            "episodes": episodes,
            "resets": {"count": a.resets, "positions": [list(p) for p in distinct_pos],
                       "dir_counts": counts.tolist()},
        }
        path = os.path.join(a.out, f"{name}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(path + ".tmp", path)
        served = [sum(s[10] > 0 for s in e["steps"]) for e in episodes]
        print(f"{name}: {len(episodes)} episodes, deliveries per episode {served}, "
              f"{os.path.getsize(path) // 1024} KiB", flush=True)


class Scripted:
    """A greedy cook per player on JaxMARL's state: fetch onions for pots with room, plates for
    cooking or ready soups, take soups, serve them; what a player cannot carry to its target it
    puts on a counter both players can reach. Moves by BFS over the floor; 10% random actions
    break deadlocks. Only a trajectory generator: its choices do not need to be good."""

    MOVES = [(0, -1), (0, 1), (1, 0), (-1, 0)]

    def __init__(self, np, name, w, h, pad):
        self.np, self.w, self.h, self.pad = np, w, h, pad

    def __call__(self, state, rng):
        np = self.np
        mm = np.asarray(state.maze_map)[self.pad:self.pad + self.h, self.pad:self.pad + self.w]
        obj = mm[:, :, 0].astype(int)
        status = mm[:, :, 2].astype(int)
        pos = [tuple(int(v) for v in p) for p in np.asarray(state.agent_pos)]
        inv = [int(v) for v in np.asarray(state.agent_inv)]
        dirs = [int(v) for v in np.asarray(state.agent_dir_idx)]
        floor = (obj == 1) | (obj == 10)
        reach = [self.bfs(floor, p) for p in pos]
        acts = []
        for s in range(2):
            if rng.random() < 0.1:
                acts.append(int(rng.integers(6)))
                continue
            acts.append(self.act(s, obj, status, pos, inv, dirs, reach))
        return acts

    def bfs(self, floor, start):
        dist = {start: 0}
        frontier = [start]
        while frontier:
            nxt = []
            for (x, y) in frontier:
                for dx, dy in self.MOVES:
                    q = (x + dx, y + dy)
                    if 0 <= q[0] < self.w and 0 <= q[1] < self.h and floor[q[1], q[0]] and q not in dist:
                        dist[q] = dist[(x, y)] + 1
                        nxt.append(q)
            frontier = nxt
        return dist

    def faceable(self, cell, reach):
        """Floor cells in `reach` next to `cell`, with the move that faces it from there."""
        x, y = cell
        out = []
        for d, (dx, dy) in enumerate(self.MOVES):
            q = (x - dx, y - dy)
            if q in reach:
                out.append((reach[q], q, d))
        return sorted(out)

    def act(self, s, obj, status, pos, inv, dirs, reach):
        cells = lambda pred: [(x, y) for y in range(self.h) for x in range(self.w) if pred(obj[y, x], status[y, x])]
        mine = reach[s]
        other = reach[1 - s]
        pots_room = cells(lambda o, st: o == 8 and st > 20)
        pots_busy = cells(lambda o, st: o == 8 and st <= 20)
        pots_ready = cells(lambda o, st: o == 8 and st == 0)
        held = inv[s]
        can = lambda targets: [t for t in targets if self.faceable(t, mine)]
        shared = can([c for c in cells(lambda o, st: o == 2) if self.faceable(c, other)])
        if held == 3:
            targets = can(pots_room) or shared
        elif held == 5:
            targets = can(pots_ready) or can(pots_busy) or shared
        elif held == 9:
            targets = can(cells(lambda o, st: o == 7)) or shared
        else:
            plates_held = sum(v == 5 for v in inv)
            targets = []
            if pots_busy and plates_held == 0:
                targets = can(cells(lambda o, st: o == 6)) or can(cells(lambda o, st: o == 5))
            if not targets and pots_room:
                targets = can(cells(lambda o, st: o == 4)) or can(cells(lambda o, st: o == 3))
            if not targets:
                targets = can(cells(lambda o, st: o == 9))
        if not targets:
            return 4
        best = min((self.faceable(t, mine)[0] + (t,) for t in targets))
        _, stand, face, target = best
        if pos[s] == stand:
            return 5 if dirs[s] == face else face
        # one step along a shortest path to `stand`
        from_stand = self.bfs_to(stand, mine)
        x, y = pos[s]
        for d, (dx, dy) in enumerate(self.MOVES):
            q = (x + dx, y + dy)
            if q in from_stand and from_stand[q] == from_stand.get((x, y), 10**9) - 1:
                return d
        return 4

    def bfs_to(self, goal, reach):
        dist = {goal: 0}
        frontier = [goal]
        while frontier:
            nxt = []
            for (x, y) in frontier:
                for dx, dy in self.MOVES:
                    q = (x + dx, y + dy)
                    if q in reach and q not in dist:
                        dist[q] = dist[(x, y)] + 1
                        nxt.append(q)
            frontier = nxt
        return dist


if __name__ == "__main__":
    main()

"""PSRO reference samples from OpenSpiel 2.0.2 for tests/psro.rs.

Builds seeded random normal-form games (three 3-player games with 3 actions each, one 2-player
zero-sum game with 4 actions), runs PSRO on each with an exact best-response oracle and OpenSpiel's
meta-solvers (open_spiel.python.algorithms.projected_replicator_dynamics and regret_matching, with
their defaults, called as psro_v2.meta_strategies' prd_strategy and rm_strategy call them), and
writes every game, the per-iteration populations, meta-strategies and NashConv to
DIR/psro_<game>_<solver>.json. NashConv is computed by OpenSpiel's exploitability.nash_conv on the
turn-based version of pyspiel's tensor game.

PSRO loop (as gridarena's src/analysis/psro.rs): populations start with action 0 per player; each
iteration solves the restricted game, records, then adds each player's best pure response (lowest
action within 1e-12 of the best) to the others' mixtures when new; stops when none is added.

Usage: python openspiel_psro_sample.py OUT_DIR
"""

import json
import sys

import numpy as np
import pyspiel
from open_spiel.python import policy as policy_lib
from open_spiel.python.algorithms import exploitability
from open_spiel.python.algorithms import projected_replicator_dynamics
from open_spiel.python.algorithms import regret_matching

SOLVERS = {
    "prd": projected_replicator_dynamics.projected_replicator_dynamics,
    "regret_matching": regret_matching.regret_matching,
}


def random_games():
    games = []
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        tensors = [np.round(rng.uniform(-1, 1, size=(3, 3, 3)), 2) for _ in range(3)]
        games.append((f"random3p_seed{seed}", tensors))
    rng = np.random.default_rng(4)
    a = np.round(rng.uniform(-1, 1, size=(4, 4)), 2)
    games.append(("zerosum2p_seed4", [a, -a]))
    return games


def nash_conv(tensors, strategies):
    """OpenSpiel's NashConv of the mixed strategies in the tensor game."""
    game = pyspiel.create_tensor_game([t.astype(float).tolist() for t in tensors])
    turn_based = pyspiel.convert_to_turn_based(game)
    pol = policy_lib.TabularPolicy(turn_based)
    for state_index, state in enumerate(pol.states):
        player = state.current_player()
        pol.action_probability_array[state_index] = strategies[player]
    return float(exploitability.nash_conv(turn_based, pol))


def action_values(tensor, strategies, player):
    acc = np.moveaxis(tensor, player, 0)
    others = [p for p in range(len(strategies)) if p != player]
    for p in reversed(others):
        acc = np.dot(acc, strategies[p])
    return acc


def psro(tensors, solver, max_iterations=20):
    n = len(tensors)
    k = tensors[0].shape[0]
    populations = [[0] for _ in range(n)]
    out = []
    for iteration in range(max_iterations):
        meta = [t[np.ix_(*populations)] for t in tensors]
        sigma = SOLVERS[solver](meta)
        full = []
        for pop, s in zip(populations, sigma):
            f = np.zeros(k)
            for a, w in zip(pop, s):
                f[a] += w
            full.append(f)
        brs = []
        for p in range(n):
            v = action_values(tensors[p], full, p)
            brs.append(int(np.flatnonzero(v >= v.max() - 1e-12)[0]))
        out.append({
            "iteration": iteration,
            "populations": [list(p) for p in populations],
            "meta_strategies": [list(map(float, s)) for s in sigma],
            "nashconv": nash_conv(tensors, full),
            "best_responses": brs,
        })
        added = False
        for pop, br in zip(populations, brs):
            if br not in pop:
                pop.append(br)
                added = True
        if not added:
            break
    return out


def main():
    out_dir = sys.argv[1]
    for name, tensors in random_games():
        n = len(tensors)
        k = tensors[0].shape[0]
        rows = [[float(t[idx]) for t in tensors] for idx in np.ndindex(*([k] * n))]
        for solver in SOLVERS:
            iterations = psro(tensors, solver)
            sample = {
                "source": "open_spiel==2.0.2, python/scripts/openspiel_psro_sample.py",
                "game": name,
                "players": n,
                "actions": k,
                "payoffs": rows,
                "meta_solver": solver,
                "iterations": iterations,
            }
            path = f"{out_dir}/psro_{name}_{solver}.json"
            with open(path, "w") as f:
                json.dump(sample, f, indent=1)
            print(path, [(it["iteration"], [len(p) for p in it["populations"]],
                          round(it["nashconv"], 6)) for it in iterations])


if __name__ == "__main__":
    main()

"""gridarena from Python: a batched, zero-copy `VecEnv` (the engine's own buffers as numpy views),
a Gymnasium vector env over it (`GridarenaVectorEnv`: every agent of every arena one
sub-environment), and PettingZoo's ParallelEnv and AEC env over one arena (`parallel_env`,
`aec_env`).

Each takes a shipped scenario name (`scenarios()`) or a `.ron` path, and keyword overrides of the
scenario's fields. `VecEnv.render(arena)` and `parallel_env(render_mode="rgb_array")` draw an
arena as an RGB array (`render_backend()` says on what).

Runs from Python: `train(config=None, out=None, resume_if_exists=False, **overrides) -> run_dir`, `load_policy(run_dir)`
(greedy actions and Q-values), `eval(run_dir, episodes)` (the dict of `gridarena eval --json`).

Populations (docs/evaluation.md): `crossplay(pop_a, pop_b, ...)`, `evaluate_scenario_set(set,
population, ...)` and `schelling(cooperator, defector, ...)`, each the dict of the matching
`gridarena eval --json` (a population is a manifest file or a run directory).
"""

from ._gridarena import (
    Policy,
    VecEnv,
    crossplay,
    eval,
    evaluate_scenario_set,
    load_policy,
    render_backend,
    scenarios,
    schelling,
    train,
)
from .parallel import GridarenaParallelEnv, aec_env, parallel_env
from .vector import GridarenaVectorEnv

__all__ = [
    "VecEnv",
    "GridarenaVectorEnv",
    "aec_env",
    "scenarios",
    "parallel_env",
    "GridarenaParallelEnv",
    "train",
    "load_policy",
    "eval",
    "crossplay",
    "evaluate_scenario_set",
    "schelling",
    "Policy",
    "render_backend",
]

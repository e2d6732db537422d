"""gridarena from Python: a batched, zero-copy `VecEnv` (the engine's own buffers as numpy views)
and a PettingZoo ParallelEnv over one arena (`parallel_env`).

Runs from Python: `train(config=None, out=None, **overrides) -> run_dir`, `load_policy(run_dir)`
(greedy actions and Q-values), `eval(run_dir, episodes)` (the dict of `gridarena eval --json`).
Not built yet (issue 18): rendering, scenario overrides in `parallel_env`.
"""

from ._gridarena import Policy, VecEnv, eval, load_policy, scenarios, train
from .parallel import GridarenaParallelEnv, parallel_env

__all__ = [
    "VecEnv",
    "scenarios",
    "parallel_env",
    "GridarenaParallelEnv",
    "train",
    "load_policy",
    "eval",
    "Policy",
]

"""gridarena from Python: a batched, zero-copy `VecEnv` (the engine's own buffers as numpy views)
and a PettingZoo ParallelEnv over one arena (`parallel_env`).

Not built yet (issue 18): rendering, scenario overrides, training and policy loading from Python.
"""

from ._gridarena import VecEnv, scenarios
from .parallel import GridarenaParallelEnv, parallel_env

__all__ = ["VecEnv", "scenarios", "parallel_env", "GridarenaParallelEnv"]

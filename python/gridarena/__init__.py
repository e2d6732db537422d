"""gridarena from Python: a batched, zero-copy `VecEnv` (the engine's own buffers as numpy views).

The PettingZoo ParallelEnv, training and policy loading are not built yet (issue 18).
"""

from ._gridarena import VecEnv, scenarios

__all__ = ["VecEnv", "scenarios"]

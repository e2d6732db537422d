"""`torch.from_dlpack` and `jax.numpy.from_dlpack` on the vector env's views: what they alias.

Not part of the CI suite, which installs neither (PyPI's Linux torch wheel brings ~5 GB of CUDA
libraries): `benches/peers/python_examples.sh` runs this file in the examples' virtualenv, where
both are. `python/tests/test_vector_env.py` checks the DLPack export itself with numpy in CI.
"""

import numpy as np
import pytest

import gridarena


def stepped_env():
    env = gridarena.GridarenaVectorEnv("pursuit", 2, seed=0)
    obs, _ = env.reset(seed=0)
    return env, obs


def test_torch_from_dlpack_aliases_the_engines_buffers():
    import torch

    env, obs = stepped_env()
    t = torch.from_dlpack(obs)
    assert t.data_ptr() == obs.ctypes.data and t.dtype == torch.uint8
    before = t.clone()
    obs2, rew, term, trunc, infos = env.step(np.zeros(env.num_envs, dtype=np.int64))
    assert torch.equal(t, torch.from_numpy(env.engine.obs.reshape(obs.shape).copy()))
    assert not torch.equal(t, before)
    r = torch.from_dlpack(rew)
    assert r.data_ptr() == rew.ctypes.data and r.dtype == torch.float32


def test_jax_reads_the_current_step_through_a_copy():
    import jax.numpy as jnp

    env, obs = stepped_env()
    # JAX (0.10 here) refuses read-only arrays through DLPack: docs/python.md documents
    # jnp.asarray, one copy per step.
    with pytest.raises(BufferError):
        jnp.from_dlpack(obs)
    x = jnp.asarray(obs)
    assert np.array_equal(np.asarray(x), obs)

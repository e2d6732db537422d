"""Bad input never crashes Python: random scenarios, sizes, seeds, overrides, action arrays of
every shape, dtype and value (NaN, None, objects), reset seeds, render arguments, through
`VecEnv`, `GridarenaVectorEnv` and `parallel_env`. Every call either works or raises an
`Exception` with a message; a Rust panic (pyo3's `PanicException`, a `BaseException`) or an
abort fails the test.

Cases per test: `GRIDARENA_PY_FUZZ_CASES` (default 3,400; three tests, 10,200 in all).
"""

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gridarena

CASES = int(os.environ.get("GRIDARENA_PY_FUZZ_CASES", "3400"))
SETTINGS = settings(
    max_examples=CASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
SCENARIOS = gridarena.scenarios()

ints = st.one_of(
    st.integers(-3, 6),
    st.sampled_from([2**31, 2**32 + 1, 2**63 - 1, 2**64, -(2**63), 10**12]),
)
anything = st.one_of(
    st.none(),
    ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.lists(st.integers(-2, 3), max_size=3),
    st.just(object()),
)
override_keys = st.sampled_from(
    ["max_steps", "surround", "n_catch", "observation.radius", "width", "nonsense", "map", ""]
)
dtypes = st.sampled_from(
    ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32",
     "float64", "bool", "object", "complex64", "U3"]
)


def message(e):
    assert isinstance(e, Exception), f"{type(e).__name__} is not an Exception"
    assert str(e), f"{type(e).__name__} without a message"


def attempt(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the point: anything but a crash
        message(e)
        return None


@st.composite
def action_arrays(draw, b, n, a):
    shape = draw(
        st.sampled_from([(b, n), (b * n,), (b, n, 1), (n, b), (), (0,), (b, n + 1), (b + 1, n)])
    )
    dtype = draw(dtypes)
    size = int(np.prod(shape)) if shape else 1
    values = draw(
        st.lists(
            st.one_of(st.integers(-2, a + 2), st.sampled_from([255, 256, -129, 2**40])),
            min_size=size,
            max_size=size,
        )
    )
    if dtype == "object":
        return np.array([None] * size, dtype=object).reshape(shape)
    with np.errstate(all="ignore"):
        try:
            arr = np.array(values).astype(dtype).reshape(shape)
        except (ValueError, OverflowError, TypeError):
            arr = np.zeros(shape, dtype=dtype)
    if arr.dtype.kind == "f" and arr.size and draw(st.booleans()):
        arr.flat[0] = np.nan
    return arr


@SETTINGS
@given(
    scenario=st.one_of(st.sampled_from(SCENARIOS), st.text(max_size=12), st.none(), ints),
    num_arenas=st.one_of(st.integers(-2, 4), ints, anything),
    seed=st.one_of(st.integers(0, 9), anything),
    threads=st.one_of(st.none(), st.integers(-1, 3), anything),
    overrides=st.dictionaries(override_keys, anything, max_size=2),
)
def test_construction_works_or_raises(scenario, num_arenas, seed, threads, overrides):
    kwargs = {k: v for k, v in overrides.items() if k}
    env = attempt(gridarena.VecEnv, scenario, num_arenas, seed, threads, **kwargs)
    if env is not None:
        assert env.obs.shape == (env.num_arenas, env.num_agents, env.obs_len)


@SETTINGS
@given(
    scenario=st.sampled_from(SCENARIOS),
    b=st.integers(1, 3),
    data=st.data(),
)
def test_stepping_resetting_and_rendering_work_or_raise(scenario, b, data):
    env = gridarena.VecEnv(scenario, b, 0, 1)
    n, a = env.num_agents, env.num_actions
    for _ in range(3):
        actions = data.draw(action_arrays(b, n, a))
        attempt(env.step, actions)
    attempt(env.step, data.draw(anything))
    attempt(env.reset, seed=data.draw(st.one_of(st.integers(0, 5), anything)))
    if data.draw(st.integers(0, 9)) == 0:
        attempt(env.render, data.draw(st.one_of(st.integers(-1, 4), anything)), 4)
    attempt(env.render, data.draw(anything), data.draw(anything))
    # Whatever came before, valid actions still step.
    env.step(np.zeros((b, n), dtype=np.int64))


@SETTINGS
@given(scenario=st.sampled_from(SCENARIOS), data=st.data())
def test_the_gymnasium_and_pettingzoo_envs_work_or_raise(scenario, data):
    vec = attempt(
        gridarena.GridarenaVectorEnv,
        scenario,
        data.draw(st.integers(1, 2)),
        seed=data.draw(st.one_of(st.integers(0, 5), st.none())),
        agent_axis=data.draw(st.one_of(st.booleans(), anything)),
    )
    if vec is not None:
        attempt(vec.reset, seed=data.draw(st.one_of(st.integers(0, 5), anything)))
        b, n = vec.num_arenas, vec.agents_per_arena
        attempt(vec.step, data.draw(action_arrays(b, n, vec.engine.num_actions)))
        attempt(vec.step, data.draw(anything))
    pz = attempt(gridarena.parallel_env, scenario, compat=data.draw(st.one_of(st.none(), anything)))
    if pz is not None:
        attempt(pz.reset, seed=data.draw(st.one_of(st.integers(0, 5), st.none())))
        if pz.agents:
            actions = {agent: data.draw(anything) for agent in pz.agents}
            attempt(pz.step, actions)

"""PettingZoo's own API and seed tests on every shipped scenario."""

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import gridarena


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_parallel_api(scenario):
    parallel_api_test(gridarena.parallel_env(scenario=scenario, seed=1), num_cycles=200)


@pytest.mark.parametrize("scenario", gridarena.scenarios())
def test_parallel_seed(scenario):
    parallel_seed_test(lambda: gridarena.parallel_env(scenario=scenario))

"""Shared fixtures: a seed driven by an environment variable, as scikit-learn does."""

import os

import numpy as np
import pytest


def _seeds() -> list[int]:
    spec = os.environ.get("SKFORMER_TESTS_GLOBAL_RANDOM_SEED", "42")
    if spec == "all":
        return list(range(100))
    if "-" in spec:
        lo, hi = (int(s) for s in spec.split("-"))
        return list(range(lo, hi + 1))
    return [int(spec)]


def pytest_generate_tests(metafunc):
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _seeds())


@pytest.fixture
def rng(global_random_seed):
    """A NumPy generator seeded from ``global_random_seed``."""
    return np.random.default_rng(global_random_seed)

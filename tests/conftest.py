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


@pytest.fixture(scope="session")
def client():
    """A dask ``LocalCluster`` of two worker processes, as a user's cluster would be
    (session-wide: starting one takes seconds). Skips without dask.distributed."""
    import warnings

    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # port choice, event-loop noise of a local cluster
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
            dashboard_address=None,
        )
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()

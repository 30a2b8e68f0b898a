"""Shared fixtures (a seed driven by an environment variable, as scikit-learn does, a
maker of trained-like learned models, and caches private to the test run) and the run's
summary: why cases were deselected, skipped or are expected to fail.

The short test summary lists failures and errors only (``-rfE`` in ``pyproject.toml``);
the deselected, skipped and expected-to-fail cases are counted by reason at the end of
the run instead of one line each (``pytest -rxs`` still lists every one).
"""

import os
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

_DESELECTED = pytest.StashKey[Counter]()


def pytest_configure(config):
    config.stash[_DESELECTED] = Counter()
    # The compiled kernels stay in the user's own folder (set before numba is imported,
    # which reads it then): keyed by their sources, numba and Python
    # (skformer/_fit/kernels/cache.py), they are the very kernels a user's fit compiles,
    # and a folder of the run would cost every run seconds of compiling.
    if not os.environ.get("NUMBA_CACHE_DIR"):
        from skformer._fit.kernels.cache import user_folder

        os.environ["NUMBA_CACHE_DIR"] = str(user_folder())


def pytest_report_header(config):
    return ("skformer: scikit-learn's own KMeans tests run against skformer "
            "(tests/sklearn_suite); deselected, skipped and expected-to-fail cases are "
            "counted by reason at the end")


def pytest_deselected(items):
    for item in items:
        reason = dict(item.user_properties).get("deselected", "by -k or -m")
        item.config.stash[_DESELECTED][reason] += 1


def _reason(report) -> str:
    if hasattr(report, "wasxfail"):
        return report.wasxfail or "(no reason given)"
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _lines(counts: Counter, width: int) -> list[str]:
    """One entry per reason, most frequent first, each on at most two lines."""
    import textwrap

    lines = []
    for reason, count in counts.most_common():
        wrapped = textwrap.wrap(" ".join(str(reason).split()), width - 8, max_lines=2,
                                placeholder=" ...")
        lines.append(f"  {count:4d}  {wrapped[0]}")
        lines.extend(f"        {more}" for more in wrapped[1:])
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    width = max(60, terminalreporter._tw.fullwidth)
    groups = [
        ("deselected", config.stash.get(_DESELECTED, Counter())),
        ("xfailed (strict: deliberate deviations and known limits; each must fail as "
         "stated)", Counter(_reason(r) for r in stats.get("xfailed", []))),
        ("skipped", Counter(_reason(r) for r in stats.get("skipped", []))),
    ]
    if not any(counts for _, counts in groups):
        return
    terminalreporter.section("skformer: cases not run or expected to fail, by reason")
    for title, counts in groups:
        if counts:
            terminalreporter.write_line(f"{sum(counts.values())} {title}:")
            for line in _lines(counts, width):
                terminalreporter.write_line(line)


# The variables that choose where skformer's model cache is (``SKFORMER_CACHE_DIR``, else
# ``$XDG_CACHE_HOME/skformer``: skformer/store/locations.py) and, through
# ``XDG_CACHE_HOME``, where other tools' user caches are (matplotlib's font list).
CACHE_VARIABLES = ("SKFORMER_CACHE_DIR", "XDG_CACHE_HOME")


@pytest.fixture(scope="session", autouse=True)
def session_caches(tmp_path_factory):
    """Point the user caches at a folder of this test run, for the whole session.

    Without it, the tests that pretrain a model on demand (``skformer demo --embedding
    onehot``, for instance) save it in the user's own cache (``~/.cache/skformer``), where
    the user's later fits would load it. ``os.environ`` is changed, not a monkeypatch, so
    that subprocesses (CLI runs, dask workers) inherit it; the previous values come back
    at the end. A model pretrained here is shared by the session's tests, and each run
    pretrains afresh (the shipped models are found first, in the package).

    numba's compiled kernels (``skformer/_fit/kernels/``, cached on disk) are not moved:
    :func:`pytest_configure` points ``NUMBA_CACHE_DIR`` at the user's own kernel folder.

    Returns the folder and ``saved``: each variable's value before the session (None where
    unset), from which a test can find the user's own cache.
    """
    root = tmp_path_factory.mktemp("caches")
    saved = {name: os.environ.get(name) for name in CACHE_VARIABLES}
    os.environ["SKFORMER_CACHE_DIR"] = str(root / "skformer")
    os.environ["XDG_CACHE_HOME"] = str(root / "xdg")
    yield SimpleNamespace(root=root, saved=saved)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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


@pytest.fixture
def trained_like():
    """``trained_like(d, k, seed, embedding="binary", normalise=False, schedule=0)``: a
    float64 learned model in eval mode at the exact construction (scale 3), with every
    weight, bias and temperature perturbed by 0.1 N(0, 1), so that no map is zero."""
    import torch

    from skformer.nn import LearnedKMeansModel

    def make(d, k, seed, embedding="binary", normalise=False, schedule=0):
        model = LearnedKMeansModel.from_exact(d, k, scale=3.0, embedding=embedding,
                                              normalise=normalise, schedule=schedule)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
        return model.double().eval()

    return make


@pytest.fixture
def without_kernels(monkeypatch):
    """The test runs as where numba is absent: ``SKFORMER_COMPILED=0``, the user's own
    switch (the kernels' loader is cleared before and after)."""
    from skformer._fit import kernels

    kernels.load.cache_clear()
    monkeypatch.setenv("SKFORMER_COMPILED", "0")
    yield
    monkeypatch.delenv("SKFORMER_COMPILED")
    kernels.load.cache_clear()

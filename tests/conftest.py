"""Shared fixtures (a seed driven by an environment variable, as scikit-learn does, and a
maker of trained-like learned models) and the run's summary: why cases were deselected,
skipped or are expected to fail.

The short test summary lists failures and errors only (``-rfE`` in ``pyproject.toml``);
the deselected, skipped and expected-to-fail cases are counted by reason at the end of
the run instead of one line each (``pytest -rxs`` still lists every one).
"""

import os
from collections import Counter

import numpy as np
import pytest

_DESELECTED = pytest.StashKey[Counter]()


def pytest_configure(config):
    config.stash[_DESELECTED] = Counter()


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

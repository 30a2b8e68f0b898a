"""Data sets and presets of the equal-time benchmark.

The data sets are those of ``skformer bench kmeans`` (:mod:`benchmarks.versus_kmeans.data`):
the bundled ones (iris raw, wine and breast_cancer standardised, digits raw) and the
generated families, each at every ``(n, d)`` asked for. See :mod:`benchmarks.equal_time`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.versus_kmeans.data import (
    BUNDLED,
    DATASETS,
    GENERATED,
    Dataset,
    load_bundled,
    make_datasets,
)

__all__ = [
    "BUNDLED",
    "DATASETS",
    "DEFAULT",
    "GENERATED",
    "QUICK",
    "Dataset",
    "Preset",
    "datasets",
    "load_bundled",
]


@dataclass(frozen=True)
class Preset:
    """The options of one run size; every field is also a command-line option."""

    datasets: tuple[str, ...]
    ns: tuple[int, ...]
    """Sizes of the generated data sets."""
    ds: tuple[int, ...]
    """Dimensions of the generated data sets."""
    k: int
    seeds: int
    """``random_state`` 0 .. seeds - 1 on data sets of fewer than ``large_n`` rows."""
    large_seeds: int
    """Seeds on data sets of at least ``large_n`` rows (their fits dominate the run)."""
    large_n: int
    n_inits: tuple[int, ...]
    learned_starts: tuple[int, ...]


DEFAULT = Preset(
    datasets=("iris", "wine", "breast_cancer", "digits", "blobs-iso", "mixture"),
    ns=(10_000, 100_000, 1_000_000), ds=(8, 32), k=10, seeds=10, large_seeds=5,
    large_n=1_000_000, n_inits=(1, 2, 4, 8, 16), learned_starts=(0, 1, 2, 3),
)
"""The default run: the four bundled sets, blobs-iso and mixture at n in {1e4, 1e5, 1e6}
and d in {8, 32}, k = 10; 10 seeds (5 at n = 1e6). About 30 minutes on 2 CPU cores with
``--threads 1``."""

QUICK = Preset(
    datasets=("iris", "wine", "digits", "blobs-iso", "mixture"),
    ns=(10_000,), ds=(8,), k=10, seeds=3, large_seeds=3, large_n=1_000_000,
    n_inits=(1, 2, 4, 8, 16), learned_starts=(0, 1, 2, 3),
)
"""``--quick``: a few minutes; generated sets at n = 1e4 and d = 8 only, 3 seeds."""


def datasets(names: Sequence[str], *, ns: Sequence[int], ds: Sequence[int], k: int,
             cluster_std: float | None = None, seed: int = 0,
             dtype=np.float64) -> Iterator[Dataset]:
    """Yield the data sets: each bundled name once, each generated one per ``(n, d)``.

    A generator (only one large data set in memory at a time), in the order of
    ``names``, then ``n``, then ``d``.

    Examples
    --------
    >>> [(s.name, *s.X.shape) for s in datasets(["iris", "mixture"], ns=[200], ds=[3], k=4)]
    [('iris', 150, 4), ('mixture', 200, 3)]
    """
    return make_datasets(names, ns=ns, ds=ds, k=k, cluster_std=cluster_std, seed=seed,
                         dtype=dtype)

"""Data sets of the KMeans benchmark: bundled with scikit-learn, or generated blobs.

See :mod:`benchmarks.versus_kmeans` for the protocol.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BUNDLED",
    "DATASETS",
    "GENERATED",
    "Dataset",
    "blobs_aniso",
    "blobs_iso",
    "blobs_unequal",
    "default_std",
    "mixture",
    "load_bundled",
    "make_datasets",
]

BUNDLED = ("iris", "wine", "breast_cancer", "digits")
GENERATED = ("blobs-iso", "blobs-aniso", "blobs-unequal", "mixture")
DATASETS = BUNDLED + GENERATED
_STD_PER_SQRT_D = 1.4
_ROWS = 2**16


@dataclass(frozen=True, eq=False)
class Dataset:
    """A data set to cluster: features, true labels, name and a short description."""

    X: np.ndarray
    """Features, shape ``(n, d)``."""
    y: np.ndarray
    """True labels in ``0 .. n_clusters - 1``, shape ``(n,)``."""
    name: str
    description: str

    @property
    def n_clusters(self) -> int:
        return int(np.unique(self.y).size)


def load_bundled(name: str) -> Dataset:
    """A data set bundled with scikit-learn; wine and breast_cancer standardised.

    Examples
    --------
    >>> ds = load_bundled("iris")
    >>> ds.X.shape, ds.n_clusters
    ((150, 4), 3)
    """
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    loaders: dict[str, tuple[Callable, bool, str]] = {
        "iris": (datasets.load_iris, False, "iris flowers, 4 measurements (raw)"),
        "wine": (datasets.load_wine, True, "wine cultivars, 13 features (standardised)"),
        "breast_cancer": (datasets.load_breast_cancer, True,
                          "breast tumours, 30 features (standardised)"),
        "digits": (datasets.load_digits, False, "8x8 handwritten digits, 64 pixels (raw)"),
    }
    if name not in loaders:
        raise ValueError(f"bundled data set must be one of {BUNDLED}, got {name!r}.")
    loader, standardise, description = loaders[name]
    X, y = loader(return_X_y=True)
    if standardise:
        X = StandardScaler().fit_transform(X)
    return Dataset(np.ascontiguousarray(X), y.astype(np.int64), name, description)


def default_std(d: int) -> float:
    """``1.4 * sqrt(d)``: blobs in ``[-10, 10]^d`` that overlap about equally at every d."""
    return _STD_PER_SQRT_D * math.sqrt(d)


def _counts(n: int, proportions: np.ndarray) -> np.ndarray:
    """Integer sizes summing to ``n`` in the given proportions (largest remainders)."""
    exact = n * proportions / proportions.sum()
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(counts - exact, kind="stable")[: n - counts.sum()]] += 1
    return counts


def _blobs(n: int, d: int, k: int, rng: np.random.Generator, stds: np.ndarray,
           proportions: np.ndarray, dtype, box=(-10.0, 10.0)) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs, centres uniform in ``box``^d, rows generated chunk by chunk."""
    if n < k:
        raise ValueError(f"n={n} should be >= k={k}.")
    centres = rng.uniform(*box, size=(k, d)).astype(dtype)
    y = rng.permutation(np.repeat(np.arange(k), _counts(n, proportions)))
    stds = np.asarray(stds, dtype=dtype)
    X = np.empty((n, d), dtype=dtype)
    for s in range(0, n, _ROWS):
        part = y[s : s + _ROWS]
        X[s : s + len(part)] = rng.standard_normal((len(part), d), dtype=dtype)
        X[s : s + len(part)] *= stds[part, None]
        X[s : s + len(part)] += centres[part]
    return X, y


def blobs_iso(n: int, d: int = 8, k: int = 10, *, cluster_std: float | None = None,
              seed: int = 0, dtype=np.float64) -> Dataset:
    """``k`` isotropic Gaussian blobs of equal size (``cluster_std`` default:
    :func:`default_std`).

    Examples
    --------
    >>> ds = blobs_iso(100, d=2, k=4, seed=0)
    >>> ds.X.shape, np.bincount(ds.y).tolist()
    ((100, 2), [25, 25, 25, 25])
    """
    std = default_std(d) if cluster_std is None else float(cluster_std)
    X, y = _blobs(n, d, k, np.random.default_rng(seed), np.full(k, std), np.ones(k), dtype)
    return Dataset(X, y, "blobs-iso", f"{k} isotropic blobs, std {std:.3g}, equal sizes")


def _random_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def blobs_aniso(n: int, d: int = 8, k: int = 10, *, cluster_std: float | None = None,
                seed: int = 0, dtype=np.float64) -> Dataset:
    """Isotropic blobs times a fixed linear map ``U diag(s) V^T``, ``s`` in [0.25, 1.75].

    The map is drawn from the same seeded generator after the blobs.

    Examples
    --------
    >>> blobs_aniso(60, d=3, k=3, seed=1).X.shape
    (60, 3)
    """
    std = default_std(d) if cluster_std is None else float(cluster_std)
    rng = np.random.default_rng(seed)
    X, y = _blobs(n, d, k, rng, np.full(k, std), np.ones(k), dtype)
    s = np.linspace(0.25, 1.75, d) if d > 1 else np.ones(1)
    A = ((_random_orthogonal(d, rng) * s) @ _random_orthogonal(d, rng).T).astype(dtype)
    for start in range(0, n, _ROWS):
        X[start : start + _ROWS] = X[start : start + _ROWS] @ A
    return Dataset(X, y, "blobs-aniso",
                   f"{k} blobs, std {std:.3g}, sheared by a fixed map (s in [0.25, 1.75])")


def blobs_unequal(n: int, d: int = 8, k: int = 10, *, cluster_std: float | None = None,
                  seed: int = 0, dtype=np.float64) -> Dataset:
    """Blobs with sizes ``1 : 2 : ... : k`` and standard deviations
    ``cluster_std * linspace(1.5, 0.5, k)`` (cluster 0: smallest and widest).

    Examples
    --------
    >>> np.bincount(blobs_unequal(60, d=2, k=3, seed=0).y).tolist()
    [10, 20, 30]
    """
    std = default_std(d) if cluster_std is None else float(cluster_std)
    stds = std * np.linspace(1.5, 0.5, k)
    X, y = _blobs(n, d, k, np.random.default_rng(seed), stds, np.arange(1.0, k + 1), dtype)
    return Dataset(X, y, "blobs-unequal",
                   f"{k} blobs, sizes 1:...:{k}, std {stds[0]:.3g} down to {stds[-1]:.3g}")


def mixture(n: int, d: int = 8, k: int = 10, *, cluster_std: float | None = None,
            seed: int = 0, dtype=np.float64) -> Dataset:
    """The paper's task distribution (:mod:`skformer.tasks`) as one large data set: ``k``
    equally likely normal components with means uniform in the unit cube and scale
    ``cluster_std`` (default 0.1) per dimension, min-max scaled per dimension. The
    components overlap, so Lloyd's algorithm has poor local optima to fall into. Drawn
    with NumPy (not the training's torch streams).

    Examples
    --------
    >>> ds = mixture(200, d=3, k=4, seed=0)
    >>> ds.X.shape, ds.n_clusters
    ((200, 3), 4)
    """
    scale = 0.1 if cluster_std is None else float(cluster_std)
    rng = np.random.default_rng([seed, 7])
    X, y = _blobs(n, d, k, rng, np.full(k, scale), np.ones(k), dtype, box=(0.0, 1.0))
    lo, hi = X.min(0), X.max(0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    return Dataset(np.ascontiguousarray(X.astype(dtype)), y, "mixture",
                   f"{k} normal components in the unit cube, scale {scale:g} (the paper's tasks)")


_GENERATORS = {"blobs-iso": blobs_iso, "blobs-aniso": blobs_aniso,
               "blobs-unequal": blobs_unequal, "mixture": mixture}


def make_datasets(names: Sequence[str] = DATASETS, *, ns: Sequence[int] = (10_000, 100_000),
                  ds: Sequence[int] = (8, 32), k: int = 10, cluster_std: float | None = None,
                  seed: int = 0, dtype=np.float64):
    """Yield the data sets: each bundled name once, each generated one per ``(n, d)``.

    A generator, so that only one large data set is in memory at a time.
    """
    for name in names:
        if name in BUNDLED:
            yield load_bundled(name)
        elif name in _GENERATORS:
            for n in ns:
                for d in ds:
                    yield _GENERATORS[name](n, d, k, cluster_std=cluster_std, seed=seed,
                                            dtype=dtype)
        else:
            raise ValueError(f"data set must be one of {DATASETS}, got {name!r}.")

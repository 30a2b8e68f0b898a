"""The anchors other benchmarks measure against: Breathing K-Means and faiss' k-means.

Breathing K-Means (Fritzke 2020, ``pip install bkmeans``) and faiss' k-means
(``pip install faiss-cpu``) are in the ``bench`` extra, never in skformer's own
dependencies: a benchmark runs them where they are installed and says which were skipped
(:func:`available`). :func:`bkm` and :func:`faiss` build them with an estimator's face
(``fit(X)`` sets ``cluster_centers_``); :func:`limit_all_threads` holds every library's
thread pools, faiss' included, at one count.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FAISS_NITER", "FaissKMeans", "Method", "available", "bkm", "builds", "faiss",
           "limit_all_threads", "limit_threads", "split_available"]

FAISS_NITER = 25
"""``niter`` of faiss' k-means: faiss' own default (it runs that many steps, no test of
convergence)."""


class FaissKMeans:
    """:class:`faiss.Kmeans` with an estimator's face: ``fit(X)`` trains it on ``X`` in
    float32 (faiss' dtype) and sets ``cluster_centers_`` (float64).

    ``min_points_per_centroid=1`` only silences faiss' warning on fewer than 39 rows per
    centre (tiny data); every other parameter is faiss' default but ``niter``, ``nredo``
    and ``seed``.
    """

    def __init__(self, n_clusters: int, *, nredo: int = 1, niter: int = FAISS_NITER,
                 seed: int = 1234):
        self.n_clusters, self.nredo, self.niter, self.seed = n_clusters, nredo, niter, seed

    def fit(self, X):
        import faiss

        x = np.ascontiguousarray(X, dtype=np.float32)
        km = faiss.Kmeans(x.shape[1], self.n_clusters, niter=self.niter, nredo=self.nredo,
                          seed=self.seed, min_points_per_centroid=1)
        km.train(x)
        self.cluster_centers_ = km.centroids.astype(np.float64)
        self.n_iter_ = self.niter
        return self


def bkm(n_clusters: int, seed: int, n_init: int = 1):
    """``bkmeans.BKMeans(n_clusters, n_init=n_init, random_state=seed)``, its defaults
    otherwise (breathing depth ``m = 5``)."""
    from bkmeans import BKMeans

    return BKMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed)


def faiss(n_clusters: int, seed: int, nredo: int = 1) -> FaissKMeans:
    """faiss' k-means with ``nredo`` restarts (:class:`FaissKMeans`)."""
    return FaissKMeans(n_clusters, nredo=nredo, seed=seed)


@dataclass(frozen=True)
class Method:
    """One estimator configuration of a benchmark: a name, its family and a factory."""

    name: str
    family: str
    """``"kmeans"``, ``"bkm"``, ``"faiss"``, ``"skformer"`` or ``"long"`` (a long
    search, only to lower the best inertia known)."""
    label: str
    """Its name in tables and figures."""
    package: str
    """The module it needs; where that is not importable, the method is skipped."""
    build: Callable[[int, int, str], object] = field(repr=False, compare=False)
    """``build(k, seed, device)``: an unfitted estimator whose ``fit(X)`` sets
    ``cluster_centers_``."""
    n_init: int | None = None
    """KMeans' ``n_init`` (the curve), else None."""


def builds(family: str, value: int | None = None, **params) -> Callable[[int, int, str], object]:
    """A :attr:`Method.build`: ``"kmeans"`` (``KMeans(n_init=value)``), ``"bkm"``
    (:func:`bkm` with ``n_init=value``), ``"faiss"`` (:func:`faiss` with
    ``nredo=value``) or ``"skformer"`` (``TransformerKMeans(**params)``), each with
    ``random_state`` (faiss: ``seed``) the run's seed.

    Examples
    --------
    >>> builds("kmeans", 4)(3, 0, "cpu")
    KMeans(n_clusters=3, n_init=4, random_state=0)
    """
    def build(k: int, seed: int, device: str):
        if family == "kmeans":
            from sklearn.cluster import KMeans

            return KMeans(k, n_init=value, random_state=seed)
        if family == "bkm":
            return bkm(k, seed, value)
        if family == "faiss":
            return faiss(k, seed, value)
        from skformer import TransformerKMeans

        return TransformerKMeans(k, random_state=seed, device=device, **params)
    if family not in ("kmeans", "bkm", "faiss", "skformer"):
        raise ValueError(f"unknown family {family!r}")
    return build


def available(packages: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The packages of ``packages`` that import (imported now, so that thread limits set
    later reach their thread pools), and ``{package: why}`` of those that do not.

    Examples
    --------
    >>> ok, missing = available(["numpy", "no_such_package_here"])
    >>> ok, list(missing)
    (['numpy'], ['no_such_package_here'])
    """
    ok, missing = [], {}
    for package in dict.fromkeys(packages):
        try:
            importlib.import_module(package)
        except ImportError as exc:
            missing[package] = str(exc)
            continue
        ok.append(package)
    return ok, missing


def split_available(methods: Sequence[Method]) -> tuple[list[Method], dict[str, str]]:
    """The methods whose package imports (:func:`available`), and ``{package: why}`` of
    those that do not."""
    ok, missing = available([m.package for m in methods])
    return [m for m in methods if m.package in ok], missing


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Run the estimators on at most ``threads`` threads (None: as the libraries choose).

    KMeans' OpenMP and BLAS pools through :func:`threadpoolctl.threadpool_limits`, torch's
    through :func:`torch.set_num_threads`; both are restored on exit.
    """
    if threads is None:
        yield
        return
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(threads):
            yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def limit_all_threads(threads: int | None) -> Iterator[None]:
    """:func:`limit_threads` (OpenMP and BLAS pools, torch), and faiss' OpenMP threads
    where faiss is imported; all restored on exit."""
    module = sys.modules.get("faiss") if threads is not None else None
    before = module.omp_get_max_threads() if module is not None else None
    with limit_threads(threads):
        if module is not None:
            module.omp_set_num_threads(threads)
        try:
            yield
        finally:
            if module is not None:
                module.omp_set_num_threads(before)

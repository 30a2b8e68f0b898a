"""Runs of the anchors benchmark: the methods, and every fit of one data set in one process.

See :mod:`benchmarks.anchors` for the protocol.
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks import peers
from benchmarks.equal_time.runs import fit_order
from benchmarks.peers import (
    FAISS_NITER,
    FaissKMeans,
    Method,
    limit_all_threads,
    split_available,
)

__all__ = [
    "FAISS_NITER",
    "KMEANS_N_INITS",
    "METHODS",
    "METHOD_GROUPS",
    "WARMUP_ROWS",
    "AnchorRecord",
    "FaissKMeans",
    "Method",
    "limit_all_threads",
    "run_set",
    "select_methods",
    "split_available",
]

KMEANS_N_INITS = (1, 2, 4, 8, 10, 16, 32)
"""KMeans' curve: ``n_init`` values (10 too, the common choice the README's table shows)."""
WARMUP_ROWS = 2000
"""The untimed warm-up fits run on a seeded sample of at most
``max(WARMUP_ROWS, 20 * k)`` rows: what they pay for (imports, compiled kernels, thread
pools, loading the learned model for the shape) does not depend on ``n``."""


_TK = "TransformerKMeans"
METHODS: dict[str, Method] = {m.name: m for m in [
    *(Method(f"kmeans-{n}", "kmeans", f"KMeans (n_init={n})", "sklearn.cluster",
             peers.builds("kmeans", n), n)
      for n in KMEANS_N_INITS),
    Method("bkm", "bkm", "Breathing K-Means", "bkmeans", peers.builds("bkm", 1)),
    Method("faiss-1", "faiss", "faiss k-means (nredo=1)", "faiss", peers.builds("faiss", 1)),
    Method("faiss-10", "faiss", "faiss k-means (nredo=10)", "faiss", peers.builds("faiss", 10)),
    Method("fast", "skformer", f"{_TK} (fast mode)", "skformer", peers.builds("skformer")),
    Method("breathing", "skformer", f"{_TK} (breathing, Lloyd only)", "skformer",
           peers.builds("skformer", learned_starts=0, breathing_depth=5)),
    # Breathing deeper, in about the learned mode's time: what Lloyd alone buys with it.
    Method("breathing-10", "skformer", f"{_TK} (breathing depth 10, Lloyd only)",
           "skformer", peers.builds("skformer", learned_starts=0, breathing_depth=10)),
    Method("learned-only", "skformer", f"{_TK} (learned steps only)", "skformer",
           peers.builds("skformer", learned_starts=1, breathing_depth=0)),
    Method("learned", "skformer", f"{_TK} (learned_starts=1)", "skformer",
           peers.builds("skformer", learned_starts=1)),
    # The learned mode without Hartigan's single-point moves: what they add.
    Method("learned-lloyd", "skformer", f"{_TK} (learned_starts=1, hartigan=False)",
           "skformer", peers.builds("skformer", learned_starts=1, hartigan=False)),
    # The learned mode without the learned polish after the global moves: what it adds.
    Method("learned-nopolish", "skformer", f"{_TK} (learned_starts=1, learned_polish=False)",
           "skformer", peers.builds("skformer", learned_starts=1, learned_polish=False)),
    Method("long", "long", "long search: Breathing K-Means (n_init=10)", "bkmeans",
           peers.builds("bkm", 10)),
]}
"""Every method by name, in the order of a seed's first round."""

METHOD_GROUPS: dict[str, tuple[str, ...]] = {
    "all": tuple(METHODS),
    **{family: tuple(n for n, m in METHODS.items() if m.family == family)
       for family in ("kmeans", "faiss", "skformer")},
}
"""Names that stand for several methods in ``--methods``."""


def select_methods(names: Sequence[str]) -> list[Method]:
    """The methods of ``names`` (each a method's name or a group of
    :data:`METHOD_GROUPS`), each once, in the order of :data:`METHODS`.

    Examples
    --------
    >>> [m.name for m in select_methods(["learned", "faiss", "kmeans-1"])]
    ['kmeans-1', 'faiss-1', 'faiss-10', 'learned']
    """
    wanted: set[str] = set()
    for name in names:
        group = METHOD_GROUPS.get(name, (name,))
        unknown = [n for n in group if n not in METHODS]
        if unknown:
            raise ValueError(f"unknown method {name!r}; known: "
                             f"{', '.join([*METHOD_GROUPS, *METHODS])}")
        wanted.update(group)
    return [m for n, m in METHODS.items() if n in wanted]


@dataclass(frozen=True)
class AnchorRecord:
    """One timed fit: a method on one data set with one seed."""

    dataset: str
    group: str
    n: int
    d: int
    k: int
    seed: int
    method: str
    family: str
    n_init: int | None
    """KMeans' ``n_init`` (the curve), None for the other methods."""
    position: int
    """Place of this fit in its seed's round (0 = first)."""
    inertia: float
    """Sum of squared distances of the rows to their nearest fitted centre, in float64
    (:func:`skformer._base.labels_inertia`, one evaluator for every method)."""
    seconds: float
    """Wall time of ``fit`` (``time.perf_counter``)."""
    n_iter: int | None = None
    selected_run: str | None = None
    """TransformerKMeans' ``selected_run_``."""
    n_breathing_cycles: int | None = None
    """TransformerKMeans' ``n_breathing_cycles_``."""
    learned_skipped: str | None = None
    """TransformerKMeans' ``learned_skipped_``."""
    warnings: tuple[str, ...] = ()
    """The distinct warnings of the fit."""


def _attr(est, name: str, kind=int):
    value = getattr(est, name, None)
    return None if value is None else kind(value)


def run_set(X: np.ndarray, *, name: str, group: str, k: int, seeds: Sequence[int],
            methods: Sequence[Method], device: str = "cpu", warmup: bool = True,
            on_fit: Callable[[AnchorRecord], None] | None = None) -> list[AnchorRecord]:
    """Fit every method once per seed on ``X``, all in this process.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64
    name, group : str
        The data set's name and group (copied into the records).
    k : int
        Clusters.
    seeds : sequence of int
        ``random_state`` (faiss: ``seed``) of every method, the same for all.
    methods : sequence of Method
    device : str
        TransformerKMeans' device.
    warmup : bool
        First fit every method once, untimed, on a seeded sample of at most
        ``max(WARMUP_ROWS, 20 * k)`` rows (:data:`WARMUP_ROWS`).
    on_fit : callable, optional
        Called with each record as it is made (progress).

    Returns
    -------
    list of AnchorRecord
        ``len(seeds) * len(methods)`` records, in fit order: the methods of a seed's
        round are ``methods`` rotated left by the seed's index
        (:func:`benchmarks.equal_time.runs.fit_order`).
    """
    from skformer._base import labels_inertia

    if warmup:
        rows = min(len(X), max(WARMUP_ROWS, 20 * k))
        sample = X[np.random.default_rng(0).choice(len(X), rows, replace=False)]
        for method in methods:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                method.build(k, seeds[0], device).fit(sample)
    records = []
    for i, seed in enumerate(seeds):
        for position, method in enumerate(fit_order(list(methods), i)):
            est = method.build(k, int(seed), device)
            gc.collect()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                est.fit(X)
                seconds = time.perf_counter() - start
            centres = np.asarray(est.cluster_centers_, dtype=np.float64)
            record = AnchorRecord(
                dataset=name, group=group, n=X.shape[0], d=X.shape[1], k=k, seed=int(seed),
                method=method.name, family=method.family, n_init=method.n_init,
                position=position, inertia=float(labels_inertia(X, centres)[1]),
                seconds=seconds, n_iter=_attr(est, "n_iter_"),
                selected_run=_attr(est, "selected_run_", str),
                n_breathing_cycles=_attr(est, "n_breathing_cycles_"),
                learned_skipped=_attr(est, "learned_skipped_", str),
                warnings=tuple(dict.fromkeys(f"{w.category.__name__}: {w.message}"
                                             for w in caught)),
            )
            records.append(record)
            if on_fit is not None:
                on_fit(record)
    return records

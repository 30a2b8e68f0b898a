"""Runs of the KMeans benchmark: the comparison, the max_context experiment, peak memory.

See :mod:`benchmarks.versus_kmeans` for the protocol.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks._memory import fit_peak_memory
from benchmarks.versus_kmeans.data import Dataset, blobs_iso

__all__ = [
    "CONTEXTS",
    "DEVICES",
    "FINISHES",
    "ContextRecord",
    "MemoryRecord",
    "Record",
    "compare",
    "context_experiment",
    "machine_info",
    "peak_memory",
]

DEVICES = ("cpu", "cuda", "auto")
CONTEXTS: tuple[int | None, ...] = (64, 256, 1024, 4096, None)
FINISHES = ("none", "lloyd")


@dataclass(frozen=True)
class Record:
    """TransformerKMeans ("ours") against KMeans on one data set with one seed."""

    dataset: str
    n: int
    d: int
    k: int
    seed: int
    n_init: int | str
    device: str
    kmeans_first: bool
    """Whether KMeans was fitted before TransformerKMeans in the first timed repetition
    (alternates with the seed, and from one repetition to the next)."""
    kmeans_inertia: float
    """The k-means objective of the fitted centres, evaluated in float64 (see
    :func:`compare`)."""
    ours_inertia: float
    inertia_ratio: float
    """``ours_inertia / kmeans_inertia``: below 1 is a better local optimum."""
    kmeans_ari: float
    ours_ari: float
    kmeans_nmi: float
    ours_nmi: float
    kmeans_fit_ms: float
    """Median over the seed's timed repetitions, as ``ours_fit_ms``."""
    ours_fit_ms: float
    time_ratio: float
    """Median over the repetitions of ours' fit time over KMeans' in that repetition
    (with one repetition, ``ours_fit_ms / kmeans_fit_ms``)."""
    kmeans_n_iter: int
    ours_n_learned_steps: int
    ours_n_lloyd_steps: int
    learned_starts: int = 0
    ours_selected: str = "lloyd"
    """Which run of TransformerKMeans' best start gave its result."""
    repeats: int = 1
    """Timed fits of each estimator behind the times."""


@dataclass(frozen=True)
class ContextRecord:
    """One TransformerKMeans fit of the context experiment."""

    n: int
    d: int
    k: int
    seed: int
    max_context: int | None
    finish: str
    inertia: float
    relative_inertia: float
    """Inertia over that of the ``max_context=None`` fit with the same seed and finish."""
    fit_ms: float
    n_learned_steps: int
    n_lloyd_steps: int


@dataclass(frozen=True)
class MemoryRecord:
    """Peak resident memory one fit adds, measured in a fresh interpreter."""

    estimator: str
    n: int
    d: int
    k: int
    device: str
    x_nbytes: int
    peak_bytes: int
    """Peak resident set size during the fit less the resident size before it."""
    over_x: float
    """``peak_bytes / x_nbytes``."""
    method: str
    """``"VmHWM"`` (peak reset just before the fit) or ``"ru_maxrss"`` (peak of the
    whole process, less the resident size before the fit: an upper bound if the data
    generation peaked higher)."""
    cuda_peak_bytes: int | None = None
    """``torch.cuda.max_memory_allocated`` during the fit, on CUDA."""


# --------------------------------------------------------------------------- comparison


def _estimators(k: int, seed: int, n_init, device: str, **ours) -> dict:
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    return {
        "kmeans": KMeans(k, n_init=n_init, random_state=seed),
        "ours": TransformerKMeans(k, n_init=n_init, random_state=seed, device=device,
                                  pretrain=False, **ours),
    }


def _timed_fit(estimator, X, blas_threads: int | None = None) -> float:
    """Milliseconds of ``estimator.fit(X)``; with ``blas_threads``, NumPy's BLAS held to
    that many threads during the fit (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(blas_threads, user_api="blas"):
        start = time.perf_counter()
        estimator.fit(X)
        return 1e3 * (time.perf_counter() - start)


def compare(dataset: Dataset, seeds: Sequence[int], *, n_init=1, device: str = "cpu",
            warmup: bool = True, learned_starts: int = 0,
            kmeans_blas_threads: int | None = None, repeats: int = 1) -> list[Record]:
    """Fit KMeans and TransformerKMeans on ``dataset`` for each seed; one record each.

    Each seed's pair of fits is timed ``repeats`` times, the two estimators alternating
    (KMeans first in even repetitions of even positions in ``seeds`` and odd repetitions
    of odd ones), and each estimator's time is the median of its repetitions (a fit of a
    few milliseconds moves by tens of per cent from one call to the next on a shared
    machine); the time ratio is the median over repetitions of the ratio of the two
    fits of a repetition (paired: a slow stretch of the machine falls on both). With
    ``warmup``, one untimed fit of each (first seed) precedes the timed ones.
    ``kmeans_blas_threads`` holds NumPy's BLAS to that many threads while KMeans fits
    (None: as a user calls it; skformer holds it to one thread during its own fits).
    TransformerKMeans never pretrains here: a shape without a stored model raises
    :class:`LookupError`. Both inertias are the k-means objective of the estimator's
    ``cluster_centers_``, evaluated by one float64 function
    (:func:`skformer._base.labels_inertia`): KMeans' own ``inertia_`` is accumulated in
    the data's dtype, which on float32 data alone moves the ratio by about 1e-6.
    """
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    from skformer._base import labels_inertia

    X, y, k = dataset.X, dataset.y, dataset.n_clusters
    if warmup:
        for est in _estimators(k, seeds[0], n_init, device,
                               learned_starts=learned_starts).values():
            est.fit(X)
    records = []
    for i, seed in enumerate(seeds):
        times: dict[str, list[float]] = {"kmeans": [], "ours": []}
        for r in range(repeats):
            ests = _estimators(k, seed, n_init, device, learned_starts=learned_starts)
            order = ("kmeans", "ours") if (i + r) % 2 == 0 else ("ours", "kmeans")
            for name in order:
                times[name].append(_timed_fit(
                    ests[name], X, kmeans_blas_threads if name == "kmeans" else None))
        ms = {name: statistics.median(v) for name, v in times.items()}
        km, ours = ests["kmeans"], ests["ours"]
        inertia = [labels_inertia(X, est.cluster_centers_)[1] for est in (km, ours)]
        records.append(Record(
            dataset=dataset.name, n=X.shape[0], d=X.shape[1], k=k, seed=int(seed),
            n_init=n_init, device=device, kmeans_first=i % 2 == 0,
            kmeans_inertia=inertia[0], ours_inertia=inertia[1],
            inertia_ratio=_ratio(inertia[1], inertia[0]),
            kmeans_ari=float(adjusted_rand_score(y, km.labels_)),
            ours_ari=float(adjusted_rand_score(y, ours.labels_)),
            kmeans_nmi=float(normalized_mutual_info_score(y, km.labels_)),
            ours_nmi=float(normalized_mutual_info_score(y, ours.labels_)),
            kmeans_fit_ms=ms["kmeans"], ours_fit_ms=ms["ours"],
            time_ratio=statistics.median(
                o / k for o, k in zip(times["ours"], times["kmeans"], strict=True)),
            kmeans_n_iter=int(km.n_iter_), ours_n_learned_steps=int(ours.n_learned_steps_),
            ours_n_lloyd_steps=int(ours.n_lloyd_steps_), learned_starts=learned_starts,
            ours_selected=ours.selected_run_, repeats=repeats,
        ))
    return records


def _ratio(a: float, b: float) -> float:
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return float(a) / float(b)


# --------------------------------------------------------------------------- context


def context_experiment(n: int = 20_000, d: int = 32, k: int = 10, *,
                       seeds: Sequence[int] = range(5),
                       contexts: Sequence[int | None] = CONTEXTS,
                       finishes: Sequence[str] = FINISHES, cluster_std: float | None = None,
                       data_seed: int = 0, device: str = "cpu") -> list[ContextRecord]:
    """TransformerKMeans (learned mode) on one ``blobs-iso`` set for every ``max_context``
    and ``finish``.

    Each inertia is divided by that of the ``max_context=None`` fit (keys: all points)
    with the same seed and finish; ``None`` is always run. One untimed fit warms up.
    """
    from skformer import TransformerKMeans

    contexts = list(dict.fromkeys([*contexts, None]))
    X = blobs_iso(n, d, k, cluster_std=cluster_std, seed=data_seed).X

    def fit(seed, max_context, finish):
        est = TransformerKMeans(k, n_init=1, random_state=seed, device=device,
                                max_context=max_context, finish=finish, learned_starts=1,
                                pretrain=False)
        return est, _timed_fit(est, X)

    fit(seeds[0], contexts[0], finishes[0])
    raw = {}
    for seed in seeds:
        for finish in finishes:
            for max_context in contexts:
                raw[seed, finish, max_context] = fit(seed, max_context, finish)
    records = []
    for (seed, finish, max_context), (est, ms) in raw.items():
        records.append(ContextRecord(
            n=n, d=d, k=k, seed=int(seed), max_context=max_context, finish=finish,
            inertia=float(est.inertia_),
            relative_inertia=_ratio(est.inertia_, raw[seed, finish, None][0].inertia_),
            fit_ms=ms, n_learned_steps=int(est.n_learned_steps_),
            n_lloyd_steps=int(est.n_lloyd_steps_),
        ))
    return records


# --------------------------------------------------------------------------- memory


def _memory_case(n: int, d: int, k: int, name: str, device: str):
    """``(estimator, X)`` of one memory measurement (see :func:`peak_memory`)."""
    return _estimators(k, 0, 1, device)[name], blobs_iso(n, d, k, seed=0, dtype=np.float32).X


def peak_memory(name: str, n: int = 1_000_000, d: int = 32, k: int = 10,
                device: str = "cpu") -> MemoryRecord | None:
    """Peak resident memory one fit of ``name`` ("ours" or "kmeans") adds (Linux only).

    Measured in a fresh interpreter on ``blobs_iso(n, d, k)`` in float32: the peak
    resident set size (``VmHWM``, reset just before the fit) less the resident size
    before the fit.
    """
    res = fit_peak_memory(f"{__name__}:_memory_case", n, d, k, name, device)
    if res is None:
        return None
    return MemoryRecord(estimator=name, n=n, d=d, k=k, device=device,
                        over_x=res["peak_bytes"] / res["x_nbytes"], **res)


# --------------------------------------------------------------------------- machine


def machine_info(device: str = "cpu") -> dict:
    """Platform, CPU count, library versions and torch threads, for the JSON output."""
    import sklearn
    import torch

    from benchmarks.cost import machine_info as _machine

    return {**_machine(device), "cpu_count": os.cpu_count(), "numpy": np.__version__,
            "sklearn": sklearn.__version__, "torch_interop_threads":
            torch.get_num_interop_threads()}

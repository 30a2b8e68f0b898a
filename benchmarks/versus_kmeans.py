"""Benchmark: TransformerKMeans against sklearn.cluster.KMeans on bundled and generated data.

For every data set and every seed, ``KMeans(k, n_init=N, random_state=seed)`` and
``TransformerKMeans(k, n_init=N, random_state=seed)`` are fitted in the same process, the
order alternating from seed to seed. With the same ``random_state`` and ``n_init`` both
start from the same k-means++ centres, so the comparison isolates what the learned steps
(followed by exact Lloyd steps, ``finish="lloyd"``) do against Lloyd's algorithm alone.
Each :class:`Record` holds both inertias and their ratio (ours / KMeans: below 1 is a
better local optimum), ARI and NMI against the true labels, fit times
(``time.perf_counter``) and iterations. One untimed fit of each estimator per data set
warms up model loading and first-call overheads. :func:`summarise` takes medians over
seeds per data set.

Data sets (:data:`DATASETS`), all bundled with or generated without downloads:

* ``iris`` (raw), ``wine`` and ``breast_cancer`` (standardised), ``digits`` (raw);
* ``blobs-iso``: ``k`` isotropic Gaussian blobs of equal size, centres uniform in
  ``[-10, 10]^d`` (as :func:`sklearn.datasets.make_blobs`' default ``center_box``) and
  ``cluster_std = 1.4 * sqrt(d)`` by default, so that the classes overlap about equally
  at every ``d`` (the nearest-true-centre rule scores ARI about 0.9 at d = 8 and 0.96 at
  d = 32) and KMeans does not reach ARI 1 trivially;
* ``blobs-aniso``: the same blobs times a fixed linear map ``U diag(s) V^T`` (random
  orthogonal ``U``, ``V``, singular values ``s`` evenly spaced in [0.25, 1.75]);
* ``blobs-unequal``: sizes in the ratios ``1 : 2 : ... : k`` and per-cluster standard
  deviations ``std * linspace(1.5, 0.5, k)`` (the smallest cluster is the widest).

The generated sets are drawn from ``numpy.random.default_rng(data_seed)``, chunk by chunk
(float32 or float64 directly), so they are deterministic and a million rows cost only
their own size.

Two sub-experiments:

* ``--context``: what sampling the keys of the points-to-points attention costs. On one
  ``blobs-iso`` set (default n = 20000, d = 32, k = 10), for ``max_context`` in
  {64, 256, 1024, 4096, None} and ``finish`` in {"none", "lloyd"}: the median over seeds
  of the inertia relative to the ``max_context=None`` (all points) fit with the same seed
  and finish, and the fit time (:func:`context_experiment`).
* ``--memory``: the peak resident memory one fit adds on ``n = 10**6`` float32 rows,
  ``d = 32``, ``k = 10``, for TransformerKMeans and KMeans, each in a fresh interpreter
  (:func:`peak_memory`), in bytes and relative to ``X.nbytes``. The target is < 2 GB.

Run it with ``skformer bench kmeans [--out FILE.json] [--plot FILE.png]``; add
``--no-table --context`` or ``--no-table --memory`` for the sub-experiments alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from benchmarks._memory import fit_peak_memory

__all__ = [
    "BUNDLED",
    "DATASETS",
    "GENERATED",
    "ContextRecord",
    "ContextSummary",
    "Dataset",
    "MemoryRecord",
    "Record",
    "Summary",
    "blobs_aniso",
    "blobs_iso",
    "blobs_unequal",
    "compare",
    "context_experiment",
    "load_bundled",
    "make_datasets",
    "peak_memory",
    "plot_summary",
    "summarise",
    "summarise_context",
]

BUNDLED = ("iris", "wine", "breast_cancer", "digits")
GENERATED = ("blobs-iso", "blobs-aniso", "blobs-unequal")
DATASETS = BUNDLED + GENERATED
DEVICES = ("cpu", "cuda", "auto")
CONTEXTS: tuple[int | None, ...] = (64, 256, 1024, 4096, None)
FINISHES = ("none", "lloyd")
RATIO_RTOL = 1e-6
"""An inertia ratio counts as ``<= 1`` up to this relative tolerance (summation order
alone moves the inertia of the same fixed point by about 1e-7 in float32)."""
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
    """Whether KMeans was fitted before TransformerKMeans (alternates with the seed)."""
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
    ours_fit_ms: float
    time_ratio: float
    """``ours_fit_ms / kmeans_fit_ms``."""
    kmeans_n_iter: int
    ours_n_learned_steps: int
    ours_n_lloyd_steps: int


@dataclass(frozen=True)
class Summary:
    """Medians over the seeds of one data set."""

    dataset: str
    n: int
    d: int
    k: int
    seeds: int
    inertia_ratio_median: float
    ratio_le_1: int
    """Seeds whose inertia ratio is ``<= 1`` (up to :data:`RATIO_RTOL`)."""
    fraction_ratio_le_1: float
    ours_ari_median: float
    kmeans_ari_median: float
    ours_nmi_median: float
    kmeans_nmi_median: float
    time_ratio_median: float
    kmeans_fit_ms_median: float
    ours_fit_ms_median: float
    kmeans_n_iter_median: float
    ours_n_learned_steps_median: float
    ours_n_lloyd_steps_median: float


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
class ContextSummary:
    """Medians over seeds for one ``(max_context, finish)``."""

    n: int
    d: int
    k: int
    max_context: int | None
    finish: str
    seeds: int
    relative_inertia_median: float
    relative_inertia_max: float
    fit_ms_median: float
    n_learned_steps_median: float
    n_lloyd_steps_median: float


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


# --------------------------------------------------------------------------- data sets


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
           proportions: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian blobs, centres uniform in [-10, 10]^d, rows generated chunk by chunk."""
    if n < k:
        raise ValueError(f"n={n} should be >= k={k}.")
    centres = rng.uniform(-10.0, 10.0, size=(k, d)).astype(dtype)
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


_GENERATORS = {"blobs-iso": blobs_iso, "blobs-aniso": blobs_aniso,
               "blobs-unequal": blobs_unequal}


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


# --------------------------------------------------------------------------- comparison


def _estimators(k: int, seed: int, n_init, device: str, **ours) -> dict:
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    return {
        "kmeans": KMeans(k, n_init=n_init, random_state=seed),
        "ours": TransformerKMeans(k, n_init=n_init, random_state=seed, device=device,
                                  pretrain=False, **ours),
    }


def _timed_fit(estimator, X) -> float:
    start = time.perf_counter()
    estimator.fit(X)
    return 1e3 * (time.perf_counter() - start)


def compare(dataset: Dataset, seeds: Sequence[int], *, n_init=1, device: str = "cpu",
            warmup: bool = True) -> list[Record]:
    """Fit KMeans and TransformerKMeans on ``dataset`` once per seed; one record each.

    KMeans goes first for even positions in ``seeds``, TransformerKMeans for odd ones.
    With ``warmup``, one untimed fit of each (first seed) precedes the timed ones.
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
        for est in _estimators(k, seeds[0], n_init, device).values():
            est.fit(X)
    records = []
    for i, seed in enumerate(seeds):
        ests = _estimators(k, seed, n_init, device)
        order = ("kmeans", "ours") if i % 2 == 0 else ("ours", "kmeans")
        ms = {name: _timed_fit(ests[name], X) for name in order}
        km, ours = ests["kmeans"], ests["ours"]
        inertia = [labels_inertia(X, est.cluster_centers_)[1] for est in (km, ours)]
        records.append(Record(
            dataset=dataset.name, n=X.shape[0], d=X.shape[1], k=k, seed=int(seed),
            n_init=n_init, device=device, kmeans_first=order[0] == "kmeans",
            kmeans_inertia=inertia[0], ours_inertia=inertia[1],
            inertia_ratio=_ratio(inertia[1], inertia[0]),
            kmeans_ari=float(adjusted_rand_score(y, km.labels_)),
            ours_ari=float(adjusted_rand_score(y, ours.labels_)),
            kmeans_nmi=float(normalized_mutual_info_score(y, km.labels_)),
            ours_nmi=float(normalized_mutual_info_score(y, ours.labels_)),
            kmeans_fit_ms=ms["kmeans"], ours_fit_ms=ms["ours"],
            time_ratio=ms["ours"] / ms["kmeans"],
            kmeans_n_iter=int(km.n_iter_), ours_n_learned_steps=int(ours.n_learned_steps_),
            ours_n_lloyd_steps=int(ours.n_lloyd_steps_),
        ))
    return records


def _ratio(a: float, b: float) -> float:
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return float(a) / float(b)


def _median(records, field: str) -> float:
    return float(statistics.median(getattr(r, field) for r in records))


def summarise(records: Sequence[Record]) -> list[Summary]:
    """Medians over seeds per ``(dataset, n, d, k)``, in order of first appearance."""
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault((r.dataset, r.n, r.d, r.k), []).append(r)
    out = []
    for (name, n, d, k), rs in groups.items():
        le_1 = sum(r.inertia_ratio <= 1.0 + RATIO_RTOL for r in rs)
        med = {f: _median(rs, f) for f in (
            "inertia_ratio", "ours_ari", "kmeans_ari", "ours_nmi", "kmeans_nmi", "time_ratio",
            "kmeans_fit_ms", "ours_fit_ms", "kmeans_n_iter", "ours_n_learned_steps",
            "ours_n_lloyd_steps")}
        out.append(Summary(
            dataset=name, n=n, d=d, k=k, seeds=len(rs), ratio_le_1=le_1,
            fraction_ratio_le_1=le_1 / len(rs), **{f"{f}_median": v for f, v in med.items()},
        ))
    return out


def format_summary(summaries: Sequence[Summary]) -> str:
    """A markdown table of :func:`summarise`'s output."""
    lines = [
        "| dataset | n | d | k | inertia ratio median | seeds with ratio <= 1 | "
        "ARI ours / KMeans | NMI ours / KMeans | time ratio | KMeans ms | ours ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.dataset} | {s.n:,} | {s.d} | {s.k} | {s.inertia_ratio_median:.5f} | "
            f"{s.ratio_le_1}/{s.seeds} | {s.ours_ari_median:.3f} / {s.kmeans_ari_median:.3f} | "
            f"{s.ours_nmi_median:.3f} / {s.kmeans_nmi_median:.3f} | "
            f"{s.time_ratio_median:.2f} | {s.kmeans_fit_ms_median:.1f} | "
            f"{s.ours_fit_ms_median:.1f} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- context


def context_experiment(n: int = 20_000, d: int = 32, k: int = 10, *,
                       seeds: Sequence[int] = range(5),
                       contexts: Sequence[int | None] = CONTEXTS,
                       finishes: Sequence[str] = FINISHES, cluster_std: float | None = None,
                       data_seed: int = 0, device: str = "cpu") -> list[ContextRecord]:
    """TransformerKMeans on one ``blobs-iso`` set for every ``max_context`` and ``finish``.

    Each inertia is divided by that of the ``max_context=None`` fit (keys: all points)
    with the same seed and finish; ``None`` is always run. One untimed fit warms up.
    """
    from skformer import TransformerKMeans

    contexts = list(dict.fromkeys([*contexts, None]))
    X = blobs_iso(n, d, k, cluster_std=cluster_std, seed=data_seed).X

    def fit(seed, max_context, finish):
        est = TransformerKMeans(k, n_init=1, random_state=seed, device=device,
                                max_context=max_context, finish=finish, pretrain=False)
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


def summarise_context(records: Sequence[ContextRecord]) -> list[ContextSummary]:
    """Medians over seeds per ``(finish, max_context)``."""
    groups: dict[tuple, list[ContextRecord]] = {}
    for r in records:
        groups.setdefault((r.finish, r.max_context), []).append(r)
    return [
        ContextSummary(
            n=rs[0].n, d=rs[0].d, k=rs[0].k, max_context=max_context, finish=finish,
            seeds=len(rs), relative_inertia_median=_median(rs, "relative_inertia"),
            relative_inertia_max=max(r.relative_inertia for r in rs),
            fit_ms_median=_median(rs, "fit_ms"),
            n_learned_steps_median=_median(rs, "n_learned_steps"),
            n_lloyd_steps_median=_median(rs, "n_lloyd_steps"),
        )
        for (finish, max_context), rs in groups.items()
    ]


def format_context(summaries: Sequence[ContextSummary]) -> str:
    """A markdown table of :func:`summarise_context`'s output."""
    lines = ["| finish | max_context | inertia / all keys (median, max) | fit ms | "
             "learned steps | Lloyd steps |", "|---|---|---|---|---|---|"]
    for s in summaries:
        context = "all" if s.max_context is None else str(s.max_context)
        lines.append(f"| {s.finish} | {context} | {s.relative_inertia_median:.5f}, "
                     f"{s.relative_inertia_max:.5f} | {s.fit_ms_median:.1f} | "
                     f"{s.n_learned_steps_median:g} | {s.n_lloyd_steps_median:g} |")
    return "\n".join(lines)


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


# --------------------------------------------------------------------------- output


def machine_info(device: str = "cpu") -> dict:
    """Platform, CPU count, library versions and torch threads, for the JSON output."""
    import sklearn
    import torch

    from benchmarks.cost import machine_info as _machine

    return {**_machine(device), "cpu_count": os.cpu_count(), "numpy": np.__version__,
            "sklearn": sklearn.__version__, "torch_interop_threads":
            torch.get_num_interop_threads()}


def _label(s) -> str:
    return s.dataset if s.dataset in BUNDLED else f"{s.dataset}\nn={s.n:,} d={s.d}"


def plot_summary(records: Sequence[Record], path: str, title: str = "") -> None:
    """Save one figure with three panels to ``path``: the inertia ratio per data set (one
    dot per seed, a bar at the median), median ARI of both estimators (paired bars), and
    the fit time ratio (log scale)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting requires matplotlib. Install with: pip install skformer[plot]"
        ) from exc
    summaries = summarise(records)
    if not summaries:
        raise ValueError("nothing to plot: no records.")
    keys = [(s.dataset, s.n, s.d, s.k) for s in summaries]
    xs = np.arange(len(summaries))
    jitter = np.random.default_rng(0)
    fig = Figure(figsize=(max(8.0, 1.1 * len(summaries)), 10), layout="constrained")
    ratio_ax, ari_ax, time_ax = fig.subplots(3, 1, sharex=True)
    for ax, field in ((ratio_ax, "inertia_ratio"), (time_ax, "time_ratio")):
        for x, key in zip(xs, keys, strict=True):
            values = [getattr(r, field) for r in records if (r.dataset, r.n, r.d, r.k) == key]
            ax.scatter(x + jitter.uniform(-0.15, 0.15, len(values)), values, s=14,
                       color="C0", alpha=0.7)
            ax.hlines(statistics.median(values), x - 0.3, x + 0.3, color="C3")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ratio_ax.set_ylabel("inertia ratio, ours / KMeans")
    ratio_ax.set_title("inertia ratio per seed (red: median; below 1: better than KMeans)")
    time_ax.set_yscale("log")
    time_ax.set_ylabel("fit time ratio, ours / KMeans")
    time_ax.set_title("fit time ratio per seed (log scale)")
    ari_ax.bar(xs - 0.2, [s.kmeans_ari_median for s in summaries], 0.4, label="KMeans",
               color="C7")
    ari_ax.bar(xs + 0.2, [s.ours_ari_median for s in summaries], 0.4,
               label="TransformerKMeans", color="C0")
    ari_ax.set_ylabel("ARI (median over seeds)")
    ari_ax.set_title("adjusted Rand index against the true labels")
    ari_ax.legend(fontsize=8)
    time_ax.set_xticks(xs, [_label(s) for s in summaries], rotation=45, ha="right",
                       fontsize=8)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=120)


def _n_init(text: str):
    if text == "auto":
        return text
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}")
    return value


def _size(text: str) -> int:
    """A positive count, also written as ``1e6``."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (value >= 1 and value.is_integer()):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(value)


def _context(text: str) -> int | None:
    return None if text.lower() in ("none", "all") else _size(text)


def _write(path: str | None, payload: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(payload, f, indent=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="skformer bench kmeans", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS),
                        metavar="NAME", help=f"data sets (default: all of {', '.join(DATASETS)})")
    parser.add_argument("--n", type=_size, nargs="+", default=[10_000, 100_000],
                        help="sizes of the generated data sets (default: 10000 100000)")
    parser.add_argument("--d", type=int, nargs="+", default=[8, 32],
                        help="dimensions of the generated data sets (default: 8 32)")
    parser.add_argument("--k", type=int, default=10,
                        help="clusters of the generated data sets (default: 10)")
    parser.add_argument("--cluster-std", type=float, default=None,
                        help="std of the generated blobs (default: 1.4 * sqrt(d))")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="dtype of the generated data sets (default: float64)")
    parser.add_argument("--data-seed", type=int, default=0,
                        help="seed of the generated data sets (default: 0)")
    parser.add_argument("--seeds", type=int, default=5,
                        help="random_state 0 .. SEEDS-1 of both estimators (default: 5)")
    parser.add_argument("--n-init", type=_n_init, default=1,
                        help="n_init of both estimators (default: 1)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="TransformerKMeans' device (default: cpu)")
    parser.add_argument("--no-table", action="store_true",
                        help="skip the main comparison (run only --context / --memory)")
    parser.add_argument("--context", action="store_true",
                        help="also run the max_context experiment")
    parser.add_argument("--context-n", type=_size, default=20_000)
    parser.add_argument("--context-d", type=int, default=32)
    parser.add_argument("--contexts", type=_context, nargs="+", default=list(CONTEXTS),
                        help="max_context values ('none': all points) (default: "
                             "64 256 1024 4096 none)")
    parser.add_argument("--memory", action="store_true",
                        help="also measure peak memory of one fit in a fresh process")
    parser.add_argument("--memory-n", type=_size, default=1_000_000)
    parser.add_argument("--out", help="write records, summaries and machine info as JSON")
    parser.add_argument("--plot", help="save a figure of the main comparison to this file")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")

    try:
        machine = machine_info(args.device)
    except ValueError as exc:
        print(f"skformer bench kmeans: error: {exc}", file=sys.stderr)
        return 2
    device = machine["device"]
    seeds = list(range(args.seeds))
    payload: dict = {"machine": machine, "options": vars(args), "records": [],
                     "summaries": [], "context": None, "memory": None}
    print(f"# {machine['device_name']} ({device}), {machine['cpu_count']} CPUs, torch "
          f"{machine['torch']} ({machine['threads']} threads), scikit-learn "
          f"{machine['sklearn']}; {args.seeds} seeds, n_init={args.n_init}")
    records: list[Record] = []
    try:
        if not args.no_table:
            print(format_summary([]), flush=True)
            for ds in make_datasets(args.datasets, ns=args.n, ds=args.d, k=args.k,
                                    cluster_std=args.cluster_std, seed=args.data_seed,
                                    dtype=np.dtype(args.dtype)):
                new = compare(ds, seeds, n_init=args.n_init, device=device)
                records.extend(new)
                print(format_summary(summarise(new)).splitlines()[-1], flush=True)
                payload["records"] = [asdict(r) for r in records]
                payload["summaries"] = [asdict(s) for s in summarise(records)]
                _write(args.out, payload)  # rewritten after every data set
        if args.context:
            ctx = context_experiment(args.context_n, args.context_d, args.k, seeds=seeds,
                                     contexts=args.contexts, cluster_std=args.cluster_std,
                                     data_seed=args.data_seed, device=device)
            summaries = summarise_context(ctx)
            print(f"\n# max_context: blobs-iso n={args.context_n:,} d={args.context_d} "
                  f"k={args.k}, medians over {args.seeds} seeds")
            print(format_context(summaries), flush=True)
            payload["context"] = {"records": [asdict(r) for r in ctx],
                                  "summaries": [asdict(s) for s in summaries]}
            _write(args.out, payload)
    except LookupError as exc:
        print(f"skformer bench kmeans: error: {exc} (pretrain it first with "
              "`skformer pretrain --d D --k K`)", file=sys.stderr)
        return 2
    if args.memory:
        mem = [peak_memory(name, args.memory_n, 32, args.k, device) for name in ("ours", "kmeans")]
        print(f"\n# peak memory of one fit, n={args.memory_n:,} d=32 k={args.k} float32")
        print("| estimator | X MiB | extra peak MiB | / X.nbytes | method |\n|---|---|---|---|---|")
        for m in mem:
            if m is not None:
                print(f"| {m.estimator} | {m.x_nbytes / 2**20:.1f} | {m.peak_bytes / 2**20:.1f} "
                      f"| {m.over_x:.2f} | {m.method} |")
        payload["memory"] = [None if m is None else asdict(m) for m in mem]
        _write(args.out, payload)
    if args.plot and records:
        title = (f"TransformerKMeans against KMeans: {args.seeds} seeds, n_init={args.n_init}, "
                 f"{machine['device_name']} ({device}, {machine['threads']} threads)")
        plot_summary(records, args.plot, title=title)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Runs of the shapes benchmark: every fit of one shape, in one process.

See :mod:`benchmarks.shapes` for the protocol. Each function returns plain records
(dataclasses); the derived numbers (headroom, captured share, medians) come from
:mod:`benchmarks.shapes.report`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from benchmarks.peers import Method
from benchmarks.shapes.data import Shape
from benchmarks.shapes.peer_runs import (
    PeerRow,
    PeerRun,
    best_known,
    peer_rows,
    run_peers,
    warm_up_peers,
)
from benchmarks.shapes.stats import captured, headroom, median

__all__ = ["TOLERANCE", "HeadroomSeed", "PeerRow", "PeerRun", "PlusPlusSeed", "ShapeRecord",
           "distinct_rows", "records_from_dict", "run_shape", "warm_up"]

TOLERANCE = 1e-9
"""The estimator's inertia may exceed Lloyd's from the same start by at most this
relative amount (its Lloyd run competes; floating point sums may differ in the last
bits); more is a violation of its contract."""


@dataclass(frozen=True)
class HeadroomSeed:
    """Twenty steps from one random start (k distinct rows of X): Lloyd's and the learned
    model's, each on its own. Inertias are on all of X, in the user's units."""

    seed: int
    lloyd20: float
    """``KMeans(k, init=start, n_init=1, max_iter=20, tol=0, algorithm="lloyd")``'s
    ``inertia_`` (fewer steps where the assignment stops changing)."""
    learned20: float
    """``TransformerKMeans(k, init=start, n_init=1, learned_starts=1, finish="none",
    max_iter=20, tol=0, random_state=seed)``'s ``inertia_``: at most 20 learned steps on
    the context sample, no Lloyd step, the centres' inertia on all of X."""
    learned_steps: int
    """Learned steps run (``n_learned_steps_``)."""
    lloyd20_s: float
    learned20_s: float


@dataclass(frozen=True)
class PlusPlusSeed:
    """Runs to convergence from one k-means++ start
    (``sklearn.cluster.kmeans_plusplus(X, k, random_state=seed)``)."""

    seed: int
    lloyd: float
    """``KMeans(k, init=start, n_init=1).inertia_``: Lloyd's run."""
    learned_lloyd: float
    """The learned run finished by Lloyd: the centres of ``TransformerKMeans(k,
    init=start, n_init=1, learned_starts=1, finish="none")``, then
    ``KMeans(k, init=those, n_init=1).inertia_``."""
    estimator: float
    """``TransformerKMeans(k, init=start, n_init=1, learned_starts=1).inertia_``: the
    estimator's own result (its Lloyd run competes, the lower kept)."""
    ratio: float
    """``learned_lloyd / lloyd``: below 1, the learned steps found a better clustering."""
    estimator_ratio: float
    """``estimator / lloyd``: at most ``1 + TOLERANCE`` by the estimator's contract."""
    violation: bool
    """``estimator_ratio > 1 + TOLERANCE``."""
    selected_run: str
    """The estimator's ``selected_run_`` ("lloyd" or "learned")."""
    learned_used: bool
    """The estimator's ``learned_used_``."""
    lloyd_s: float
    """Wall time of the KMeans fit."""
    estimator_s: float
    """Wall time of the estimator's fit (both runs, its learned and its Lloyd run)."""
    time_ratio: float
    """``estimator_s / lloyd_s``: the learned fit's time over KMeans' at the same start."""
    learned_s: float
    """Wall time of the ``finish="none"`` fit (learned steps only)."""
    polish_s: float
    """Wall time of KMeans' Lloyd run from the learned centres."""
    seeding_s: float
    """Wall time of ``kmeans_plusplus`` (in none of the fits' times)."""


@dataclass
class ShapeRecord:
    """Everything measured on one shape; the summary numbers first, the seeds last."""

    name: str
    group: str
    n: int
    d: int
    k: int
    description: str
    origin: str
    """``choose_model(d, k).origin``: "trained" (a model of the shape), "generic" (the
    shape-generic model of the code width), "pretrained", or "" when skipped."""
    project: int | None
    """``choose_model(d, k).project``: the principal directions the learned steps run in
    (64 for d > 64), None: all features."""
    code_bits: int
    """Columns of the binary code, ``ceil(log2 k)``: the generic model's width."""
    bits_seen_before: bool
    """An earlier shape of this process had the same code width (its generic model was
    already read, so ``first_fit_s`` does not include reading it)."""
    first_fit_s: float
    """Wall time of the first ``TransformerKMeans(k, learned_starts=1, random_state=0)
    .fit(X)`` of this shape in the process: model choice and loading included (the
    compiled Lloyd kernel is already loaded: see ``warm_up``)."""
    first_fit_lloyd_s: float
    """Wall time of ``TransformerKMeans(k, learned_starts=0, random_state=0).fit(X)``
    next (the fast mode, KMeans' run by the exact transformer)."""
    learned: bool
    """The first fit's ``learned_used_``."""
    learned_skipped: str | None
    """The first fit's ``learned_skipped_``."""
    first_selected_run: str
    first_ratio: float
    """The first fit's inertia over the ``learned_starts=0`` fit's (same k-means++ start)."""
    best: float
    """``KMeans(k, n_init=10, random_state=0).inertia_``: the best clustering known."""
    best_s: float
    headroom: float | None
    """``1 - mean over seeds of best / lloyd20``: the room Lloyd's 20 steps from random
    starts leave below them (None without seeds)."""
    captured: float | None
    """``(sum lloyd20 - sum learned20) / (sum lloyd20 - sum best)``, the share of that room
    the learned steps take; None where the headroom is below 1e-6."""
    ratio_median: float | None
    """Median over seeds of :attr:`PlusPlusSeed.ratio` (k-means++ starts)."""
    estimator_ratio_median: float | None
    estimator_ratio_max: float | None
    violations: int
    """Seeds whose estimator ratio exceeds ``1 + TOLERANCE``."""
    time_ratio_median: float | None
    """Median over seeds of :attr:`PlusPlusSeed.time_ratio`."""
    seconds: float
    """Wall time of every measurement of this shape."""
    loadavg: tuple[float, float, float] | None = None
    """``os.getloadavg()`` at the end of the shape."""
    warnings: list[str] = field(default_factory=list)
    """Distinct warnings raised by the fits (first 200 characters each)."""
    best_known: float | None = None
    """The lowest inertia of every run on the shape: :attr:`peer_runs` and the
    ``KMeans(k, n_init=10, random_state=0)`` of :attr:`best` (each by
    :func:`skformer._base.labels_inertia`); None without peers (``--no-peers``, or a
    record of a run before the peers section)."""
    best_known_by: str | None = None
    """``"METHOD, seed S"``: the run that reached :attr:`best_known`."""
    peers: list[PeerRow] = field(default_factory=list)
    """Per peer: seeds, median gap to :attr:`best_known` and median seconds
    (:mod:`benchmarks.shapes.peer_runs`)."""
    headroom_seeds: list[HeadroomSeed] = field(default_factory=list)
    plusplus_seeds: list[PlusPlusSeed] = field(default_factory=list)
    peer_runs: list[PeerRun] = field(default_factory=list)
    """Every fit of the peers section, in fit order."""


def distinct_rows(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """A random start: ``k`` distinct rows of ``X`` (distinct values, not only indices),
    drawn by ``np.random.default_rng(seed)`` among the first occurrences of each value.

    Examples
    --------
    >>> X = np.array([[0.0], [0.0], [1.0], [2.0]])
    >>> sorted(distinct_rows(X, 3, 0).ravel().tolist())
    [0.0, 1.0, 2.0]
    """
    _, first = np.unique(X, axis=0, return_index=True)
    if len(first) < k:
        raise ValueError(f"X has {len(first)} distinct rows, fewer than k={k}.")
    return X[np.random.default_rng(seed).choice(np.sort(first), size=k, replace=False)]


def _timed(fit: Callable[[], object]) -> tuple[object, float]:
    t = time.perf_counter()
    out = fit()
    return out, time.perf_counter() - t


def warm_up(device: str = "cpu", peers: Sequence[Method] = ()) -> float:
    """Fit KMeans and TransformerKMeans (fast mode) once on tiny data, so that the first
    shape's ``first_fit_s`` does not pay for loading the compiled Lloyd kernel and the
    thread pools, and every peer of ``peers`` (their libraries' first calls); returns
    the seconds it took."""
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    X = np.random.default_rng(0).standard_normal((64, 2))
    t = time.perf_counter()
    KMeans(2, n_init=1, random_state=0).fit(X)
    TransformerKMeans(2, learned_starts=0, random_state=0, device=device).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up_peers(peers, device)
    return time.perf_counter() - t


def _headroom_seed(X, k, seed, device) -> HeadroomSeed:
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    start = distinct_rows(X, k, seed)
    lloyd, lloyd_s = _timed(lambda: KMeans(k, init=start, n_init=1, max_iter=20, tol=0,
                                           algorithm="lloyd").fit(X))
    learned, learned_s = _timed(lambda: TransformerKMeans(
        k, init=start, n_init=1, learned_starts=1, finish="none", max_iter=20, tol=0,
        random_state=seed, device=device).fit(X))
    return HeadroomSeed(seed, float(lloyd.inertia_), float(learned.inertia_),
                        int(learned.n_learned_steps_), lloyd_s, learned_s)


def _plusplus_seed(X, k, seed, device) -> PlusPlusSeed:
    from sklearn.cluster import KMeans, kmeans_plusplus

    from skformer import TransformerKMeans

    (start, _), seeding_s = _timed(lambda: kmeans_plusplus(X, k, random_state=seed))
    lloyd, lloyd_s = _timed(lambda: KMeans(k, init=start, n_init=1).fit(X))
    learned, learned_s = _timed(lambda: TransformerKMeans(
        k, init=start, n_init=1, learned_starts=1, finish="none", random_state=seed,
        device=device).fit(X))
    polish, polish_s = _timed(
        lambda: KMeans(k, init=learned.cluster_centers_, n_init=1).fit(X))
    est, est_s = _timed(lambda: TransformerKMeans(
        k, init=start, n_init=1, learned_starts=1, random_state=seed, device=device).fit(X))
    base = float(lloyd.inertia_)
    ratio = float(polish.inertia_) / base if base > 0 else 1.0
    est_ratio = float(est.inertia_) / base if base > 0 else (
        1.0 if est.inertia_ == 0 else np.inf)
    return PlusPlusSeed(
        seed, base, float(polish.inertia_), float(est.inertia_), ratio, est_ratio,
        bool(est_ratio > 1 + TOLERANCE), str(est.selected_run_), bool(est.learned_used_),
        lloyd_s, est_s, est_s / lloyd_s if lloyd_s > 0 else np.inf, learned_s, polish_s,
        seeding_s)


def records_from_dict(data: dict) -> ShapeRecord:
    """A record saved by ``--out`` (``dataclasses.asdict``), rebuilt with its seeds."""
    names = {f.name for f in fields(ShapeRecord)}
    record = ShapeRecord(**{k: v for k, v in data.items() if k in names})
    record.headroom_seeds = [HeadroomSeed(**s) for s in data.get("headroom_seeds", [])]
    record.plusplus_seeds = [PlusPlusSeed(**s) for s in data.get("plusplus_seeds", [])]
    record.peers = [PeerRow(**s) for s in data.get("peers", [])]
    record.peer_runs = [PeerRun(**s) for s in data.get("peer_runs", [])]
    return record


def run_shape(shape: Shape, seeds: list[int], *, device: str = "cpu",
              bits_seen: set[int] | None = None, X: np.ndarray | None = None,
              peers: Sequence[Method] = ()) -> ShapeRecord:
    """Every measurement of ``shape``, in this order: the first fits (learned, then fast
    mode), the model choice, the best known clustering, per seed the random-start runs
    and the k-means++ runs, then the peers section (one fit of each of ``peers`` per
    seed: :func:`~benchmarks.shapes.peer_runs.run_peers`).

    ``bits_seen`` holds the code widths of the shapes run before in this process; this
    shape's is added. ``X`` replaces ``shape.make()`` (tests)."""
    from sklearn.cluster import KMeans

    from benchmarks.equal_time.runs import load
    from skformer import TransformerKMeans
    from skformer._base import labels_inertia
    from skformer.store.generic import code_bits
    from skformer.store.selection import choose_model

    t0 = time.perf_counter()
    X = shape.make() if X is None else X
    n, d = X.shape
    bits = code_bits(shape.k)
    seen = bits_seen if bits_seen is not None else set()
    seen_before = bits in seen
    seen.add(bits)
    k = shape.k
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, first_s = _timed(lambda: TransformerKMeans(
            k, learned_starts=1, random_state=0, device=device).fit(X))
        fast, fast_s = _timed(lambda: TransformerKMeans(
            k, learned_starts=0, random_state=0, device=device).fit(X))
        choice = choose_model(d, k, device=device)  # after the first fit: not in its time
        best, best_s = _timed(lambda: KMeans(k, n_init=10, random_state=0).fit(X))
        rooms = [_headroom_seed(X, k, s, device) for s in seeds]
        pluses = [_plusplus_seed(X, k, s, device) for s in seeds]
        # the best known fit is seed 0's KMeans(n_init=10): not fitted again
        reference = PeerRun("kmeans-10", 0, float(labels_inertia(X, best.cluster_centers_)[1]),
                            best_s)
        peer_list = run_peers(X, k, seeds, peers, device=device, done=[reference])
    best_inertia = float(best.inertia_)
    known = best_known([reference, *peer_list]) if peers else None
    lloyd20 = [r.lloyd20 for r in rooms]
    ratios = [r.estimator_ratio for r in pluses]
    return ShapeRecord(
        name=shape.name, group=shape.group, n=n, d=d, k=k, description=shape.description,
        origin=choice.origin, project=choice.project, code_bits=bits,
        bits_seen_before=seen_before, first_fit_s=first_s, first_fit_lloyd_s=fast_s,
        learned=bool(first.learned_used_), learned_skipped=first.learned_skipped_,
        first_selected_run=str(first.selected_run_),
        first_ratio=float(first.inertia_) / float(fast.inertia_) if fast.inertia_ else 1.0,
        best=best_inertia, best_s=best_s,
        headroom=headroom(lloyd20, best_inertia) if rooms else None,
        captured=captured(lloyd20, [r.learned20 for r in rooms], best_inertia)
        if rooms else None,
        ratio_median=median(r.ratio for r in pluses),
        estimator_ratio_median=median(ratios), estimator_ratio_max=max(ratios, default=None),
        violations=sum(r.violation for r in pluses),
        time_ratio_median=median(r.time_ratio for r in pluses),
        seconds=time.perf_counter() - t0, loadavg=load(),
        warnings=sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught}),
        best_known=None if known is None else known[0],
        best_known_by=None if known is None else known[1],
        peers=[] if known is None else peer_rows(peer_list, known[0]),
        headroom_seeds=rooms, plusplus_seeds=pluses, peer_runs=peer_list,
    )

"""Runs of the equal-time benchmark: every fit of one data set, alternating in one process.

See :mod:`benchmarks.equal_time` for the protocol.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from benchmarks import peers as _peers
from benchmarks.peers import limit_threads
from benchmarks.versus_kmeans.data import Dataset

__all__ = [
    "KINDS",
    "LONG_SEARCH",
    "PACKAGES",
    "PEERS",
    "WARMUP_ROWS",
    "FitRecord",
    "Method",
    "fit_order",
    "limit_threads",
    "load",
    "methods",
    "peer_methods",
    "run_dataset",
]

WARMUP_ROWS = 20_000
"""The untimed warm-up fits run on at most this many rows of the data set (the first)."""


class Method(NamedTuple):
    """One estimator configuration: ``("kmeans", n_init)``, ``("ours", learned_starts)``,
    or a peer: ``("bkm", n_init)`` (Breathing K-Means), ``("faiss", nredo)`` (faiss'
    k-means) or ``("long", n_init)`` (the long search: Breathing K-Means with ``n_init``
    restarts, run to lower the best inertia known)."""

    kind: str
    value: int

    @property
    def label(self) -> str:
        """``n_init=N``, ``r=N``, ``bkm`` (``bkm-N`` for ``n_init=N > 1``), ``faiss-N``
        or ``long``."""
        if self.kind == "kmeans":
            return f"n_init={self.value}"
        if self.kind == "ours":
            return f"r={self.value}"
        if self.kind == "bkm":
            return "bkm" if self.value == 1 else f"bkm-{self.value}"
        if self.kind == "faiss":
            return f"faiss-{self.value}"
        return self.kind


KINDS = ("kmeans", "ours", "bkm", "faiss", "long")
"""Every method's kind, in the order of the reports."""
PEERS = (Method("bkm", 1), Method("faiss", 1), Method("faiss", 10))
"""The peers run where their packages are installed: Breathing K-Means (``n_init=1``)
and faiss' k-means with ``nredo`` 1 and 10."""
LONG_SEARCH = Method("long", 10)
"""The long search: Breathing K-Means with ``n_init=10``, only to lower the best inertia
known on the data."""
PACKAGES = {"bkm": "bkmeans", "faiss": "faiss", "long": "bkmeans"}
"""The module each peer's kind needs (in skformer's ``bench`` extra)."""


@dataclass(frozen=True)
class FitRecord:
    """One timed fit: a method on one data set with one seed."""

    dataset: str
    n: int
    d: int
    k: int
    seed: int
    method: str
    """``"kmeans"`` (:class:`sklearn.cluster.KMeans`), ``"ours"`` (TransformerKMeans), or
    a peer's kind (:class:`Method`): ``"bkm"``, ``"faiss"``, ``"long"``."""
    n_init: int
    """KMeans' ``n_init``, Breathing K-Means' (``"bkm"``, ``"long"``); 1 for
    TransformerKMeans and faiss."""
    learned_starts: int | None
    """TransformerKMeans' ``learned_starts`` (0: the fast mode); None for KMeans."""
    position: int
    """Place of this fit in its seed's round (0 = first)."""
    inertia: float
    """The k-means objective of the fitted centres, in float64 (one evaluator for both)."""
    seconds: float
    """Wall time of ``fit`` (``time.perf_counter``): the least of ``repeat_seconds``."""
    n_iter: int
    selected_run: str | None = None
    """TransformerKMeans' ``selected_run_`` ("lloyd" or "learned")."""
    n_learned_steps: int | None = None
    n_lloyd_steps: int | None = None
    learned_skipped: str | None = None
    """TransformerKMeans' ``learned_skipped_``: why no learned run was made, or None."""
    repeat_seconds: tuple[float, ...] = ()
    """Wall time of each repeat of this fit (same estimator, same seed, same result), in
    the order they ran."""
    nredo: int | None = None
    """faiss' ``nredo``; None for the other methods."""

    @property
    def config(self) -> Method:
        """The method of this record (its kind and value)."""
        if self.method == "ours":
            return Method("ours", int(self.learned_starts))
        if self.method == "faiss":
            return Method("faiss", int(self.nredo))
        return Method(self.method, int(self.n_init))


def methods(n_inits: Sequence[int], learned_starts: Sequence[int],
            peers: Sequence[Method] = ()) -> list[Method]:
    """KMeans and TransformerKMeans configurations interleaved, KMeans first, then
    ``peers``.

    Examples
    --------
    >>> [m.label for m in methods([1, 2, 4], [0, 1])]
    ['n_init=1', 'r=0', 'n_init=2', 'r=1', 'n_init=4']
    >>> [m.label for m in methods([1], [1], [*PEERS, LONG_SEARCH])]
    ['n_init=1', 'r=1', 'bkm', 'faiss-1', 'faiss-10', 'long']
    """
    km = [Method("kmeans", int(v)) for v in n_inits]
    ours = [Method("ours", int(v)) for v in learned_starts]
    out = []
    for i in range(max(len(km), len(ours))):
        out += km[i : i + 1] + ours[i : i + 1]
    return out + list(peers)


def peer_methods(long_search: bool = True) -> tuple[list[Method], dict[str, str]]:
    """The peers whose packages import (:data:`PEERS`, and :data:`LONG_SEARCH` if
    ``long_search``), and ``{package: why}`` of the packages that do not
    (:func:`benchmarks.peers.available`)."""
    wanted = [*PEERS, LONG_SEARCH] if long_search else list(PEERS)
    ok, missing = _peers.available([PACKAGES[m.kind] for m in wanted])
    return [m for m in wanted if PACKAGES[m.kind] in ok], missing


def fit_order(plan: Sequence[Method], round_: int) -> list[Method]:
    """The round's order: ``plan`` rotated left by ``round_`` places, so that over as many
    rounds as methods every method takes every place once.

    Examples
    --------
    >>> [m.label for m in fit_order(methods([1, 2], [0]), 1)]
    ['r=0', 'n_init=2', 'n_init=1']
    """
    shift = round_ % len(plan)
    return [*plan[shift:], *plan[:shift]]


def _estimator(method: Method, k: int, seed: int, device: str):
    from sklearn.cluster import KMeans

    from skformer import TransformerKMeans

    if method.kind == "kmeans":
        return KMeans(k, n_init=method.value, random_state=seed)
    if method.kind in ("bkm", "long"):
        return _peers.bkm(k, seed, method.value)
    if method.kind == "faiss":
        return _peers.faiss(k, seed, method.value)
    return TransformerKMeans(k, n_init=1, learned_starts=method.value, random_state=seed,
                             device=device, pretrain=False)


def load() -> tuple[float, float, float]:
    """``os.getloadavg()`` (1, 5 and 15 minutes), or NaNs where the platform has none."""
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        return (float("nan"),) * 3




def run_dataset(dataset: Dataset, seeds: Sequence[int], *, n_inits: Sequence[int],
                learned_starts: Sequence[int], peers: Sequence[Method] = (),
                device: str = "cpu", warmup: bool = True, repeats: int = 1,
                on_fit: Callable[[FitRecord], None] | None = None) -> list[FitRecord]:
    """Fit every method once per seed on ``dataset`` (``repeats`` times, timed each time),
    all in this process.

    Parameters
    ----------
    dataset : Dataset
        ``X`` of shape ``(n, d)``; ``k`` is its number of true classes.
    seeds : sequence of int
        ``random_state`` of every estimator, the same for every method.
    n_inits : sequence of int
        KMeans' ``n_init`` values (k-means++ each run).
    learned_starts : sequence of int
        TransformerKMeans' ``learned_starts`` values (``n_init=1``; 0 is the fast mode).
    peers : sequence of Method
        Peers fitted in the same rounds, after KMeans and TransformerKMeans in the plan
        (:func:`peer_methods`: those whose packages import).
    device : str
        TransformerKMeans' device.
    warmup : bool
        First fit every method once, untimed, on the first :data:`WARMUP_ROWS` rows
        (loads the learned model for ``(d, k)``, starts thread pools); the long search
        is not warmed up (Breathing K-Means' fit warms the same code).
    repeats : int
        Rounds of a seed's fits: each round fits every method of the seed (in the
        seed's rotated order), and a fit's time is its least over the rounds (a
        shared machine's stalls lengthen single fits, never shorten them).
    on_fit : callable, optional
        Called with each record as it is made (progress).

    Returns
    -------
    list of FitRecord
        ``len(seeds) * (len(n_inits) + len(learned_starts) + len(peers))`` records, in
        fit order. The
        methods of a seed's round are :func:`methods` rotated by the seed's index
        (:func:`fit_order`).

    Raises
    ------
    LookupError
        No learned model is stored for ``(d, k)`` (TransformerKMeans never pretrains here).
    """
    from skformer._base import labels_inertia

    X, k = dataset.X, dataset.n_clusters
    plan = methods(n_inits, learned_starts, peers)
    if warmup:
        for method in plan:
            if method.kind == "long":
                continue
            _estimator(method, k, seeds[0], device).fit(X[:WARMUP_ROWS])
    records = []
    for i, seed in enumerate(seeds):
        order = fit_order(plan, i)
        times: dict[Method, list[float]] = {method: [] for method in order}
        fitted = {}
        for _ in range(max(1, repeats)):
            for method in order:
                est = _estimator(method, k, seed, device)
                gc.collect()
                start = time.perf_counter()
                est.fit(X)
                times[method].append(time.perf_counter() - start)
                fitted[method] = est
        for position, method in enumerate(order):
            est, ours = fitted[method], method.kind == "ours"
            single = ours or method.kind == "faiss"
            record = FitRecord(
                dataset=dataset.name, n=X.shape[0], d=X.shape[1], k=k, seed=int(seed),
                method=method.kind, n_init=1 if single else method.value,
                learned_starts=method.value if ours else None, position=position,
                inertia=float(labels_inertia(X, est.cluster_centers_)[1]),
                seconds=min(times[method]), n_iter=int(getattr(est, "n_iter_", 0)),
                selected_run=est.selected_run_ if ours else None,
                n_learned_steps=int(est.n_learned_steps_) if ours else None,
                n_lloyd_steps=int(est.n_lloyd_steps_) if ours else None,
                learned_skipped=est.learned_skipped_ if ours else None,
                repeat_seconds=tuple(times[method]),
                nredo=method.value if method.kind == "faiss" else None,
            )
            records.append(record)
            if on_fit is not None:
                on_fit(record)
    return records
